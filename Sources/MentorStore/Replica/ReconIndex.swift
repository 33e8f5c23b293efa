import MentorCore
import MentorCrypto

/// The reconciliation tree of sync v2 (`ReconTree`, PROTOCOL.md §13.3) kept in SQLite, so a
/// reconciliation reads O(d · log n) rows instead of the whole set.
///
/// Shape (migration 8):
/// - The set — the IDs of `records` ∪ `pending` — is not copied: `records_by_id` and
///   `pending_by_id` index the two tables by ID, so SQLite keeps the set with every insert and
///   delete and it cannot drift from the tables. A leaf's IDs are an ID range of the two
///   indexes, and an ID finds its record through them (the index holds the table's key, author
///   and seq). An index entry is the 32-byte ID plus author and seq (a few bytes each).
/// - `recon_nodes` holds every non-empty node, leaves included, keyed by one integer
///   `depth << 16 | prefix` (a rowid table: the key costs no extra bytes). The children of a node
///   are exactly the nodes of the next depth within its prefix range, so they are one range read
///   of at most 16 rows. At most 69,905 rows (65,536 leaves), ~45 bytes each: ~3 MB at any size.
///
/// Maintenance: `ApplyBatch` marks the leaf of every ID it inserts into or deletes from
/// `records` or `pending` (`ReconDirty`); at the end of the batch, in the same transaction,
/// `update` recomputes each dirty leaf once (one ID-range read) and then each dirty ancestor
/// once (one children read), deepest first.
enum ReconIndex {
    /// The `recon_nodes` key of (depth, prefix).
    static func key(depth: Int, prefix: UInt16) -> Int64 { Int64(depth) << 16 | Int64(prefix) }

    /// The prefix of (depth, prefix)'s ancestor at `depth` (which is not deeper).
    static func ancestor(_ prefix: UInt16, at depth: Int) -> UInt16 {
        depth == 0 ? 0 : prefix & ~(UInt16.max >> UInt16(4 * depth))
    }

    /// Whether (depth, prefix) is a node of the tree (depth 0...4, no bits below its nibbles).
    static func isNode(depth: Int, prefix: UInt16) -> Bool {
        (0...ReconTree.leafDepth).contains(depth) && ancestor(prefix, at: depth) == prefix
    }

    /// The range of `recon_nodes` keys holding the children of a node of depth < 4.
    static func childKeys(depth: Int, prefix: UInt16) -> ClosedRange<Int64> {
        let span = UInt16.max >> UInt16(4 * depth)
        return key(depth: depth + 1, prefix: prefix)...key(depth: depth + 1, prefix: prefix | span)
    }

    static let leafIDsSQL = """
        SELECT id FROM records INDEXED BY records_by_id WHERE id BETWEEN ?1 AND ?2
        UNION ALL SELECT id FROM pending INDEXED BY pending_by_id WHERE id BETWEEN ?1 AND ?2
        ORDER BY 1
        """
    static let childrenSQL = "SELECT node, count, hash FROM recon_nodes WHERE node BETWEEN ? AND ? ORDER BY node"
    static let nodeSQL = "SELECT count, hash FROM recon_nodes WHERE node = ?"
    /// Records' IDs only: while `pending` is empty (the usual case) a leaf is one range read.
    static let recordIDsSQL = "SELECT id FROM records INDEXED BY records_by_id WHERE id BETWEEN ?1 AND ?2 ORDER BY 1"
    /// An upsert rewrites the row in place (REPLACE would delete it and insert it again).
    static let upsertSQL = """
        INSERT INTO recon_nodes(node, count, hash) VALUES (?, ?, ?)
        ON CONFLICT(node) DO UPDATE SET count = excluded.count, hash = excluded.hash
        """
    static let deleteSQL = "DELETE FROM recon_nodes WHERE node = ?"

    /// Every ID held under (depth, prefix), ascending.
    static func ids(_ db: Database, depth: Int, prefix: UInt16) throws(StoreError) -> [[UInt8]] {
        let (low, high) = ReconTree.idRange(depth: depth, prefix: prefix)
        return try db.cachedStatement(leafIDsSQL).query([.blob(low), .blob(high)]).compactMap { $0.blob(0) }
    }

