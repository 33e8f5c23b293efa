#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket address (`sockaddr_un`) for a path. Shared by the client (`RPCClient`) and the
/// daemon's listener (MentorNet), so the path rules live in one place.
public struct UnixSocketAddress: Sendable {
    /// `sun_path` holds 108 bytes including the terminating NUL.
    public static let maxPathBytes = 107

    public let path: String
    private let pathBytes: [UInt8]

    /// Nil when `path` is empty, contains a NUL byte, or is longer than `maxPathBytes`.
    public init?(path: String) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxPathBytes, !bytes.contains(0) else { return nil }
        self.path = path
        self.pathBytes = bytes
    }

    /// Calls `body` with the address and its length, for `bind` and `connect`.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}

/// One resolved socket address (IPv4 or IPv6), as `getaddrinfo` gave it.
public struct ResolvedAddress: Sendable {
    public var storage = sockaddr_storage()
    public var length: socklen_t = 0
    public init() {}
    public var family: Int32 { Int32(storage.ss_family) }
    /// 127.0.0.0/8 or ::1 (a source address there reaches only this machine).
    public var isLoopback: Bool {
        withUnsafePointer(to: storage) { pointer in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127 }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    withUnsafeBytes(of: a.pointee.sin6_addr) { b in b.prefix(15).allSatisfy { $0 == 0 } && b[15] == 1 }
                }
            default:
                return false
            }
        }
    }

    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
