import Testing
@testable import MentorCore

private func id(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 32) }
private let t0 = ContinuousClock.now

/// The rules of lazy push (PROTOCOL.md §13.7) in `PushTree`, with the clock passed in.
@Suite struct PushTreeTests {
    func tree(_ links: [PushTree.Link], timeout: Duration = .seconds(1)) -> PushTree {
        var t = PushTree(settings: .init(graftTimeout: timeout))
        for l in links { t.linkUp(l) }
        return t
    }

    @Test func newLinksAreEager() {
        let t = tree([1, 2, 3])
        #expect(t.eagerLinks == [1, 2, 3])
        #expect(!t.isEager(9), "an unknown link is not pushed to")
    }

    @Test func aDuplicateBodyPrunesItsLinkOnceButNeverTheLastEagerOne() {
        var t = tree([1, 2, 3])
        let r1 = t.duplicate(from: 2)
        #expect(r1, "a duplicate from an eager link: prune it")
        #expect(!t.isEager(2))
        let r2 = t.duplicate(from: 2)
        #expect(!r2, "pruned already: no second prune until it is grafted")
        let r3 = t.duplicate(from: 3)
        #expect(r3)
        let r4 = t.duplicate(from: 1)
        #expect(!r4, "link 1 is the last eager link: kept")
        #expect(t.eagerLinks == [1])

        var two = tree([7])
        let r5 = two.duplicate(from: 7)
        #expect(!r5, "two nodes: the only link stays eager")
        #expect(two.isEager(7))
    }

    @Test func pruneAndGraftReceivedSetTheLinkLazyAndEager() {
        var t = tree([1, 2])
        t.prunedBy(1)
        #expect(!t.isEager(1))
        t.graftedBy(1)
        #expect(t.isEager(1))
        // A link we pruned and the peer then grafted may be pruned again later.
        let r6 = t.duplicate(from: 1)
        #expect(r6)
        t.graftedBy(1)
        let r7 = t.duplicate(from: 1)
        #expect(r7)
    }

    @Test func anAnnouncedIDWhoseBodyDoesNotComeIsGraftedFromItsAnnouncers() {
        var t = tree([1, 2, 3])
        t.prunedBy(2); t.prunedBy(3)
        t.announced([id(5), id(6)], by: 2, now: t0)
        t.announced([id(5)], by: 3, now: t0 + .milliseconds(100))
        #expect(t.missingCount == 2)
        #expect(t.nextDeadline == t0 + .seconds(1))
        #expect(t.due(now: t0 + .milliseconds(999)).isEmpty, "not before the timeout")
        let first = t.due(now: t0 + .seconds(1))
        #expect(first.count == 1 && first[0].link == 2 && first[0].ids == [id(5), id(6)], "\(first)")
        #expect(t.isEager(2), "the grafted link is eager again")
        // id 5 still missing a timeout later: its next announcer is asked; id 6 had no other.
        let second = t.due(now: t0 + .seconds(2))
        #expect(second.count == 1 && second[0].link == 3 && second[0].ids == [id(5)], "\(second)")
        #expect(!t.isMissing(id(6)), "its only announcer was asked a timeout ago: forgotten (left to reconciliation)")
        #expect(t.isMissing(id(5)))
        #expect(t.due(now: t0 + .seconds(3)).isEmpty)
        #expect(t.missingCount == 0, "nobody left to ask: left to reconciliation")
    }

    @Test func aBodyThatArrivesCancelsItsGraft() {
        var t = tree([1, 2])
        t.announced([id(5)], by: 2, now: t0)
        t.held([id(5)])
        #expect(t.due(now: t0 + .seconds(5)).isEmpty)
        #expect(t.knows(id(5)))
        t.announced([id(5)], by: 1, now: t0)
        #expect(t.missingCount == 0, "an ID known as held is not waited for")
    }

    @Test func aLinkThatEndsIsForgottenAndItsAnnouncementsGoToTheOthers() {
        var t = tree([1, 2, 3])
        t.announced([id(8)], by: 2, now: t0)
        t.announced([id(8)], by: 3, now: t0)
        t.linkDown(2)
        #expect(!t.isEager(2) && !t.eagerLinks.contains(2))
        let asks = t.due(now: t0 + .seconds(1))
        #expect(asks.count == 1 && asks[0].link == 3, "asked of the announcer still linked: \(asks)")
        t.announced([id(9)], by: 2, now: t0)
        #expect(!t.isMissing(id(9)), "announcements of a link that ended are ignored")
    }

