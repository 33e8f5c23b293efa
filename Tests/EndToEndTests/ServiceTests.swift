import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 6: mentormated as a systemd service. The units are checked with the real
/// `systemd-analyze` (verify, and the security exposure), installed with the real `make`, and the
/// daemon's side of the service protocol (sd_notify readiness, watchdog, STOPPING, socket
/// activation, journal priorities) is driven the way systemd drives it.
extension EndToEndTests {
    /// The package's root (this file is Tests/EndToEndTests/ServiceTests.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func program(_ name: String, package: String) throws -> String {
        guard let path = ["/usr/bin/" + name, "/bin/" + name, "/usr/sbin/" + name].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw E2EError("\(name) is missing; install the \(package) package (scripts/deps does)")
        }
        return path
    }

    /// Runs a program with extra environment to its end; its stdout and stderr together.
    static func run(_ e2e: E2E, _ argv: [String], environment: [String: String] = [:], directory: String? = nil,
                    timeout: Duration = .seconds(120)) throws -> (status: ChildProcess.Status, output: String) {
        let out = e2e.path("run-\(UInt32.random(in: 0...UInt32.max)).out")
        var env = ChildProcess.baseEnvironment
        for (k, v) in environment { env[k] = v }
        let command = directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0] + argv } ?? argv
        let process = try ChildProcess(command, environment: env, stdout: .file(out), stderr: .file(out))
        guard let status = process.wait(timeout: timeout) else {
            process.kill()
            throw E2EError("\(argv.joined(separator: " ")) did not end within \(timeout): \(e2e.read(out))")
        }
        return (status, e2e.read(out))
    }

    /// `make install` into `destdir` from the programs this test build made (no release build).
    static func makeInstall(_ e2e: E2E, destdir: String, extra: [String] = []) throws -> String {
        let make = try program("make", package: "make")
        let bin = URL(fileURLWithPath: e2e.binaries.daemon).deletingLastPathComponent().path
        let result = try run(e2e, [make, "install", "DESTDIR=\(destdir)", "SKIP_BUILD=1", "BUILD_DIR=\(bin)"] + extra,
                             directory: packageRoot)
        guard result.status.exitCode == 0 else { throw E2EError("make install failed (\(result.status)):\n\(result.output)") }
        return result.output
    }

    /// Regular files and symlinks under `root`, relative to it.
    static func files(under root: String) -> Set<String> {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: Set<String> = []
        for case let path as String in walker {
            var st = stat()
            if lstat(root + "/" + path, &st) == 0, st.st_mode & S_IFMT != S_IFDIR { found.insert(path) }
        }
        return found
    }

    /// A `Duration` from a systemd time span such as `30s`, `1min 30s` or `90`.
    static func timeSpan(_ text: String) -> Duration? {
        var total: Duration = .zero
        for part in text.split(separator: " ") {
            let digits = part.prefix { $0.isNumber }
            guard let n = Int64(digits) else { return nil }
            switch part.dropFirst(digits.count) {
            case "", "s", "sec": total += .seconds(n)
            case "ms": total += .milliseconds(n)
            case "min", "m": total += .seconds(n * 60)
            default: return nil
            }
        }
        return total
    }

    /// `Key=` of the [Service] section of a shipped unit.
    static func unitSetting(_ key: String, unit: String = "systemd/mentormated.service") throws -> String {
        let text = try String(contentsOfFile: packageRoot + "/" + unit, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + "=") }) else {
            throw E2EError("\(unit) has no \(key)=")
        }
        return String(line.dropFirst(key.count + 1))
    }

    /// Starts `mentormated` with extra environment (the service manager's variables).
    static func spawnService(_ e2e: E2E, name: String, arguments: [String], environment: [String: String]) throws -> Daemon {
        let state = e2e.path(name + "-state"), socket = e2e.path(name + ".sock"), log = e2e.path(name + ".log")
        var env = ChildProcess.baseEnvironment
        for (k, v) in environment { env[k] = v }
        let process = try ChildProcess([e2e.binaries.daemon, "--state-dir", state, "--socket", socket, "--listen", "127.0.0.1:0",
                                        "--no-mdns"] + E2E.withNetwork(arguments), environment: env, stderr: .file(log))
        return Daemon(process: process, stateDir: state, socket: socket, logPath: log)
    }

    // MARK: Units

    /// Every unit passes `systemd-analyze verify` as `make install` writes it (system units, and
    /// the user units with `--user`); the service's exposure by `systemd-analyze security
    /// --offline=true` is at most 2.0 and every check it fails is explained in a comment of the
    /// unit; the sysusers and tmpfiles companions make the user and the directories.
    @Test func unitsPassVerifyAndTheServiceExposureIsAtMostTwo() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let analyze = try Self.program("systemd-analyze", package: "systemd")
        // BINDIR = the build's own directory, so ExecStart= names a program that exists.
        let bin = URL(fileURLWithPath: e2e.binaries.daemon).deletingLastPathComponent().path
        let root = e2e.path("root")
        _ = try Self.makeInstall(e2e, destdir: root, extra: ["BINDIR=\(bin)"])
        let system = root + "/usr/local/lib/systemd/system", user = root + "/usr/local/lib/systemd/user"
        let service = system + "/mentormated.service"
        #expect(try String(contentsOfFile: service, encoding: .utf8).contains("ExecStart=\(bin)/mentormated --config /etc/mentormate/mentormated.conf"))
        // Documentation=man:... is checked too: against the installed man pages.
        let manpath = ["MANPATH": root + "/usr/local/share/man"]

        let verified = try Self.run(e2e, [analyze, "verify", service, system + "/mentormated.socket", system + "/mentormate-ca.service"],
                                    environment: manpath)
        #expect(verified.status.exitCode == 0 && verified.output.isEmpty, "systemd-analyze verify (system units): \(verified.status)\n\(verified.output)")

        let runtime = e2e.path("xdg-runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let userVerified = try Self.run(e2e, [analyze, "--user", "verify", user + "/mentormated.service", user + "/mentormated.socket",
                                                   user + "/mentormate-notify.service"],
                                        environment: manpath.merging(["XDG_RUNTIME_DIR": runtime]) { $1 })
        #expect(userVerified.status.exitCode == 0 && userVerified.output.isEmpty,
                "systemd-analyze --user verify (user units): \(userVerified.status)\n\(userVerified.output)")

        // Both services bound memory and threads (issue 11 item 4): room for two Argon2id runs
        // (256 MiB each; passphrase_checks_at_once allows one by default) plus the rest, and more
        // tasks than libdispatch's pool of 255 threads may take.
        for file in [service, user + "/mentormated.service"] {
            let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
            let memory = lines.first { $0.hasPrefix("MemoryMax=") }.flatMap { line -> Int? in
                let value = line.dropFirst("MemoryMax=".count)
                guard value.hasSuffix("M") else { return nil }
                return Int(value.dropLast())
            }
            let tasks = lines.first { $0.hasPrefix("TasksMax=") }.flatMap { Int($0.dropFirst("TasksMax=".count)) }
            #expect(memory.map { $0 >= 2 * 256 + 128 && $0 <= 2048 } == true, "\(file): MemoryMax= in MiB: \(String(describing: memory))")
            #expect(tasks.map { $0 > 255 + 16 } == true, "\(file): TasksMax=: \(String(describing: tasks))")
        }

        // Exposure: "→ Overall exposure level for mentormated.service: 1.2 OK 🙂" (systemd 252).
        let security = try Self.run(e2e, [analyze, "security", "--offline=true", service])
        #expect(security.status.exitCode == 0, "\(security.output)")
        let overall = security.output.split(separator: "\n").first { $0.contains("Overall exposure level for mentormated.service:") }
        let figure = overall.flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        let exposure = try #require(figure, "no exposure figure in:\n\(security.output)")
        print("systemd-analyze security --offline=true mentormated.service: exposure \(exposure)")
        #expect(exposure <= 2.0, "exposure \(exposure) is above 2.0:\n\(security.output)")
        // Each failed check ("✗ PrivateNetwork= ...") is a directive left off: the unit says why.
        let unit = try String(contentsOfFile: service, encoding: .utf8)
        let comments = unit.split(separator: "\n").filter { $0.hasPrefix("#") }.joined(separator: "\n")
        for line in security.output.split(separator: "\n") where line.hasPrefix("✗") {
            guard let name = line.dropFirst().split(separator: " ").first, let eq = name.firstIndex(of: "=") else { continue }
            let directive = String(name[...eq])
            #expect(comments.contains(directive), "\(directive) is left off without a comment saying why (\(line))")
        }

        // The companions: the user, then its directories, in a scratch root.
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        let sysusers = try Self.run(e2e, [try Self.program("systemd-sysusers", package: "systemd"), "--root=\(root)",
                                          root + "/usr/local/lib/sysusers.d/mentormate.conf"])
        #expect(sysusers.status.exitCode == 0, "\(sysusers.output)")
        let passwd = e2e.read(root + "/etc/passwd")
        let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("mentormate:") }, "no mentormate user in \(passwd)")
        let uid = try #require(UInt32(entry.split(separator: ":")[2]))
        #expect(uid != 0 && entry.hasSuffix(":/usr/sbin/nologin"), "\(entry)")
        let tmpfiles = try Self.run(e2e, [try Self.program("systemd-tmpfiles", package: "systemd"), "--create", "--root=\(root)",
                                          root + "/usr/local/lib/tmpfiles.d/mentormate.conf"])
        #expect(tmpfiles.status.exitCode == 0, "\(tmpfiles.output)")
        var st = stat()
        #expect(stat(root + "/var/lib/mentormate", &st) == 0 && st.st_mode & 0o7777 == 0o700 && st.st_uid == uid,
                "the state directory must be 0700 and owned by mentormate")
    }

    /// `make install DESTDIR=…` puts exactly the expected files in place with their modes and
    /// the paths rewritten for PREFIX; `make uninstall` removes them again, but keeps a config
    /// file that was edited. The default `make install` builds in release mode.
    @Test func makeInstallProducesTheTreeAndUninstallRemovesIt() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let make = try Self.program("make", package: "make")

        let dest = e2e.path("dest")
        _ = try Self.makeInstall(e2e, destdir: dest)
        let expected: Set<String> = [
            "usr/local/bin/mentormated", "usr/local/bin/mentormate", "usr/local/bin/mentormate-ca",
            "usr/local/lib/systemd/system/mentormated.service", "usr/local/lib/systemd/system/mentormated.socket",
            "usr/local/lib/systemd/system/mentormate-ca.service",
            "usr/local/lib/systemd/user/mentormated.service", "usr/local/lib/systemd/user/mentormated.socket",
            "usr/local/lib/systemd/user/mentormate-notify.service",
            "usr/local/lib/sysusers.d/mentormate.conf", "usr/local/lib/tmpfiles.d/mentormate.conf",
            "usr/local/share/man/man1/mentormate.1", "usr/local/share/man/man8/mentormated.8",
            "usr/local/share/man/man8/mentormate-ca.8",
            "usr/local/share/bash-completion/completions/mentormate", "usr/local/share/bash-completion/completions/mentormated",
            "usr/local/share/bash-completion/completions/mentormate-ca",
            "usr/local/share/doc/mentormate/OPERATIONS.md", "usr/local/share/doc/mentormate/API.md",
            "usr/local/share/doc/mentormate/mentormated.conf.example",
            "etc/mentormate/mentormated.conf",
        ]
        let installed = Self.files(under: dest)
        #expect(installed == expected, "missing: \(expected.subtracting(installed).sorted()); unexpected: \(installed.subtracting(expected).sorted())")
        for file in installed {
            var st = stat()
            let want: mode_t = file.contains("/bin/") ? 0o755 : 0o644
            #expect(stat(dest + "/" + file, &st) == 0 && st.st_mode & 0o7777 == want, "\(file) mode \(String(st.st_mode & 0o7777, radix: 8)), expected \(String(want, radix: 8))")
        }
        let installedVersion = try Self.run(e2e, [dest + "/usr/local/bin/mentormated", "--version"])
        #expect(installedVersion.output.hasPrefix("mentormated "), "\(installedVersion.output)")
        #expect(e2e.read(dest + "/etc/mentormate/mentormated.conf").contains("#log_level = info"), "the default config is the commented one")

        // Another prefix: the units name the programs where they went.
        let usr = e2e.path("usr-dest")
        _ = try Self.makeInstall(e2e, destdir: usr, extra: ["PREFIX=/usr"])
        let unit = e2e.read(usr + "/usr/lib/systemd/system/mentormated.service")
        #expect(unit.contains("ExecStart=/usr/bin/mentormated --config /etc/mentormate/mentormated.conf"), "\(unit)")
        #expect(e2e.read(usr + "/usr/lib/systemd/user/mentormated.service").contains("ExecStart=/usr/bin/mentormated\n"))
        #expect(e2e.read(usr + "/usr/lib/systemd/user/mentormate-notify.service").contains("ExecStart=/usr/bin/mentormate notify\n"))
        #expect(FileManager.default.isExecutableFile(atPath: usr + "/usr/bin/mentormate"))
        #expect(e2e.read(usr + "/usr/lib/systemd/system/mentormate-ca.service").contains("ExecStart=/usr/bin/mentormate-ca serve --dir /var/lib/mentormate-ca\n"))

        // A second install keeps an edited config.
        try "listen = 0.0.0.0:4711\n".write(toFile: usr + "/etc/mentormate/mentormated.conf", atomically: true, encoding: .utf8)
        let again = try Self.makeInstall(e2e, destdir: usr, extra: ["PREFIX=/usr"])
        #expect(again.contains("kept"), "\(again)")
        #expect(e2e.read(usr + "/etc/mentormate/mentormated.conf") == "listen = 0.0.0.0:4711\n")

        // Uninstall: the default tree goes entirely; the edited config stays.
        let removed = try Self.run(e2e, [make, "uninstall", "DESTDIR=\(dest)"], directory: Self.packageRoot)
        #expect(removed.status.exitCode == 0, "\(removed.output)")
        #expect(Self.files(under: dest).isEmpty, "left after uninstall: \(Self.files(under: dest).sorted())")
        #expect(!FileManager.default.fileExists(atPath: dest + "/etc/mentormate"))
        let removedUsr = try Self.run(e2e, [make, "uninstall", "DESTDIR=\(usr)", "PREFIX=/usr"], directory: Self.packageRoot)
        #expect(removedUsr.status.exitCode == 0, "\(removedUsr.output)")
        #expect(Self.files(under: usr) == ["etc/mentormate/mentormated.conf"], "\(Self.files(under: usr).sorted())")

        // The documented default builds in release mode first (dry run: nothing is built here),
        // with scripts/build-release.
        let dry = try Self.run(e2e, [make, "-n", "install", "DESTDIR=\(e2e.path("dry"))"], directory: Self.packageRoot)
        #expect(dry.output.contains("bash scripts/build-release mentormated mentormate mentormate-ca"), "\(dry.output)")
        // ... scripts/build-release's: the shipped flags, in the scratch path scripts/run and make deb share.
        let script = try String(contentsOfFile: Self.packageRoot + "/scripts/build-release", encoding: .utf8)
        #expect(script.contains("flags=(-c release --static-swift-stdlib --scratch-path .build/static -Xlinker -z -Xlinker now)"), "\(script)")
    }

    // MARK: Readiness and watchdog

    /// With NOTIFY_SOCKET and WATCHDOG_USEC set, as systemd sets them: the first message is
    /// READY=1 (with MAINPID and a STATUS line), sent only once the API answers; WATCHDOG=1
    /// follows at half the watchdog interval; when the node's queue — or the API server's
    /// event loop — is wedged (the test-only fault switch), the keep-alives stop.
    @Test(arguments: ["node", "api"])
    func readinessOnlyOnceServingAndKeepAlivesStopWhenALoopIsWedged(_ loop: String) throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        // The node run uses a socket path, the api run an abstract name (systemd uses both).
        let notify = try NotifyListener(path: e2e.path("notify-\(loop)"), abstract: loop == "api")
        let watchdog: Duration = .seconds(1)
        let daemon = try Self.spawnService(e2e, name: loop, arguments: [], environment: [
            "NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "1000000", "MENTORMATE_TEST_WEDGE": loop,
        ])
        defer { daemon.kill() }

        let ready = try #require(notify.wait(timeout: .seconds(30)) { $0.has("READY=1") }, "no READY=1; log:\n\(daemon.log)")
        // At this moment the API must answer at once.
        let client = try RPCClient(path: daemon.socket, timeout: .seconds(5))
        #expect(try client.call("status")["node"]?.stringValue?.hasPrefix("mm1") == true)
        client.close()
        #expect(notify.received.first?.has("READY=1") == true, "READY=1 must be the first message: \(notify.received)")
        #expect(ready.has("MAINPID=\(daemon.pid)"), "\(ready)")
        #expect(ready.lines.contains { $0.hasPrefix("STATUS=serving: 0 peers, 0 records") }, "\(ready)")

        // Keep-alives every 0.5 s: over 3 s about 6, never a gap near the watchdog interval.
        let alive = notify.collect(for: .seconds(3)).filter { $0.has("WATCHDOG=1") }
        #expect((4...8).contains(alive.count), "\(alive.count) keep-alives in 3 s with WatchdogSec=1s")
        let times = [ready.at] + alive.map(\.at)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 < watchdog }, "a keep-alive gap reached the watchdog interval: \(gaps)")

        // Wedge the loop: the keep-alives stop (one already on its way may still arrive).
        daemon.process.send(SIGUSR1)
        #expect(e2e.read(daemon.logPath).contains("test fault switch armed"), "the armed switch is logged")
        _ = notify.collect(for: .milliseconds(300))
        let afterWedge = notify.collect(for: watchdog * 3).filter { $0.has("WATCHDOG=1") }
        #expect(afterWedge.isEmpty, "\(afterWedge.count) keep-alives after the \(loop) loop was wedged; log:\n\(daemon.log)")
        #expect(daemon.process.wait(timeout: .zero) == nil, "the wedged daemon is still running (systemd would kill it)")
    }

    /// Without MENTORMATE_TEST_WEDGE, SIGUSR1 is not a way in: it ends the daemon (its default
    /// action) instead of wedging it, and nothing is said about a fault switch.
    @Test func theWedgeSwitchIsOffUnlessTheEnvironmentArmsIt() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let notify = try NotifyListener(path: e2e.path("notify"))
        let daemon = try Self.spawnService(e2e, name: "plain", arguments: [],
                                           environment: ["NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "1000000"])
        defer { daemon.kill() }
        _ = try #require(notify.wait(timeout: .seconds(30)) { $0.has("READY=1") }, "no READY=1; log:\n\(daemon.log)")
        daemon.process.send(SIGUSR1)
        let end = daemon.process.wait(timeout: .seconds(10))
        #expect(end?.signal == SIGUSR1, "\(end.map(\.description) ?? "still running")")
        #expect(!daemon.log.contains("fault"), "\(daemon.log)")
    }

    // MARK: Socket activation

    /// `systemd-socket-activate -l PATH mentormated …`: the socket exists before the daemon, the
    /// first client starts it, and it serves the API on the inherited descriptor (status names
    /// PATH); at SIGTERM it stops cleanly and leaves the socket file to its owner.
    @Test func socketActivationServesTheAPIOnTheInheritedSocket() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let activate = try Self.program("systemd-socket-activate", package: "systemd")
        let socket = e2e.path("activated.sock"), log = e2e.path("activated.log")
        let process = try ChildProcess([activate, "-l", socket, e2e.binaries.daemon, "--state-dir", e2e.path("activated-state"),
                                        "--listen", "127.0.0.1:0", "--no-mdns"] + E2E.networkFlags, stderr: .file(log))
        let daemon = Daemon(process: process, stateDir: e2e.path("activated-state"), socket: socket, logPath: log)
        defer { daemon.kill() }
        _ = try poll(timeout: .seconds(10), { FileManager.default.fileExists(atPath: socket) }, until: { $0 })
        #expect(!FileManager.default.fileExists(atPath: e2e.path("activated-state")), "the daemon starts only at the first client")

        let client = try RPCClient(path: socket, timeout: .seconds(30))
        let status = try client.call("status")
        client.close()
        #expect(status["node"]?.stringValue?.hasPrefix("mm1") == true, "\(status)")
        #expect(status["socket"]?.stringValue == socket, "status names the inherited socket: \(status)")
        #expect(daemon.log.contains("API socket inherited from systemd"), "\(daemon.log)")
        try e2e.mm(["signup", "--email", "sam@uni.edu", "--name", "Sam", "--role", "student"], socket: socket)
        #expect(try mmJSON(e2e, ["whoami"], socket)["name"] == "Sam")

        let end = daemon.terminate(timeout: .seconds(15))
        #expect(end?.exitCode == 0, "\(end.map(\.description) ?? "still running"); log:\n\(daemon.log)")
        var st = stat()
        #expect(lstat(socket, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK, "an adopted socket file is not the daemon's to remove")
    }

    // MARK: Stopping

    /// SIGTERM while two daemons sync a backlog (the receiver held back by its records-per-second
    /// limit, so the sync is surely running): each exits with status 0 well within the unit's
    /// TimeoutStopSec=, says STOPPING=1 first, and leaves a replica that passes integrity_check;
    /// the receiver picks the sync up again after a restart.
    @Test func sigtermDuringASyncExitsZeroWithinTheStopTimeoutAndTheReplicaIsSound() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let sqlite3 = try Self.program("sqlite3", package: "sqlite3")
        let stopTimeout = try #require(Self.timeSpan(try Self.unitSetting("TimeoutStopSec")))
        func integrity(_ state: String) throws -> String {
            try e2e.tool([sqlite3, state + "/replica.db", "pragma integrity_check"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func records(_ daemon: Daemon) throws -> Int {
            Int(try mmJSON(e2e, ["status"], daemon.socket)["records"]?.intValue ?? -1)
        }

        // A: a backlog of records that stay stored (a peer's card, then its likes of strangers:
        // card edits would compact to one card, PROTOCOL §9.3).
        let a = try e2e.startDaemon(stateDir: e2e.path("a"), socket: e2e.path("a.sock"))
        defer { a.kill() }
        // More than two windows (4 batches of 256) beyond what B may take at once, so a restarted B
        // is still mid-sync when A stops.
        let fed = try Self.hostile(e2e, port: try listenPort(e2e, a.socket), "stream", from: "127.0.0.44", ["--records", "3000", "--wait", "60"])
        // An ack means taken, not stored (PROTOCOL.md §13.3 "`ack`"): the last batches may still
        // be applied after the peer saw every ack.
        let backlog = try poll(timeout: .seconds(10), { try records(a) }, until: { $0 >= 3000 })
        #expect(backlog >= 3000, "A should hold the streamed backlog: \(backlog); \(fed)")
        let portA = try listenPort(e2e, a.socket)

        // B applies at most 100 records a second from a peer.
        let config = try e2e.write("b.conf", Array("peer_records_per_second = 100\n".utf8))
        let notify = try NotifyListener(path: e2e.path("notify-b"))
        func startB() throws -> Daemon {
            let b = try Self.spawnService(e2e, name: "b", arguments: ["--config", config, "--peer", "127.0.0.1:\(portA)"],
                                          environment: ["NOTIFY_SOCKET": notify.address])
            try b.waitUntilServing()
            return b
        }
        func stop(_ daemon: Daemon, _ name: String) throws {
            let started = ContinuousClock.now
            let end = daemon.terminate(timeout: stopTimeout)
            let took = ContinuousClock.now - started
            #expect(end?.exitCode == 0, "\(name): SIGTERM during a sync: \(end.map(\.description) ?? "still running after \(stopTimeout)"); log:\n\(daemon.log)")
            #expect(took < .seconds(15), "\(name) took \(took) to stop")
            #expect(try integrity(daemon.stateDir) == "ok", "\(name)'s replica after SIGTERM")
        }

        let b = try startB()
        defer { b.kill() }
        let first = try poll(timeout: .seconds(30), { try records(b) }, until: { $0 > 0 })
        #expect((1..<backlog).contains(first), "B should be mid-sync, holding \(first) of \(backlog)")
        try stop(b, "B (receiving)")
        #expect(notify.collect(for: .milliseconds(200)).contains { $0.has("STOPPING=1") } || notify.received.contains { $0.has("STOPPING=1") },
                "SIGTERM sends STOPPING=1: \(notify.received)")
        #expect(b.log.contains("mentormated stopped"), "\(b.log)")

        // B again: it resumes; A is stopped while it sends.
        let b2 = try startB()
        defer { b2.kill() }
        let resumed = try poll(timeout: .seconds(30), { try records(b2) }, until: { $0 > first })
        #expect((first + 1..<backlog).contains(resumed), "B should resume the sync, holding \(resumed) of \(backlog)")
        print("SIGTERM during a sync: B held \(first) of \(backlog) records when stopped, \(resumed) when A was stopped")
        try stop(a, "A (sending)")
        try stop(b2, "B (after A left)")
    }

    // MARK: Logs

    /// With JOURNAL_STREAM naming its standard error (as systemd sets it), every line starts with
    /// its syslog priority; with a JOURNAL_STREAM that names another file, none does.
    @Test func journalStreamLinesCarryTheirPriority() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        for journal in [true, false] {
            let name = journal ? "journal" : "not-journal"
            let log = e2e.path(name + ".log")
            FileManager.default.createFile(atPath: log, contents: nil)
            var st = stat()
            let other = e2e.path("elsewhere")
            FileManager.default.createFile(atPath: other, contents: nil)
            #expect(stat(journal ? log : other, &st) == 0)
            // The daemon's stderr is opened O_TRUNC on the same file: same device and inode.
            let daemon = try Self.spawnService(e2e, name: name, arguments: ["--log-level", "debug"],
                                               environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino)"])
            defer { daemon.kill() }
            try daemon.waitUntilServing()
            _ = try e2e.run(["signup", "--email", "x@uni.edu", "--name", "X", "--role", "tutor"], socket: daemon.socket)
            #expect(daemon.terminate()?.exitCode == 0)
            let lines = daemon.log.split(separator: "\n")
            #expect(!lines.isEmpty)
            if journal {
                #expect(lines.allSatisfy { $0.range(of: #"^<[0-7]>(debug|info|notice|warning|error) "#, options: .regularExpression) != nil },
                        "\(daemon.log)")
                #expect(lines.contains { $0.hasPrefix("<5>notice mentormated started") } && lines.contains { $0.hasPrefix("<6>info ") }
                        && lines.contains { $0.hasPrefix("<7>debug ") }, "\(daemon.log)")
            } else {
                #expect(!lines.contains { $0.hasPrefix("<") }, "\(daemon.log)")
            }
        }
    }

    /// A static peer that refuses every dial is redialled with backoff but logged once at info
    /// (then at a slowing rate, minutes apart), never a line per attempt; the attempts themselves
    /// show at debug.
    @Test func aRefusingPeerIsLoggedOnceNotPerAttempt() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        // A port nobody listens on: bind one, note it, close it.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        close(probe)
        let port = UInt16(bigEndian: addr.sin_port)

        let daemon = try Self.spawnService(e2e, name: "lonely", arguments: ["--peer", "127.0.0.1:\(port)", "--log-level", "debug"],
                                           environment: [:])
        defer { daemon.kill() }
        try daemon.waitUntilServing()
        let attempts = try poll(timeout: .seconds(10), {
            daemon.log.split(separator: "\n").filter { $0.contains("dialling a peer failed") }.count
        }, until: { $0 >= 4 })
        #expect(attempts >= 4, "the peer should have been redialled a few times: \(daemon.log)")
        let infoLines = daemon.log.split(separator: "\n").filter { $0.hasPrefix("info peer unreachable") }
        #expect(infoLines.count == 1, "one info line for \(attempts + 1) failed dials: \(daemon.log)")
        #expect(infoLines.first?.contains("peer.address=127.0.0.1:\(port)") == true, "\(infoLines)")
    }

    // MARK: Completion and manual

    /// The bash completion and the man pages name every command and every option that
    /// `mentormate --help`, each command's `--help` and `mentormated --help` list; the completion
    /// script completes commands and options in bash.
    @Test func completionAndManPagesCoverEveryCommandAndFlag() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let completion = try String(contentsOfFile: Self.packageRoot + "/completion/mentormate.bash", encoding: .utf8)
        let manClient = try String(contentsOfFile: Self.packageRoot + "/man/man1/mentormate.1", encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\fB", with: "").replacingOccurrences(of: "\\fR", with: "")
        let manDaemon = try String(contentsOfFile: Self.packageRoot + "/man/man8/mentormated.8", encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        func flags(_ text: String) -> Set<String> {
            let regex = try! NSRegularExpression(pattern: #"(?<![\w-])--?[a-z][a-z-]*"#)
            return Set(regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range, in: text).map { String(text[$0]) }
            }.filter { $0 != "--" })
        }

        let overview = try e2e.run(["--help"])
        var commands: [String] = []
        for line in overview.stdout.split(separator: "\n") where line.hasPrefix("  ") && !line.hasPrefix("  -") {
            let words = line.split(separator: " ", maxSplits: 2)
            if words.count >= 2, words[0] == "profile" { commands.append("profile " + words[1]) }
            else if let first = words.first { commands.append(String(first)) }
        }
        #expect(commands.count >= 16, "commands read from --help: \(commands)")
        for command in commands {
            let words = command.split(separator: " ").map(String.init)
            for word in words { #expect(completion.contains(word), "the completion lacks `\(word)`") }
            #expect(manClient.contains(".B " + command) || manClient.contains(".B " + command + " "), "mentormate(1) lacks `\(command)`")
            let help = try e2e.run(words + ["--help"])
            for flag in flags(help.stdout.components(separatedBy: "USAGE:").dropFirst().joined()) {
                #expect(completion.contains(flag), "the completion lacks \(flag) (of `\(command)`)")
                #expect(manClient.contains(flag), "mentormate(1) lacks \(flag) (of `\(command)`)")
            }
        }
        let daemonHelp = try Self.run(e2e, [e2e.binaries.daemon, "--help"])
        for flag in flags(daemonHelp.output.components(separatedBy: "USAGE:").dropFirst().joined()) {
            #expect(completion.contains(flag), "the completion lacks mentormated's \(flag)")
            #expect(manDaemon.contains(flag), "mentormated(8) lacks \(flag)")
        }

        // And in bash: the commands, profile's subcommands, an option, a choice, a setting's values.
        let script = """
            source \(Self.packageRoot)/completion/mentormate.bash
            t() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _mentormate; echo "${COMPREPLY[*]}"; }
            t mentormate s
            t mentormate profile ""
            t mentormate --json profile set --no
            t mentormate signup --role ""
            t mentormate settings set notify.match ""
            t mentormate notify --s
            t mentormate profile photo ""
            t mentormate profile show --save
            """
        let bash = try Self.run(e2e, ["/bin/bash", "--norc", "-c", script])
        #expect(bash.output == "signup swipe settings status\nshow set photo\n--no-photo --no-preferences\nstudent tutor\ntrue false on off yes no\n--stdout --socket\nadd remove order\n--save-photos\n",
                "\(bash.output)")
    }
}
