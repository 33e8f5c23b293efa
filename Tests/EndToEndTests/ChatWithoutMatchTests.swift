import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 11, item 2, through two real daemons (B dials A): Ben on B turns attacker. His own
    /// account key (the key file in B's state directory) signs chat records whose payload fields
    /// he chooses, and `mentormate-hostile-peer chat` hands them to A over a peer link.
    ///
    /// Attack 1: Ana liked Ben and withdrew her like; Ben likes her and writes against her
    /// withdrawn like — naming its record ID, and in the old payload with only a peer seq pointing
    /// at it. Attack 2: before Ana likes him again, Ben writes with a huge peer seq, naming a
    /// made-up like and none. When Ana does like him (a match), none of these messages appears in
    /// Ana's `chat` history or in `matches`, on A or on Ben's own B, and no `event.message` is
    /// sent for them; Ben's honest message after the match flows, and Ana's answer too.
    @Test func forgedChatsWithoutAMatchAreNeverShownCountedOrNotified() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), stateB = e2e.path("state-b")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: stateB, socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)" }
        let timeout: Duration = .seconds(20)

        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketB)
        let anaID = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue)
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))
        let anaHex = try hex(accountKeyBytes(anaID)), benHex = try hex(accountKeyBytes(benID))
        // Ben's account key (signup made it on B, beside the device key): it signs the forgeries.
        let benKeyFile = stateB + "/accounts/\(getuid()).account.key"
        #expect(FileManager.default.fileExists(atPath: benKeyFile), "Ben's account key file should be at \(benKeyFile)")

        // Ana (root on A) listens for messages from the start.
        let watchA = try RawConnection(socketA)
        defer { watchA.close() }
        let subscribed = watchA.call("subscribe", ["events": ["message"]])
        #expect(subscribed?["result"]?["events"]?.strings == ["message"], "subscribe: \(String(describing: subscribed))")

        struct Digest: Equatable { let digest: String, records: Int64 }
        func digest(_ socket: String) throws -> Digest {
            let client = try RPCClient(path: socket, timeout: .seconds(15))
            defer { client.close() }
            let r = try client.call("replica.digest")
            return Digest(digest: r["digest"]?.stringValue ?? "", records: r["records"]?.intValue ?? -1)
        }
        /// Waits until A and B hold the same records (so Ben's next seq is the same on both).
        func converge(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let d = try poll(timeout: timeout, { [try digest(socketA), try digest(socketB)] }, until: { $0[0] == $0[1] })
            try #require(d[0] == d[1], "A and B should converge (\(what)): \(d)\(logs())", sourceLocation: sourceLocation)
        }
        /// One row of B's replica, read with sqlite3 (B keeps running; the file is in WAL mode).
        func queryB(_ sql: String) throws -> String {
            let r = try e2e.tool(["/usr/bin/sqlite3", stateB + "/replica.db", sql])
            guard r.status.exitCode == 0 else { throw E2EError("sqlite3 \(sql): \(r.status) \(r.output)") }
            return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func benSeq() throws -> UInt64 {
            guard let n = UInt64(try queryB("SELECT contiguous FROM authors WHERE key = X'\(benHex)'")) else {
                throw E2EError("no contiguous seq of Ben on B")
            }
            return n
        }
        var forged: [String] = []
        /// Ben's key signs a chat at his next seq with the given payload fields; A gets it over a
        /// peer link and relays it to B.
        func forge(_ text: String, peerSeq: UInt64, answers: String?) throws {
            let seq = try benSeq() + 1
            var arguments = [hostilePeer, "127.0.0.1", "\(portA)", "chat", "--from", "127.0.0.41", "--wait", "1",
                             "--key", benKeyFile, "--to", anaID, "--seq", "\(seq)", "--peer-seq", "\(peerSeq)", "--text", text]
            if let answers { arguments += ["--answers", answers] }
            let (status, output) = try e2e.tool(arguments, timeout: .seconds(30))
            try #require(status.exitCode == 0 && output.contains("result chat"), "mentormate-hostile-peer chat: \(status) \(output)")
            forged.append(text)
            // A stored it (Ben's contiguous seq there moved on), and B has it back from A.
            try converge("after forging \(text)")
            try #require(try benSeq() == seq, "the forged record at Ben's seq \(seq) should be applied\(logs())")
        }
        func history(_ socket: String, _ other: String) throws -> JSON { try mmJSON(e2e, ["chat", other], socket) }
        func texts(_ socket: String, _ other: String) throws -> [String] {
            try history(socket, other)["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        }
        func matches(_ socket: String) throws -> [JSON] { try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue ?? [] }

        // Attack 1. Ana likes Ben, then withdraws the like; Ben likes her (no match).
        try e2e.mm(["like", benShort], socket: socketA)
        try converge("Ana's like")
        let withdrawnLike = try queryB("""
            SELECT hex(record_id) || ' ' || seq FROM pair_entries
            WHERE account = X'\(benHex)' AND author = X'\(anaHex)' AND kind = 1 AND liked = 1
            """).split(separator: " ")
        try #require(withdrawnLike.count == 2, "B should hold Ana's like of Ben: \(withdrawnLike)")
        let likeID = String(withdrawnLike[0]), likeSeq = try #require(UInt64(withdrawnLike[1]))
        try e2e.mm(["undo", benShort], socket: socketA)
        try converge("Ana's withdrawal")
        try e2e.mm(["like", anaShort], socket: socketB)
        try converge("Ben's like")
        let refused = try e2e.run(["chat", benShort, "Ana may not write"], socket: socketA)
        #expect(refused.exitCode == 1, "Ana's own send without a match should be refused: \(refused)")
        try forge("attack-1: answers Ana's withdrawn like", peerSeq: likeSeq, answers: likeID)
        try forge("attack-1: old payload, peer seq at her withdrawn like", peerSeq: likeSeq, answers: nil)
        for (socket, other, who) in [(socketA, benShort, "Ana on A"), (socketB, anaShort, "Ben on B")] {
            let h = try history(socket, other)
            #expect(h["matched"] == false && (h["messages"]?.arrayValue ?? []).isEmpty,
                    "\(who) should see no match and no message: \(h)\(logs())")
        }

        // Attack 2. Before Ana likes him again: a huge peer seq, with a made-up like and none.
        try forge("attack-2: huge peer seq, made-up like", peerSeq: 1 << 40, answers: String(repeating: "ab", count: 32))
        try forge("attack-2: huge peer seq, old payload", peerSeq: 1 << 40, answers: nil)

        // Ana likes Ben again: a match. Not one forged message appears, on either node.
        let liked = try e2e.mm(["like", benShort], socket: socketA)
        #expect(liked.stdout.contains("match"), "Ana's like should make the match: \(liked)")
        try converge("Ana's new like")
        for (socket, other, who) in [(socketA, benShort, "Ana on A"), (socketB, anaShort, "Ben on B")] {
            let h = try history(socket, other)
            #expect(h["matched"] == true && (h["messages"]?.arrayValue ?? []).isEmpty,
                    "\(who) should see the match and none of the forged messages: \(h)\(logs())")
            let m = try matches(socket)
            #expect(m.count == 1 && m.first?["messages"]?.intValue == 0 && m.first?["lastMessage"] == .null,
                    "\(who)'s matches should count no message: \(m)")
        }

        // Honest messages flow: Ben's, then Ana's answer.
        let hello = "honest hello after the match"
        try e2e.mm(["chat", anaShort, hello], socket: socketB)
        let anaSees = try poll(timeout: timeout, { try texts(socketA, benShort) }, until: { !$0.isEmpty })
        #expect(anaSees == [hello], "Ana should see Ben's honest message only: \(anaSees)\(logs())")
        let answer = "honest answer"
        try e2e.mm(["chat", benShort, answer], socket: socketA)
        let benSees = try poll(timeout: timeout, { try texts(socketB, anaShort) }, until: { $0.count >= 2 })
        #expect(benSees == [hello, answer], "Ben should see the two honest messages: \(benSees)\(logs())")
        #expect(try matches(socketA).first?["messages"]?.intValue == 2)

        // The notifications Ana got: her answer and Ben's hello, never a forged message.
        var notified: [String] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !notified.contains(answer), let line = watchA.readJSON(timeout: deadline - .now) {
            if line["method"]?.stringValue == "event.message", let text = line["params"]?["message"]?["text"]?.stringValue {
                notified.append(text)
            }
        }
        #expect(notified.sorted() == [answer, hello].sorted(), "event.message should be sent for the honest messages only: \(notified)")
        #expect(forged.count == 4)
        for text in forged {
            #expect(!notified.contains(text), "a forged message was notified: \(text)")
        }
    }
}

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }
