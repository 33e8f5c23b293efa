/// When a link's `event.sync` (a session's totals, for API subscribers) goes out: at most once
/// per `interval` per peer, so a backlog of thousands of batches costs a few events a second,
/// not one per batch — except that a change of "caught up" goes out at once (a client waits for
/// it). Unchanged totals are not announced again. A pure rule with the clock passed in; the
/// shell keeps what it last announced and owns the timer.
enum SyncEventThrottle {
    typealias Totals = (received: Int, sent: Int, caughtUp: Bool)

    enum Decision: Equatable {
        /// Nothing new since the last event.
        case unchanged
        /// Too soon after the last one: look again at this instant.
        case later(ContinuousClock.Instant)
        /// Announce now.
        case now
    }

    static func decide(_ totals: Totals, announced: Totals, announcedAt: ContinuousClock.Instant?, interval: Duration,
                       now: ContinuousClock.Instant) -> Decision {
        guard totals != announced else { return .unchanged }
        if let last = announcedAt, now - last < interval, totals.caughtUp == announced.caughtUp { return .later(last + interval) }
        return .now
    }
}
