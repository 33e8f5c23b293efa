import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// `post.*`, `comment.*`, `posts`, `explore` on a test node (PROTOCOL.md §6.6).
@Suite struct NodePostTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String) throws {
        try t.call(uid, "account.signup", ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": "student"])
    }

    func upload(_ t: TestNode, _ uid: UInt32, _ tag: UInt8) throws -> String {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: 500)
        return try t.call(uid, "blob.put", ["chunk": .string(Data(png).base64EncodedString()), "done": true])["hash"]?.stringValue ?? ""
    }

    func recordCount(_ t: TestNode) throws -> Int {
        try t.node.replica.allAuthorKeys().reduce(0) { $0 + (try t.node.replica.records(of: $1, seqs: 1...1_000).count) }
    }

    @Test func onlyAuthorsEditDeleteAndHideAndCountsArePublic() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana"); try signup(t, ben, "Ben"); try signup(t, cy, "Cy")
        let photos = [try upload(t, ana, 1), try upload(t, ana, 2)]
        let post = try t.call(ana, "post.create", ["photos": .array(photos.map { .string($0) }), "caption": "Pyrite cube, metallic",
                                                    "tags": ["Pyrite", "#metallic luster"]])
        let id = try #require(post["id"]?.stringValue)
        #expect(id.count == 12 && post["tags"] == ["pyrite", "metallic-luster"] && post["photos"]?.arrayValue?.count == 2)
        let short = String(id.prefix(6))
        #expect(try t.call(ben, "post.like", ["id": .string(short)])["likes"] == 1)
        #expect(t.error(ben, "post.like", ["id": .string(short)])?.code == RPCError.Code.notAllowed.rawValue)
        #expect(try t.call(cy, "post.like", ["id": .string(id)])["likes"] == 2)
        #expect(try t.call(cy, "post.unlike", ["id": .string(id)])["likes"] == 1)
        let comment = try t.call(ben, "comment.create", ["post": .string(id), "text": "Fool's gold!"])
        let rude = try t.call(cy, "comment.create", ["post": .string(id), "text": "boring"])
        let cid = try #require(comment["id"]?.stringValue), rid = try #require(rude["id"]?.stringValue)

        // Nobody but the author edits, deletes or hides; nothing is written then.
        let before = try recordCount(t)
        for (uid, method, params) in [(ben, "post.edit", ["id": JSON.string(id), "caption": "mine now"]), (ben, "post.delete", ["id": .string(id)]),
                                      (ben, "comment.hide", ["id": .string(rid)]), (cy, "comment.delete", ["id": .string(cid)])] {
            let error = t.error(uid, method, params)
            #expect(error?.code == RPCError.Code.notAllowed.rawValue, "\(method): \(String(describing: error))")
        }
        #expect(try recordCount(t) == before)
        #expect(try t.call(ana, "post.show", ["id": .string(id)])["caption"] == "Pyrite cube, metallic")

        // The author hides Cy's comment: gone for Ben, still there (marked) for Cy.
        #expect(try t.call(ana, "comment.hide", ["id": .string(rid)])["hidden"] == true)
        let forBen = try t.call(ben, "post.show", ["id": .string(id)])
        #expect(forBen["comments"] == 1 && forBen["comment_list"]?.arrayValue?.compactMap { $0["text"]?.stringValue } == ["Fool's gold!"])
        let forCy = try t.call(cy, "post.show", ["id": .string(id)])
        #expect(forCy["comment_list"]?.arrayValue?.compactMap { $0["text"]?.stringValue } == ["Fool's gold!", "boring"])
        #expect(try t.call(ana, "post.edit", ["id": .string(id), "tags": ["pyrite"]])["tags"] == ["pyrite"])

        // Listing and search.
        #expect(try t.call(ben, "posts", ["tag": "PYRITE"])["posts"]?.arrayValue?.count == 1)
        #expect(try t.call(ben, "posts", ["tag": "metallic-luster"])["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(ben, "posts", ["search": "cube metal"])["posts"]?.arrayValue?.first?["id"]?.stringValue == id)
        #expect(try t.call(ben, "posts", ["search": "cub metal"])["posts"]?.arrayValue?.isEmpty == true, "only the last word is a prefix")
        #expect(try t.call(ben, "posts", ["search": "granite"])["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(cy, "explore")["posts"]?.arrayValue?.count == 1)

        // Ben deletes his comment; Ana deletes the post: gone, and its ID says so.
        #expect(try t.call(ben, "comment.delete", ["id": .string(cid)])["id"]?.stringValue == cid)
        #expect(try t.call(ana, "post.delete", ["id": .string(id)])["id"]?.stringValue == id)
        #expect(t.error(ben, "post.show", ["id": .string(id)])?.code == RPCError.Code.notFound.rawValue)
        #expect(try t.call(ben, "posts")["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(ben, "posts", ["search": "pyrite"])["posts"]?.arrayValue?.isEmpty == true)
    }

    @Test func badPostsAreRefusedAndNothingIsWritten() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana")
        let photo = try upload(t, ana, 1)
        let before = try recordCount(t)
        let cases: [[String: JSON]] = [
            ["photos": []],
            ["photos": .array(Array(repeating: .string(photo), count: 2))],
            ["photos": .array((0..<5).map { _ in .string(photo) })],
            ["photos": ["00"]],
            ["photos": .array([.string(photo)]), "caption": .string(String(repeating: "é", count: 2001))],
            ["photos": .array([.string(photo)]), "tags": .array((0..<11).map { .string("t\($0)") })],
            ["photos": .array([.string(photo)]), "tags": ["  "]],
        ]
        for params in cases {
            let error = t.error(ana, "post.create", params)
            #expect(error != nil, "\(params)")
        }
        #expect(try recordCount(t) == before)
        #expect(t.error(ana, "post.show", ["id": "zz"])?.code == RPCError.Code.invalidValue.rawValue)
        #expect(t.error(ana, "post.show", ["id": "abcdef"])?.code == RPCError.Code.notFound.rawValue)
    }

    @Test func aHiddenPostLeavesOnlyTheHidersLists() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana"); try signup(t, ben, "Ben"); try signup(t, cy, "Cy")
        let photo = try upload(t, ana, 1)
        let id = try #require(try t.call(ana, "post.create", ["photos": .array([.string(photo)]), "caption": "Obsidian flake"])["id"]?.stringValue)
        #expect(t.error(ana, "post.hide", ["id": .string(id)])?.code == RPCError.Code.invalidValue.rawValue, "one's own post is deleted, not hidden")
        #expect(try t.call(ben, "post.hide", ["id": .string(id)])["id"]?.stringValue == id)
        #expect(t.error(ben, "post.hide", ["id": .string(id)])?.code == RPCError.Code.notAllowed.rawValue)
        #expect(try t.call(ben, "posts")["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(ben, "posts", ["search": "obsidian"])["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(ben, "explore")["posts"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(cy, "posts")["posts"]?.arrayValue?.count == 1, "hiding is private")
        #expect(try t.call(ben, "post.show", ["id": .string(id)])["caption"] == "Obsidian flake", "the post itself stays readable by its ID")
    }
}
