import Testing
@testable import MentorNode

/// The table of mDNS instances (issue 11 item 5): bounded in size and in time, on an injected clock.
@Suite struct DiscoveredTableTests {
    let t0 = ContinuousClock.now

    private func table(capacity: Int = 4, forgetAfter: Duration = .seconds(600)) -> DiscoveredTable {
        var settings = DiscoveredTable.Settings()
        settings.capacity = capacity
        settings.forgetAfter = forgetAfter
        return DiscoveredTable(settings: settings)
    }

    @Test func anInstanceThatNeverAnswersIsForgottenAfterTheTimeout() {
        var t = table()
        t.insert("silent", slot: 0, now: t0)
        t.insert("talks", slot: 1, now: t0)
        t.answered("talks", now: t0 + .seconds(5))
        #expect(t.expired(now: t0 + .seconds(599)).isEmpty)
        #expect(t.expired(now: t0 + .seconds(600)) == ["silent"], "silent since found 600 s ago")
        #expect(t.isExpired("talks", now: t0 + .seconds(604)) == false && t.isExpired("talks", now: t0 + .seconds(605)))
        let slot = t.remove("silent")
        #expect(slot == 0 && t.slot(of: "silent") == nil && t.count == 1)
    }

    @Test func answeringAgainKeepsAnInstance() {
        var t = table()
        t.insert("peer", slot: 3, now: t0)
        t.answered("peer", now: t0 + .seconds(500))
        t.answered("peer", now: t0 + .seconds(1000))
        #expect(!t.isExpired("peer", now: t0 + .seconds(1599)) && t.slot(of: "peer") == 3)
    }

    @Test func aFullTableReplacesExpiredThenLostThenTheOldestSilentButNeverOneThatAnswers() {
        var t = table(capacity: 3)
        t.insert("a", slot: 0, now: t0)
        t.insert("b", slot: 1, now: t0 + .seconds(1))
        t.insert("c", slot: 2, now: t0 + .seconds(2))
        #expect(t.isFull && t.victim(now: t0 + .seconds(3)) == "a", "the oldest that never answered")
        t.lost("b")
        #expect(t.victim(now: t0 + .seconds(3)) == "b", "one that said goodbye before a silent one")
        #expect(t.victim(now: t0 + .seconds(601)) == "a", "an expired one first")
        t.answered("a", now: t0 + .seconds(3)); t.answered("b", now: t0 + .seconds(3)); t.answered("c", now: t0 + .seconds(3))
        #expect(t.victim(now: t0 + .seconds(4)) == nil, "all answer: a new instance is not kept")
        t.insert("d", slot: 3, now: t0 + .seconds(4))
        #expect(t.count == 3 && t.slot(of: "d") == nil, "never more than the capacity")
    }

    @Test func aFloodOfNamesNeverGrowsTheTable() {
        var t = table(capacity: 256)
        for i in 0..<2_000 {
            let now = t0 + .milliseconds(i)
            if let v = t.victim(now: now) { t.remove(v) }
            t.insert("fake \(i)", slot: i, now: now)
        }
        #expect(t.count == 256 && t.slot(of: "fake 1999") != nil && t.slot(of: "fake 0") == nil)
    }
}
