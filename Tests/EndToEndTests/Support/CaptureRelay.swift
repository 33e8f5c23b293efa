import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A man-in-the-middle TCP relay for tests: listens on 127.0.0.1 (port chosen by the kernel),
/// and for every connection it accepts opens one to `target` and copies bytes both ways,
/// recording every byte it forwards (up to `limit` bytes in all; beyond that it still forwards
/// but stops recording and sets `truncated`). Runs on its own Threads with blocking sockets;
/// `stop()` closes everything and waits for the threads.
final class CaptureRelay: @unchecked Sendable {
    let port: Int
    private let targetPort: UInt16
    private let listenFD: Int32
    private let limit: Int
    private let lock = NSLock()
    private var stopped = false
    private var fds: Set<Int32> = []
    private var threads = 0
    private var capturedBytes: [UInt8] = []
    private var connections = 0
    private var isTruncated = false
    private let done = NSCondition()

    init(targetPort: Int, limit: Int = 64 << 20) throws {
        self.targetPort = UInt16(targetPort)
        self.limit = limit
        (listenFD, port) = try loopbackListener(backlog: 16, what: "relay")
        start { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// Everything recorded so far, both directions, in the order it was forwarded.
    var captured: [UInt8] { lock.withLock { capturedBytes } }
    var connectionCount: Int { lock.withLock { connections } }
    var truncated: Bool { lock.withLock { isTruncated } }

    /// Closes the listener and every connection and waits (up to 10 s) for the threads to end.
    func stop() {
        let open: Set<Int32> = lock.withLock {
            if stopped { return [] }
            stopped = true
            return fds
        }
        shutdown(listenFD, Int32(SHUT_RDWR))
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        let deadline = Date().addingTimeInterval(10)
        done.lock()
        while lock.withLock({ threads }) > 0 && done.wait(until: deadline) {}
        done.unlock()
        lock.withLock {
            for fd in fds { close(fd) }
            fds = []
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func start(_ body: @escaping @Sendable () -> Void) {
        lock.withLock { threads += 1 }
        let thread = Thread { [self] in
            body()
            lock.withLock { threads -= 1 }
            done.lock(); done.broadcast(); done.unlock()
        }
        thread.start()
    }

    private func acceptLoop() {
        defer { close(listenFD) }
        while true {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if lock.withLock({ stopped }) { return }
            if ready <= 0 { continue }
            let client = accept(listenFD, nil, nil)
            if client < 0 { if lock.withLock({ stopped }) { return } else { continue } }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = CaptureRelay.loopback(port: targetPort)
            let connected = upstream >= 0 && withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            guard connected else {
                close(client)
                if upstream >= 0 { close(upstream) }
                continue
            }
            let accepted: Bool = lock.withLock {
                if stopped { return false }
                fds.insert(client); fds.insert(upstream)
                connections += 1
                return true
            }
            guard accepted else { close(client); close(upstream); return }
            start { [self] in pump(from: client, to: upstream) }
            start { [self] in pump(from: upstream, to: client) }
        }
    }

    /// Copies `from` to `to` until end of file or an error, then half-closes `to`.
    private func pump(from: Int32, to: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        loop: while true {
            let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            lock.withLock {
                let room = max(0, limit - capturedBytes.count)
                if room < n { isTruncated = true }
                capturedBytes.append(contentsOf: buffer[0..<min(n, room)])
            }
            var sent = 0
            while sent < n {
                let m = buffer.withUnsafeBytes { send(to, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                if m <= 0 { break loop }
                sent += m
            }
        }
        shutdown(to, Int32(SHUT_WR))
        shutdown(from, Int32(SHUT_RD))
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs anywhere in these bytes.
    func containsBytes(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        let first = needle[0]
        var i = 0
        let last = count - needle.count
        return withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { nd in
                while i <= last {
                    if hay[i] == first && memcmp(hay.baseAddress! + i, nd.baseAddress!, nd.count) == 0 { return true }
                    i += 1
                }
                return false
            }
        }
    }
}

/// The 32 key bytes of a printed account ID (`mm1` ‖ 52 data characters ‖ 6 checksum
/// characters, PROTOCOL §2.1); the checksum is not checked.
func accountKeyBytes(_ id: String) throws -> [UInt8] {
    let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l")
    let text = Array(id.lowercased())
    guard text.count == 61, String(text[0..<3]) == "mm1" else { throw E2EError("not a full account ID: \(id)") }
    var bits = 0, accumulator = 0
    var bytes: [UInt8] = []
    for c in text[3..<55] {
        guard let v = alphabet.firstIndex(of: c) else { throw E2EError("bad character in \(id)") }
        accumulator = (accumulator << 5) | v
        bits += 5
        if bits >= 8 {
            bits -= 8
            bytes.append(UInt8((accumulator >> bits) & 0xff))
        }
    }
    guard bytes.count == 32 else { throw E2EError("\(id) decoded to \(bytes.count) bytes") }
    return bytes
}

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks (`SO_REUSEADDR`, close on
/// exec): the descriptor and the port. For the tests' stand-in servers (`CaptureRelay`,
/// `SMTPCapture`).
func loopbackListener(backlog: Int32, what: String) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw E2EError("\(what) socket: \(String(cString: strerror(errno)))") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, backlog) == 0 else {
        let why = String(cString: strerror(errno))
        close(fd)
        throw E2EError("\(what) bind/listen: \(why)")
    }
    var actual = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: actual.sin_port)))
}
