import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Post records leaving the replica other than by a deletion (ApplyPostRemoval.swift): a revoked
/// device's records past its last seq, and a fork variant past the cap. The post tables then
/// hold what they would had the records never arrived.
@Suite struct PostRemovalTests {
    static let ana = keyPair(185), lab = keyPair(186), ben = keyPair(187)
    static var anaKey: PublicKey { ana.publicKey.key }

    static func photo(_ n: UInt8) -> PhotoRef { PhotoRef(hash: [UInt8](repeating: n, count: 32), size: 600, format: .png) }

    /// Every row of the post tables, and what search finds (as sets: equal ranks fall in
    /// arrival order).
    struct Tables: Equatable {
        var rows: [String: [String]]
        var search: [[UInt8]]
    }

    static func tables(_ r: Replica) throws -> Tables {
        let queries = [
            "posts": "SELECT hex(id) || caption || '|' || tags FROM posts",
            "post_tags": "SELECT tag || hex(post) FROM post_tags",
            "card_photos": "SELECT hex(record_id) || slot || hex(ref) FROM card_photos",
            "comments": "SELECT hex(id) || text FROM comments",
            "post_likes": "SELECT hex(post) || hex(account) || liked FROM post_likes",
            "post_ops": "SELECT hex(id) || kind FROM post_ops",
            "post_refs": "SELECT hex(post) || hex(id) FROM post_refs",
        ]
        var rows: [String: [String]] = [:]
        for (table, sql) in queries {
            rows[table] = try r.read { db throws(StoreError) in try db.query(sql).compactMap { $0.text(0) }.sorted() }
        }
        let search = try ["quartz", "stolen", "garnet", "nice"].flatMap { try r.searchPosts($0).map(\.id).sorted { $0.lexicographicallyPrecedes($1) } }
        return Tables(rows: rows, search: search)
    }

    @Test func aRevokedDevicesPostsCommentsAndLikesLeaveThePostTables() throws {
        var w = RecordWriter(keys: Self.ana)
        let card = try w.profile(ProfileCard(name: "Ana"), at: 1000)
        let cert = try w.certify(Self.lab.publicKey.key, label: "lab", epoch: 1, at: 1001)
        var b = RecordWriter(keys: Self.ben)
        let benCard = try b.profile(ProfileCard(name: "Ben"), at: 1000)
        let benPost = try b.post(.create(photos: [Self.photo(1)], caption: "garnet in schist", tags: ["garnet"]), at: 1100)
        var labW = RecordWriter(keys: Self.lab, account: Self.anaKey)
        let kept = try labW.post(.create(photos: [Self.photo(2)], caption: "quartz vein", tags: ["quartz"]), at: 2000)   // seq 1
        let benComment = try b.comment(on: kept.id, .create(text: "nice vein"), at: 2050)
        // Past the revocation's last seq (1): a thief's post, comment, like, edit and hide.
        let stolen = try labW.post(.create(photos: [Self.photo(3)], caption: "stolen laptop post", tags: ["stolen"]), at: 2100)
        let comment = try labW.comment(on: benPost.id, .create(text: "nice garnet, stolen"), at: 2101)
        let like = try labW.likePost(benPost.id, at: 2102)
        let edit = try labW.post(.edit(post: kept.id, caption: "quartz, stolen caption", tags: ["stolen"]), at: 2103)
        let hide = try labW.comment(on: kept.id, .hide(comment: benComment.id), at: 2104)
        // Ben answers the stolen post before the revocation reaches anyone.
        let benOnStolen = try b.comment(on: stolen.id, .create(text: "nice one"), at: 2150)
        let benLikes = try b.likePost(stolen.id, at: 2151)
        let revoke = try w.revoke(Self.lab.publicKey.key, lastSeq: 1, at: 3000)

        let records = [card, cert, benCard, benPost, kept, benComment, stolen, comment, like, edit, hide, benOnStolen, benLikes]
        let after = try memoryReplica()
        for v in records { #expect(try after.applyOne(v) == .applied) }
        // The thief's work shows until the revocation.
        #expect(try after.post(kept.id)?.caption == "quartz, stolen caption")
        #expect(try after.post(benPost.id)?.likes == 1)
        #expect(try after.post(benPost.id)?.comments == 1)
        #expect(try after.searchPosts("stolen").count == 2)
        #expect(try after.applyOne(revoke) == .applied)

        let first = try memoryReplica()
        for v in [card, cert, revoke] + records.dropFirst(2) { _ = try first.applyOne(v) }
        #expect(try Self.tables(after) == Self.tables(first), "the same post tables whichever came first")

        // And what that means, read through the replica's queries.
        #expect(try after.post(stolen.id) == nil)
        #expect(try after.searchPosts("stolen").isEmpty)
        let keptNow = try #require(try after.post(kept.id))
        #expect(keptNow.caption == "quartz vein" && keptNow.tags == ["quartz"], "the stolen edit is undone")
        #expect(keptNow.comments == 1, "the stolen hide is undone")
        let bens = try #require(try after.post(benPost.id))
        #expect(bens.likes == 0 && bens.comments == 0)
        #expect(try after.comments(of: benPost.id, viewer: nil).isEmpty)
        #expect(try !after.isNamedPhoto(hash: Self.photo(3).hash), "the stolen post's photo is no longer named")
        // Ben's comment and like of the stolen post wait for it, as when they arrive first.
        #expect(try after.comments(of: stolen.id, viewer: nil).map(\.id) == [benOnStolen.id])
    }

    @Test func aPostVariantPastTheForkCapLeavesThePostTables() throws {
        var w = RecordWriter(keys: Self.ana)
        let card = try w.profile(ProfileCard(name: "Ana"), at: 1000)
        var variants: [VerifiedRecord] = []
        for (i, caption) in ["quartz one", "quartz two", "quartz three"].enumerated() {
            var fork = w
            variants.append(try fork.post(.create(photos: [Self.photo(UInt8(10 + i))], caption: caption, tags: ["v\(i)"]), at: 2000))
        }
        let keptIDs = Set(variants.map(\.id).sorted { $0.lexicographicallyPrecedes($1) }.prefix(2))
        var states: [Tables] = []
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1], [0, 2, 1], [1, 0, 2]] {
            let r = try memoryReplica()
            _ = try r.applyOne(card)
            for i in order { _ = try r.applyOne(variants[i]) }
            let posts = try r.read { db throws(StoreError) in Set(try db.query("SELECT id FROM posts").compactMap { $0.blob(0) }) }
            #expect(posts == keptIDs, "order \(order): the posts are the variants kept")
            #expect(try Set(r.searchPosts("quartz").map(\.id)) == keptIDs)
            states.append(try Self.tables(r))
        }
        let one = try #require(states.first)
        for s in states.dropFirst() { #expect(s == one) }
    }
}
