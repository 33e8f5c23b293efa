#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// A blocking JSON-RPC client for the daemon's Unix socket (docs/API.md), for `mentormate`.
///
/// ```swift
/// let client = try RPCClient(path: SocketPath.clientDefault(flag: socket, environment: env),
///                            timeout: .seconds(30))
/// let me = try client.call("account.whoami")
/// _ = try client.call("subscribe", ["events": ["message"]])
/// while let event = try client.nextNotification() { ... }   // --follow
/// ```
///
/// Not thread-safe: one thread uses one client (the CLI does).
public final class RPCClient {
    public let path: String
    /// How long `call` waits for its response (and `connect`/`send` for the socket); nil waits
    /// for ever.
    public var timeout: Duration?
    private let socket: FileDescriptor
    private var framer = LineFramer(maxLine: RPCClient.maxResponseLine)
    private var lines: [[UInt8]] = []
    private var notifications: [RPCNotification] = []
    private var nextID: Int64 = 1

    /// Responses can be larger than requests (a 512 KiB `blob.get` chunk in base64).
    public static let maxResponseLine = 16 << 20
    /// Notifications kept while waiting for a response; older ones are dropped beyond this.
    public static let maxBufferedNotifications = 10_000

    /// Connects to the daemon's socket at `path`, then checks with `SO_PEERCRED`, before a
    /// single byte is sent, that the process serving it runs as one of `trusted` (by default
    /// `SocketPath.trustedServers(for:)`: yourself for your own sockets, root or the
    /// `mentormate` user for the system one). So a socket another local user planted never sees
    /// a request, let alone a passphrase.
    ///
    /// - Throws: `RPCClientError.connection` with `.socketMissing` (no daemon has made the
    ///   socket), `.permissionDenied`, `.staleSocket` (the file exists, nobody listens),
    ///   `.untrustedServer` (someone else serves it; nothing was sent), or
    ///   `.connectFailed`/`.timedOut`.
    public init(path: String, timeout: Duration? = nil, trusted: SocketPath.TrustedServers? = nil) throws(RPCClientError) {
        self.path = path
        self.timeout = timeout
        guard let address = UnixSocketAddress(path: path) else {
            throw .connection(RPCConnectionError(
                .connectFailed, "socket path \(path) is empty or longer than \(UnixSocketAddress.maxPathBytes) bytes; use a shorter --socket"))
        }
        do throws(SystemError) {
            socket = try Syscall.unixSocket(nonBlocking: false)
        } catch {
            throw .connection(RPCConnectionError(.connectFailed, "cannot create a socket", errno: error.errno))
        }
        if let timeout { Self.setSendTimeout(socket, timeout) }  // also bounds connect() on a Unix socket
        let connected: IOResult<Void>
        do throws(SystemError) {
            connected = try Syscall.connect(socket, address)
        } catch {
            try? socket.close()
            throw .connection(Self.connectError(path: path, errno: error.errno))
        }
        // `.wouldBlock`: the send timeout passed while the listener's backlog was full.
        guard case .done = connected else {
            try? socket.close()
            throw .connection(Self.connectError(path: path, errno: EAGAIN))
        }
        let allowed = trusted ?? SocketPath.trustedServers(for: path, environment: Self.pathEnvironment())
        if let refusal = Self.checkServer(socket, path: path, trusted: allowed) {
            try? socket.close()
            throw .connection(refusal)
        }
    }

