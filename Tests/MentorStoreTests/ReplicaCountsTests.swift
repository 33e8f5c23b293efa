import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// `Replica.counts()` (what `status` shows) is kept across writes from what each batch counted
/// itself, instead of counting every record and every author's card again after each batch: a
/// sync from a campus of many accounts applies thousands of small batches, and a client polling
/// `status` meanwhile made each one cost a pass over the whole replica (issue 13).
@Suite struct ReplicaCountsTests {
    /// The counts read from the tables, bypassing the cache.
    func fresh(_ replica: Replica) throws -> ReplicaCounts {
        try replica.run { _ throws(StoreError) in replica.cachedCounts = nil }
        return try replica.counts()
    }

    func countsRead(_ replica: Replica) throws -> Int {
        try replica.run { _ throws(StoreError) in replica.countsRead }
    }

    @Test func pollingCountsBetweenManySmallBatchesCountsTheTablesOnce() throws {
        let replica = try memoryReplica()
        _ = try replica.counts()
        for n in 0..<300 {
            var w = RecordWriter(keys: try SigningKeyPair(seed: [UInt8(n >> 8), UInt8(n & 0xFF)] + [UInt8](repeating: 3, count: 30)))
            let card = try w.profile(ProfileCard(name: "Author \(n)", role: .student, bio: "bio"), at: 1000)
            let edit = try w.profile(ProfileCard(bio: "edited"), at: 2000)
            #expect(try replica.apply(batch: [card.encoded, edit.encoded]) == [.applied, .applied], "\(n)")
            let counts = try replica.counts()
            #expect(counts.records == 2 * (n + 1) && counts.authors == n + 1 && counts.cards == n + 1, "\(n): \(counts)")
        }
        #expect(try countsRead(replica) == 1, "each batch said what it changed; nothing was counted again")
        #expect(try replica.counts() == fresh(replica))
    }

    @Test func keptCountsEqualCountedOnesThroughGapsForksHeldRecordsAndPhotos() throws {
        var s = testSettings()
        s.maxVariantsPerSeq = 2
        let replica = try memoryReplica(settings: s)
        func check(_ what: String) throws {
            let kept = try replica.counts()
            #expect(kept == (try fresh(replica)), "\(what)")
        }
        try check("empty")
        let ana = keyPair(1), ben = keyPair(2)
        var a = RecordWriter(keys: ana)
        let r = try (1...3).map { i in try a.profile(ProfileCard(name: "Ana \(i)"), at: UInt64(i) * 1000) }
        _ = try replica.apply(batch: [r[2].encoded, r[1].encoded])
        try check("two held back for a gap")
        _ = try replica.apply(batch: [r[0].encoded, r[0].encoded])
        try check("the gap filled (and a duplicate)")
        var b = RecordWriter(keys: ben)
        let like = try b.like(ana.publicKey.key, liked: true, at: 500)
        let ahead = try b.profile(ProfileCard(name: "Ben"), at: testNow + 3_600_000)
        _ = try replica.apply(batch: [like.encoded, ahead.encoded])
        try check("a new author whose first record is a like; a record held until due")
        // Fork variants of Ana's seq 3: evidence, a forked author, then the cap unstores one.
        for text in ["fork x", "fork y", "fork z"] {
            var f = RecordWriter(keys: ana, lastSeq: 2)
            _ = try replica.apply(batch: [try f.profile(ProfileCard(bio: text), at: 9000).encoded])
            try check("variant '\(text)'")
        }
        _ = try replica.putBlob([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 9, count: 100))
        try check("a blob stored")
        _ = try replica.collectBlobs(now: testNow)
        try check("blobs collected")
        #expect(try replica.counts().forkedAuthors == 1 && replica.counts().evidence >= 3 && replica.counts().heldUntilDue == 1)
    }
}
