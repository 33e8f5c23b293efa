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
        usleep(1_500_000)  // time for more traffic both ways (keep-alives, pushes)
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
        #expect(!(logA + a.log + b.log).contains("not taken now"), "not a single record was refused, not even quietly")
        #expect(try mmJSON(e2e, ["status"], socketB)["peers"]?.intValue == 1, "the link is up again")
    }

    /// The fork-variant trick: a hostile peer signs three cards with one (author, seq) and gives
    /// the two with the lowest record IDs to A and the highest to B (each from its own loopback
    /// address). When B links to A, both see their digests differ and exchange the author's whole
    /// log: B ends with the two lowest (its variant is replaced), and A receives B's variant — a
    /// third one, refused as `equivocation`. That is nobody's fault on the link: nobody is banned,
    /// the link stays up, A keeps the evidence, and both converge on the same two variants.
    @Test func theForkVariantTrickBansNobody() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        var b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB)
        defer { b.kill() }
        let portB = try listenPort(e2e, socketB)
        let seed = String(repeating: "5a", count: 32)
        func feed(_ attack: String, _ port: Int, _ from: String) throws -> String {
            let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(port)", attack, "--author-seed", seed,
                                                 "--from", from, "--wait", "1"])
            #expect(status.exitCode == 0, "\(attack): \(output)")
            return output
        }
        let low = try feed("fork-low", portA, "127.0.0.41")
        let high = try feed("fork-high", portB, "127.0.0.42")
        let variants = low.split(separator: "\n").first { $0.hasPrefix("variants=") }
        #expect(variants != nil && high.contains(variants ?? "?"), "both halves should sign the same three variants:\n\(low)\n\(high)")
        #expect(try poll { try Self.digest(socketA).records } until: { $0 == 2 } == 2, "A holds the two lowest variants:\n\(a.log)")
        #expect(try poll { try Self.digest(socketB).records } until: { $0 == 1 } == 1, "B holds the highest:\n\(b.log)")

        // B, restarted with A as its peer, links to A.
        #expect(b.terminate() != nil)
        let logB = b.log
        b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, listen: "127.0.0.1:\(portB)",
                                extra: ["--peer", "127.0.0.1:\(portA)"])
        let converged = try poll { (try Self.digest(socketA), try Self.digest(socketB)) } until: { $0.0 == $0.1 && $0.0.records == 2 }
        #expect(converged.0 == converged.1 && converged.0.records == 2,
                "A and B should converge on the two lowest variants: \(converged)\nlog A:\n\(a.log)\nlog B:\n\(b.log)")
        let evidence = try poll { try mmJSON(e2e, ["status"], socketA)["evidence"]?.intValue ?? 0 } until: { $0 == 3 }
        #expect(evidence == 3, "A keeps all three variants as evidence: \(evidence)\nlog A:\n\(a.log)")
        #expect(a.log.contains("code=equivocation"), "A received the third variant from B:\n\(a.log)")
        usleep(1_000_000)
        let blamed = Self.blameLines(a.log) + Self.blameLines(logB + b.log)
        #expect(blamed.isEmpty, "nobody should be banned or cut off:\n\(blamed.joined(separator: "\n"))")
        #expect(try mmJSON(e2e, ["status"], socketA)["peers"]?.intValue == 1, "the link stays up:\n\(a.log)")
        #expect(try mmJSON(e2e, ["status"], socketB)["peers"]?.intValue == 1, "the link stays up:\n\(b.log)")
        // A still takes B's writes.
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        #expect(try poll { try Self.digest(socketA) } until: { $0.records == 4 }.records == 4,
                "B's new records (Ben's first card and his machine's device certificate) reach A")
    }

    /// A peer sends, in one batch, valid records the daemon cannot take now through no fault of
    /// the peer — a sequence gap past 4096, a card dated 48 h ahead (past the hold bound), one 2 h
    /// ahead (held until due) — and one valid card. The link stays up (the peer is not closed),
    /// the valid card is stored and the 2 h one held, nothing is logged as an offence, and the
    /// same address connects again at once (it was not refused).
    @Test func recordsThatCannotBeTakenNowDoNotBanTheRelay() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: e2e.path("a.sock"), extra: ["--log-level", "debug"])
        defer { a.kill() }
        let port = try listenPort(e2e, e2e.path("a.sock"))
        let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(port)", "not-now", "--from", "127.0.0.43", "--wait", "3"])
        #expect(status.exitCode == 0 && output.contains("result not-now closed=false"),
                "the link should stay up: \(output)\nlog:\n\(a.log)")
        let counts = try mmJSON(e2e, ["status"], e2e.path("a.sock"))
        #expect(counts["records"]?.intValue == 1 && counts["heldUntilDue"]?.intValue == 1 && counts["pending"]?.intValue == 0,
                "the valid card stored, the 2 h one held, the gap and the 48 h one not kept: \(counts)")
        #expect(a.log.contains("code=sequence-gap-too-large") && a.log.contains("code=timestamp-in-future"), "\(a.log)")
        #expect(Self.blameLines(a.log).isEmpty, "no offence:\n\(a.log)")
        let again = try e2e.tool([hostilePeer, "127.0.0.1", "\(port)", "valid", "--from", "127.0.0.43", "--wait", "1"])
        #expect(again.output.contains("result valid closed=false"), "the address is not refused: \(again.output)")
        #expect(try mmJSON(e2e, ["status"], e2e.path("a.sock"))["records"]?.intValue == 2)
    }

    /// The test-only clock flag takes whole seconds; anything else stops the daemon before it
    /// touches the state directory, naming the flag and an example.
    @Test func aBadTestClockOffsetIsRefusedWithTheFlagNamed() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        for bad in ["3h", "1.5", "999999999999"] {
            let state = e2e.path("state-\(bad)")
            let (status, output) = try e2e.tool([e2e.binaries.daemon, "--state-dir", state, "--socket", e2e.path("s.sock"),
                                                 "--no-mdns", "--test-clock-offset", bad])
            #expect(status.exitCode == 2, "\(bad): \(output)")
            #expect(output.contains("--test-clock-offset must be a whole number of seconds") && output.contains("10800"), "\(output)")
            #expect(!FileManager.default.fileExists(atPath: state + "/replica.db"), "nothing is created")
        }
    }
}
