import Testing
@testable import MentorNode

/// Pacing acks by records per second (PROTOCOL.md §13.4), on an injected clock.
@Suite struct AckPacerTests {
    let t0 = ContinuousClock.now

    @Test func aBurstWithinTheBucketIsAckedAtOnce() {
        var pacer = AckPacer(recordsPerSecond: 100, burst: 100, now: t0)
        #expect(pacer.take(60, heldAcks: 0, now: t0) == nil)
        #expect(pacer.take(40, heldAcks: 0, now: t0) == nil, "exactly the burst: no debt")
        #expect(pacer.tokens == 0)
    }

    @Test func aDebtHoldsTheAckUntilItIsPaidAtTheRate() {
        var pacer = AckPacer(recordsPerSecond: 100, burst: 100, now: t0)
        #expect(pacer.take(150, heldAcks: 0, now: t0) == .milliseconds(500), "50 records over at 100/s")
        // Half of it later: 25 records' worth refilled, 25 still owed.
        #expect(pacer.take(0, heldAcks: 1, now: t0 + .milliseconds(250)) == .milliseconds(250))
        #expect(pacer.take(0, heldAcks: 1, now: t0 + .milliseconds(500)) == .zero, "paid: held acks may go")
    }

    @Test func heldAcksKeepLaterOnesWaitingSoAcksStayInOrder() {
        var pacer = AckPacer(recordsPerSecond: 100, burst: 100, now: t0)
        _ = pacer.take(150, heldAcks: 0, now: t0)
        // Well after the debt is paid, a small batch still waits while an earlier ack is held.
        #expect(pacer.take(1, heldAcks: 1, now: t0 + .seconds(2)) == .zero)
        #expect(pacer.take(1, heldAcks: 0, now: t0 + .seconds(2)) == nil)
    }

    @Test func theBucketRefillsToTheBurstAndNoFurther() {
        var pacer = AckPacer(recordsPerSecond: 100, burst: 100, now: t0)
        _ = pacer.take(100, heldAcks: 0, now: t0)
        _ = pacer.take(0, heldAcks: 0, now: t0 + .seconds(60))
        #expect(pacer.tokens == 100, "a quiet minute does not bank more than one burst")
        #expect(pacer.take(101, heldAcks: 0, now: t0 + .seconds(60)) == .milliseconds(10))
    }

    @Test func aSustainedSenderIsSlowedToTheRate() {
        // 256-record batches, each sent the moment the last ack came: 20 s of it at 1,000/s
        // (burst 1,000) lets ~21,000 records through, not more.
        var pacer = AckPacer(recordsPerSecond: 1_000, burst: 1_000, now: t0)
        var now = t0, records = 0
        while now < t0 + .seconds(20) {
            records += 256
            now += pacer.take(256, heldAcks: 0, now: now) ?? .zero
        }
        #expect(records >= 20_000 && records <= 21_256)
    }

    @Test func aZeroRateIsTakenAsOneRecordPerSecond() {
        var pacer = AckPacer(recordsPerSecond: 0, burst: 0, now: t0)
        #expect(pacer.take(2, heldAcks: 0, now: t0) == .seconds(2))
    }
}
