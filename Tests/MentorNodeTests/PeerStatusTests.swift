import MentorAPI
import Testing
@testable import MentorNode

/// What the peer manager shows of its links (docs/API.md `runtimeInfo().peers`, `event.peer`,
/// `event.sync`), from the links' state alone.
@Suite struct PeerStatusTests {
    private func info(_ node: String, since: UInt64) -> PeerInfo {
        PeerInfo(node: node, address: "10.0.0.\(since):7000", via: "config", since: since)
    }

    @Test func onlyEstablishedLinksNotClosingAreListedOldestFirst() {
        let links: [PeerStatus.Link] = [
            (closing: false, info: info("c", since: 300)),
            (closing: false, info: nil),                    // handshake under way
            (closing: false, info: info("z", since: 0)),    // named, not established yet
            (closing: true, info: info("x", since: 50)),    // closing
            (closing: false, info: info("a", since: 100)),
        ]
        #expect(PeerStatus.connected(links).map(\.node) == ["a", "c"])
        #expect(PeerStatus.connected([PeerStatus.Link]()).isEmpty)
    }

    @Test func eventsCarryThePeerAndTheSessionsTotals() throws {
        let peer = try RPCNotification(.peer, PeerStatus.peerEvent(info("n1", since: 7), state: .connected))
        #expect(peer.method == "event.peer")
        #expect(peer.params["state"] == "connected")
        #expect(peer.params["peer"] == ["node": "n1", "address": "10.0.0.7:7000", "via": "config", "since": 7, "hub": false])

        let sync = try RPCNotification(.sync, PeerStatus.syncEvent(node: "n1", address: "10.0.0.7:7000", (received: 12, sent: 3, caughtUp: true)))
        #expect(sync.method == "event.sync")
        #expect(sync.params == ["peer": "n1", "address": "10.0.0.7:7000", "received": 12, "sent": 3, "caughtUp": true])
    }

    /// What `status` reads off the queue (`StatusBoard`): the list last published, the records of
    /// every batch received, and lazy push's counters beside them.
    @Test func theBoardShowsTheLastListPublishedAndCountsEveryBatchReceived() {
        let board = StatusBoard()
        #expect(board.peers.isEmpty && board.recordsReceived == 0)
        board.publish([info("a", since: 1), info("b", since: 2)])
        board.publish([info("b", since: 2)])
        #expect(board.peers.map(\.node) == ["b"], "a new list replaces the old one")
        board.received(256)
        board.received(3)
        board.publish(PushLinks.Counts(duplicates: 40, announced: 7))
        #expect(board.recordsReceived == 259)
        let counters = board.pushCounters
        #expect(counters.bodies == 259 && counters.duplicates == 40 && counters.announced == 7)
    }
}
