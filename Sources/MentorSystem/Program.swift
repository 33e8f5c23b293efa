#if canImport(Glibc)
import Glibc
#endif

/// Running another program (`mentormate notify`: `notify-send`, `gdbus`): found on `PATH`,
/// started with posix_spawn and its arguments as argv — never through a shell —, waited for.
/// Its stdin and stdout are /dev/null, its stderr is ours (what it says when it fails reaches
/// the user or the journal); it gets no descriptor of ours beyond 0, 1 and 2 where the C
/// library can close them (glibc 2.34+), and the default signal dispositions.
public enum Program {
    /// The first executable regular file called `name` in the directories of `path` (a
    /// `PATH` value); nil when there is none. A name with a slash is taken as it is.
    public static func find(_ name: String, path: String?) -> String? {
        if name.contains("/") { return isExecutable(name) ? name : nil }
        for dir in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if isExecutable(candidate) { return candidate }
        }
        return nil
    }

    private static func isExecutable(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    /// Runs `argv` (`argv[0]` a path, as `find` gives) with this process's environment and
    /// waits for it; returns its exit status (128 + the signal that ended it). Throws when it
    /// could not be started.
    public static func run(_ argv: [String]) throws(SystemError) -> Int32 {
        guard let program = argv.first else { throw SystemError(.system, errno: EINVAL, "posix_spawn: no program") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), mask = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&defaults, s) }
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, program, &actions, &attributes, cArgs, environ)
        guard started == 0 else { throw SystemError(.system, errno: started, "posix_spawn \(program)") }
        var status: Int32 = 0
        try Syscall.blocking("waitpid \(program)") { waitpid(pid, &status, 0) }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34+), which Swift's Glibc module does
    /// not show; nil where the C library lacks it.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static var addCloseFrom: AddCloseFrom? {
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
    }
}
