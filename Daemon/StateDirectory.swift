import MentorAPI
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// The private files of the daemon: the state directory and the network key file.
///
/// The state directory holds the replica (decrypted chat text, the like graph, local e-mail
/// addresses), the node key and the account keys; file modes are all that keep other local
/// users out of it. So it is created 0700 exactly (whatever the umask), and an existing one must
/// belong to the daemon's user and give group and others no access at all — otherwise the
/// daemon refuses to start, names the problem and the fix, and changes nothing. The files in it
/// are made 0600 because `main` sets the umask to 077 before anything is created.
enum PrivateFiles {
    /// Creates `path` (and missing ancestors) mode 0700, or checks an existing one.
    static func prepareStateDirectory(_ path: String) throws(DaemonError) {
        var st = stat()
        if stat(path, &st) == 0 {
            try checkStateDirectory(path, st)
            return
        }
        guard errno == ENOENT else {
            throw DaemonError("cannot look at the state directory \(path): \(String(cString: strerror(errno)))",
                              hint: "choose a directory the user running mentormated may use, with --state-dir")
        }
        try makeAncestors(of: path)
        if mkdir(path, 0o700) != 0 {
            let code = errno
            if code == EEXIST, stat(path, &st) == 0 {  // made by someone else meanwhile
                try checkStateDirectory(path, st)
                return
            }
            throw DaemonError("cannot create the state directory \(path): \(String(cString: strerror(code)))",
                              hint: "choose a writable directory with --state-dir")
        }
        // Exactly 0700 whatever the umask, set on the directory we just made (O_NOFOLLOW).
        let directory: FileDescriptor
        do throws(SystemError) {
            directory = try Syscall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } catch {
            throw DaemonError("cannot open the new state directory \(path): \(String(cString: strerror(error.errno)))")
        }
        guard fstat(directory.raw, &st) == 0, st.st_uid == geteuid(), fchmod(directory.raw, 0o700) == 0 else {
            throw DaemonError("cannot make the new state directory \(path) private: \(String(cString: strerror(errno)))",
                              hint: "choose another directory with --state-dir")
        }
    }

    /// Refuses a state directory that is not ours or that group or others may enter.
    static func checkStateDirectory(_ path: String, _ st: stat) throws(DaemonError) {
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw DaemonError("the state directory \(path) is not a directory", hint: "remove it, or choose another with --state-dir")
        }
        let me = geteuid()
        guard st.st_uid == me else {
            throw DaemonError("the state directory \(path) belongs to \(owner(st.st_uid)), not to \(owner(me)) who runs mentormated; nothing was changed",
                              hint: "run mentormated as its owner, give it to this user (`chown -R \(me) \(path)`), or choose another with --state-dir")
        }
        let mode = st.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw DaemonError("the state directory \(path) has mode 0\(String(mode, radix: 8)), so other users may look into it (the replica holds decrypted chats, likes and e-mail addresses); nothing was changed",
                              hint: "chmod 700 \(path) — and `chmod 600` the files in it; if others could read it already, treat what was in it as seen")
        }
    }

    /// `mkdir -p` of the ancestors, each new one 0700 (they lead to private state).
    private static func makeAncestors(of path: String) throws(DaemonError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let parent = String(path[..<slash])
        var st = stat()
        if stat(parent, &st) == 0 { return }
        try makeAncestors(of: parent)
        if mkdir(parent, 0o700) != 0 && errno != EEXIST {
            throw DaemonError("cannot create \(parent) (on the way to the state directory): \(String(cString: strerror(errno)))",
                              hint: "choose a writable directory with --state-dir")
        }
    }

    /// The 32 bytes of the network key file, refused unless only its owner may read it.
    static func readNetworkKey(_ path: String) throws(DaemonError) -> [UInt8] {
        let createHint = "create one with: (umask 077; head -c 32 /dev/urandom > \(path)), readable by the user running mentormated"
        let file: FileDescriptor
        do throws(SystemError) {
            file = try Syscall.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        } catch {
            let code = error.errno
            throw DaemonError("cannot open the network key file \(path): \(String(cString: strerror(code)))",
                              hint: code == ENOENT ? createHint
                                  : "let the user running mentormated read it: chown \(SocketPath.userName(geteuid()) ?? "\(geteuid())") \(path) && chmod 600 \(path)")
        }
        var st = stat()
        guard fstat(file.raw, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw DaemonError("the network key file \(path) is not a regular file", hint: createHint)
        }
        let mode = st.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw DaemonError("the network key file \(path) has mode 0\(String(mode, radix: 8)), so other local users may read it (anyone with the key can join the network); refusing to use it",
                              hint: "chmod 600 \(path) (owned by the user running mentormated); if others could read it, make a new key for every node")
        }
        var bytes = [UInt8](repeating: 0, count: 33)
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        guard case .done(32)? = try? Syscall.read(file, into: &bytes) else {
            throw DaemonError("the network key file \(path) must hold exactly 32 bytes", hint: createHint)
        }
        return Array(bytes[..<32])
    }

    private static func owner(_ uid: uid_t) -> String {
        SocketPath.userName(uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
    }
}
