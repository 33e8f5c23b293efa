import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plays systemd's side of sd_notify for a test: a datagram socket (a path, or an abstract
/// name when `abstract`) whose address goes into the daemon's `NOTIFY_SOCKET`; each datagram
/// is one message of `KEY=value` lines, kept with the time it arrived.
final class NotifyListener {
    struct Message: CustomStringConvertible {
        let text: String
        let at: ContinuousClock.Instant
        var lines: [String] { text.split(separator: "\n").map(String.init) }
        func has(_ line: String) -> Bool { lines.contains(line) }
        var description: String { text.replacingOccurrences(of: "\n", with: "\\n") }
    }

    /// The value for `NOTIFY_SOCKET`.
    let address: String
    private let fd: Int32
    private(set) var received: [Message] = []

    init(path: String, abstract: Bool = false) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw E2EError("socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if abstract { bytes.insert(0, at: 0) }
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { throw E2EError("notify socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw E2EError("bind \(path): \(String(cString: strerror(e)))")
        }
        self.fd = fd
        address = abstract ? "@" + path : path
    }

    deinit { close(fd) }

    /// Waits up to `timeout` for the next datagram.
    func next(timeout: Duration) -> Message? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            let ready = poll(&pfd, 1, max(0, milliseconds(left)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n >= 0 else { if errno == EINTR { continue } else { return nil } }
            let message = Message(text: String(decoding: buffer[..<n], as: UTF8.self), at: .now)
            received.append(message)
            return message
        }
    }

    /// Reads messages until one satisfies `match` (returned) or `timeout` passes (nil).
    func wait(timeout: Duration, for match: (Message) -> Bool) -> Message? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let m = next(timeout: deadline - ContinuousClock.now), match(m) { return m }
        }
        return nil
    }

    /// Every message that arrives within `duration`.
    func collect(for duration: Duration) -> [Message] {
        let deadline = ContinuousClock.now + duration
        var got: [Message] = []
        while ContinuousClock.now < deadline {
            if let m = next(timeout: deadline - ContinuousClock.now) { got.append(m) }
        }
        return got
    }
}
