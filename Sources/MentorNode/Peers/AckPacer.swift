/// Paces the records one peer makes us apply (PROTOCOL.md §13.4, "records applied per second"):
/// a token bucket of `burst` records refilled at `recordsPerSecond`, from which every applied
/// batch takes its records. The bucket may go into debt; then the batch's ack is held back until
/// the debt is paid, and acks already held keep later ones waiting too, so acks stay in order.
/// Because held batches still count against the sender's window, a peer that keeps to the
/// protocol slows down to the rate, and one that sends on regardless breaks the window.
///
/// A value type with the clock passed in (like `SyncSession`'s `now:`): the shell keeps one per
/// link, holds the acks in the session and owns the timer that releases them.
struct AckPacer: Sendable {
    let recordsPerSecond: Double
    let burst: Double
    /// Records the peer may still send without waiting; negative is a debt.
    private(set) var tokens: Double
    private var refilledAt: ContinuousClock.Instant

    init(recordsPerSecond: Int, burst: Int, now: ContinuousClock.Instant) {
        self.recordsPerSecond = Double(max(1, recordsPerSecond))
        self.burst = Double(max(1, burst))
        self.tokens = Double(burst)
        self.refilledAt = now
    }

    /// Takes `records` at `now` (0 to look at the debt only). Returns how long acks must wait —
    /// nil when the ack may go at once (no debt and no acks held, `heldAcks` being the session's),
    /// `.zero` when held acks may go now.
    mutating func take(_ records: Int, heldAcks: Int, now: ContinuousClock.Instant) -> Duration? {
        let elapsed = max(0, (now - refilledAt).inSeconds)
        tokens = min(burst, tokens + elapsed * recordsPerSecond) - Double(records)
        refilledAt = now
        guard tokens < 0 || heldAcks > 0 else { return nil }
        return .nanoseconds(Int64(max(0, -tokens) / recordsPerSecond * 1e9))
    }
}

extension Duration {
    /// In seconds, as a `Double` (for rates).
    var inSeconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
