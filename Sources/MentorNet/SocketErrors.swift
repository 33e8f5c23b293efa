import MentorSystem

/// The refusals of MentorNet's listeners and servers (`SystemError` is the one error type of
/// the socket layer; `.system` is a failed system call).
extension SystemError.Code {
    /// A live server already accepts connections on the socket path.
    public static let socketInUse = Self("socketInUse")
    /// The socket path exists and is not a socket (nothing was changed).
    public static let notASocket = Self("notASocket")
    /// The socket path does not fit in `sockaddr_un` (107 bytes).
    public static let pathTooLong = Self("pathTooLong")
    /// The socket's parent exists and is not a directory.
    public static let notADirectory = Self("notADirectory")
    /// An adopted descriptor is not a listening Unix stream socket.
    public static let notListening = Self("notListening")
    /// `APIServer.run()` was called while it was already running.
    public static let alreadyRunning = Self("alreadyRunning")
    /// The socket's directory is a symlink, belongs to another user, or others may write it:
    /// someone else could replace the socket (nothing was changed).
    public static let insecureDirectory = Self("insecureDirectory")
}
