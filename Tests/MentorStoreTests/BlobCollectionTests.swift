import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Issue 11 item 5: blobs no current card names are deleted; an upload waits an hour for its card.
@Suite struct BlobCollectionTests {
    private func png(_ tag: UInt8, size: Int = 1000) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: size - 8)
    }

    @Test func aReplacedPhotoIsCollectedAndAFreshUploadWaitsForItsCard() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: keyPair(1))
        let first = try replica.putBlob(png(1))
        let second = try replica.putBlob(png(2), uploadedAt: 10_000)   // a local upload, no card names it yet
        _ = try replica.putBlob(png(3, size: 2000))                     // fetched, never named: garbage
        #expect(try replica.applyOne(try w.profile(ProfileCard(name: "Ana", photos: [first]), at: 1000)) == .applied)
        #expect(try replica.isNamedPhoto(hash: first.hash) && !(try replica.isNamedPhoto(hash: second.hash)))
        let gone = try replica.collectBlobs(now: 20_000)
        #expect(gone.blobs == 1 && gone.bytes == 2000, "only the unnamed fetched blob goes: \(gone)")
        #expect(try replica.blobUsage().blobs == 2)
        // Ana's card moves to the upload: the first photo goes at once, the second stays.
        #expect(try replica.applyOne(try w.profile(ProfileCard(photos: [second]), at: 2000)) == .applied)
        try replica.collectBlobs(now: 30_000)
        #expect(try replica.blob(hash: first.hash) == nil && replica.blob(hash: second.hash) != nil)
        // A photo removed from the card is collected; an upload nobody names, after the grace.
        #expect(try replica.applyOne(try w.profile(ProfileCard(photos: []), at: 3000)) == .applied)
        let orphan = try replica.putBlob(png(4), uploadedAt: 40_000)
        try replica.collectBlobs(now: 40_000 + 3_599_999)
        #expect(try replica.blob(hash: second.hash) == nil && replica.blob(hash: orphan.hash) != nil)
        try replica.collectBlobs(now: 40_000 + 3_600_001)
        #expect(try replica.blobUsage().blobs == 0)
    }

    /// The photos current cards name and the replica lacks, found by decoding every card's
    /// photo entry (every position of its list), as a set of hash ‖ author: the reference the
    /// triggers' tables must equal.
    private func missingByScan(_ replica: Replica) throws -> Set<[UInt8]> {
        try replica.read { db throws(StoreError) in
            var out = Set<[UInt8]>()
            for row in try db.query("SELECT c.value, a.key FROM card_entries c JOIN authors a ON a.id = c.author WHERE c.field = 8") {
                guard let value = row.blob(0), let author = row.blob(1), let list = try? PhotoRef.decodeList(value) else { continue }
                for ref in list where try db.queryOne("SELECT 1 FROM blobs WHERE hash = ?", [.blob(ref.hash)]) == nil {
                    out.insert(ref.hash + author)
                }
            }
            return out
        }
    }

    private func missingListed(_ replica: Replica) throws -> (set: Set<[UInt8]>, sizes: [UInt32]) {
        let listed = try replica.missingPhotos(limit: 10_000)
        return (Set(listed.map { $0.ref.hash + $0.author.bytes }), listed.map(\.ref.size))
    }

    /// Migration 11's triggers keep `photos_missing` equal to a scan of the cards through card
    /// edits, a photo removed, concurrent values (two devices), compaction, photos fetched and
    /// collected — and the listing reads that table, smallest first, not the cards.
    @Test(arguments: [UInt64(1), 2, 3])
    func missingPhotosFollowCardsAndBlobsAsAScanWouldFindThem(seed: UInt64) throws {
        let replica = try memoryReplica()
        var rng = SeededRandom(seed: seed)
        let held = try (0..<3).map { try replica.putBlob(png(UInt8(10 + $0), size: 1000 + 500 * $0)) }
        // Photos the replica does not hold yet; each may be fetched (stored) during the run.
        let scratch = try memoryReplica()
        var fetchable: [(data: [UInt8], ref: PhotoRef)] = []
        var absent: [PhotoRef] = []
        for i in 0..<3 {
            let data = png(UInt8(0x40 + i), size: 800 + 400 * i)
            fetchable.append((data, try scratch.putBlob(data)))
            let hash = [UInt8](repeating: UInt8(0xA0 + i), count: 32)
            absent.append(PhotoRef(hash: hash, size: UInt32(700 + 300 * i), format: held[0].format))
        }
        let photos: [PhotoRef] = held + fetchable.map { $0.ref } + absent
        let keys = (0..<4).map { keyPair(UInt8(20 + $0)) }
        var writers = keys.map { RecordWriter(keys: $0) }
        var twin = RecordWriter(keys: keys[0])   // a second device of account 0: concurrent values
        var t: UInt64 = 1000
        var changes = 0
        for step in 0..<80 {
            t += 1
            // No photo, one, or a list of up to three (each photo once).
            let count = Int.random(in: 0..<8, using: &rng) == 0 ? 0 : Int.random(in: 1...3, using: &rng)
            let list = Array(photos.shuffled(using: &rng).prefix(count))
            let before = try missingByScan(replica)
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:
                _ = try replica.applyOne(try twin.profile(ProfileCard(name: "twin \(step)", photos: list), at: t))
            case 1:
                _ = try replica.putBlob(fetchable[Int.random(in: 0..<fetchable.count, using: &rng)].data)   // fetched
            case 2:
                try replica.collectBlobs(now: t)   // unnamed photos go (and are missing if named again)
            default:
                let i = Int.random(in: 0..<keys.count, using: &rng)
                _ = try replica.applyOne(try writers[i].profile(ProfileCard(name: "n\(step)", photos: list), at: t))
            }
            let listed = try missingListed(replica)
            let scanned = try missingByScan(replica)
            if scanned != before { changes += 1 }
            #expect(listed.set == scanned, "step \(step)")
            #expect(listed.sizes == listed.sizes.sorted(), "smallest first")
        }
        #expect(changes > 10, "the run changes what is missing many times (\(changes))")
        let plan = try replica.missingPhotosQueryPlan()
        #expect(!plan.contains { $0.contains("card_entries") || $0.contains("TEMP B-TREE") }, "the listing reads photos_missing in its order: \(plan)")
    }

    @Test func migrationElevenListsThePhotosAReplicaAlreadyMissed() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        do {
            let replica = try Replica(path: path, settings: testSettings())
            var w = RecordWriter(keys: keyPair(30))
            let heldPhoto = try replica.putBlob(png(7))
            let absent = PhotoRef(hash: [UInt8](repeating: 0xEE, count: 32), size: 1234, format: heldPhoto.format)
            _ = try replica.applyOne(try w.profile(ProfileCard(name: "Eve", photos: [absent]), at: 1000))
            var v = RecordWriter(keys: keyPair(31))
            _ = try replica.applyOne(try v.profile(ProfileCard(name: "Val", photos: [heldPhoto]), at: 1000))
            try replica.run { db throws(StoreError) in
                try db.executeScript(undoMigration11 + "PRAGMA user_version = 10;")
            }
            try replica.close()
        }
        let reopened = try Replica(path: path, settings: testSettings())
        let missing = try reopened.missingPhotos()
        #expect(missing.count == 1 && missing.first?.ref.size == 1234 && missing.first?.author == keyPair(30).publicKey.key)
        #expect(try missingListed(reopened).set == missingByScan(reopened))
    }

    @Test func authorUsageCountsRecordsAndTheirNamedPhotos() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: keyPair(2))
        let photo = try replica.putBlob(png(5, size: 5000))
        let card = try w.profile(ProfileCard(name: "Ben", photos: [photo]), at: 1000)
        #expect(try replica.applyOne(card) == .applied)
        #expect(try replica.authorUsage(w.author) == Int64(card.encoded.count) + 5000)
        #expect(try replica.authorUsage(keyPair(3).publicKey.key) == 0)
        let missing = try replica.missingPhotos()
        #expect(missing.isEmpty)
    }

    @Test func authorUsagesReadsManyAuthorsAtOnceAndTellsAnUnknownOneApart() throws {
        let replica = try memoryReplica()
        var ana = RecordWriter(keys: keyPair(2)), ben = RecordWriter(keys: keyPair(4))
        let photo = try replica.putBlob(png(5, size: 5000))
        let anaCard = try ana.profile(ProfileCard(name: "Ana", photos: [photo]), at: 1000)
        let benCard = try ben.profile(ProfileCard(name: "Ben"), at: 1000)
        let benEdit = try ben.profile(ProfileCard(bio: "Calculus"), at: 2000)
        for r in [anaCard, benCard, benEdit] { #expect(try replica.applyOne(r) == .applied) }
        let stranger = keyPair(3).publicKey.key
        let usages = try replica.authorUsages([ana.author, ben.author, stranger, ana.author])
        #expect(usages.count == 3)
        #expect(usages[ana.author] == .some(AuthorUsage(bytes: Int64(anaCard.encoded.count) + 5000)))
        #expect(usages[ben.author] == .some(AuthorUsage(bytes: Int64(benCard.encoded.count + benEdit.encoded.count))))
        #expect(usages[stranger] == .some(nil), "held nothing of: nil, not 0 bytes")
        for author in [ana.author, ben.author] {
            #expect(try replica.authorUsage(author) == usages[author]??.bytes, "one read agrees with the single look-up")
        }
        #expect(try replica.authorUsages([PublicKey]()).isEmpty)
    }
}
