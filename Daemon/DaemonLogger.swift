import MentorNode
#if canImport(Glibc)
import Glibc
#endif
import MentorNet
import Synchronization
import MentorSystem

/// One line per event on standard error: `LEVEL message key=value…`. When standard error is
/// the journal (`JOURNAL_STREAM` names it), each line starts with its syslog priority (`<6>`),
/// so `journalctl -p` filters by level.
final class DaemonLogger: Logger {
    private let minimum: Mutex<LogLevel>
    private let journal: Bool

    init(minimum: LogLevel, environment: [String: String]) {
        self.minimum = Mutex(minimum)
        journal = Self.stderrIsJournal(environment["JOURNAL_STREAM"])
    }

    func setMinimum(_ level: LogLevel) { minimum.withLock { $0 = level } }

    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        guard level >= minimum.withLock({ $0 }) else { return }
        var line = journal ? "<\(Self.priority(level))>" : ""
        line += "\(level) \(message)"
        for (k, v) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(k)=" + (v.contains(" ") || v.isEmpty ? "\"\(v)\"" : v)
        }
        line = line.replacingNewlines() + "\n"
        var bytes = Array(line.utf8)
        // One write per line, so concurrent lines never interleave.
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    func warning(_ message: String, _ metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    func error(_ message: String, _ metadata: [String: String] = [:]) { log(.error, message, metadata) }
    func notice(_ message: String, _ metadata: [String: String] = [:]) { log(.notice, message, metadata) }

    static func priority(_ level: LogLevel) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        }
    }

    /// JOURNAL_STREAM is "DEVICE:INODE" of the journal stream; it counts only if stderr is it.
    static func stderrIsJournal(_ value: String?) -> Bool {
        guard let value, let colon = value.firstIndex(of: ":"),
              let dev = UInt64(value[..<colon]), let ino = UInt64(value[value.index(after: colon)...]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }
}

extension String {
    func replacingNewlines() -> String { String(map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
}

