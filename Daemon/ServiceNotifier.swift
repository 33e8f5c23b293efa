import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// The sd_notify protocol (systemd's `Type=notify`), without libsystemd: each message is one
/// datagram of `KEY=value` lines sent to the Unix socket named by `NOTIFY_SOCKET` (a path, or an
/// abstract address when it starts with `@`). Sending never blocks and never fails the daemon:
/// a lost message is logged by the caller at most.
///
/// `@unchecked Sendable`: every member is immutable after `init` (the descriptor is closed only
/// when the notifier goes); `sendto` on one datagram socket is safe from several threads.
final class ServiceNotifier: @unchecked Sendable {
    private let socket: FileDescriptor
    private var address = sockaddr_un()
    private let length: socklen_t
    let socketName: String

    /// Nil when `NOTIFY_SOCKET` is unset or unusable (not run by a service manager).
    init?(environment: [String: String]) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        var path = Array(name.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its NUL; an abstract name is counted by the address length.
        guard name.hasPrefix("/") || abstract, path.count < capacity || (abstract && path.count <= capacity) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        length = socklen_t(offset + path.count + (abstract ? 0 : 1))
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        socket = FileDescriptor(fd)
        socketName = name
    }

    /// Sends one message (`READY=1`, `STATUS=…`, `WATCHDOG=1` …, several joined by newlines).
    /// Returns the errno on failure.
    @discardableResult
    func send(_ message: String) -> Int32? {
        var bytes = Array(message.utf8)
        var address = self.address
        let sent = bytes.withUnsafeMutableBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket.raw, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == bytes.count ? nil : errno
    }

    /// The watchdog interval systemd asks for (`WATCHDOG_USEC`, for this process when
    /// `WATCHDOG_PID` names one), or nil when there is no watchdog.
    static func watchdogInterval(environment: [String: String]) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], !pid.isEmpty, Int32(pid) != getpid() { return nil }
        return .microseconds(Int64(clamping: usec))
    }
}
