import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 4, "The story", across two daemons over loopback (B dials A with `--peer`): Ana
    /// (student, CS 490) is root on node A; Ben (tutor, CS 490) is root on node B; Cy (tutor,
    /// ART 100 only — no course shared with Ana) is a second Unix user on node B, so Cy's card
    /// crosses the link too. Ana finds Ben and Ben finds Ana; Cy ranks below Ben in Ana's feed and
    /// does not appear at all once she filters for her course (docs/API.md: `feed` shows every
    /// tutor to a student, ranked by shared courses; `course` keeps only cards that list it; a
    /// tutor never sees another tutor). Both like: a match both nodes list and both raw
    /// subscribers are told of (`event.match`). Each side follows the chat with `chat --follow`
    /// and sees the other node's message arrive live; Ben unmatches; Ana's follower prints the
    /// notice and ends, and Ana's next send fails naming the unmatch.
    @Test func crossNodeStoryAnaOnAAndBenOnBMatchChatFollowAndUnmatch() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        // A uses the harness's default socket, so `e2e.background` runs Ana's follower on A.
        let socketA = e2e.socket, socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        let cy = try e2e.makeUser("cy")
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)" }
        let timeout: Duration = .seconds(20)

        let (anaID, benID, cyID) = try step("sign-up: Ana (student) on A; Ben and Cy (tutors) on B, Cy's card the newest") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "CS 490,MATH 221", "--wage", "25", "--bio", "PhD student"], socket: socketB)
            try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "tutor"], as: cy, socket: socketB)
            usleep(5_000)  // Cy's card is the newest, so only the shared course can put Ben first
            try e2e.mm(["profile", "set", "--courses", "ART 100", "--wage", "15"], as: cy, socket: socketB)
            return (try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue),
                    try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue),
                    try #require(try e2e.mm(["whoami", "--json"], as: cy, socket: socketB).json?["id"]?.stringValue))
        }
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))

        // Feeds, once the cards crossed the link.
        func feed(_ socket: String, _ extra: [String] = []) throws -> [JSON] {
            try mmJSON(e2e, ["feed"] + extra, socket)["cards"]?.arrayValue ?? []
        }
        func ids(_ cards: [JSON]) -> [String] { cards.compactMap { $0["id"]?.stringValue } }
        try step("feeds across the link: Ana's [Ben, Cy] by shared course, [Ben] for CS 490; Ben's [Ana]") {
            let anaFeed = try poll(timeout: timeout, { try feed(socketA) }, until: { ids($0).count == 2 })
            #expect(ids(anaFeed) == [benID, cyID], "Ana's feed on A should be [Ben, Cy], Ben first: \(anaFeed)\(logs())")
            #expect(anaFeed.first?["sharedCourses"]?.strings == ["CS 490"] && anaFeed.last?["sharedCourses"]?.strings == [], "\(anaFeed)")
            let benUpdated = anaFeed.first?["updatedAt"]?.intValue ?? 0, cyUpdated = anaFeed.last?["updatedAt"]?.intValue ?? 0
            #expect(cyUpdated > benUpdated, "Cy's card should be the newer one (\(cyUpdated) vs \(benUpdated)): ranked by the shared course, not recency")
            // The account with no shared course does not appear once Ana asks for her course.
            let filtered = try feed(socketA, ["--course", "CS 490"])
            #expect(ids(filtered) == [benID], "Ana's feed for CS 490 should hold Ben only, never Cy: \(filtered)")
            let benFeed = try poll(timeout: timeout, { try feed(socketB) }, until: { !$0.isEmpty })
            #expect(ids(benFeed) == [anaID], "Ben's feed on B should be [Ana] (Cy is a tutor too): \(benFeed)\(logs())")
            #expect(benFeed.first?["sharedCourses"]?.strings == ["CS 490"], "\(benFeed)")
        }

        // Raw subscribers for Ana on A and Ben on B (both root there): the match and the unmatch.
        let watchA = try RawConnection(socketA), watchB = try RawConnection(socketB)
        defer { watchA.close(); watchB.close() }
        try step("subscribers for Ana on A and Ben on B") {
            for (watch, node) in [(watchA, "A"), (watchB, "B")] {
                let answer = watch.call("subscribe", ["events": ["match", "unmatch"]])
                #expect(answer?["result"]?["events"]?.strings.sorted() == ["match", "unmatch"], "subscribe on \(node): \(String(describing: answer))")
            }
        }
        /// The next notification `method` on `watch` whose params satisfy `match`, skipping others.
        func notification(_ watch: RawConnection, _ method: String, where match: (JSON) -> Bool) -> JSON? {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline, let line = watch.readJSON(timeout: deadline - .now) {
                if line["method"]?.stringValue == method, let params = line["params"], match(params) { return params }
            }
            return nil
        }

        struct Digest: Equatable { let digest: String, records: Int64 }
        func digest(_ socket: String) throws -> Digest {
            let client = try RPCClient(path: socket, timeout: .seconds(15))
            defer { client.close() }
            let r = try client.call("replica.digest")
            return Digest(digest: r["digest"]?.stringValue ?? "", records: r["records"]?.intValue ?? -1)
        }

        func matchIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        try step("likes: Ana's reaches B, Ben's completes the match; both nodes list it, both subscribers are told") {
            // Ana likes Ben on A; once her like reached B, Ben's like completes the match there.
            let anaLikes = try e2e.mm(["like", benShort], socket: socketA)
            #expect(anaLikes.stdout.contains("You liked") && !anaLikes.stdout.contains("match!"), "\(anaLikes)")
            let synced = try poll(timeout: timeout, { [try digest(socketA), try digest(socketB)] }, until: { $0[0] == $0[1] })
            #expect(synced[0] == synced[1], "Ana's like should reach B: digests \(synced)\(logs())")
            let benLikes = try e2e.mm(["like", anaShort], socket: socketB)
            #expect(benLikes.stdout.contains("it's a match"), "\(benLikes)")

            let anaMatches = try poll(timeout: timeout, { try matchIDs(socketA) }, until: { $0 == [benID] })
            #expect(anaMatches == [benID], "Ana should see the match on A: \(anaMatches)\(logs())")
            #expect(try matchIDs(socketB) == [anaID])
            #expect(try e2e.mm(["matches", "--json"], as: cy, socket: socketB).json?["matches"]?.arrayValue?.isEmpty == true)
            let matchOnA = notification(watchA, "event.match") { $0["id"]?.stringValue == benID }
            #expect(matchOnA?["name"]?.stringValue == "Ben", "A should notify Ana of the match with Ben: \(String(describing: matchOnA))")
            let matchOnB = notification(watchB, "event.match") { $0["id"]?.stringValue == anaID }
            #expect(matchOnB?["name"]?.stringValue == "Ana", "B should notify Ben of the match with Ana: \(String(describing: matchOnB))")
        }

        // Both follow the conversation, each on their own node; each waits until its follower
        // has printed the (empty) history: it subscribed first, so what follows arrives live.
        let anaFollow = try e2e.background(["chat", benShort, "--follow"])
        defer { anaFollow.kill() }
        var followEnvironment = ChildProcess.baseEnvironment
        followEnvironment["HOME"] = "/"
        followEnvironment["XDG_RUNTIME_DIR"] = nil
        let benFollow = try ChildProcess([e2e.binaries.client, "--socket", socketB, "chat", anaShort, "--follow"],
                                         environment: followEnvironment, stdout: .pipe, stderr: .file(e2e.path("ben-follow.err")))
        defer { benFollow.kill() }
        try step("chat --follow on both nodes: each side's message arrives live on the other; Cy cannot read it") {
            for (follower, who) in [(anaFollow, "Ana's"), (benFollow, "Ben's")] {
                // Not inside #expect: in a closure (this step), a closure literal inside #expect makes
            // the next closure literal of its type run its body instead (Swift 6.3; Steps.swift).
            let empty = follower.waitForLine(timeout: timeout) { line in line.contains("No messages yet.") }
                #expect(empty != nil, "\(who) --follow should print the empty conversation first: \(follower.outputSoFar)")
            }

            // A message from each side appears in the other node's follower.
            try e2e.mm(["chat", benShort, "Hi Ben! Can you help with CS 490?"], socket: socketA)
            let onB = benFollow.waitForLine(timeout: timeout) { line in line.contains("Hi Ben! Can you help with CS 490?") }
            #expect(onB?.contains("Ana") == true, "Ben's --follow on B should print Ana's message from A (got \(String(describing: onB))): \(benFollow.outputSoFar); its stderr: \((try? String(contentsOfFile: e2e.path("ben-follow.err"), encoding: .utf8)) ?? "")\(logs())")
            try e2e.mm(["chat", anaShort, "Sure, Monday at noon?"], socket: socketB)
            let onA = anaFollow.waitForLine(timeout: timeout) { line in line.contains("Sure, Monday at noon?") }
            #expect(onA?.contains("Ben") == true, "Ana's --follow on A should print Ben's message from B: \(anaFollow.outputSoFar)\(logs())")
            let anaHistory = try mmJSON(e2e, ["chat", benShort], socketA)["messages"]?.arrayValue ?? []
            #expect(anaHistory.map { $0["text"]?.stringValue } == ["Hi Ben! Can you help with CS 490?", "Sure, Monday at noon?"]
                    && anaHistory.map { $0["mine"] } == [true, false], "Ana's history on A, in causal order: \(anaHistory)")
            let cyPeek = try e2e.run(["chat", anaShort], as: cy, socket: socketB)
            #expect(!cyPeek.stdout.contains("Hi Ben") && !cyPeek.stdout.contains("Monday"), "Cy must not read their chat: \(cyPeek)")
        }

        try step("Ben unmatches on B: both followers print the notice and end; A's subscriber is told") {
            // Ben unmatches on B: both followers print the notice and end; A's subscriber is told.
            try e2e.mm(["unmatch", anaShort], socket: socketB)
            let benEnd = benFollow.waitForLine(timeout: timeout) { line in line.contains("You ended the match; the conversation is closed.") }
            #expect(benEnd != nil, "Ben's --follow should print his own unmatch: \(benFollow.outputSoFar)")
            let anaEnd = anaFollow.waitForLine(timeout: timeout) { line in line.contains("Ben ended the match; the conversation is closed.") }
            #expect(anaEnd != nil, "Ana's --follow on A should print Ben's unmatch notice: \(anaFollow.outputSoFar)\(logs())")
            for (follower, who) in [(anaFollow, "Ana's"), (benFollow, "Ben's")] {
                let end = follower.wait(timeout: timeout)
                #expect(end?.exitCode == 0, "\(who) --follow should exit 0 after the unmatch: \(end.map(\.description) ?? "still running")")
            }
            let unmatchOnA = notification(watchA, "event.unmatch") { $0["id"]?.stringValue == benID }
            #expect(unmatchOnA?["by"]?.stringValue == benID, "A should notify Ana that Ben unmatched: \(String(describing: unmatchOnA))")
        }

        try step("after the unmatch: no sends either way, no match, not back in the feed, the same records on both") {
            // Ana can no longer send (the client says why); nor can Ben; the match is gone on both nodes.
            let refused = try e2e.run(["chat", benShort, "Are you still there?"], socket: socketA)
            #expect(refused.exitCode == 1 && refused.stderr.contains("unmatch"), "Ana's send after the unmatch should fail naming it: \(refused)")
            let benRefused = try e2e.run(["chat", anaShort, "One more thing"], socket: socketB)
            #expect(benRefused.exitCode == 1 && benRefused.stderr.contains("unmatch"), "\(benRefused)")
            #expect(try matchIDs(socketA).isEmpty && matchIDs(socketB).isEmpty)
            let closed = try mmJSON(e2e, ["chat", benShort], socketA)
            #expect(closed["matched"] == false && closed["unmatchedBy"]?.stringValue == benID, "\(closed)")
            #expect(try ids(feed(socketA)) == [cyID], "an unmatched person does not come back to Ana's feed")
            #expect(try e2e.mm(["chat", benShort], socket: socketA).stdout.contains("Ben ended the match; the conversation is closed."))
            let final = try poll(timeout: timeout, { [try digest(socketA), try digest(socketB)] }, until: { $0[0] == $0[1] })
            #expect(final[0] == final[1], "A and B should end with the same records: \(final)")
        }
    }
}
