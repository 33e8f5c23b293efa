#if canImport(Glibc)
import Glibc
#endif

/// A failed system call, or a refusal by the code around one: a `code` to match on, the `errno`
/// of the failed call (0 when no system call failed), `what` was being done, and a `fix` telling
/// the user what to do.
///
/// Match by code, never by message:
///
/// ```swift
/// do { listener = try UnixListener(path: path) }
/// catch SystemError.Code.socketInUse { /* another daemon serves this path */ }
/// ```
///
/// Every wrapper in `Syscall` throws `.system`. A module adds the codes of its own refusals in
/// an extension of `SystemError.Code` (MentorNet: `socketInUse`, `notASocket`, ...).
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Code
    /// The `errno` of the failed system call, or 0.
    public let errno: Int32
    /// What was being done, naming the path or descriptor ("bind /run/mentormate/api.sock").
    public let what: String
    /// What the user can do about it, if there is something.
    public let fix: String?

    public init(_ code: Code, errno: Int32 = 0, _ what: String, fix: String? = nil) {
        self.code = code
        self.errno = errno
        self.what = what
        self.fix = fix
    }

    /// "what: strerror(errno); fix".
    public var description: String {
        var text = what
        if errno != 0 { text += ": " + String(cString: strerror(errno)) }
        if let fix { text += "; " + fix }
        return text
    }

    /// The reason alone, with its number: "Permission denied (errno 13)" (empty when `errno` is 0),
    /// for a message that says what was being done in its own words.
    public var errnoDescription: String {
        errno == 0 ? "" : "\(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// What kind of failure this is. Compare codes, never messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        /// A new code; each is declared once, as a static constant, in the module that throws it.
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A system call failed; `errno` says why.
        public static let system = Code("system")

        /// Lets a `catch` clause match on a code: `catch SystemError.Code.socketInUse { ... }`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? SystemError)?.code == pattern
        }
    }
}
