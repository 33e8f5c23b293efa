import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// The SQLite reconciliation tree (`ReconIndex`) against `MemoryReconTree`, the reference a peer
/// computes the same hashes with.
@Suite struct ReconIndexTests {
    /// Every ID the replica holds as the tree's set says it should: `records` ∪ `pending`.
    static func heldIDs(_ replica: Replica) throws -> [[UInt8]] {
        try replica.read { db throws(StoreError) in
            try db.query("SELECT id FROM records UNION ALL SELECT id FROM pending").compactMap { $0.blob(0) }
        }
    }

    /// Walks both trees from the root through every node non-empty in either and expects the
    /// same node, children and IDs everywhere; also that `recon_nodes` holds no other row.
    static func expectSameTree(_ replica: Replica, _ expected: MemoryReconTree,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        var visited = 0
        try replica.withReconView { (view: any ReconView) throws in
            func visit(_ depth: Int, _ prefix: UInt16) throws {
                visited += 1
                let mine = try view.node(depth: depth, prefix: prefix)
                #expect(mine == expected.node(depth: depth, prefix: prefix), "node (\(depth), \(prefix))", sourceLocation: sourceLocation)
                if depth == ReconTree.leafDepth || mine == nil {
                    #expect(try view.ids(depth: depth, prefix: prefix) == expected.ids(depth: depth, prefix: prefix), sourceLocation: sourceLocation)
                    return
                }
                let kids = try view.children(depth: depth, prefix: prefix)
                let theirs = expected.children(depth: depth, prefix: prefix)
                #expect(kids.map(\.nibble) == theirs.map(\.nibble), "children of (\(depth), \(prefix))", sourceLocation: sourceLocation)
                #expect(kids.map(\.node) == theirs.map(\.node), sourceLocation: sourceLocation)
                let nibbles = Set(kids.map(\.nibble)).union(theirs.map(\.nibble))
                for n in nibbles.sorted() { try visit(depth + 1, ReconTree.child(depth: depth, prefix: prefix, nibble: n)) }
            }
            try visit(0, 0)
        }
        let rows = try replica.read { db throws(StoreError) in try db.queryOne("SELECT count(*) FROM recon_nodes")?.int(0) ?? -1 }
        // The walk visits the root even when the set is empty (no row then).
        #expect(rows == (expected.count == 0 ? 0 : visited), "stale rows in recon_nodes", sourceLocation: sourceLocation)
        #expect(try replica.reconSetSize() == expected.count, sourceLocation: sourceLocation)
    }

    static func expectTreeMatchesTables(_ replica: Replica, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectSameTree(replica, MemoryReconTree(try heldIDs(replica)), sourceLocation: sourceLocation)
    }

