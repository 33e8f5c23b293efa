import MentorSystem

extension PeerManager {
    /// A static peer, as given by `--peer HOST:PORT` (and the `--listen` address, parsed alike).
    public struct StaticPeer: Sendable, Hashable {
        public var host: String
        public var port: UInt16
        public init(host: String, port: UInt16) { self.host = host; self.port = port }
        public init(host parsed: (host: String, port: UInt16)) { self.init(host: parsed.host, port: parsed.port) }

        /// "10.0.0.2:7000", "[fd00:77::2]:7000", "[fe80::2%eth0]:7000", "peer.example:7000"; nil
        /// when it is not HOST:PORT (`HostPort.parse` says why).
        public init?(parsing text: String) {
            guard let parsed = try? HostPort.parse(text) else { return nil }
            self.init(host: parsed.host, port: parsed.port)
        }
    }
}
