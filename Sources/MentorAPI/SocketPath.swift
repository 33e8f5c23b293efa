#if canImport(Glibc)
import Glibc
#endif

/// Where the API socket is (SPEC §5): `--socket`, then `MENTORMATE_SOCKET`, then
/// `/run/mentormate/api.sock` for the system service (root, or `systemMode`), else
/// `$XDG_RUNTIME_DIR/mentormate/api.sock`.
public enum SocketPath {
    public static let systemPath = "/run/mentormate/api.sock"

    public static func resolve(flag: String?, environment: [String: String], systemMode: Bool) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment["MENTORMATE_SOCKET"], !env.isEmpty { return env }
        if systemMode { return systemPath }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/mentormate/api.sock" }
        // No runtime directory (e.g. a plain `su` session): fall back to a per-user path in /tmp.
        return "/tmp/mentormate-\(getuid())/api.sock"
    }

    /// The client's default: the user socket if it exists, else the system one.
    public static func clientDefault(flag: String?, environment: [String: String]) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment["MENTORMATE_SOCKET"], !env.isEmpty { return env }
        let user = resolve(flag: nil, environment: environment, systemMode: false)
        var st = stat()
        if stat(user, &st) == 0 { return user }
        if stat(systemPath, &st) == 0 { return systemPath }
        return user
    }
}
