import Testing
@testable import MentorCore

// MARK: - Fixtures

private func key(_ n: UInt8) -> PublicKey { PublicKey(bytes: [UInt8](repeating: n, count: 32))! }

/// A record encoding with a placeholder signature (sessions treat records as opaque but for
/// their author and seq).
private func recordBytes(_ author: PublicKey, _ seq: UInt64) -> [UInt8] {
    Record.signedBytes(type: .profile, author: author, seq: seq, timestamp: 1_700_000_000_000 + seq,
                       clock: VectorClock(), body: ProfileCard(name: "N\(seq)").body)
        + [UInt8](repeating: 0xAB, count: 64)
}

/// A replica reduced to what sync needs: per author the records by seq, applied when contiguous.
private struct FakeReplica {
    var logs: [PublicKey: [UInt64: [UInt8]]] = [:]
    var held: [PublicKey: [UInt64: [UInt8]]] = [:]
    var contiguous: [PublicKey: UInt64] = [:]

    /// Applies one encoding; returns the records that became contiguous.
    mutating func apply(_ bytes: [UInt8]) -> [(author: PublicKey, seq: UInt64, bytes: [UInt8])] {
        guard let p = try? RecordPosition.peek(bytes) else { return [] }
        var c = contiguous[p.author] ?? 0
        guard p.seq > c else { return [] }
        held[p.author, default: [:]][p.seq] = bytes
        var added: [(author: PublicKey, seq: UInt64, bytes: [UInt8])] = []
        while let next = held[p.author]?.removeValue(forKey: c + 1) {
            c += 1
            logs[p.author, default: [:]][c] = next
            added.append((p.author, c, next))
        }
        contiguous[p.author] = c
        return added
    }

    var digest: [PublicKey: [UInt64: [UInt8]]] { logs }
}

private struct Link: Hashable, Comparable {
    let local: Int, peer: Int
    var reversed: Link { Link(local: peer, peer: local) }
    static func < (a: Link, b: Link) -> Bool { (a.local, a.peer) < (b.local, b.peer) }
}

/// Nodes, one session per directed link, and an in-memory wire carrying encoded messages.
private final class Network {
    var nodes: [FakeReplica]
    var sessions: [Link: SyncSession] = [:]
    var wire: [Link: [[UInt8]]] = [:]          // bytes sent by link.local to link.peer, in order
    var autoApply: Set<Int>                    // nodes that apply (and ack) received batches at once
    var unapplied: [Link: [[[UInt8]]]] = [:]
    var closes: [Link: [String]] = [:]
    var recordsSent: [Link: Int] = [:]
    var batchesSent: [Link: Int] = [:]
    var acksSent: [Link: Int] = [:]
    var maxInFlight: [Link: Int] = [:]
    let settings: SyncSettings

    init(nodes: Int, settings: SyncSettings = SyncSettings()) {
        self.nodes = Array(repeating: FakeReplica(), count: nodes)
        self.autoApply = Set(0..<nodes)
        self.settings = settings
    }

    func connect(_ a: Int, _ b: Int) {
        for l in [Link(local: a, peer: b), Link(local: b, peer: a)] {
            sessions[l] = SyncSession(settings: settings)
            wire[l] = []
        }
        for l in [Link(local: a, peer: b), Link(local: b, peer: a)] {
            run(l, sessions[l]!.start(localVector: nodes[l.local].contiguous))
        }
    }

    func disconnect(_ a: Int, _ b: Int) {
        for l in [Link(local: a, peer: b), Link(local: b, peer: a)] {
            sessions[l] = nil; wire[l] = nil; unapplied[l] = nil
        }
    }

    func run(_ link: Link, _ directives: [SyncDirective]) {
        for d in directives {
            switch d {
            case .send(let m):
                if case .records(let batch) = m {
                    recordsSent[link, default: 0] += batch.count
                    batchesSent[link, default: 0] += 1
                }
                if case .ack = m { acksSent[link, default: 0] += 1 }
                wire[link, default: []].append(m.encoded)
            case .fetch(let author, let seqs):
                let found = seqs.compactMap { nodes[link.local].logs[author]?[$0] }
                run(link, sessions[link]!.fetched(found))
            case .apply(let batch):
                if autoApply.contains(link.local) { apply(link, batch) } else { unapplied[link, default: []].append(batch) }
            case .close(let reason):
                closes[link, default: []].append(reason)
            case .progress, .serveBlob, .blobPart, .peerAccounts, .compare:
                break
            }
            if let s = sessions[link] { maxInFlight[link] = max(maxInFlight[link] ?? 0, s.inFlight) }
        }
    }

    func apply(_ link: Link, _ batch: [[UInt8]]) {
        var added: [(author: PublicKey, seq: UInt64, bytes: [UInt8])] = []
        for b in batch { added += nodes[link.local].apply(b) }
        if sessions[link] != nil { run(link, sessions[link]!.applied(stored: added.count)) }
        announce(link.local, added)
    }

    /// Passes newly held records to every session of the node (relay, and the echo check).
    func announce(_ node: Int, _ added: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) {
        guard !added.isEmpty else { return }
        for l in sessions.keys.sorted() where l.local == node {
            run(l, sessions[l]!.localRecordsAdded(added))
        }
    }

