#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorSystem

/// A listening Unix stream socket (non-blocking, close-on-exec) for the API.
///
/// `init(path:)` makes the socket file. Its directory must be one nobody else can change: a
/// missing one is created (mode `directoryMode` exactly, whatever the umask, set with `fchmod`
/// on the opened directory); an existing one must be a real directory (not a symlink) owned by
/// the user running the daemon (or root) that neither group nor others may write — anything else is
/// refused (`.insecureDirectory`), since whoever can write the directory can replace the socket.
/// It refuses a path where another server is live or where something that is not a socket
/// exists, and replaces a stale socket (one nobody listens on any more). The socket is bound in a
/// fresh private directory (mkdtemp, 0700) next to the final path, given its mode 0666 there —
/// where nobody else can reach it — and then hard-linked into place, so no mode is ever changed
/// through a path someone else could redirect. Mode 0666: who may do what is decided per
/// connection from `SO_PEERCRED`, not by the file's mode.
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
    /// Mode of the socket file.
    public static let socketMode: mode_t = 0o666

    /// Binds and listens on `path`.
    ///
    /// - Parameter directoryMode: mode for missing parent directories that are created (an
    ///   existing directory is checked, not changed). The default 0700 suits a per-user socket;
    ///   a system-wide socket directory that other users must reach needs 0755.
    /// - Throws: `SystemError` `.socketInUse` when a server answers on `path`, `.notASocket` when
    ///   `path` is something else, `.insecureDirectory`, `.pathTooLong`, `.notADirectory`, or
    ///   `.system`.
    public init(path: String, backlog: Int32 = 128,
                directoryMode: mode_t = UnixListener.defaultDirectoryMode) throws(SystemError) {
        guard let address = UnixSocketAddress(path: path) else {
            throw SystemError(.pathTooLong,
                           "socket path \(path) is empty, contains a NUL byte or is longer than \(UnixSocketAddress.maxPathBytes) bytes",
                           fix: "choose a shorter path with --socket or MENTORMATE_SOCKET")
        }
        let directory = Self.directory(of: path)
        try Self.prepareDirectory(directory, mode: directoryMode & 0o755)
        try Self.removeStaleSocket(at: address)

        let fd = try Self.bindPrivately(address, directory: directory, backlog: backlog)
        do throws(SystemError) {
            guard let st = try Syscall.status(path), st.st_mode & S_IFMT == S_IFSOCK else {
                throw SystemError(.system, errno: ENOENT, "socket file \(path) vanished after bind")
            }
            created = (UInt(st.st_dev), UInt(st.st_ino))
        } catch {
            try? Syscall.unlink(path)
            throw error
        }
        self.path = path
        self.descriptor = fd
    }

    /// Binds a socket at `address` and listens: in a fresh private directory inside `directory`
    /// (where the mode is set), then hard-linked to the final name (EEXIST: a daemon that won a
    /// race). When the private path would not fit in `sockaddr_un`, binds at the path itself; the
    /// socket then has 0777 less the umask (fine in a 0700 directory).
    private static func bindPrivately(_ address: UnixSocketAddress, directory: String,
                                      backlog: Int32) throws(SystemError) -> FileDescriptor {
        let path = address.path
        var template = Array((directory + "/.mm-XXXXXX").utf8CString)
        let privateFits = template.count - 1 + 2 <= UnixSocketAddress.maxPathBytes
        guard privateFits else {
            let fd = try Syscall.unixSocket()
            do throws(SystemError) {
                try Syscall.bind(fd, address)
            } catch {
                if error.errno == EADDRINUSE { throw inUse(path) }
                throw error
            }
            do throws(SystemError) { try Syscall.listen(fd, backlog: backlog, path: path) } catch {
                try? Syscall.unlink(path)
                throw error
            }
            return fd
        }
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError(.system, errno: errno, "create a private directory in \(directory) for the socket",
                           fix: "check that \(directory) is writable by the user running mentormated")
        }
        let privateDirectory = String(cString: made)
        let temporary = privateDirectory + "/s"
        defer {
            try? Syscall.unlink(temporary)
            _ = rmdir(privateDirectory)
        }
        guard let temporaryAddress = UnixSocketAddress(path: temporary) else {
            throw SystemError(.pathTooLong, "socket path \(temporary) does not fit in sockaddr_un",
                           fix: "choose a shorter path with --socket or MENTORMATE_SOCKET")
        }
        let fd = try Syscall.unixSocket()
        try Syscall.bind(fd, temporaryAddress)
        try Syscall.listen(fd, backlog: backlog, path: path)
        // Only we can enter the mkdtemp directory (0700, ours), so this path cannot be redirected.
        try Syscall.chmodInPrivateDirectory(temporary, mode: socketMode)
        guard try Syscall.link(temporary, to: path, what: "put the socket in place at \(path)") else {
            throw inUse(path)  // lost a race with another daemon
        }
        return fd
    }
    /// Takes over an already-listening descriptor, e.g. `SD_LISTEN_FDS_START` (3) from systemd.
    /// It is made non-blocking and close-on-exec. On failure the descriptor is left untouched
    /// and open.
    ///
    /// - Parameter path: the socket's path, for logs and status only; it is never removed.
    public init(adopting fd: Int32, path: String? = nil) throws(SystemError) {
        guard try Syscall.isListeningStreamSocket(fd) else {
            throw SystemError(.notListening, "descriptor \(fd) is not a listening stream socket",
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
        try? descriptor.close()
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
    func accept() throws(SystemError) -> IOResult<FileDescriptor> {
        try Syscall.accept(descriptor)
    }

    // MARK: Preparing the path

    private static func inUse(_ path: String) -> SystemError {
        SystemError(.socketInUse, "another mentormated is serving \(path)",
                 fix: "stop it first (`mentormate status` shows it; `systemctl stop mentormated` for the service), or give this one another --socket")
    }

    /// Checks the directory that would hold the socket at `path`, if it exists, by the rules of
    /// `init(path:)`, without creating or changing anything (the daemon calls it before it
    /// touches its state, so a refused start leaves nothing behind).
    public static func checkExistingDirectory(forSocket path: String) throws(SystemError) {
        let directory = Self.directory(of: path)
        if let st = try Syscall.status(directory) { try checkDirectory(directory, st) }
    }

    /// The directory part of `path` ("." for a bare name, "/" for "/name").
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// Makes sure `directory` exists and nobody but us can change what is in it: creates it
    /// (and missing ancestors) with exactly `mode`, or checks an existing one (see the type's
    /// documentation).
    static func prepareDirectory(_ directory: String, mode: mode_t) throws(SystemError) {
        if let st = try Syscall.status(directory) {
            try checkDirectory(directory, st)
            return
        }
        let parent = Self.directory(of: directory)
        if parent != directory, try Syscall.status(parent, followLinks: true) == nil {
            try createAncestors(parent, mode: mode)
        }
        guard try Syscall.mkdir(directory, mode: mode) else {
            // Created by someone else meanwhile: the same checks as for any existing directory.
            guard let st = try Syscall.status(directory) else {
                throw SystemError(.system, errno: ENOENT, "the socket directory \(directory) vanished while it was being created")
            }
            try checkDirectory(directory, st)
            return
        }
        // mkdir's mode was reduced by the umask: set it exactly, on the directory we opened
        // (O_NOFOLLOW), after checking it is still the one we made.
        let fd: FileDescriptor
        do throws(SystemError) {
            fd = try Syscall.open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } catch {
            throw SystemError(.system, errno: error.errno, "open the new socket directory \(directory)")
        }
        try checkOwner(directory, try Syscall.status(fd, what: "stat \(directory)"))
        try Syscall.blocking("set the mode of \(directory)") { fchmod(fd.raw, mode) }
    }

    /// `mkdir -p` for the socket directory's missing ancestors, each created with `mode`.
    private static func createAncestors(_ directory: String, mode: mode_t) throws(SystemError) {
        let parent = Self.directory(of: directory)
        if parent != directory, try Syscall.status(parent, followLinks: true) == nil {
            try createAncestors(parent, mode: mode)
        }
        _ = try Syscall.mkdir(directory, mode: mode)
        guard let st = try Syscall.status(directory, followLinks: true), st.st_mode & S_IFMT == S_IFDIR else {
            throw SystemError(.notADirectory, "\(directory) (on the way to the socket) is not a directory",
                           fix: "remove it or choose another path with --socket")
        }
    }

    /// Refuses a directory that is not a real directory, is not ours, or that others may write.
    private static func checkDirectory(_ directory: String, _ st: stat) throws(SystemError) {
        switch st.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK:
            throw SystemError(.insecureDirectory,
                           "the socket directory \(directory) is a symbolic link; nothing was changed (whoever controls the link decides where the socket goes)",
                           fix: "remove the link (`rm \(directory)`) and let mentormated create the directory itself, or choose another path with --socket")
        default:
            throw SystemError(.notADirectory, "\(directory) (the socket's directory) is not a directory",
                           fix: "remove it or choose another path with --socket")
        }
        try checkOwner(directory, st)
        let mode = st.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw SystemError(.insecureDirectory,
                           "the socket directory \(directory) has mode 0\(String(mode, radix: 8)): other users may write it, so they could move the socket away and put their own in its place; nothing was changed",
                           fix: "`chmod go-w \(directory)` (or `chmod 700 \(directory)`), or choose another path with --socket")
        }
    }

    /// The daemon's own user, or root (trusted anyway; a root-owned directory that others may not
    /// write is one only root can change).
    private static func checkOwner(_ directory: String, _ st: stat) throws(SystemError) {
        let me = geteuid()
        guard st.st_uid == me || st.st_uid == 0 else {
            throw SystemError(.insecureDirectory,
                           "the socket directory \(directory) belongs to \(ownerName(st.st_uid)), not to \(ownerName(me)) who runs mentormated, so its owner could replace the socket; nothing was changed",
                           fix: "remove it (`rm -r \(directory)`, as its owner or root) and let mentormated create it, or choose another path with --socket")
        }
    }

    private static func ownerName(_ uid: uid_t) -> String {
        SocketPath.userName(uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
    }

    /// Refuses a live socket or a non-socket at the path; removes a stale socket.
    private static func removeStaleSocket(at address: UnixSocketAddress) throws(SystemError) {
        let path = address.path
        guard let st = try Syscall.status(path) else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw SystemError(.notASocket, "\(path) exists and is not a socket; nothing was changed",
                           fix: "remove it if it is not needed, or choose another path with --socket")
        }
        let probe = try Syscall.unixSocket()
        defer { try? probe.close() }
        do throws(SystemError) {
            // Connected, or the backlog is full: either way a server is alive there.
            _ = try Syscall.connect(probe, address)
            throw inUse(path)
        } catch where error.code == .system && error.errno == ECONNREFUSED {
            try Syscall.unlink(path)  // nobody listens: a socket left by a daemon that died
        } catch where error.code == .system {
            throw SystemError(.system, errno: error.errno, "cannot tell whether a server is serving \(path)",
                           fix: "remove \(path) if no mentormated is running, or choose another path with --socket")
        }
    }
}
