/// Remembers peers that misbehaved and refuses them for a growing interval.
///
/// A host (an IP address: a peer can make new node keys at will, not new addresses) that sends
/// something forged, malformed or over a limit is refused for `base` after its first offence, then
/// twice as long after each further one, up to `maximum`. A host that behaves for `forgiveAfter`
/// after its refusal ended starts again from `base`. At most `capacity` hosts are remembered; when
/// full, the one whose refusal ends first is forgotten (so a flood of addresses cannot grow it).
///
/// A value type with the clock passed in, so the rules are tested without waiting.
public struct PenaltyBox: Sendable {
    public struct Settings: Sendable, Equatable {
        public var base: Duration = .seconds(2)
        public var maximum: Duration = .seconds(600)
        public var forgiveAfter: Duration = .seconds(3600)
        public var capacity = 4096
        public init() {}
    }

    public struct Entry: Sendable, Equatable {
        /// Offences so far (since the last forgiveness).
        public var offences: Int
        /// Refused until then.
        public var until: ContinuousClock.Instant
        /// Why, for the log.
        public var reason: String
    }

    public let settings: Settings
    private var entries: [String: Entry] = [:]

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Records an offence by `host` and returns how long it is refused from `now`.
    @discardableResult
    public mutating func punish(_ host: String, reason: String, now: ContinuousClock.Instant) -> Duration {
        var offences = 1
        if let old = entries[host], now < old.until + settings.forgiveAfter {
            offences = old.offences + 1
        }
        var interval = settings.base
        for _ in 1..<min(offences, 40) where interval < settings.maximum { interval *= 2 }
        interval = min(interval, settings.maximum)
        if entries[host] == nil, entries.count >= settings.capacity,
           let soonest = entries.min(by: { $0.value.until < $1.value.until }) {
            entries[soonest.key] = nil
        }
        entries[host] = Entry(offences: offences, until: now + interval, reason: reason)
        return interval
    }

    /// The refusal `host` is under at `now`, if any.
    public func refusal(of host: String, now: ContinuousClock.Instant) -> Entry? {
        guard let entry = entries[host], now < entry.until else { return nil }
        return entry
    }

    /// Forgets hosts whose refusal ended more than `forgiveAfter` ago.
    public mutating func prune(now: ContinuousClock.Instant) {
        entries = entries.filter { now < $0.value.until + settings.forgiveAfter }
    }

    /// Hosts remembered (refused now or still counting offences).
    public var count: Int { entries.count }
}
