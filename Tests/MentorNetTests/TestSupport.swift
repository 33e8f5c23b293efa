#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import MentorAPI
import MentorNet
import Synchronization
import Testing
import MentorSystem

// MARK: Directories and waiting

/// A fresh directory with a short path (socket paths must fit in 107 bytes), removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let directory = "/tmp/mnet-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try await body(directory)
}

/// Runs blocking socket code on a thread of its own, so it never holds one of the few threads
/// that run tasks and Dispatch work (the server's handlers need them; Dispatch's pool on Linux
/// adds threads for blocked ones only slowly).
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Waits until `condition` holds, up to `timeout`; returns whether it did.
func eventually(_ timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

// MARK: A handler with a few test methods

/// `echo`, `add` (typed params), `sleep` (slow), `big` (a large result), `subscribe`,
/// `notifyThenAnswer`; anything else
/// is refused with -32601 by the handler itself.
final class TestHandler: APIHandler {
    struct State {
        var methods: [String] = []
        var subscribers: [ConnectionHandle] = []
        var closed: [UInt64] = []
        var sleepsStarted = 0
        var sleepsFinished = 0
    }

    let state = Mutex(State())

    var subscribers: [ConnectionHandle] { state.withLock { $0.subscribers } }
    var closed: [UInt64] { state.withLock { $0.closed } }
    var methods: [String] { state.withLock { $0.methods } }
    var sleepsStarted: Int { state.withLock { $0.sleepsStarted } }
    var sleepsFinished: Int { state.withLock { $0.sleepsFinished } }

    func handle(_ request: RPCRequest, from caller: Caller, on connection: ConnectionHandle) async -> Result<JSON, RPCError> {
        state.withLock { $0.methods.append(request.method) }
        let params = Params(request.params, method: request.method)
        do throws(RPCError) {
            switch request.method {
            case "echo":
                return .success(["params": .object(request.params), "uid": .int(Int64(caller.uid)),
                                 "pid": .int(Int64(caller.pid)), "gid": .int(Int64(caller.gid)),
                                 "conn": .int(Int64(connection.id))])
            case "add":
                try params.allow(["a", "b"])
                return .success(.int(try params.int("a") + params.int("b")))
            case "sleep":
                try params.allow(["ms"])
                let ms = try params.int("ms")
                state.withLock { $0.sleepsStarted += 1 }
                try? await Task.sleep(for: .milliseconds(ms))
                state.withLock { $0.sleepsFinished += 1 }
                return .success(["slept": .int(ms), "cancelled": .bool(Task.isCancelled)])
            case "subscribe":
                state.withLock { $0.subscribers.append(connection) }
                return .success(["events": [], "claimed": .bool(connection.claimSubscription())])
            case "big":
                try params.allow(["kib"])
                return .success(.string(String(repeating: "x", count: Int(try params.int("kib")) << 10)))
            case "notifyThenAnswer":
                connection.send(RPCNotification(method: "event.test", params: ["n": 0]))
                return .success("done")
            default:
                throw RPCError(.methodNotFound, "the test handler has no method \"\(request.method)\"")
            }
        } catch {
            return .failure(error)
        }
    }

    func connectionClosed(_ connection: ConnectionHandle) {
        state.withLock { $0.closed.append(connection.id) }
    }
}

/// Keeps log lines for assertions.
final class CaptureLogger: Logger {
    let lines = Mutex<[(LogLevel, String, [String: String])]>([])
    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        lines.withLock { $0.append((level, message, metadata)) }
    }
    var count: Int { lines.withLock { $0.count } }
    func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.1.contains(text) } } }
}

// MARK: A running server

struct TestServer: Sendable {
    let server: APIServer
    let handler: TestHandler
    let logger: CaptureLogger
    let path: String
    let directory: String
}

/// Runs a server on a socket in a fresh directory for the duration of `body`, then shuts it
/// down and waits for `run()` to return. `directoryMode` 0755 lets other users reach the socket.
func withServer(settings: APIServer.Settings = .init(), directoryMode: mode_t = UnixListener.defaultDirectoryMode,
                _ body: @Sendable (TestServer) async throws -> Void) async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/run/api.sock"
        let handler = TestHandler()
        let logger = CaptureLogger()
        let server = APIServer(listener: try UnixListener(path: path, directoryMode: directoryMode), handler: handler,
                               logger: logger, settings: settings)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            do {
                try await body(TestServer(server: server, handler: handler, logger: logger, path: path, directory: directory))
            } catch {
                server.shutdown()
                throw error
            }
            server.shutdown()
            try await group.waitForAll()
        }
    }
}

// MARK: A raw client for bytes the real client would never send

enum ReadResult: Equatable {
    case line([UInt8])
    case closed
    case timedOut

    var json: JSON? {
        if case .line(let bytes) = self { return JSON.parse(bytes) }
        return nil
    }
}

struct TestSocketError: Error, CustomStringConvertible {
    let what: String
    let code: Int32
    var description: String { "\(what): \(String(cString: strerror(code)))" }
}

/// A blocking client socket with timeouts. `@unchecked Sendable` so a test can move it between
/// `offPool` blocks; one test uses it from one thread at a time.
final class RawClient: @unchecked Sendable {
    private(set) var fd: Int32
    private var framer = LineFramer(maxLine: 64 << 20)
    private var lines: [[UInt8]] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSocketError(what: "socket", code: errno) }
        guard let address = UnixSocketAddress(path: path) else { throw TestSocketError(what: "path \(path)", code: ENAMETOOLONG) }
        let result = address.withSockaddr { connect(fd, $0, $1) }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestSocketError(what: "connect \(path)", code: code)
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends everything; false when the server has closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func request(_ id: Int64, _ method: String, _ params: [String: JSON] = [:]) -> Bool {
        send(RPCRequest(id: .int(id), method: method, params: params).line)
    }

    func readLine(timeout: Duration = .seconds(5)) -> ReadResult {
        let deadline = ContinuousClock.now + timeout
        while lines.isEmpty {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .timedOut }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&p, 1, ms)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .timedOut }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return .closed }  // end of stream, or ECONNRESET after the server closed
            guard let new = try? framer.append(chunk[..<n]) else { return .closed }
            lines.append(contentsOf: new)
        }
        return .line(lines.removeFirst())
    }

    func readJSON(timeout: Duration = .seconds(5)) -> JSON? { readLine(timeout: timeout).json }

    /// Whether the server closes the connection within `timeout` (lines before that are skipped).
    func waitClosed(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            switch readLine(timeout: left) {
            case .closed: return true
            case .timedOut: return false
            case .line: continue
            }
        }
    }

    /// Bytes readable right now without waiting.
    var hasPendingInput: Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return !lines.isEmpty || poll(&p, 1, 0) > 0
    }
}

extension JSON {
    /// `error.code` of a response.
    var errorCode: Int64? { self["error"]?["code"]?.intValue }
    var errorMessage: String? { self["error"]?["message"]?.stringValue }
}
