import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Posts, comments and likes of posts in the replica (PROTOCOL.md §6.6): registers, who may do
/// what, a deletion's purge, in any order.
@Suite struct PostReplicaTests {
    static let ana = keyPair(170), ben = keyPair(171), cy = keyPair(172)

    private func png(_ tag: UInt8, size: Int = 600) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: size - 8)
    }

    /// Every account's card, then a post of Ana's and what everyone does to it.
    struct Story {
        var cards: [VerifiedRecord] = []
        var post: VerifiedRecord
        var ops: [VerifiedRecord] = []
        var comment: VerifiedRecord
        var deleted: VerifiedRecord
    }

    static func story(photo: PhotoRef) throws -> Story {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben), c = RecordWriter(keys: cy)
        let cards = [try a.profile(ProfileCard(name: "Ana"), at: 1), try b.profile(ProfileCard(name: "Ben"), at: 1),
                     try c.profile(ProfileCard(name: "Cy"), at: 1)]
        let post = try a.post(.create(photos: [photo], caption: "Quartzite from the quarry", tags: ["quartzite", "rock"]), at: 10)
        let edit = try a.post(.edit(post: post.id, caption: "Quartzite, banded", tags: nil), at: 20)
        let staleEdit = try a.post(.edit(post: post.id, caption: "stale", tags: ["old"]), at: 15)
        let foreignEdit = try b.post(.edit(post: post.id, caption: "Ben was here", tags: nil), at: 30)
        let likeB = try b.likePost(post.id, at: 21), likeC = try c.likePost(post.id, at: 22)
        let unlikeC = try c.likePost(post.id, liked: false, at: 23)
        let comment = try b.comment(on: post.id, .create(text: "Nice bands"), at: 24)
        let rude = try c.comment(on: post.id, .create(text: "meh"), at: 25)
        let hide = try a.comment(on: post.id, .hide(comment: rude.id), at: 26)
        let foreignHide = try c.comment(on: post.id, .hide(comment: comment.id), at: 27)
        let gone = try b.comment(on: post.id, .create(text: "typo"), at: 28)
        let goneDelete = try b.comment(on: post.id, .delete(comment: gone.id), at: 29)
        let foreignDelete = try c.comment(on: post.id, .delete(comment: comment.id), at: 29)
        let deleted = try a.post(.delete(post: post.id), at: 40)
        return Story(cards: cards, post: post,
                     ops: [edit, staleEdit, foreignEdit, likeB, likeC, unlikeC, comment, rude, hide, foreignHide, gone, goneDelete, foreignDelete],
                     comment: comment, deleted: deleted)
    }

    struct Snapshot: Equatable {
        var post: PostSummary?
        var comments: [CommentSummary]
        var stored: Set<[UInt8]>
        var search: [[UInt8]]
    }

    func snapshot(_ r: Replica, _ post: [UInt8]) throws -> Snapshot {
        let stored = try r.read { db throws(StoreError) in Set(try db.query("SELECT id FROM records").compactMap { $0.blob(0) }) }
        return Snapshot(post: try r.post(post), comments: try r.comments(of: post, viewer: nil), stored: stored,
                        search: try r.searchPosts("banded").map(\.id))
    }

    @Test func postsCommentsAndLikesConvergeInAnyOrderAndOnlyAuthorsEditDeleteHide() throws {
        let photo = PhotoRef(hash: [UInt8](repeating: 7, count: 32), size: 600, format: .png)
        let s = try Self.story(photo: photo)
        var seeded = SeededRandom(seed: 17)
        var snapshots: [Snapshot] = []
        for round in 0..<8 {
            var all = [s.post] + s.ops
            if round > 0 { all.shuffle(using: &seeded) }
            if round == 1 { all.reverse() }
            let r = try memoryReplica()
            for v in s.cards + all {
                let outcome = try r.applyOne(v)
                if case .refused(let e) = outcome { #expect(e.code == .notAuthor, "\(e)") }
            }
            snapshots.append(try snapshot(r, s.post.id))
        }
        let first = try #require(snapshots.first)
        for other in snapshots.dropFirst() { #expect(other == first) }
        let post = try #require(first.post)
        #expect(post.caption == "Quartzite, banded", "the author's newest edit wins; Ben's edit is refused")
        #expect(post.tags == ["old"], "an older edit still wins the tags: it is newer than the post's own")
        #expect(post.likes == 1 && post.comments == 1, "Cy withdrew; the hidden and the deleted comments are not counted")
        #expect(post.photos == [photo])
        #expect(first.comments.map(\.text) == ["Nice bands"], "Cy's hide of Ben's comment and delete of it are refused")
        #expect(first.search == [s.post.id])
        // Hidden comments stay for their writer.
        let r = try memoryReplica()
        for v in s.cards + [s.post] + s.ops { _ = try r.applyOne(v) }
        #expect(try r.comments(of: s.post.id, viewer: Self.cy.publicKey.key).map(\.text) == ["Nice bands", "meh"])
        #expect(try r.comments(of: s.post.id, viewer: Self.cy.publicKey.key).last?.hidden == true)
        // A foreign edit offered when the post is held: refused by name, nothing changes.
        var b = RecordWriter(keys: Self.ben)
        _ = try b.profile(ProfileCard(name: "Ben"), at: 1)
        for _ in 0..<6 { _ = try b.likePost([UInt8](repeating: 1, count: 32), at: 2) }
        let late = try b.post(.delete(post: s.post.id), at: 50)
        let outcome = try r.applyOne(late)
        var refusedCode: RecordError.Code?
        if case .refused(let e) = outcome { refusedCode = e.code }
        #expect(refusedCode == .notAuthor, "\(outcome)")
        #expect(try r.post(s.post.id)?.caption == "Quartzite, banded")
    }

    @Test func aDeletedPostLeavesEveryTableAndTheFileAndStaysGone() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let r = try Replica(path: path, settings: testSettings())
        let photo = try r.putBlob(png(3))
        let s = try Self.story(photo: photo)
        for v in s.cards + [s.post] + s.ops { _ = try r.applyOne(v) }
        #expect(try r.isNamedPhoto(hash: photo.hash))
        #expect(try r.searchPosts("band").count == 1 && r.searchPosts("quarry").isEmpty, "search follows the edit")
        #expect(try r.applyOne(s.deleted) == .applied)
        #expect(try r.post(s.post.id) == nil && r.isDeletedPost(s.post.id))
        #expect(try r.comments(of: s.post.id, viewer: nil).isEmpty)
        #expect(try r.searchPosts("quarry").isEmpty && r.searchPosts("banded").isEmpty)
        let kept = try r.read { db throws(StoreError) in try db.query("SELECT id FROM records WHERE type IN (9, 10, 11)").compactMap { $0.blob(0) } }
        #expect(kept == [s.deleted.id], "only the tombstone stays")
        #expect(try !r.isNamedPhoto(hash: photo.hash))
        #expect(try r.collectBlobs(now: 10_000_000_000).blobs == 1, "the post's photo goes at the next collection")
        // Offered again, the post and its comments are not stored.
        #expect(try r.applyOne(s.post) == .duplicate)
        #expect(try r.applyOne(s.comment) == .duplicate)
        #expect(try r.post(s.post.id) == nil)
        var c = RecordWriter(keys: Self.cy)
        _ = try c.profile(ProfileCard(name: "Cy"), at: 1)
        _ = try c.likePost(s.post.id, at: 2); _ = try c.likePost(s.post.id, liked: false, at: 3)
        _ = try c.comment(on: s.post.id, .create(text: "meh"), at: 25)
        let late = try c.comment(on: s.post.id, .create(text: "late comment"), at: 60)
        #expect(try r.applyOne(late) == .duplicate)
        // The caption's words are gone from the database and its WAL.
        try r.run { db throws(StoreError) in _ = try db.query("PRAGMA wal_checkpoint(TRUNCATE)") }
        try r.close()
        for file in [path, path + "-wal"] {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let bytes = [UInt8](data)
            for word in ["Quartzite", "quarry", "banded", "Nice bands"] {
                let needle = Array(word.utf8)
                let found = bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
                #expect(!found, "\(word) is still in \(file)")
            }
        }
        // A replica that gets the deletion before the post never stores the post.
        let fresh = try memoryReplica()
        for v in s.cards + [s.deleted] + s.ops + [s.post] { _ = try fresh.applyOne(v) }
        #expect(try fresh.post(s.post.id) == nil)
        let left = try fresh.read { db throws(StoreError) in try db.query("SELECT id FROM records WHERE type IN (9, 10, 11)").compactMap { $0.blob(0) } }
        #expect(left == [s.deleted.id])
    }
}
