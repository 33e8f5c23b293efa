/// Keeps a recurring event from flooding the log: the first occurrence of a key is logged, then
/// at a slowing rate — after 1 s, 2 s, 4 s … up to `maximum` — each with the number of
/// occurrences left out meanwhile. A key quiet for `forgetAfter` starts again from the first.
/// At most `capacity` keys are remembered (the oldest is dropped), so a flood of keys cannot
/// grow it. A value type with the clock passed in.
public struct LogThrottle: Sendable {
    public var first: Duration = .seconds(1)
    public var maximum: Duration = .seconds(600)
    public var forgetAfter: Duration = .seconds(3600)
    public var capacity = 1024

    private struct Entry {
        var next: ContinuousClock.Instant
        var interval: Duration
        var suppressed: Int
        var last: ContinuousClock.Instant
    }
    private var entries: [String: Entry] = [:]

    public init() {}

    /// Whether to log this occurrence of `key` now; when true, `suppressed` counts the ones
    /// left out since the last line.
    public mutating func admit(_ key: String, now: ContinuousClock.Instant) -> (log: Bool, suppressed: Int) {
        if var e = entries[key], now - e.last < forgetAfter {
            e.last = now
            guard now >= e.next else {
                e.suppressed += 1
                entries[key] = e
                return (false, 0)
            }
            let suppressed = e.suppressed
            e.interval = min(e.interval * 2, maximum)
            e.next = now + e.interval
            e.suppressed = 0
            entries[key] = e
            return (true, suppressed)
        }
        if entries[key] == nil, entries.count >= capacity, let oldest = entries.min(by: { $0.value.last < $1.value.last }) {
            entries[oldest.key] = nil
        }
        entries[key] = Entry(next: now + first, interval: first, suppressed: 0, last: now)
        return (true, 0)
    }
}