    func create(at node: Int, author: PublicKey, count: Int = 1) {
        for _ in 0..<count {
            let seq = (nodes[node].contiguous[author] ?? 0) + 1
            announce(node, nodes[node].apply(recordBytes(author, seq)))
        }
    }

    func applyPending(_ link: Link) {
        while var q = unapplied[link], !q.isEmpty {
            let batch = q.removeFirst()
            unapplied[link] = q
            apply(link, batch)
        }
    }

    /// Delivers the oldest message on `link`; false if none.
    @discardableResult
    func deliver(_ link: Link) -> Bool {
        guard var q = wire[link], !q.isEmpty else { return false }
        let bytes = q.removeFirst()
        wire[link] = q
        let to = link.reversed
        if sessions[to] != nil { run(to, sessions[to]!.receive(bytes: bytes)) }
        return true
    }

    var busyLinks: [Link] { wire.filter { !$0.value.isEmpty }.keys.sorted() }

    /// Delivers until every wire is empty (in link order, or randomly).
    func settle(_ rng: inout SeededRandom?, limit: Int = 1_000_000) {
        var steps = 0
        while !busyLinks.isEmpty, steps < limit {
            let links = busyLinks
            if rng != nil { deliver(links[Int(rng!.next() % UInt64(links.count))]) } else { deliver(links[0]) }
            steps += 1
        }
    }

    func settle() { var none: SeededRandom? = nil; settle(&none) }
    var totalRecordsSent: Int { recordsSent.values.reduce(0, +) }
}

// MARK: - Messages

@Suite struct SyncMessageTests {
    func code(_ bytes: [UInt8]) -> SyncError.Code? {
        do { _ = try SyncMessage.decode(bytes); return nil } catch { return error.code }
    }

    @Test func everyMessageRoundTripsThroughItsEncoding() throws {
        let messages: [SyncMessage] = [
            .hello([key(3): 7, key(1): 2, key(2): 0]),
            .hello(version: 1, vector: []),
            .records([recordBytes(key(1), 1), recordBytes(key(2), 9)]),
            .ack(count: 3),
            .want(author: key(4), from: 12),
            .wantBlob(hash: Array(repeating: 7, count: 32)),
            .blob(hash: Array(repeating: 7, count: 32), total: 10, offset: 4, bytes: [1, 2, 3]),
            .blob(hash: Array(repeating: 7, count: 32), total: 0, offset: 0, bytes: []),
            .here([key(1), key(2)]),
            .here([]),
        ]
        for m in messages { #expect(try SyncMessage.decode(m.encoded) == m) }
        // Canonical hello: sorted, zero counters dropped.
        #expect(SyncMessage.hello([key(3): 7, key(1): 2, key(2): 0])
                == .hello(version: 1, vector: [.init(author: key(1), seq: 2), .init(author: key(3), seq: 7)]))
    }

