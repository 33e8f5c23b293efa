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

/// Hashing without cryptography (MentorCore has none): the first 8 bytes. The real salted
/// hashes are tested with real trees in MentorCryptoTests (ReconcilerTests).
private let plainHashing: @Sendable ([UInt8], [UInt8]) -> ReconHashing = { _, _ in
    let first8: @Sendable ([UInt8]) -> UInt64 = { $0.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
    return ReconHashing(fingerprint: first8, shortID: first8)
}

/// A tree holding nothing.
private struct EmptyView: ReconView {
    func node(depth: Int, prefix: UInt16) -> ReconNode? { nil }
    func children(depth: Int, prefix: UInt16) -> [(nibble: UInt8, node: ReconNode)] { [] }
    func ids(depth: Int, prefix: UInt16) -> [[UInt8]] { [] }
}

private let saltA = [UInt8](repeating: 1, count: 16), saltB = [UInt8](repeating: 2, count: 16)

/// An established session (its hello sent, the peer's taken).
private func established(_ role: SyncRole, settings: SyncSettings = SyncSettings()) -> (SyncSession, [SyncDirective]) {
    var s = SyncSession(role: role, settings: settings, hashing: plainHashing)
    var out = s.start(salt: saltA, held: 0)
    out += s.receive(.hello(salt: saltB, held: 0))
    return (s, out)
}

private func code(_ bytes: [UInt8]) -> SyncError.Code? {
    do { _ = try SyncMessage.decode(bytes); return nil } catch { return error.code }
}

private func closes(_ d: [SyncDirective]) -> [String] {
    d.compactMap { if case .close(let r) = $0 { r } else { nil } }
}

private func sent(_ d: [SyncDirective]) -> [SyncMessage] {
    d.compactMap { if case .send(let m) = $0 { m } else { nil } }
}

private func recon(_ items: [ReconItem]) -> [UInt8] { SyncMessage.recon(items).encoded }

// MARK: - Tests

@Suite struct SyncSessionTests {
    @Test func everyMessageRoundTripsThroughItsEncoding() throws {
        let messages: [SyncMessage] = [
            .hello(salt: saltA, held: 7),
            .records([recordBytes(key(1), 1), recordBytes(key(2), 9)]),
            .ack(count: 3),
            .want(author: key(4), from: 12),
            .wantBlob(hash: Array(repeating: 7, count: 32)),
            .blob(hash: Array(repeating: 7, count: 32), total: 10, offset: 4, bytes: [1, 2, 3]),
            .blob(hash: Array(repeating: 7, count: 32), total: 0, offset: 0, bytes: []),
            .here([key(1), key(2)]),
            .here([]),
            .recon([]),
            .recon([ReconItem(depth: 0, prefix: 0, .fingerprint(count: 9, fingerprint: 77)),
                    ReconItem(depth: 3, prefix: 0x1230, .split([.init(nibble: 2, count: 1, fingerprint: 5)])),
                    ReconItem(depth: 4, prefix: 0xFFFF, .ids([1, 2, 3])),
                    ReconItem(depth: 2, prefix: 0x1200, .need([9]))]),
            .caughtUp,
            .link(Array(repeating: 9, count: SyncLimits.maxLinkOffer)),
            .link([]),
        ]
        for m in messages { #expect(try SyncMessage.decode(m.encoded) == m) }
        #expect(SyncMessage.hello(salt: saltA, held: 7).encoded.count == 26)
    }

    @Test func everyTruncationAndTrailingByteIsRefused() {
        let messages: [SyncMessage] = [.hello(salt: saltA, held: 1), .records([recordBytes(key(1), 1)]), .ack(count: 1),
                                       .want(author: key(1), from: 1), .wantBlob(hash: Array(repeating: 1, count: 32)),
                                       .blob(hash: Array(repeating: 1, count: 32), total: 3, offset: 0, bytes: [9, 9]),
                                       .recon([ReconItem(depth: 1, prefix: 0x1000, .ids([4, 5])),
                                               ReconItem(depth: 0, prefix: 0, .split([.init(nibble: 3, count: 2, fingerprint: 1)]))]),
                                       .caughtUp, .ihave([Array(repeating: 1, count: 32), Array(repeating: 2, count: 32)]), .prune,
                                       .graft([Array(repeating: 3, count: 32)]), .link(Array(repeating: 4, count: 96)), .link([])]
        for m in messages {
            let b = m.encoded
            for n in 0..<b.count { #expect(code(Array(b.prefix(n))) != nil, "prefix \(n) of \(m) accepted") }
            #expect(code(b + [0]) == .malformed)
        }
    }

    @Test func malformedReconItemsAreRefused() {
        func item(_ depth: UInt8, _ prefix: UInt16, _ kind: UInt8, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
            var w = ByteWriter(); w.u8(9); w.u16(1); w.u8(depth); w.u16(prefix); w.u8(kind); body(&w)
            return w.bytes
        }
        #expect(code(item(5, 0, 3) { $0.u32(0) }) == .malformed, "depth past the leaves")
        #expect(code(item(1, 0x1100, 3) { $0.u32(0) }) == .malformed, "prefix bits below the depth")
        #expect(code(item(0, 1, 3) { $0.u32(0) }) == .malformed, "the root has prefix 0")
        #expect(code(item(0, 0, 1) { $0.u32(0); $0.u64(1) }) == .malformed, "a fingerprint of nothing")
        #expect(code(item(4, 0x1234, 2) { $0.u16(1); $0.u32(1); $0.u64(1) }) == .malformed, "a split leaf")
        #expect(code(item(1, 0x1000, 2) { $0.u16(0) }) == .malformed, "a split with no children")
        #expect(code(item(1, 0x1000, 2) { $0.u16(1); $0.u32(0); $0.u64(1) }) == .malformed, "a child of count 0")
        #expect(code(item(1, 0x1000, 3) { $0.u32(2); $0.u64(5); $0.u64(5) }) == .malformed, "ids not strictly ascending")
        #expect(code(item(1, 0x1000, 4) { $0.u32(0) }) == .malformed, "a need of nothing")
        #expect(code(item(1, 0x1000, 7) { $0.u32(0) }) == .malformed, "an unknown kind")
        #expect(code(item(1, 0x1000, 3) { $0.u32(UInt32(SyncLimits.maxReconIDs + 1)) }) == .tooLarge, "checked before reading")
        #expect(code(item(1, 0x1000, 3) { $0.u32(1000) }) == .malformed, "more IDs announced than bytes follow")
        var many = ByteWriter(); many.u8(9); many.u16(UInt16.max)
        #expect(code(many.bytes) == .malformed, "more items announced than bytes follow")
        #expect(code(item(2, 0x1200, 3) { $0.u32(0) }) == nil)
    }

    @Test func aV1HelloEndsTheSessionWithOneClearLineAndNoBlame() {
        var s = SyncSession(role: .responder, hashing: plainHashing)
        _ = s.start(salt: saltA, held: 0)
        // A v1 hello: version 1, flags, an empty vector.
        let out = s.receive(bytes: [0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(out == [.end("the peer speaks sync protocol v1; this build speaks v5 — upgrade it")])
        #expect(s.isClosed && s.receive(.caughtUp).isEmpty)
        var t = SyncSession(role: .initiator, hashing: plainHashing)
        #expect(t.receive(bytes: [0x01, 0x06]) == [.end("the peer speaks sync protocol v6; this build speaks v5 — upgrade it")])
        // A v2 node (no device records) is refused the same way, whatever follows its version.
        var u = SyncSession(role: .initiator, hashing: plainHashing)
        #expect(u.receive(bytes: [0x01, 0x02]) == [.end("the peer speaks sync protocol v2; this build speaks v5 — upgrade it")])
        // A v3 node (record types 1-7 only: it would take posts, follows and quiz results for
        // offences) is refused the same way.
        var v = SyncSession(role: .initiator, hashing: plainHashing)
        #expect(v.receive(bytes: [0x01, 0x03]) == [.end("the peer speaks sync protocol v3; this build speaks v5 — upgrade it")])
        // A v4 node (no profile field 18: it would take a membership certificate for an
        // offence) is refused the same way.
        var w = SyncSession(role: .initiator, hashing: plainHashing)
        #expect(w.receive(bytes: [0x01, 0x04]) == [.end("the peer speaks sync protocol v4; this build speaks v5 — upgrade it")])
    }

    @Test func aSummaryIsAProtocolViolationInV2() {
        var (s, _) = established(.responder)
        #expect(code([0x08, 0x00, 0x00, 0x00, 0x00, 0x00]) == .protocolViolation)
        let out = s.receive(bytes: [0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(closes(out).count == 1 && closes(out)[0].contains("summary"))
    }

    @Test func messagesBeforeHelloOrASecondHelloClose() {
        for m in [SyncMessage.recon([]), .caughtUp, .records([recordBytes(key(1), 1)]), .ack(count: 1), .here([]), .link([1])] {
            var s = SyncSession(role: .responder, hashing: plainHashing)
            _ = s.start(salt: saltA, held: 0)
            #expect(closes(s.receive(m)).first?.contains("before hello") == true, "\(m)")
        }
        var (s, _) = established(.responder)
        #expect(closes(s.receive(.hello(salt: saltB, held: 0))) == ["protocol violation: a second hello"])
    }

    @Test func theInitiatorOpensARoundAndEqualSetsEndInThreeMessages() throws {
        var a = SyncSession(role: .initiator, hashing: plainHashing), b = SyncSession(role: .responder, hashing: plainHashing)
        let outA = a.start(salt: saltA, held: 0), outB = b.start(salt: saltB, held: 0)
        var wire: [[SyncMessage]] = [[], []]
        func run(_ side: Int, _ d: [SyncDirective]) throws {
            var pending = d[...]
            while let x = pending.popFirst() {
                switch x {
                case .send(let m): wire[side].append(m)
                case .reconcile: pending = try (side == 0 ? a.reconcile(in: EmptyView()) : b.reconcile(in: EmptyView()))[...] + pending
                case .close(let r): Issue.record("closed: \(r)")
                default: break
                }
            }
        }
        try run(0, outA); try run(1, outB)
        var recons = 0, reconciles = [0, 0]
        while !wire[0].isEmpty || !wire[1].isEmpty {
            for side in 0..<2 where !wire[side].isEmpty {
                let m = wire[side].removeFirst()
                if case .recon = m { recons += 1 }
                let out = side == 0 ? b.receive(m) : a.receive(m)
                if case .hello = m, out.contains(.reconcile) { reconciles[1 - side] += 1 }
                try run(1 - side, out)
            }
        }
        #expect(reconciles == [1, 0], "only the initiator starts a round, once both hellos are in")
        #expect(recons == 3, "opening, an empty answer, an empty answer to that")
        #expect(a.roundsFinished == 1 && b.roundsFinished == 1)
        #expect(a.isCaughtUp && b.isCaughtUp && a.isIdle && b.isIdle)
        // The next round is the initiator's to start; the responder may not.
        #expect(b.startRound().isEmpty)
        #expect(a.startRound() == [.reconcile])
    }

    @Test func reconOutOfTurnCloses() throws {
        // The responder answers once per message: a second one before its answer is out of turn.
        var (s, _) = established(.responder)
        #expect(s.receive(bytes: recon([ReconItem(depth: 0, prefix: 0, .ids([]))])) == [.reconcile])
        #expect(closes(s.receive(bytes: recon([]))).first?.contains("out of turn") == true)
        // The initiator takes no recon before it opened a round.
        var (i, _) = established(.initiator)
        #expect(closes(i.receive(bytes: recon([]))).first?.contains("out of turn") == true)
    }

    @Test func whatThePeerLacksIsFetchedAsSubtreesAndIDsThenCaughtUpGoesOut() throws {
        struct OneLeaf: ReconView {
            let id: [UInt8] = [0x12, 0x34] + [UInt8](repeating: 9, count: 30)
            func node(depth: Int, prefix: UInt16) -> ReconNode? {
                ReconTree.prefix(of: id, depth: depth) == prefix ? ReconNode(count: 1, hash: [UInt8](repeating: UInt8(depth), count: 32)) : nil
            }
            func children(depth: Int, prefix: UInt16) -> [(nibble: UInt8, node: ReconNode)] {
                guard let n = node(depth: depth + 1, prefix: ReconTree.prefix(of: id, depth: depth + 1)), node(depth: depth, prefix: prefix) != nil
                else { return [] }
                return [(UInt8(ReconTree.prefix(of: id, depth: depth + 1) >> UInt16(12 - 4 * depth) & 0xf), n)]
            }
            func ids(depth: Int, prefix: UInt16) -> [[UInt8]] { node(depth: depth, prefix: prefix) == nil ? [] : [id] }
        }
        var (s, _) = established(.responder)
        // The peer holds nothing: it opens with an empty list at the root.
        _ = s.receive(bytes: recon([ReconItem(depth: 0, prefix: 0, .ids([]))]))
        var out = try s.reconcile(in: OneLeaf())
        #expect(sent(out) == [.recon([])])
        #expect(out.contains(.fetchSubtree(depth: 0, prefix: 0, after: nil, limit: 256)))
        out = s.fetched([recordBytes(key(1), 1)], next: FetchCursor(token: 1))
        #expect(sent(out) == [.records([recordBytes(key(1), 1)])])
        #expect(out.contains(.fetchSubtree(depth: 0, prefix: 0, after: FetchCursor(token: 1), limit: 256)),
                "the read goes on from where it stopped")
        out = s.fetched([], next: nil)
        // The peer's empty answer ends the round; everything queued is out: caughtUp.
        out += s.receive(bytes: recon([]))
        #expect(sent(out) == [.caughtUp])
        #expect(!s.isCaughtUp, "not before the peer's caughtUp")
        _ = s.receive(.caughtUp)
        #expect(s.isCaughtUp)
        // A need for one of our short IDs is a fetch by ID.
        var (t, _) = established(.responder)
        _ = t.receive(bytes: recon([ReconItem(depth: 4, prefix: 0x1234, .need([plainHashing([], []).shortID(OneLeaf().id)]))]))
        out = try t.reconcile(in: OneLeaf())
        #expect(out.contains(.fetchIDs([OneLeaf().id])))
    }

    @Test func windowAndAcksHoldAndCaughtUpWaitsForTheBatchesBeforeIt() {
        var (s, _) = established(.responder, settings: SyncSettings(window: 2, batchSize: 4))
        #expect(s.receive(.records([recordBytes(key(1), 1)])) == [.apply([recordBytes(key(1), 1)])])
        _ = s.receive(.records([recordBytes(key(1), 2)]))
        _ = s.receive(bytes: recon([ReconItem(depth: 0, prefix: 0, .ids([]))]))
        _ = try? s.reconcile(in: EmptyView())
        _ = s.receive(bytes: recon([]))
        _ = s.receive(.caughtUp)
        #expect(!s.isCaughtUp, "two batches before caughtUp are not applied yet")
        #expect(sent(s.applied(stored: 1)) == [.ack(count: 1)])
        #expect(!s.isCaughtUp)
        _ = s.applied(stored: 1, holdAck: true)
        #expect(s.isCaughtUp, "applied (its ack held back by the rate is no matter)")
        #expect(sent(s.releaseAcks()) == [.ack(count: 1)])
        _ = s.receive(.records([recordBytes(key(1), 3)]))
        _ = s.receive(.records([recordBytes(key(1), 4)]))
        #expect(closes(s.receive(.records([recordBytes(key(1), 5)]))).first?.contains("unacknowledged") == true)
        var (t, _) = established(.responder)
        #expect(closes(t.receive(.ack(count: 1))).first?.contains("ack of 1") == true)
    }

    /// A batch acknowledged when queued (`accepted`) frees the window at once; its apply then
    /// sends no second ack, still counts for caught-up, and a refusal then still closes. At most
    /// a window of batches is so acknowledged, and none while acks are held for the rate.
    @Test func aBatchAcceptedWhenQueuedIsAcknowledgedOnceAndItsApplyStillCounts() {
        var (s, _) = established(.responder, settings: SyncSettings(window: 2, batchSize: 4))
        _ = s.receive(.records([recordBytes(key(1), 1)]))
        _ = s.receive(.records([recordBytes(key(1), 2)]))
        #expect(sent(s.accepted()) == [.ack(count: 1)])
        #expect(sent(s.accepted()) == [.ack(count: 1)])
        #expect(s.accepted().isEmpty, "nothing unacknowledged is left to accept")
        #expect(s.unackedReceived == 0 && s.acceptedUnapplied == 2)
        // The window is free again: two more batches come in, and may not be accepted past the bound.
        #expect(closes(s.receive(.records([recordBytes(key(1), 3)]))).isEmpty)
        #expect(closes(s.receive(.records([recordBytes(key(1), 4)]))).isEmpty)
        #expect(s.accepted().isEmpty, "a window of batches already waits acknowledged")
        #expect(sent(s.applied(stored: 1)).isEmpty, "an accepted batch's apply sends no second ack")
        #expect(sent(s.accepted()) == [.ack(count: 1)], "one place free again")
        #expect(sent(s.applied(stored: 1)).isEmpty)
        #expect(sent(s.applied(stored: 1)).isEmpty)
        #expect(sent(s.applied(stored: 1)) == [.ack(count: 1)], "the one not accepted is acknowledged after its apply")
        #expect(s.unackedReceived == 0 && s.acceptedUnapplied == 0)
        // Held acks (the rate) stop early acks: they would overtake the held ones.
        _ = s.receive(.records([recordBytes(key(1), 5)]))
        _ = s.applied(stored: 1, holdAck: true)
        _ = s.receive(.records([recordBytes(key(1), 6)]))
        #expect(s.accepted().isEmpty)
        // A refusal found in an accepted batch's apply still ends the session.
        var (t, _) = established(.responder)
        _ = t.receive(.records([recordBytes(key(1), 1)]))
        _ = t.accepted()
        #expect(closes(t.applied(stored: 0, refused: 1)).first?.contains("refused") == true)
    }

    @Test func pushesGoOutAtOnceAndWaitForTheWindowUpToABound() {
        var (s, _) = established(.responder, settings: SyncSettings(window: 1, batchSize: 2))
        let r = (1...3).map { (author: key(1), seq: UInt64($0), bytes: recordBytes(key(1), UInt64($0))) }
        #expect(sent(s.localRecordsAdded([r[0]])) == [.records([r[0].bytes])])
        #expect(sent(s.localRecordsAdded([r[1], r[2]])).isEmpty, "the window is full")
        #expect(s.bufferedRecords == 2)
        #expect(sent(s.receive(.ack(count: 1))) == [.records([r[1].bytes, r[2].bytes])])
        var (t, _) = established(.responder, settings: SyncSettings(window: 1, batchSize: 1))
        _ = t.localRecordsAdded([r[0]])
        let many = (1...(SyncSession.maxBufferedPushes + 50)).map { (author: key(2), seq: UInt64($0), bytes: recordBytes(key(2), UInt64($0))) }
        _ = t.localRecordsAdded(many)
        #expect(t.bufferedRecords == SyncSession.maxBufferedPushes, "the rest is left to the next round")
        // Before hello nothing is pushed: the first round finds it.
        var u = SyncSession(role: .initiator, hashing: plainHashing)
        #expect(u.localRecordsAdded([r[0]]).isEmpty)
    }

    @Test func wantIsAnsweredFromTheAskedSeqUntilTheAuthorRunsOut() {
        var (s, _) = established(.responder, settings: SyncSettings(window: 4, batchSize: 2))
        #expect(s.receive(.want(author: key(1), from: 3)) == [.fetch(author: key(1), seqs: 3...4)])
        let out = s.fetched([recordBytes(key(1), 3), recordBytes(key(1), 4)])
        #expect(out.contains(.fetch(author: key(1), seqs: 5...6)))
        #expect(!s.fetched([]).contains { if case .fetch = $0 { true } else { false } })
    }

    @Test func deferredRecordsAreAskedForAgainAfterABackOff() {
        var (s, _) = established(.responder)
        let t0 = ContinuousClock.now
        _ = s.receive(.records([recordBytes(key(1), 5)]))
        _ = s.applied(stored: 0)
        s.deferred([key(1)], now: t0)
        #expect(s.retryDeferred(now: t0, held: { _ in 0 }).isEmpty, "not before the back-off")
        #expect(sent(s.retryDeferred(now: t0 + .seconds(2), held: { _ in 2 })) == [.want(author: key(1), from: 3)])
        _ = s.localRecordsAdded([(key(1), 5, recordBytes(key(1), 5))])
        #expect(s.deferredAuthors.isEmpty, "held now")
    }

    @Test func hereIsLimitedAndSorted() {
        var w = ByteWriter(); w.u8(7); w.u16(UInt16(SyncLimits.maxHereAccounts + 1))
        #expect(code(w.bytes) == .tooLarge)
        var unsorted = ByteWriter(); unsorted.u8(7); unsorted.u16(2); unsorted.raw(key(2).bytes); unsorted.raw(key(1).bytes)
        #expect(code(unsorted.bytes) == .malformed)
        #expect(code(SyncMessage.here([key(1), key(2)]).encoded) == nil)
    }

    /// `link` (PROTOCOL.md §13.8): its length checked before anything is read, its bytes handed
    /// to the shell as they came (the offer's cryptography is the shell's), none = withdrawn.
    @Test func aLinkOfferIsBoundedAndHandedToTheShellAsItCame() {
        var over = ByteWriter(); over.u8(0x0e); over.u16(UInt16(SyncLimits.maxLinkOffer + 1))
        #expect(code(over.bytes) == .tooLarge, "checked before reading")
        var short = ByteWriter(); short.u8(0x0e); short.u16(10); short.raw([1, 2, 3])
        #expect(code(short.bytes) == .malformed, "more bytes announced than follow")
        #expect(SyncMessage.link([0xAA, 0xBB]).encoded == [0x0e, 0x00, 0x02, 0xAA, 0xBB])
        var (s, _) = established(.responder)
        #expect(s.receive(bytes: SyncMessage.link([5, 6, 7]).encoded) == [.linkOffer([5, 6, 7])])
        #expect(s.receive(bytes: SyncMessage.link([]).encoded) == [.linkOffer([])], "a withdrawal")
        #expect(closes(s.receive(bytes: over.bytes)).first?.contains("link offer of 160 bytes") == true)
        #expect(s.isClosed)
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
