import Foundation
import MentorAPI
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// A plain Unix stream connection to the API socket from the test process (so as root), for
/// what the client never sends: garbage, endless lines, half requests, never reading.
final class RawConnection {
    private let socket: RawSocket
    private var fd: Int32 { socket.fd }
    private var framer = LineFramer(maxLine: 64 << 20)
    private var lines: [[UInt8]] = []
    private var nextID: Int64 = 1
    /// The daemon closed the connection (end of file or ECONNRESET).
    private(set) var closedByPeer = false

    init(_ path: String) throws {
        guard let address = UnixSocketAddress(path: path) else { throw E2EError("bad socket path \(path)") }
        socket = try RawSocket(domain: AF_UNIX, describing: path) { fd in address.withSockaddr { connect(fd, $0, $1) } }
    }

    func close() { socket.close() }

    /// Half-closes: the daemon sees the end of the requests.
    func shutdownWrite() { socket.shutdownWrite() }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Int32 { socket.send(bytes) }

    func send(_ text: String) -> Int32 { send(Array(text.utf8)) }

    /// The next line, or nil when `timeout` passes first or the daemon closed the connection.
    func readLine(timeout: Duration) -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while lines.isEmpty {
            guard fd >= 0, !closedByPeer else { return nil }
            let left = deadline - .now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds(left) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                closedByPeer = true
                return nil
            }
            lines += (try? framer.append(chunk[..<n])) ?? []
        }
        return lines.removeFirst()
    }

    /// The next line as JSON.
    func readJSON(timeout: Duration = .seconds(10)) -> JSON? {
        readLine(timeout: timeout).flatMap(JSON.parse)
    }

    /// Sends one request and returns the response with its id (skipping notifications).
    func call(_ method: String, _ params: JSON = [:], timeout: Duration = .seconds(10)) -> JSON? {
        let id = nextID
        nextID += 1
        let request: JSON = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        guard send(request.description + "\n") == 0 else { return nil }
        let deadline = ContinuousClock.now + timeout
        while let line = readJSON(timeout: deadline - .now) {
            if line["id"] == .int(id) { return line }
        }
        return nil
    }

    /// Waits until the daemon closes the connection, dropping what it sends; true if it did.
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !closedByPeer && ContinuousClock.now < deadline {
            _ = readLine(timeout: deadline - .now)
        }
        return closedByPeer
    }
}

extension JSON {
    /// The code of a JSON-RPC error response, if it is one.
    var errorCode: Int64? { self["error"]?["code"]?.intValue }
}

/// Asks `status` on its own connection, again and again on a thread of its own, while a test
/// does other things; records how slow the slowest answer was and every wrong one.
final class StatusProber: @unchecked Sendable {
    // Everything below is read and written under `lock`.
    private let lock = NSLock()
    private var running = true
    private var answers = 0
    private var failures: [String] = []
    private var slowest: Duration = .zero
    /// Answers slower than `slowAnswer`: when they started (since the prober started) and how long they took.
    private var slow: [(at: Duration, took: Duration)] = []
    private let slowAnswer: Duration = .milliseconds(250)
    private let started = ContinuousClock.now
    private let finished = DispatchSemaphore(value: 0)

    struct Report: CustomStringConvertible {
        let answers: Int
        let failures: [String]
        let slowest: Duration
        let slow: [(at: Duration, took: Duration)]
        var description: String {
            "\(answers) answers, slowest \(slowest)"
                + (slow.isEmpty ? "" : " (slow ones, by start time: " + slow.map { "at \($0.at): \($0.took)" }.joined(separator: ", ") + ")")
                + ", failures: \(failures.isEmpty ? "none" : failures.joined(separator: "; "))"
        }
    }

    init(socket: String, node: String) {
        Thread.detachNewThread { [self] in
            var client: RPCClient?
            while lock.withLock({ running }) {
                let started = ContinuousClock.now
                do {
                    if client == nil { client = try RPCClient(path: socket, timeout: .seconds(15)) }
                    let status = try client!.call("status")
                    let took = ContinuousClock.now - started
                    lock.withLock {
                        answers += 1
                        slowest = max(slowest, took)
                        if took > slowAnswer { slow.append((started - self.started, took)) }
                        if status["node"]?.stringValue != node { failures.append("status answered \(status)") }
                    }
                } catch {
                    client = nil
                    lock.withLock { failures.append("status failed after \(ContinuousClock.now - started): \(error)") }
                }
                usleep(20_000)
            }
            finished.signal()
        }
    }

    func stop() -> Report {
        lock.withLock { running = false }
        finished.wait()
        return lock.withLock { Report(answers: answers, failures: failures, slowest: slowest, slow: slow) }
    }
}
