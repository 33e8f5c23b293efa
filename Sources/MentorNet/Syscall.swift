#if canImport(Glibc)
import Glibc
#endif
import CPosix
import MentorAPI

/// The outcome of a call on a non-blocking descriptor: done, or it would have to wait.
enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

/// The one place where MentorNet calls the C library for sockets and files. Every call retries
/// `EINTR`; calls on non-blocking descriptors turn `EAGAIN`/`EWOULDBLOCK` into `.wouldBlock`;
/// every other failure throws a `NetError` carrying `errno` and what was being done.
enum Syscall {
    /// Runs `body` until it does not fail with `EINTR`; a `-1` with `EAGAIN` is `.wouldBlock`.
    @inline(__always)
    private static func nonBlocking<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, _ body: () -> T
    ) throws(NetError) -> IOResult<T> {
        while true {
            let result = body()
            if result != -1 { return .done(result) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw NetError(.system, errno: code, what())
        }
    }

    /// Runs `body` until it does not fail with `EINTR`; any other failure throws.
    @inline(__always)
    @discardableResult
    private static func blocking<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, _ body: () -> T
    ) throws(NetError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw NetError(.system, errno: code, what())
        }
    }

    // MARK: Sockets

    /// A new Unix stream socket, close-on-exec, non-blocking.
    static func unixSocket() throws(NetError) -> FileDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        return FileDescriptor(try blocking("socket(AF_UNIX)") { socket(AF_UNIX, type, 0) })
    }

    static func bind(_ fd: FileDescriptor, _ address: UnixSocketAddress) throws(NetError) {
        try blocking("bind \(address.path)") {
            address.withSockaddr { sa, len in Glibc.bind(fd.raw, sa, len) }
        }
    }

    static func listen(_ fd: FileDescriptor, backlog: Int32, path: String) throws(NetError) {
        try blocking("listen on \(path)") { Glibc.listen(fd.raw, backlog) }
    }

    /// Connects; on a non-blocking Unix socket `.wouldBlock` means the listener's backlog is full.
    static func connect(_ fd: FileDescriptor, _ address: UnixSocketAddress) throws(NetError) -> IOResult<Void> {
        switch try nonBlocking("connect to \(address.path)", {
            address.withSockaddr { sa, len in Glibc.connect(fd.raw, sa, len) }
        }) {
        case .done: return .done(())
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Accepts one connection as a non-blocking, close-on-exec descriptor.
    static func accept(_ fd: FileDescriptor) throws(NetError) -> IOResult<FileDescriptor> {
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        switch try nonBlocking("accept", { cposix_accept4(fd.raw, flags) }) {
        case .done(let raw): return .done(FileDescriptor(raw))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Reads into `buffer`; `.done(0)` is the end of the stream.
    static func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> IOResult<Int> {
        try nonBlocking("read") { Glibc.read(fd.raw, buffer.baseAddress, buffer.count) }
    }

    /// Sends without raising SIGPIPE when the peer is gone (that is an `EPIPE` error instead).
    static func send(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer) throws(NetError) -> IOResult<Int> {
        try nonBlocking("send") { Glibc.send(fd.raw, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The process at the other end of a connected Unix socket (`SO_PEERCRED`).
    static func peerCredentials(_ fd: FileDescriptor) throws(NetError) -> Caller {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        try blocking("getsockopt(SO_PEERCRED)") { cposix_peer_cred(fd.raw, &pid, &uid, &gid) }
        return Caller(pid: pid, uid: uid, gid: gid)
    }

    /// Whether `fd` is a socket in the listening state (`SO_ACCEPTCONN`).
    static func isListeningStreamSocket(_ fd: Int32) throws(NetError) -> Bool {
        var accepting: Int32 = 0
        var type: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(\(fd), SO_ACCEPTCONN)") { getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) }
        len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(\(fd), SO_TYPE)") { getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) }
        return accepting != 0 && type == Int32(SOCK_STREAM.rawValue)
    }

    /// Makes `fd` non-blocking and close-on-exec.
    static func setNonBlockingCloseOnExec(_ fd: Int32) throws(NetError) {
        let flags = try blocking("fcntl(\(fd), F_GETFL)") { fcntl(fd, F_GETFL) }
        try blocking("fcntl(\(fd), F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let fdFlags = try blocking("fcntl(\(fd), F_GETFD)") { fcntl(fd, F_GETFD) }
        try blocking("fcntl(\(fd), F_SETFD)") { fcntl(fd, F_SETFD, fdFlags | FD_CLOEXEC) }
    }

    /// Closes `fd`. Not retried on `EINTR`: on Linux the descriptor is released even then, and a
    /// retry could close a descriptor another thread just opened.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    // MARK: Files

    /// `lstat` (or `stat` when `followLinks`), or nil when nothing exists at `path`.
    static func status(_ path: String, followLinks: Bool = false) throws(NetError) -> stat? {
        var st = stat()
        func call() -> Int32 { followLinks ? stat(path, &st) : lstat(path, &st) }
        while call() != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT { return nil }
            throw NetError(.system, errno: code, "stat \(path)")
        }
        return st
    }

    static func unlink(_ path: String) throws(NetError) {
        while Glibc.unlink(path) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT { return }
            throw NetError(.system, errno: code, "remove \(path)")
        }
    }

    /// Creates a directory; false when something already exists at `path`.
    static func mkdir(_ path: String, mode: mode_t) throws(NetError) -> Bool {
        while Glibc.mkdir(path, mode) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EEXIST { return false }
            throw NetError(.system, errno: code, "create directory \(path)")
        }
        return true
    }

    /// `chmod` of a file in a directory that only this process's user can enter (a fresh mkdtemp
    /// directory), so nobody can swap what the path names. Never use it on other paths.
    static func chmodInPrivateDirectory(_ path: String, mode: mode_t) throws(NetError) {
        try blocking("chmod \(path)") { Glibc.chmod(path, mode) }
    }
}

/// Owns one file descriptor and closes it exactly once: explicitly with `close()`, or when the
/// owner lets go of it.
///
/// Not `Sendable` on purpose: each descriptor is confined to its owner (the API server keeps all
/// of its descriptors on its serial queue), so a close can never race a read on the same number.
final class FileDescriptor {
    /// The descriptor, or -1 once closed.
    private(set) var raw: Int32

    init(_ raw: Int32) { self.raw = raw }

    var isOpen: Bool { raw >= 0 }

    func close() {
        guard raw >= 0 else { return }
        Syscall.close(raw)
        raw = -1
    }

    deinit { close() }
}

// MARK: - TCP (peer transport)

/// One resolved socket address (IPv4 or IPv6), as `getaddrinfo` gave it.
struct ResolvedAddress {
    var storage = sockaddr_storage()
    var length: socklen_t = 0
    var family: Int32 { Int32(storage.ss_family) }
    /// 127.0.0.0/8 or ::1 (a source address there reaches only this machine).
    var isLoopback: Bool {
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

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

extension Syscall {
    /// The TCP addresses for `host` and `port` (`getaddrinfo`; `passive` for binding, where an
    /// empty host means every local address). Blocks while a name is looked up.
    static func resolve(host: String, port: UInt16, passive: Bool) throws(NetError) -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        var status: Int32
        repeat {
            status = host.isEmpty ? getaddrinfo(nil, String(port), &hints, &list)
                                  : getaddrinfo(host, String(port), &hints, &list)
        } while status == EAI_SYSTEM && errno == EINTR
        guard status == 0 else {
            let code = status == EAI_SYSTEM ? errno : 0
            throw NetError(.system, errno: code,
                           "resolve \(host):\(port): " + String(cString: gai_strerror(status)),
                           fix: "check the host name or address")
        }
        defer { freeaddrinfo(list) }
        var addresses: [ResolvedAddress] = []
        var entry = list
        while let info = entry {
            if let sa = info.pointee.ai_addr, Int(info.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var address = ResolvedAddress()
                withUnsafeMutableBytes(of: &address.storage) { raw in
                    raw.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(info.pointee.ai_addrlen)))
                }
                address.length = info.pointee.ai_addrlen
                addresses.append(address)
            }
            entry = info.pointee.ai_next
        }
        return addresses
    }

    /// A new TCP socket for `family`, close-on-exec, non-blocking.
    static func tcpSocket(family: Int32) throws(NetError) -> FileDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        return FileDescriptor(try blocking("socket(TCP)") { socket(family, type, 0) })
    }

    /// Sets an integer socket option.
    static func setOption(_ fd: FileDescriptor, _ level: Int32, _ name: Int32, _ value: Int32,
                          _ what: @autoclosure () -> String) throws(NetError) {
        var value = value
        try blocking("setsockopt(\(what()))") {
            setsockopt(fd.raw, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    static func bind(_ fd: FileDescriptor, _ address: ResolvedAddress, what: String) throws(NetError) {
        try blocking("bind \(what)") { address.withSockaddr { Glibc.bind(fd.raw, $0, $1) } }
    }

    /// Starts a connect on a non-blocking TCP socket: `.done` when connected at once,
    /// `.wouldBlock` while in progress (wait for writability, then read `pendingError`).
    static func connect(_ fd: FileDescriptor, _ address: ResolvedAddress, what: String) throws(NetError) -> IOResult<Void> {
        while true {
            if address.withSockaddr({ Glibc.connect(fd.raw, $0, $1) }) == 0 { return .done(()) }
            let code = errno
            // After EINTR the connect goes on in the background, like EINPROGRESS.
            if code == EINPROGRESS || code == EINTR || code == EALREADY || code == EAGAIN { return .wouldBlock }
            throw NetError(.system, errno: code, "connect to \(what)")
        }
    }

    /// The socket's pending error (`SO_ERROR`): 0 once a non-blocking connect has succeeded.
    static func pendingError(_ fd: FileDescriptor) throws(NetError) -> Int32 {
        var value: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(SO_ERROR)") { getsockopt(fd.raw, SOL_SOCKET, SO_ERROR, &value, &len) }
        return value
    }

    /// The local (`peer == false`) or remote address of a socket as numeric host and port.
    static func socketAddress(_ fd: FileDescriptor, peer: Bool) throws(NetError) -> (host: String, port: UInt16) {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try blocking(peer ? "getpeername" : "getsockname") {
            withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    peer ? getpeername(fd.raw, $0, &len) : getsockname(fd.raw, $0, &len)
                }
            }
        }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, len, &host, socklen_t(host.count), &service, socklen_t(service.count),
                            NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard status == 0 else {
            throw NetError(.system, "getnameinfo: " + String(cString: gai_strerror(status)))
        }
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return (text(host), UInt16(text(service)) ?? 0)
    }

    /// Shuts down the sending half (`SHUT_WR`): the peer reads an end of stream.
    static func shutdownWrite(_ fd: FileDescriptor) {
        _ = Glibc.shutdown(fd.raw, Int32(SHUT_WR))
    }
}