    @Test func theMissingSetIsBounded() {
        var t = PushTree(settings: .init(maxMissing: 3))
        t.linkUp(1)
        let dropped = t.announced((1...10).map { id($0) }, by: 1, now: t0)
        #expect(t.missingCount == 3 && dropped == 7)
        var r = PushTree(settings: .init(recentBound: 4))
        r.linkUp(1)
        r.held((1...10).map { id($0) })
        #expect(!r.knows(id(1)) && r.knows(id(10)), "only the most recent held IDs are remembered")
    }
}

/// The session's part: the new messages' handling and budgets, and their codec.
@Suite struct LazyPushSessionTests {
    static let hashing: @Sendable ([UInt8], [UInt8]) -> ReconHashing = { _, _ in ReconHashing(fingerprint: { _ in 0 }, shortID: { _ in 0 }) }

    func established() -> SyncSession {
        var s = SyncSession(role: .responder, hashing: Self.hashing)
        _ = s.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        _ = s.receive(.hello(salt: [UInt8](repeating: 2, count: 16), held: 0))
        return s
    }

    @Test func ihavePruneAndGraftBecomeTreeSignalsAndAGraftQueuesItsBodies() {
        var s = established()
        #expect(s.receive(.ihave([id(1), id(2)])) == [.tree(.announced([id(1), id(2)]))])
        #expect(s.idsAnnounced == 2)
        let r8 = s.receive(.prune)
        #expect(r8 == [.tree(.pruned)])
        let out = s.receive(.graft([id(3)]))
        #expect(out == [.tree(.grafted), .fetchIDs([id(3)])], "\(out)")
        // Unknown IDs: the replica returns nothing, nothing is sent, the session goes on.
        let r9 = s.fetched([])
        #expect(r9.isEmpty)
        #expect(!s.isClosed)
    }

    @Test func treeMessagesBeforeHelloAreAViolation() {
        var s = SyncSession(role: .responder, hashing: Self.hashing)
        _ = s.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        let out = s.receive(.ihave([id(1)]))
        #expect(out.count == 1 && { if case .close = out[0] { true } else { false } }())
    }

    @Test func announceBatchesSortsAndKeepsToItsBudget() {
        var s = established()
        let ids = (0..<1500).map { i in [UInt8](repeating: 0, count: 30) + [UInt8(i >> 8), UInt8(i & 0xff)] }
        let out = s.announce(ids.reversed() + [ids[0]], now: t0)
        #expect(out.count == 2, "1,500 distinct IDs in messages of at most 1,024")
        if case .send(.ihave(let first)) = out.first { #expect(first.count == 1024 && first == Array(ids.prefix(1024))) }
        var sent = 2
        while !s.announce([id(1)], now: t0).isEmpty { sent += 1 }
        #expect(sent == SyncSession.treeMessagesPerPeriod, "at most \(SyncSession.treeMessagesPerPeriod) ihaves at once")
        #expect(s.announcementsDropped == 1)
        let r10 = s.announce([id(1)], now: t0 + SyncSession.treePeriod)
        #expect(!r10.isEmpty, "refilled after the period")
        let r11 = s.prune()
        #expect(r11 == [.send(.prune)])
        let r12 = s.graft([id(4)], now: t0)
        #expect(r12 == [.send(.graft([id(4)]))])
    }

    @Test func codecRoundTripsAndRefusesMalformedInput() throws {
        for m: SyncMessage in [.ihave([id(1), id(2)]), .prune, .graft([id(3)])] {
            #expect(try SyncMessage.decode(m.encoded) == m)
        }
        func code(_ bytes: [UInt8]) -> SyncError.Code? {
            do { _ = try SyncMessage.decode(bytes); return nil } catch { return error.code }
        }
        #expect(code([0x0B, 0x00, 0x00]) == .malformed, "an empty ihave")
        #expect(code([0x0D, 0x00, 0x01] + [UInt8](repeating: 1, count: 31)) == .malformed, "a short ID")
        #expect(code([0x0B, 0x00, 0x01] + id(1) + [0]) == .malformed, "a trailing byte")
        #expect(code([0x0B, 0x00, 0x02] + id(2) + id(1)) == .malformed, "not ascending")
        #expect(code([0x0D, 0x00, 0x02] + id(2) + id(2)) == .malformed, "an ID twice")
        #expect(code([0x0B, 0x04, 0x01]) == .tooLarge, "1,025 IDs, refused before reading them")
        #expect(code([0x0B, 0xFF, 0xFF]) == .tooLarge)
        #expect(code([0x0C, 0x00]) == .malformed, "a prune has no body")
        #expect(code([0x0B]) == .malformed, "truncated")
    }
}
