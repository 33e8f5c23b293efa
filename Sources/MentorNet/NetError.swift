#if canImport(Glibc)
import Glibc
#endif

/// An error from the socket layer: a `code` to match on, the `errno` of the failed call (0 when
/// no system call failed), `what` was being done, and a `fix` telling the user what to do.
///
/// Match by code, never by message:
///
/// ```swift
/// do { listener = try UnixListener(path: path) }
/// catch NetError.Code.socketInUse { /* another daemon serves this path */ }
/// ```
public struct NetError: Error, Sendable, Equatable, CustomStringConvertible {
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

    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// A system call failed; `errno` says why.
        public static let system = Code(rawValue: 1)
        /// A live server already accepts connections on the socket path.
        public static let socketInUse = Code(rawValue: 2)
        /// The socket path exists and is not a socket (nothing was changed).
        public static let notASocket = Code(rawValue: 3)
        /// The socket path does not fit in `sockaddr_un` (107 bytes).
        public static let pathTooLong = Code(rawValue: 4)
        /// The socket's parent exists and is not a directory.
        public static let notADirectory = Code(rawValue: 5)
        /// An adopted descriptor is not a listening Unix stream socket.
        public static let notListening = Code(rawValue: 6)
        /// `APIServer.run()` was called while it was already running.
        public static let alreadyRunning = Code(rawValue: 7)
        /// The socket's directory is a symlink, belongs to another user, or others may write it:
        /// someone else could replace the socket (nothing was changed).
        public static let insecureDirectory = Code(rawValue: 8)

        public var description: String {
            switch self {
            case .system: "system"
            case .socketInUse: "socketInUse"
            case .notASocket: "notASocket"
            case .pathTooLong: "pathTooLong"
            case .notADirectory: "notADirectory"
            case .notListening: "notListening"
            case .alreadyRunning: "alreadyRunning"
            case .insecureDirectory: "insecureDirectory"
            default: "NetError \(rawValue)"
            }
        }

        /// Lets a `catch` clause match on a code: `catch NetError.Code.socketInUse { ... }`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? NetError)?.code == pattern
        }
    }
}
