/// Lazy push (PROTOCOL.md §13.7; Plumtree, Leitão, Pereira and Rodrigues, "Epidemic Broadcast
/// Trees", SRDS 2007): which links carry the bodies of newly applied records and which only
/// their IDs, and which announced IDs to ask for when their bodies do not come. One per node,
/// over all its links (named by the shell's link serial); a pure value with the clock passed in.
///
/// - A new link is eager: records applied here are pushed on it in full.
/// - A body that arrives and was already held came over a redundant link: that link turns lazy
///   on our side and the peer is told `prune` (it turns lazy on its side too), so the links that
///   stay eager form a spanning tree and each body reaches each node about once. A node never
///   prunes its last eager link (two nodes keep their one link eager whatever happens), and
///   prunes a link at most once until it grafts it again (a burst of duplicates in flight
///   before the peer read our `prune` costs one message).
/// - Lazy links get `ihave` with the IDs instead. An ID announced that we do not hold starts a
///   timer (`graftTimeout`); if its body has not come by then (a tree link failed), we send
///   `graft` to the first link that announced it, which turns that link eager on both sides,
///   and the next announcer is tried after another `graftTimeout`.
/// - A `graft` received turns the link eager on our side (the session sends the bodies).
/// - A link that ends is forgotten; what it announced is asked of the others that did, and the
///   periodic reconciliation round finds whatever is left.
///
/// Bounded: at most `maxMissing` IDs wait for their bodies (more are left to reconciliation),
/// each with at most `maxAnnouncers` links to ask, and `recentBound` IDs are remembered as held
/// (so most `ihave`s need no look-up in the replica).
public struct PushTree: Sendable {
    public typealias Link = UInt64

    public struct Settings: Sendable, Equatable {
        /// How long an announced ID may wait for its body before it is grafted.
        public var graftTimeout: Duration
        public var maxMissing: Int
        public var maxAnnouncers: Int
        public var recentBound: Int

        public init(graftTimeout: Duration = .seconds(1), maxMissing: Int = 4096, maxAnnouncers: Int = 4, recentBound: Int = 8192) {
            self.graftTimeout = graftTimeout
            self.maxMissing = max(1, maxMissing)
            self.maxAnnouncers = max(1, maxAnnouncers)
            self.recentBound = max(2, recentBound)
        }
    }

    /// An ID announced and not held: when to graft, and whom to ask (first first).
    struct Missing: Sendable, Equatable {
        var deadline: ContinuousClock.Instant
        var announcers: [Link]
    }

    public let settings: Settings
    private var links: Set<Link> = []
    private var lazy: Set<Link> = []
    /// Links we sent `prune` and have not grafted since.
    private var pruned: Set<Link> = []
    private var missing: [[UInt8]: Missing] = [:]
    private var recent: Set<[UInt8]> = []
    private var recentOrder: [[UInt8]] = []

    public init(settings: Settings = Settings()) { self.settings = settings }

    // MARK: State

    /// Whether records applied here go to `link` in full (else as `ihave`).
    public func isEager(_ link: Link) -> Bool { links.contains(link) && !lazy.contains(link) }
    public var eagerLinks: Set<Link> { links.subtracting(lazy) }
    /// IDs waiting for their bodies (for tests and metrics).
    public var missingCount: Int { missing.count }
    public func isMissing(_ id: [UInt8]) -> Bool { missing[id] != nil }
    /// When `due(now:)` has a graft to send next (nil: nothing is missing).
    public var nextDeadline: ContinuousClock.Instant? { missing.values.map(\.deadline).min() }
    /// Whether `id` is known to be held here (recently applied, or found in the replica).
    public func knows(_ id: [UInt8]) -> Bool { recent.contains(id) }

    // MARK: Links

    public mutating func linkUp(_ link: Link) {
        links.insert(link)
        lazy.remove(link)
        pruned.remove(link)
    }

    public mutating func linkDown(_ link: Link) {
        links.remove(link)
        lazy.remove(link)
        pruned.remove(link)
        for (id, var m) in missing where m.announcers.contains(link) {
            m.announcers.removeAll { $0 == link }
            missing[id] = m   // kept until its deadline: another announcer, or reconciliation
        }
    }

    // MARK: Events

    /// Records with these IDs are held here now (applied, or found in the replica): they are
    /// no longer missing and need no look-up when announced.
    public mutating func held(_ ids: [[UInt8]]) {
        for id in ids {
            missing[id] = nil
            guard recent.insert(id).inserted else { continue }
            recentOrder.append(id)
        }
        if recentOrder.count > settings.recentBound {
            let drop = recentOrder.count - settings.recentBound / 2
            for old in recentOrder.prefix(drop) { recent.remove(old) }
            recentOrder.removeFirst(drop)
        }
    }

    /// A body we already held came over `link`: whether to send it `prune` (the link is then
    /// lazy on our side).
    public mutating func duplicate(from link: Link) -> Bool {
        guard links.contains(link), !pruned.contains(link), !lazy.contains(link) else { return false }
        // Never our last eager link: it may be the only way bodies reach us.
        guard eagerLinks.count >= 2 else { return false }
        lazy.insert(link)
        pruned.insert(link)
        return true
    }

    /// The peer on `link` sent `prune`: only IDs go to it from now on.
    public mutating func prunedBy(_ link: Link) {
        guard links.contains(link) else { return }
        lazy.insert(link)
    }

    /// The peer on `link` sent `graft`: bodies go to it again.
    public mutating func graftedBy(_ link: Link) {
        guard links.contains(link) else { return }
        lazy.remove(link)
        pruned.remove(link)
    }

    /// `link` announced these IDs, none of which the replica holds (the caller filtered them):
    /// each waits `graftTimeout` for its body. Returns how many were not kept (the bound).
    @discardableResult
    public mutating func announced(_ ids: [[UInt8]], by link: Link, now: ContinuousClock.Instant) -> Int {
        guard links.contains(link) else { return 0 }
        var dropped = 0
        for id in ids where !recent.contains(id) {
            if var m = missing[id] {
                if !m.announcers.contains(link), m.announcers.count < settings.maxAnnouncers { m.announcers.append(link) }
                missing[id] = m
            } else if missing.count < settings.maxMissing {
                missing[id] = Missing(deadline: now + settings.graftTimeout, announcers: [link])
            } else {
                dropped += 1
            }
        }
        return dropped
    }

    /// The grafts due at `now`: per link, the IDs to ask it for (ascending). Each such link
    /// turns eager on our side; each ID waits another `graftTimeout` before its next announcer
    /// is asked, and is forgotten once none is left.
    public mutating func due(now: ContinuousClock.Instant) -> [(link: Link, ids: [[UInt8]])] {
        var asks: [Link: [[UInt8]]] = [:]
        for (id, var m) in missing where m.deadline <= now {
            guard !m.announcers.isEmpty else {
                missing[id] = nil
                continue
            }
            let link = m.announcers.removeFirst()
            asks[link, default: []].append(id)
            m.deadline = now + settings.graftTimeout
            missing[id] = m
        }
        for link in asks.keys { graftedBy(link) }
        return asks.sorted { $0.key < $1.key }.map { (link: $0.key, ids: $0.value.sorted { $0.lexicographicallyPrecedes($1) }) }
    }
}
