import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `mentormated` and `mentormate` as built by the same build as these tests: next to the test
/// binary, or in a folder above it when the tests are a bundle. Deliberately not the package's
/// .build/debug: a build with another --scratch-path would find stale programs there.
struct Binaries {
    let daemon: String
    let client: String

    static func locate(_ name: String) -> String? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// A test tool of this package (Tests/Tools), built by the same build.
    static func tool(_ name: String) throws -> String {
        guard let path = locate(name) else {
            throw E2EError("\(name) was not found next to the test binary; run `swift build --build-tests` (same --scratch-path) first")
        }
        return path
    }

    static func find() throws -> Binaries {
        guard let daemon = locate("mentormated"), let client = locate("mentormate") else {
            throw E2EError("""
                mentormated and mentormate were not found next to the test binary (\(CommandLine.arguments[0])); \
                run `swift build --build-tests` first (with the same --scratch-path) so that both programs are built
                """)
        }
        return Binaries(daemon: daemon, client: client)
    }
}

/// A Unix user made for one test (no home, no shell) and deleted at its end.
struct TestUser: CustomStringConvertible {
    let name: String
    let uid: UInt32
    let gid: UInt32
    var description: String { "\(name) (uid \(uid))" }
}

/// One run of `mentormate` that has ended.
struct ClientRun: CustomStringConvertible {
    let arguments: [String]
    let user: String
    let status: ChildProcess.Status
    let stdout: String
    let stderr: String

    var ok: Bool { status.exitCode == 0 }
    var exitCode: Int32? { status.exitCode }
    /// stdout parsed as JSON (for `--json`).
    var json: JSON? { JSON.parse(Array(stdout.utf8)) }

    var description: String {
        "`mentormate \(arguments.joined(separator: " "))` as \(user): \(status); stdout: \(stdout.isEmpty ? "(empty)" : stdout); stderr: \(stderr.isEmpty ? "(empty)" : stderr)"
    }
}

/// A running `mentormated`. `kill()` (SIGKILL by PID) runs from `deinit` as well.
final class Daemon {
    let process: ChildProcess
    let stateDir: String
    let socket: String
    let logPath: String
    /// The uid it runs as (the client only talks to sockets served by a uid it trusts).
    let uid: uid_t

    init(process: ChildProcess, stateDir: String, socket: String, logPath: String, uid: uid_t = geteuid()) {
        self.process = process
        self.stateDir = stateDir
        self.socket = socket
        self.logPath = logPath
        self.uid = uid
    }

    deinit { process.kill() }

    var pid: pid_t { process.pid }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until `status` answers on the socket; throws (with the log) if the daemon exits or
    /// does not answer in time.
    func waitUntilServing(timeout: Duration = .seconds(20)) throws {
        let deadline = ContinuousClock.now + timeout
        var lastError = "no attempt"
        while ContinuousClock.now < deadline {
            if let status = process.wait(timeout: .zero) {
                throw E2EError("mentormated exited (\(status)) before it served \(socket); its log:\n\(log)")
            }
            do {
                let client = try RPCClient(path: socket, timeout: .seconds(5),
                                           trusted: SocketPath.TrustedServers(uids: [uid], kind: .given))
                let result = try client.call("status")
                if result["node"]?.stringValue?.hasPrefix("mm1") == true { return }
                lastError = "status answered \(result)"
            } catch {
                lastError = "\(error)"
            }
            usleep(20_000)
        }
        throw E2EError("mentormated (pid \(pid)) did not answer on \(socket) within \(timeout): \(lastError); its log:\n\(log)")
    }

    /// SIGTERM, then waits for the exit.
    func terminate(timeout: Duration = .seconds(10)) -> ChildProcess.Status? {
        process.send(SIGTERM)
        return process.wait(timeout: timeout)
    }

    @discardableResult
    func kill() -> ChildProcess.Status { process.kill() }

    /// VmRSS from /proc/PID/status, in KiB.
    func residentKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// VmHWM (the peak of VmRSS) from /proc/PID/status, in KiB.
    func peakResidentKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// Resets VmHWM to the current VmRSS (writing 5 to /proc/PID/clear_refs, Linux ≥ 4.0).
    func resetPeakResident() throws {
        guard let file = FileHandle(forWritingAtPath: "/proc/\(pid)/clear_refs") else {
            throw E2EError("cannot open /proc/\(pid)/clear_refs to reset the daemon's VmHWM (needs root)")
        }
        defer { try? file.close() }
        try file.write(contentsOf: Data("5".utf8))
    }

