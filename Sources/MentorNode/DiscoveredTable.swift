/// The mDNS instances a node has found and dials, bounded in size and in time: an instance that
/// has not answered (no link established to it) for `forgetAfter` since it was found or last
/// answered is forgotten — it is no longer dialled and its entry goes — and at most `capacity`
/// are kept. When full, a new instance takes the place of an expired one, else of one that said
/// goodbye, else of the one found longest ago that never answered; if every entry answered, the
/// new instance is not added (logged by the caller). A value type with the clock passed in.
public struct DiscoveredTable: Sendable {
    public struct Settings: Sendable, Equatable {
        public var capacity = 256
        public var forgetAfter: Duration = .seconds(600)
        public init() {}
    }

    struct Entry: Sendable {
        var slot: Int
        var foundAt: ContinuousClock.Instant
        var answeredAt: ContinuousClock.Instant?
        var lost = false
    }

    public let settings: Settings
    private var entries: [String: Entry] = [:]

    public init(settings: Settings = Settings()) { self.settings = settings }

    public var count: Int { entries.count }
    public var names: [String] { entries.keys.sorted() }

    /// The caller's slot (index into its list of dialled peers) for `name`, if it is kept.
    public func slot(of name: String) -> Int? { entries[name]?.slot }

    /// Whether `name` has been silent for `forgetAfter` (since found, or since it last answered).
    public func isExpired(_ name: String, now: ContinuousClock.Instant) -> Bool {
        guard let e = entries[name] else { return false }
        return now - (e.answeredAt ?? e.foundAt) >= settings.forgetAfter
    }

    /// Every expired name, in name order.
    public func expired(now: ContinuousClock.Instant) -> [String] {
        entries.keys.filter { isExpired($0, now: now) }.sorted()
    }

    /// Which entry a new instance would replace when the table is full (nil: there is room, or
    /// every entry answered and none expired — then the new instance is not kept).
    public func victim(now: ContinuousClock.Instant) -> String? {
        guard entries.count >= settings.capacity else { return nil }
        if let e = expired(now: now).first { return e }
        if let l = entries.filter({ $0.value.lost }).min(by: { $0.value.foundAt < $1.value.foundAt })?.key { return l }
        return entries.filter { $0.value.answeredAt == nil }.min(by: { ($0.value.foundAt, $0.key) < ($1.value.foundAt, $1.key) })?.key
    }

    public var isFull: Bool { entries.count >= settings.capacity }

    /// Keeps `name` at `slot` (the caller made room first: `victim`, `remove`).
    public mutating func insert(_ name: String, slot: Int, now: ContinuousClock.Instant) {
        guard entries[name] == nil, entries.count < settings.capacity else { return }
        entries[name] = Entry(slot: slot, foundAt: now)
    }

    /// A link to the instance was established, or ended after working: it answers.
    public mutating func answered(_ name: String, now: ContinuousClock.Instant) {
        entries[name]?.answeredAt = now
        entries[name]?.lost = false
    }

    /// Found again after a goodbye.
    public mutating func refound(_ name: String) { entries[name]?.lost = false }

    /// The instance said goodbye or expired in mDNS.
    public mutating func lost(_ name: String) { entries[name]?.lost = true }

    /// Forgets `name`; returns its slot.
    @discardableResult
    public mutating func remove(_ name: String) -> Int? { entries.removeValue(forKey: name)?.slot }
}
