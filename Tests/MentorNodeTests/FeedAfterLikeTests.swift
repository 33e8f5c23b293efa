import Foundation
import Testing
import MentorAPI

extension NodeTests {
    /// A like takes the card out of the liker's feed at once — before any match — and out of
    /// nobody else's: the one liked still sees the liker, another tutor is still seen.
    @Test func aLikedCardLeavesTheLikersFeedAtOnceAndOnlyTheLikers() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student", courses: ["CS 490"])
        let benID = try signup(t, ben, "Ben", "tutor", courses: ["CS 490"])
        let cyID = try signup(t, cy, "Cy", "tutor", courses: ["CS 490"])
        func feed(_ uid: UInt32) throws -> [String] {
            (try t.call(uid, "feed")["cards"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        }
        #expect(Set(try feed(ana)) == [benID, cyID])

        #expect(try t.call(ana, "like", ["id": .string(benID)])["matched"] == false)
        #expect(try feed(ana) == [cyID], "Ben, liked, is gone from Ana's feed; Cy stays")
        #expect(try feed(ben) == [anaID], "Ben has not answered: Ana is still in his feed")
        #expect(try feed(cy) == [anaID], "Cy's feed does not change")
    }
}
