import MentorCore
import MentorCrypto
@testable import MentorStore
import Testing

/// Two real replicas synced by two `SyncSession`s (v2) over an in-memory link, each run by the
/// daemon's own interpreter (`SyncDriver`) over a host that reads from and applies to the
/// replica. The tree is built in memory from the replica's records here (the SQLite tree has
/// its own tests against `MemoryReconTree`).
private final class ReplicaHost: SyncHost {
    let replica: Replica
    var outbox: [[UInt8]] = []          // messages sent, oldest first
    var toApply: [[[UInt8]]] = []       // batches received, applied in `settle`
    var closed: [String] = []
    var errors: [any Error] = []
    init(_ replica: Replica) { self.replica = replica }

    var isOpen: Bool { closed.isEmpty }
    var now: ContinuousClock.Instant { .now }
    func send(_ message: SyncMessage) { outbox.append(message.encoded) }
    func entries() throws -> [(id: [UInt8], bytes: [UInt8])] {
        try replica.knownAuthors().flatMap { a in
            try replica.records(of: a, seqs: 1...Limits.maxSeq).map { (VerifiedRecord.id(of: $0), $0) }
        }
    }
    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]] { try replica.records(of: author, seqs: seqs) }
    func records(ids: [[UInt8]]) throws -> [[UInt8]] {
        let wanted = Set(ids)
        return try entries().filter { wanted.contains($0.id) }.map(\.bytes)
    }
    func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?) {
        (try entries().filter { ReconTree.prefix(of: $0.id, depth: depth) == prefix }.map(\.bytes), nil)
    }
    func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T { try body(MemoryReconTree(try entries().map(\.id))) }
    func contiguousSeq(of author: PublicKey) -> UInt64 { (try? replica.contiguousSeq(of: author)) ?? 0 }
    func apply(_ batch: [[UInt8]]) { toApply.append(batch) }
    func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) {}
    func progress(sent: Int, received: Int) {}
    func peerAccounts(_ accounts: [PublicKey]) {}
    func serveBlob(hash: [UInt8]) -> String? { nil }
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String? { nil }
    func finished(_ reason: String, blame: Bool) { closed.append(reason) }
}

private final class ReplicaLink {
    let hosts: [ReplicaHost]
    let drivers: [SyncDriver]
    var sessions: [SyncSession] { drivers.map(\.session) }
    var closed: [String] { hosts.flatMap(\.closed) }

    init(_ a: Replica, _ b: Replica) {
        hosts = [ReplicaHost(a), ReplicaHost(b)]
        drivers = [SyncDriver(session: SyncSession(role: .initiator, hashing: ReconHash.hashing), host: hosts[0]),
                   SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), host: hosts[1])]
    }

    func entries(_ i: Int) throws -> [(id: [UInt8], bytes: [UInt8])] { try hosts[i].entries() }

    func start() throws {
        for i in 0..<2 {
            drivers[i].start(salt: [UInt8](repeating: UInt8(i + 1), count: 16), held: UInt64(try entries(i).count))
        }
    }

    /// Delivers and applies until nothing is left to do.
    func settle() throws {
        var steps = 0
        while hosts.contains(where: { !$0.outbox.isEmpty || !$0.toApply.isEmpty }), steps < 100_000 {
            for i in 0..<2 {
                if !hosts[i].outbox.isEmpty { drivers[1 - i].receive(bytes: hosts[i].outbox.removeFirst()) }
                if !hosts[i].toApply.isEmpty {
                    let outcomes = try hosts[i].replica.apply(batch: hosts[i].toApply.removeFirst())
                    let refused = outcomes.filter { if case .refused = $0 { true } else { false } }.count
                    drivers[i].applied(stored: outcomes.count - refused, refused: refused)
                }
            }
            steps += 1
        }
    }
}

@Suite struct ForkSyncTests {
    let ana = keyPair(41)

    func card(_ seq: UInt64, _ bio: String) throws -> [UInt8] {
        try signed(ana, type: 1, seq: seq, body: ProfileCard(bio: bio).body, timestamp: seq)
    }

