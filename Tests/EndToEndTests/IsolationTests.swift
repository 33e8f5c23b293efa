import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// SPEC §5: the daemon tells callers apart by SO_PEERCRED; each Unix user reads and acts for
    /// its own account only, though the socket is open to everyone (mode 0666).
    @Test func eachUnixUserReadsAndActsOnlyForItsOwnAccount() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let a = try e2e.makeUser("a"), b = try e2e.makeUser("b")
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }

        var st = stat()
        #expect(stat(e2e.socket, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK && st.st_mode & 0o777 == 0o666,
                "the socket should be mode 0666 (who may do what is decided per connection): \(String(st.st_mode, radix: 8))")

        let before = try e2e.run(["whoami"], as: b)
        #expect(before.exitCode == 1 && before.stderr.contains("mentormate signup"), "\(before)")
        try e2e.mm(["signup", "--email", "ann@uni.edu", "--name", "Ann", "--role", "student"], as: a)
        try e2e.mm(["signup", "--email", "bob@uni.edu", "--name", "Bob", "--role", "tutor"], as: b)

        // Each sees its own account, and only it.
        let ann = try e2e.mmJSON(["whoami"], as: a), bob = try e2e.mmJSON(["whoami"], as: b)
        let annID = try #require(ann["id"]?.stringValue), bobID = try #require(bob["id"]?.stringValue)
        #expect(annID != bobID)
        #expect(ann["name"] == "Ann" && ann["email"] == "ann@uni.edu" && ann["role"] == "student", "\(ann)")
        #expect(bob["name"] == "Bob" && bob["email"] == "bob@uni.edu" && bob["role"] == "tutor", "\(bob)")
        let annText = try e2e.mm(["whoami"], as: a)
        #expect(annText.stdout.contains(annID) && !annText.stdout.contains(bobID) && !annText.stdout.contains("bob@"), "\(annText)")
        // Root (the daemon's own user) has no account: theirs are not root's either.
        let root = try e2e.run(["whoami"])
        #expect(root.exitCode == 1 && root.stderr.contains("mentormate signup"), "\(root)")

        // A's `profile set` changes A's card only.
        try e2e.mm(["profile", "set", "--bio", "Ann's bio", "--courses", "CS 490"], as: a)
        let bobCard = try e2e.mmJSON(["profile", "show"], as: b)
        #expect(bobCard["id"]?.stringValue == bobID && bobCard["name"] == "Bob" && bobCard["bio"] == .null
                    && bobCard["courses"]?.strings == [], "\(bobCard)")
        let annSeenByBob = try e2e.mmJSON(["profile", "show", annID], as: b)
        #expect(annSeenByBob["bio"] == "Ann's bio", "cards are public: \(annSeenByBob)")

        // A's like is A's: it leaves A's feed, not B's, and B has nothing to undo.
        try e2e.mm(["like", bobID], as: a)
        let annFeed = try e2e.mmJSON(["feed"], as: a)["cards"]?.arrayValue ?? []
        #expect(!annFeed.contains { $0["id"]?.stringValue == bobID }, "Ann liked Bob; he must leave her feed: \(annFeed)")
        let bobFeed = try e2e.mmJSON(["feed"], as: b)["cards"]?.arrayValue ?? []
        #expect(bobFeed.contains { $0["id"]?.stringValue == annID }, "Bob liked nobody; Ann stays in his feed: \(bobFeed)")
        let bobUndo = try e2e.run(["undo", annID], as: b)
        #expect(bobUndo.exitCode == 1 && bobUndo.stderr.contains("no like or pass"), "\(bobUndo)")
        #expect(try e2e.mmJSON(["matches"], as: b)["matches"]?.arrayValue?.isEmpty == true)
        #expect(try e2e.mmJSON(["like", annID], as: b)["matched"] == true)

        // A's message is A's.
        try e2e.mm(["chat", bobID, "hello from Ann"], as: a)
        let bobHistory = try e2e.mmJSON(["chat", annID], as: b)["messages"]?.arrayValue ?? []
        #expect(bobHistory.count == 1 && bobHistory.first?["from"]?.stringValue == annID
                    && bobHistory.first?["mine"] == false && bobHistory.first?["text"] == "hello from Ann", "\(bobHistory)")
        let annHistory = try e2e.mmJSON(["chat", bobID], as: a)["messages"]?.arrayValue ?? []
        #expect(annHistory.count == 1 && annHistory.first?["mine"] == true, "\(annHistory)")

        // Over the raw socket A cannot name another account as the actor: no method takes one.
        func request(_ id: Int, _ method: String, _ params: JSON) -> String {
            JSON.object(["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method), "params": params]).description
        }
        let forged: [(String, JSON, String)] = [
            ("profile.set", ["account": .string(bobID), "name": "Hacked"], "account"),
            ("profile.set", ["uid": .int(Int64(b.uid)), "bio": "Hacked"], "uid"),
            ("account.whoami", ["uid": .int(Int64(b.uid))], "uid"),
            ("account.logout", ["account": .string(bobID)], "account"),
            ("chat.send", ["id": .string(annID), "from": .string(bobID), "text": "forged"], "from"),
            ("like", ["id": .string(annID), "as": .string(bobID)], "as"),
            ("subscribe", ["events": ["message"], "uid": .int(Int64(b.uid))], "uid"),
        ]
        let answers = try e2e.socat([request(0, "account.whoami", [:])]
                                        + forged.enumerated().map { request($0.offset + 1, $0.element.0, $0.element.1) }, as: a)
        #expect(answers.count == forged.count + 1, "\(answers)")
        #expect(answers.first?["result"]?["id"]?.stringValue == annID, "the socket identifies Ann: \(answers.first.map(\.description) ?? "no answer")")
        for (answer, (method, _, parameter)) in zip(answers.dropFirst(), forged) {
            #expect(answer.errorCode == -32602 && answer["error"]?["message"]?.stringValue?.contains("\"\(parameter)\"") == true,
                    "\(method) with \"\(parameter)\" must be refused as invalid params: \(answer)")
        }
        let bobAfter = try e2e.mmJSON(["profile", "show"], as: b)
        #expect(bobAfter["name"] == "Bob" && bobAfter["bio"] == .null, "\(bobAfter)")
        #expect(try e2e.mmJSON(["whoami"], as: b)["unlocked"] == true)
        #expect(try e2e.mmJSON(["chat", annID], as: b)["messages"]?.arrayValue?.count == 1)

        // Logging out locks A's account, not B's.
        try e2e.mm(["logout"], as: a)
        let annLocked = try e2e.run(["profile", "set", "--bio", "locked"], as: a)
        #expect(annLocked.exitCode == 1 && annLocked.stderr.contains("locked"), "\(annLocked)")
        try e2e.mm(["profile", "set", "--bio", "Bob still writes"], as: b)
        #expect(try e2e.mmJSON(["profile", "show"], as: b)["bio"] == "Bob still writes")
        #expect(try e2e.mmJSON(["profile", "show", bobID], as: a)["bio"] == "Bob still writes")
    }
}
