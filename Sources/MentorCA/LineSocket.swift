#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorSystem

/// Why a `LineSocket` step failed.
enum LineSocketFailure: Error {
    /// The deadline passed.
    case timedOut
    /// The other side closed (or reset) the connection.
    case closed
    /// A line grew past the limit before its "\n".
    case lineTooLong(limit: Int)
    /// A system call failed (refused, unreachable, ...).
    case system(SystemError)

    /// Why, in words, for messages that already say what was being done.
    var reason: String {
        switch self {
        case .timedOut: "no answer in time"
        case .closed: "the connection was closed"
        case .lineTooLong(let limit): "a line longer than \(limit) bytes"
        case .system(let error): error.errnoDescription.isEmpty ? error.description : error.errnoDescription
        }
    }
}

/// One TCP connection spoken line by line, every step bounded by a deadline: the CA's server
/// side, `CAClient` and `SMTPClient` all use it, so the waiting, framing and limits are
/// written once. Non-blocking socket, `poll` for readiness; not thread-safe (one owner).
final class LineSocket {
    let fd: FileDescriptor
    /// "host:port" of the other side, for messages and logs.
    let peer: String
    private var framer: LineFramer
    private var lines: [[UInt8]] = []

    init(fd: FileDescriptor, peer: String, maxLine: Int) {
        self.fd = fd
        self.peer = peer
        self.framer = LineFramer(maxLine: maxLine)
    }

    func close() { try? fd.close() }

    /// Connects to `host:port`, trying each address `getaddrinfo` gives until one answers.
    static func connect(host: String, port: UInt16, deadline: ContinuousClock.Instant,
                        maxLine: Int) throws(LineSocketFailure) -> LineSocket {
        let addresses: [ResolvedAddress]
        do { addresses = try Syscall.resolve(host: host, port: port, passive: false) } catch { throw .system(error) }
        let name = HostPort.format(host: host, port: port)
        var last = LineSocketFailure.system(SystemError(.system, errno: EHOSTUNREACH, "connect to \(name)"))
        for address in addresses {
            do throws(LineSocketFailure) {
                let fd: FileDescriptor
                do { fd = try Syscall.tcpSocket(family: address.family) } catch { throw .system(error) }
                let started: IOResult<Void>
                do { started = try Syscall.connect(fd, address, what: name) } catch { throw .system(error) }
                if case .wouldBlock = started {
                    try wait(fd, events: Int16(POLLOUT), deadline: deadline)
                    let code: Int32
                    do { code = try Syscall.pendingError(fd) } catch { throw .system(error) }
                    if code != 0 { throw .system(SystemError(.system, errno: code, "connect to \(name)")) }
                }
                return LineSocket(fd: fd, peer: name, maxLine: maxLine)
            } catch {
                if case .timedOut = error { throw error }
                last = error
            }
        }
        throw last
    }

    /// Sends every byte, waiting for room until `deadline`.
    func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(LineSocketFailure) {
        var offset = 0
        while offset < bytes.count {
            let sent: IOResult<Int>
            do { sent = try Syscall.send(fd, bytes, from: offset) } catch {
                if error.errno == EPIPE || error.errno == ECONNRESET { throw .closed }
                throw .system(error)
            }
            switch sent {
            case .done(let count): offset += count
            case .wouldBlock: try Self.wait(fd, events: Int16(POLLOUT), deadline: deadline)
            }
        }
    }

    /// The next line (without "\n" or "\r\n"), waiting until `deadline`.
    func readLine(deadline: ContinuousClock.Instant) throws(LineSocketFailure) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while lines.isEmpty {
            let read: IOResult<Int>
            do { read = try Syscall.read(fd, into: &chunk) } catch {
                if error.errno == ECONNRESET { throw .closed }
                throw .system(error)
            }
            switch read {
            case .done(0): throw .closed
            case .done(let count):
                do { lines = try framer.append(chunk[..<count]) } catch {
                    switch error { case .lineTooLong(let limit): throw .lineTooLong(limit: limit) }
                }
            case .wouldBlock:
                try Self.wait(fd, events: Int16(POLLIN), deadline: deadline)
            }
        }
        return lines.removeFirst()
    }

    /// Waits for `events` on `fd` until `deadline` (a signal only recomputes what is left).
    static func wait(_ fd: FileDescriptor, events: Int16, deadline: ContinuousClock.Instant) throws(LineSocketFailure) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw .timedOut }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            do {
                if try Syscall.poll(fd.raw, events: events, timeoutMilliseconds: milliseconds) == .ready { return }
            } catch {
                throw .system(error)
            }
        }
    }
}
