import Foundation
import Testing
import MentorAPI
@testable import MentorNode

/// `identify` (docs/API.md): the catalogue's closest entries, no account needed, every word checked.
@Suite struct NodeIdentifyTests {
    @Test func identifyAnswersWithoutAnAccount() throws {
        let t = try TestNode()
        let r = try t.call(1001, "identify", ["luster": "metallic", "streak": "black", "hardness": 6])
        let matches = r["matches"]?.arrayValue ?? []
        #expect(matches.count == 5)
        let names = matches.compactMap { $0["name"]?.stringValue }
        for n in ["pyrite", "magnetite", "hematite"] { #expect(names.contains(n), "\(names)") }
        #expect(matches.first?["score"]?.intValue == 100)
        #expect(matches.first?["reasons"]?.arrayValue?.count == 3)
        #expect(matches.first?["specific_gravity"]?.stringValue != nil)
        let three = try t.call(1001, "identify", ["hardness": .int(1), "limit": 3])
        #expect(three["matches"]?.arrayValue?.count == 3)
        // Graphite (1–2), molybdenite (1–1.5) and talc (1) all score 100: ties by name.
        let threeNames = (three["matches"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        #expect(threeNames == ["graphite", "molybdenite", "talc"])
    }

    /// Each match carries the newest posts tagged with its name (three at most); the caller's
    /// hidden posts and blocked authors are left out.
    @Test func matchesCarryRecentPostsTaggedWithTheirName() throws {
        let t = try TestNode()
        let ana: UInt32 = 1001, ben: UInt32 = 1002
        for (uid, name) in [(ana, "Ana"), (ben, "Ben")] {
            try t.call(uid, "account.signup", ["email": .string("\(name)@uni.edu"), "name": .string(name), "role": "student"])
        }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 300)
        let photo = try #require(try t.call(ana, "blob.put", ["chunk": .string(Data(png).base64EncodedString()), "done": true])["hash"]?.stringValue)
        var ids: [String] = []
        for (i, caption) in ["Cubes from the quarry", "Striated faces", "Fool's gold", "Pyrite sun"].enumerated() {
            let post = try t.call(ana, "post.create", ["photos": .array([.string(photo)]), "caption": .string(caption),
                                                       "tags": .array(i == 0 ? ["Pyrite", "cubic"] : ["pyrite"])])
            ids.append(try #require(post["id"]?.stringValue))
        }
        _ = try t.call(ana, "post.create", ["photos": .array([.string(photo)]), "caption": "Not this one", "tags": ["magnetite-ish"]])
        func posts(_ uid: UInt32, _ name: String) throws -> [String] {
            let r = try t.call(uid, "identify", ["luster": "metallic", "streak": "black", "hardness": 6])
            let match = (r["matches"]?.arrayValue ?? []).first { $0["name"]?.stringValue == name }
            return (match?["posts"]?.arrayValue ?? []).compactMap { $0["caption"]?.stringValue }
        }
        let listed = (try t.call(ben, "posts", ["tag": "pyrite"])["posts"]?.arrayValue ?? []).compactMap { $0["caption"]?.stringValue }
        #expect(listed == ["Pyrite sun", "Fool's gold", "Striated faces", "Cubes from the quarry"], "posts --tag: newest first: \(listed)")
        let newest = try posts(ben, "pyrite")
        #expect(newest == ["Pyrite sun", "Fool's gold", "Striated faces"], "the three newest, newest first: \(newest)")
        #expect(try posts(ben, "magnetite").isEmpty, "a tag that is not the name does not count")
        try t.call(ben, "post.hide", ["id": .string(ids[3])])
        #expect(try posts(ben, "pyrite") == ["Fool's gold", "Striated faces", "Cubes from the quarry"], "Ben's hidden post left out")
        try t.call(ben, "block", ["id": .string(try #require(try t.call(ana, "account.whoami")["id"]?.stringValue))])
        #expect(try posts(ben, "pyrite").isEmpty, "Ben blocked Ana")
        #expect(try posts(4242, "pyrite").count == 3, "without an account: everyone's")
    }

    @Test func badTraitsAreRefusedNamingTheAcceptedValues() throws {
        let t = try TestNode()
        #expect(t.error(1001, "identify", [:])?.message == "identify: give at least one trait: color, luster, cleavage, hardness or streak")
        #expect(t.error(1001, "identify", ["luster": "shiny"])?.message.contains("use one of: metallic, non-metallic") == true)
        #expect(t.error(1001, "identify", ["color": "mauve"])?.message.contains("use light, dark or one of:") == true)
        #expect(t.error(1001, "identify", ["cleavage": "great"])?.message.contains("none, poor, good or perfect") == true)
        #expect(t.error(1001, "identify", ["streak": "dark"])?.code == -32602)
        #expect(t.error(1001, "identify", ["hardness": 11])?.message.contains("from 1 to 10") == true)
        #expect(t.error(1001, "identify", ["hardness": "six"])?.message == "identify: parameter \"hardness\" must be a number")
        #expect(t.error(1001, "identify", ["hardness": 6, "limit": 0])?.message == "identify: limit must be from 1 to 20")
    }
}

/// `identify` with `post`: the traits from a post's tags (TagTraits.swift).
@Suite struct NodeIdentifyPostTests {
    let ana: UInt32 = 1001

    func post(_ t: TestNode, caption: String, tags: [String]) throws -> String {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: UInt8(tags.count), count: 500)
        let photo = try t.call(ana, "blob.put", ["chunk": .string(Data(png).base64EncodedString()), "done": true])["hash"]?.stringValue ?? ""
        return try #require(try t.call(ana, "post.create", ["photos": .array([.string(photo)]), "caption": .string(caption),
                                                            "tags": .array(tags.map { .string($0) })])["id"]?.stringValue)
    }

    @Test func aPostsTagsGiveTheTraitsAndTheAnswerSaysWhichWereRead() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let id = try post(t, caption: "Found by the creek", tags: ["Metallic", "streak black", "hardness-6", "hardness-2", "creek"])
        let r = try t.call(1002, "identify", ["post": .string(id)])
        let names = (r["matches"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        for n in ["pyrite", "magnetite", "hematite"] { #expect(names.contains(n), "\(names)") }
        #expect(r["post"]?.stringValue == id)
        #expect(r["tags_read"]?.arrayValue?.compactMap(\.stringValue) == ["metallic: luster metallic", "streak-black: streak black", "hardness-6: hardness 6"])
        #expect(r["tags_ignored"]?.arrayValue?.compactMap(\.stringValue) == ["hardness-2: a second hardness (6 was read first)"])
        // A trait given in the request wins over the tag.
        let soft = try t.call(1002, "identify", ["post": .string(String(id.prefix(6))), "hardness": 1])
        #expect(soft["matches"]?.arrayValue?.first?["reasons"]?.arrayValue?.first?.stringValue?.contains("hardness 1") == true)
        // Without `post` the answer is as before.
        let plain = try t.call(1002, "identify", ["hardness": 6])
        #expect(plain["tags_read"] == nil || plain["tags_read"] == .null)
        #expect(plain["post"] == nil || plain["post"] == .null)
    }

    @Test func aPostWithoutTraitTagsOrAnUnknownPostIsAClearError() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let id = try post(t, caption: "Nice rock", tags: ["quarry", "hardness-15"])
        let e = t.error(1002, "identify", ["post": .string(id)])
        #expect(e?.code == -32007)
        #expect(e?.message.contains("the tags quarry, hardness-15: none names a trait") == true, "\(e?.message ?? "")")
        #expect(e?.message.contains("not used: hardness-15: hardness \"15\" is not a Mohs hardness") == true)
        // With a trait given, such a post is fine: the tags add nothing.
        #expect(try t.call(1002, "identify", ["post": .string(id), "luster": "vitreous"])["tags_read"]?.arrayValue?.isEmpty == true)
        #expect(t.error(1002, "identify", ["post": "ffffffffffff"])?.code == -32004)
        #expect(t.error(1002, "identify", ["post": "xyz"])?.code == -32007)
    }
}
