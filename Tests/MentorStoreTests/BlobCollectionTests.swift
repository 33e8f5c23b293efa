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
        #expect(try replica.applyOne(try w.profile(ProfileCard(name: "Ana", photo: .some(first)), at: 1000)) == .applied)
        #expect(try replica.isNamedPhoto(hash: first.hash) && !(try replica.isNamedPhoto(hash: second.hash)))
        let gone = try replica.collectBlobs(now: 20_000)
        #expect(gone.blobs == 1 && gone.bytes == 2000, "only the unnamed fetched blob goes: \(gone)")
        #expect(try replica.blobUsage().blobs == 2)
        // Ana's card moves to the upload: the first photo goes at once, the second stays.
        #expect(try replica.applyOne(try w.profile(ProfileCard(photo: .some(second)), at: 2000)) == .applied)
        try replica.collectBlobs(now: 30_000)
        #expect(try replica.blob(hash: first.hash) == nil && replica.blob(hash: second.hash) != nil)
        // A photo removed from the card is collected; an upload nobody names, after the grace.
        #expect(try replica.applyOne(try w.profile(ProfileCard(photo: .some(nil)), at: 3000)) == .applied)
        let orphan = try replica.putBlob(png(4), uploadedAt: 40_000)
        try replica.collectBlobs(now: 40_000 + 3_599_999)
        #expect(try replica.blob(hash: second.hash) == nil && replica.blob(hash: orphan.hash) != nil)
        try replica.collectBlobs(now: 40_000 + 3_600_001)
        #expect(try replica.blobUsage().blobs == 0)
    }

    @Test func authorUsageCountsRecordsAndTheirNamedPhotos() throws {
        let replica = try memoryReplica()
        var w = RecordWriter(keys: keyPair(2))
        let photo = try replica.putBlob(png(5, size: 5000))
        let card = try w.profile(ProfileCard(name: "Ben", photo: .some(photo)), at: 1000)
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
        let anaCard = try ana.profile(ProfileCard(name: "Ana", photo: .some(photo)), at: 1000)
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
