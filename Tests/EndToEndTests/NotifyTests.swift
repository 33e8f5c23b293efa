import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// `mentormate notify` against two real daemons and a private session bus
    /// (`dbus-run-session`) with a fake notification server on it (scripts/fake-notifications.py,
    /// which records each Notify call and which process made it). Ana, on A, runs three notifiers:
    /// one that finds only gdbus on its PATH, one that finds only notify-send, and one without a
    /// session bus (plain lines). Ben, on B, matches her, writes to her and ends the match; with
    /// `notify.message` turned off in between, his second message is shown by none of them.
    /// When A stops, each notifier exits with status 3 and says why.
    @Test func notifyShowsMatchMessageAndUnmatchOnTheSessionBusAndHonoursTheSettings() throws {
        try E2E.requireRoot()
        let python = "/usr/bin/python3", busRunner = "/usr/bin/dbus-run-session"
        let gdbus = "/usr/bin/gdbus", notifySend = "/usr/bin/notify-send"
        for program in [python, busRunner, gdbus, notifySend] {
            guard FileManager.default.isExecutableFile(atPath: program) else {
                throw E2EError("\(program) is missing; run `bash scripts/deps` (dbus-daemon, libglib2.0-bin, libnotify-bin, python3-gi)")
            }
        }
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let gi = try e2e.runProgram([python, "-c", "from gi.repository import Gio, GLib"])
        guard gi.ok else { throw E2EError("python3-gi (Gio) is missing: \(gi.stderr); run `bash scripts/deps`") }

        // The bus and the fake server; the server ends when `stop` exists, and the bus with it.
        let record = e2e.path("notify-calls.jsonl"), stop = e2e.path("notify-stop")
        let server = try ChildProcess([busRunner, "--", python, LabHosts.repository + "/scripts/fake-notifications.py", record, stop],
                                      stdout: .pipe, stderr: .file(e2e.path("fake-notifications.err")))
        defer {
            FileManager.default.createFile(atPath: stop, contents: nil)
            if server.wait(timeout: .seconds(10)) == nil { server.kill() }
        }
        let ready = server.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("ready ") }
        let address = String(try #require(ready, "the fake notification server did not start: \(e2e.read(e2e.path("fake-notifications.err")))").dropFirst(6))
        #expect(address.hasPrefix("unix:"))

        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketA))"])
        defer { b.kill() }
        let (anaID, benID) = try step("sign-up: Ana on A, Ben on B") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            return (try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue),
                    try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue))
        }

        // Each notifier finds only its one program on PATH.
        func notifier(_ tag: String, program: String?) throws -> ChildProcess {
            var env = ChildProcess.baseEnvironment
            env["DBUS_SESSION_BUS_ADDRESS"] = nil
            if let program {
                let bin = e2e.path("bin-\(tag)")
                try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: bin + "/" + (program as NSString).lastPathComponent, withDestinationPath: program)
                env["PATH"] = bin
                env["DBUS_SESSION_BUS_ADDRESS"] = address
            }
            return try ChildProcess([e2e.binaries.client, "--socket", socketA, "notify"], environment: env,
                                    stdout: .pipe, stderr: .file(e2e.path("notify-\(tag).err")))
        }
        let viaGdbus = try notifier("gdbus", program: gdbus)
        let viaNotifySend = try notifier("notify-send", program: notifySend)
        let plain = try notifier("plain", program: nil)
        defer { for n in [viaGdbus, viaNotifySend, plain] { n.kill() } }

        /// The recorded Notify calls of the notifier `n` (by the parent of the calling process).
        func calls(of n: ChildProcess) -> [JSON] {
            e2e.read(record).split(separator: "\n").compactMap { JSON.parse(Array($0.utf8)) }
                .filter { $0["caller_parent"]?.intValue == Int64(n.pid) }
        }
        func summaries(of n: ChildProcess) -> [String] { calls(of: n).compactMap { $0["summary"]?.stringValue } }

        try step("the notifiers subscribe, each saying where its notifications go") {
            for (n, tag, says) in [(viaGdbus, "gdbus", "via \(e2e.path("bin-gdbus"))/gdbus (org.freedesktop.Notifications);"),
                                (viaNotifySend, "notify-send", "via \(e2e.path("bin-notify-send"))/notify-send;"), (plain, "plain", "on stdout;")] {
                let err = e2e.path("notify-\(tag).err")
                let said = try poll({ e2e.read(err) }, until: { $0.contains("Ctrl-C stops") })
                #expect(said.contains("(notifications \(says)"), "\(tag): \(said)")
                let ended = n.wait(timeout: .milliseconds(1))
                #expect(ended == nil, "\(tag) ended: \(said)")
            }
        }

        try step("match: both like; each notifier shows it") {
            _ = try poll({ try mmJSON(e2e, ["feed"], socketA)["cards"]?.arrayValue?.count ?? 0 }, until: { $0 == 1 })
            try e2e.mm(["like", String(benID.prefix(12))], socket: socketA)
            _ = try poll({ try mmJSON(e2e, ["feed"], socketB)["cards"]?.arrayValue?.count ?? 0 }, until: { $0 == 1 })
            try e2e.mm(["like", String(anaID.prefix(12))], socket: socketB)
            for n in [viaGdbus, viaNotifySend] {
                let shown = try poll(timeout: .seconds(20), { summaries(of: n) }, until: { $0.contains("New match: Ben") })
                #expect(shown == ["New match: Ben"], "\(n.argv): \(e2e.read(record))")
                let call = calls(of: n).first
                #expect(call?["app_name"] == "MentorMate" && call?["body"]?.stringValue?.contains("mentormate chat \(benID.prefix(12))") == true,
                        "\(String(describing: call))")
            }
            let line = plain.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("New match: Ben") }
            #expect(line != nil, "the plain notifier printed: \(plain.lines)")
        }

        try step("message: Ben's first words, with his name") {
            try e2e.mm(["chat", String(anaID.prefix(12)), "Hi Ana! Shall we go over problem set four at the library tomorrow at ten, with coffee and the old exams?"],
                       socket: socketB)
            for n in [viaGdbus, viaNotifySend] {
                let shown = try poll(timeout: .seconds(20), { calls(of: n) }, until: { $0.count == 2 })
                let message = shown.last
                #expect(message?["summary"] == "Message from Ben", "\(String(describing: message))")
                let body = message?["body"]?.stringValue ?? ""
                #expect(body.hasPrefix("Hi Ana! Shall we go over problem set four") && body.hasSuffix("…") && body.count <= 80, "\(body)")
            }
            let line = plain.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("Message from Ben — Hi Ana! Shall we") }
            #expect(line != nil, "the plain notifier printed: \(plain.lines)")
        }

        try step("notify.message off: Ben's second message is shown by none; his unmatch still is") {
            let set = try mmJSON(e2e, ["settings", "set", "notify.message", "off"], socketA)
            #expect(set["value"] == "false" && set["isDefault"] == false, "\(set)")
            let shown = try mmJSON(e2e, ["settings", "show"], socketA)["settings"]?.arrayValue ?? []
            let message = shown.first { $0["key"] == "notify.message" }
            #expect(message?["value"] == "false", "\(shown)")
            try e2e.mm(["chat", String(anaID.prefix(12)), "this second message should stay quiet"], socket: socketB)
            // Arrived at A (so its event went out) before Ben ends the match.
            _ = try poll({ try mmJSON(e2e, ["chat", String(benID.prefix(12))], socketA)["messages"]?.arrayValue?.count ?? 0 }, until: { $0 == 2 })
            try e2e.mm(["unmatch", String(anaID.prefix(12))], socket: socketB)
            for n in [viaGdbus, viaNotifySend] {
                let all = try poll(timeout: .seconds(20), { summaries(of: n) }, until: { $0.contains("Ben ended the match") })
                #expect(all == ["New match: Ben", "Message from Ben", "Ben ended the match"], "\(n.argv): \(e2e.read(record))")
            }
            let line = plain.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("Ben ended the match") }
            #expect(line != nil, "the plain notifier printed: \(plain.lines)")
            let quietLine = plain.lines.first { $0.contains("stay quiet") }
            #expect(!e2e.read(record).contains("stay quiet") && quietLine == nil)
            #expect(plain.lines.count == 3, "\(plain.lines)")
        }

        try step("the daemon stops: each notifier exits with status 3 and says so") {
            a.kill()
            for (n, tag) in [(viaGdbus, "gdbus"), (viaNotifySend, "notify-send"), (plain, "plain")] {
                let status = n.wait(timeout: .seconds(10))
                #expect(status?.exitCode == 3, "\(tag): \(String(describing: status))")
                let err = e2e.read(e2e.path("notify-\(tag).err"))
                #expect(err.contains("lost the connection to mentormated"), "\(tag): \(err)")
            }
        }
    }
}
