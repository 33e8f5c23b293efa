import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program started with posix_spawn: the minimal part of `ChildProcess`
/// (Tests/EndToEndTests/Support) the discovery lab tests need. stdout is a socket pair read line
/// by line as lines arrive; stderr goes to a file. It is stopped by its PID only, and reaped;
/// `deinit` kills it (SIGKILL), so a failing test leaves no process behind. The PID is never
/// signalled after it was reaped. The child gets no descriptor of the runner beyond 0, 1 and 2.
final class LabProcess {
    struct Status: Equatable, CustomStringConvertible {
        let raw: Int32
        var signal: Int32? { raw & 0x7f == 0 || raw & 0x7f == 0x7f ? nil : raw & 0x7f }
        var exitCode: Int32? { signal == nil ? (raw >> 8) & 0xff : nil }
        var description: String { signal.map { "killed by signal \($0)" } ?? "exit status \((raw >> 8) & 0xff)" }
    }

    let pid: pid_t
    let argv: [String]
    let errorPath: String
    private(set) var status: Status?
    private var outputFD: Int32 = -1
    private var pending: [UInt8] = []
    /// Complete stdout lines read so far.
    private(set) var lines: [String] = []

    init(_ argv: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
         errorPath: String) throws {
        precondition(!argv.isEmpty)
        self.argv = argv
        self.errorPath = errorPath
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw LabError("socketpair: \(String(cString: strerror(errno)))")
        }
        defer { close(ends[1]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), mask = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&defaults, s) }
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cEnv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, cEnv)
        guard result == 0 else {
            close(ends[0])
            throw LabError("posix_spawn \(argv[0]): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.outputFD = ends[0]
    }

    deinit {
        kill()
        if outputFD >= 0 { close(outputFD) }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static var addCloseFrom: AddCloseFrom? {
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
    }

    /// Sends `signal` unless the process was reaped already.
    func send(_ signal: Int32) {
        guard status == nil else { return }
        _ = Glibc.kill(pid, signal)
    }

    /// Waits up to `timeout` for the process to end; nil if it is still running.
    @discardableResult
    func wait(timeout: Duration) -> Status? {
        let deadline = ContinuousClock.now + timeout
        while status == nil {
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid {
                status = Status(raw: raw)
            } else if r < 0 && errno != EINTR {
                status = Status(raw: -1)  // not our child (cannot happen): never signal it
            } else if ContinuousClock.now >= deadline {
                return nil
            } else {
                usleep(10_000)
            }
        }
        return status
    }

    /// SIGKILL (by PID) unless it ended already, and reaps it.
    @discardableResult
    func kill() -> Status {
        if let status { return status }
        _ = Glibc.kill(pid, SIGKILL)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = Status(raw: raw)
        self.status = status
        return status
    }

    /// Reads stdout until a line satisfies `match`, end of file, or `timeout`; returns that line.
    /// Lines checked by an earlier call are checked again (pass `after:` to skip them).
    func waitForLine(timeout: Duration, after skip: Int = 0, where match: (String) -> Bool) -> String? {
        let deadline = ContinuousClock.now + timeout
        var checked = skip
        while true {
            while checked < lines.count {
                if match(lines[checked]) { return lines[checked] }
                checked += 1
            }
            guard readSome(until: deadline) else { return nil }
        }
    }

    /// Reads whatever stdout has until `timeout` passes or it ends.
    func drain(for timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while readSome(until: deadline) {}
    }

    /// What it wrote to stderr, for failure messages.
    var errorOutput: String {
        let text = ((try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "(empty)" : text
    }

    /// Everything so far, for failure messages.
    var transcript: String {
        "\(argv.joined(separator: " "))\nstdout:\n\(lines.joined(separator: "\n"))\nstderr:\n\(errorOutput)"
    }

    private func readSome(until deadline: ContinuousClock.Instant) -> Bool {
        guard outputFD >= 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let left = deadline - .now
            guard left > .zero else { return false }
            var poller = pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)
            let (seconds, attoseconds) = left.components
            let ready = poll(&poller, 1, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let count = read(outputFD, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                close(outputFD)
                outputFD = -1
                if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)); pending = [] }
                return false
            }
            pending += chunk[..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            return true
        }
    }
}

