import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 15 with real daemons and the real client: Ana's lab node (A), her laptop (B, dials
    /// A) and Ben's node (C, dials A). The laptop is linked with `device link` / `device approve`
    /// (a wrong and a reused code fail and link nothing); both of Ana's machines edit her bio
    /// while the laptop is cut off, and after healing both show the same two values as a
    /// conflict, which her next edit resolves, no fork raised; Ben and Ana chat from either of her
    /// machines into one conversation, identical on all three nodes; revoking the laptop makes
    /// its next write fail and Ben's next message unreadable there and readable on the lab; an
    /// unmatch and new likes give a new match with an empty conversation, the old messages gone
    /// from all three replicas' files.
    @Test func aSecondMachineIsLinkedWithACodeAndSharesTheAccountUntilRevoked() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.socket, socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let stateB = e2e.path("state-b")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        var b = try e2e.startDaemon(stateDir: stateB, socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: socketC, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { c.kill() }
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }
        let timeout: Duration = .seconds(20)

        let (anaID, benID) = try step("sign-up: Ana on the lab node A, Ben on C") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketC)
            let ana = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
            let ben = try #require(try mmJSON(e2e, ["whoami"], socketC)["id"]?.stringValue)
            return (ana, ben)
        }

        try step("link the laptop: it prints a code and waits; a wrong code fails on the lab; the right one links it") {
            let link = try e2e.backgroundProgram([e2e.binaries.client, "--socket", socketB, "device", "link", "--label", "laptop"])
            let line = link.waitForLine(timeout: timeout) { $0.contains("mentormate device approve ") }
            let code = try #require(line?.split(separator: " ").last.map(String.init), "no code printed\(logs())")
            let wrong = try e2e.run(["device", "approve", code.hasPrefix("q") ? "ppppp-ppppp" : "qqqqq-qqqqq", "--yes"], socket: socketA)
            #expect(!wrong.ok && wrong.stderr.contains("no machine on this network is offering a device under this code"), "\(wrong)")
            let approved = try poll(timeout: timeout, { try e2e.run(["device", "approve", code, "--yes"], socket: socketA) }, until: \.ok)
            #expect(approved.ok && approved.stdout.contains("Approved laptop"), "\(approved)\(logs())")
            #expect(link.wait(timeout: timeout)?.exitCode == 0, "device link should finish once approved\(logs())")
            link.readToEnd(timeout: .seconds(5))
            #expect(link.lines.contains { $0.contains("Linked: this machine now uses account \(anaID)") }, "\(link.lines)")
            let reused = try e2e.run(["device", "approve", code, "--yes"], socket: socketA)
            #expect(!reused.ok && (reused.stderr.contains("used already") || reused.stderr.contains("no machine")), "\(reused)")
            let whoami = try mmJSON(e2e, ["whoami"], socketB)
            #expect(whoami["id"]?.stringValue == anaID && whoami["device_state"] == "current" && whoami["account_key"] == false, "\(whoami)")
            let devices = try mmJSON(e2e, ["device", "list"], socketA)["devices"]?.arrayValue ?? []
            #expect(devices.count == 2, "\(devices)")
        }

        try step("partitioned, both machines edit the bio; healed, both show the same conflict; the next edit resolves it") {
            b.kill()
            b = try e2e.startDaemon(stateDir: stateB, socket: socketB)        // no --peer: cut off
            try e2e.mm(["profile", "set", "--bio", "from the lab"], socket: socketA)
            try e2e.mm(["profile", "set", "--bio", "from the laptop"], socket: socketB)
            b.kill()
            b = try e2e.startDaemon(stateDir: stateB, socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
            func bios(_ socket: String) throws -> Set<String> {
                let card = try mmJSON(e2e, ["profile", "show"], socket)
                return Set([card["bio"]?.stringValue].compactMap { $0 } + (card["conflicts"]?["bio"]?.arrayValue ?? []).compactMap(\.stringValue))
            }
            let both: Set<String> = ["from the lab", "from the laptop"]
            #expect(try poll(timeout: timeout, { try bios(socketA) }, until: { $0 == both }) == both, "\(logs())")
            #expect(try poll(timeout: timeout, { try bios(socketB) }, until: { $0 == both }) == both, "\(logs())")
            #expect(try mmJSON(e2e, ["profile", "show"], socketA) == mmJSON(e2e, ["profile", "show"], socketB))
            #expect(try mmJSON(e2e, ["profile", "show"], socketA)["forked"] == false)
            try e2e.mm(["profile", "set", "--bio", "settled"], socket: socketB)
            #expect(try poll(timeout: timeout, { try bios(socketA) }, until: { $0 == ["settled"] }) == ["settled"], "\(logs())")
            let onBen = try poll(timeout: timeout, { try mmJSON(e2e, ["profile", "show", anaID], socketC)["bio"]?.stringValue }, until: { $0 == "settled" })
            #expect(onBen == "settled", "\(logs())")
        }

        try step("a pass made on the laptop keeps Ben out of the feed on the lab; undone there, he is back") {
            func feed(_ socket: String) throws -> [String] {
                (try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            }
            #expect(try poll(timeout: timeout, { try feed(socketA) }, until: { $0 == [benID] }) == [benID], "\(logs())")
            _ = try poll(timeout: timeout, { try e2e.run(["pass", benID], socket: socketB) }, until: \.ok)
            #expect(try poll(timeout: timeout, { try feed(socketA) }, until: { $0.isEmpty }).isEmpty, "the pass should reach the lab\(logs())")
            try e2e.mm(["undo", benID], socket: socketA)
            #expect(try poll(timeout: timeout, { try feed(socketB) }, until: { $0 == [benID] }) == [benID], "the undo should reach the laptop")
        }

        func history(_ socket: String, _ with: String) throws -> [String] {
            (try mmJSON(e2e, ["chat", with], socket)["messages"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
        }
        try step("Ben and Ana match; Ana answers from either machine; one conversation, in one order, on all three") {
            try poll(timeout: timeout, { try e2e.run(["like", anaID], socket: socketC) }, until: \.ok)
            try poll(timeout: timeout, { try e2e.run(["like", benID], socket: socketB) }, until: { $0.ok })
            _ = try poll(timeout: timeout, { try e2e.run(["chat", anaID, "hi Ana"], socket: socketC) }, until: \.ok)
            _ = try poll(timeout: timeout, { try history(socketA, benID) }, until: { $0 == ["hi Ana"] })
            try e2e.mm(["chat", benID, "hi from the lab"], socket: socketA)
            _ = try poll(timeout: timeout, { try history(socketB, benID) }, until: { $0.count == 2 })
            try e2e.mm(["chat", benID, "and from the laptop"], socket: socketB)
            let expected = ["hi Ana", "hi from the lab", "and from the laptop"]
            for (socket, other) in [(socketA, benID), (socketB, benID), (socketC, anaID)] {
                #expect(try poll(timeout: timeout, { try history(socket, other) }, until: { $0 == expected }) == expected, "\(logs())")
            }
        }

        try step("revoke the laptop: its next write fails; Ben's next message is readable on the lab only") {
            let laptop = try #require(try mmJSON(e2e, ["whoami"], socketB)["device"]?.stringValue)
            try e2e.mm(["device", "revoke", laptop], socket: socketA)
            _ = try poll(timeout: timeout, { try mmJSON(e2e, ["whoami"], socketB)["device_state"]?.stringValue }, until: { $0 == "revoked" })
            let refused = try e2e.run(["profile", "set", "--bio", "still me?"], socket: socketB)
            #expect(!refused.ok && refused.stderr.contains("was revoked"), "\(refused)")
            let plain = try e2e.run(["whoami"], socket: socketB)
            #expect(plain.stdout.contains("REVOKED"), "\(plain)")
            let doctor = try e2e.run(["doctor", "--json"], socket: socketB)
            let device = doctor.json?["checks"]?.arrayValue?.first { $0["name"] == "this machine's device" }
            #expect(device?["ok"] == false && device?["detail"]?.stringValue?.contains("revoked") == true, "\(doctor)")
            // Ben's node seals to Ana's new key once the rotation reached it.
            _ = try poll(timeout: timeout, { try e2e.run(["chat", anaID, "after the revocation"], socket: socketC) }, until: \.ok)
            #expect(try poll(timeout: timeout, { try history(socketA, benID) }, until: { $0.last == "after the revocation" }).last == "after the revocation")
            usleep(1_000_000)
            #expect(try history(socketB, benID).last == "and from the laptop", "the revoked laptop must not read the new message")
        }

        /// Chat records (type 3) in a node's replica file, read with Python's sqlite3 next to the
        /// running daemon (WAL: a reader does not disturb it).
        func chatRecords(_ state: String) throws -> Int {
            let script = "import sqlite3,sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute('SELECT count(*) FROM records WHERE type = 3').fetchone()[0])"
            let run = try e2e.runProgram(["/usr/bin/python3", "-c", script, state + "/replica.db"])
            return Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let states = [e2e.path("state-a"), stateB, e2e.path("state-c")]
        try step("unmatch then new likes: a new match with an empty conversation; the old messages gone from every replica") {
            for state in states { #expect(try chatRecords(state) == 4, "the four messages are in \(state)") }
            try e2e.mm(["unmatch", anaID], socket: socketC)
            for state in states {
                // Ben's unmatch purges his; Ana's lab answers with hers, which purges hers.
                #expect(try poll(timeout: timeout, { try chatRecords(state) }, until: { $0 == 0 }) == 0, "\(state)\(logs())")
            }
            let ended = try poll(timeout: timeout, { try mmJSON(e2e, ["chat", benID], socketA) }, until: { $0["matched"] == false })
            #expect(ended["matched"] == false && ended["unmatchedBy"] != nil, "\(ended)\(logs())")
            // The unmatch ended both likes (Ben's, and Ana's by her node's answer): new ones.
            try e2e.mm(["like", benID], socket: socketA)
            _ = try poll(timeout: timeout, { try mmJSON(e2e, ["chat", anaID], socketC)["matched"] }, until: { $0 == false })
            _ = try poll(timeout: timeout, { try e2e.run(["like", anaID], socket: socketC) }, until: \.ok)
            let matched = try poll(timeout: timeout, { try mmJSON(e2e, ["chat", anaID], socketC) }, until: { $0["matched"] == true })
            #expect(matched["matched"] == true && matched["messages"]?.arrayValue?.isEmpty == true, "\(matched)\(logs())")
        }
    }
}