    @Test func everyTruncationAndTrailingByteIsRefused() {
        let messages: [SyncMessage] = [.hello([key(1): 2]), .records([recordBytes(key(1), 1)]), .ack(count: 1),
                                       .want(author: key(1), from: 1), .wantBlob(hash: Array(repeating: 1, count: 32)),
                                       .blob(hash: Array(repeating: 1, count: 32), total: 3, offset: 0, bytes: [9, 9])]
        for m in messages {
            let b = m.encoded
            for n in 0..<b.count { #expect(code(Array(b.prefix(n))) != nil, "prefix \(n) of \(m) accepted") }
            #expect(code(b + [0]) == .malformed)
        }
    }

    @Test func hereIsLimitedAndSorted() {
        var w = ByteWriter(); w.u8(7); w.u16(UInt16(SyncLimits.maxHereAccounts + 1))
        #expect(code(w.bytes) == .tooLarge)
        var unsorted = ByteWriter(); unsorted.u8(7); unsorted.u16(2); unsorted.raw(key(2).bytes); unsorted.raw(key(1).bytes)
        #expect(code(unsorted.bytes) == .malformed)
        #expect(code(SyncMessage.here([key(1), key(2)]).encoded) == nil)
    }

    @Test func blobPartsOverTheirLimitsOrPastTheirTotalAreRefused() {
        func blob(total: UInt32, offset: UInt32, length: UInt32, bytes: Int? = nil) -> [UInt8] {
            var w = ByteWriter(); w.u8(6); w.raw(Array(repeating: 5, count: 32))
            w.u32(total); w.u32(offset); w.u32(length); w.raw(Array(repeating: 0, count: bytes ?? Int(length)))
            return w.bytes
        }
        #expect(code(blob(total: UInt32(Limits.maxPhotoBytes + 1), offset: 0, length: 1)) == .tooLarge)
        #expect(code(blob(total: 1 << 30, offset: 0, length: 1 << 20, bytes: 0)) == .tooLarge, "length checked before reading")
        #expect(code(blob(total: 100, offset: 0, length: UInt32(SyncLimits.maxBlobPart + 1), bytes: 0)) == .tooLarge)
        #expect(code(blob(total: 100, offset: 90, length: 20)) == .malformed)
        #expect(code(blob(total: 100, offset: 0, length: 0)) == .tooLarge, "an empty part")
        #expect(code(blob(total: 0, offset: 0, length: 3)) == .malformed, "not held, with bytes")
        #expect(code(blob(total: 100, offset: 0, length: 10)) == nil)
    }

    @Test func blobAssemblyTakesPartsInOrderOfTheAskedHashAndSize() throws {
        let hash = [UInt8](repeating: 1, count: 32), other = [UInt8](repeating: 2, count: 32)
        var a = BlobAssembly(hash: hash, size: 5)
        #expect(try a.add(hash: hash, total: 5, offset: 0, bytes: [1, 2]) == .incomplete)
        #expect(throws: SyncError.self, "a gap") { var b = a; _ = try b.add(hash: hash, total: 5, offset: 3, bytes: [4]) }
        #expect(throws: SyncError.self, "another blob") { var b = a; _ = try b.add(hash: other, total: 5, offset: 2, bytes: [3]) }
        #expect(throws: SyncError.self, "another size") { var b = a; _ = try b.add(hash: hash, total: 6, offset: 2, bytes: [3]) }
        #expect(throws: SyncError.self, "not held after parts") { var b = a; _ = try b.add(hash: hash, total: 0, offset: 0, bytes: []) }
        #expect(try a.add(hash: hash, total: 5, offset: 2, bytes: [3, 4, 5]) == .complete([1, 2, 3, 4, 5]))
        var fresh = BlobAssembly(hash: hash, size: 5)
        #expect(try fresh.add(hash: hash, total: 0, offset: 0, bytes: []) == .notHeld)
    }

    @Test func oversizedCountsAreRefusedBeforeAllocating() {
        var w = ByteWriter(); w.u8(1); w.u8(1); w.u8(0); w.u32(UInt32(SyncLimits.maxVectorPart + 1))
        #expect(code(w.bytes) == .tooLarge)
        var lying = ByteWriter(); lying.u8(1); lying.u8(1); lying.u8(0); lying.u32(10_000)     // no entries follow
        #expect(code(lying.bytes) == .malformed)
        var flags = ByteWriter(); flags.u8(1); flags.u8(1); flags.u8(2); flags.u32(0)
        #expect(code(flags.bytes) == .malformed, "unknown flag bits")
        var many = ByteWriter(); many.u8(2); many.u16(UInt16(SyncLimits.maxBatchRecords + 1))
        #expect(code(many.bytes) == .tooLarge)
        var long = ByteWriter(); long.u8(2); long.u16(1); long.u32(UInt32(SyncLimits.maxRecordBytes + 1))
        #expect(code(long.bytes) == .tooLarge)
        let big = [UInt8](repeating: 0, count: SyncLimits.maxRecordBytes)
        let overMiB = SyncMessage.records(Array(repeating: big, count: SyncLimits.maxBatchBytes / big.count + 1)).encoded
        #expect(code(overMiB) == .tooLarge)
    }

    @Test func unsortedDuplicateOrZeroHelloEntriesAreRefused() {
        let unsorted = SyncMessage.hello(version: 1, vector: [.init(author: key(2), seq: 1), .init(author: key(1), seq: 1)])
        #expect(code(unsorted.encoded) == .malformed)
        let duplicate = SyncMessage.hello(version: 1, vector: [.init(author: key(1), seq: 1), .init(author: key(1), seq: 2)])
        #expect(code(duplicate.encoded) == .malformed)
        let zero = SyncMessage.hello(version: 1, vector: [.init(author: key(1), seq: 0)])
        #expect(code(zero.encoded) == .malformed)
        #expect(code(SyncMessage.ack(count: 0).encoded) == .malformed)
        #expect(code(SyncMessage.want(author: key(1), from: 0).encoded) == .malformed)
        #expect(code(SyncMessage.records([]).encoded) == .malformed)
        #expect(code([9]) == .malformed)
        #expect(code([]) == .malformed)
    }
}

// MARK: - Sessions

@Suite struct SyncSessionTests {
    let x = key(10), y = key(20), z = key(30)

    @Test func twoPeersExchangeExactlyWhatEachLacksAndEndEqual() {
        let net = Network(nodes: 2, settings: SyncSettings(window: 3, batchSize: 7))
        net.create(at: 0, author: x, count: 30)
        net.create(at: 1, author: y, count: 20)
        net.create(at: 0, author: z, count: 15)
        for s in 1...10 { _ = net.nodes[1].apply(recordBytes(z, UInt64(s))) }
        net.connect(0, 1)
        net.settle()
        #expect(net.nodes[0].digest == net.nodes[1].digest)
        #expect(net.nodes[1].contiguous == [x: 30, y: 20, z: 15])
        #expect(net.recordsSent[Link(local: 0, peer: 1)] == 30 + 5)
        #expect(net.recordsSent[Link(local: 1, peer: 0)] == 20)
        #expect(net.closes.isEmpty)
    }

    @Test func caughtUpOnlyOnceEverythingThePeerHeldIsApplied() {
        let net = Network(nodes: 2, settings: SyncSettings(window: 2, batchSize: 5))
        net.create(at: 0, author: x, count: 23)
        net.create(at: 1, author: y, count: 3)
        net.autoApply = [0]                       // node 1 holds what it receives unapplied
        net.connect(0, 1)
        let toOne = Link(local: 1, peer: 0)
        #expect(net.sessions[toOne]?.isCaughtUp == false, "not caught up before the hellos cross")
        while net.deliver(Link(local: 0, peer: 1)) || net.deliver(Link(local: 1, peer: 0)) {}
        #expect(net.sessions[toOne]?.isCaughtUp == false, "node 1 received batches but applied none")
        #expect(net.sessions[Link(local: 0, peer: 1)]?.isCaughtUp == true, "node 0 applied all 3 of y")
        var rounds = 0
        while net.sessions[toOne]?.isCaughtUp == false, rounds < 100 {
            net.applyPending(toOne)
            net.settle()
            rounds += 1
        }
        #expect(net.sessions[toOne]?.isCaughtUp == true && net.nodes[1].contiguous[x] == 23)
        // A record created later does not make the peer "behind" (only the hello counts).
        net.create(at: 0, author: x)
        #expect(net.sessions[toOne]?.isCaughtUp == true)
    }

