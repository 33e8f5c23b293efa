#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`): every peer link is one, so a
/// hub sized for a building needs a few thousand (PROTOCOL.md §13.5, OPERATIONS.md).
public enum FileLimit {
    /// Descriptors the daemon uses besides its peer links: the replica and its WAL, the API
    /// socket and its connections (32 per user), D-Bus, Avahi's browses and resolves, logs.
    public static let headroom = 256

    /// The soft and hard limits now (nil when `getrlimit` fails).
    public static func current() -> (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (allowed without privilege). Returns the soft limit
    /// in force afterwards (nil when it cannot be read).
    @discardableResult
    public static func raiseSoftToHard() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// Whether `soft` leaves room for `links` peer links and the `headroom`.
    public static func suffices(soft: UInt64, links: Int) -> Bool { soft >= UInt64(max(0, links) + headroom) }
}
