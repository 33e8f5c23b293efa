/// A token bucket for messages a peer may send only so often: `capacity` at once, refilled at
/// `capacity` per `period`. A value type with the clock passed in, so it is tested without waiting.
public struct MessageRate: Sendable, Equatable {
    public let capacity: Int
    public let period: Duration
    private var tokens: Double
    private var refilledAt: ContinuousClock.Instant?

    public init(capacity: Int, per period: Duration) {
        self.capacity = max(1, capacity)
        self.period = period > .zero ? period : .seconds(1)
        self.tokens = Double(self.capacity)
    }

    /// Takes one token at `now`; false when the bucket is empty (the message is over the rate).
    public mutating func take(now: ContinuousClock.Instant) -> Bool {
        if let last = refilledAt, now > last {
            let (s, a) = (now - last).components
            let elapsed = Double(s) + Double(a) / 1e18
            let (ps, pa) = period.components
            tokens = min(Double(capacity), tokens + elapsed / (Double(ps) + Double(pa) / 1e18) * Double(capacity))
        }
        refilledAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