    @Test func heldAcksCountAgainstTheWindowAndGoOutTogether() {
        var receiver = SyncSession(settings: SyncSettings(window: 2, batchSize: 5))
        _ = receiver.start(localVector: [:])
        _ = receiver.receive(.hello([x: 10]))
        #expect(receiver.receive(.records([recordBytes(x, 1)])) == [.apply([recordBytes(x, 1)])])
        #expect(receiver.applied(stored: 1, holdAck: true) == [.progress(sent: 0, received: 1)], "no ack while held")
        _ = receiver.receive(.records([recordBytes(x, 2)]))
        _ = receiver.applied(stored: 1, holdAck: true)
        #expect(receiver.heldAcks == 2 && receiver.unackedReceived == 2)
        #expect(receiver.releaseAcks() == [.send(.ack(count: 2)), .progress(sent: 0, received: 2)])
        #expect(receiver.releaseAcks() == [], "nothing left to release")
        // A peer that sends on while acks are held overruns the window and is closed.
        _ = receiver.receive(.records([recordBytes(x, 3)]))
        _ = receiver.applied(stored: 1, holdAck: true)
        _ = receiver.receive(.records([recordBytes(x, 4)]))
        _ = receiver.applied(stored: 1, holdAck: true)
        let overrun = receiver.receive(.records([recordBytes(x, 5)]))
        #expect(overrun.count == 1 && "\(overrun)".contains("unacknowledged batches"), "\(overrun)")
        #expect(receiver.isClosed && receiver.releaseAcks() == [])
    }

    @Test func aLargeVectorGoesInHelloPartsUnderTheFrameLimitAndIsReassembled() throws {
        func author(_ i: Int) -> PublicKey {
            PublicKey(bytes: [UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)] + [UInt8](repeating: 7, count: 29))!
        }
        var vector: [PublicKey: UInt64] = [:], digests: [PublicKey: UInt64] = [:]
        for i in 0..<40_000 { vector[author(i)] = UInt64(i % 9 + 1); digests[author(i)] = UInt64(i) }
        var sender = SyncSession()
        let hellos = sender.start(localVector: vector, digests: digests).compactMap { d -> SyncMessage? in
            if case .send(let m) = d { m } else { nil }
        }
        #expect(hellos.count == 3, "40,000 authors in parts of 16,384")
        for m in hellos { #expect(m.encoded.count < (1 << 20), "a hello part must fit a frame: \(m.encoded.count) bytes") }
        var receiver = SyncSession()
        _ = receiver.start(localVector: vector)
        var compared = 0
        for (i, m) in hellos.enumerated() {
            let out = receiver.receive(bytes: m.encoded)
            for d in out { if case .compare(let e) = d { compared += e.count } }
            #expect(receiver.isEstablished == (i == 2), "established only after the last part")
        }
        #expect(compared == 40_000 && receiver.peerVector?.count == 40_000 && receiver.bufferedRecords == 0)
        // Parts out of order, or a hello after the last part, close the session.
        var disordered = SyncSession()
        _ = disordered.start(localVector: [:])
        _ = disordered.receive(hellos[1])
        #expect("\(disordered.receive(hellos[0]))".contains("out of order"))
        #expect("\(receiver.receive(hellos[0]))".contains("a second hello"))
    }

    @Test func resendSendsEveryRecordOfTheAuthorAgainAndASummaryAsksForAComparison() {
        let net = Network(nodes: 2)
        net.create(at: 0, author: x, count: 12)
        net.connect(0, 1)
        net.settle()
        let before = net.recordsSent[Link(local: 0, peer: 1)] ?? 0
        #expect(before == 12)
        net.run(Link(local: 0, peer: 1), net.sessions[Link(local: 0, peer: 1)]!.resend([x]))
        net.settle()
        #expect((net.recordsSent[Link(local: 0, peer: 1)] ?? 0) == before + 12, "the whole author again")
        var s = net.sessions[Link(local: 1, peer: 0)]!
        let summary = s.summary(localVector: [x: 12], digests: [x: 99])
        guard case .send(let m)? = summary.first, case .summary(let v, false) = m else { Issue.record("\(summary)"); return }
        #expect(v == [SyncMessage.Entry(author: x, seq: 12, digest: 99)])
        var peer = net.sessions[Link(local: 0, peer: 1)]!
        #expect(peer.receive(m) == [.compare(v)])
    }

    @Test func batchesOfLargeRecordsStayWithinOneFrame() {
        // 19 KB records (about the largest a record may be): 55 of them are 1 MiB of record
        // bytes less one, and with the per-record lengths the message would pass the 1 MiB a
        // frame carries (PeerLink.send refuses such a message with a precondition failure).
        var session = SyncSession(settings: SyncSettings(window: 100, batchSize: 256))
        _ = session.start(localVector: [:])
        _ = session.receive(.hello([:]))
        let big = (1...200).map { seq -> (author: PublicKey, seq: UInt64, bytes: [UInt8]) in
            var r = recordBytes(x, UInt64(seq))
            r += [UInt8](repeating: 0, count: (1 << 20) / 55 - r.count)   // 55 of them: 1 byte under 1 MiB
            return (x, UInt64(seq), r)
        }
        var sent = 0
        for d in session.localRecordsAdded(big) {
            guard case .send(let m) = d, case .records(let batch) = m else { continue }
            #expect(m.encoded.count <= 1 << 20, "a records message of \(m.encoded.count) bytes does not fit a frame")
            sent += batch.count
        }
        for d in session.receive(.ack(count: 100)) { if case .send(.records(let batch)) = d { sent += batch.count } }
        #expect(sent > 0)
    }

    @Test func reconnectAfterFullSyncSendsZeroRecords() {
        let net = Network(nodes: 2)
        net.create(at: 0, author: x, count: 40)
        net.create(at: 1, author: y, count: 40)
        net.connect(0, 1)
        net.settle()
        let before = net.totalRecordsSent
        #expect(before == 80)
        net.disconnect(0, 1)
        net.connect(0, 1)
        net.settle()
        #expect(net.totalRecordsSent == before)
        #expect(net.nodes[0].digest == net.nodes[1].digest)
    }

    @Test func aBatchCarriesRecordsOfManyAuthors() {
        // A campus: many accounts, few records each. A batch per author made 200 batches here
        // (each a transaction and an ack at the receiver); filled across authors it takes 4.
        let net = Network(nodes: 2, settings: SyncSettings(window: 4, batchSize: 100))
        for n in 0..<200 { net.create(at: 0, author: PublicKey(bytes: [UInt8(n), 9] + [UInt8](repeating: 7, count: 30))!, count: 2) }
        net.connect(0, 1)
        net.settle()
        let ab = Link(local: 0, peer: 1)
        #expect(net.recordsSent[ab] == 400)
        #expect(net.batchesSent[ab] == 4)
        #expect(net.nodes[0].digest == net.nodes[1].digest)
        #expect(net.sessions[ab]!.bufferedRecords == 0)
    }

    @Test func windowBoundHoldsWhenTheReceiverNeverAcks() {
        let net = Network(nodes: 2, settings: SyncSettings(window: 2, batchSize: 5))
        net.autoApply = [0]                                      // node 1 never applies, never acks
        net.create(at: 0, author: x, count: 100)
        net.connect(0, 1)
        net.settle()
        let ab = Link(local: 0, peer: 1)
        #expect(net.batchesSent[ab] == 2)
        #expect(net.recordsSent[ab] == 10)
        #expect(net.maxInFlight[ab] == 2)
        #expect(net.sessions[ab]!.bufferedRecords <= 5)         // no growing buffer on the sender
        // Pushes while the window is full are not buffered either.
        net.create(at: 0, author: x, count: 50)
        net.settle()
        #expect(net.batchesSent[ab] == 2)
        #expect(net.sessions[ab]!.bufferedRecords <= 5)
        // Once the reader catches up, everything arrives, never more than 2 batches in flight.
        net.autoApply = [0, 1]
        net.applyPending(Link(local: 1, peer: 0))
        net.settle()
        #expect(net.nodes[1].contiguous[x] == 150)
        #expect(net.maxInFlight[ab] == 2)
        #expect(net.recordsSent[ab] == 150)
    }

    @Test func aNewRecordIsPushedAtOnceAndNotEchoedBack() {
        let net = Network(nodes: 2)
        net.create(at: 0, author: x, count: 3)
        net.connect(0, 1)
        net.settle()
        let ab = Link(local: 0, peer: 1), ba = Link(local: 1, peer: 0)
        let sentBack = net.recordsSent[ba] ?? 0
        net.create(at: 0, author: x)
        // The push is on the wire right away, before any other message is exchanged.
        #expect(net.wire[ab]?.count == 1)
        net.deliver(ab)
        #expect(net.nodes[1].contiguous[x] == 4)
        net.settle()
        #expect(net.recordsSent[ba] ?? 0 == sentBack)           // B never sends x back to A
        #expect(net.recordsSent[ab] == 4)
    }

    @Test func aLineRelaysRecordsFromOneEndToTheOther() {
        let net = Network(nodes: 3)
        net.create(at: 0, author: x, count: 12)                   // backlog before connecting
        net.create(at: 2, author: z, count: 5)
        net.connect(0, 1)
        net.connect(1, 2)
        net.settle()
        net.create(at: 0, author: x, count: 3)                    // pushed while connected
        net.settle()
        #expect(net.nodes[2].contiguous[x] == 15)
        #expect(net.nodes[0].contiguous[z] == 5)
        #expect(net.nodes[0].digest == net.nodes[2].digest)
        #expect(net.sessions[Link(local: 0, peer: 2)] == nil)     // no direct link
        // Nothing was sent twice over a link.
        #expect(net.recordsSent[Link(local: 1, peer: 2)] == 15)
        #expect(net.recordsSent[Link(local: 1, peer: 0)] == 5)
    }

