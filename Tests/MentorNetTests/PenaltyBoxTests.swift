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
