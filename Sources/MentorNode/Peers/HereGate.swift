import MentorCore

/// How often a link's peer may make us update "nearby now" (PROTOCOL.md §13.4: `here`, 8 at
/// once, refilled 8 per 30 s). One over the rate is no offence: the newest is kept (one per
/// link, replacing an older one) and taken when the bucket has a token again, so a flood costs
/// one decode and one nearby update per refill, however fast it comes. Other messages pass
/// without touching the bucket.
///
/// A value type with the clock passed in; the shell owns the one timer per link that `admit`
/// asks for, and feeds what `refilled` gives back to the driver.
struct HereGate: Sendable {
    enum Admission: Sendable, Equatable {
        /// Hand the message to the driver now.
        case pass
        /// Kept until a token comes back; `armTimer`: no timer is waiting yet, start one of
        /// `refill` (at most one per link).
        case hold(armTimer: Bool)
    }

    enum Refill: Sendable, Equatable {
        /// The `here` kept: hand it to the driver now.
        case take([UInt8])
        /// Still no token: start the timer again.
        case again
        /// Nothing is kept.
        case nothing
    }

    /// When a kept `here` is looked at again: one token's refill.
    let refill: Duration
    private var rate: MessageRate
    /// The newest `here` over the rate, waiting for a token.
    private(set) var held: [UInt8]?

    init(burst: Int, period: Duration) {
        rate = MessageRate(capacity: burst, per: period)
        refill = period / max(1, burst)
    }

    /// A message from the peer at `now`.
    mutating func admit(_ bytes: [UInt8], now: ContinuousClock.Instant) -> Admission {
        guard bytes.first == SyncMessage.hereTag, !rate.take(now: now) else { return .pass }
        let arm = held == nil
        held = bytes
        return .hold(armTimer: arm)
    }

    /// The timer `admit` asked for fired at `now`.
    mutating func refilled(now: ContinuousClock.Instant) -> Refill {
        guard let kept = held else { return .nothing }
        guard rate.take(now: now) else { return .again }
        held = nil
        return .take(kept)
    }
}
