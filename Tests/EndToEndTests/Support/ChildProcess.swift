import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program started with posix_spawn, in the manner of `CrashChild` (Tests/MentorStoreTests):
/// stdin from a file or /dev/null, stdout and stderr to files or /dev/null, or stdout on a
/// socket pair read line by line as the lines arrive. It is stopped by its PID only (SIGTERM or
/// SIGKILL, then reaped); `kill()` runs from `deinit` too, so a failing test never leaves a
/// process behind. The PID is never signalled after it was reaped.
///
/// The child gets no descriptor of the test runner beyond 0, 1 and 2: everything this file opens
/// is close-on-exec, and where glibc has it (2.34+) the child also closes every descriptor from 3
/// up before exec. That matters because the other test targets run in the same process and make
/// pipes without close-on-exec for a moment; a long-lived daemon that inherited a pipe's write end
/// would keep that pipe from ever reaching end of file.
final class ChildProcess {
    enum Output {
        case null
        case file(String)
        /// A socket pair (close-on-exec from the start); read it with `waitForLine`/`readToEnd`.
        case pipe
    }

    /// How the process ended, from waitpid's status.
    struct Status: Equatable, CustomStringConvertible {
        let raw: Int32
        /// The signal that ended it (WTERMSIG), if one did.
        var signal: Int32? { raw & 0x7f == 0 || raw & 0x7f == 0x7f ? nil : raw & 0x7f }
        /// The exit code (WEXITSTATUS), if it exited.
        var exitCode: Int32? { signal == nil ? (raw >> 8) & 0xff : nil }
        var description: String { signal.map { "killed by signal \($0)" } ?? "exit status \((raw >> 8) & 0xff)" }
    }

    let pid: pid_t
    let argv: [String]
    private(set) var status: Status?
    /// Parent end of the stdout socket pair; -1 without `.pipe` or once it reached end of file.
    private var outputFD: Int32 = -1
    private var pending: [UInt8] = []
    /// Complete stdout lines read so far (with `.pipe`).
    private(set) var lines: [String] = []
    /// Where stderr goes, when it is a file.
    let stderrPath: String?
    /// A pidfd for the child (readable once it has ended), or -1 where the kernel or the C
    /// library has none; then `wait` falls back to checking every few milliseconds.
    private var pidFD: Int32 = -1

    /// The environment for children: the runner's, without what would redirect a daemon or a client.
    static var baseEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["MENTORMATE_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET",
                    "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "STATE_DIRECTORY", "RUNTIME_DIRECTORY"] {
            env[key] = nil
        }
        return env
    }

    init(_ argv: [String], environment: [String: String] = ChildProcess.baseEnvironment,
         stdin: String? = nil, stdout: Output = .null, stderr: Output = .null) throws {
        precondition(!argv.isEmpty)
        self.argv = argv
        if case .file(let path) = stderr { stderrPath = path } else { stderrPath = nil }
        var parentEnd: Int32 = -1, childEnd: Int32 = -1
        if case .pipe = stdout {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw E2EError("socketpair: \(String(cString: strerror(errno)))")
            }
            (parentEnd, childEnd) = (ends[0], ends[1])
        }
        defer { if childEnd >= 0 { close(childEnd) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .pipe:
                precondition(fd == 1, "only stdout can be a pipe")
                posix_spawn_file_actions_adddup2(&actions, childEnd, 1)
            }
        }
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        // The runner may ignore or block signals; the child starts with the defaults.
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
            if parentEnd >= 0 { close(parentEnd) }
            throw E2EError("posix_spawn \(argv[0]): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.outputFD = parentEnd
        self.pidFD = Self.pidfdOpen.map { $0(pid, 0) } ?? -1  // close-on-exec by definition
    }

    deinit {
        kill()
        if outputFD >= 0 { close(outputFD) }
    }

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34+), which Swift's Glibc module does
    /// not show; nil where the C library lacks it.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static var addCloseFrom: AddCloseFrom? {
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
    }

    /// glibc's pidfd_open (2.36+), looked up the same way.
    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    private static var pidfdOpen: PidfdOpen? {
        dlsym(nil, "pidfd_open").map { unsafeBitCast($0, to: PidfdOpen.self) }
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
                reaped(Status(raw: raw))
            } else if r < 0 && errno != EINTR {
                reaped(Status(raw: -1))  // not our child any more (cannot happen): never signal it
            } else if ContinuousClock.now >= deadline {
                return nil
            } else if pidFD >= 0 {
                var poller = pollfd(fd: pidFD, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, milliseconds(deadline - .now) + 1)
            } else {
                usleep(5_000)
            }
        }
        return status
    }

    private func reaped(_ status: Status) {
        self.status = status
        if pidFD >= 0 { close(pidFD) }
        pidFD = -1
    }

    /// Kills the process with SIGKILL (by PID) unless it ended already, and reaps it.
    @discardableResult
    func kill() -> Status {
        if let status { return status }
        _ = Glibc.kill(pid, SIGKILL)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = Status(raw: raw)
        reaped(status)
        return status
    }

    // MARK: Reading stdout (.pipe)

    /// Reads stdout until a line (after the first `skip` lines) satisfies `match`, end of file, or
    /// `timeout`; returns that line.
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

    /// Reads stdout until end of file or `timeout`; true at end of file.
    @discardableResult
    func readToEnd(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while readSome(until: deadline) {}
        return outputFD < 0
    }

    /// Everything read from stdout so far, complete lines and the unfinished rest.
    var outputSoFar: String {
        (lines + (pending.isEmpty ? [] : [String(decoding: pending, as: UTF8.self)])).joined(separator: "\n")
    }

    /// What it wrote to its stderr file so far.
    var errorOutput: String {
        stderrPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
    }

    /// stdout and stderr so far, for failure messages.
    var transcript: String { "stdout:\n\(outputSoFar)\nstderr:\n\(errorOutput)" }

    /// One read (waiting until `deadline`); false at end of file or when the deadline passed.
    private func readSome(until deadline: ContinuousClock.Instant) -> Bool {
        guard outputFD >= 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let left = deadline - .now
            guard left > .zero else { return false }
            var poller = pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds(left) + 1)
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

func milliseconds(_ d: Duration) -> Int32 {
    let (seconds, attoseconds) = d.components
    return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
}

struct E2EError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// VmRSS and VmHWM of a process, in KiB (-1 where /proc does not say).
func processMemory(_ pid: pid_t) -> (rss: Int, hwm: Int) {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    func value(_ key: String) -> Int {
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? -1
        }
        return -1
    }
    return (value("VmRSS"), value("VmHWM"))
}
