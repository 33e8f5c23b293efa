import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// `posts --search` ranks the newest matches alone (PostSearch.swift, migration 20): a post's
/// rowid is its place in time, whatever order posts arrive in.
@Suite struct PostSearchTests {
    static let ana = keyPair(180), ben = keyPair(181)

    static func photo(_ n: UInt8) -> PhotoRef { PhotoRef(hash: [UInt8](repeating: n, count: 32), size: 600, format: .png) }

    /// Ana's posts at 100, 200, … 600: the oldest says "quartz" three times in few words (bm25's
    /// best), the others once among many.
    static func posts() throws -> (cards: [VerifiedRecord], posts: [VerifiedRecord], writer: RecordWriter) {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let cards = [try a.profile(ProfileCard(name: "Ana"), at: 1), try b.profile(ProfileCard(name: "Ben"), at: 1)]
        var posts = [try a.post(.create(photos: [photo(1)], caption: "quartz quartz quartz", tags: ["quartz"]), at: 100)]
        for i in 2...6 {
            posts.append(try a.post(.create(photos: [photo(UInt8(i))], caption: "a long walk by the river found some quartz and other stones \(i)",
                                            tags: ["walk"]), at: UInt64(i) * 100))
        }
        return (cards, posts, a)
    }

    /// Every word must appear; the last matches as the start of a word (it may be half typed),
    /// the others as whole words (a prefix of those would cost a read of every match).
    @Test func theLastWordIsAPrefixTheOthersWholeWords() throws {
        let (cards, posts, writer) = try Self.posts()
        let r = try memoryReplica()
        for v in cards + posts { _ = try r.applyOne(v) }
        #expect(try r.searchPosts("quar").count == 6, "one word: a prefix")
        #expect(try r.searchPosts("river qua").count == 5, "the last word a prefix")
        #expect(try r.searchPosts("riv quartz").isEmpty, "an earlier word is whole: riv is not river")
        #expect(try r.searchPosts("quartz quartz").count == 6 && r.searchPosts("walk quartz").count == 5)
        #expect(try r.searchPosts("!!! ...").isEmpty, "no word, no match")
        // The last word is read as the whole words it starts, when they are few (PostSearch.lastWord).
        var a = writer
        for (i, caption) in (["quartzite slab", "Quartzes"] + (0..<10).map { "zeta\($0)" }).enumerated() {
            #expect(try r.applyOne(try a.post(.create(photos: [Self.photo(9)], caption: caption, tags: []), at: 1000 + UInt64(i))) == .applied)
        }
        let forms = try r.read { db throws(StoreError) in
            var out: [String] = []
            for w in ["quar", "QUARTZI", "zeta", "zeta1", "walk", "nothing", "grüße"] { out.append(try PostSearch.lastWord(w[...], db)) }
            return out
        }
        #expect(forms == ["(\"quartz\" OR \"quartzes\" OR \"quartzite\")", "\"quartzite\"", "\"zeta\"*", "\"zeta1\"", "\"walk\"",
                          "\"nothing\"*", "\"grüße\"*"], "few words: those words; more than 8, none, or not ASCII: the prefix query")
        #expect(try r.searchPosts("quar").count == 8 && r.searchPosts("zeta").count == 10 && r.searchPosts("zeta1").count == 1)
    }

    @Test func searchRanksTheNewestMatchesByCreationNotArrival() throws {
        let (cards, posts, _) = try Self.posts()
        let r = try memoryReplica()
        // Newest first, the oldest last: arrival order is the opposite of creation order.
        for v in cards + posts.reversed() { #expect(try r.applyOne(v) == .applied) }
        let all = try r.searchPosts("quartz").map(\.id)
        #expect(all.count == 6)
        #expect(all.first == posts[0].id, "with fewer matches than the window, bm25 ranks them all")
        let newest = try r.searchPosts("quartz", limit: 3, window: 3).map(\.id)
        #expect(Set(newest) == Set(posts[3...].map(\.id)), "only the three newest by creation are ranked")
        #expect(newest == posts[3...].reversed().map(\.id), "equal ranks: newer first")
        // The limit applies after ranking; a window smaller than the limit widens to it.
        #expect(try r.searchPosts("quartz", limit: 1).map(\.id) == [posts[0].id])
        #expect(try r.searchPosts("quartz", limit: 6, window: 3).count == 6)
        // Rowids follow creation time.
        let order = try r.read { db throws(StoreError) in
            try db.query("SELECT id FROM posts ORDER BY rowid").compactMap { $0.blob(0) }
        }
        #expect(order == posts.map(\.id))
    }

    @Test func postsOfOneMillisecondGetSlotsOfTheirOwn() throws {
        var a = RecordWriter(keys: Self.ana), b = RecordWriter(keys: Self.ben)
        let cards = [try a.profile(ProfileCard(name: "Ana"), at: 1), try b.profile(ProfileCard(name: "Ben"), at: 1)]
        let same = [try a.post(.create(photos: [Self.photo(1)], caption: "garnet one", tags: []), at: 500),
                    try b.post(.create(photos: [Self.photo(2)], caption: "garnet two", tags: []), at: 500),
                    try a.post(.create(photos: [Self.photo(3)], caption: "garnet three", tags: []), at: 500)]
        let earlier = try b.post(.create(photos: [Self.photo(4)], caption: "garnet early", tags: []), at: 499)
        let r = try memoryReplica()
        for v in cards + same + [earlier] { #expect(try r.applyOne(v) == .applied) }
        let keys = try r.read { db throws(StoreError) in
            try db.query("SELECT recency, created FROM posts ORDER BY recency").map { ($0.int64(0) ?? 0, $0.int64(1) ?? 0) }
        }
        #expect(keys.map(\.1) == [499, 500, 500, 500])
        #expect(keys.map(\.0) == [499 << 16, 500 << 16, (500 << 16) + 1, (500 << 16) + 2])
        #expect(try r.searchPosts("garnet").count == 4)
        #expect(try Set(r.searchPosts("garnet", limit: 3, window: 3).map(\.id)) == Set(same.map(\.id)))
    }

    /// A replica written before migration 20 (posts numbered in arrival order) is renumbered by
    /// creation and its search index rebuilt.
    @Test func migrationTwentyRenumbersPostsByCreation() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let (cards, posts, writer) = try Self.posts()
        do {
            let r = try Replica(path: path, settings: testSettings())
            for v in cards + posts.reversed() { _ = try r.applyOne(v) }
            try r.close()
            // Back to migration 17's table: rowids in arrival order (newest first here).
            let db = try Database(path: path)
            try db.executeScript("""
                CREATE TABLE posts_old (id BLOB PRIMARY KEY, account BLOB NOT NULL, created INTEGER NOT NULL, photos INTEGER NOT NULL,
                    caption TEXT NOT NULL, caption_at INTEGER NOT NULL, caption_id BLOB NOT NULL, tags TEXT NOT NULL,
                    tags_at INTEGER NOT NULL, tags_id BLOB NOT NULL);
                INSERT INTO posts_old(id, account, created, photos, caption, caption_at, caption_id, tags, tags_at, tags_id)
                    SELECT id, account, created, photos, caption, caption_at, caption_id, tags, tags_at, tags_id FROM posts ORDER BY created DESC;
                DROP TABLE posts;
                ALTER TABLE posts_old RENAME TO posts;
                INSERT INTO post_search(post_search) VALUES ('rebuild');
                DROP INDEX card_photos_by_record;
                DROP INDEX post_tags_by_post;
                \(undoMigration21)
                PRAGMA user_version = 19;
                """)
            let before = try db.query("SELECT id FROM posts ORDER BY rowid").compactMap { $0.blob(0) }
            #expect(before == posts.reversed().map(\.id))
            try db.close()
        }
        let upgraded = try Replica(path: path, settings: testSettings())
        let order = try upgraded.read { db throws(StoreError) in
            try db.query("SELECT id FROM posts ORDER BY rowid").compactMap { $0.blob(0) }
        }
        #expect(order == posts.map(\.id))
        #expect(try Set(upgraded.searchPosts("quartz", limit: 3, window: 3).map(\.id)) == Set(posts[3...].map(\.id)))
        #expect(try upgraded.searchPosts("quartz").first?.id == posts[0].id)
        #expect(try upgraded.post(posts[0].id)?.photos == [Self.photo(1)])
        let plan = try upgraded.read { db throws(StoreError) in
            try db.query("EXPLAIN QUERY PLAN SELECT ref FROM card_photos WHERE record_id = ? ORDER BY slot", [.blob(posts[0].id)])
                .compactMap { $0.text(3) }.joined(separator: "; ")
        }
        #expect(plan.contains("card_photos_by_record"), "a post's photos are read by index: \(plan)")
        // A post's tags are found by index (as its creation, edit and removal replace them), not by a scan of every post's tags (which made
        // applying 100,000 posts take 18 minutes: each one scanned all the tags before it).
        let tagPlan = try upgraded.read { db throws(StoreError) in
            try db.query("EXPLAIN QUERY PLAN SELECT tag FROM post_tags WHERE post = ?", [.blob(posts[0].id)])
                .compactMap { $0.text(3) }.joined(separator: "; ")
        }
        #expect(tagPlan.contains("post_tags_by_post") && !tagPlan.contains("SCAN"), "\(tagPlan)")
        // New posts still index and order: one at 700 is the newest.
        var a = writer
        let newest = try a.post(.create(photos: [Self.photo(7)], caption: "quartz again", tags: []), at: 700)
        #expect(try upgraded.applyOne(newest) == .applied)
        #expect(try upgraded.searchPosts("quartz", limit: 1, window: 1).map(\.id) == [newest.id])
    }
}