    static func node(_ db: Database, depth: Int, prefix: UInt16) throws(StoreError) -> ReconNode? {
        guard let row = try db.cachedStatement(nodeSQL).queryOne([.integer(key(depth: depth, prefix: prefix))]),
              let count = row.int64(0), let hash = row.blob(1) else { return nil }
        return ReconNode(count: UInt32(clamping: count), hash: hash)
    }

    static func children(_ db: Database, depth: Int, prefix: UInt16) throws(StoreError) -> [(nibble: UInt8, node: ReconNode)] {
        let keys = childKeys(depth: depth, prefix: prefix)
        let shift = UInt16(12 - 4 * depth)
        return try db.cachedStatement(childrenSQL).query([.integer(keys.lowerBound), .integer(keys.upperBound)]).compactMap { row in
            guard let k = row.int64(0), let count = row.int64(1), let hash = row.blob(2) else { return nil }
            return (UInt8(UInt16(truncatingIfNeeded: k) >> shift & 0xf), ReconNode(count: UInt32(clamping: count), hash: hash))
        }
    }

    /// An internal node from its non-empty children (nil: no children, the node is empty).
    static func combine(_ children: [(nibble: UInt8, node: ReconNode)]) -> ReconNode? {
        guard !children.isEmpty else { return nil }
        let count = children.reduce(UInt32(0)) { $0 &+ $1.node.count }
        return ReconNode(count: count, hash: ReconHash.node(count: count, children: children.map { ($0.nibble, $0.node.hash) }))
    }

    /// The statements of one `update` or `rebuild`, each looked up once in the connection's cache.
    private struct Statements {
        let leafIDs, children, upsert, delete: Statement
        init(_ db: Database) throws(StoreError) {
            let pendingEmpty = try db.queryOne("SELECT 1 FROM pending LIMIT 1") == nil
            leafIDs = try db.cachedStatement(pendingEmpty ? recordIDsSQL : leafIDsSQL)
            children = try db.cachedStatement(childrenSQL)
            upsert = try db.cachedStatement(upsertSQL)
            delete = try db.cachedStatement(deleteSQL)
        }

        func write(_ node: ReconNode?, depth: Int, prefix: UInt16) throws(StoreError) {
            let k = key(depth: depth, prefix: prefix)
            if let node {
                try upsert.run([.integer(k), .integer(Int64(node.count)), .blob(node.hash)])
            } else {
                try delete.run([.integer(k)])
            }
        }

        func leaf(_ prefix: UInt16) throws(StoreError) -> ReconNode? {
            let (low, high) = ReconTree.idRange(depth: ReconTree.leafDepth, prefix: prefix)
            let ids = try leafIDs.query([.blob(low), .blob(high)]).compactMap { $0.blob(0) }
            return ids.isEmpty ? nil : ReconNode(count: UInt32(ids.count), hash: ReconHash.leaf(ids))
        }

        /// The non-empty children of a node of depth < 4, by nibble ascending.
        func childNodes(depth: Int, prefix: UInt16) throws(StoreError) -> [(nibble: UInt8, node: ReconNode)] {
            let keys = childKeys(depth: depth, prefix: prefix)
            let shift = UInt16(12 - 4 * depth)
            return try children.query([.integer(keys.lowerBound), .integer(keys.upperBound)]).compactMap { row in
                guard let k = row.int64(0), let count = row.int64(1), let hash = row.blob(2) else { return nil }
                return (UInt8(UInt16(truncatingIfNeeded: k) >> shift & 0xf), ReconNode(count: UInt32(clamping: count), hash: hash))
            }
        }
    }

