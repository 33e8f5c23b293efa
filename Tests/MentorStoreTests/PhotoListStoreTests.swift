import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Cards name up to six photos (field 8 is a list): every photo of every current card entry is
/// named (`card_photos`, migration 16) — kept while any card names it, fetched when missing,
/// counted in its author's usage — and collected once no card's current value names it.
@Suite struct PhotoListStoreTests {
    private func png(_ tag: UInt8, size: Int = 1000) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: size - 8)
    }

    @Test func aBlobStaysWhileAnyCardNamesItAtAnyPositionAndGoesAfter() throws {
        let replica = try memoryReplica()
        var ana = RecordWriter(keys: keyPair(1)), ben = RecordWriter(keys: keyPair(2))
        let p1 = try replica.putBlob(png(1)), p2 = try replica.putBlob(png(2)), p3 = try replica.putBlob(png(3))
        #expect(try replica.applyOne(try ana.profile(ProfileCard(name: "Ana", photos: [p1, p2, p3]), at: 1000)) == .applied)
        #expect(try replica.applyOne(try ben.profile(ProfileCard(name: "Ben", photos: [p3]), at: 1000)) == .applied)
        for p in [p1, p2, p3] { #expect(try replica.isNamedPhoto(hash: p.hash)) }
        #expect(try replica.collectBlobs(now: 5000).blobs == 0, "every position is named, not only the first")

        // Ana drops her second photo and reorders: only that one goes.
        #expect(try replica.applyOne(try ana.profile(ProfileCard(photos: [p3, p1]), at: 2000)) == .applied)
        #expect(try !replica.isNamedPhoto(hash: p2.hash))
        #expect(try replica.collectBlobs(now: 6000) == (1, 1000))
        #expect(try replica.blob(hash: p2.hash) == nil && replica.blob(hash: p1.hash) != nil && replica.blob(hash: p3.hash) != nil)

        // Ana removes them all: the photo Ben's card names too (stored once) stays.
        #expect(try replica.applyOne(try ana.profile(ProfileCard(photos: []), at: 3000)) == .applied)
        try replica.collectBlobs(now: 7000)
        #expect(try replica.blob(hash: p1.hash) == nil && replica.blob(hash: p3.hash) != nil)
        #expect(try replica.blobUsage().blobs == 1)
        #expect(try replica.applyOne(try ben.profile(ProfileCard(photos: []), at: 3000)) == .applied)
        try replica.collectBlobs(now: 8000)
        #expect(try replica.blobUsage().blobs == 0)
    }

    /// A local upload waits for its card edit (the grace of migration 6); once a card named it,
    /// it goes as soon as no card names it — a removed photo does not linger for an hour.
    @Test func anUploadANamedCardDroppedIsCollectedAtOnce() throws {
        let replica = try memoryReplica()
        var ana = RecordWriter(keys: keyPair(1))
        let kept = try replica.putBlob(png(1), uploadedAt: 1000)
        let dropped = try replica.putBlob(png(2), uploadedAt: 1000)
        #expect(try replica.collectBlobs(now: 2000).blobs == 0, "fresh uploads wait for their card")
        #expect(try replica.applyOne(try ana.profile(ProfileCard(name: "Ana", photos: [kept, dropped]), at: 3000)) == .applied)
        #expect(try replica.applyOne(try ana.profile(ProfileCard(photos: [kept]), at: 4000)) == .applied)
        #expect(try replica.collectBlobs(now: 5000) == (1, 1000))
        #expect(try replica.blob(hash: dropped.hash) == nil && replica.blob(hash: kept.hash) != nil)
    }

    @Test func everyPhotoOfACardIsMissingUntilFetchedAndCountsForItsAuthor() throws {
        let replica = try memoryReplica()
        let scratch = try memoryReplica()
        var ana = RecordWriter(keys: keyPair(1)), ben = RecordWriter(keys: keyPair(2))
        let data = [png(1, size: 3000), png(2, size: 1000), png(3, size: 2000)]
        let refs = try data.map { try scratch.putBlob($0) }
        let card = try ana.profile(ProfileCard(name: "Ana", photos: refs), at: 1000)
        #expect(try replica.applyOne(card) == .applied)
        #expect(try replica.applyOne(try ben.profile(ProfileCard(name: "Ben", photos: [refs[0]]), at: 1000)) == .applied)
        let missing = try replica.missingPhotos()
        #expect(missing.map(\.ref.size) == [1000, 2000, 3000, 3000], "each photo of each card, smallest first")
        #expect(Set(missing.filter { $0.author == ana.author }.map(\.ref)) == Set(refs))
        #expect(missing.filter { $0.author == ben.author }.map(\.ref) == [refs[0]])

        // One fetch serves both cards naming it; the author's usage counts every held photo.
        _ = try replica.putBlob(data[0])
        _ = try replica.putBlob(data[2])
        #expect(try replica.missingPhotos().map(\.ref) == [refs[1]])
        #expect(try replica.authorUsage(ana.author) == Int64(card.encoded.count) + 3000 + 2000)
        #expect(try replica.blobUsage() == (2, 5000))
    }

    /// A concurrent value (two devices writing at once) keeps its photos named too.
    @Test func theLosingConcurrentListKeepsItsPhotos() throws {
        let replica = try memoryReplica()
        var one = RecordWriter(keys: keyPair(1)), two = RecordWriter(keys: keyPair(1))
        let a = try replica.putBlob(png(1)), b = try replica.putBlob(png(2)), c = try replica.putBlob(png(3))
        _ = try replica.applyOne(try one.profile(ProfileCard(name: "Ana", photos: [a, b]), at: 1000))
        // The same key, seq 1 again: two records at one seq (a fork) both stay as register values.
        _ = try replica.applyOne(try two.profile(ProfileCard(name: "Ana", photos: [c]), at: 1001))
        try replica.collectBlobs(now: 9000)
        let state = try #require(try replica.card(of: one.author))
        let winner = state.card.photos ?? []
        #expect(!winner.isEmpty)
        for p in [a, b, c] { #expect(try replica.blob(hash: p.hash) != nil, "every current value's photos stay") }
    }

    @Test func migrationSixteenNamesThePhotosOfCardsAlreadyHeld() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let held: PhotoRef
        let absent = PhotoRef(hash: [UInt8](repeating: 0xEE, count: 32), size: 1234, format: .png)
        do {
            let replica = try Replica(path: path, settings: testSettings())
            var w = RecordWriter(keys: keyPair(30))
            held = try replica.putBlob(png(7))
            _ = try replica.applyOne(try w.profile(ProfileCard(name: "Eve", photos: [held]), at: 1000))
            var v = RecordWriter(keys: keyPair(31))
            _ = try replica.applyOne(try v.profile(ProfileCard(name: "Val", photos: [absent]), at: 1000))
            try replica.run { db throws(StoreError) in
                try db.executeScript(undoMigration16 + "PRAGMA user_version = 15;")
            }
            try replica.close()
        }
        let reopened = try Replica(path: path, settings: testSettings())
        #expect(try reopened.isNamedPhoto(hash: held.hash) && reopened.isNamedPhoto(hash: absent.hash))
        #expect(try reopened.missingPhotos().map(\.ref) == [absent])
        #expect(try reopened.collectBlobs(now: 10_000).blobs == 0)
    }
}