    /// An author's records 1...count, each `variants` times at the seqs in `forkAt`.
    static func chain(_ keys: SigningKeyPair, count: UInt64, forkAt: Set<UInt64> = [], variants: Int = 3) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        for seq in 1...count {
            let n = forkAt.contains(seq) ? variants : 1
            for v in 0..<n {
                out.append(try signed(keys, type: 1, seq: seq, body: ProfileCard(bio: "seq \(seq) variant \(v)").body, timestamp: 1000 + seq))
            }
        }
        return out
    }

    // MARK: The tree follows every change the apply path makes

    @Test(.tags(.slow), arguments: [UInt64(1), 2, 3, 4])
    func randomApplySequencesKeepTheTreeEqualToTheMemoryTreeOfTheHeldSet(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        let authors = (0..<5).map { keyPair(UInt8(40 + $0)) }
        var all: [[UInt8]] = []
        for (i, a) in authors.enumerated() {
            // Forks with 3 variants (the highest ID loses its place when a lower one arrives).
            all += try Self.chain(a, count: UInt64(6 + i * 3), forkAt: i % 2 == 0 ? [2, 5] : [3])
        }
        all.shuffle(using: &rng)
        let replica = try memoryReplica(settings: historySettings())
        var rest = all[...]
        while !rest.isEmpty {
            let n = Int.random(in: 1...9, using: &rng)
            let batch = Array(rest.prefix(n))
            rest = rest.dropFirst(n)
            // Some batches repeat records already sent (duplicates change nothing).
            let extra = Bool.random(using: &rng) ? [all[Int.random(in: 0..<all.count, using: &rng)]] : []
            _ = try replica.apply(batch: batch + extra)
            try Self.expectTreeMatchesTables(replica)
        }
        // All delivered: nothing is held back, every seq has its two lowest variants.
        #expect(try replica.counts().pending == 0)
        let set = Set(try Self.heldIDs(replica))
        var expected: Set<[UInt8]> = []
        var bySeq: [[UInt8]: [[UInt8]]] = [:]
        for r in all {
            let v = try VerifiedRecord(r)
            bySeq[v.record.author.bytes + Self.be64(v.record.seq), default: []].append(v.id)
        }
        for ids in bySeq.values { expected.formUnion(ids.sorted { $0.lexicographicallyPrecedes($1) }.prefix(2)) }
        #expect(set == expected)
        // Another order, another batching: the same tree.
        let other = try memoryReplica(settings: historySettings())
        _ = try other.importBatches(stride(from: 0, to: all.count, by: 4).map { Array(all.reversed()[$0..<min($0 + 4, all.count)]) })
        try Self.expectSameTree(other, MemoryReconTree(set))
        let root = try replica.withReconView { try $0.node(depth: 0, prefix: 0) }
        #expect(try other.withReconView { try $0.node(depth: 0, prefix: 0) } == root)
    }

    static func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }

    @Test func heldRecordsAreInTheSetAndStayWhenReleasedEquivocationAndHeldUntilDueAreNot() throws {
        let ana = keyPair(50)
        let now = Box(testNow)
        var settings = historySettings()
        settings.now = { [now] in now.value }
        let replica = try memoryReplica(settings: settings)
        let recs = try Self.chain(ana, count: 4, forkAt: [2], variants: 4)   // seqs 1, 2×4, 3, 4
        let ids = recs.map(VerifiedRecord.id(of:))
        // Seq 3 and 4 arrive first: held back, part of the set.
        #expect(try replica.apply(batch: [recs[5], recs[6]]) == [.held, .held])
        try Self.expectTreeMatchesTables(replica)
        #expect(try replica.reconSetSize() == 2)
        // Seq 2's variants, highest ID first: the first three are held, the fourth too.
        let seq2 = Array(recs[1...4]).sorted { VerifiedRecord.id(of: $0).lexicographicallyPrecedes(VerifiedRecord.id(of: $1)) }
        _ = try replica.apply(batch: seq2.reversed())
        try Self.expectTreeMatchesTables(replica)
        #expect(try replica.reconSetSize() == 6)
        // Seq 1 releases everything: two variants of seq 2 stay, the other two are evidence only.
        #expect(try replica.apply(recs[0]) == .applied)
        try Self.expectTreeMatchesTables(replica)
        let held = Set(try Self.heldIDs(replica))
        #expect(held == Set([ids[0], ids[5], ids[6]] + seq2.prefix(2).map(VerifiedRecord.id(of:))))
        #expect(try replica.counts().evidence == 4)
        // A record from the future: held until due, outside the set until it is applied.
        let future = try signed(ana, type: 1, seq: 5, body: ProfileCard(bio: "later").body, timestamp: testNow + 3_600_000)
        #expect(try replica.apply(future) == .heldUntilDue)
        try Self.expectTreeMatchesTables(replica)
        #expect(try replica.reconSetSize() == 5)
        now.value = testNow + 3_600_000
        #expect(try replica.releaseDue().count == 1)
        try Self.expectTreeMatchesTables(replica)
        #expect(try replica.reconSetSize() == 6)
    }

    /// The index's own maintenance on dense leaves (synthetic IDs: real records rarely share a
    /// leaf in a small test): many IDs a leaf, leaves emptied, ancestors emptied, rebuilt.
    @Test func denseLeavesInsertDeleteAndRebuildMatchTheMemoryTree() throws {
        let replica = try memoryReplica()
        var rng = SeededRandom(seed: 77)
        // 600 IDs under 3 depth-2 nodes: about 2-3 per leaf, many shared depth-3 nodes.
        let ids: [[UInt8]] = (0..<600).map { i in
            let top: [UInt8] = [[0x12, 0x34, 0xff][i % 3], UInt8(truncatingIfNeeded: rng.next()) & (i % 3 == 2 ? 0x0f : 0xff)]
            return top + rng.bytes(30)
        }
        func change(insert: [[UInt8]], delete: [[UInt8]]) throws {
            try replica.write { db throws(StoreError) in
                try db.execute("INSERT OR IGNORE INTO authors(id, key, digest) VALUES (1, ?, 0)", [.blob([UInt8](repeating: 9, count: 32))])
                var dirty = ReconDirty()
                for (i, id) in insert.enumerated() {
                    try db.execute("INSERT INTO pending(author, seq, id, bytes) VALUES (1, ?, ?, x'00')", [.integer(Int64(i + 1)), .blob(id)])
                    dirty.added(id)
                }
                for id in delete {
                    try db.execute("DELETE FROM pending WHERE id = ?", [.blob(id)])
                    dirty.removed(id)
                }
                try ReconIndex.update(db, &dirty)
            }
        }
        try change(insert: ids, delete: [])
        var model = MemoryReconTree(ids)
        try Self.expectSameTree(replica, model)
        // Delete a third, including every ID under 0xff (its subtree empties and goes away).
        let gone = ids.enumerated().filter { $0.offset % 3 == 2 || $0.offset % 5 == 0 }.map(\.element)
        try change(insert: [], delete: gone)
        for id in gone { model.remove(id) }
        try Self.expectSameTree(replica, model)
        #expect(try replica.withReconView { try $0.node(depth: 2, prefix: 0xff00) } == nil)
        // A rebuild from the rows gives the same tree.
        try replica.write { db throws(StoreError) in try ReconIndex.rebuild(db) }
        try Self.expectSameTree(replica, model)
        // Emptied completely: no node rows remain.
        try change(insert: [], delete: ids)
        try Self.expectSameTree(replica, MemoryReconTree([]))
    }

    // MARK: Migration 8

    @Test func migrationEightBuildsTheTreeOfAReplicaWrittenAtSchemaSeven() throws {
        let dir = try TempDir()
        let path = dir.file("replica.sqlite")
        var all: [[UInt8]] = []
        for i in 0..<4 { all += try Self.chain(keyPair(UInt8(60 + i)), count: 8, forkAt: [4]) }
        let gapped = try signed(keyPair(70), type: 1, seq: 3, body: ProfileCard(bio: "held").body)
        do {
            let replica = try Replica(path: path, settings: historySettings())
            _ = try replica.apply(batch: all + [gapped])
            #expect(try replica.counts().pending == 1)
            try replica.close()
        }
        // What a build at migration 7 left: no ID indexes, no tree, user_version 7.
        do {
            let db = try Database(path: path)
            try db.executeScript(undoMigration10 + """
                DROP TABLE recon_nodes; DROP INDEX records_by_id; DROP INDEX pending_by_id;
                DROP TABLE superseded; DROP INDEX pending_by_arrival; ALTER TABLE pending DROP COLUMN arrived;
                PRAGMA user_version = 7;
                """)
            try db.close()
        }
        let replica = try Replica(path: path, settings: historySettings())
        #expect(try replica.read { db throws(StoreError) in try ReplicaSchema.migrator.currentVersion(db) } == ReplicaSchema.migrator.latestVersion)
        let ids = try Self.heldIDs(replica)
        // Migration 9 runs too and compacts each chain of bio edits to its seq 1 and its last
        // edit (the seq 4 variants included); the held record stays held (its seq 1 is missing).
        #expect(ids.count == 4 * 2 + 1)
        try Self.expectSameTree(replica, MemoryReconTree(ids))
        // And it is maintained from there on.
        _ = try replica.apply(batch: try Self.chain(keyPair(70), count: 2))
        try Self.expectTreeMatchesTables(replica)
        #expect(try replica.counts().pending == 0)
    }

    // MARK: Reading records for a reconciliation

    /// Records of 40 authors (some held back), enough that deeper nodes hold several.
    static func pagingReplica() throws -> Replica {
        let replica = try memoryReplica()
        var all: [[UInt8]] = []
        for i in 0..<40 { all += try chain(keyPair(UInt8(100 + i)), count: UInt64(3 + i % 7), forkAt: i % 9 == 0 ? [2] : []) }
        _ = try replica.apply(batch: all)
        // Held back: seqs 3...5 of a new author.
        _ = try replica.apply(batch: Array(try chain(keyPair(200), count: 5)[2...]))
        #expect(try replica.counts().pending == 3)
        return replica
    }

    /// What a walk of (depth, prefix) must return: every held record under it, by (author, seq, id).
    static func expectedUnder(_ replica: Replica, depth: Int, prefix: UInt16) throws -> [[UInt8]] {
        let (low, high) = ReconTree.idRange(depth: depth, prefix: prefix)
        return try replica.read { db throws(StoreError) in
            try db.query("""
                SELECT bytes FROM (SELECT author, seq, id, bytes FROM records UNION ALL SELECT author, seq, id, bytes FROM pending)
                WHERE id BETWEEN ? AND ? ORDER BY author, seq, id
                """, [.blob(low), .blob(high)]).compactMap { $0.blob(0) }
        }
    }

    func walk(_ replica: Replica, depth: Int, prefix: UInt16, limit: Int, strategy: Replica.ReconPageStrategy?) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var cursor: ReconCursor?
        var pages = 0
        repeat {
            let page = try replica.reconRecords(depth: depth, prefix: prefix, after: cursor, limit: limit, strategy: strategy)
            #expect(page.records.count <= limit)
            #expect(page.next == nil || page.records.count == limit)
            out += page.records
            cursor = page.next
            pages += 1
        } while cursor != nil && pages < 10_000
        return out
    }

    @Test func pagingReturnsEveryRecordUnderANodeOnceInAuthorSeqOrder() throws {
        let replica = try Self.pagingReplica()
        let all = try Self.expectedUnder(replica, depth: 0, prefix: 0)
        #expect(all.count == (try replica.reconSetSize()))
        for limit in [1, 7, 1000] {
            #expect(try walk(replica, depth: 0, prefix: 0, limit: limit, strategy: nil) == all)
        }
        // Deeper nodes, through both reads (ID range + sort, and primary-key scan).
        let firstID = VerifiedRecord.id(of: all[0])
        for depth in 1...4 {
            let prefix = ReconTree.prefix(of: firstID, depth: depth)
            let expected = try Self.expectedUnder(replica, depth: depth, prefix: prefix)
            #expect(!expected.isEmpty)
            for strategy in [Replica.ReconPageStrategy.idRange, .scan, nil] {
                for limit in [1, 3, 500] {
                    #expect(try walk(replica, depth: depth, prefix: prefix, limit: limit, strategy: strategy) == expected,
                            "depth \(depth) \(String(describing: strategy)) limit \(limit)")
                }
            }
        }
        for nibble in 0..<16 {
            let prefix = ReconTree.child(depth: 0, prefix: 0, nibble: UInt8(nibble))
            #expect(try walk(replica, depth: 1, prefix: prefix, limit: 4, strategy: nil) == Self.expectedUnder(replica, depth: 1, prefix: prefix))
        }
        // Not a node: nothing, no crash.
        #expect(try replica.reconRecords(depth: 5, prefix: 0, after: nil, limit: 10).records.isEmpty)
        #expect(try replica.reconRecords(depth: 1, prefix: 0x0001, after: nil, limit: 10).records.isEmpty)
        #expect(try replica.reconRecords(depth: 0, prefix: 0, after: nil, limit: 0).records.isEmpty)
    }

    @Test func recordsByIDComeBackInAuthorSeqOrderUnknownAndRepeatedIDsSkipped() throws {
        let replica = try Self.pagingReplica()
        let all = try Self.expectedUnder(replica, depth: 0, prefix: 0)
        let pick = stride(from: 0, to: all.count, by: 5).map { all[$0] }
        let unknown = [UInt8](repeating: 0xee, count: 32)
        let asked = (pick.map(VerifiedRecord.id(of:)) + [unknown, [1, 2, 3]] + pick.prefix(3).map(VerifiedRecord.id(of:))).reversed()
        #expect(try replica.reconRecords(ids: Array(asked)) == pick)
        // Held-back records are found too.
        let pending = try replica.read { db throws(StoreError) in try db.query("SELECT id, bytes FROM pending ORDER BY seq") }
        #expect(try replica.reconRecords(ids: pending.compactMap { $0.blob(0) }) == pending.compactMap { $0.blob(1) })
    }

    /// How many root rows `recon_nodes` holds (none while tree changes wait, `Replica.settleRecon`).
    static func rootRows(_ replica: Replica) throws -> Int {
        try replica.read { db throws(StoreError) in try db.queryOne("SELECT count(*) FROM recon_nodes WHERE node = 0")?.int(0) ?? -1 }
    }

    /// Tree changes of small writes wait (the root row is absent meanwhile) until the tree is
    /// read; a replica opened while they wait — as after a crash — rebuilds the tree from the
    /// tables; the one that wrote them brings the tree up to date when it reads it, or closes.
    @Test func treeChangesWaitUntilReadAndAReplicaOpenedMeanwhileRebuildsTheTree() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let replica = try Replica(path: path, settings: Self.deferringSettings(historySettings()))
        #expect(try replica.apply(batch: try Self.chain(keyPair(1), count: 20)).allSatisfy { $0 == .applied })
        #expect(try Self.rootRows(replica) == 0, "a small write leaves the tree waiting, its root row deleted")
        let reopened = try Replica(path: path, settings: historySettings())   // the crash case: nothing brought it up to date
        #expect(try Self.rootRows(reopened) == 1, "opening rebuilt the tree")
        try Self.expectTreeMatchesTables(reopened)
        try reopened.close()
        // The writer's own read brings the tree up to date (over the rebuilt one: the same tree).
        #expect(try replica.apply(batch: try Self.chain(keyPair(2), count: 5)).allSatisfy { $0 == .applied })
        try Self.expectTreeMatchesTables(replica)
        #expect(try Self.rootRows(replica) == 1)
        // Closing brings it up to date too: the next open has nothing to rebuild.
        #expect(try replica.apply(batch: try Self.chain(keyPair(3), count: 5)).allSatisfy { $0 == .applied })
        try replica.close()
        let again = try Replica(path: path, settings: historySettings())
        #expect(try Self.rootRows(again) == 1)
        try Self.expectTreeMatchesTables(again)
    }

    /// A write that takes the waiting changes past `Settings.reconDeferredLeaves` leaves writes
    /// the tree itself: what waits stays bounded without any read.
    @Test func aWritePastTheBoundBringsTheTreeUpToDateItself() throws {
        let settings = Self.deferringSettings(historySettings())
        let replica = try memoryReplica(settings: settings)
        let many = try Self.chain(keyPair(4), count: UInt64(settings.reconDeferredLeaves) + 600)
        #expect(try replica.apply(batch: many).allSatisfy { $0 == .applied })
        #expect(try Self.rootRows(replica) == 1, "more than \(settings.reconDeferredLeaves) leaves changed: written in the same write")
        try Self.expectTreeMatchesTables(replica)
    }

    // MARK: Tree changes waiting (`Replica.settleRecon`)

    /// Deferral bounds high enough that the writes of a test wait (the production ones, set
    /// here so the tests exercise the deferral whatever the default).
    static func deferringSettings(_ base: Replica.Settings = testSettings()) -> Replica.Settings {
        var s = base
        s.reconDeferredLeaves = 4096
        s.reconDeferredIDs = 16_384
        return s
    }

    /// A page of the records under a node, read while the writes before it wait to be written
    /// into the tree (its root row is absent meanwhile), holds every record under the node: the
    /// page read brings the tree up to date first, as a read of the tree does.
    @Test func subtreePagesReadWhileTreeChangesWaitHoldEveryRecordUnderTheNode() throws {
        let replica = try memoryReplica(settings: Self.deferringSettings(historySettings()))
        _ = try replica.apply(batch: try Self.chain(keyPair(5), count: 30))
        try Self.expectTreeMatchesTables(replica)
        let added = try Self.chain(keyPair(6), count: 10)
        #expect(try replica.apply(batch: added).allSatisfy { $0 == .applied })
        #expect(try Self.rootRows(replica) == 0, "a small write leaves the tree waiting")
        let id = VerifiedRecord.id(of: added[3])
        for depth in 1...ReconTree.leafDepth {
            let prefix = ReconTree.prefix(of: id, depth: depth)
            let expected = try Self.expectedUnder(replica, depth: depth, prefix: prefix)
            #expect(expected.contains(added[3]))
            #expect(try walk(replica, depth: depth, prefix: prefix, limit: 4, strategy: nil) == expected, "depth \(depth)")
            // Each page read brought the tree up to date; wait again for the next depth.
            #expect(try replica.apply(batch: try Self.chain(keyPair(UInt8(10 + depth)), count: 3)).allSatisfy { $0 == .applied })
        }
        try Self.expectTreeMatchesTables(replica)
    }

    /// A deterministic author for the large workloads (more than `keyPair`'s 256).
    static func author(_ i: Int) -> SigningKeyPair {
        let seed = (0..<32).map { UInt8(truncatingIfNeeded: (i &* 2_654_435_761) >> (8 * ($0 % 4))) ^ UInt8($0) }
        return (try? SigningKeyPair(seed: seed)) ?? SigningKeyPair.generate()
    }

    /// One reconciliation round between two replicas (the `Reconciler` over their SQLite trees),
    /// with what a side receives applied between its tree read and its record reads — as in the
    /// daemon, where received batches are applied on another queue while the session answers.
    static func roundWhileApplying(_ a: Replica, _ b: Replica, batchSize: Int) throws {
        let reconciler = Reconciler(hashing: ReconHash.hashing(mine: [1], theirs: [2]))
        let sides = [a, b]
        var inbox: [[[UInt8]]] = [[], []]
        var items = try a.withReconView { try reconciler.opening($0) }
        var turn = 1
        var steps = 0
        while !items.isEmpty || inbox.contains(where: { !$0.isEmpty }), steps < 256 {
            steps += 1
            let me = sides[turn]
            let step = items.isEmpty ? ReconStep() : try me.withReconView { try reconciler.respond(to: items, in: $0) }
            // What the peer sent arrives now: applied in small batches, each leaving the tree waiting.
            for start in stride(from: 0, to: inbox[turn].count, by: batchSize) {
                let batch = Array(inbox[turn][start..<min(start + batchSize, inbox[turn].count)])
                #expect(!(try me.apply(batch: batch)).contains { if case .refused = $0 { true } else { false } })
            }
            inbox[turn] = []
            let send = try me.records(sentBy: step)
            inbox[1 - turn] += send
            items = step.reply
            turn = 1 - turn
        }
        #expect(steps < 256, "the round ended")
    }

    /// Two replicas holding a large common set (card edits of many authors, compacted) and
    /// each the last edit of a few hundred authors the other lacks — `mentormate-bench reconcile`
    /// (b) in small — reconcile with the tree's changes waiting between reads: one round leaves
    /// both holding the union, with equal roots, and each tree equal to one built from scratch.
    @Test(.tags(.slow)) func twoLargeReplicasReconcileToTheUnionWhileTreeChangesWait() throws {
        let authors = 3000, differing = 600
        var common: [[UInt8]] = [], onlyA: [[UInt8]] = [], onlyB: [[UInt8]] = []
        for i in 0..<authors {
            let keys = Self.author(i)
            let first = try signed(keys, type: 1, seq: 1, body: ProfileCard(name: "n\(i)", bio: "first").body, timestamp: 1001)
            let second = try signed(keys, type: 1, seq: 2, body: ProfileCard(bio: "second \(i)").body, timestamp: 1002)
            let last = try signed(keys, type: 1, seq: 3, body: ProfileCard(bio: "last \(i)").body, timestamp: 1003)
            common += [first, second]
            switch i < differing ? i % 2 : 2 {
            case 0: onlyA.append(last)
            case 1: onlyB.append(last)
            default: common.append(last)
            }
        }
        let settings = Self.deferringSettings()
        let a = try memoryReplica(settings: settings), b = try memoryReplica(settings: settings)
        _ = try a.importBatches(stride(from: 0, to: common.count, by: 2000).map { Array(common[$0..<min($0 + 2000, common.count)]) })
        _ = try b.importBatches(stride(from: 0, to: common.count, by: 500).reversed().map { Array(common[$0..<min($0 + 500, common.count)]) })
        for (replica, extra) in [(a, onlyA), (b, onlyB)] {
            for start in stride(from: 0, to: extra.count, by: 40) {
                #expect(try replica.apply(batch: Array(extra[start..<min(start + 40, extra.count)])).allSatisfy { $0 == .applied })
            }
            #expect(try Self.rootRows(replica) == 0, "the extra records' tree changes wait")
        }
        try Self.roundWhileApplying(a, b, batchSize: 25)
        let reference = try memoryReplica(settings: settings)
        _ = try reference.importBatches([common + onlyA + onlyB])
        let union = Set(try Self.heldIDs(reference))
        #expect(union.count == authors * 2, "compaction keeps seq 1 and the last edit")
        #expect(Set(try Self.heldIDs(a)) == union, "A holds the union")
        #expect(Set(try Self.heldIDs(b)) == union, "B holds the union")
        let root = try reference.withReconView { try $0.node(depth: 0, prefix: 0) }
        #expect(try a.withReconView { try $0.node(depth: 0, prefix: 0) } == root)
        #expect(try b.withReconView { try $0.node(depth: 0, prefix: 0) } == root)
        for replica in [a, b] {
            try Self.expectTreeMatchesTables(replica)
            try replica.write { db throws(StoreError) in try ReconIndex.rebuild(db) }
            #expect(try replica.withReconView { try $0.node(depth: 0, prefix: 0) } == root, "a rebuilt tree is the same")
        }
    }

    @Test func viewAnswersNothingForWhatIsNotANode() throws {
        let replica = try Self.pagingReplica()
        try replica.withReconView { (view: any ReconView) throws in
            #expect(try view.node(depth: 5, prefix: 0) == nil)
            #expect(try view.node(depth: -1, prefix: 0) == nil)
            #expect(try view.node(depth: 1, prefix: 0x0100) == nil)
            #expect(try view.children(depth: 4, prefix: 0).isEmpty)
            #expect(try view.ids(depth: 2, prefix: 0x0001).isEmpty)
        }
    }
}

/// A value a test changes while a replica's injected clock reads it.
final class Box<T: Sendable>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
