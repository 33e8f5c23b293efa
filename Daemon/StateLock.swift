import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// Holds `flock` on STATE_DIR/lock for the daemon's lifetime, so two daemons never share a
/// state directory. The lock dies with the process (even with kill -9), so a crash never
/// leaves a stale lock behind.
final class StateLock {
    /// Open (and locked) until the daemon exits; `FileDescriptor` closes it exactly once.
    private let file: FileDescriptor

    init(stateDirectory: String) throws(DaemonError) {
        let path = stateDirectory + "/lock"
        do throws(SystemError) {
            file = try Syscall.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        } catch {
            let code = error.errno
            throw DaemonError("cannot open \(path): \(String(cString: strerror(code)))",
                              hint: code == EROFS || code == ENOSPC
                                ? "the state directory's file system is \(code == EROFS ? "read-only" : "full"); remount it read-write or free space, or choose another with --state-dir"
                                : "check that the state directory belongs to the user running mentormated")
        }
        guard flock(file.raw, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readPID(file.raw)
            // No close here: the descriptor's one owner closes it when the throw lets go of it.
            throw DaemonError("another mentormated\(holder.map { " (pid \($0))" } ?? "") is already using the state directory \(stateDirectory)",
                              hint: "it is serving already — use it (`mentormate status`), stop it first\(holder.map { " (kill \($0))" } ?? ""), or give this one its own --state-dir")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(file.raw, 0)
        _ = pid.withCString { pwrite(file.raw, $0, strlen($0), 0) }
    }

    private static func readPID(_ fd: Int32) -> Int? {
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
        guard n > 0 else { return nil }
        return Int(String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
