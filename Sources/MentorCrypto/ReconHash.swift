import MentorCore

/// The hashes of the reconciliation tree (`ReconTree` in MentorCore) and of what goes on the
/// wire (PROTOCOL.md §13.3).
public enum ReconHash {
    /// A leaf's hash over its IDs (ascending, 32 bytes each).
    public static func leaf(_ ids: [[UInt8]]) -> [UInt8] {
        var h = BLAKE2b.Hasher()
        h.update(Array("mm-recon-leaf-v2".utf8))
        h.update(u32(ids.count))
        for id in ids { h.update(id) }
        return h.finalize()
    }

    /// An internal node's hash over its non-empty children (by nibble ascending).
    public static func node(count: UInt32, children: [(nibble: UInt8, hash: [UInt8])]) -> [UInt8] {
        var h = BLAKE2b.Hasher()
        h.update(Array("mm-recon-node-v2".utf8))
        h.update(u32(Int(count)))
        for c in children { h.update([c.nibble]); h.update(c.hash) }
        return h.finalize()
    }

    /// The session's salt from the two 16-byte salts of the hellos (order-independent).
    public static func sessionSalt(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        let (lo, hi) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a)
        return BLAKE2b.hash(Array("mm-recon-salt-v2".utf8) + lo + hi)
    }

    /// The 8-byte fingerprint of a node's hash under the session's salt.
    public static func fingerprint(_ nodeHash: [UInt8], salt: [UInt8]) -> UInt64 {
        be64(BLAKE2b.hash(nodeHash, key: salt, outputLength: 16))
    }

    /// The 8-byte short ID of a record ID under the session's salt.
    public static func shortID(_ id: [UInt8], salt: [UInt8]) -> UInt64 {
        be64(BLAKE2b.hash(id, key: salt, outputLength: 16))
    }

    private static func u32(_ v: Int) -> [UInt8] {
        let x = UInt32(truncatingIfNeeded: v)
        return [UInt8(x >> 24), UInt8(x >> 16 & 0xff), UInt8(x >> 8 & 0xff), UInt8(x & 0xff)]
    }

    private static func be64(_ b: [UInt8]) -> UInt64 {
        var v: UInt64 = 0
        for x in b.prefix(8) { v = v << 8 | UInt64(x) }
        return v
    }
}

/// The reconciliation tree of a set of IDs held in memory: the reference the SQLite index is
/// checked against, and the replica of the tests and the simulation. Hashes are computed when
/// asked and cached until the set changes under them.
public struct MemoryReconTree: ReconView, Sendable {
    /// The IDs of each leaf (by leaf prefix), ascending.
    private var leaves: [UInt16: [[UInt8]]] = [:]
    private var cache = Cache()

    public init<S: Sequence>(_ ids: S) where S.Element == [UInt8] {
        for id in ids { insert(id) }
    }

    public var count: Int { leaves.values.reduce(0) { $0 + $1.count } }

    public func contains(_ id: [UInt8]) -> Bool {
        leaves[ReconTree.prefix(of: id, depth: ReconTree.leafDepth)]?.contains(id) ?? false
    }

    /// Adds `id`; false if it was already there.
    @discardableResult
    public mutating func insert(_ id: [UInt8]) -> Bool {
        let p = ReconTree.prefix(of: id, depth: ReconTree.leafDepth)
        var list = leaves[p] ?? []
        let at = list.firstIndex { !$0.lexicographicallyPrecedes(id) } ?? list.endIndex
        if at < list.endIndex, list[at] == id { return false }
        list.insert(id, at: at)
        leaves[p] = list
        cache = Cache()
        return true
    }

    @discardableResult
    public mutating func remove(_ id: [UInt8]) -> Bool {
        let p = ReconTree.prefix(of: id, depth: ReconTree.leafDepth)
        guard var list = leaves[p], let at = list.firstIndex(of: id) else { return false }
        list.remove(at: at)
        leaves[p] = list.isEmpty ? nil : list
        cache = Cache()
        return true
    }

    public func node(depth: Int, prefix: UInt16) -> ReconNode? {
        let key = UInt32(depth) << 16 | UInt32(prefix)
        if let hit = cache.get(key) { return hit.count == 0 ? nil : hit }
        let result: ReconNode?
        if depth == ReconTree.leafDepth {
            result = leaves[prefix].map { ReconNode(count: UInt32($0.count), hash: ReconHash.leaf($0)) }
        } else {
            let kids = children(depth: depth, prefix: prefix)
            let count = kids.reduce(UInt32(0)) { $0 + $1.node.count }
            result = kids.isEmpty ? nil
                : ReconNode(count: count, hash: ReconHash.node(count: count, children: kids.map { ($0.nibble, $0.node.hash) }))
        }
        cache.set(key, result ?? ReconNode(count: 0, hash: []))
        return result
    }

    public func children(depth: Int, prefix: UInt16) -> [(nibble: UInt8, node: ReconNode)] {
        (0..<16).compactMap { n in
            node(depth: depth + 1, prefix: ReconTree.child(depth: depth, prefix: prefix, nibble: UInt8(n))).map { (UInt8(n), $0) }
        }
    }

    public func ids(depth: Int, prefix: UInt16) -> [[UInt8]] {
        if depth == ReconTree.leafDepth { return leaves[prefix] ?? [] }
        return (0..<16).flatMap { n in ids(depth: depth + 1, prefix: ReconTree.child(depth: depth, prefix: prefix, nibble: UInt8(n))) }
    }

    /// A memo shared by copies until the next change (a class, so lookups can fill it from
    /// non-mutating methods). Not thread-safe: one tree is used from one place at a time.
    private final class Cache: @unchecked Sendable {
        private var nodes: [UInt32: ReconNode] = [:]
        func get(_ k: UInt32) -> ReconNode? { nodes[k] }
        func set(_ k: UInt32, _ v: ReconNode) { nodes[k] = v }
    }
}
