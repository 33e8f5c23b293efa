import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Two daemons over loopback, B given A with `--peer`: Ana (student, CS 490) on A and Ben
    /// (tutor, CS 490) on B find each other in their feeds, match, and Ana's message reaches
    /// Ben's node; each node lists the other in `peers`.
    @Test func twoNodesWithAStaticPeerSyncFeedMatchAndChat() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let statusA = try mmJSON(e2e, ["status"], socketA)
        let portA = try #require(statusA["listen"]?["port"]?.intValue, "status --json should show A's listen port: \(statusA)")
        #expect(portA > 0)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        let nodeA = try #require(statusA["node"]?.stringValue)
        let nodeB = try #require(try mmJSON(e2e, ["status"], socketB)["node"]?.stringValue)

        let (anaID, benID) = try step("sign-up: one account per node (root on each)") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "CS 490,MATH 221", "--wage", "25"], socket: socketB)
            return (try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue),
                    try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue))
        }
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))

        try step("feeds: each sees the other, pushed across the link") {
            func feedIDs(_ socket: String) throws -> [String] {
                try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            }
            let anaFeed = try poll { try feedIDs(socketA) } until: { $0 == [benID] }
            #expect(anaFeed == [benID], "Ana's feed should show Ben: \(anaFeed)\nlog A:\n\(a.log)\nlog B:\n\(b.log)")
            let benFeed = try poll { try feedIDs(socketB) } until: { $0 == [anaID] }
            #expect(benFeed == [anaID], "Ben's feed should show Ana: \(benFeed)")
        }

        try step("likes: both like, both nodes see the match") {
            try e2e.mm(["like", benShort], socket: socketA)
            try e2e.mm(["like", anaShort], socket: socketB)
            func matchIDs(_ socket: String) throws -> [String] {
                try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            }
            let anaMatches = try poll { try matchIDs(socketA) } until: { $0 == [benID] }
            #expect(anaMatches == [benID], "Ana should see the match: \(anaMatches)")
            let benMatches = try poll { try matchIDs(socketB) } until: { $0 == [anaID] }
            #expect(benMatches == [anaID], "Ben should see the match: \(benMatches)")
        }

        try step("chat: Ana's message arrives in Ben's history on the other node") {
            try e2e.mm(["chat", benShort, "Hi Ben! Can you help with CS 490?"], socket: socketA)
            func benHistory() throws -> [JSON] { try mmJSON(e2e, ["chat", anaShort], socketB)["messages"]?.arrayValue ?? [] }
            let history = try poll(benHistory, until: { $0.contains { $0["text"]?.stringValue == "Hi Ben! Can you help with CS 490?" } })
            #expect(history.count == 1, "Ben's history should hold Ana's message: \(history)")
            let received = history.first
            #expect(received?["from"]?.stringValue == anaID && received?["mine"] == false, "\(String(describing: received))")
        }

        try step("peers: each node lists the other, with how it was found") {
            let peersA = try mmJSON(e2e, ["peers"], socketA)["peers"]?.arrayValue ?? []
            let peersB = try mmJSON(e2e, ["peers"], socketB)["peers"]?.arrayValue ?? []
            #expect(peersA.map { $0["node"]?.stringValue } == [nodeB] && peersA.first?["via"]?.stringValue == "incoming", "\(peersA)")
            #expect(peersB.map { $0["node"]?.stringValue } == [nodeA] && peersB.first?["via"]?.stringValue == "config"
                    && peersB.first?["address"]?.stringValue == "127.0.0.1:\(portA)", "\(peersB)")
            #expect(try mmJSON(e2e, ["status"], socketA)["peers"]?.intValue == 1)
        }

        // Ben's node is linked to A: he is nearby now in the feed of Dee (a second student on A,
        // who has not liked him), and stops being so when his node goes away (his card stays).
        try step("nearby: Ben is nearby in Dee's feed while B is linked, and not once B is gone") {
            let dee = try e2e.makeUser("dee")
            try e2e.mm(["signup", "--email", "dee@uni.edu", "--name", "Dee", "--role", "student"], as: dee, socket: socketA)
            func benNearby() throws -> Bool? {
                let out = try e2e.mm(["--json", "feed"], as: dee, socket: socketA).stdout
                return JSON.parse(Array(out.utf8))?["cards"]?.arrayValue?.first { $0["id"]?.stringValue == benID }?["nearby"]?.boolValue
            }
            // (Closures stay out of #expect inside a step: see Steps.swift.)
            let nearbyWhileLinked = try poll({ try benNearby() }, until: { $0 == true })
            #expect(nearbyWhileLinked == true, "Ben should be nearby now while B is linked")
            b.kill()
            let nearbyAfter = try poll({ try benNearby() }, until: { $0 == false })
            #expect(nearbyAfter == false, "Ben should stop being nearby once B is gone")
        }
    }
}