    @Test func randomCreationAndDeliveryOrderConverges() {
        for seed in UInt64(1)...25 {
            var rng = SeededRandom(seed: seed)
            let net = Network(nodes: 3, settings: SyncSettings(window: Int(rng.next() % 3) + 1, batchSize: Int(rng.next() % 6) + 1))
            let authors = [key(1), key(2), key(3)]
            let line = rng.next() % 2 == 0
            net.connect(0, 1); net.connect(1, 2)
            if !line { net.connect(0, 2) }
            for _ in 0..<400 {
                if rng.next() % 3 == 0 {
                    let n = Int(rng.next() % 3)
                    net.create(at: n, author: authors[n], count: Int(rng.next() % 4) + 1)
                } else {
                    let busy = net.busyLinks
                    if !busy.isEmpty { net.deliver(busy[Int(rng.next() % UInt64(busy.count))]) }
                }
            }
            var r: SeededRandom? = rng
            net.settle(&r)
            #expect(net.nodes[0].digest == net.nodes[1].digest && net.nodes[1].digest == net.nodes[2].digest,
                    "seed \(seed) did not converge")
            #expect(net.closes.isEmpty, "seed \(seed) closed: \(net.closes)")
            #expect(net.maxInFlight.values.allSatisfy { $0 <= net.settings.window }, "seed \(seed) exceeded the window")
        }
    }

    @Test func aRecordWaitingForTheWindowIsNotSentBackOnceThePeerSentIt() {
        var s = SyncSession(settings: SyncSettings(window: 1, batchSize: 1))
        _ = s.start(localVector: [:])
        _ = s.receive(.hello([:]))
        // x:1 goes out at once and fills the window; x:2 and x:3 wait for it.
        let pushed = s.localRecordsAdded([(x, 1, recordBytes(x, 1)), (x, 2, recordBytes(x, 2)), (x, 3, recordBytes(x, 3))])
        #expect(pushed == [.send(.records([recordBytes(x, 1)]))])
        #expect(s.bufferedRecords == 2)
        // Meanwhile the peer got x:1...2 elsewhere and sends them to us: x:2 must not go back.
        _ = s.receive(.records([recordBytes(x, 1), recordBytes(x, 2)]))
        let afterAck = s.receive(.ack(count: 1))
        #expect(afterAck.contains(.send(.records([recordBytes(x, 3)]))), "\(afterAck)")
        #expect(!afterAck.contains(.send(.records([recordBytes(x, 2)]))), "x:2 echoed back: \(afterAck)")
        #expect(s.bufferedRecords == 0)
    }

    // MARK: Violations

    func closes(_ d: [SyncDirective]) -> Int { d.filter { if case .close = $0 { true } else { false } }.count }

    @Test func recordsBeforeHelloCloseOnceAndThenEverythingIsIgnored() {
        var s = SyncSession()
        var all = s.start(localVector: [:])
        all += s.receive(.records([recordBytes(x, 1)]))
        #expect(s.isClosed)
        all += s.receive(.hello([:]))
        all += s.receive(bytes: [0xFF])
        all += s.localRecordsAdded([(x, 1, recordBytes(x, 1))])
        all += s.applied(stored: 1)
        #expect(closes(all) == 1)
        #expect(all.count == 2)                                   // the hello we sent, and the close
    }

    @Test func ackingMoreThanWasSentCloses() {
        var s = SyncSession()
        _ = s.start(localVector: [x: 1])
        var d = s.receive(.hello([:]))
        #expect(d == [.fetch(author: x, seqs: 1...1)])
        d = s.fetched([recordBytes(x, 1)])
        #expect(d == [.send(.records([recordBytes(x, 1)]))])
        #expect(s.receive(.ack(count: 1)).contains(.progress(sent: 1, received: 0)))
        let bad = s.receive(.ack(count: 1)) + s.receive(.ack(count: 1))
        #expect(closes(bad) == 1)
    }

    @Test func malformedBytesASecondHelloOrAnOverfullWindowClose() {
        var a = SyncSession()
        _ = a.start(localVector: [:])
        #expect(closes(a.receive(bytes: [1, 1, 0])) == 1)

        var b = SyncSession()
        _ = b.start(localVector: [:])
        _ = b.receive(.hello([:]))
        #expect(closes(b.receive(.hello([:]))) == 1)

        var c = SyncSession(settings: SyncSettings(window: 2))
        _ = c.start(localVector: [:])
        _ = c.receive(.hello([:]))
        var all: [SyncDirective] = []
        for i in UInt64(1)...3 { all += c.receive(.records([recordBytes(x, i)])) }
        #expect(closes(all) == 1)
        #expect(all.filter { if case .apply = $0 { true } else { false } }.count == 2)

        var d = SyncSession()
        _ = d.start(localVector: [:])
        _ = d.receive(.hello([:]))
        #expect(closes(d.receive(.records([[1, 2, 3]]))) == 1)   // not a record

        var e = SyncSession()
        _ = e.start(localVector: [:])
        #expect(closes(e.receive(.hello(version: 2, vector: []))) == 1)
    }

    @Test func refusedRecordsFromThePeerCloseInsteadOfAcking() {
        var s = SyncSession()
        _ = s.start(localVector: [:])
        _ = s.receive(.hello([:]))
        _ = s.receive(.records([recordBytes(x, 1)]))
        let d = s.applied(stored: 0, refused: 1)
        #expect(closes(d) == 1)
        #expect(!d.contains(.send(.ack(count: 1))))
    }

