import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// The product's story on one node, each person a Unix user: Ana (student, CS 490) finds
    /// Ben (tutor, CS 490) ranked above Cy (tutor, ART 100, a newer card); they like each other,
    /// chat, Ana follows the chat live, and Ben's unmatch ends it for both.
    @Test func anaFindsBenTheyMatchChatFollowAndBenUnmatches() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let ana = try e2e.makeUser("ana"), ben = try e2e.makeUser("ben"), cy = try e2e.makeUser("cy")
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }

        let (anaID, benID, cyID) = try step("sign-up: Ana (student), Ben and Cy (tutors); Cy's card the newest") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], as: ana)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], as: ben)
            try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "tutor"], as: cy)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], as: ana)
            try e2e.mm(["profile", "set", "--courses", "CS 490,MATH 221", "--wage", "25", "--bio", "PhD student"], as: ben)
            usleep(5_000)  // Cy's card is the newest, so only the shared course can put Ben first
            try e2e.mm(["profile", "set", "--courses", "ART 100", "--wage", "15"], as: cy)
            return (try #require(try e2e.mmJSON(["whoami"], as: ana)["id"]?.stringValue),
                    try #require(try e2e.mmJSON(["whoami"], as: ben)["id"]?.stringValue),
                    try #require(try e2e.mmJSON(["whoami"], as: cy)["id"]?.stringValue))
        }
        // IDs are taken by a prefix of 12 characters, as the tables print them.
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))

        try step("feeds: Ana's has both tutors, Ben first; Ben's has Ana, never Cy") {
            let anaFeed = try e2e.mmJSON(["feed"], as: ana)["cards"]?.arrayValue ?? []
            #expect(anaFeed.map { $0["id"]?.stringValue } == [benID, cyID], "Ana's feed should be [Ben, Cy]: \(anaFeed)")
            #expect(anaFeed.first?["sharedCourses"]?.strings == ["CS 490"] && anaFeed.last?["sharedCourses"]?.strings == [], "\(anaFeed)")
            let cyUpdated = anaFeed.last?["updatedAt"]?.intValue ?? 0, benUpdated = anaFeed.first?["updatedAt"]?.intValue ?? 0
            #expect(cyUpdated > benUpdated, "Cy's card should be the newer one (\(cyUpdated) vs \(benUpdated))")
            let feedText = try e2e.mm(["feed"], as: ana).stdout
            let benRow = feedText.range(of: benShort), cyRow = feedText.range(of: String(cyID.prefix(12)))
            #expect(benRow != nil && cyRow != nil && benRow!.lowerBound < cyRow!.lowerBound, "Ben's row comes first:\n\(feedText)")
            let filtered = try e2e.mmJSON(["feed", "--course", "cs 490"], as: ana)["cards"]?.arrayValue ?? []
            #expect(filtered.map { $0["id"]?.stringValue } == [benID], "\(filtered)")
            let benFeed = try e2e.mmJSON(["feed"], as: ben)["cards"]?.arrayValue ?? []
            #expect(benFeed.map { $0["id"]?.stringValue } == [anaID], "Ben's feed should be [Ana]: \(benFeed)")
        }

        try step("pass and undo: Cy leaves Ana's feed (on this node only) and comes back") {
            try e2e.mm(["pass", String(cyID.prefix(12))], as: ana)
            #expect(try e2e.mmJSON(["feed"], as: ana)["cards"]?.arrayValue?.map { $0["id"]?.stringValue } == [benID])
            #expect(try e2e.mmJSON(["undo", String(cyID.prefix(12))], as: ana)["undone"] == "pass")
            #expect(try e2e.mmJSON(["feed"], as: ana)["cards"]?.arrayValue?.map { $0["id"]?.stringValue } == [benID, cyID])
        }

        try step("likes: both like, a match both see and Cy does not") {
            let anaLikes = try e2e.mm(["like", benShort], as: ana)
            #expect(anaLikes.stdout.contains("You liked") && !anaLikes.stdout.contains("match!"), "\(anaLikes)")
            let benLikes = try e2e.mm(["like", anaShort], as: ben)
            #expect(benLikes.stdout.contains("it's a match"), "\(benLikes)")
            #expect(try e2e.mmJSON(["matches"], as: ana)["matches"]?.arrayValue?.map { $0["id"]?.stringValue } == [benID])
            #expect(try e2e.mmJSON(["matches"], as: ben)["matches"]?.arrayValue?.map { $0["id"]?.stringValue } == [anaID])
            #expect(try e2e.mmJSON(["matches"], as: cy)["matches"]?.arrayValue?.isEmpty == true)
        }

        try step("chat both ways; Cy cannot read it") {
            try e2e.mm(["chat", benShort, "Hi Ben! Can you help with CS 490?"], as: ana)
            try e2e.mm(["chat", anaShort, "Sure, Monday at noon?"], as: ben)
            let conversation = try e2e.mm(["chat", benShort], as: ana).stdout
            let asked = conversation.range(of: "Hi Ben! Can you help with CS 490?"), answered = conversation.range(of: "Sure, Monday at noon?")
            #expect(asked != nil && answered != nil && asked!.lowerBound < answered!.lowerBound, "\(conversation)")
            let benHistory = try e2e.mmJSON(["chat", anaShort], as: ben)["messages"]?.arrayValue ?? []
            #expect(benHistory.map { $0["mine"] } == [false, true] && benHistory.first?["from"]?.stringValue == anaID, "\(benHistory)")
            let cyPeek = try e2e.run(["chat", anaShort], as: cy)
            #expect(!cyPeek.stdout.contains("Hi Ben") && !cyPeek.stdout.contains("Monday"), "Cy must not read their chat: \(cyPeek)")
        }

        try step("chat --follow: a message sent after it started, then Ben's unmatch ends it") {
            let follow = try e2e.background(["chat", benShort, "--follow"], as: ana)
            defer { follow.kill() }
            // It subscribes before it prints the history, so once the history is out nothing is missed.
            // Not inside #expect: see Steps.swift (a closure literal inside #expect, in a closure, makes
            // the next closure literal of its type run its body instead).
            let history = follow.waitForLine(timeout: .seconds(20)) { $0.contains("Sure, Monday at noon?") }
            #expect(history != nil, "--follow should print the conversation first: \(follow.outputSoFar)")
            try e2e.mm(["chat", anaShort, "Bring your notes"], as: ben)
            let live = follow.waitForLine(timeout: .seconds(20)) { $0.contains("Bring your notes") }
            #expect(live?.contains("Ben") == true, "--follow should print Ben's new message: \(follow.outputSoFar)")
            try e2e.mm(["unmatch", anaShort], as: ben)
            let notice = follow.waitForLine(timeout: .seconds(20)) { $0.contains("Ben ended the match; the conversation is closed.") }
            #expect(notice != nil, "--follow should print the unmatch notice: \(follow.outputSoFar)")
            let followEnd = follow.wait(timeout: .seconds(20))
            #expect(followEnd?.exitCode == 0, "--follow should exit 0 after the unmatch: \(followEnd.map(\.description) ?? "still running")")
        }

        try step("after the unmatch: no messages either way, no match, not back in the feed") {
            let refused = try e2e.run(["chat", benShort, "Are you still there?"], as: ana)
            #expect(refused.exitCode == 1 && refused.stderr.contains("unmatch"), "\(refused)")
            let benRefused = try e2e.run(["chat", anaShort, "One more thing"], as: ben)
            #expect(benRefused.exitCode == 1, "\(benRefused)")
            #expect(try e2e.mmJSON(["matches"], as: ana)["matches"]?.arrayValue?.isEmpty == true)
            #expect(try e2e.mmJSON(["matches"], as: ben)["matches"]?.arrayValue?.isEmpty == true)
            let closed = try e2e.mmJSON(["chat", benShort], as: ana)
            #expect(closed["matched"] == false && closed["unmatchedBy"]?.stringValue == benID, "\(closed)")
            let after = try e2e.mmJSON(["feed"], as: ana)["cards"]?.arrayValue ?? []
            #expect(after.map { $0["id"]?.stringValue } == [cyID], "an unmatched person does not come back: \(after)")
        }
    }
}
