#if canImport(Glibc)
import Glibc
#endif

/// Writing to the standard streams without touching C's shared `FILE*` globals (which Swift 6
/// rightly treats as shared mutable state).
public enum StandardStream {
    /// `text` and a newline (unless it ends with one) on stderr.
    public static func error(_ text: String) { write(text.hasSuffix("\n") ? text : text + "\n", to: 2) }
    /// `text` and a newline (unless it ends with one) on stdout.
    public static func output(_ text: String) { write(text.hasSuffix("\n") ? text : text + "\n", to: 1) }

    /// `text` exactly as it is (a prompt, terminal escapes) on `fd`. A stream that fails or is
    /// closed drops the rest: there is nowhere left to report it.
    public static func write(_ text: String, to fd: Int32) {
        try? Syscall.writeAll(fd, Array(text.utf8))
    }
}
