import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Records applied out of order, superseded card records dropped (PROTOCOL.md §9.3), and the
/// bounded lifetime of held records.
@Suite struct CompactionTests {
    static let keys = (0..<4).map { keyPair(UInt8(110 + $0)) }

    /// A seeded history of 4 accounts: card edits of random fields (photo set and removed
    /// among them), likes toggled, a match and chats, an unmatch. Timestamps follow seqs.
    static func history(seed: UInt64) throws -> [VerifiedRecord] {
        var rng = SeededRandom(seed: seed)
        var w = keys.map { RecordWriter(keys: $0) }
        let k = keys.map { $0.publicKey.key }
        var out: [VerifiedRecord] = []
        var t: UInt64 = 1000
        func tick() -> UInt64 { t += 1; return t }
        for i in w.indices {
            out.append(try w[i].profile(ProfileCard(name: "n\(i)", role: i % 2 == 0 ? .student : .tutor, bio: "first"), at: tick()))
        }
        let photo = PhotoRef(hash: [UInt8](repeating: 7, count: 32), size: 100, format: .png)
        for step in 0..<40 {
            let i = Int.random(in: 0..<w.count, using: &rng)
            let other = (i + 1 + Int.random(in: 0..<(w.count - 1), using: &rng)) % w.count
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                let card: ProfileCard
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: card = ProfileCard(bio: "bio \(step)")
                case 1: card = ProfileCard(name: "name \(step)", bio: "both \(step)")
                case 2: card = ProfileCard(availability: "av \(step)")
                case 3: card = ProfileCard(photos: [photo])
                default: card = ProfileCard(photos: [])
                }
                out.append(try w[i].profile(card, at: tick()))
            case 5..<8:
                out.append(try w[i].like(k[other], liked: Bool.random(using: &rng), peerSeq: w[other].lastSeq, at: tick()))
            default:
                out.append(try w[i].chat(to: k[other], peerSeq: w[other].lastSeq, answers: nil, text: "m\(step)", at: tick()))
            }
        }
        // A match with an answered message, then an unmatch.
        let l0 = try w[0].like(k[1], peerSeq: w[1].lastSeq, at: tick())
        let l1 = try w[1].like(k[0], peerSeq: w[0].lastSeq, at: tick())
        out += [l0, l1]
        out.append(try w[0].chat(to: k[1], peerSeq: 1, answers: l1.id, mine: l0.id, text: "hi", at: tick()))
        out.append(try w[1].chat(to: k[0], peerSeq: 2, answers: l0.id, mine: l1.id, text: "hello", at: tick()))
        out.append(try w[2].unmatch(k[3], peerSeq: w[3].lastSeq, at: tick()))
        return out
    }

    /// What a user of the replica reads: every card and every pair view of every account.
    struct LiveState: Equatable {
        var cards: [CardState]
        var pairs: [PairView]
    }

    static func live(_ r: Replica) throws -> LiveState {
        let k = keys.map { $0.publicKey.key }
        var pairs: [PairView] = []
        for a in k { for o in k where o != a { pairs.append(try r.pairView(account: a, other: o)) } }
        return LiveState(cards: try r.cards(of: k), pairs: pairs)
    }

    static func replica(_ settings: Replica.Settings = testSettings()) throws -> Replica {
        try memoryReplica(unlocking: keys, settings: settings)
    }

    static func storedIDs(_ r: Replica) throws -> Set<[UInt8]> {
        Set(try ReconIndexTests.heldIDs(r))
    }

    // MARK: Out of order, compaction

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func outOfOrderEqualsInOrderAndCompactionKeepsTheLiveState(seed: UInt64) throws {
        let records = try Self.history(seed: seed)
        let inOrder = try Self.replica()
        _ = try inOrder.apply(verified: records.map { .success($0) })
        let full = try Self.replica(historySettings())
        _ = try full.apply(verified: records.map { .success($0) })
        // Shuffled, in random batches, with repeats.
        var rng = SeededRandom(seed: seed &* 31)
        var shuffled = records.shuffled(using: &rng)
        shuffled += records.prefix(5)
        let outOfOrder = try Self.replica()
        var rest = shuffled[...]
        while !rest.isEmpty {
            let n = Int.random(in: 1...7, using: &rng)
            _ = try outOfOrder.apply(verified: rest.prefix(n).map { .success($0) })
            rest = rest.dropFirst(n)
        }
        #expect(try outOfOrder.counts().pending == 0)
        #expect(try outOfOrder.digest() == inOrder.digest())
        #expect(try Self.storedIDs(outOfOrder) == Self.storedIDs(inOrder))
        try ReconIndexTests.expectTreeMatchesTables(outOfOrder)
        // Compacted and full replicas read the same, and the compacted one holds less.
        #expect(try Self.live(inOrder) == Self.live(full))
        #expect(try inOrder.counts().records < full.counts().records)
        for k in Self.keys.map(\.publicKey.key) {
            #expect(try inOrder.contiguousSeq(of: k) == full.contiguousSeq(of: k))
        }
        // What was dropped is exactly the card records (not seq 1) no card entry names.
        let dropped = try Self.storedIDs(full).subtracting(Self.storedIDs(inOrder))
        for v in records where dropped.contains(v.id) {
            #expect(v.record.type == .profile && v.record.seq > 1)
        }
        #expect(!dropped.isEmpty)
    }

    /// The node indexes its feed at start from `forEachCard` (one pass over the entries); it must
    /// read every card exactly as `cards(of:)` does, conflicts, photos and forks included.
    @Test(arguments: [UInt64(1), 2, 3])
    func everyCardInOnePassEqualsTheCardsReadOneByOne(seed: UInt64) throws {
        let r = try Self.replica()
        var rng = SeededRandom(seed: seed)
        var rest = try Self.history(seed: seed).shuffled(using: &rng)[...]
        while !rest.isEmpty {
            _ = try r.apply(verified: rest.prefix(9).map { .success($0) })
            rest = rest.dropFirst(9)
        }
        // One more account written on two devices that never saw each other's first card: a
        // fork, and concurrent values of the card's fields.
        let twins = keyPair(50)
        var one = RecordWriter(keys: twins), other = RecordWriter(keys: twins)
        _ = try r.apply(verified: [.success(try one.profile(ProfileCard(name: "One", bio: "first"), at: 5)),
                                   .success(try other.profile(ProfileCard(name: "Other", bio: "second"), at: 6))])
        var streamed: [CardState] = []
        try r.forEachCard { streamed.append($0) }
        let oneByOne = try r.cards(of: try r.knownAuthors())
        #expect(oneByOne.count == Self.keys.count + 1, "every account has a card")
        #expect(oneByOne.contains { !$0.conflicts.isEmpty && $0.forked }, "a forked card with concurrent values")
        #expect(streamed.sorted { $0.author < $1.author } == oneByOne.sorted { $0.author < $1.author })
    }

    @Test func theFirstCardStaysASupersededRecordOfferedAgainIsNotStoredAndADeletionKeepsPurging() throws {
        var w = RecordWriter(keys: Self.keys[0])
        let photo = PhotoRef(hash: [UInt8](repeating: 9, count: 32), size: 10, format: .jpeg)
        let first = try w.profile(ProfileCard(name: "Ana", bio: "one"), at: 1)
        let withPhoto = try w.profile(ProfileCard(bio: "two", photos: [photo]), at: 2)
        let removed = try w.profile(ProfileCard(bio: "three", photos: []), at: 3)
        let r = try Self.replica()
        #expect(try r.apply(verified: [first, withPhoto, removed].map { .success($0) }) == [.applied, .applied, .applied])
        // Seq 2 is superseded in both its fields; seq 1 keeps its name and its proof of work.
        #expect(try Self.storedIDs(r) == [first.id, removed.id])
        #expect(try r.card(of: w.author)?.card.photos == [])
        // Offered again (by a peer that still had it): verified, recognised, not stored.
        #expect(try r.applyOne(withPhoto) == .duplicate)
        #expect(try Self.storedIDs(r) == [first.id, removed.id])
        #expect(try r.reconRecords(ids: [withPhoto.id]).isEmpty)
        try ReconIndexTests.expectTreeMatchesTables(r)
        // A replica that gets the deleted photo after its deletion never stores or shows it.
        let late = try Self.replica()
        #expect(try late.apply(verified: [first, removed, withPhoto].map { .success($0) }) == [.applied, .applied, .duplicate])
        #expect(try late.card(of: w.author)?.card.photos == [])
        #expect(try late.digest() == r.digest())
        #expect(try late.contiguousSeq(of: w.author) == 3)
        // The first card, whatever supersedes it, stays.
        let rename = try w.profile(ProfileCard(name: "Ana B", role: .tutor, bio: "four"), at: 4)
        _ = try r.applyOne(rename)
        // Seq 3 keeps its photo removal (no later edit writes the photo field).
        #expect(try Self.storedIDs(r) == [first.id, removed.id, rename.id])
    }

    @Test func aForkIsFlaggedEvenWhenOneVariantWasSuperseded() throws {
        var w = RecordWriter(keys: Self.keys[1])
        let first = try w.profile(ProfileCard(name: "Ben"), at: 1)
        var lab = w
        let laptop = try w.profile(ProfileCard(bio: "laptop"), at: 2)
        let labEdit = try lab.profile(ProfileCard(bio: "lab"), at: 2)
        let later = try w.profile(ProfileCard(bio: "later"), at: 3)
        // Seq 2 (laptop) is dropped once seq 3 arrives; the lab variant of seq 2 comes after.
        let r = try Self.replica()
        _ = try r.apply(verified: [first, laptop, later].map { .success($0) })
        #expect(try Self.storedIDs(r) == [first.id, later.id])
        #expect(try r.card(of: w.author)?.forked == false)
        #expect(try r.applyOne(labEdit) == .forked)
        #expect(try r.card(of: w.author)?.forked == true)
        #expect(try r.evidence(of: w.author).contains(labEdit.encoded))
        // Superseded on arrival itself: not stored, and offered again it is a duplicate.
        #expect(try Self.storedIDs(r) == [first.id, later.id])
        #expect(try r.applyOne(labEdit) == .duplicate)
        // And the other order: both variants before the edit that supersedes them.
        let other = try Self.replica()
        _ = try other.apply(verified: [first, laptop, labEdit, later].map { .success($0) })
        #expect(try other.card(of: w.author)?.forked == true)
        #expect(try other.digest() == r.digest())
    }

    /// Three variants of one seq (at most 2 are kept, the lowest IDs), some superseded by a
    /// later edit: every arrival order keeps the same records, so a superseded variant keeps
    /// its place among the variants.
    @Test func whichVariantsAreKeptDoesNotDependOnWhenTheyWereSuperseded() throws {
        var w = RecordWriter(keys: Self.keys[2])
        let first = try w.profile(ProfileCard(name: "Cy"), at: 1)
        var variants: [VerifiedRecord] = []
        for card in [ProfileCard(bio: "one"), ProfileCard(availability: "two"), ProfileCard(bio: "three"), ProfileCard(availability: "four")] {
            var fork = w
            variants.append(try fork.profile(card, at: 2))
        }
        _ = try w.profile(ProfileCard(bio: "placeholder"), at: 2)
        let later = try w.profile(ProfileCard(bio: "later"), at: 3)
        let all = variants + [later]
        var results: Set<Set<[UInt8]>> = []
        var rng = SeededRandom(seed: 3)
        for _ in 0..<24 {
            let r = try Self.replica()
            _ = try r.applyOne(first)
            for v in all.shuffled(using: &rng) { _ = try r.applyOne(v) }
            results.insert(try Self.storedIDs(r))
            #expect(try r.card(of: w.author)?.forked == true)
        }
        #expect(results.count == 1, "\(results.count) different stored sets")
    }

    // MARK: Two replicas reconcile to the compacted set

    /// One reconciliation round between two replicas with the `Reconciler`, records moving
    /// both ways by ID and by subtree, until neither side asks for anything.
    static func reconcile(_ a: Replica, _ b: Replica) throws {
        let reconciler = Reconciler(hashing: ReconHash.hashing(mine: [1], theirs: [2]))
        let sides = [a, b]
        var items = try a.withReconView { try reconciler.opening($0) }
        var turn = 1
        var rounds = 0
        while !items.isEmpty, rounds < 64 {
            rounds += 1
            let me = sides[turn], peer = sides[1 - turn]
            let step = try me.withReconView { try reconciler.respond(to: items, in: $0) }
            let send = try me.records(sentBy: step)
            if !send.isEmpty {
                let outcomes = try peer.apply(batch: send)
                #expect(!outcomes.contains { if case .refused = $0 { true } else { false } })
            }
            items = step.reply
            turn = 1 - turn
        }
    }

    @Test func twoReplicasCompactingIndependentlyReconcileToEqualSets() throws {
        let records = try Self.history(seed: 99)
        var rng = SeededRandom(seed: 7)
        // Each side gets a different part, in its own order, and compacts what it has.
        var a: [VerifiedRecord] = [], b: [VerifiedRecord] = []
        for r in records {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: a.append(r)
            case 1: b.append(r)
            default: a.append(r); b.append(r)
            }
        }
        let x = try Self.replica(), y = try Self.replica()
        _ = try x.apply(verified: a.shuffled(using: &rng).map { .success($0) })
        _ = try y.apply(verified: b.shuffled(using: &rng).map { .success($0) })
        for _ in 0..<3 { try Self.reconcile(x, y) }
        let reference = try Self.replica()
        _ = try reference.apply(verified: records.map { .success($0) })
        #expect(try Self.storedIDs(x) == Self.storedIDs(reference))
        #expect(try Self.storedIDs(y) == Self.storedIDs(reference))
        #expect(try x.withReconView { try $0.node(depth: 0, prefix: 0) } == y.withReconView { try $0.node(depth: 0, prefix: 0) })
        #expect(try x.digest() == reference.digest() && y.digest() == reference.digest())
    }

    // MARK: Held records' lifetime

    @Test func recordsWaitingForTheirAuthorsFirstRecordExpireAfterTheirLifetime() throws {
        let now = Box(testNow)
        var settings = testSettings()
        settings.now = { [now] in now.value }
        settings.maxPendingAge = 60_000
        let r = try memoryReplica(settings: settings)
        var w = RecordWriter(keys: Self.keys[2])
        let first = try w.profile(ProfileCard(name: "Cy"), at: 1)
        let second = try w.like(Self.keys[3].publicKey.key, at: 2)
        let third = try w.profile(ProfileCard(bio: "three"), at: 3)
        #expect(try r.apply(batch: [second.encoded]) == [.held])
        #expect(try r.reconSetSize() == 1)
        now.value = testNow + 30_000
        #expect(try r.apply(batch: [third.encoded]) == [.held])
        // The first is past its minute at the next batch; the second is not.
        now.value = testNow + 60_001
        _ = try r.apply(batch: [])
        _ = try r.releaseDue()
        #expect(try r.counts().pending == 1 && r.reconSetSize() == 1)
        try ReconIndexTests.expectTreeMatchesTables(r)
        // Seq 1 releases what is still held; the expired one is offered again and applies.
        #expect(try r.apply(batch: [first.encoded, second.encoded]) == [.applied, .applied])
        #expect(try r.counts().pending == 0 && r.contiguousSeq(of: w.author) == 3)
        try ReconIndexTests.expectTreeMatchesTables(r)
    }

    @Test func recordsHeldUntilDueDatedBeyondTheHoldBoundAfterTheClockWentBackAreDropped() throws {
        let now = Box(testNow)
        var settings = testSettings()
        settings.now = { [now] in now.value }
        let r = try memoryReplica(settings: settings)
        var w = RecordWriter(keys: Self.keys[3])
        _ = try r.applyOne(try w.profile(ProfileCard(name: "Dee"), at: 1))
        #expect(try r.applyOne(try w.profile(ProfileCard(bio: "ahead"), at: testNow + 3_600_000)) == .heldUntilDue)
        // The node's clock is set back two days: the record is now 49 h ahead, past the 24 h a
        // record may be held, so it goes (the peers offer it again when it is due).
        now.value = testNow - 48 * 3_600_000
        #expect(try r.releaseDue().isEmpty)
        #expect(try r.counts().heldUntilDue == 0)
    }

    // MARK: Migration 9

    @Test func migrationNineCompactsASchemaEightReplicaInPlace() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let records = try Self.history(seed: 5)
        var gapWriter = RecordWriter(keys: keyPair(120))
        let gapFirst = try gapWriter.profile(ProfileCard(name: "gap"), at: 1)
        _ = try gapWriter.profile(ProfileCard(bio: "missing"), at: 2)
        let gapThird = try gapWriter.profile(ProfileCard(availability: "after the gap"), at: 3)
        do {
            // What a schema-8 build held: every record, and seq 3 of one author behind a gap.
            let full = try Replica(path: path, settings: historySettings())
            _ = try full.apply(verified: (records + [gapFirst]).map { .success($0) })
            try full.close()
            let db = try Database(path: path)
            try db.executeScript(undoMigration10 + """
                DROP TABLE superseded; DROP INDEX pending_by_arrival; ALTER TABLE pending DROP COLUMN arrived;
                PRAGMA user_version = 8;
                """)
            let author = try #require(try db.queryOne("SELECT id FROM authors WHERE key = ?", [.blob(gapWriter.author.bytes)])?.int64(0))
            try db.execute("INSERT INTO pending(author, seq, id, bytes) VALUES (?, 3, ?, ?)",
                           [.integer(author), .blob(gapThird.id), .blob(gapThird.encoded)])
            try db.close()
        }
        let upgraded = try Replica(path: path, settings: testSettings())
        #expect(try upgraded.read { db throws(StoreError) in try ReplicaSchema.migrator.currentVersion(db) } == ReplicaSchema.migrator.latestVersion)
        let fresh = try Self.replica()
        _ = try fresh.apply(verified: (records + [gapFirst, gapThird]).map { .success($0) })
        #expect(try Self.storedIDs(upgraded) == Self.storedIDs(fresh))
        #expect(try upgraded.counts().pending == 0)
        try ReconIndexTests.expectTreeMatchesTables(upgraded)
        #expect(try upgraded.withReconView { try $0.node(depth: 0, prefix: 0) } == fresh.withReconView { try $0.node(depth: 0, prefix: 0) })
        #expect(try upgraded.digest(includePrivate: false) == fresh.digest(includePrivate: false))
        #expect(try upgraded.integrityCheck() == ["ok"])
        try upgraded.close()
    }
}
