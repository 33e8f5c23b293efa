import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Three daemons: Cy's node C is the only link between Ana's node A and Ben's node B (B dials
    /// C; A dials a capturing relay that forwards to C and records every byte both ways). Ana and
    /// Ben match and chat. Neither the chat texts, nor the liked accounts' public keys, nor even
    /// the public bio appear in the capture (everything after the handshake is encrypted); C's
    /// replica file holds no chat text, C has no pair entries and Cy has no match — while Ana and
    /// Ben see the match and both messages, and C did relay every record (digests equal).
    @Test func likesAndChatsAreNotReadableOnTheWireOrInARelaysReplica() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let stateC = e2e.path("state-c")
        var daemons: [Daemon] = []
        var relay: CaptureRelay?
        defer {
            relay?.stop()
            for d in daemons { d.kill() }
        }

        let c = try e2e.startDaemon(stateDir: stateC, socket: socketC)
        daemons.append(c)
        let portC = try listenPort(e2e, socketC)
        let tap = try CaptureRelay(targetPort: portC)
        relay = tap
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portC)"])
        daemons.append(b)
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA, extra: ["--peer", "127.0.0.1:\(tap.port)"])
        daemons.append(a)
        func logs() -> String { "log A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }

        let bioMarker = "public-bio-marker-9931"
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30", "--bio", bioMarker], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "25"], socket: socketB)
        try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "student"], socket: socketC)
        try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketC)
        let anaID = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue)
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))

        func feedIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        let anaFeed = try poll(timeout: .seconds(15), { try feedIDs(socketA) }, until: { $0.contains(benID) })
        try #require(anaFeed.contains(benID), "Ana should see Ben through C: \(anaFeed)\n\(logs())")
        let benFeed = try poll(timeout: .seconds(15), { try feedIDs(socketB) }, until: { $0.contains(anaID) })
        try #require(benFeed.contains(anaID), "Ben should see Ana through C: \(benFeed)\n\(logs())")

        try e2e.mm(["like", benShort], socket: socketA)
        try e2e.mm(["like", anaShort], socket: socketB)
        func matchIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        let anaMatches = try poll(timeout: .seconds(15), { try matchIDs(socketA) }, until: { $0 == [benID] })
        #expect(anaMatches == [benID], "Ana should see the match: \(anaMatches)\n\(logs())")
        let benMatches = try poll(timeout: .seconds(15), { try matchIDs(socketB) }, until: { $0 == [anaID] })
        #expect(benMatches == [anaID], "Ben should see the match: \(benMatches)\n\(logs())")
        guard anaMatches == [benID], benMatches == [anaID] else { return }

        let anaText = "zebra-secret-4711", benText = "yak-secret-0815"
        try e2e.mm(["chat", benShort, anaText], socket: socketA)
        func texts(_ socket: String, _ other: String) throws -> [String] {
            try mmJSON(e2e, ["chat", other], socket)["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        }
        let benSees = try poll(timeout: .seconds(15), { try texts(socketB, anaShort) }, until: { $0.contains(anaText) })
        #expect(benSees == [anaText], "Ben should receive Ana's message: \(benSees)\n\(logs())")
        try e2e.mm(["chat", anaShort, benText], socket: socketB)
        let anaSees = try poll(timeout: .seconds(15), { try texts(socketA, benShort) }, until: { $0.contains(benText) })
        #expect(anaSees == [anaText, benText], "Ana should see both messages: \(anaSees)\n\(logs())")

        // Every record went through C: all three digests become equal.
        func digest(_ socket: String) throws -> String {
            let r = try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")
            return "\(r["digest"]?.stringValue ?? "?")/\(r["records"]?.intValue ?? -1)"
        }
        let digests = try poll(timeout: .seconds(15), { try [socketA, socketB, socketC].map(digest) }, until: { Set($0).count == 1 })
        #expect(Set(digests).count == 1, "A, B and C should hold the same records: \(digests)\n\(logs())")

        // C, a relay for the pair, has no match and no pair entry.
        let cyMatches = try mmJSON(e2e, ["matches"], socketC)["matches"]?.arrayValue
        #expect(cyMatches?.isEmpty == true, "Cy should have no matches: \(String(describing: cyMatches))")

        // (1) The capture: traffic flowed, and none of the secrets (nor the public bio) is in it.
        tap.stop()
        let capture = tap.captured
        #expect(tap.connectionCount >= 1 && capture.count > 1000 && !tap.truncated,
                "the relay should have carried A's traffic: \(tap.connectionCount) connections, \(capture.count) bytes")
        print("privacy: relay carried \(capture.count) bytes over \(tap.connectionCount) connection(s); digests \(digests)")
        let anaKey = try accountKeyBytes(anaID), benKey = try accountKeyBytes(benID)
        #expect(!capture.containsBytes(Array(anaText.utf8)), "Ana's chat text is readable on the wire")
        #expect(!capture.containsBytes(Array(benText.utf8)), "Ben's chat text is readable on the wire")
        #expect(!capture.containsBytes(benKey), "the key Ana liked (Ben's) is readable on the wire")
        #expect(!capture.containsBytes(anaKey), "the key Ben liked (Ana's) is readable on the wire")
        #expect(!capture.containsBytes(Array(bioMarker.utf8)), "a public bio is readable on the wire: frames are not encrypted")
        #expect(!capture.containsBytes(Array(anaID.utf8)) && !capture.containsBytes(Array(benID.utf8)))

        // (2) C's replica, read raw after a clean stop.
        let pairCount = try e2e.tool(["/usr/bin/sqlite3", stateC + "/replica.db", "select count(*) from pair_entries"])
        let stoppedC = c.terminate()
        #expect(stoppedC != nil, "C did not stop on SIGTERM")
        var replica: [UInt8] = []
        for file in [stateC + "/replica.db", stateC + "/replica.db-wal"] {
            if let data = FileManager.default.contents(atPath: file) { replica += Array(data) }
        }
        #expect(replica.count > 0, "C's replica.db should exist")
        #expect(replica.containsBytes(Array(bioMarker.utf8)), "C's replica should hold Ana's public card (else this read proves nothing)")
        #expect(!replica.containsBytes(Array(anaText.utf8)), "Ana's chat text is readable in C's replica")
        #expect(!replica.containsBytes(Array(benText.utf8)), "Ben's chat text is readable in C's replica")
        let afterStop = try e2e.tool(["/usr/bin/sqlite3", stateC + "/replica.db", "select count(*) from pair_entries"])
        #expect(pairCount.status.exitCode == 0 && pairCount.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "C should have no pair entries (while running): \(pairCount.status) \(pairCount.output)")
        #expect(afterStop.status.exitCode == 0 && afterStop.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "C should have no pair entries: \(afterStop.status) \(afterStop.output)")
    }
}
