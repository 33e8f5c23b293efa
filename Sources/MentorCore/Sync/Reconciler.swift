/// The two salted hashes of a session (sync protocol v2): what a node's hash and a record ID
/// become on the wire. MentorCore has no cryptography, so the shell builds them from
/// `ReconHash` (MentorCrypto) with the session's salt and passes them in.
public struct ReconHashing: Sendable {
    /// A node's 32-byte hash → its 8-byte fingerprint.
    public let fingerprint: @Sendable ([UInt8]) -> UInt64
    /// A record ID → its 8-byte short ID.
    public let shortID: @Sendable ([UInt8]) -> UInt64

    public init(fingerprint: @escaping @Sendable ([UInt8]) -> UInt64, shortID: @escaping @Sendable ([UInt8]) -> UInt64) {
        self.fingerprint = fingerprint
        self.shortID = shortID
    }
}

/// Where a paged read of a subtree's records stopped, as an opaque token the shell hands out
/// with a page and maps back to its store's own cursor (the session only carries it back).
public struct FetchCursor: Hashable, Sendable {
    public let token: UInt64
    public init(token: UInt64) { self.token = token }
}

/// What answering one `recon` message asks for: the reply's items, and the records to send
/// (by ID, and whole subtrees the peer holds nothing of).
public struct ReconStep: Equatable, Sendable {
    public var reply: [ReconItem] = []
    /// Record IDs of ours the peer lacks (from `ids` and `need` items).
    public var sendIDs: [[UInt8]] = []
    /// Nodes under which the peer holds nothing we hold: send every record there.
    public var sendSubtrees: [ReconNodeRef] = []
    public init() {}
}

/// A node of the tree by position.
public struct ReconNodeRef: Hashable, Sendable {
    public let depth: Int
    public let prefix: UInt16
    public init(depth: Int, prefix: UInt16) { self.depth = depth; self.prefix = prefix }
}

/// The rules of a reconciliation round (PROTOCOL.md §13.3), over any `ReconView`: pure, no
/// state between messages (everything it needs is in the item and the view).
///
/// At a node whose fingerprints differ, a side lists its IDs when it holds few there (≤
/// `listBelow`) or the node is a leaf, and splits it into its children otherwise; so a round
/// descends only where the sets differ and costs O(d · log n) node reads.
public struct Reconciler: Sendable {
    public let hashing: ReconHashing
    /// At most this many IDs under a node are listed instead of split.
    public static let listBelow = 16
    /// An `ids` item at a node under which we hold more than this (and which is no leaf) is
    /// answered with a split instead of our list: an honest peer lists only where it holds few,
    /// and this keeps a hostile one from making us hash every ID we hold per item.
    public static let maxListed = 256
    /// A `need` at a non-leaf node under which we hold more than this is ignored: we never
    /// listed such a node, so the peer cannot have short IDs of it from us.
    public static let maxNeedScan = 4096

    public init(hashing: ReconHashing) { self.hashing = hashing }

    /// The initiator's first message of a round: the root's fingerprint, or an empty list.
    public func opening(_ view: some ReconView) throws -> [ReconItem] {
        guard let root = try view.node(depth: 0, prefix: 0) else { return [ReconItem(depth: 0, prefix: 0, .ids([]))] }
        return [ReconItem(depth: 0, prefix: 0, .fingerprint(count: root.count, fingerprint: hashing.fingerprint(root.hash)))]
    }

    /// Answers the items of one received `recon` message.
    public func respond(to items: [ReconItem], in view: some ReconView) throws -> ReconStep {
        var step = ReconStep()
        for item in items {
            let depth = Int(item.depth), prefix = item.prefix
            switch item.kind {
            case .fingerprint(let count, let fp):
                guard let mine = try view.node(depth: depth, prefix: prefix) else {
                    step.reply.append(ReconItem(depth: item.depth, prefix: prefix, .ids([])))
                    continue
                }
                if mine.count == count, hashing.fingerprint(mine.hash) == fp { continue }
                step.reply.append(try mismatch(depth: depth, prefix: prefix, mine: mine, view))
            case .split(let theirs):
                let mine = try view.children(depth: depth, prefix: prefix)
                var t = 0, m = 0
                while t < theirs.count || m < mine.count {
                    let tn = t < theirs.count ? Int(theirs[t].nibble) : 16, mn = m < mine.count ? Int(mine[m].nibble) : 16
                    let child = ReconTree.child(depth: depth, prefix: prefix, nibble: UInt8(min(tn, mn)))
                    if tn < mn {
                        step.reply.append(ReconItem(depth: item.depth + 1, prefix: child, .ids([])))
                        t += 1
                    } else if mn < tn {
                        step.sendSubtrees.append(ReconNodeRef(depth: depth + 1, prefix: child))
                        m += 1
                    } else {
                        let node = mine[m].node
                        if node.count != theirs[t].count || hashing.fingerprint(node.hash) != theirs[t].fingerprint {
                            step.reply.append(try mismatch(depth: depth + 1, prefix: child, mine: node, view))
                        }
                        t += 1; m += 1
                    }
                }
            case .ids(let theirs):
                guard let mine = try view.node(depth: depth, prefix: prefix) else {
                    if !theirs.isEmpty { step.reply.append(ReconItem(depth: item.depth, prefix: prefix, .need(theirs))) }
                    continue
                }
                if theirs.isEmpty {
                    step.sendSubtrees.append(ReconNodeRef(depth: depth, prefix: prefix))
                    continue
                }
                if depth < ReconTree.leafDepth, Int(mine.count) > Self.maxListed {
                    step.reply.append(try split(depth: depth, prefix: prefix, view))
                    continue
                }
                let listed = Set(theirs)
                var held: Set<UInt64> = []
                for id in try view.ids(depth: depth, prefix: prefix) {
                    let s = hashing.shortID(id)
                    held.insert(s)
                    if !listed.contains(s) { step.sendIDs.append(id) }
                }
                let lacking = theirs.filter { !held.contains($0) }
                if !lacking.isEmpty { step.reply.append(ReconItem(depth: item.depth, prefix: prefix, .need(lacking))) }
            case .need(let wanted):
                guard let mine = try view.node(depth: depth, prefix: prefix),
                      depth == ReconTree.leafDepth || Int(mine.count) <= Self.maxNeedScan else { continue }
                let set = Set(wanted)
                for id in try view.ids(depth: depth, prefix: prefix) where set.contains(hashing.shortID(id)) {
                    step.sendIDs.append(id)
                }
            }
        }
        return step
    }

    /// My answer at a node whose fingerprint differs from the peer's.
    private func mismatch(depth: Int, prefix: UInt16, mine: ReconNode, _ view: some ReconView) throws -> ReconItem {
        if depth == ReconTree.leafDepth || Int(mine.count) <= Self.listBelow {
            let ids = try view.ids(depth: depth, prefix: prefix).map(hashing.shortID).sorted()
            return ReconItem(depth: UInt8(depth), prefix: prefix, .ids(Self.unique(ids)))
        }
        return try split(depth: depth, prefix: prefix, view)
    }

    private func split(depth: Int, prefix: UInt16, _ view: some ReconView) throws -> ReconItem {
        let children = try view.children(depth: depth, prefix: prefix).map {
            ReconItem.Child(nibble: $0.nibble, count: $0.node.count, fingerprint: hashing.fingerprint($0.node.hash))
        }
        return ReconItem(depth: UInt8(depth), prefix: prefix, .split(children))
    }

    /// Strictly ascending (two IDs with one short ID, a 2^-64 chance, are listed once: the
    /// next session's salt tells them apart).
    private static func unique(_ sorted: [UInt64]) -> [UInt64] {
        var out: [UInt64] = []
        out.reserveCapacity(sorted.count)
        for s in sorted where out.last != s { out.append(s) }
        return out
    }
}
