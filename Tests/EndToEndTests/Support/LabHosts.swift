import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The multi-host lab of `scripts/lab` for end-to-end tests with real daemons: hosts are network
/// namespaces on a bridge, each with its own D-Bus and avahi-daemon (169.254.77.N), and
/// `mentormated` runs on host N through `scripts/lab exec N` (so its PID is the daemon's own, and
/// its `dns_sd` calls reach that host's Avahi). The daemons' API sockets live in the test's
/// temporary directory, which every namespace shares, so the real `mentormate` client drives
/// them from the test process (`E2E.mm(..., socket: lab.socket(N))`).
///
/// Each lab is named by its own `MM_LAB_PREFIX` (a tag per test and this process's PID), so a
/// lab left by a crashed run never clashes with this one. `down()` (from a `defer` in the test)
/// stops every daemon and program started here by PID (SIGTERM, then SIGKILL) and then runs
/// `scripts/lab down`, which ends what the lab started and deletes its links and namespaces.
/// Without root, or when the lab cannot be built, the test fails saying why; it never skips.
final class LabHosts {
    let e2e: E2E
    let prefix: String
    let script: String
    private var daemons: [Daemon] = []
    private var programs: [ChildProcess] = []
    private var counter = 0
    private var isDown = false

    /// The repository's root, from this file's path (Tests/EndToEndTests/Support/LabHosts.swift).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// `tag`: 2 or 3 lowercase letters naming the test (the prefix is at most 8 characters).
    init(e2e: E2E, tag: String) throws {
        guard geteuid() == 0 else {
            throw E2EError("""
                the discovery lab needs root (network and mount namespaces, veth links, a D-Bus and an \
                avahi-daemon per host); run these tests as root, in CI in a --privileged container
                """)
        }
        precondition(tag.count <= 3 && tag.allSatisfy { $0.isLowercase && $0.isASCII })
        self.e2e = e2e
        prefix = tag + String(getpid() % 100_000)
        script = Self.repository + "/scripts/lab"
    }

    deinit { try? down() }

    var environment: [String: String] {
        var env = ChildProcess.baseEnvironment
        env["MM_LAB_PREFIX"] = prefix
        return env
    }

    static func address(_ host: Int) -> String { "169.254.77.\(host)" }
    func socket(_ host: Int) -> String { e2e.path("h\(host).sock") }
    func stateDir(_ host: Int) -> String { e2e.path("state\(host)") }

    /// Runs `scripts/lab ARGS...` to its end; throws with its output when it fails.
    @discardableResult
    func lab(_ arguments: [String], timeout: Duration = .seconds(90)) throws -> String {
        counter += 1
        let out = e2e.path("lab-\(counter)-\(arguments.first ?? "").log")
        let process = try ChildProcess(["/bin/bash", script] + arguments, environment: environment,
                                       stdout: .file(out), stderr: .file(out + ".err"))
        guard let status = process.wait(timeout: timeout) else {
            process.kill()
            throw E2EError("scripts/lab \(arguments.joined(separator: " ")) did not finish within \(timeout):\n\(e2e.read(out + ".err"))")
        }
        let text = e2e.read(out) + e2e.read(out + ".err")
        guard status.exitCode == 0 else {
            throw E2EError("scripts/lab \(arguments.joined(separator: " ")) failed (\(status)):\n\(text)")
        }
        return text
    }

    /// Builds hosts 1...`hosts` (after clearing anything left under this prefix); `options` go
    /// to `scripts/lab up` (`--ipv6-only`, `--link-local-only 1,2`, `--segment-b 2`).
    func up(_ hosts: Int, options: [String] = []) throws {
        do {
            try lab(["down"])
            try lab(["up", "\(hosts)"] + options)
        } catch {
            try? lab(["down"])
            throw E2EError("the lab could not be built, so this test cannot run: \(error)")
        }
    }

    /// Starts `mentormated` on host `host` (`--listen 0.0.0.0:7000` unless `listen` says another,
    /// mDNS on, no `--peer`) with its state and socket in the test's directory, without waiting for it.
    func spawnDaemon(on host: Int, listen: String = "0.0.0.0:7000", extra: [String] = []) throws -> Daemon {
        counter += 1
        let log = e2e.path("daemon-h\(host)-\(counter).log")
        let process = try ChildProcess(
            ["/bin/bash", script, "exec", "\(host)", e2e.binaries.daemon, "--state-dir", stateDir(host), "--socket", socket(host),
             "--listen", listen] + E2E.withNetwork(extra),
            environment: environment, stdout: .file(log + ".out"), stderr: .file(log))
        let daemon = Daemon(process: process, stateDir: stateDir(host), socket: socket(host), logPath: log)
        daemons.append(daemon)
        return daemon
    }

    /// `spawnDaemon`, then waits until its socket answers.
    func startDaemon(on host: Int, listen: String = "0.0.0.0:7000", extra: [String] = []) throws -> Daemon {
        let daemon = try spawnDaemon(on: host, listen: listen, extra: extra)
        try daemon.waitUntilServing(timeout: .seconds(60))
        return daemon
    }

    /// Starts `argv` on host `host` with stdout on a pipe (read it with `waitForLine`) and
    /// stderr in `errorPath(name)`.
    func start(on host: Int, _ argv: [String], name: String) throws -> ChildProcess {
        let process = try ChildProcess(["/bin/bash", script, "exec", "\(host)"] + argv, environment: environment,
                                       stdout: .pipe, stderr: .file(errorPath(name)))
        programs.append(process)
        return process
    }

    func errorPath(_ name: String) -> String { e2e.path(name + ".err") }

    /// Stops every daemon and program started here (SIGTERM, SIGKILL after 10 s), by PID, then
    /// tears the lab down. Idempotent; throws when `scripts/lab down` could not remove everything.
    func down() throws {
        guard !isDown else { return }
        isDown = true
        for program in programs { program.send(SIGTERM) }
        for daemon in daemons { daemon.process.send(SIGTERM) }
        for program in programs where program.wait(timeout: .seconds(5)) == nil { program.kill() }
        for daemon in daemons where daemon.process.wait(timeout: .seconds(10)) == nil { daemon.kill() }
        programs = []
        daemons = []
        try lab(["down"])
    }
}

/// Lines of a daemon's log at `level` ("info", "debug") that contain every one of `parts`.
func logLines(_ daemon: Daemon, level: String, containing parts: [String]) -> [String] {
    daemon.log.split(separator: "\n").map(String.init).filter { line in
        line.hasPrefix(level + " ") && parts.allSatisfy { line.contains($0) }
    }
}

/// Reads `value` every `interval` until `done` holds or `timeout` passes; returns the last
/// reading and how long it took. For polls that run the client (a process each time), which
/// would load this 2-core machine if run every few milliseconds.
func labPoll<T>(timeout: Duration, interval: Duration = .milliseconds(200), _ value: () throws -> T,
                until done: (T) -> Bool) rethrows -> (value: T, after: Duration, ok: Bool) {
    let start = ContinuousClock.now
    while true {
        let v = try value()
        if done(v) { return (v, ContinuousClock.now - start, true) }
        if ContinuousClock.now - start >= timeout { return (v, ContinuousClock.now - start, false) }
        usleep(UInt32(milliseconds(interval)) * 1000)
    }
}
