import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP connection to a daemon's peer port from the test process, for what no honest peer
/// sends: random msg1s, garbage, nothing at all, truncated handshakes. It speaks no crypto.
final class HostileTCP {
    private let socket: RawSocket
    private var fd: Int32 { socket.fd }
    /// Our side's address and port (the daemon logs `peer.address=FROM:PORT`).
    let from: String
    let localPort: Int

    /// Connects to 127.0.0.1:`port` from the loopback address `from` (any of 127.0.0.0/8), so
    /// that the daemon's refusal of one hostile address does not touch the honest peer's.
    init(port: Int, from: String = "127.0.0.1") throws {
        self.from = from
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var source = sockaddr_in()
        source.sin_family = sa_family_t(AF_INET)
        source.sin_addr.s_addr = inet_addr(from)
        socket = try RawSocket(domain: AF_INET, describing: "127.0.0.1:\(port) from \(from)") { fd in
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { return bound }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        let fd = socket.fd
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        localPort = Int(UInt16(bigEndian: local.sin_port))
    }

    func close() { socket.close() }

    func shutdownWrite() { socket.shutdownWrite() }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Int32 { socket.send(bytes) }

    /// Reads until the daemon closes (end of file or reset) or `timeout` passes, and returns
    /// everything it sent and whether it closed.
    func drain(timeout: Duration) -> (received: [UInt8], closed: Bool) {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while fd >= 0 {
            let left = deadline - .now
            guard left > .zero else { return (received, false) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds(left) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return (received, true) }
            received += chunk[..<n]
        }
        return (received, true)
    }

    static func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }
}

/// A listening TCP socket on 127.0.0.1 in the test process, to catch what a daemon dials.
final class CaptureListener {
    private var fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw E2EError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { Glibc.close(fd); throw E2EError("listen: \(String(cString: strerror(errno)))") }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Accepts one connection and reads exactly `count` bytes from it, then writes `reply` (if
    /// any) and closes it; nil on timeout.
    func capture(_ count: Int, timeout: Duration, reply: [UInt8] = []) -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds(deadline - .now) + 1) > 0 else { return nil }
        let connection = accept(fd, nil, nil)
        guard connection >= 0 else { return nil }
        defer { Glibc.close(connection) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: count)
        while bytes.count < count {
            let left = deadline - .now
            guard left > .zero else { return nil }
            var p = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, milliseconds(left) + 1) > 0 else { continue }
            let n = read(connection, &chunk, count - bytes.count)
            if n <= 0 { return nil }
            bytes += chunk[..<n]
        }
        if !reply.isEmpty { _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        return bytes
    }
}