    /// The environment variables `SocketPath` decides by.
    static func pathEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        for name in ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "HOME"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        return environment
    }

    /// Nil when the process that listens on `fd`'s peer runs as one of `trusted`; otherwise the
    /// error, naming the path, the uid found and the fix.
    static func checkServer(_ fd: FileDescriptor, path: String, trusted: SocketPath.TrustedServers) -> RPCConnectionError? {
        let uid: uid_t
        do throws(SystemError) {
            uid = try Syscall.peerCredentials(fd).uid
        } catch {
            return RPCConnectionError(.untrustedServer,
                "cannot tell who serves \(path) (SO_PEERCRED failed), so nothing was sent to it; use a mentormated socket (--socket PATH)",
                errno: error.errno)
        }
        guard !trusted.uids.contains(uid) else { return nil }
        let owner = SocketPath.userName(uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
        return RPCConnectionError(.untrustedServer,
            "refusing \(path): it is served by \(owner), not by \(trusted.phrase), so another user may have planted it to catch what you send; nothing was sent. "
                + "Fix: if it is not your daemon's, remove it (`rm \(path)`; ask the administrator if you may not) and start your own (`mentormated`), "
                + "or give your daemon's socket with --socket PATH")
    }

    deinit { close() }

    /// Closes the connection. Later calls fail with `.closed`.
    public func close() {
        try? socket.close()
    }

    /// Calls `method` and returns its result. Notifications that arrive meanwhile are kept for
    /// `nextNotification()`.
    ///
    /// - Throws: `.server(RPCError)` when the daemon answers with an error (also for an error
    ///   without id, e.g. too many connections), `.connection` when the socket fails, the daemon
    ///   closes it, or `timeout` passes (the late response is then skipped).
    public func call(_ method: String, _ params: [String: JSON] = [:]) throws(RPCClientError) -> JSON {
        let id = JSON.int(nextID)
        nextID += 1
        do {
            try send(RPCRequest(id: id, method: method, params: params).line)
        } catch {
            // A daemon that refuses a connection (too many clients) says why before closing.
            if case .connection(let failure) = error, failure.code == .closed, let reason = partingError() {
                throw .server(reason)
            }
            throw error
        }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard let line = try readLine(until: deadline) else {
                throw .connection(RPCConnectionError(
                    .timedOut, "mentormated did not answer \(method) within \(timeout.map { "\($0)" } ?? "the timeout"); it may be busy or stuck (`mentormate status`, or its log)"))
            }
            guard let json = JSON.parse(line) else {
                throw .connection(RPCConnectionError(.badResponse, "mentormated sent a line that is not JSON; is \(path) a MentorMate socket?"))
            }
            if let response = RPCResponse(json) {
                if response.id == id {
                    switch response.outcome {
                    case .success(let result): return result
                    case .failure(let error): throw .server(error)
                    }
                }
                if response.id == .null, case .failure(let error) = response.outcome { throw .server(error) }
                continue  // the late answer to a call that timed out
            }
            if let notification = RPCNotification(json) { keep(notification) }
        }
    }

    /// The next notification, waiting up to `timeout` (nil: for ever). Returns nil when the
    /// timeout passes; throws `.connection(.closed)` when the daemon closes the connection.
    public func nextNotification(timeout: Duration? = nil) throws(RPCClientError) -> RPCNotification? {
        if !notifications.isEmpty { return notifications.removeFirst() }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard let line = try readLine(until: deadline) else { return nil }
            if let json = JSON.parse(line), let notification = RPCNotification(json) { return notification }
        }
    }

    // MARK: Socket I/O

    /// An error line without id left by the daemon before it closed the connection, if any.
    private func partingError() -> RPCError? {
        while let line = try? readLine(until: ContinuousClock.now + .milliseconds(100)) {
            if let json = JSON.parse(line), let response = RPCResponse(json), response.id == .null,
               case .failure(let error) = response.outcome {
                return error
            }
        }
        return nil
    }

    private func keep(_ notification: RPCNotification) {
        if notifications.count >= Self.maxBufferedNotifications { notifications.removeFirst() }
        notifications.append(notification)
    }

    private func send(_ bytes: [UInt8]) throws(RPCClientError) {
        guard socket.isOpen else { throw .connection(Self.closedError()) }
        var offset = 0
        while offset < bytes.count {
            let sent: IOResult<Int>
            do throws(SystemError) {
                sent = try Syscall.send(socket, bytes, from: offset)
            } catch {
                switch error.errno {
                case EPIPE, ECONNRESET: throw .connection(Self.closedError())
                case let code: throw .connection(RPCConnectionError(.io, "writing to \(path) failed", errno: code))
                }
            }
            switch sent {
            case .done(let count): offset += count
            case .wouldBlock:  // the send timeout passed
                throw .connection(RPCConnectionError(.timedOut, "mentormated is not reading its socket (\(path)); it may be stuck"))
            }
        }
    }

    /// The next line, or nil when `deadline` passes first.
    private func readLine(until deadline: ContinuousClock.Instant?) throws(RPCClientError) -> [UInt8]? {
        while lines.isEmpty {
            guard socket.isOpen else { throw .connection(Self.closedError()) }
            if let deadline {
                guard try waitReadable(until: deadline) else { return nil }
            }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let read: IOResult<Int>
            do throws(SystemError) {
                read = try Syscall.read(socket, into: &chunk)
            } catch {
                if error.errno == ECONNRESET { throw .connection(Self.closedError()) }
                throw .connection(RPCConnectionError(.io, "reading from \(path) failed", errno: error.errno))
            }
            guard case .done(let n) = read else {
                throw .connection(RPCConnectionError(.io, "reading from \(path) failed", errno: EAGAIN))
            }
            if n == 0 { throw .connection(Self.closedError()) }
            do throws(LineFramer.Failure) {
                lines = try framer.append(chunk[..<n])
            } catch {
                throw .connection(RPCConnectionError(.badResponse, "mentormated sent a line longer than \(Self.maxResponseLine >> 20) MiB"))
            }
        }
        return lines.removeFirst()
    }

    private func waitReadable(until deadline: ContinuousClock.Instant) throws(RPCClientError) -> Bool {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            do throws(SystemError) {
                // Timed out or interrupted: the loop looks at the time left again.
                if try Syscall.poll(socket.raw, events: Int16(POLLIN), timeoutMilliseconds: milliseconds) == .ready { return true }
            } catch {
                throw .connection(RPCConnectionError(.io, "waiting for \(path) failed", errno: error.errno))
            }
        }
    }

    private static func setSendTimeout(_ fd: FileDescriptor, _ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        if tv.tv_sec == 0 && tv.tv_usec == 0 { tv.tv_usec = 1 }  // zero would mean "no timeout"
        _ = setsockopt(fd.raw, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func closedError() -> RPCConnectionError {
        RPCConnectionError(.closed, "mentormated closed the connection (it stopped or restarted); run the command again")
    }

    private static func connectError(path: String, errno code: Int32) -> RPCConnectionError {
        switch code {
        case ENOENT, ENOTDIR:
            return RPCConnectionError(.socketMissing,
                "no mentormated socket at \(path): is mentormated running? start it with `mentormated` or `systemctl start mentormated` (or point --socket / MENTORMATE_SOCKET at its socket)",
                errno: code)
        case EACCES, EPERM:
            return RPCConnectionError(.permissionDenied,
                "permission denied connecting to \(path): your user may not open it or its directory; use your own daemon's socket (--socket) or ask the administrator to check the socket directory's mode",
                errno: code)
        case ECONNREFUSED:
            return RPCConnectionError(.staleSocket,
                "\(path) exists but no mentormated is listening on it (a stale socket from a daemon that stopped); start mentormated, which replaces it",
                errno: code)
        case EAGAIN, EWOULDBLOCK, ETIMEDOUT:
            return RPCConnectionError(.timedOut,
                "mentormated at \(path) is not accepting connections (too busy or stuck); try again, or check its log",
                errno: code)
        default:
            return RPCConnectionError(.connectFailed, "cannot connect to \(path)", errno: code)
        }
    }
}

/// Why an `RPCClient` call failed: the daemon said no, or the connection did not work.
public enum RPCClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The daemon answered with a JSON-RPC error (its message says what to do).
    case server(RPCError)
    /// The socket could not be reached or broke.
    case connection(RPCConnectionError)

    public var description: String {
        switch self {
        case .server(let error): error.message
        case .connection(let error): error.description
        }
    }
}

