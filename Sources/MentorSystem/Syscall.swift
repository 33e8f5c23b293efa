#if canImport(Glibc)
import Glibc
#endif
import CPosix

/// The outcome of a call on a non-blocking descriptor: done, or it would have to wait.
public enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

extension IOResult: Sendable where Value: Sendable {}

/// What `poll` saw on a descriptor.
public enum PollResult: Sendable, Equatable {
    /// The descriptor has one of the events asked for (or an error or hang-up).
    case ready
    /// The timeout passed.
    case timedOut
    /// A signal arrived first (its handler may have set a flag the caller reads).
    case interrupted
}

/// The one place where MentorMate calls the C library for sockets and files. Every call retries
/// `EINTR`; calls on non-blocking descriptors turn `EAGAIN`/`EWOULDBLOCK` into `.wouldBlock`;
/// every other failure throws a `SystemError` carrying `errno` and what was being done.
///
/// A call this namespace does not wrap yet goes through `blocking` or `nonBlocking`, so no
/// other module writes its own `EINTR` loop:
///
/// ```swift
/// try Syscall.blocking("fsync \(path)") { fsync(fd.raw) }
/// ```
public enum Syscall {
    /// Runs `body` until it does not fail with `EINTR`; a `-1` with `EAGAIN` is `.wouldBlock`;
    /// any other `-1` throws `SystemError(.system)` with its errno and `what`.
    @inlinable
    public static func nonBlocking<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemError) -> IOResult<T> {
        while true {
            let result = body()
            if result != -1 { return .done(result) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(.system, errno: code, what())
        }
    }

    /// Runs `body` until it does not fail with `EINTR`; any other `-1` throws
    /// `SystemError(.system)` with its errno and `what`.
    @inlinable
    @discardableResult
    public static func blocking<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, _ body: () -> T
    ) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemError(.system, errno: code, what())
        }
    }

    /// Like `blocking`, but a failure with one of `expected` is returned as that errno instead of
    /// thrown (`ENOENT` from `unlink`, `EEXIST` from `mkdir`): nil when the call succeeded.
    @inlinable
    public static func blocking<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, expecting expected: Set<Int32>, _ body: () -> T
    ) throws(SystemError) -> Int32? {
        while true {
            if body() != -1 { return nil }
            let code = errno
            if code == EINTR { continue }
            if expected.contains(code) { return code }
            throw SystemError(.system, errno: code, what())
        }
    }

    // MARK: Reading, writing, waiting

    /// Reads into `buffer`; `.done(0)` is the end of the stream.
    @inlinable
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlocking("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    @inlinable
    public static func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try read(fd.raw, into: buffer)
    }

    /// Reads into `buffer` from `offset` on; `.done(0)` is the end of the stream.
    public static func read(_ fd: Int32, into buffer: inout [UInt8], from offset: Int = 0) throws(SystemError) -> IOResult<Int> {
        try buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[offset...])) }
        }.get()
    }

    public static func read(_ fd: FileDescriptor, into buffer: inout [UInt8], from offset: Int = 0) throws(SystemError) -> IOResult<Int> {
        try read(fd.raw, into: &buffer, from: offset)
    }

    /// Reads one byte into `byte` (a variable of the caller's, so a secret read byte by byte
    /// leaves no copy on the heap): `.done(0)` at the end of the stream.
    public static func read(_ fd: Int32, into byte: inout UInt8) throws(SystemError) -> IOResult<Int> {
        try withUnsafeMutableBytes(of: &byte) { raw in
            Result { () throws(SystemError) in try read(fd, into: raw) }
        }.get()
    }

    /// Writes some of `bytes`: `.done(n)` with how many were taken.
    @inlinable
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlocking("write") { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    /// Writes all of `bytes` to a blocking descriptor (a file, a terminal). A descriptor that
    /// would block, or takes nothing, throws (`EAGAIN`, `EIO`).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, what: @autoclosure () -> String = "write") throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            switch try nonBlocking(what(), { Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset) }) {
            case .done(let count) where count > 0: offset += count
            case .done: throw SystemError(.system, errno: EIO, what())
            case .wouldBlock: throw SystemError(.system, errno: EAGAIN, what())
            }
        }
    }

    /// `writeAll` of an array.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], what: @autoclosure () -> String = "write") throws(SystemError) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try writeAll(fd, raw, what: what()) }
        }.get()
    }

    /// Sends without raising SIGPIPE when the peer is gone (that is an `EPIPE` error instead).
    @inlinable
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlocking("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    @inlinable
    public static func send(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try send(fd.raw, bytes)
    }

    /// Sends `bytes` from `offset` on.
    public static func send(_ fd: FileDescriptor, _ bytes: [UInt8], from offset: Int) throws(SystemError) -> IOResult<Int> {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try send(fd.raw, UnsafeRawBufferPointer(rebasing: raw[offset...])) }
        }.get()
    }

    /// Waits up to `timeoutMilliseconds` (-1: for ever) for `events` on `fd`. A signal ends the
    /// wait as `.interrupted` rather than being retried here: a handler that sets a flag (SIGWINCH)
    /// is how the caller learns of it, and a caller with a deadline recomputes what is left.
    public static func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(SystemError) -> PollResult {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let ready = Glibc.poll(&entry, 1, timeoutMilliseconds)
        if ready > 0 { return .ready }
        if ready == 0 { return .timedOut }
        let code = errno
        if code == EINTR { return .interrupted }
        throw SystemError(.system, errno: code, "poll \(fd)")
    }

    // MARK: Descriptors

    /// Opens `path`; the descriptor closes when its owner lets go of it.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> FileDescriptor {
        FileDescriptor(try blocking("open \(path)") { Glibc.open(path, flags, mode) })
    }

    /// Closes `fd`. Not retried on `EINTR`: on Linux the descriptor is released even then, and a
    /// retry could close a descriptor another thread just opened.
    public static func close(_ fd: Int32) throws(SystemError) {
        guard Glibc.close(fd) == 0 else { throw SystemError(.system, errno: errno, "close") }
    }

    /// Makes `fd` non-blocking and close-on-exec.
    public static func setNonBlockingCloseOnExec(_ fd: Int32) throws(SystemError) {
        let flags = try blocking("fcntl(\(fd), F_GETFL)") { fcntl(fd, F_GETFL) }
        try blocking("fcntl(\(fd), F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let fdFlags = try blocking("fcntl(\(fd), F_GETFD)") { fcntl(fd, F_GETFD) }
        try blocking("fcntl(\(fd), F_SETFD)") { fcntl(fd, F_SETFD, fdFlags | FD_CLOEXEC) }
    }

    // MARK: Files

    /// `lstat` (or `stat` when `followLinks`), or nil when nothing exists at `path`.
    public static func status(_ path: String, followLinks: Bool = false) throws(SystemError) -> stat? {
        var st = stat()
        let missing = try blocking("stat \(path)", expecting: [ENOENT]) {
            followLinks ? stat(path, &st) : lstat(path, &st)
        }
        return missing == nil ? st : nil
    }

    /// `fstat` of an open descriptor.
    public static func status(_ fd: FileDescriptor, what: @autoclosure () -> String = "fstat") throws(SystemError) -> stat {
        var st = stat()
        try blocking(what()) { fstat(fd.raw, &st) }
        return st
    }

    /// Removes the file at `path`; nothing there is not an error.
    public static func unlink(_ path: String) throws(SystemError) {
        _ = try blocking("remove \(path)", expecting: [ENOENT]) { Glibc.unlink(path) }
    }

    /// Creates a directory; false when something already exists at `path`.
    public static func mkdir(_ path: String, mode: mode_t) throws(SystemError) -> Bool {
        try blocking("create directory \(path)", expecting: [EEXIST]) { Glibc.mkdir(path, mode) } == nil
    }

    /// A hard link `to` naming what `from` names; false when something already exists at `to`.
    public static func link(_ from: String, to: String, what: @autoclosure () -> String) throws(SystemError) -> Bool {
        try blocking(what(), expecting: [EEXIST]) { Glibc.link(from, to) } == nil
    }

    /// `chmod` of a file in a directory that only this process's user can enter (a fresh mkdtemp
    /// directory), so nobody can swap what the path names. Never use it on other paths.
    public static func chmodInPrivateDirectory(_ path: String, mode: mode_t) throws(SystemError) {
        try blocking("chmod \(path)") { Glibc.chmod(path, mode) }
    }

    // MARK: Unix sockets

    /// A new Unix stream socket, close-on-exec, non-blocking unless `nonBlocking` is false.
    public static func unixSocket(nonBlocking: Bool = true) throws(SystemError) -> FileDescriptor {
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return FileDescriptor(try blocking("socket(AF_UNIX)") { socket(AF_UNIX, type, 0) })
    }

    public static func bind(_ fd: FileDescriptor, _ address: UnixSocketAddress) throws(SystemError) {
        try blocking("bind \(address.path)") {
            address.withSockaddr { sa, len in Glibc.bind(fd.raw, sa, len) }
        }
    }

    public static func listen(_ fd: FileDescriptor, backlog: Int32, path: String) throws(SystemError) {
        try blocking("listen on \(path)") { Glibc.listen(fd.raw, backlog) }
    }

    /// Connects; on a non-blocking Unix socket `.wouldBlock` means the listener's backlog is full
    /// (on a blocking one with `SO_SNDTIMEO`: the timeout passed).
    public static func connect(_ fd: FileDescriptor, _ address: UnixSocketAddress) throws(SystemError) -> IOResult<Void> {
        switch try nonBlocking("connect to \(address.path)", {
            address.withSockaddr { sa, len in Glibc.connect(fd.raw, sa, len) }
        }) {
        case .done: return .done(())
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Accepts one connection as a non-blocking, close-on-exec descriptor.
    public static func accept(_ fd: FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor> {
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        switch try nonBlocking("accept", { cposix_accept4(fd.raw, flags) }) {
        case .done(let raw): return .done(FileDescriptor(raw))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// The process at the other end of a connected Unix socket (`SO_PEERCRED`).
    public static func peerCredentials(_ fd: FileDescriptor) throws(SystemError) -> Caller {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        try blocking("getsockopt(SO_PEERCRED)") { cposix_peer_cred(fd.raw, &pid, &uid, &gid) }
        return Caller(pid: pid, uid: uid, gid: gid)
    }

    /// Whether `fd` is a socket in the listening state (`SO_ACCEPTCONN`).
    public static func isListeningStreamSocket(_ fd: Int32) throws(SystemError) -> Bool {
        var accepting: Int32 = 0
        var type: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(\(fd), SO_ACCEPTCONN)") { getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) }
        len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(\(fd), SO_TYPE)") { getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) }
        return accepting != 0 && type == Int32(SOCK_STREAM.rawValue)
    }
}

// MARK: - TCP (peer transport)

extension Syscall {
    /// The TCP addresses for `host` and `port` (`getaddrinfo`; `passive` for binding, where an
    /// empty host means every local address). Blocks while a name is looked up.
    public static func resolve(host: String, port: UInt16, passive: Bool) throws(SystemError) -> [ResolvedAddress] {
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
            throw SystemError(.system, errno: code,
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
    public static func tcpSocket(family: Int32) throws(SystemError) -> FileDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        return FileDescriptor(try blocking("socket(TCP)") { socket(family, type, 0) })
    }

    /// Sets an integer socket option.
    public static func setOption(_ fd: FileDescriptor, _ level: Int32, _ name: Int32, _ value: Int32,
                                 _ what: @autoclosure () -> String) throws(SystemError) {
        var value = value
        try blocking("setsockopt(\(what()))") {
            setsockopt(fd.raw, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    public static func bind(_ fd: FileDescriptor, _ address: ResolvedAddress, what: String) throws(SystemError) {
        try blocking("bind \(what)") { address.withSockaddr { Glibc.bind(fd.raw, $0, $1) } }
    }

    /// Starts a connect on a non-blocking TCP socket: `.done` when connected at once,
    /// `.wouldBlock` while in progress (wait for writability, then read `pendingError`).
    public static func connect(_ fd: FileDescriptor, _ address: ResolvedAddress, what: String) throws(SystemError) -> IOResult<Void> {
        while true {
            if address.withSockaddr({ Glibc.connect(fd.raw, $0, $1) }) == 0 { return .done(()) }
            let code = errno
            // After EINTR the connect goes on in the background, like EINPROGRESS.
            if code == EINPROGRESS || code == EINTR || code == EALREADY || code == EAGAIN { return .wouldBlock }
            throw SystemError(.system, errno: code, "connect to \(what)")
        }
    }

    /// The socket's pending error (`SO_ERROR`): 0 once a non-blocking connect has succeeded.
    public static func pendingError(_ fd: FileDescriptor) throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        try blocking("getsockopt(SO_ERROR)") { getsockopt(fd.raw, SOL_SOCKET, SO_ERROR, &value, &len) }
        return value
    }

    /// The local (`peer == false`) or remote address of a socket as numeric host and port.
    public static func socketAddress(_ fd: FileDescriptor, peer: Bool) throws(SystemError) -> (host: String, port: UInt16) {
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
            throw SystemError(.system, "getnameinfo: " + String(cString: gai_strerror(status)))
        }
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        // A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d: shown and compared as a.b.c.d.
        return (HostPort.canonical(text(host)), UInt16(text(service)) ?? 0)
    }

    /// Shuts down the sending half (`SHUT_WR`): the peer reads an end of stream.
    public static func shutdownWrite(_ fd: FileDescriptor) {
        _ = Glibc.shutdown(fd.raw, Int32(SHUT_WR))
    }

    /// The addresses of this machine's interfaces now (`getifaddrs`), IPv4 and IPv6, each with
    /// its interface's name and whether the interface is up and running (carrier).
    public static func interfaceAddresses() throws(SystemError) -> [InterfaceAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        try blocking("getifaddrs") { getifaddrs(&list) }
        defer { freeifaddrs(list) }
        var found: [InterfaceAddress] = []
        var entry = list
        while let item = entry {
            entry = item.pointee.ifa_next
            guard let sa = item.pointee.ifa_addr else { continue }
            let family = Int32(sa.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            let length = family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(sa, socklen_t(length), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let flags = item.pointee.ifa_flags
            found.append(InterfaceAddress(
                interface: String(cString: item.pointee.ifa_name), address: HostPort.canonical(text),
                running: flags & UInt32(IFF_UP) != 0 && flags & UInt32(IFF_RUNNING) != 0,
                loopback: flags & UInt32(IFF_LOOPBACK) != 0))
        }
        return found
    }

    /// A netlink route socket subscribed to address and link changes (see `cposix_netlink_route_open`).
    public static func netlinkRouteSocket() throws(SystemError) -> FileDescriptor {
        FileDescriptor(try blocking("socket(AF_NETLINK, NETLINK_ROUTE)") { cposix_netlink_route_open() })
    }

    /// Reads and drops what a netlink socket holds. `ENOBUFS` (notifications were lost) counts
    /// as something read: the caller re-reads the addresses either way.
    public static func drainNetlink(_ fd: FileDescriptor) throws(SystemError) -> Int {
        let result = cposix_netlink_drain(fd.raw)
        if result >= 0 { return Int(result) }
        if errno == ENOBUFS { return 1 }
        throw SystemError(.system, errno: errno, "read netlink notifications")
    }
}

/// One address of one interface, as `Syscall.interfaceAddresses` reads it.
public struct InterfaceAddress: Sendable, Hashable {
    public var interface: String
    /// Numeric, canonical (`HostPort.canonical`); a link-local IPv6 one with `%interface`.
    public var address: String
    /// The interface is up and has carrier.
    public var running: Bool
    public var loopback: Bool

    public init(interface: String, address: String, running: Bool, loopback: Bool) {
        (self.interface, self.address, self.running, self.loopback) = (interface, address, running, loopback)
    }
}
