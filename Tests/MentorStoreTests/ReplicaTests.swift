import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

@Suite struct ReplicaTests {
    let ana = keyPair(1), ben = keyPair(2), cy = keyPair(3)

    @Test func cardRecordsMaterializeAndDuplicatesChangeNothing() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: ana)
        let r1 = try w.profile(ProfileCard(name: "Ana", role: .student, courses: ["CS 490"]), at: 1000)
        let r2 = try w.profile(ProfileCard(bio: "Loves graphs"), at: 2000)
        #expect(try replica.applyOne(r1) == .applied)
        #expect(try replica.applyOne(r2) == .applied)
        let digest = try replica.digest()
        #expect(try replica.applyOne(r1) == .duplicate)
        #expect(try replica.apply(batch: [r2.encoded, r2.encoded]) == [.duplicate, .duplicate])
        #expect(try replica.digest() == digest)
        let card = try #require(try replica.card(of: w.author))
        #expect(card.card.name == "Ana" && card.card.bio == "Loves graphs" && card.card.courses == ["CS 490"])
        #expect(card.conflicts.isEmpty && !card.forked)
        #expect(try replica.versionVector() == [w.author: 2])
    }

    @Test func laterEditOverwritesEarlierWhateverTheArrivalOrder() throws {
        var w = RecordWriter(keys: ana)
        let old = try w.profile(ProfileCard(name: "Ana"), at: 5000)      // newer timestamp, older seq
        let new = try w.profile(ProfileCard(name: "Ana B."), at: 1000)
        let a = try memoryReplica(), b = try memoryReplica()
        _ = try a.apply(batch: [old.encoded, new.encoded])
        _ = try b.apply(batch: [new.encoded, old.encoded])
        #expect(try a.card(of: w.author)?.card.name == "Ana B.")
        #expect(try b.card(of: w.author)?.card.name == "Ana B.")
        #expect(try a.digest() == b.digest())
    }

    @Test func recordAheadOfItsPredecessorsIsHeldUntilTheGapFills() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: ana)
        let r = try (1...3).map { i in try w.profile(ProfileCard(bio: "v\(i)"), at: UInt64(i)) }
        #expect(try replica.applyOne(r[2]) == .held)
        #expect(try replica.applyOne(r[1]) == .held)
        #expect(try replica.card(of: w.author) == nil)
        #expect(try replica.counts().pending == 2)
        #expect(try replica.applyOne(r[2]) == .duplicate)
        #expect(try replica.applyOne(r[0]) == .applied)
        #expect(try replica.counts().pending == 0)
        #expect(try replica.versionVector()[w.author] == 3)
        #expect(try replica.card(of: w.author)?.card.bio == "v3")
    }

    @Test func applyReportingListsHeldRecordsThatABatchReleased() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: ana)
        let r = try (1...3).map { i in try w.profile(ProfileCard(bio: "v\(i)"), at: UInt64(i)) }
        let held = try replica.applyReporting(batch: [r[2].encoded, r[1].encoded])
        #expect(held.outcomes == [.held, .held] && held.stored.isEmpty)
        let released = try replica.applyReporting(batch: [r[0].encoded])
        #expect(released.outcomes == [.applied])
        // Seq 2 was stored on release and superseded by seq 3 (the same field) in the same
        // batch: it is no longer held, so it is not reported either.
        #expect(released.stored.map(\.record.seq) == [1, 3])
    }

    /// Every refusal stores nothing and leaves the digest unchanged.
    @Test func everyRefusalStoresNothingAndLeavesTheDigestUnchanged() throws {
        var settings = testSettings()
        settings.maxPending = 1
        settings.maxSequenceGap = 10
        let replica = try memoryReplica(unlocking: [ben], settings: settings)
        var w = RecordWriter(keys: ana)
        _ = try replica.applyOne(try w.profile(ProfileCard(name: "Ana"), at: 1))
        // Fill the hold-back area with one record: seq 3 of an author whose seq 1 is not held.
        #expect(try replica.apply(signed(cy, type: 1, seq: 3, body: ProfileCard(bio: "3").body)) == .held)
        let before = try replica.digest(), countsBefore = try replica.counts()

        func refusal(_ bytes: [UInt8]) throws -> RecordError.Code? {
            if case .refused(let e) = try replica.apply(bytes) { return e.code }
            return nil
        }
        var next = w
        let good = try next.profile(ProfileCard(bio: "two"), at: 10)

        var flipped = good.encoded; flipped[flipped.count - 1] ^= 1
        #expect(try refusal(flipped) == .badSignature)
        var altered = good.encoded; altered[Record.fixedOverhead - 64 - 4 + 2] ^= 1   // a byte of the body
        #expect(try refusal(altered) == .badSignature || refusal(altered) == .malformed)
        #expect(try refusal(signed(ana, type: 99, seq: 2, body: good.record.body)) == .unknownType)
        var version = good.encoded; version[3] = 9
        #expect(try refusal(version) == .unsupportedVersion)
        #expect(try refusal(Array(good.encoded.prefix(50))) == .malformed)
        #expect(try refusal(Array("garbage".utf8)) == .malformed)
        let hugeBody = ProfileCard(bio: String(repeating: "x", count: 2000)).body + [UInt8](repeating: 0, count: 15000)
        #expect(try refusal(signed(ana, type: 1, seq: 2, body: hugeBody)) == .bodyTooLarge)
        #expect(try refusal(signed(cy, type: 1, seq: 100, body: good.record.body)) == .sequenceGapTooLarge)
        #expect(try refusal(signed(ana, type: 1, seq: 1 << 63, body: good.record.body)) == .malformed)
        #expect(try refusal(signed(cy, type: 1, seq: 5, body: good.record.body)) == .pendingFull)
        // Past the 24 h a record is held until due (one 1 h ahead is held: HeldUntilDueTests).
        #expect(try refusal(signed(ana, type: 1, seq: 2, body: good.record.body, timestamp: testNow + 25 * 3_600_000)) == .timestampInFuture)

        #expect(try replica.digest() == before)
        #expect(try replica.counts() == countsBefore)
        // The good record still applies after all that.
        #expect(try replica.applyOne(good) == .applied)
    }

    @Test func aRefusedRecordFromAnUnknownAuthorLeavesNoTrace() throws {
        let replica = try memoryReplica()
        let before = try replica.digest()
        var w = RecordWriter(keys: cy)
        let first = try w.profile(ProfileCard(name: "Cy"), at: 1)
        let far = try signed(cy, type: 1, seq: Limits.maxSequenceGap + 5, body: first.record.body)
        guard case .refused(let e) = try replica.apply(far) else { Issue.record("a far-ahead record was accepted"); return }
        #expect(e.code == .sequenceGapTooLarge)
        #expect(try replica.counts().authors == 0)
        #expect(try replica.knownAuthors().isEmpty)
        #expect(try replica.digest() == before)
        #expect(try replica.applyOne(first) == .applied)
        #expect(try replica.counts().authors == 1)
    }

    @Test func aThirdVariantOfOneSeqIsRefusedAsEquivocationWithEvidenceKept() throws {
        let replica = try memoryReplica()
        let variants = try (0..<6).map { i in try signed(ana, type: 1, seq: 1, body: ProfileCard(bio: "fork \(i)").body) }
            .sorted { VerifiedRecord.id(of: $0).lexicographicallyPrecedes(VerifiedRecord.id(of: $1)) }
        // Arrive lowest-ID first: the third and later (higher IDs) are refused.
        #expect(try replica.apply(variants[0]) == .applied)
        #expect(try replica.apply(variants[1]) == .forked)
        let digest = try replica.digest()
        for v in variants[2...] {
            guard case .refused(let e) = try replica.apply(v) else { Issue.record("variant accepted"); continue }
            #expect(e.code == .equivocation)
        }
        #expect(try replica.digest() == digest)
        #expect(try replica.evidence(of: ana.publicKey.key).count == 6)
        #expect(try replica.counts().records == 2)
    }

    @Test func forkedWritesAreConcurrentTheLoserStaysVisibleUntilOverwritten() throws {
        // The same account used on two nodes: both write seq 2.
        var laptop = RecordWriter(keys: ana)
        let base = try laptop.profile(ProfileCard(name: "Ana", bio: "base"), at: 100)
        var lab = laptop
        let fromLaptop = try laptop.profile(ProfileCard(bio: "from laptop"), at: 200)
        let fromLab = try lab.profile(ProfileCard(bio: "from lab"), at: 300)
        let x = try memoryReplica(), y = try memoryReplica()
        #expect(try x.apply(batch: [base.encoded, fromLaptop.encoded, fromLab.encoded]) == [.applied, .applied, .forked])
        #expect(try y.apply(batch: [fromLab.encoded, base.encoded, fromLaptop.encoded]) == [.held, .applied, .forked])
        #expect(try x.digest() == y.digest())
        let card = try #require(try x.card(of: ana.publicKey.key))
        #expect(card.forked)
        #expect(card.card.bio == "from lab")                                  // later timestamp wins the tie
        #expect(card.conflicts[.bio] == [Array("from laptop".utf8)])          // the loser stays visible
        #expect(card.card.name == "Ana")                                      // untouched field
        // A later edit (from either node) dominates both and clears the conflict.
        let resolve = try laptop.profile(ProfileCard(bio: "resolved"), at: 150)
        _ = try x.applyOne(resolve)
        let after = try #require(try x.card(of: ana.publicKey.key))
        #expect(after.card.bio == "resolved" && after.conflicts.isEmpty)
    }

    @Test func likesMatchAndChatOnlyTheTwoAccountsCanRead() throws {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let anaLike = try a.like(b.author, at: 2), benLike = try b.like(a.author, at: 3)
        let pool = [
            try a.profile(ProfileCard(name: "Ana", role: .student, courses: ["CS 490"]), at: 1),
            try b.profile(ProfileCard(name: "Ben", role: .tutor, courses: ["CS 490"]), at: 1),
            anaLike,
            benLike,
            try a.chat(to: b.author, peerSeq: 1, answers: benLike.id, mine: anaLike.id, text: "secret study plan", at: 4),
            try b.chat(to: a.author, peerSeq: 2, answers: anaLike.id, mine: benLike.id, text: "see you at noon", at: 5),
        ].sorted { ($0.record.author, $0.record.seq) < ($1.record.author, $1.record.seq) }
        let anaNode = try memoryReplica(unlocking: [ana])
        let benNode = try memoryReplica(unlocking: [ben])
        let relay = try memoryReplica(unlocking: [cy])
        for node in [anaNode, benNode, relay] {
            #expect(try node.apply(batch: pool.map(\.encoded)).allSatisfy { $0 == .applied })
        }
        let forAna = try anaNode.pairView(account: a.author, other: b.author)
        let forBen = try benNode.pairView(account: b.author, other: a.author)
        #expect(forAna.matched && forBen.matched)
        #expect(forAna.messages.map(\.text) == ["secret study plan", "see you at noon"])
        #expect(forBen.messages.map(\.text) == forAna.messages.map(\.text))
        // The relay holds the same records but learns nothing of the pair.
        let relayView = try relay.pairView(account: cy.publicKey.key, other: a.author)
        #expect(!relayView.matched && relayView.messages.isEmpty)
        #expect(try relay.digest(includePrivate: false) == anaNode.digest(includePrivate: false))
        // Nothing in any record reveals the text or who was liked.
        for v in pool {
            #expect(!contains(v.encoded, Array("secret study plan".utf8)))
            #expect(!contains(v.encoded, b.author.bytes) || v.record.author == b.author)
        }
    }

    /// The apply that writes a pair's row reports what changed in it — the one decision the
    /// node's `event.match`/`event.unmatch`/`event.message` are read from.
    @Test func eachApplyReportsThePairsItChangedOnceAsTheRowChanged() throws {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let anaNode = try memoryReplica(unlocking: [ana])
        let cards = try anaNode.applyReporting(batch: [try a.profile(ProfileCard(name: "Ana", role: .student), at: 1),
                                                       try b.profile(ProfileCard(name: "Ben", role: .tutor), at: 1)].map(\.encoded))
        #expect(cards.pairs.isEmpty)
        let anaLike = try a.like(b.author, at: 2)
        let liked = try anaNode.applyReporting(batch: [anaLike.encoded])
        #expect(liked.pairs.count == 1 && liked.pairs[0].before == nil && liked.pairs[0].after.iLike)
        #expect(!liked.pairs[0].becameMatched)
        let benLike = try b.like(a.author, at: 3)
        let matched = try anaNode.applyReporting(batch: [benLike.encoded])
        #expect(matched.pairs.map(\.account) == [a.author] && matched.pairs[0].becameMatched)
        #expect(matched.pairs[0].after.other == b.author && matched.pairs[0].newMessages == 0)
        // The same record again changes nothing, so nothing is reported.
        #expect(try anaNode.applyReporting(batch: [benLike.encoded]).pairs.isEmpty)
        let chat = try anaNode.applyReporting(batch: [try b.chat(to: a.author, peerSeq: 1, answers: anaLike.id, mine: benLike.id, text: "noon?", at: 4).encoded])
        #expect(chat.pairs.count == 1 && chat.pairs[0].newMessages == 1 && !chat.pairs[0].becameMatched)
        let unmatch = try anaNode.applyReporting(batch: [try b.unmatch(a.author, peerSeq: 2, at: 5).encoded])
        #expect(unmatch.pairs.count == 1 && unmatch.pairs[0].unmatchedBy == b.author && !unmatch.pairs[0].after.matched)
        // A node with no local account in the pair decides nothing about it.
        let relay = try memoryReplica()
        #expect(try relay.applyReporting(batch: [anaLike.encoded, benLike.encoded]).pairs.isEmpty)
    }

    @Test func unlockingLaterMaterializesRecordsAlreadyHeld() throws {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let node = try memoryReplica()
        _ = try node.apply(batch: [try a.like(b.author, at: 1), try b.like(a.author, at: 2)].map(\.encoded))
        #expect(try !node.pairView(account: a.author, other: b.author).matched)
        try node.unlock(ana)
        #expect(try node.pairView(account: a.author, other: b.author).matched)
    }

    @Test func sealedRecordsArrivingWhileLockedAreOpenedAtTheNextUnlock() throws {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let node = try memoryReplica(unlocking: [ana])
        _ = try node.applyOne(try a.like(b.author, at: 1))
        try node.lock(a.author)
        _ = try node.applyOne(try b.like(a.author, at: 2))
        #expect(try !node.pairView(account: a.author, other: b.author).matched)
        let waiting = try node.read { db throws(StoreError) in try db.queryOne("SELECT count(*) FROM unopened")?.int(0) }
        #expect(waiting == 1)
        try node.unlock(ana)
        #expect(try node.pairView(account: a.author, other: b.author).matched)
        let left = try node.read { db throws(StoreError) in try db.queryOne("SELECT count(*) FROM unopened")?.int(0) }
        #expect(left == 0)
    }

    /// Schema 4 (chats name the like they answer): the decrypted pair entries and pair summaries
    /// a replica of schema 3 holds were decoded by an older build, so they are dropped and every
    /// sealed record is opened again at the next unlock. A stale summary that counted a message
    /// the new rule refuses does not survive; the views are those the records give.
    @Test func upgradingFromSchema3RebuildsThePairViewsFromTheRecords() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let anaLike = try a.like(b.author, at: 1), benLike = try b.like(a.author, peerSeq: 1, at: 2)
        let records = [anaLike, benLike,
                       try b.chat(to: a.author, peerSeq: 1 << 40, answers: nil, text: "old payload, no answered like", at: 3),
                       try a.chat(to: b.author, peerSeq: 2, answers: benLike.id, mine: anaLike.id, text: "answers Ben's like", at: 4)]
        let replica = try Replica(path: path, settings: testSettings())
        try replica.unlock(ana)
        for r in records { #expect(try replica.applyOne(r) == .applied) }
        #expect(try replica.pairSummary(account: a.author, other: b.author)?.messages == 1)
        try replica.close()
        // What a schema-3 replica of an older build holds: no answered-like column, and a
        // summary that counted both messages.
        let db = try Database(path: path)
        try db.executeScript(undoMigration10 + """
            UPDATE pairs SET messages = 2;
            ALTER TABLE pair_entries DROP COLUMN answers;
            DROP TABLE held_until_due;
            ALTER TABLE blobs DROP COLUMN uploaded;
            DROP INDEX card_entries_photo;
            DROP TABLE recon_nodes;
            DROP INDEX records_by_id;
            DROP INDEX pending_by_id;
            DROP TABLE superseded;
            DROP INDEX pending_by_arrival;
            ALTER TABLE pending DROP COLUMN arrived;
            PRAGMA user_version = 3;
            """)
        try db.close()

        let upgraded = try Replica(path: path, settings: testSettings())
        #expect(try upgraded.pairSummaries(of: a.author).isEmpty, "stale summaries must not be served before the rebuild")
        try upgraded.unlock(ana)
        let summary = try upgraded.pairSummary(account: a.author, other: b.author)
        #expect(summary?.matched == true && summary?.messages == 1)
        let view = try upgraded.pairView(account: a.author, other: b.author)
        #expect(view.messages.map(\.text) == ["answers Ben's like"] && view.rejectedMessages == 1)
        try upgraded.close()
    }

    @Test func stateSurvivesCloseAndReopenAndSchemaIsVersioned() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        var w = RecordWriter(keys: ana)
        var replica: Replica? = try Replica(path: path, settings: testSettings())
        _ = try replica?.applyOne(try w.profile(ProfileCard(name: "Ana"), at: 1))
        let digest = try replica?.digest()
        try replica?.close()
        replica = nil
        let reopened = try Replica(path: path, settings: testSettings())
        #expect(try reopened.digest() == digest)
        #expect(try reopened.integrityCheck() == ["ok"])
        try reopened.close()
        // A database from a newer MentorMate is refused, not modified.
        let db = try Database(path: path)
        try db.execute("PRAGMA user_version = 99")
        try db.close()
        #expect(throws: StoreError.self) { try Replica(path: path, settings: testSettings()) }
    }
}

/// Signs arbitrary (possibly invalid) envelopes, bypassing RecordWriter's checks.
func signed(_ keys: SigningKeyPair, type: UInt8, seq: UInt64, body: [UInt8], timestamp: UInt64 = 1) throws -> [UInt8] {
    let message = Record.signedBytes(type: RecordType(rawValue: type), author: keys.publicKey.key, seq: seq,
                                     timestamp: timestamp, clock: VectorClock(), body: body)
    return message + keys.signature(for: message)
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if Array(haystack[i..<i + needle.count]) == needle { return true }
    }
    return false
}
