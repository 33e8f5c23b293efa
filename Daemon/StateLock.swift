import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Holds `flock` on STATE_DIR/lock for the daemon's lifetime, so two daemons never share a
/// state directory. The lock dies with the process (even with kill -9), so a crash never
/// leaves a stale lock behind.
final class StateLock {
    private let fd: Int32

    init(stateDirectory: String) throws(DaemonError) {
        let path = stateDirectory + "/lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw DaemonError("cannot open \(path): \(String(cString: strerror(code)))",
                              hint: code == EROFS || code == ENOSPC
                                ? "the state directory's file system is \(code == EROFS ? "read-only" : "full"); remount it read-write or free space, or choose another with --state-dir"
                                : "check that the state directory belongs to the user running mentormated")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readPID(fd)
            // No close here: every stored property is set, so the throw runs `deinit`, which
            // closes it (closing here too closed the number twice — perhaps someone else's).
            throw DaemonError("another mentormated\(holder.map { " (pid \($0))" } ?? "") is already using the state directory \(stateDirectory)",
                              hint: "it is serving already — use it (`mentormate status`), stop it first\(holder.map { " (kill \($0))" } ?? ""), or give this one its own --state-dir")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit { if fd >= 0 { close(fd) } }

    private static func readPID(_ fd: Int32) -> Int? {
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
        guard n > 0 else { return nil }
        return Int(String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