struct LabError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The multi-host lab of `scripts/lab`, under a prefix of its own (so it never meets a lab
/// someone started by hand), with a directory for the output of what runs in it.
final class DiscoveryLab {
    let prefix: String
    let script: String
    let directory: String
    private var processes: [LabProcess] = []

    /// The repository's root, from this file's path (Tests/MentorNetTests/LabSupport.swift).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    init() throws {
        prefix = "mlt\(getpid() % 100_000)"
        script = Self.repository + "/scripts/lab"
        directory = "/tmp/mlt-out-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["MM_LAB_PREFIX"] = prefix
        return env
    }

    /// Runs `scripts/lab ARGS...` to the end; throws with its output when it fails.
    @discardableResult
    func run(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> String {
        let output = directory + "/lab-\(arguments.first ?? "").log"
        let process = try LabProcess(["/bin/bash", script] + arguments, environment: environment, errorPath: output)
        process.drain(for: timeout)
        guard let status = process.wait(timeout: .seconds(5)) else {
            process.kill()
            throw LabError("scripts/lab \(arguments.joined(separator: " ")) did not finish within \(timeout):\n\(process.errorOutput)")
        }
        let text = process.lines.joined(separator: "\n") + "\n" + process.errorOutput
        guard status.exitCode == 0 else {
            throw LabError("scripts/lab \(arguments.joined(separator: " ")) failed (\(status)):\n\(text)")
        }
        return text
    }

    /// Builds `hosts` hosts, after clearing what an earlier run may have left under this prefix.
    func up(_ hosts: Int) throws {
        try run(["down"])
        try run(["up", "\(hosts)"])
    }

    /// Ends every process started here (SIGTERM, then SIGKILL) and tears the lab down.
    func down() throws {
        for process in processes where process.status == nil {
            process.send(SIGTERM)
            if process.wait(timeout: .seconds(3)) == nil { process.kill() }
        }
        processes = []
        try run(["down"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts `argv` on host `host` (`scripts/lab exec`); its PID is the program's own.
    func start(on host: Int, _ argv: [String], name: String) throws -> LabProcess {
        let process = try LabProcess(["/bin/bash", script, "exec", "\(host)"] + argv, environment: environment,
                                     errorPath: directory + "/\(name).stderr")
        processes.append(process)
        return process
    }

    /// Starts `argv` on this machine, outside the lab.
    func startOutside(_ argv: [String], environment: [String: String], name: String) throws -> LabProcess {
        let process = try LabProcess(argv, environment: environment, errorPath: directory + "/\(name).stderr")
        processes.append(process)
        return process
    }

    /// The `mentormate-dnssd-probe` built with the tests: next to the test binary, or in a folder
    /// above it (never the package's .build/debug, which another --scratch-path leaves stale).
    static func probe() -> String? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("mentormate-dnssd-probe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        return nil
    }
}

/// One JSON line of `mentormate-dnssd-probe`.
struct ProbeEvent {
    let fields: [String: Any]

    init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        fields = object
    }

    var event: String { fields["event"] as? String ?? "" }
    var name: String? { fields["name"] as? String }
    var port: Int? { fields["port"] as? Int }
    var host: String? { fields["host"] as? String }
    var addresses: [String] { fields["addresses"] as? [String] ?? [] }
    var txt: [String: String] { fields["txt"] as? [String: String] ?? [:] }
    var code: Int? { fields["code"] as? Int }
    var codeName: String? { fields["codeName"] as? String }
    var message: String? { fields["message"] as? String }
    /// Milliseconds since the probe started.
    var ms: Int { fields["ms"] as? Int ?? -1 }

    /// Matches `event` (and `name`, when given) in a probe's stdout line.
    static func matching(_ event: String, name: String? = nil) -> (String) -> Bool {
        { line in
            guard let parsed = ProbeEvent(line), parsed.event == event else { return false }
            return name == nil || parsed.name == name
        }
    }
}
