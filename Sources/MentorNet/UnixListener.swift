#if canImport(Glibc)
import Glibc
#endif
import MentorAPI

/// A listening Unix stream socket (non-blocking, close-on-exec) for the API.
///
/// `init(path:)` makes the socket file: it creates the parent directory when it is missing,
/// refuses a path where another server is live or where something that is not a socket exists,
/// replaces a stale socket (one nobody listens on any more), and leaves the socket mode 0666 —
/// who may do what is decided per connection from `SO_PEERCRED`, not by the file's mode.
/// `close()` removes the file again, unless someone else has replaced it meanwhile.
///
/// `init(adopting:)` takes an already-listening descriptor (systemd socket activation); the
/// socket file then belongs to whoever made it and is never removed.
///
/// Not `Sendable`: hand it to `APIServer`, which keeps it on its queue.
public final class UnixListener {
    /// The socket's path (nil for an adopted descriptor given without one).
    public let path: String?
    let descriptor: FileDescriptor
    /// The socket file this listener created (device and inode), removed by `close()`.
    private var created: (device: UInt, inode: UInt)?

    /// Mode of directories created for the socket: only the owner may enter.
    public static let defaultDirectoryMode: mode_t = 0o700

    /// Binds and listens on `path`.
    ///
    /// - Parameter directoryMode: mode for missing parent directories that are created (an
    ///   existing directory is left as it is). The default 0700 suits a per-user
    ///   `$XDG_RUNTIME_DIR`; a system-wide socket directory that other users must reach needs
    ///   0755.
    /// - Throws: `NetError` `.socketInUse` when a server answers on `path`, `.notASocket` when
    ///   `path` is something else, `.pathTooLong`, `.notADirectory`, or `.system`.
    public init(path: String, backlog: Int32 = 128,
                directoryMode: mode_t = UnixListener.defaultDirectoryMode) throws(NetError) {
        guard let address = UnixSocketAddress(path: path) else {
            throw NetError(.pathTooLong,
                           "socket path \(path) is empty, contains a NUL byte or is longer than \(UnixSocketAddress.maxPathBytes) bytes",
                           fix: "choose a shorter path with --socket or MENTORMATE_SOCKET")
        }
        try Self.makeDirectory(containing: path, mode: directoryMode)
        try Self.removeStaleSocket(at: address)

        let fd = try Syscall.unixSocket()
        do throws(NetError) {
            try Syscall.bind(fd, address)
        } catch {
            if error.errno == EADDRINUSE { throw Self.inUse(path) }  // lost a race with another daemon
            throw error
        }
        do throws(NetError) {
            try Syscall.chmod(path, mode: 0o666)
            try Syscall.listen(fd, backlog: backlog, path: path)
            guard let st = try Syscall.status(path) else {
                throw NetError(.system, errno: ENOENT, "socket file \(path) vanished after bind")
            }
            created = (UInt(st.st_dev), UInt(st.st_ino))
        } catch {
            try? Syscall.unlink(path)
            throw error
        }
        self.path = path
        self.descriptor = fd
    }

    /// Takes over an already-listening descriptor, e.g. `SD_LISTEN_FDS_START` (3) from systemd.
    /// It is made non-blocking and close-on-exec. On failure the descriptor is left untouched
    /// and open.
    ///
    /// - Parameter path: the socket's path, for logs and status only; it is never removed.
    public init(adopting fd: Int32, path: String? = nil) throws(NetError) {
        guard try Syscall.isListeningStreamSocket(fd) else {
            throw NetError(.notListening, "descriptor \(fd) is not a listening stream socket",
                           fix: "check ListenStream= in mentormated.socket, or start mentormated without socket activation")
        }
        try Syscall.setNonBlockingCloseOnExec(fd)
        self.path = path
        self.descriptor = FileDescriptor(fd)
    }

    /// Stops listening: removes the socket file this listener created (if it is still the same
    /// file), then closes the descriptor. Idempotent.
    public func close() {
        removeSocketFile()
        descriptor.close()
    }

    /// Removes the socket file this listener made (if it is still the same file), so no new
    /// client finds it; the descriptor stays open until `close()`.
    func removeSocketFile() {
        if let created, let path, let st = try? Syscall.status(path),
           UInt(st.st_dev) == created.device, UInt(st.st_ino) == created.inode {
            try? Syscall.unlink(path)
        }
        created = nil
    }

    deinit { close() }

    /// Accepts one pending connection (non-blocking, close-on-exec).
    func accept() throws(NetError) -> IOResult<FileDescriptor> {
        try Syscall.accept(descriptor)
    }

    // MARK: Preparing the path

    private static func inUse(_ path: String) -> NetError {
        NetError(.socketInUse, "another mentormated is serving \(path)",
                 fix: "stop it first (`mentormate status` shows it; `systemctl stop mentormated` for the service), or give this one another --socket")
    }

    /// Creates the directory that will hold `path` (and missing ancestors) with `mode`; leaves an
    /// existing one alone.
    private static func makeDirectory(containing path: String, mode: mode_t) throws(NetError) {
        guard let slash = path.lastIndex(of: "/") else { return }  // relative to the working directory
        let directory = String(path[..<slash])
        guard !directory.isEmpty else { return }  // "/api.sock"
        if let st = try Syscall.status(directory, followLinks: true) {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw NetError(.notADirectory, "\(directory) (the socket's directory) is not a directory",
                               fix: "remove it or choose another path with --socket")
            }
            return
        }
        try makeDirectory(containing: directory, mode: mode)
        if try Syscall.mkdir(directory, mode: mode) {
            try Syscall.chmod(directory, mode: mode)  // mkdir's mode is reduced by the umask
        } else {
            // Created by someone else meanwhile: accept it if it is a directory.
            try makeDirectory(containing: path, mode: mode)
        }
    }

    /// Refuses a live socket or a non-socket at the path; removes a stale socket.
    private static func removeStaleSocket(at address: UnixSocketAddress) throws(NetError) {
        let path = address.path
        guard let st = try Syscall.status(path) else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw NetError(.notASocket, "\(path) exists and is not a socket; nothing was changed",
                           fix: "remove it if it is not needed, or choose another path with --socket")
        }
        let probe = try Syscall.unixSocket()
        defer { probe.close() }
        do throws(NetError) {
            // Connected, or the backlog is full: either way a server is alive there.
            _ = try Syscall.connect(probe, address)
            throw inUse(path)
        } catch where error.code == .system && error.errno == ECONNREFUSED {
            try Syscall.unlink(path)  // nobody listens: a socket left by a daemon that died
        } catch where error.code == .system {
            throw NetError(.system, errno: error.errno, "cannot tell whether a server is serving \(path)",
                           fix: "remove \(path) if no mentormated is running, or choose another path with --socket")
        }
    }
}
