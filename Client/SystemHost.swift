#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorAPI
import MentorCLI
import MentorSystem

/// The real surroundings of `mentormate`: stdout and stderr, the socket, files, the terminal
/// and signals. Everything a command decides is in MentorAPI/CommandLine; this is only I/O.
final class SystemHost: ClientHost {
    /// How long one call may wait for its answer. Long enough for Argon2id at sign-up and login
    /// on a slow machine; `chat --follow` waits for events without a limit.
    static let callTimeout: Duration = .seconds(60)

    func output(_ text: String) { StandardStream.output(text) }
    func error(_ text: String) { StandardStream.error(text) }

    var timeZone: TimeZone { .current }

    func socketPath(flag: String?) -> String {
        SocketPath.clientDefault(flag: flag, environment: ProcessInfo.processInfo.environment)
    }

    func connect(to socketPath: String) throws -> any APITransport {
        try RPCClient(path: socketPath, timeout: Self.callTimeout)
    }

    func writeNewFile(_ path: String, _ bytes: [UInt8]) throws(ClientError) {
        // O_EXCL: never over an existing file (an older export, or a link planted there).
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ClientError("cannot create \(path): \(reason)",
                              hint: errno == EEXIST ? "give a file name that does not exist yet" : "check the directory and its permissions")
        }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let reason = String(cString: strerror(errno))
                unlink(path)
                throw ClientError("cannot write \(path): \(reason)", hint: "check free space")
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            unlink(path)
            throw ClientError("cannot write \(path): \(String(cString: strerror(errno)))", hint: "check free space")
        }
    }

    func readFile(_ path: String, limit: Int) throws(FileReadFailure) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: throw .missing
            case EACCES, EPERM: throw .permissionDenied
            case let code: throw .other(String(cString: strerror(code)))
            }
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .other(String(cString: strerror(errno))) }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .isDirectory
        default: throw .notRegular
        }
        guard st.st_size <= limit else { throw .tooLarge(size: Int(st.st_size)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n: Int
            do throws(SystemError) {
                // A regular file never blocks: `.wouldBlock` is not expected, and refused like an error.
                guard case .done(let count) = try Syscall.read(fd, into: &chunk) else {
                    throw SystemError(.system, errno: EAGAIN, "read \(path)")
                }
                n = count
            } catch {
                if error.errno == EISDIR { throw .isDirectory }
                throw .other(String(cString: strerror(error.errno)))
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<n])
            // The file grew after fstat: still refused, without reading it all.
            if bytes.count > limit { throw .tooLarge(size: bytes.count) }
        }
    }

    var secretsFromTerminal: Bool { isatty(0) == 1 }

    func readSecret(prompt: String) throws(ClientError) -> String? {
        guard secretsFromTerminal else { return try Self.readLine(fd: 0) }
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else {
            throw ClientError("cannot read the terminal's settings: \(String(cString: strerror(errno)))",
                              hint: "pipe the passphrase on stdin instead")
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        TerminalRestore.saved = saved
        // A signal while echo is off puts the terminal back before the default action runs.
        let previous = TerminalRestore.signals.map { ($0, signal($0, restoreTerminalAndResignal)) }
        defer {
            _ = tcsetattr(0, TCSAFLUSH, &saved)
            for (number, handler) in previous { _ = signal(number, handler) }
            Self.writeRaw("\n")
        }
        Self.writeRaw(prompt)
        guard tcsetattr(0, TCSAFLUSH, &quiet) == 0 else {
            throw ClientError("cannot turn off the terminal's echo: \(String(cString: strerror(errno)))",
                              hint: "pipe the passphrase on stdin instead")
        }
        return try Self.readLine(fd: 0)
    }

    func openTerminal() -> (any InteractiveTerminal)? { RawTerminal() }

    func readInputLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            guard case .done(1)? = try? Syscall.read(0, into: &byte) else {
                return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
            }
            if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            if bytes.count < 4096 { bytes.append(byte) }
        }
    }

    func environment(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }

    func findProgram(_ name: String) -> String? { Program.find(name, path: environment("PATH")) }

    func runProgram(_ argv: [String]) throws(ClientError) -> Int32 {
        do {
            return try Program.run(argv)
        } catch {
            throw ClientError("cannot run \(argv.first ?? "?"): \(error)")
        }
    }

    func interruptEndsCleanly() {
        _ = signal(SIGINT) { _ in _exit(0) }
    }

    /// Longest passphrase line accepted (a guard against a runaway pipe, not a policy).
    static let maxSecretBytes = 64 * 1024

    /// One line from `fd`, read byte by byte so nothing after it is consumed; nil at the end of
    /// the input before any byte. A final "\r" is dropped.
    static func readLine(fd: Int32) throws(ClientError) -> String? {
        // Room for the longest line up front, so appending never leaves copies of the passphrase
        // in freed memory; zeroed when done.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maxSecretBytes + 2)
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        var byte: UInt8 = 0
        while true {
            let n: Int
            do throws(SystemError) {
                switch try Syscall.read(fd, into: &byte) {
                case .done(let count): n = count
                case .wouldBlock: throw SystemError(.system, errno: EAGAIN, "read")
                }
            } catch {
                throw ClientError("cannot read the passphrase: \(String(cString: strerror(error.errno)))")
            }
            if n == 0 {
                if bytes.isEmpty { return nil }
                break
            }
            if byte == 0x0A { break }
            bytes.append(byte)
            guard bytes.count <= maxSecretBytes else {
                throw ClientError("the passphrase line is longer than 64 KiB", hint: "give a shorter passphrase")
            }
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ClientError("the passphrase is not valid UTF-8 text", hint: "check the terminal's or the pipe's encoding")
        }
        return text
    }

    /// Writes to stderr without the newline `StandardStream` adds (for a prompt).
    static func writeRaw(_ text: String) {
        StandardStream.write(text, to: 2)
    }
}

/// The terminal settings a signal handler restores while a passphrase is read with echo off.
enum TerminalRestore {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    /// Written before the handlers are installed, read only by them: the client has one thread,
    /// and the handler runs on it, so there is no concurrent access.
    nonisolated(unsafe) static var saved = termios()
    /// True while `swipe`'s full-screen view is up: the handler also leaves the alternate
    /// screen and shows the cursor again.
    nonisolated(unsafe) static var leaveScreen = false
}

/// Puts the terminal back (tcsetattr and write are async-signal-safe), then lets the signal do
/// what it would have done.
func restoreTerminalAndResignal(_ number: Int32) {
    _ = tcsetattr(0, TCSAFLUSH, &TerminalRestore.saved)
    if TerminalRestore.leaveScreen { _ = write(1, "\u{1B}[?25h\u{1B}[?1049l", 14) }
    _ = write(2, "\n", 1)
    _ = signal(number, SIG_DFL)
    _ = raise(number)
}

extension RPCClient: APITransport {
    /// Waits without a limit (`chat --follow` runs until interrupted); a closed connection
    /// throws `.connection(.closed)`.
    public func nextNotification() throws -> RPCNotification? {
        try nextNotification(timeout: nil)
    }
}
