import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Holds `flock` on STATE_DIR/lock for the daemon's lifetime, so two daemons never share a
/// state directory. The lock dies with the process (even with kill -9), so a crash never
/// leaves a stale lock behind.
final class StateLock {
    private let fd: Int32

    init(stateDirectory: String) throws(DaemonError) {
        let path = stateDirectory + "/lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw DaemonError("cannot open \(path): \(String(cString: strerror(errno)))",
                              hint: "check that the state directory belongs to the user running mentormated")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readPID(fd)
            close(fd)
            throw DaemonError("another mentormated\(holder.map { " (pid \($0))" } ?? "") is already using the state directory \(stateDirectory)",
                              hint: "stop it first, or give this one its own --state-dir")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit { close(fd) }

    private static func readPID(_ fd: Int32) -> Int? {
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
        guard n > 0 else { return nil }
        return Int(String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// The TCP listener for peers. Bound at start so the port is reserved and shown by `status`;
/// the peer protocol that accepts on it arrives with issue 4.
final class PeerListener {
    let fd: Int32
    let host: String
    let port: UInt16

    init(address: String) throws(DaemonError) {
        guard let colon = address.lastIndex(of: ":"), let wanted = UInt16(address[address.index(after: colon)...]) else {
            throw DaemonError("--listen \(address) is not HOST:PORT")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(wanted), &hints, &result)
        guard rc == 0, let info = result else {
            throw DaemonError("cannot resolve the listen address \(address): \(String(cString: gai_strerror(rc)))",
                              hint: "use an IP address, e.g. --listen 0.0.0.0:4711")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DaemonError("socket(): \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, 128) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw DaemonError("cannot listen on \(address): \(why)",
                              hint: "pick another port with --listen HOST:PORT (port 0 picks a free one)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = storage.ss_family
        let bound: UInt16 = withUnsafePointer(to: &storage) { p in
            if family == sa_family_t(AF_INET6) {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        self.fd = fd
        self.host = host
        self.port = bound
    }

    deinit { close(fd) }
}
