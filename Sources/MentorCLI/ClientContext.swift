import Foundation
import MentorAPI
import MentorArguments
#if canImport(Glibc)
import Glibc
#endif

/// What `mentormate`'s commands need from the world, behind protocols so that tests run every
/// command against a fake daemon and a fake terminal. The real implementations live in Client/.

/// A connection to the daemon's API. `RPCClient` is the real one.
public protocol APITransport: AnyObject {
    /// Sends a request and waits for its response. Throws `RPCError` (or `RPCClientError.server`)
    /// when the daemon answers with an error, `RPCClientError.connection` (or anything else)
    /// when the connection fails. Notifications that arrive meanwhile are kept for
    /// `nextNotification()`.
    func call(_ method: String, _ params: [String: JSON]) throws -> JSON
    /// The next notification (after `subscribe`), waiting for one; nil when the daemon closed
    /// the connection.
    func nextNotification() throws -> RPCNotification?
}

/// Why a local file could not be read.
public enum FileReadFailure: Error, Equatable, Sendable {
    case missing
    case isDirectory
    case notRegular
    case permissionDenied
    /// Larger than the limit asked for; `size` is the file's size in bytes.
    case tooLarge(size: Int)
    case other(String)
}

/// The program's surroundings: standard streams, files, the terminal, signals, the socket.
public protocol ClientHost: AnyObject {
    func output(_ text: String)
    func error(_ text: String)
    /// The socket to use: `--socket`, then `MENTORMATE_SOCKET`, then the default paths.
    func socketPath(flag: String?) -> String
    /// Connects to the daemon; a failure means the daemon cannot be reached.
    func connect(to socketPath: String) throws -> any APITransport
    /// Reads a whole regular file of at most `limit` bytes (checked before reading it).
    func readFile(_ path: String, limit: Int) throws(FileReadFailure) -> [UInt8]
    /// Creates `path` (it must not exist) with mode 0600 and writes `bytes` to it, synced.
    func writeNewFile(_ path: String, _ bytes: [UInt8]) throws(ClientError)
    /// True when secrets are typed at a terminal (then they are asked twice and not echoed).
    var secretsFromTerminal: Bool { get }
    /// Reads one secret line: from the terminal without echo after showing `prompt`, or one
    /// line of stdin. nil at the end of the input.
    func readSecret(prompt: String) throws(ClientError) -> String?
    /// From now on an interrupt (Ctrl-C) ends the program with status 0: for output that
    /// streams until the user stops it.
    func interruptEndsCleanly()
    /// The time zone for printed times.
    var timeZone: TimeZone { get }
    /// The terminal in raw mode for `swipe`'s full-screen view; nil when stdin or stdout is not
    /// a terminal (default: nil).
    func openTerminal() -> (any InteractiveTerminal)?
    /// One line of stdin for `swipe`'s line prompt; nil at its end (default: nil).
    func readInputLine() -> String?
    /// An environment variable (default: none).
    func environment(_ name: String) -> String?
    /// The campus CA at `address` (HOST:PORT) for `member request|verify` (default: a
    /// `CAClient`, over TCP from this process; `MemberCommands.swift`).
    func campusCA(at address: String) throws(ClientError) -> any CampusCA
    /// The path of the program `name` on PATH; nil when there is none (default: nil).
    func findProgram(_ name: String) -> String?
    /// Runs `argv` (`argv[0]` a path from `findProgram`) as argv, never through a shell, and
    /// waits for it: its exit status (`notify`'s notify-send or gdbus). Default: refused.
    func runProgram(_ argv: [String]) throws(ClientError) -> Int32
    // `profile show --save-photos DIR` and `--open` (PhotoCommands.swift has the defaults).
    /// Whether anything (a file, a directory, a dangling link) is at `path`.
    func fileExists(_ path: String) -> Bool
    /// Makes the directory `path` and any missing parents; fine if it is a directory already.
    func makeDirectory(_ path: String) throws(ClientError)
    /// Writes `bytes` to a new private file named `name` in a new private temporary directory; its path.
    func writeTemporaryFile(_ name: String, _ bytes: [UInt8]) throws(ClientError) -> String
}

/// The exit status of `mentormate`.
public struct ClientExitStatus: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let success = ClientExitStatus(rawValue: 0)
    /// The daemon refused or failed, or a local file or input was unusable.
    public static let failure = ClientExitStatus(rawValue: 1)
    /// The command line was wrong; nothing was sent.
    public static let usage = ClientExitStatus(rawValue: 2)
    /// The daemon could not be reached (or the connection broke).
    public static let unreachable = ClientExitStatus(rawValue: 3)
}

