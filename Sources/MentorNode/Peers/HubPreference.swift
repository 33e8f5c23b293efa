/// Which links a node keeps when hubs are about (PROTOCOL.md §13.5): a pure rule over the links
/// the peer manager has, so it is tested without sockets.
///
/// - An ordinary node with at least one hub linked (established) keeps every hub link and
///   at most `maxDirect` links it dialled to ordinary mDNS instances (the oldest); it dials no
///   other ordinary instance, and the surplus of those it dialled is closed. Static peers
///   (`--peer`, "config") are always dialled and kept; links other nodes dialled to it are
///   accepted as before (each of them follows the same rule, so they are few).
/// - With no hub linked the rule does nothing: the node dials every instance it finds (its own
///   mesh), and the instances held back are dialled again when the last hub link closes.
/// - A hub (`isHub`) dials only hubs (and its static peers): the ordinary nodes dial it.
struct HubPreference: Sendable, Equatable {
    /// Ordinary instances an ordinary node stays linked to (links it dialled) while a hub is linked.
    var maxDirect = 2
    /// This node runs as a hub.
    var isHub = false

    /// One link as the rule sees it.
    struct Link: Sendable, Equatable {
        /// The manager's serial (the older link has the smaller one).
        var serial: UInt64
        /// The link reaches a hub (dialled to an instance advertising one, or coming from its address).
        var hub: Bool
        /// Established (not only dialled).
        var established: Bool
        /// This node dialled it to an mDNS instance (not a static peer, not incoming).
        var dialledInstance: Bool

        init(serial: UInt64, hub: Bool, established: Bool, dialledInstance: Bool) {
            (self.serial, self.hub, self.established, self.dialledInstance) = (serial, hub, established, dialledInstance)
        }
    }

    /// Whether a hub is linked now.
    static func hubLinked(_ links: [Link]) -> Bool { links.contains { $0.hub && $0.established } }

    /// Whether to dial an mDNS instance (a hub if `hub`) now, given the links open (not closing).
    func mayDial(hub: Bool, links: [Link]) -> Bool {
        if hub { return true }
        if isHub { return false }
        guard Self.hubLinked(links) else { return true }
        return links.filter { !$0.hub && $0.dialledInstance }.count < maxDirect
    }

    /// The serials of the links to close now: the links to ordinary instances this node dialled
    /// beyond `maxDirect` (the newest ones) while a hub is linked; on a hub, all of them.
    func surplus(_ links: [Link]) -> [UInt64] {
        let direct = links.filter { !$0.hub && $0.dialledInstance }.sorted { $0.serial < $1.serial }
        if isHub { return direct.map(\.serial) }
        guard Self.hubLinked(links) else { return [] }
        return direct.dropFirst(maxDirect).map(\.serial)
    }
}
