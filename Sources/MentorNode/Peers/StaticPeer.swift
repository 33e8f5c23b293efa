extension PeerManager {
    /// A static peer, as given by `--peer HOST:PORT` (and the `--listen` address, parsed alike).
    public struct StaticPeer: Sendable, Hashable {
        public var host: String
        public var port: UInt16
        public init(host: String, port: UInt16) { self.host = host; self.port = port }

        /// "10.0.0.2:7000", "[::1]:7000", "peer.example:7000"; nil when it is not HOST:PORT.
        public init?(parsing text: String) {
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            self.init(host: host, port: port)
        }
    }
}
