import Testing
@testable import MentorNode

/// `--peer HOST:PORT` (and `--listen`): what parses and what does not.
@Suite struct StaticPeerTests {
    typealias Peer = PeerManager.StaticPeer

    @Test func hostsAndPortsParse() {
        #expect(Peer(parsing: "10.0.0.2:7000") == Peer(host: "10.0.0.2", port: 7000))
        #expect(Peer(parsing: "[::1]:7000") == Peer(host: "::1", port: 7000), "brackets around an IPv6 address are dropped")
        #expect(Peer(parsing: "peer.example:0") == Peer(host: "peer.example", port: 0))
        #expect(Peer(parsing: "[fe80::1%eth0]:7000") == Peer(host: "fe80::1%eth0", port: 7000), "a link-local address keeps its interface")
        #expect(Peer(parsing: "[fd00:77::1]:7000") == Peer(host: "fd00:77::1", port: 7000))
        #expect(Peer(parsing: "fe80::1:7000") == nil, "an IPv6 address with a port must be in brackets: is 7000 a group or the port?")
    }

    @Test func whatIsNotHostColonPortIsRefused() {
        for text in ["", "10.0.0.2", "10.0.0.2:", ":7000", "[]:7000", "host:70000", "host:-1", "host:port", "host:7000 ", "::1:7000", "[10.0.0.2]:7000", "[::1]7000"] {
            #expect(Peer(parsing: text) == nil, "\(text)")
        }
    }
}
