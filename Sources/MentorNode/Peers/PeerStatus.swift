import MentorAPI

/// What the peer manager tells about its links (docs/API.md): the list of connected peers that
/// `runtimeInfo().peers` and `status` show, and the `event.peer` and `event.sync`
/// notifications. Pure functions of the links' state; the shell keeps the state, publishes the
/// list on its `StatusBoard` and broadcasts the events (`SyncEventThrottle` decides when `event.sync`
/// goes out).
enum PeerStatus {
    /// One link as the status sees it: whether it is closing, and who is on it (nil: the
    /// handshake has not named the peer yet; `since` 0: not established).
    typealias Link = (closing: Bool, info: PeerInfo?)

    /// The connected peers: links established and not closing, the oldest first.
    static func connected(_ links: some Sequence<Link>) -> [PeerInfo] {
        links.filter { !$0.closing && ($0.info?.since ?? 0) != 0 }
            .compactMap(\.info)
            .sorted { $0.since < $1.since }
    }

    /// `event.peer`: a link was established (`connected`) or ended (`disconnected`).
    static func peerEvent(_ info: PeerInfo, state: PeerEvent.State) -> PeerEvent {
        PeerEvent(peer: apiPeer(info), state: state)
    }

    /// `event.sync`: a session's totals with the peer `node` (its node ID) at `address`.
    static func syncEvent(node: String, address: String, _ totals: SyncEventThrottle.Totals) -> SyncEvent {
        SyncEvent(peer: node, address: address, received: Int64(totals.received), sent: Int64(totals.sent), caughtUp: totals.caughtUp)
    }
}