    @Test func wantResendsFromTheAskedSeq() {
        var s = SyncSession()
        _ = s.start(localVector: [x: 5])
        _ = s.receive(.hello([x: 5]))
        #expect(s.receive(.want(author: x, from: 3)) == [.fetch(author: x, seqs: 3...5)])
    }

    /// Records the replica could not take now (a gap, a full hold-back area, a timestamp past the
    /// hold bound: no fault of the peer) are acked — the session goes on — but not counted as
    /// ours: the local vector stays, and once the back-off (1 s, then 2 s, 4 s …, manual clock)
    /// has passed, the session asks for them again with `want` from its contiguous seq, which
    /// makes the sender fetch them again although it believed we held them. Once they are ours
    /// the asking stops.
    @Test func deferredRecordsAreAckedNotCountedAsOursAndAskedForAgainAfterABackOff() {
        let t0 = ContinuousClock.now
        var sender = SyncSession(), receiver = SyncSession()
        _ = sender.start(localVector: [x: 3])
        _ = receiver.start(localVector: [:])
        _ = receiver.receive(.hello([x: 3]))
        #expect(sender.receive(.hello([:])) == [.fetch(author: x, seqs: 1...3)])
        let batch = (UInt64(1)...3).map { recordBytes(x, $0) }
        #expect(sender.fetched(batch) == [.send(.records(batch))])
        #expect(receiver.receive(.records(batch)) == [.apply(batch)])
        #expect(!receiver.isCaughtUp)

        // The replica took none of them now.
        receiver.deferred([x], now: t0)
        let acked = receiver.applied(stored: 0, refused: 0)
        #expect(acked.contains(.send(.ack(count: 1))) && !receiver.isClosed)
        #expect(receiver.localVector[x] == nil, "deferred records are not marked as received")
        #expect(receiver.isCaughtUp, "a deferral does not keep the session from catching up (and summarizing)")
        #expect(receiver.deferredAuthors == [x] && receiver.nextDeferralRetry == t0 + .seconds(1))
        #expect(sender.receive(.ack(count: 1)).allSatisfy { if case .send(.records) = $0 { false } else { true } },
                "the sender believes we hold them: it would not send them again in this session")

        #expect(receiver.retryDeferred(now: t0 + .milliseconds(999)).isEmpty)
        #expect(receiver.retryDeferred(now: t0 + .seconds(1)) == [.send(.want(author: x, from: 1))])
        #expect(receiver.nextDeferralRetry == t0 + .seconds(3), "then 2 s later")
        #expect(receiver.retryDeferred(now: t0 + .seconds(2)).isEmpty)
        #expect(sender.receive(.want(author: x, from: 1)) == [.fetch(author: x, seqs: 1...3)])

        // Deferred again, and a second round: the first two now taken, 3 still deferred.
        receiver.deferred([x], now: t0 + .seconds(2))
        _ = receiver.localRecordsAdded([(x, 1, batch[0]), (x, 2, batch[1])])
        #expect(receiver.retryDeferred(now: t0 + .seconds(3)) == [.send(.want(author: x, from: 3))])
        _ = receiver.localRecordsAdded([(x, 3, batch[2])])
        #expect(receiver.deferredAuthors.isEmpty && receiver.nextDeferralRetry == nil, "all held now: no more asking")
        #expect(receiver.retryDeferred(now: t0 + .seconds(3600)).isEmpty)
    }

    /// Records the replica holds aside until due come without asking: the session does not
    /// wait for them to be caught up, and asks for nothing.
    @Test func recordsHeldAsideUntilDueDoNotKeepTheSessionFromCatchingUp() {
        var s = SyncSession()
        _ = s.start(localVector: [:])
        _ = s.receive(.hello([x: 2]))
        let batch = [recordBytes(x, 1), recordBytes(x, 2)]
        _ = s.receive(.records(batch))
        _ = s.applied(stored: 2)
        #expect(!s.isCaughtUp)
        s.heldAside([x])
        #expect(s.isCaughtUp && s.deferredAuthors.isEmpty && s.localVector[x] == nil)
        #expect(s.retryDeferred(now: .now + .seconds(3600)).isEmpty)
    }

    @Test func deferralsAreBoundedAndForgottenWhenTheSessionCloses() {
        let t0 = ContinuousClock.now
        var s = SyncSession()
        _ = s.start(localVector: [:])
        _ = s.receive(.hello([:]))
        let many = (0..<(SyncSession.maxDeferredAuthors + 10)).map { i in
            PublicKey(bytes: [UInt8(i >> 8), UInt8(i & 0xff)] + [UInt8](repeating: 7, count: 30))!
        }
        s.deferred(many, now: t0)
        #expect(s.deferredAuthors.count == SyncSession.maxDeferredAuthors)
        // The peer showed it holds seq 1 of each (it sent them); at most 64 wants a round.
        for author in many {
            _ = s.receive(.records([recordBytes(author, 1)]))
            _ = s.applied(stored: 0)
        }
        #expect(!s.isClosed)
        let round = s.retryDeferred(now: t0 + .seconds(1))
        #expect(round.count == SyncSession.maxWantsPerRetry && round.allSatisfy { if case .send(.want(_, 1)) = $0 { true } else { false } })
        #expect(s.nextDeferralRetry == t0 + .seconds(2), "the rest wait a second")
        _ = s.violation("test")
        #expect(s.deferredAuthors.isEmpty && s.retryDeferred(now: t0 + .seconds(60)).isEmpty)
    }

    /// The receiver cuts a link off past 256 `want`s per 30 s (§13.4). However often the retry
    /// timer fires and however many authors stay deferred (each deferred again right after its
    /// `want`, as a replica that still cannot take them would), an honest session keeps to its
    /// own budget of 128 per 30 s, so the peer's rate check never trips — and it keeps asking.
    @Test func deferralRetriesNeverSendMoreWantsThanAReceiverAllows() {
        let t0 = ContinuousClock.now
        var s = SyncSession()
        _ = s.start(localVector: [:])
        _ = s.receive(.hello([:]))
        let many = (0..<SyncSession.maxDeferredAuthors).map { i in
            PublicKey(bytes: [UInt8(i >> 8), UInt8(i & 0xff), 5] + [UInt8](repeating: 7, count: 29))!
        }
        for author in many {
            _ = s.receive(.records([recordBytes(author, 1)]))
            _ = s.applied(stored: 0)
        }
        var peerCheck = MessageRate(capacity: 256, per: .seconds(30))
        var sent = 0, overRate = 0
        for step in 0..<1_200 {   // every 100 ms for two minutes
            let now = t0 + .milliseconds(100 * step)
            s.deferred(many.shuffled().prefix(50).map { $0 }, now: now)
            for directive in s.retryDeferred(now: now) {
                guard case .send(.want(let author, _)) = directive else { continue }
                sent += 1
                if !peerCheck.take(now: now) { overRate += 1 }
                s.deferred([author], now: now)
            }
        }
        #expect(overRate == 0, "\(overRate) of \(sent) wants went over the receiver's rate")
        #expect(sent >= 128 * 4, "still asking: \(sent) wants in two minutes")
    }
}