/// A failure the client reports: one line of what happened, a hint of what to do, a status.
public struct ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var hint: String?
    public var status: ClientExitStatus
    /// The daemon's error, when it was one.
    public var rpcError: RPCError?

    public init(_ message: String, hint: String? = nil, status: ClientExitStatus = .failure, rpcError: RPCError? = nil) {
        self.message = message
        self.hint = hint
        self.status = status
        self.rpcError = rpcError
    }

    public var description: String { message }

    /// What goes to stderr: `mentormate: ...` and, where one applies, `hint: ...`.
    public var report: String {
        var text = "mentormate: \(message)"
        if let hint { text += "\nhint: \(hint)" }
        return text
    }

    public static func usage(_ e: UsageError) -> ClientError {
        ClientError(e.message, hint: e.hint, status: .usage)
    }

    /// Any failure of a transport call: the daemon's error answer, or a connection problem.
    public static func transport(_ error: any Error, socket: String, method: String) -> ClientError {
        switch error {
        case let e as RPCError: return daemon(e, method: method)
        case RPCClientError.server(let e): return daemon(e, method: method)
        case RPCClientError.connection(let c): return connection(c, socket: socket)
        case let c as RPCConnectionError: return connection(c, socket: socket)
        default: return unreachable(socket: socket, reason: "\(error)")
        }
    }

    public static func unreachable(socket: String, reason: String) -> ClientError {
        ClientError("cannot reach mentormated at \(socket): \(reason)", hint: startHint(socket: socket), status: .unreachable)
    }

    public static func connectionLost(socket: String, reason: String) -> ClientError {
        ClientError("lost the connection to mentormated at \(socket): \(reason)",
                    hint: "the daemon may have stopped or restarted; run the command again (`mentormate status` tells whether it is back)",
                    status: .unreachable)
    }

    /// The one-line fix when no daemon answers at `socket`: the system service's command for the
    /// system socket, the user's own daemon otherwise (with where the other one would be).
    static func startHint(socket: String) -> String {
        if socket == SocketPath.systemPath {
            return "start the system daemon: `sudo systemctl start mentormated` (in a clone of MentorMate: `sudo bash scripts/run`); "
                + "a daemon of your own would be reached with --socket PATH or MENTORMATE_SOCKET"
        }
        return "start your own daemon: `mentormated` (in a clone of MentorMate: `bash scripts/run`); "
            + "to use the system service instead: --socket \(SocketPath.systemPath) (or MENTORMATE_SOCKET)"
    }

    /// `RPCClient`'s connection failures, worded for a person at the command line.
    public static func connection(_ c: RPCConnectionError, socket: String) -> ClientError {
        let why = c.errno == 0 ? "" : " (" + String(cString: strerror(c.errno)) + ")"
        switch c.code {
        case .socketMissing:
            return ClientError("mentormated is not running: there is no socket at \(socket)", hint: startHint(socket: socket), status: .unreachable)
        case .permissionDenied:
            return ClientError("permission denied on mentormated's socket \(socket)",
                               hint: "the socket or its directory is not open to your user; use your own daemon's socket "
                                   + "(--socket PATH) or ask the administrator to check the modes of the socket directory",
                               status: .unreachable)
        case .staleSocket:
            return ClientError("no mentormated is listening at \(socket) (the socket file was left by a daemon that stopped)",
                               hint: "start mentormated again (`mentormated`, or `systemctl start mentormated`); it replaces the stale socket",
                               status: .unreachable)
        case .timedOut:
            return ClientError("mentormated at \(socket) did not answer in time",
                               hint: "it may be busy or stuck: `mentormate status`, or its log (journalctl -u mentormated)",
                               status: .unreachable)
        case .closed:
            return connectionLost(socket: socket, reason: "the daemon closed it")
        case .untrustedServer:
            // RPCClient's message names the path, who serves it and (after "Fix: ") what to do.
            let parts = c.message.components(separatedBy: " Fix: ")
            return ClientError(parts[0], hint: parts.count > 1 ? parts[1] : nil, status: .unreachable)
        case .badResponse:
            return ClientError("\(socket) does not speak MentorMate's API: \(c.message)",
                               hint: "check that --socket or MENTORMATE_SOCKET names mentormated's socket", status: .unreachable)
        default:
            return ClientError("cannot talk to mentormated at \(socket)\(why)", hint: startHint(socket: socket), status: .unreachable)
        }
    }

    /// "ana (uid 1000)": who this client runs as, for the hint of a missing account.
    static var currentUser: String {
        let uid = getuid()
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }

    /// An error answer of the daemon, with the hint that fits its code.
    public static func daemon(_ e: RPCError, method: String) -> ClientError {
        let code = RPCError.Code(rawValue: e.code)
        let hint: String?
        switch code {
        case .noAccount:
            hint = "create your account first: mentormate signup --email ADDR --name NAME --role student|tutor"
                + "; an account belongs to the Unix user who signed up (you are \(currentUser)), so run mentormate as that user to use theirs"
        case .locked:
            hint = "run `mentormate login` to unlock your account"
        case .alreadyExists:
            hint = "`mentormate whoami` shows your account"
        case .wrongPassphrase:
            hint = "run the command again with the passphrase you chose at sign-up"
        case .ambiguous where method == APIMethod.gameShow.rawValue:
            hint = "give more of the name (quoted if it has spaces): mentormate game show \"ticket to ride\""
        case .notFound where method == APIMethod.gameShow.rawValue:
            hint = "`mentormate games` lists the catalogue; `mentormate games --search WORD` searches it"
        case .ambiguous:
            let matches = (e.data.map(Fields<AmbiguousIDData>.init)?[.matches]?.arrayValue ?? []).compactMap(\.stringValue)
            hint = matches.isEmpty ? "give more characters of the ID"
                : "give more characters of one of these IDs:\n" + matches.map { "  " + ClientFormat.sanitize($0) }.joined(separator: "\n")
        case .notFound:
            hint = method.hasPrefix("blob.") ? nil : "`mentormate feed` and `mentormate matches` show the IDs you can use"
        case .notAllowed:
            hint = method.hasPrefix("chat.") ? "you can chat once you both liked each other; `mentormate matches` lists your matches" : nil
        case .invalidValue where method.hasPrefix("settings."):
            hint = "`mentormate settings show` lists the settings and what each accepts"
        case .storage:
            hint = "free disk space or fix the state directory's permissions; `mentormate doctor` checks both"
        case .methodNotFound, .invalidParams, .invalidRequest, .parseError:
            hint = "this client (\(MentorMateVersion.string)) and the daemon may be different versions; `mentormate status` shows the daemon's"
        case .internalError:
            hint = "the daemon's log has the details (journalctl -u mentormated, or its stderr)"
        case .limitReached:
            hint = "a limit of mentormated's API was reached (docs/API.md, \"Limits\"); wait for, or close, your other clients and retry"
        default:
            hint = nil
        }
        return ClientError(ClientFormat.sanitize(e.message), hint: hint, status: .failure, rpcError: e)
    }
}

