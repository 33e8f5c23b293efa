/// Decides when a failure that keeps happening is worth a log line: the first of a streak at
/// once, then again after `firstRepeat` and after intervals that double up to `maxRepeat`, each
/// time with how many failures went unreported since; `recovered()` ends the streak. So an
/// interface that stays down or a peer that keeps refusing is reported once and then at a
/// slowing rate — never one line per attempt — and an operator still sees that it goes on.
///
/// A value type with the clock passed in: the caller keeps it where its other state lives.
///
/// ```swift
/// if let missed = unreachable.failed(now: .now) {
///     logger.info("peer unreachable", ["peer.address": "\(address)", "unreported": "\(missed)"])
/// }
/// ```
public struct RecurringFailure: Sendable {
    public var firstRepeat: Duration
    public var maxRepeat: Duration
    /// Failures in the current streak (0 when there is none).
    public private(set) var streak = 0
    private var unreported = 0
    private var nextReport: ContinuousClock.Instant?
    private var interval: Duration

    public init(firstRepeat: Duration = .seconds(60), maxRepeat: Duration = .seconds(3600)) {
        self.firstRepeat = firstRepeat
        self.maxRepeat = maxRepeat
        interval = firstRepeat
    }

    /// Counts one failure. Returns nil when it should not be logged, else how many failures
    /// since the last report were not logged (0 for the first of a streak).
    public mutating func failed(now: ContinuousClock.Instant) -> Int? {
        streak += 1
        if let next = nextReport, now < next {
            unreported += 1
            return nil
        }
        if nextReport != nil { interval = min(interval * 2, maxRepeat) }
        nextReport = now + interval
        defer { unreported = 0 }
        return unreported
    }

    /// Ends the streak; returns how many failures it had (0: there was none), so the caller
    /// can log the recovery of a reported failure.
    @discardableResult
    public mutating func recovered() -> Int {
        defer {
            streak = 0
            unreported = 0
            nextReport = nil
            interval = firstRepeat
        }
        return streak
    }
}