    /// Recomputes the dirty leaves, then their ancestors level by level (each node once).
    ///
    /// Leaves go by depth-3 parent: one read of the parent's children (the leaves as they were
    /// before the batch), each dirty leaf recomputed — from the IDs the batch added when the leaf
    /// was empty and the batch removed nothing from it (the usual case while a replica is far
    /// from 65,536 × a few records), else from the ID index — and written, then the parent from
    /// those children, without reading them back. Above, each dirty node is one read of its
    /// children and one write. About three statements a record while leaves are sparse.
    static func update(_ db: Database, _ dirty: inout ReconDirty) throws(StoreError) {
        guard !dirty.leaves.isEmpty else { return }
        let st = try Statements(db)
        let changes = dirty.leaves
        dirty.leaves.removeAll(keepingCapacity: true)
        let leaves = changes.keys.sorted()
        var level: [UInt16] = []
        var i = leaves.startIndex
        while i < leaves.endIndex {
            let parent = ancestor(leaves[i], at: ReconTree.leafDepth - 1)
            var j = i
            while j < leaves.endIndex, ancestor(leaves[j], at: ReconTree.leafDepth - 1) == parent { j += 1 }
            var kids: [UInt8: ReconNode] = [:]
            for (nibble, node) in try st.childNodes(depth: ReconTree.leafDepth - 1, prefix: parent) { kids[nibble] = node }
            for leaf in leaves[i..<j] {
                let nibble = UInt8(leaf & 0xf)
                let node: ReconNode?
                if kids[nibble] == nil, let change = changes[leaf], !change.removed {
                    let ids = change.added.sorted { $0.lexicographicallyPrecedes($1) }
                    node = ids.isEmpty ? nil : ReconNode(count: UInt32(ids.count), hash: ReconHash.leaf(ids))
                } else {
                    node = try st.leaf(leaf)
                }
                kids[nibble] = node
                try st.write(node, depth: ReconTree.leafDepth, prefix: leaf)
            }
            let sorted = kids.sorted { $0.key < $1.key }.map { (nibble: $0.key, node: $0.value) }
            try st.write(combine(sorted), depth: ReconTree.leafDepth - 1, prefix: parent)
            level.append(parent)
            i = j
        }
        for depth in stride(from: ReconTree.leafDepth - 2, through: 0, by: -1) {
            // `level` is sorted, so equal ancestors are adjacent.
            var parents: [UInt16] = []
            for p in level {
                let a = ancestor(p, at: depth)
                if parents.last != a { parents.append(a) }
            }
            for prefix in parents {
                try st.write(combine(try st.childNodes(depth: depth, prefix: prefix)), depth: depth, prefix: prefix)
            }
            level = parents
        }
    }

    /// Builds the tree from scratch out of the rows of `records` and `pending` (after
    /// migration 8, on a replica that held records before it). One pass over the ID indexes.
    static func rebuild(_ db: Database) throws(StoreError) {
        try db.execute("DELETE FROM recon_nodes")
        var nodes: [[UInt16: ReconNode]] = Array(repeating: [:], count: ReconTree.leafDepth + 1)
        var current: UInt16?
        var ids: [[UInt8]] = []
        func closeLeaf() {
            if let p = current, !ids.isEmpty {
                nodes[ReconTree.leafDepth][p] = ReconNode(count: UInt32(ids.count), hash: ReconHash.leaf(ids))
            }
            ids.removeAll(keepingCapacity: true)
        }
        try db.forEachRow("SELECT id FROM records UNION ALL SELECT id FROM pending ORDER BY 1") { row throws(StoreError) in
            guard let id = row.blob(0), id.count >= 2 else { return }
            let p = ReconTree.prefix(of: id, depth: ReconTree.leafDepth)
            if p != current { closeLeaf(); current = p }
            ids.append(id)
        }
        closeLeaf()
        for depth in stride(from: ReconTree.leafDepth - 1, through: 0, by: -1) {
            var grouped: [UInt16: [(nibble: UInt8, node: ReconNode)]] = [:]
            let shift = UInt16(12 - 4 * depth)
            for (p, n) in nodes[depth + 1] {
                grouped[ancestor(p, at: depth), default: []].append((UInt8(p >> shift & 0xf), n))
            }
            for (p, kids) in grouped {
                nodes[depth][p] = combine(kids.sorted { $0.nibble < $1.nibble })
            }
        }
        let st = try Statements(db)
        for (depth, level) in nodes.enumerated() {
            for (prefix, node) in level.sorted(by: { $0.key < $1.key }) {
                try st.write(node, depth: depth, prefix: prefix)
            }
        }
    }