/// One run of a command: the global options, the host, and the connection (opened on the
/// first call, so usage errors and local file errors never need a daemon).
public final class CommandContext {
    public let host: any ClientHost
    public let json: Bool
    public let socketPath: String
    private var transport: (any APITransport)?

    public init(host: any ClientHost, json: Bool, socketPath: String) {
        self.host = host
        self.json = json
        self.socketPath = socketPath
    }

    private func connection() throws(ClientError) -> any APITransport {
        if let transport { return transport }
        do {
            let t = try host.connect(to: socketPath)
            transport = t
            return t
        } catch {
            throw ClientError.transport(error, socket: socketPath, method: "")
        }
    }

    /// Calls a method with its request; the answer is read with the result type's keys. The
    /// daemon's errors and connection failures become `ClientError`s.
    public func call<Request, Result>(_ call: APICall<Request, Result>, _ request: Request) throws(ClientError) -> Fields<Result> {
        let params: [String: JSON]
        do {
            params = try call.params(request)
        } catch {
            throw ClientError("could not write the \(call.method.rawValue) request: \(error)")
        }
        return Fields(try send(call.method.rawValue, params))
    }

    /// Calls a method that takes no parameters.
    public func call<Result>(_ call: APICall<NoParams, Result>) throws(ClientError) -> Fields<Result> {
        try self.call(call, NoParams())
    }

    private func send(_ method: String, _ params: [String: JSON]) throws(ClientError) -> JSON {
        let t = try connection()
        do {
            return try t.call(method, params)
        } catch {
            throw ClientError.transport(error, socket: socketPath, method: method)
        }
    }

    public func nextNotification() throws(ClientError) -> RPCNotification? {
        let t = try connection()
        do {
            return try t.nextNotification()
        } catch {
            throw ClientError.transport(error, socket: socketPath, method: "")
        }
    }

    /// Prints text to stdout.
    public func print(_ text: String) { host.output(text) }

    /// Prints a result for scripts: pretty JSON with sorted keys.
    public func printJSON(_ value: JSON) { host.output(ClientFormat.prettyJSON(value)) }
}
