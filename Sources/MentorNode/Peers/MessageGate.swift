import MentorCore

/// How often a link's peer may send one kind of message of which only the newest matters
/// (PROTOCOL.md §13.4: `here`, 8 at once, refilled 8 per 30 s, for "nearby now"; `link`, 4 per
/// 30 s, for the device offers it holds). One over the rate is no offence: the newest is kept
/// (one per link, replacing an older one) and taken when the bucket has a token again, so a
/// flood costs one decode and one update per refill, however fast it comes. Messages of other
/// types pass without touching the bucket.
///
/// A value type with the clock passed in; the shell owns the one timer per link and gate that
/// `admit` asks for, and feeds what `refilled` gives back to the driver.
struct MessageGate: Sendable {
    enum Admission: Sendable, Equatable {
        /// Hand the message to the driver now.
        case pass
        /// Kept until a token comes back; `armTimer`: no timer is waiting yet, start one of
        /// `refill` (at most one per link).
        case hold(armTimer: Bool)
    }

    enum Refill: Sendable, Equatable {
        /// The message kept: hand it to the driver now.
        case take([UInt8])
        /// Still no token: start the timer again.
        case again
        /// Nothing is kept.
        case nothing
    }

    /// The message type rated (its first byte, `SyncMessage.hereTag`, `linkTag`).
    let tag: UInt8
    /// When a kept message is looked at again: one token's refill.
    let refill: Duration
    private var rate: MessageRate
    /// The newest message over the rate, waiting for a token.
    private(set) var held: [UInt8]?

    init(tag: UInt8, burst: Int, period: Duration) {
        self.tag = tag
        rate = MessageRate(capacity: burst, per: period)
        refill = period / max(1, burst)
    }

    /// A message from the peer at `now`.
    mutating func admit(_ bytes: [UInt8], now: ContinuousClock.Instant) -> Admission {
        guard bytes.first == tag, !rate.take(now: now) else { return .pass }
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
