#if canImport(Glibc)
import Glibc
#endif

/// Socket activation (`mentormated.socket`, or `systemd-socket-activate -l PATH mentormated`):
/// the API socket arrives as descriptor 3 (`LISTEN_FDS`, `LISTEN_PID`); `Mentormated` adopts it.
enum SocketActivation {
    /// The path an inherited Unix socket is bound to (for logs and `status`), or nil for an
    /// abstract or unnamed one.
    static func boundPath(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        let count = Int(length) - offset
        guard count > 0 else { return nil }
        let bytes = withUnsafeBytes(of: address.sun_path) { Array($0.prefix(count)) }
        guard bytes.first != 0 else { return nil }
        let path = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        return path.isEmpty ? nil : path
    }
}
