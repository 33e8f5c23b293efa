/// The MentorMate release, shared by the daemon and the client.
public enum MentorMateVersion {
    public static let string = "0.1.0"
    /// The record format versions this build reads and writes (docs/PROTOCOL.md §4): 1, signed
    /// by an account key; 2, signed by a device key.
    public static let recordFormats = "1 and 2"
}
