import Foundation
import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

/// `follow`, `unfollow`, `followers`, `following` and the counts on cards, through the node's API.
@Suite struct NodeFollowTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003

    @Test func followingChangesTheListsAndTheCountsAndMistakesWriteNothing() throws {
        let t = try TestNode()
        for (uid, name) in [(ana, "Ana"), (ben, "Ben"), (cy, "Cy")] {
            try t.call(uid, "account.signup", ["email": .string("\(name)@uni.edu"), "name": .string(name), "role": "student"])
        }
        func id(_ uid: UInt32) throws -> String { try #require(try t.call(uid, "account.whoami")["id"]?.stringValue) }
        let (anaID, benID, cyID) = (try id(ana), try id(ben), try id(cy))
        #expect(try t.call(ana, "follow", ["id": .string(benID)]) == ["id": .string(benID), "following": true])
        try t.call(cy, "follow", ["id": .string(benID)])
        try t.call(ben, "follow", ["id": .string(anaID)])
        let followers = try t.call(ana, "followers", ["id": .string(benID)])
        #expect(followers["count"] == 2 && Set((followers["accounts"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }) == [anaID, cyID])
        #expect((try t.call(ana, "following")["accounts"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue } == ["Ben"])
        let benCard = try t.call(cy, "profile.show", ["id": .string(benID)])
        #expect(benCard["followers"] == 2 && benCard["following"] == 1)

        let before = try t.node.replica.counts()
        let mistakes: [(UInt32, String, String, String)] = [
            (ana, "follow", benID, "you follow"), (ana, "unfollow", cyID, "you do not follow"),
            (ana, "follow", anaID, "that is your own account"), (ana, "follow", "mm1qqqqqq", "no account"),
        ]
        for (uid, method, target, reason) in mistakes {
            let e = t.error(uid, method, ["id": .string(target)])
            #expect(e?.message.contains(reason) == true, "\(method) \(target): \(String(describing: e))")
        }
        #expect(try t.node.replica.counts() == before, "no record written by a refused follow")

        try t.call(ana, "unfollow", ["id": .string(benID)])
        #expect(try t.call(cy, "profile.show", ["id": .string(benID)])["followers"] == 1)
        #expect(try t.call(ana, "following")["count"] == 0)
    }
}
