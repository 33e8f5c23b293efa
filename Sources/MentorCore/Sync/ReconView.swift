/// The reconciliation tree (sync protocol v2, PROTOCOL.md §13.3): a fixed trie over the record
/// IDs a replica holds, by the top 16 bits of each ID, one nibble a level.
///
/// A node is (depth, prefix): depth 0...4 nibbles; `prefix` is the ID's first two bytes read as
/// a big-endian `UInt16` with every bit below the node's top `4 * depth` bits zero. Depth 0 is
/// the root (prefix 0); depth 4 nodes are the leaves. An empty node (no ID under it) has no
/// hash and is never stored or sent. Hashing (`ReconHash` in MentorCrypto):
///
///     leaf     = BLAKE2b-256("mm-recon-leaf-v2" ‖ u32(count) ‖ the IDs, ascending)
///     internal = BLAKE2b-256("mm-recon-node-v2" ‖ u32(count) ‖ for each non-empty child,
///                            by nibble ascending: u8(nibble) ‖ child hash (32))
///
/// Both are collision-resistant hashes of the whole set under the node (a Merkle trie), so
/// nobody who can insert records can make two different sets hash alike.
public enum ReconTree {
    public static let leafDepth = 4

    /// The node of `id` at `depth`.
    public static func prefix(of id: [UInt8], depth: Int) -> UInt16 {
        precondition((0...leafDepth).contains(depth) && id.count >= 2)
        let top = UInt16(id[0]) << 8 | UInt16(id[1])
        return depth == 0 ? 0 : top & ~(UInt16.max >> UInt16(4 * depth))
    }

    /// The child of (depth, prefix) with this nibble (depth < 4).
    public static func child(depth: Int, prefix: UInt16, nibble: UInt8) -> UInt16 {
        precondition(depth < leafDepth && nibble < 16)
        return prefix | UInt16(nibble) << UInt16(12 - 4 * depth)
    }

    /// The lowest and highest 32-byte IDs under (depth, prefix), for range queries.
    public static func idRange(depth: Int, prefix: UInt16) -> (low: [UInt8], high: [UInt8]) {
        let span = depth == 0 ? UInt16.max : UInt16.max >> UInt16(4 * depth)
        let hi = prefix | span
        var low = [UInt8](repeating: 0, count: 32), high = [UInt8](repeating: 0xff, count: 32)
        low[0] = UInt8(prefix >> 8); low[1] = UInt8(prefix & 0xff)
        high[0] = UInt8(hi >> 8); high[1] = UInt8(hi & 0xff)
        return (low, high)
    }
}

/// One node of the tree as a replica holds it.
public struct ReconNode: Equatable, Sendable {
    /// IDs under the node (≥ 1).
    public var count: UInt32
    /// The node's hash (32 bytes, `ReconTree`).
    public var hash: [UInt8]
    public init(count: UInt32, hash: [UInt8]) { self.count = count; self.hash = hash }
}

/// Read access to a replica's reconciliation tree: implemented over SQLite by MentorStore
/// (`Replica`) and in memory by tests and the simulation.
public protocol ReconView {
    /// The node, or nil when nothing is held under it.
    func node(depth: Int, prefix: UInt16) throws -> ReconNode?
    /// The non-empty children of a node of depth < 4, by nibble ascending.
    func children(depth: Int, prefix: UInt16) throws -> [(nibble: UInt8, node: ReconNode)]
    /// Every ID held under the node, ascending.
    func ids(depth: Int, prefix: UInt16) throws -> [[UInt8]]
}
