import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 19 item 5 with the real programs: a campus CA (`mentormate-ca serve`, its mail going
    /// to a capturing relay) and three daemons. A is members-only (`require_membership`); B
    /// trusts the CA; C trusts none. B and C link only to A. Ana (B) verifies her campus address
    /// by the mailed code and becomes a member everywhere that trusts the CA; Cy (C), not
    /// certified, reaches nobody through A — A declines his records, no offence — until the
    /// operator issues him a certificate, when A asks for his earlier records at once and B sees
    /// him within seconds, not at the next round.
    @Test func aCampusCAMakesMembersAndAMembersOnlyNodeRelaysOnlyThem() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let smtp = try SMTPCapture()
        defer { smtp.stop() }
        let caTool = try Binaries.tool("mentormate-ca")
        let caDir = e2e.path("ca")
        let made = try e2e.runProgram([caTool, "init", "--dir", caDir, "--domain", "campus.edu", "--smtp", "127.0.0.1:\(smtp.port)",
                                       "--from", "it@campus.edu", "--listen", "127.0.0.1:0"])
        #expect(made.ok, "\(made)")
        let key = try e2e.runProgram([caTool, "key", "--dir", caDir]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.hasPrefix("mmca1"), "\(key)")
        let serve = try ChildProcess([caTool, "serve", "--dir", caDir], stdout: .pipe, stderr: .file(e2e.path("ca.err")))
        defer { _ = serve.kill() }
        let listening = serve.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
        let caAddress = try #require(listening.map { String($0.dropFirst("listening on ".count)) }, "the CA serves: \(e2e.read(e2e.path("ca.err")))")

        try step("a node asked to require membership without a CA key refuses to start, naming the fix") {
            let config = try e2e.write("bad.conf", Array("require_membership = true\n".utf8))
            let bad = try e2e.spawnDaemon(stateDir: e2e.path("state-bad"), socket: e2e.path("bad.sock"), extra: ["--config", config])
            let status = bad.process.wait(timeout: .seconds(20))
            #expect(status != nil && status?.exitCode != 0, "the daemon exits")
            #expect(e2e.read(bad.logPath).contains("require_membership = true needs campus_ca_key"), "\(e2e.read(bad.logPath))")
        }

        let names = ["a", "b", "c"]
        let sockets = names.map { e2e.path("\($0).sock") }
        let configs = [
            "campus_ca_key = \(key)\nrequire_membership = true\ncampus_ca = \(caAddress)\n",
            "campus_ca_key = \(key)\ncampus_ca = \(caAddress)\n",
            "",
        ]
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }
        for (i, name) in names.enumerated() {
            let config = try e2e.write("\(name).conf", Array(configs[i].utf8))
            let peer = i == 0 ? [] : ["--peer", "127.0.0.1:\(try listenPort(e2e, sockets[0]))"]
            daemons.append(try e2e.startDaemon(stateDir: e2e.path("state-\(name)"), socket: sockets[i], extra: ["--config", config] + peer))
        }
        func logs() -> String { zip(names, daemons).map { "\nlog \($0):\n\($1.log)" }.joined() }
        for (i, name) in ["Dee", "Ana", "Cy"].enumerated() {
            try e2e.mm(["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", "student"], socket: sockets[i])
        }
        let ana = try #require(try mmJSON(e2e, ["whoami"], sockets[1])["id"]?.stringValue)
        let cy = try #require(try mmJSON(e2e, ["whoami"], sockets[2])["id"]?.stringValue)
        func people(_ node: Int) throws -> [String: JSON] {
            var out: [String: JSON] = [:]
            for p in try mmJSON(e2e, ["people"], sockets[node])["people"]?.arrayValue ?? [] {
                if let id = p["id"]?.stringValue { out[id] = p }
            }
            return out
        }
        func member(_ node: Int, _ id: String) throws -> String? {
            let shown = try e2e.run(["profile", "show", id, "--json"], socket: sockets[node])
            return shown.ok ? shown.json?["member"]?["domain"]?.stringValue : nil
        }

        try step("Ana asks for a code: one mail, to her address, with six digits; a wrong code is refused") {
            let asked = try e2e.mm(["member", "request", "ana@campus.edu"], socket: sockets[1])
            #expect(asked.stdout.contains("a…@campus.edu") && asked.stdout.contains("mentormate member verify"), "\(asked)")
            let mail = try poll(timeout: .seconds(10), { smtp.received }, until: { !$0.isEmpty })
            #expect(mail.count == 1 && mail.first?.contains("To: ana@campus.edu") == true, "\(mail)")
            let wrong = try e2e.run(["member", "verify", "000000"], socket: sockets[1])
            #expect(!wrong.ok && wrong.stderr.contains("the campus CA refused"), "\(wrong)")
            let notAnAddress = try e2e.run(["member", "request", "ana"], socket: sockets[1])
            #expect(!notAnAddress.ok && notAnAddress.stderr.contains("is not an e-mail address"), "\(notAnAddress)")
        }

        try step("the code makes Ana a member: on B, and on A, which then takes her records") {
            let body = smtp.received.first ?? ""
            // The line of the body that gives it (the headers hold other digits: the date, the Message-ID).
            let line = body.components(separatedBy: "\r\n").first { $0.hasPrefix("Your MentorMate code is ") }
            let code = try #require(line.map { String($0.dropFirst("Your MentorMate code is ".count)) }, "no code in \(body)")
            #expect(code.count == 6 && code.allSatisfy(\.isNumber), "\(code)")
            let verified = try e2e.mm(["member", "verify", code], socket: sockets[1])
            #expect(verified.stdout.contains("You are a verified member of campus.edu"), "\(verified)")
            #expect(try member(1, ana) == "campus.edu")
            let shown = try e2e.mm(["member", "show"], socket: sockets[1])
            #expect(shown.stdout.contains("You are a verified member of campus.edu"), "\(shown)")
            let onA = try poll(timeout: .seconds(20), { try member(0, ana) }, until: { $0 != nil })
            #expect(onA == "campus.edu", "A shows Ana as a member\(logs())")
            // C trusts no CA: Ana's card is there (A relays members), unmarked.
            let onC = try poll(timeout: .seconds(20), { try people(2)[ana] }, until: { $0 != nil })
            let markedOnC = try member(2, ana)
            #expect(onC != nil && markedOnC == nil, "C holds Ana's card, unmarked\(logs())")
        }

        try step("Cy, not certified, is declined by A (no offence) and so never reaches B") {
            let declined = try poll(timeout: .seconds(20), { try mmJSON(e2e, ["status"], sockets[0])["campus"]?["declinedRecords"]?.intValue ?? 0 },
                                    until: { $0 > 0 })
            #expect(declined > 0, "A declines Cy's records\(logs())")
            let status = try mmJSON(e2e, ["status"], sockets[0])
            #expect(status["campus"]?["requireMembership"] == true && status["peers"]?.intValue == 2, "the links stay: \(status)")
            let onA = try people(0)[cy], onB = try people(1)[cy]
            #expect(onA == nil && onB == nil, "Cy is neither on A nor on B")
            #expect(try people(2)[ana] != nil)
            let human = try e2e.mm(["status"], socket: sockets[0]).stdout
            #expect(human.contains("(members only)") && human.contains("of non-members not stored"), "\(human)")
        }

        try step("a certificate for someone else's account is refused and changes nothing") {
            let issued = try e2e.runProgram([caTool, "issue", "--dir", caDir, "--account", ana, "--domain", "campus.edu"])
            let hex = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(issued.ok && !hex.isEmpty, "\(issued)")
            let refused = try e2e.run(["member", "set", hex], socket: sockets[2])
            #expect(!refused.ok && refused.stderr.contains("not your account"), "\(refused)")
        }

        try step("the operator certifies Cy: A takes his earlier records at once and B shows him as a member") {
            let issued = try e2e.runProgram([caTool, "issue", "--dir", caDir, "--account", cy, "--domain", "campus.edu"])
            let hex = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let set = try e2e.mm(["member", "set", hex], socket: sockets[2])
            #expect(set.stdout.contains("This node trusts no campus CA"), "\(set)")
            let began = ContinuousClock.now
            // Well within the minute of a reconciliation round: the readmission asks with `want`.
            let onB = try poll(timeout: .seconds(30), { try member(1, cy) }, until: { $0 != nil })
            #expect(onB == "campus.edu", "B shows Cy as a member\(logs())")
            print("campus: Cy reached B through A \(ContinuousClock.now - began) after his certificate was published")
            #expect(try people(0)[cy]?["name"]?.stringValue == "Cy")
        }
    }
}
