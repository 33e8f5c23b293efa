import MentorCore

/// The node's lazy-push bookkeeping across its links (PROTOCOL.md §13.7): the `PushTree` (which
/// links carry the bodies of records applied here, which announced IDs wait for theirs), the
/// replica's answers about which IDs it holds, and the counts `status.sync` shows.
///
/// - Records applied here are remembered as held; they go in full on the links that carry
///   bodies (all of them when lazy push is off) and as `ihave` on the others.
/// - An `ihave` counts its IDs; those neither remembered nor in the replica wait for their
///   bodies (`PushTree.announced`), and a graft is due for each after `graftTimeout`.
/// - A due graft asks the replica again first (a body may have come by a way that does not
///   pass `applied`, held back for a gap) and only for open links.
/// - Duplicate bodies are counted, and prune their link when the tree says so (never with lazy
///   push off).
///
/// A value type with the clock passed in; links are named by the shell's serial numbers and the
/// replica is read through the `held` closure the shell passes (it returns the IDs of those
/// given that the replica holds; a failed read holds none, and a graft then asks for what we
/// may hold: a duplicate, no harm). The shell sends what it decides and owns the graft timer.
struct PushLinks: Sendable {
    typealias Link = PushTree.Link
    typealias Held = ([[UInt8]]) -> Set<[UInt8]>

    /// What `status.sync` shows of lazy push besides the bodies received.
    struct Counts: Sendable, Equatable {
        /// Bodies received that were already held.
        var duplicates = 0
        /// Record IDs peers announced in `ihave`.
        var announced = 0
    }

    /// false: every link carries bodies and none is pruned (peers' `ihave` and `graft` are
    /// still answered).
    let lazyPush: Bool
    private(set) var tree: PushTree
    private(set) var counts = Counts()

    init(lazyPush: Bool = true, tree: PushTree.Settings = .init()) {
        self.lazyPush = lazyPush
        self.tree = PushTree(settings: tree)
    }

    // MARK: Links

    /// An established link: it carries bodies until it is pruned.
    mutating func linkUp(_ link: Link) { tree.linkUp(link) }

    /// A link ended: forgotten; what it announced is asked of the others that did.
    mutating func linkDown(_ link: Link) { tree.linkDown(link) }

    /// Whether records applied here go to `link` in full (else as `ihave`).
    func carriesBodies(_ link: Link) -> Bool { !lazyPush || tree.isEager(link) }

    // MARK: Events

    /// Records with these IDs were applied here (written locally or received).
    mutating func applied(_ ids: [[UInt8]]) { tree.held(ids) }

    /// What the peer on `link` said about the push tree. Whether announced IDs wait for their
    /// bodies now (the shell then sets the graft timer).
    mutating func signal(_ signal: PushSignal, from link: Link, now: ContinuousClock.Instant, held: Held) -> Bool {
        switch signal {
        case .pruned:
            tree.prunedBy(link)
            return false
        case .grafted:
            tree.graftedBy(link)
            return false
        case .announced(let ids):
            counts.announced += ids.count
            let unknown = ids.filter { !tree.knows($0) }
            guard !unknown.isEmpty else { return false }
            let found = held(unknown)
            tree.held(Array(found))
            tree.announced(unknown.filter { !found.contains($0) }, by: link, now: now)
            return true
        }
    }

    /// When a graft is due next (nil: no ID waits for its body).
    var nextGraft: ContinuousClock.Instant? { tree.nextDeadline }

    /// The grafts due at `now`: per link that `isOpen` says is still there, the IDs to ask it
    /// for that the replica still lacks (links in ascending order).
    mutating func dueGrafts(now: ContinuousClock.Instant, isOpen: (Link) -> Bool, held: Held) -> [(link: Link, ids: [[UInt8]])] {
        guard let at = tree.nextDeadline, at <= now else { return [] }
        var grafts: [(link: Link, ids: [[UInt8]])] = []
        for ask in tree.due(now: now) where isOpen(ask.link) {
            let found = held(ask.ids)
            tree.held(Array(found))
            let ids = ask.ids.filter { !found.contains($0) }
            if !ids.isEmpty { grafts.append((ask.link, ids)) }
        }
        return grafts
    }

    /// `count` bodies of a batch from `link` were already held: counted. Whether to send the
    /// link `prune` (it is redundant).
    mutating func duplicates(_ count: Int, from link: Link) -> Bool {
        guard count > 0 else { return false }
        counts.duplicates += count
        return lazyPush && tree.duplicate(from: link)
    }
}