    /// Marks the stored tree as behind the records: its root row is deleted (every `update`
    /// writes the root again). A replica opened in that state — a crash while changes waited —
    /// rebuilds the tree (`buildIfMissing`).
    static func markStale(_ db: Database) throws(StoreError) {
        try db.cachedStatement(deleteSQL).run([.integer(key(depth: 0, prefix: 0))])
    }

    /// Builds the tree if the replica holds records but the tree has no root: the first open
    /// after migration 8, or after a crash while tree changes waited (`markStale`). Runs on every
    /// open: two one-row reads when there is nothing to do.
    static func buildIfMissing(_ db: Database) throws(StoreError) {
        guard try db.queryOne("SELECT 1 FROM recon_nodes WHERE node = 0") == nil else { return }
        let held = try db.queryOne("SELECT 1 FROM records UNION ALL SELECT 1 FROM pending LIMIT 1") != nil
        guard held else { return }
        try db.transaction { () throws(StoreError) in try rebuild(db) }
    }
}

/// The leaves a batch changed (by prefix), recomputed by `ReconIndex.update` at its end: for
/// each, the IDs it added and whether it removed any.
struct ReconDirty {
    struct Leaf {
        var added: Set<[UInt8]> = []
        var removed = false
    }
    var leaves: [UInt16: Leaf] = [:]

    /// `id` was inserted into `records` or `pending`.
    mutating func added(_ id: [UInt8]) {
        guard id.count >= 2 else { return }
        leaves[UInt16(id[0]) << 8 | UInt16(id[1]), default: Leaf()].added.insert(id)
    }

    /// `id` was deleted from `records` or `pending`.
    mutating func removed(_ id: [UInt8]) {
        guard id.count >= 2 else { return }
        leaves[UInt16(id[0]) << 8 | UInt16(id[1]), default: Leaf()].removed = true
    }

    /// IDs added, over all leaves (what holding the changes costs in memory).
    private(set) var addedIDs = 0

    /// The changes of a later write joined to these: a leaf's added IDs together, removed if
    /// either removed some. `update` then recomputes each leaf once for both.
    mutating func merge(_ later: ReconDirty) {
        for (prefix, leaf) in later.leaves {
            var joined = leaves[prefix] ?? Leaf()
            let before = joined.added.count
            joined.added.formUnion(leaf.added)
            joined.removed = joined.removed || leaf.removed
            addedIDs += joined.added.count - before
            leaves[prefix] = joined
        }
    }
}

/// A replica's tree as `ReconView`, read inside one `withReconView` call on the replica's queue.
struct SQLiteReconView: ReconView {
    let db: Database

    func node(depth: Int, prefix: UInt16) throws(StoreError) -> ReconNode? {
        guard ReconIndex.isNode(depth: depth, prefix: prefix) else { return nil }
        return try ReconIndex.node(db, depth: depth, prefix: prefix)
    }

    func children(depth: Int, prefix: UInt16) throws(StoreError) -> [(nibble: UInt8, node: ReconNode)] {
        guard depth < ReconTree.leafDepth, ReconIndex.isNode(depth: depth, prefix: prefix) else { return [] }
        return try ReconIndex.children(db, depth: depth, prefix: prefix)
    }

    func ids(depth: Int, prefix: UInt16) throws(StoreError) -> [[UInt8]] {
        guard ReconIndex.isNode(depth: depth, prefix: prefix) else { return [] }
        return try ReconIndex.ids(db, depth: depth, prefix: prefix)
    }
}

/// Where a paged walk of the records under a node (`Replica.reconRecords(depth:prefix:after:limit:)`)
/// stopped: the (author, seq, ID) of the last record returned. Opaque; valid for the replica
/// that returned it.
public struct ReconCursor: Sendable, Equatable {
    let author: Int64
    let seq: Int64
    let id: [UInt8]
}

extension Replica {
    /// Runs `body` with the replica's reconciliation tree, in one read on the replica's queue
    /// (so the tree does not change under it). The view is valid only inside `body`.
    /// The tree is brought up to date first (`readRecon`).
    public func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T {
        try readRecon { (db: Database) throws -> T in try body(SQLiteReconView(db: db)) }
    }