    /// The port of `listen=HOST:PORT` in the "mentormated started" log line.
    var loggedPort: Int? {
        for line in log.split(separator: "\n") where line.contains("mentormated started") {
            for word in line.split(separator: " ") where word.hasPrefix("listen=") {
                return word.split(separator: ":").last.flatMap { Int($0) }
            }
        }
        return nil
    }
}

/// One test's world: a temp directory (mode 0755, so the test users reach the socket in it),
/// the daemons and clients it started, and the Unix users it made. `cleanup()` (from a `defer`
/// in the test, and from `deinit`) kills every process it started by PID, deletes the users and
/// removes the directory.
final class E2E {
    let binaries: Binaries
    let dir: String
    private var processes: [ChildProcess] = []
    private var daemons: [Daemon] = []
    private(set) var users: [TestUser] = []
    private var counter = 0
    private var cleaned = false

    /// useradd/userdel lock /etc/passwd; one at a time in this process.
    private static let userLock = NSLock()

    init() throws {
        binaries = try Binaries.find()
        var template = Array("/tmp/mm-e2e-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw E2EError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        dir = String(cString: made)
        chmod(dir, 0o755)
    }

    deinit { cleanup() }

    var stateDir: String { dir + "/state" }
    var socket: String { dir + "/api.sock" }

    func path(_ name: String) -> String { dir + "/" + name }

    /// Writes a file readable by everyone (the test users read photos and passphrases).
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = path(name)
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            throw E2EError("cannot write \(file)")
        }
        return file
    }

    // MARK: Users

    static func requireRoot() throws {
        guard geteuid() == 0 else {
            throw E2EError("needs root to create test users (useradd) and run the client as them (setpriv); run the tests as root")
        }
    }

    static let setpriv = "/usr/bin/setpriv"

    /// Makes a system user `mmtest-TAG-RANDOM` with no home and no login shell.
    func makeUser(_ tag: String) throws -> TestUser {
        try Self.requireRoot()
        guard FileManager.default.isExecutableFile(atPath: Self.setpriv) else {
            throw E2EError("\(Self.setpriv) is missing; install util-linux")
        }
        let name = "mmtest-\(tag)-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let useradd = ["/usr/sbin/useradd", "/sbin/useradd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let useradd else { throw E2EError("useradd is missing (package passwd)") }
        let errors = path("useradd-\(name).err")
        let status = try Self.userLock.withLock {
            try ChildProcess([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], stderr: .file(errors))
                .wait(timeout: .seconds(30))
        }
        guard status?.exitCode == 0, let entry = getpwnam(name) else {
            let why = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw E2EError("useradd \(name) failed (\(status.map(\.description) ?? "timed out")): \(why)")
        }
        let user = TestUser(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        users.append(user)
        return user
    }

    private func deleteUsers() {
        let userdel = ["/usr/sbin/userdel", "/sbin/userdel"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/userdel"
        for user in users {
            let status = Self.userLock.withLock {
                (try? ChildProcess([userdel, user.name]))?.wait(timeout: .seconds(30))
            }
            if status?.exitCode != 0 {
                Issue.record("userdel \(user.name) failed (\(status.map(\.description) ?? "did not run")); remove the user by hand")
            }
        }
        users = []
    }

    // MARK: Daemons

    /// The tests' network: the built-in key at a cheap difficulty (a signup's proof of work
    /// takes about 256 hashes, not seconds), set the way a campus sets its own — the flag
    /// `--network-work-bits`, which every daemon the tests start gets unless a test gives its own
    /// (the tests of the default difficulty do). `mentormate-hostile-peer` defaults to the same.
    static let networkWorkBits = 8
    static let networkFlags = ["--network-work-bits", "\(networkWorkBits)"]

    /// `extra` with the tests' difficulty added unless it names one.
    static func withNetwork(_ extra: [String]) -> [String] {
        extra.contains("--network-work-bits") ? extra : networkFlags + extra
    }

    /// Starts `mentormated --state-dir STATE --socket SOCKET --listen 127.0.0.1:0 --no-mdns` and
    /// waits until its socket answers.
    /// `builtInDifficulty` leaves out the tests' `--network-work-bits`: the daemon runs at its
    /// own default, the built-in network's (for the tests of what a real network asks).
    func startDaemon(stateDir: String? = nil, socket: String? = nil, listen: String = "127.0.0.1:0",
                     extra: [String] = [], as user: TestUser? = nil, umask: String? = nil,
                     builtInDifficulty: Bool = false) throws -> Daemon {
        let daemon = try spawnDaemon(stateDir: stateDir, socket: socket, listen: listen, extra: extra, as: user, umask: umask,
                                     builtInDifficulty: builtInDifficulty)
        try daemon.waitUntilServing()
        return daemon
    }

    /// Starts `mentormated` without waiting for it: as root, or as `user` (setpriv); with
    /// `umask` (an octal string such as "000") set just before it starts.
    func spawnDaemon(stateDir: String? = nil, socket: String? = nil, listen: String = "127.0.0.1:0",
                     extra: [String] = [], as user: TestUser? = nil, umask: String? = nil,
                     builtInDifficulty: Bool = false) throws -> Daemon {
        counter += 1
        let state = stateDir ?? self.stateDir, sock = socket ?? self.socket
        let log = path("daemon-\(counter).log")
        var program = [binaries.daemon, "--state-dir", state, "--socket", sock, "--listen", listen, "--no-mdns"] + (builtInDifficulty ? extra : Self.withNetwork(extra))
        if let umask { program = ["/bin/sh", "-c", "umask \(umask) && exec \"$0\" \"$@\""] + program }
        let process = try ChildProcess(argv(program, as: user), stdout: .file(log + ".out"), stderr: .file(log))
        let daemon = Daemon(process: process, stateDir: state, socket: sock, logPath: log, uid: user?.uid ?? geteuid())
        daemons.append(daemon)
        return daemon
    }

    // MARK: Clients

    private func argv(_ program: [String], as user: TestUser?) -> [String] {
        guard let user else { return program }
        return [Self.setpriv, "--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--"] + program
    }

    private var childEnvironment: [String: String] {
        var env = ChildProcess.baseEnvironment
        env["HOME"] = "/"
        env["XDG_RUNTIME_DIR"] = nil
        return env
    }

    /// Runs `mentormate --socket SOCKET ARGS` (as `user`, or as root) to its end; `stdin` is
    /// written to a file that becomes its standard input.
    /// With `socketFlag: false` no --socket is given: the client picks its default path.
    func run(_ arguments: [String], as user: TestUser? = nil, socket: String? = nil, stdin: String? = nil,
             timeout: Duration = .seconds(60), socketFlag: Bool = true) throws -> ClientRun {
        let all = (socketFlag ? ["--socket", socket ?? self.socket] : []) + arguments
        return try runProgram([binaries.client] + all, shown: arguments, as: user, stdin: stdin, timeout: timeout)
    }

    /// Runs any program (a test tool, python3) to its end, as `user` (default root).
    func runProgram(_ program: [String], shown: [String]? = nil, as user: TestUser? = nil, stdin: String? = nil,
                    timeout: Duration = .seconds(60)) throws -> ClientRun {
        let arguments = shown ?? program
        counter += 1
        let n = counter
        let input = try stdin.map { try write("client-\(n).in", Array($0.utf8)) }
        let out = path("client-\(n).out"), err = path("client-\(n).err")
        let process = try ChildProcess(argv(program, as: user), environment: childEnvironment,
                                       stdin: input, stdout: .file(out), stderr: .file(err))
        processes.append(process)
        guard let status = process.wait(timeout: timeout) else {
            process.kill()
            throw E2EError("`mentormate \(arguments.joined(separator: " "))` did not end within \(timeout); stderr: \(read(err))")
        }
        return ClientRun(arguments: arguments, user: user?.name ?? "root", status: status, stdout: read(out), stderr: read(err))
    }

    /// Like `run`, but records an issue at the caller and throws unless the command succeeded.
    @discardableResult
    func mm(_ arguments: [String], as user: TestUser? = nil, socket: String? = nil, stdin: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation) throws -> ClientRun {
        let result = try run(arguments, as: user, socket: socket, stdin: stdin)
        guard result.ok else {
            Issue.record("expected success: \(result)", sourceLocation: sourceLocation)
            throw E2EError("a client command failed: \(result)")
        }
        return result
    }

    /// `mm` with `--json`, returning the parsed output.
    func mmJSON(_ arguments: [String], as user: TestUser? = nil, stdin: String? = nil,
                sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        let result = try mm(arguments + ["--json"], as: user, stdin: stdin, sourceLocation: sourceLocation)
        guard let json = result.json else {
            Issue.record("--json printed something that is not JSON: \(result)", sourceLocation: sourceLocation)
            throw E2EError("not JSON: \(result)")
        }
        return json
    }

    /// Starts `mentormate --socket SOCKET ARGS` in the background with its stdout on a pipe;
    /// `stdin` is written to a file that becomes its standard input.
    func background(_ arguments: [String], as user: TestUser? = nil, stdin: String? = nil) throws -> ChildProcess {
        try backgroundProgram([binaries.client, "--socket", socket] + arguments, as: user, stdin: stdin)
    }

    /// Starts any program (a test tool) as `user` in the background with its stdout on a pipe.
    func backgroundProgram(_ program: [String], as user: TestUser? = nil, stdin: String? = nil) throws -> ChildProcess {
        counter += 1
        let n = counter
        let input = try stdin.map { try write("background-\(n).in", Array($0.utf8)) }
        let process = try ChildProcess(argv(program, as: user), environment: childEnvironment, stdin: input, stdout: .pipe,
                                       stderr: .file(path("background-\(n).err")))
        processes.append(process)
        return process
    }

    /// Sends `lines` to the socket with `socat` running as `user` (half-closes after the last
    /// one, then reads until the daemon closes) and returns the lines it answered.
    func socat(_ lines: [String], as user: TestUser?, timeout: Duration = .seconds(60)) throws -> [JSON] {
        guard let socat = ["/usr/bin/socat", "/bin/socat"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw E2EError("socat is missing; install it (scripts/deps does)")
        }
        counter += 1
        let n = counter
        let input = try write("socat-\(n).in", Array(lines.map { $0 + "\n" }.joined().utf8))
        let out = path("socat-\(n).out"), err = path("socat-\(n).err")
        let process = try ChildProcess(argv([socat, "-t", "\(timeout.components.seconds)", "-", "UNIX-CONNECT:\(socket)"], as: user),
                                       environment: childEnvironment, stdin: input, stdout: .file(out), stderr: .file(err))
        processes.append(process)
        guard let status = process.wait(timeout: timeout + .seconds(5)) else {
            process.kill()
            throw E2EError("socat did not end within \(timeout); stderr: \(read(err))")
        }
        guard status.exitCode == 0 else { throw E2EError("socat ended with \(status): \(read(err))") }
        return try read(out).split(separator: "\n").map { line in
            guard let json = JSON.parse(Array(line.utf8)) else { throw E2EError("the daemon answered a line that is not JSON: \(line)") }
            return json
        }
    }

    /// Runs `program` (as root, or as `user`) to its end: for sqlite3 and the like.
    func tool(_ program: [String], as user: TestUser? = nil, timeout: Duration = .seconds(30)) throws -> (status: ChildProcess.Status, output: String) {
        counter += 1
        let out = path("tool-\(counter).out")
        let process = try ChildProcess(argv(program, as: user), stdout: .file(out), stderr: .file(out + ".err"))
        processes.append(process)
        guard let status = process.wait(timeout: timeout) else {
            process.kill()
            throw E2EError("\(program.joined(separator: " ")) did not end within \(timeout)")
        }
        return (status, read(out) + read(out + ".err"))
    }

    /// Starts `program` as `user` in the background (killed by `cleanup()`), e.g. a fake server.
    func spawn(_ program: [String], as user: TestUser?) throws -> ChildProcess {
        counter += 1
        let process = try ChildProcess(argv(program, as: user), environment: childEnvironment,
                                       stdout: .file(path("spawn-\(counter).out")), stderr: .file(path("spawn-\(counter).err")))
        processes.append(process)
        return process
    }

    func read(_ file: String) -> String {
        (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    }

    // MARK: Cleanup

    /// Kills (SIGKILL, by PID) every process this test started that is still running, deletes
    /// its users, removes its directory. Idempotent.
    func cleanup() {
        guard !cleaned else { return }
        cleaned = true
        for process in processes { process.kill() }
        for daemon in daemons { daemon.kill() }
        processes = []
        daemons = []
        deleteUsers()
        if ProcessInfo.processInfo.environment["MENTORMATE_E2E_KEEP"] == nil {
            try? FileManager.default.removeItem(atPath: dir)
        } else {
            print("end-to-end: kept \(dir)")
        }
    }
}

extension JSON {
    var strings: [String] { (arrayValue ?? []).compactMap(\.stringValue) }
}
