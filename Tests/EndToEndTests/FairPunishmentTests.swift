import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 3: only what proves the sending peer misbehaved is an offence. These run real
/// daemons (and `mentormate-hostile-peer`) over loopback.
extension EndToEndTests {
    /// Log lines that would mean a peer was blamed or a session ended over a record.
    static func blameLines(_ log: String) -> [Substring] {
        log.split(separator: "\n").filter {
            $0.contains("peer refused for a while") || $0.contains("sync with a peer ended") || $0.contains("refused record")
        }
    }

    static func digest(_ socket: String) throws -> (digest: String, records: Int64) {
        let r = try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")
        guard let d = r["digest"]?.stringValue, let n = r["records"]?.intValue else {
            throw E2EError("replica.digest on \(socket) answered \(r)")
        }
        return (d, n)
    }

    /// Two honest daemons, B's clock three hours fast (`--test-clock-offset 10800`, as on a
    /// dual-boot machine). Each writes — profile edits, a like — and they keep syncing both
    /// ways: A's records reach B at once; B's, dated 3 h ahead of A's clock, are held on A until
    /// due (`heldUntilDue` in status; not in A's feed). No refusal or penalty is logged on either
    /// side and the link stays up. A is then restarted with its clock 3 h on (the time when B's
    /// records fall due): the held records survived the restart and are applied, Ana sees Ben,
    /// they match, chat both ways, and the two replicas converge — still without any blame.
    @Test func aNodeWithItsClockThreeHoursFastKeepsSyncingWithoutBlame() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        var a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB,
                                    extra: ["--peer", "127.0.0.1:\(portA)", "--test-clock-offset", "10800"])
        defer { b.kill() }
        #expect(b.log.contains("test clock offset in force"), "B should warn about its clock offset:\n\(b.log)")
        var logA = ""
        func blame() -> String {
            let lines = Self.blameLines(logA + a.log) + Self.blameLines(b.log)
            return lines.joined(separator: "\n")
        }

        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "25"], socket: socketB)
        let anaID = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue)
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12))
        func feedIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }

        // A's records are in B's past: B has them at once. Ben likes Ana; Ana edits again.
        #expect(try poll { try feedIDs(socketB) } until: { $0 == [anaID] } == [anaID], "B should show Ana:\n\(b.log)")
        try e2e.mm(["profile", "set", "--budget", "35"], socket: socketA)
        let budget = try poll { "\(try mmJSON(e2e, ["feed"], socketB))" } until: { $0.contains("35") }
        #expect(budget.contains("35"), "Ana's second edit should reach B: \(budget)")
        try e2e.mm(["like", anaShort], socket: socketB)
        try e2e.mm(["profile", "set", "--wage", "27"], socket: socketB)

        // B's records (cards and a like, dated 3 h ahead of A's clock) wait on A until due.
        // (B holds Ana's records and Ben's; A only Ana's.)
        func heldOnA() throws -> (held: Int64, bens: Int64) {
            let held = try mmJSON(e2e, ["status"], socketA)["heldUntilDue"]?.intValue ?? -1
            return (held, try Self.digest(socketB).records - Self.digest(socketA).records)
        }
        let held = try poll { try heldOnA() } until: { $0.held >= 4 && $0.held == $0.bens }
        #expect(held.held >= 4 && held.held == held.bens,
                "A should hold all of Ben's records (signup, two edits, a like) until due: \(held)\nlog A:\n\(a.log)")
        #expect(try feedIDs(socketA).isEmpty, "Ben's card is not shown on A before it is due")
        usleep(1_500_000)  // a few more sync rounds (B re-offers what A holds aside at each hello)
        #expect(blame().isEmpty, "no refusal or penalty should be logged:\n\(blame())\nlog A:\n\(a.log)\nlog B:\n\(b.log)")
        #expect(try mmJSON(e2e, ["status"], socketA)["peers"]?.intValue == 1, "the link stays up")
        #expect(try mmJSON(e2e, ["status"], socketB)["peers"]?.intValue == 1, "the link stays up")
        #expect(a.log.contains("records dated ahead of this node's clock are held until due"), "A says why:\n\(a.log)")

        // Three hours later (A's clock moved on to B's): the held records, kept across the
        // restart, are applied; the two match and chat both ways.
        #expect(a.terminate() != nil)
        logA = a.log
        a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA, listen: "127.0.0.1:\(portA)",
                                extra: ["--test-clock-offset", "10800"])
        #expect(try poll { try feedIDs(socketA) } until: { $0 == [benID] } == [benID], "A should show Ben once due:\n\(a.log)")
        #expect(try mmJSON(e2e, ["status"], socketA)["heldUntilDue"]?.intValue == 0)
        let wage = try poll { "\(try mmJSON(e2e, ["feed"], socketA))" } until: { $0.contains("27") }
        #expect(wage.contains("27"), "Ben's second edit should be on A: \(wage)")
        try e2e.mm(["like", benShort], socket: socketA)
        func matchIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        #expect(try poll { try matchIDs(socketA) } until: { $0 == [benID] } == [benID], "Ana should see the match")
        #expect(try poll { try matchIDs(socketB) } until: { $0 == [anaID] } == [anaID], "Ben should see the match:\n\(b.log)")
        try e2e.mm(["chat", anaShort, "Hi Ana, Ben here"], socket: socketB)
        try e2e.mm(["chat", benShort, "Hi Ben!"], socket: socketA)
        func history(_ socket: String, _ other: String) throws -> [String] {
            try mmJSON(e2e, ["chat", other], socket)["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        }
        let onA = try poll { try history(socketA, benShort) } until: { $0.count == 2 }
        let onB = try poll { try history(socketB, anaShort) } until: { $0.count == 2 }
        #expect(Set(onA) == ["Hi Ana, Ben here", "Hi Ben!"] && Set(onB) == Set(onA), "A: \(onA), B: \(onB)")
        let converged = try poll { (try Self.digest(socketA), try Self.digest(socketB)) } until: { $0.0 == $0.1 }
        #expect(converged.0 == converged.1, "A and B should converge: \(converged)\nlog A:\n\(a.log)\nlog B:\n\(b.log)")
        #expect(blame().isEmpty, "no refusal or penalty should be logged:\n\(blame())")
        #expect(try mmJSON(e2e, ["status"], socketB)["peers"]?.intValue == 1, "the link is up again")
    }
}