/// A failure to reach or talk to the daemon; `message` names the socket and what to do.
public struct RPCConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Code
    public let message: String
    /// The `errno` behind it, or 0.
    public let errno: Int32

    public init(_ code: Code, _ message: String, errno: Int32 = 0) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        errno == 0 ? message : message + " (" + String(cString: strerror(errno)) + ")"
    }

    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Nothing at the socket path: the daemon is not running (or uses another path).
        public static let socketMissing = Code(rawValue: 1)
        /// The socket or its directory may not be opened by this user.
        public static let permissionDenied = Code(rawValue: 2)
        /// The socket file exists but nobody listens: a daemon died without removing it.
        public static let staleSocket = Code(rawValue: 3)
        /// Connecting failed for another reason.
        public static let connectFailed = Code(rawValue: 4)
        /// The timeout passed.
        public static let timedOut = Code(rawValue: 5)
        /// The daemon closed the connection.
        public static let closed = Code(rawValue: 6)
        /// Reading or writing the socket failed.
        public static let io = Code(rawValue: 7)
        /// The daemon sent something that is not a JSON-RPC line.
        public static let badResponse = Code(rawValue: 8)
        /// The socket is served by a user the client does not trust with its requests
        /// (`SO_PEERCRED`); nothing was sent.
        public static let untrustedServer = Code(rawValue: 9)
    }
}
