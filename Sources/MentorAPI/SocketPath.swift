#if canImport(Glibc)
import Glibc
#endif

/// Where the API socket is (SPEC §5), and who may serve it.
///
/// The daemon's path: `--socket`, then `MENTORMATE_SOCKET`, then `/run/mentormate/api.sock` for
/// the system service (root, or `systemMode`), else the first of the user's own places
/// (`userCandidates`): `$XDG_RUNTIME_DIR/mentormate/api.sock`; without `XDG_RUNTIME_DIR` (a plain
/// `su`, `sudo -u`, cron) `/run/user/UID/mentormate/api.sock` when `/run/user/UID` exists and is
/// the user's own private directory; else `$XDG_STATE_HOME/mentormate/api.sock` (default
/// `~/.local/state/mentormate/api.sock`, inside the 0700 state directory). Every one of these is
/// in a directory no other user can create or write, so none of them can be planted by someone
/// else. There is no shared fallback such as /tmp.
public enum SocketPath {
    public static let systemPath = "/run/mentormate/api.sock"
    /// The system service's own user (sysusers.d/mentormate.conf).
    public static let serviceUser = "mentormate"

    public static func resolve(flag: String?, environment: [String: String], systemMode: Bool) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment["MENTORMATE_SOCKET"], !env.isEmpty { return env }
        if systemMode { return systemPath }
        return userCandidates(environment: environment)[0]
    }

    /// The user's own socket places, in the order the client tries them (see the type's
    /// documentation). Never empty.
    public static func userCandidates(environment: [String: String], uid: uid_t = getuid()) -> [String] {
        var candidates: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            candidates.append(runtime + "/mentormate/api.sock")
        }
        let userRun = "/run/user/\(uid)"
        if isPrivateDirectory(userRun, owner: uid), !candidates.contains(userRun + "/mentormate/api.sock") {
            candidates.append(userRun + "/mentormate/api.sock")
        }
        candidates.append(stateHome(environment: environment, uid: uid) + "/mentormate/api.sock")
        return candidates
    }

    /// `$XDG_STATE_HOME`, else `$HOME/.local/state` (HOME from the password file when unset).
    public static func stateHome(environment: [String: String], uid: uid_t = getuid()) -> String {
        if let x = environment["XDG_STATE_HOME"], !x.isEmpty { return x }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.local/state" }
        if let entry = getpwuid(uid), let dir = entry.pointee.pw_dir { return String(cString: dir) + "/.local/state" }
        return "/.local/state"
    }

    /// The client's default: the first of the user's own sockets that exists, else the system
    /// one (the user's own places come first, and no other user can create any of them).
    public static func clientDefault(flag: String?, environment: [String: String]) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment["MENTORMATE_SOCKET"], !env.isEmpty { return env }
        let user = userCandidates(environment: environment)
        var st = stat()
        for path in user where lstat(path, &st) == 0 { return path }
        if lstat(systemPath, &st) == 0 { return systemPath }
        return user[0]
    }

    /// Who may serve the socket at `path`, as the client checks it with `SO_PEERCRED` before it
    /// sends a byte: the system path only root or the service user; one of the user's own default
    /// places only the user; any other path (given with --socket or MENTORMATE_SOCKET) the user,
    /// root or the service user.
    public static func trustedServers(for path: String, environment: [String: String], uid: uid_t = getuid()) -> TrustedServers {
        let service = serviceUID()
        if path == systemPath { return TrustedServers(uids: [0] + (service.map { [$0] } ?? []), kind: .system) }
        if userCandidates(environment: environment, uid: uid).contains(path) { return TrustedServers(uids: [uid], kind: .user) }
        return TrustedServers(uids: Array(Set([uid, 0] + (service.map { [$0] } ?? []))).sorted(), kind: .given)
    }

    /// The uid of the `mentormate` user, or nil when there is none.
    public static func serviceUID() -> uid_t? {
        guard let entry = getpwnam(serviceUser) else { return nil }
        return entry.pointee.pw_uid
    }

    /// The name of `uid` in the password file, or nil.
    public static func userName(_ uid: uid_t) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// A real directory (not a symlink) owned by `owner` that nobody else may write.
    static func isPrivateDirectory(_ path: String, owner: uid_t) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0 else { return false }
        return st.st_mode & S_IFMT == S_IFDIR && st.st_uid == owner && st.st_mode & 0o022 == 0
    }

    /// The uids allowed to serve a socket, and why (for the error message).
    public struct TrustedServers: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// One of the user's own default places: only the user.
            case user
            /// /run/mentormate/api.sock: root or the service user.
            case system
            /// A path given with --socket or MENTORMATE_SOCKET: the user, root or the service user.
            case given
        }
        public var uids: [uid_t]
        public var kind: Kind

        public init(uids: [uid_t], kind: Kind) {
            self.uids = uids
            self.kind = kind
        }

        /// "you (uid 1000)", "root or the mentormate user (uid 998)", ...
        public var phrase: String {
            let me = getuid()
            let names = uids.map { uid -> String in
                if uid == me { return "you (uid \(uid))" }
                if uid == 0 { return "root" }
                return "the \(SocketPath.userName(uid) ?? "uid \(uid)") user (uid \(uid))"
            }
            if names.count <= 1 { return names.first ?? "nobody" }
            return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
        }
    }
}
