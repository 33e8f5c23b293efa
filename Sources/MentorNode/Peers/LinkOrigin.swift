/// How a link came to be: what `peers` shows as `via` and the log lines name.
public enum LinkOrigin: String, Sendable, Equatable {
    /// Dialled to a static peer (`--peer`, `peers` in the config file).
    case config
    /// Dialled to an mDNS instance, or accepted from an address an instance was found at.
    case mdns
    /// Accepted on the listener from an address not known otherwise.
    case incoming
}