    /// How many record IDs the tree holds (`records` and `pending`).
    public func reconSetSize() throws(StoreError) -> Int {
        try readRecon { db throws(StoreError) in Int(try ReconIndex.node(db, depth: 0, prefix: 0)?.count ?? 0) }
    }

    /// A read of `recon_nodes`: the tree changes that wait (`Replica.settleRecon`) are written
    /// into it first (`bringReconUpToDate`), with no write in between. Every read of the tree
    /// goes through here: while changes wait the stored tree lacks its root and the nodes they
    /// touch are out of date.
    func readRecon<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.read(after: { db throws(StoreError) in try bringReconUpToDate(db) }, body)
    }

    func readRecon<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try queue.read(after: { db throws(StoreError) in try bringReconUpToDate(db) }, body)
    }

    /// The encodings of the held records (applied or held back) with these IDs, in (author,
    /// seq, ID) order (author by this replica's internal author number: each author's records
    /// come in seq order). Unknown IDs are skipped, repeated ones returned once. One indexed
    /// lookup per ID: the caller bounds `ids`.
    public func reconRecords(ids: [[UInt8]]) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in
            var found: [(key: RecordKey, bytes: [UInt8])] = []
            var seen: Set<[UInt8]> = []
            for id in ids where id.count == 32 && seen.insert(id).inserted {
                for sql in Self.recordByIDSQL {
                    if let row = try db.cachedStatement(sql).queryOne([.blob(id)]),
                       let a = row.int64(0), let s = row.int64(1), let bytes = row.blob(2) {
                        found.append((RecordKey(author: a, seq: s, id: id), bytes))
                        break
                    }
                }
            }
            return found.sorted { $0.key < $1.key }.map(\.bytes)
        }
    }

    /// A page of the held records (applied or held back) under (depth, prefix), in (author, seq,
    /// ID) order: at most `limit` records after `after` (nil: from the start), and the cursor to
    /// pass for the next page (nil: this page ends the walk). Records applied or removed between
    /// pages are seen or not depending on where they fall. Below the root, a page reads the
    /// tree (the node's and the root's counts), so it is a `readRecon`.
    ///
    /// The root is a straight walk of the two tables' primary keys. Under a deeper node of `s`
    /// records out of `n`, each page takes the cheaper of two reads: the node's ID range of the
    /// ID indexes, sorted (about `s` index rows), or the primary keys from the cursor on,
    /// skipping IDs outside the node (about `limit · n / s` rows). A whole walk so reads at most
    /// min(s² / limit, n) rows besides the records returned, never the whole set at once.
    public func reconRecords(depth: Int, prefix: UInt16, after: ReconCursor?, limit: Int) throws(StoreError)
        -> (records: [[UInt8]], next: ReconCursor?) {
        try reconRecords(depth: depth, prefix: prefix, after: after, limit: limit, strategy: nil)
    }

    /// How a page under a node below the root is read (nil: the cheaper, by the counts).
    enum ReconPageStrategy { case idRange, scan }

    func reconRecords(depth: Int, prefix: UInt16, after: ReconCursor?, limit: Int, strategy: ReconPageStrategy?) throws(StoreError)
        -> (records: [[UInt8]], next: ReconCursor?) {
        guard limit > 0, ReconIndex.isNode(depth: depth, prefix: prefix) else { return ([], nil) }
        return try readRecon { db throws(StoreError) in
            let start = after.map { RecordKey(author: $0.author, seq: $0.seq, id: $0.id) } ?? RecordKey(author: .min, seq: .min, id: [])
            let from: [SQLValue] = [.integer(start.author), .integer(start.seq), .blob(start.id)]
            var page: [(key: RecordKey, bytes: [UInt8]?)] = []
            if depth == 0 {
                for sql in Self.rootPageSQL {
                    page += try db.cachedStatement(sql).query(from + [.integer(Int64(limit) + 1)]).compactMap(Self.pageRow)
                }
            } else {
                guard let node = try ReconIndex.node(db, depth: depth, prefix: prefix),
                      let root = try ReconIndex.node(db, depth: 0, prefix: 0) else { return ([], nil) }
                let (low, high) = ReconTree.idRange(depth: depth, prefix: prefix)
                let s = Double(node.count), n = Double(root.count)
                let byIDRange = strategy.map { $0 == .idRange } ?? (s * s <= Double(limit + 1) * n)
                for sql in byIDRange ? Self.idRangePageSQL : Self.scanPageSQL {
                    page += try db.cachedStatement(sql).query(from + [.blob(low), .blob(high), .integer(Int64(limit) + 1)])
                        .compactMap(Self.pageRow)
                }
            }
            page.sort { $0.key < $1.key }
            let more = page.count > limit
            if more { page.removeLast(page.count - limit) }
            var records: [[UInt8]] = []
            records.reserveCapacity(page.count)
            for entry in page {
                if let bytes = entry.bytes {
                    records.append(bytes)
                } else if let bytes = try Self.recordBytes(db, entry.key) {
                    records.append(bytes)
                }
            }
            let next = more ? page.last.map { ReconCursor(author: $0.key.author, seq: $0.key.seq, id: $0.key.id) } : nil
            return (records, next)
        }
    }

    /// A record's place in the (author, seq, ID) order of paging.
    struct RecordKey: Comparable {
        var author: Int64, seq: Int64, id: [UInt8]
        static func < (a: Self, b: Self) -> Bool {
            (a.author, a.seq) != (b.author, b.seq) ? (a.author, a.seq) < (b.author, b.seq) : a.id.lexicographicallyPrecedes(b.id)
        }
    }

    private static let recordByIDSQL = [
        "SELECT author, seq, bytes FROM records WHERE id = ?",
        "SELECT author, seq, bytes FROM pending WHERE id = ?",
    ]
    private static let rootPageSQL = [
        "SELECT author, seq, id, bytes FROM records WHERE (author, seq, id) > (?, ?, ?) ORDER BY author, seq, id LIMIT ?",
        "SELECT author, seq, id, bytes FROM pending WHERE (author, seq, id) > (?, ?, ?) ORDER BY author, seq, id LIMIT ?",
    ]
    /// Through the ID index (covering: it holds author and seq), sorted; bytes fetched after.
    private static let idRangePageSQL = [
        """
        SELECT author, seq, id FROM records INDEXED BY records_by_id
        WHERE (author, seq, id) > (?1, ?2, ?3) AND id BETWEEN ?4 AND ?5 ORDER BY author, seq, id LIMIT ?6
        """,
        """
        SELECT author, seq, id FROM pending INDEXED BY pending_by_id
        WHERE (author, seq, id) > (?1, ?2, ?3) AND id BETWEEN ?4 AND ?5 ORDER BY author, seq, id LIMIT ?6
        """,
    ]
    /// Along the primary key, filtering IDs (`+id`: not through the ID index).
    private static let scanPageSQL = [
        """
        SELECT author, seq, id, bytes FROM records
        WHERE (author, seq, id) > (?1, ?2, ?3) AND +id BETWEEN ?4 AND ?5 ORDER BY author, seq, id LIMIT ?6
        """,
        """
        SELECT author, seq, id, bytes FROM pending
        WHERE (author, seq, id) > (?1, ?2, ?3) AND +id BETWEEN ?4 AND ?5 ORDER BY author, seq, id LIMIT ?6
        """,
    ]

    private static func pageRow(_ row: Row) -> (key: RecordKey, bytes: [UInt8]?)? {
        guard let a = row.int64(0), let s = row.int64(1), let id = row.blob(2) else { return nil }
        return (RecordKey(author: a, seq: s, id: id), row.count > 3 ? row.blob(3) : nil)
    }

    private static func recordBytes(_ db: Database, _ key: RecordKey) throws(StoreError) -> [UInt8]? {
        let args: [SQLValue] = [.integer(key.author), .integer(key.seq), .blob(key.id)]
        if let b = try db.cachedStatement("SELECT bytes FROM records WHERE author = ? AND seq = ? AND id = ?").queryOne(args)?.blob(0) {
            return b
        }
        return try db.cachedStatement("SELECT bytes FROM pending WHERE author = ? AND seq = ? AND id = ?").queryOne(args)?.blob(0)
    }
}
