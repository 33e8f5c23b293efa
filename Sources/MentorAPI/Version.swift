/// The MentorMate release, shared by the daemon and the client.
public enum MentorMateVersion {
    public static let string = "0.1.0"
    /// The record format version this build reads and writes.
    public static let recordFormat = 1
}
