#if canImport(Glibc)
import Glibc
#endif

/// Writing to the standard streams without touching C's shared `FILE*` globals (which Swift 6
/// rightly treats as shared mutable state).
public enum StandardStream {
    public static func error(_ text: String) { write(fd: 2, text.hasSuffix("\n") ? text : text + "\n") }
    public static func output(_ text: String) { write(fd: 1, text.hasSuffix("\n") ? text : text + "\n") }

    private static func write(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
        bytes.removeAll()
    }
}
