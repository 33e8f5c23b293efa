import Testing
@testable import MentorNode

/// `event.sync` at most every interval per peer, at once when "caught up" changes.
@Suite struct SyncEventThrottleTests {
    let t0 = ContinuousClock.now
    let interval = Duration.milliseconds(250)

    private func decide(_ totals: SyncEventThrottle.Totals, _ announced: SyncEventThrottle.Totals,
                        at last: ContinuousClock.Instant?, now: ContinuousClock.Instant) -> SyncEventThrottle.Decision {
        SyncEventThrottle.decide(totals, announced: announced, announcedAt: last, interval: interval, now: now)
    }

    @Test func theFirstEventGoesAtOnceAndUnchangedTotalsNever() {
        #expect(decide((1, 0, false), (0, 0, false), at: nil, now: t0) == .now)
        #expect(decide((1, 0, false), (1, 0, false), at: t0, now: t0 + .seconds(10)) == .unchanged)
    }

    @Test func progressWithinTheIntervalWaitsForItsEnd() {
        #expect(decide((300, 0, false), (100, 0, false), at: t0, now: t0 + .milliseconds(100)) == .later(t0 + interval))
        #expect(decide((300, 0, false), (100, 0, false), at: t0, now: t0 + interval) == .now)
        #expect(decide((100, 7, false), (100, 0, false), at: t0, now: t0 + .milliseconds(1)) == .later(t0 + interval),
                "records sent count too")
    }

    @Test func catchingUpOrFallingBehindGoesAtOnce() {
        #expect(decide((300, 0, true), (100, 0, false), at: t0, now: t0 + .milliseconds(1)) == .now)
        #expect(decide((300, 0, false), (300, 0, true), at: t0, now: t0 + .milliseconds(1)) == .now)
    }
}
