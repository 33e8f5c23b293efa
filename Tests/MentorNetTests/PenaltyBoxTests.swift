import MentorNet
import Testing

@Suite struct PenaltyBoxTests {
    var settings: PenaltyBox.Settings {
        var s = PenaltyBox.Settings()
        s.base = .seconds(2)
        s.maximum = .seconds(60)
        s.forgiveAfter = .seconds(100)
        s.capacity = 3
        return s
    }

    @Test func refusalsDoubleUpToTheMaximumAndEnd() {
        var box = PenaltyBox(settings: settings)
        let t0 = ContinuousClock.now
        #expect(box.refusal(of: "10.0.0.1", now: t0) == nil)
        var intervals: [Duration] = []
        var now = t0
        for _ in 0..<7 {
            let interval = box.punish("10.0.0.1", reason: "forged", now: now)
            intervals.append(interval)
            #expect(box.refusal(of: "10.0.0.1", now: now + interval - .milliseconds(1))?.reason == "forged")
            #expect(box.refusal(of: "10.0.0.1", now: now + interval) == nil, "the refusal ends after its interval")
            now += interval + .seconds(1)   // comes back, offends again
        }
        #expect(intervals == [2, 4, 8, 16, 32, 60, 60].map { Duration.seconds($0) })
        #expect(box.refusal(of: "10.0.0.2", now: t0) == nil, "another host is not refused")
    }

    @Test func aHostThatBehavesLongEnoughStartsAgainFromTheBase() {
        var box = PenaltyBox(settings: settings)
        let t0 = ContinuousClock.now
        box.punish("h", reason: "a", now: t0)
        let second = box.punish("h", reason: "b", now: t0 + .seconds(3))
        #expect(second == .seconds(4))
        let later = t0 + .seconds(3) + second + .seconds(100)
        #expect(box.punish("h", reason: "c", now: later) == .seconds(2))
        #expect(box.refusal(of: "h", now: later)?.offences == 1)
    }

    @Test func capacityForgetsTheRefusalThatEndsFirstAndPruneForgetsOldHosts() {
        var box = PenaltyBox(settings: settings)
        let t0 = ContinuousClock.now
        box.punish("a", reason: "x", now: t0)
        box.punish("b", reason: "x", now: t0 + .seconds(1))
        box.punish("c", reason: "x", now: t0 + .seconds(1))
        box.punish("d", reason: "x", now: t0 + .seconds(1))
        #expect(box.count == 3)
        #expect(box.refusal(of: "a", now: t0 + .seconds(1)) == nil, "a's refusal ended first, so a was forgotten")
        #expect(box.refusal(of: "d", now: t0 + .seconds(1)) != nil)
        box.prune(now: t0 + .seconds(200))
        #expect(box.count == 0)
    }
}

@Suite struct LogThrottleTests {
    @Test func aRecurringEventIsLoggedAtASlowingRateWithTheCountLeftOut() {
        var throttle = LogThrottle()
        throttle.maximum = .seconds(8)
        let t0 = ContinuousClock.now
        var logged: [(Int, Int)] = []   // (millisecond, suppressed)
        for ms in stride(from: 0, to: 30_000, by: 100) {   // ten a second for 30 s
            let (log, suppressed) = throttle.admit("limit 10.0.0.9", now: t0 + .milliseconds(ms))
            if log { logged.append((ms, suppressed)) }
        }
        #expect(logged.map(\.0) == [0, 1000, 3000, 7000, 15000, 23000], "\(logged)")
        #expect(logged.map(\.1) == [0, 9, 19, 39, 79, 79], "\(logged)")
        #expect(throttle.admit("another key", now: t0 + .milliseconds(29_950)).log, "keys are independent")
    }

    @Test func aKeyQuietLongEnoughStartsOverAndCapacityBoundsTheKeys() {
        var throttle = LogThrottle()
        throttle.forgetAfter = .seconds(10)
        throttle.capacity = 2
        let t0 = ContinuousClock.now
        #expect(throttle.admit("a", now: t0).log)
        #expect(!throttle.admit("a", now: t0 + .milliseconds(500)).log)
        #expect(throttle.admit("a", now: t0 + .seconds(20)) == (true, 0), "forgotten after 10 s of quiet")
        _ = throttle.admit("b", now: t0 + .seconds(21))
        _ = throttle.admit("c", now: t0 + .seconds(22))   // drops "a", the oldest
        #expect(throttle.admit("a", now: t0 + .seconds(22)).log, "a was dropped, so it starts over")
    }
}