// MARK: - Bounds (issue 11 item 5)

@Suite struct SyncBoundsTests {
    private func stranger(_ i: Int) -> PublicKey {
        PublicKey(bytes: [UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF), 9] + [UInt8](repeating: 3, count: 28))!
    }

    @Test func aHelloNamingAuthorsWeLackKeepsThemByPrefixOnlyAndStillTracksCatchingUp() {
        var vector: [PublicKey: UInt64] = [:]
        for i in 0..<99_999 { vector[stranger(i)] = 2 }
        let known = PublicKey(bytes: [UInt8](repeating: 0xEE, count: 32))!
        vector[known] = 1
        var sender = SyncSession()
        let hellos = sender.start(localVector: vector).compactMap { d -> SyncMessage? in if case .send(let m) = d { m } else { nil } }
        var receiver = SyncSession()
        _ = receiver.start(localVector: [known: 1])
        for m in hellos { _ = receiver.receive(m) }
        #expect(receiver.isEstablished && receiver.peerVector?.count == 1, "only the author we hold is kept by key")
        #expect(receiver.peerOnlyAuthors == 99_999 && !receiver.isCaughtUp)
        // Records of all of them arrive: caught up; the prefix entries tell what the peer holds.
        for i in 0..<99_999 {
            _ = receiver.localRecordsAdded([(author: stranger(i), seq: 2, bytes: [])])
        }
        #expect(receiver.isCaughtUp, "caught up once every author's records arrived")
        // A record of one of them that the peer holds already is not pushed back.
        let out = receiver.localRecordsAdded([(author: stranger(7), seq: 1, bytes: [1])])
        #expect(!out.contains { if case .send(.records) = $0 { true } else { false } })
    }

    @Test func aHelloInMorePartsThanTheLimitOrAnAbandonedAuthorDoNotHoldTheSession() {
        var s = SyncSession()
        _ = s.start(localVector: [:])
        var last: [SyncDirective] = []
        for _ in 0..<SyncLimits.maxHelloParts + 1 { last = s.receive(.hello(version: SyncMessage.protocolVersion, vector: [], more: true)) }
        #expect("\(last)".contains("more than \(SyncLimits.maxHelloParts) parts"))

        var r = SyncSession()
        _ = r.start(localVector: [:])
        _ = r.receive(.hello(version: SyncMessage.protocolVersion, vector: [.init(author: stranger(1), seq: 50)]))
        #expect(!r.isCaughtUp)
        _ = r.abandon([stranger(1)])
        #expect(r.isCaughtUp, "an author over its budget is not waited for")
    }

    @Test func messageRateAllowsABurstThenRefillsWithTime() {
        let t0 = ContinuousClock.now
        var rate = MessageRate(capacity: 8, per: .seconds(30))
        var taken: [Bool] = []
        for _ in 0..<8 { taken.append(rate.take(now: t0)) }
        #expect(taken.allSatisfy { $0 })
        let ninth = rate.take(now: t0), early = rate.take(now: t0 + .seconds(3))
        let refilled = rate.take(now: t0 + .seconds(4)), again = rate.take(now: t0 + .seconds(4))
        #expect(!ninth, "the ninth at once is over the rate")
        #expect(!early, "0.8 of a token after 3 s")
        #expect(refilled, "one token back after 3.75 s")
        #expect(!again)
    }
}
