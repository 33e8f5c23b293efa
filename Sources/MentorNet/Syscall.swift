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

    static func chmod(_ path: String, mode: mode_t) throws(NetError) {
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
