/// `RecurringFailure` per key, for events that recur per address (connection refusals): the
/// first occurrence of a key is logged, then at a slowing rate — after `first`, then doubling up
/// to `maximum` — each with the number left out meanwhile. A key quiet for `forgetAfter` starts
/// again from the first. At most `capacity` keys are remembered (the least recently seen is
/// dropped), so a flood of keys cannot grow it. A value type with the clock passed in.
public struct LogThrottle: Sendable {
    public var first: Duration = .seconds(1)
    public var maximum: Duration = .seconds(600)
    public var forgetAfter: Duration = .seconds(3600)
    public var capacity = 1024

    private var entries: [String: (failure: RecurringFailure, last: ContinuousClock.Instant)] = [:]

    public init() {}

    /// Whether to log this occurrence of `key` now; when true, `suppressed` counts the ones
    /// left out since the last line.
    public mutating func admit(_ key: String, now: ContinuousClock.Instant) -> (log: Bool, suppressed: Int) {
        var entry: (failure: RecurringFailure, last: ContinuousClock.Instant)
        if let known = entries[key], now - known.last < forgetAfter {
            entry = known
        } else {
            if entries[key] == nil, entries.count >= capacity, let oldest = entries.min(by: { $0.value.last < $1.value.last }) {
                entries[oldest.key] = nil
            }
            entry = (RecurringFailure(firstRepeat: first, maxRepeat: maximum), now)
        }
        let missed = entry.failure.failed(now: now)
        entry.last = now
        entries[key] = entry
        return (missed != nil, missed ?? 0)
    }
}