    @Test func theDigestFollowsTheStoredRecordsWhateverTheOrderAndDropsAReplacedVariant() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let records = try (1...5).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: records)
        _ = try y.apply(batch: records.reversed())
        let sx = try x.versionSummary()[ana.publicKey.key], sy = try y.versionSummary()[ana.publicKey.key]
        #expect(sx == sy && sx?.seq == 5 && sx?.digest != 0)
        // A variant at seq 3 changes the digest; the digest equals one computed from scratch.
        _ = try x.apply(try card(3, "other 3"))
        let forked = try x.versionSummary()[ana.publicKey.key]
        #expect(forked?.seq == 5 && forked?.digest != sx?.digest)
        try x.write { db throws(StoreError) in try db.execute("UPDATE authors SET digest = NULL") }
        try x.write { db throws(StoreError) in try Replica.computeMissingDigests(db) }
        #expect(try x.versionSummary()[ana.publicKey.key] == forked, "the incremental digest matches a recomputation")
    }

    /// Ana's key signed different records for seq 5 on two machines, each of which only ever saw
    /// its own: each variant is one more ID in a set, so one round exchanges them and both end
    /// with both variants, the author flagged as forked.
    @Test func aForkAtTheSameSeqIsExchangedByOneRound() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let common = try (1...4).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: common + [try card(5, "laptop")])
        _ = try y.apply(batch: common + [try card(5, "lab machine")])
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        #expect(link.closed.isEmpty, "\(link.closed)")
        #expect(link.sessions[0].recordsSent == 1 && link.sessions[1].recordsSent == 1, "only the variants travel")
        #expect(try Set(link.entries(0).map(\.id)) == Set(link.entries(1).map(\.id)))
        #expect(try x.counts().records == 6 && x.card(of: ana.publicKey.key)?.forked == true)
        #expect(try y.card(of: ana.publicKey.key)?.forked == true)
        #expect(link.sessions[0].isCaughtUp && link.sessions[1].isCaughtUp)
    }

    /// The fork lies below where the two sides stand (y is behind): v1 needed a later summary
    /// to find it; v2's round finds it with the rest.
    @Test func aForkBelowTheOtherSidesHighestSeqIsFoundInTheSameRound() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let common = try (1...4).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: common + [try card(5, "laptop"), try card(6, "later")])
        _ = try y.apply(batch: common + [try card(5, "lab machine")])
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        #expect(link.closed.isEmpty, "\(link.closed)")
        #expect(try Set(link.entries(0).map(\.id)) == Set(link.entries(1).map(\.id)))
        #expect(try x.counts().records == 7)
    }

    @Test func equalReplicasExchangeNothing() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let records = try (1...20).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: records)
        _ = try y.apply(batch: records)
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        #expect(link.sessions[0].recordsSent == 0 && link.sessions[1].recordsSent == 0)
        #expect(link.sessions[0].reconMessagesSent == 2 && link.sessions[1].reconMessagesSent == 1)
    }

    /// The hidden-fork attack at the replica level: two 70-edit chains of one author that differ
    /// at some seqs (the last among them) with equal v1 state — the same contiguous seq and the
    /// same v1 XOR digest (`versionSummary`), so v1's hello and summary saw nothing to exchange
    /// (that comparison is what these equalities defeat). One v2 round exchanges the variants.
    @Test func chainsWithEqualV1DigestsAreToldApartAndExchangedByOneRound() throws {
        func prefix(_ id: [UInt8]) -> UInt64 { id.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
        let a = try (1...70).map { try card(UInt64($0), "bio A \($0)") }
        let alt = try (1...70).map { try card(UInt64($0), "bio B \($0)") }
        let v = (0..<70).map { prefix(VerifiedRecord.id(of: a[$0])) ^ prefix(VerifiedRecord.id(of: alt[$0])) }
        // Gaussian elimination over GF(2): which of the first 69 differences XOR to the 70th.
        var basis: [Int: (vector: UInt64, made: Set<Int>)] = [:]
        for i in 0..<69 {
            var x = v[i], made: Set<Int> = [i]
            while x != 0, let b = basis[63 - x.leadingZeroBitCount] { x ^= b.vector; made.formSymmetricDifference(b.made) }
            if x != 0 { basis[63 - x.leadingZeroBitCount] = (x, made) }
        }
        var x = v[69], differ: Set<Int> = [69]
        while x != 0, let b = basis[63 - x.leadingZeroBitCount] { x ^= b.vector; differ.formSymmetricDifference(b.made) }
        try #require(x == 0, "the first 69 differences span the 70th")
        let b = (0..<70).map { differ.contains($0) ? alt[$0] : a[$0] }
        let x1 = try memoryReplica(), y1 = try memoryReplica()
        _ = try x1.apply(batch: a)
        _ = try y1.apply(batch: b)
        let vx = try x1.versionSummary()[ana.publicKey.key], vy = try y1.versionSummary()[ana.publicKey.key]
        #expect(vx == vy && vx?.seq == 70, "v1 sees the same seq and digest on both sides: \(String(describing: vx)) \(String(describing: vy))")
        #expect(try x1.card(of: ana.publicKey.key)?.card.bio != y1.card(of: ana.publicKey.key)?.card.bio, "yet they show different bios")
        let link = ReplicaLink(x1, y1)
        try link.start()
        try link.settle()
        #expect(link.closed.isEmpty, "\(link.closed)")
        #expect(try x1.counts().records == 70 + differ.count && y1.counts().records == 70 + differ.count)
        #expect(try x1.card(of: ana.publicKey.key)?.forked == true && y1.card(of: ana.publicKey.key)?.forked == true)
        #expect(link.sessions[0].recordsSent == differ.count && link.sessions[1].recordsSent == differ.count, "only the variants travel")
    }
}
