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
/// - An ordinary node links to at most `maxHubs` hubs (hubs relay among themselves, so one is
///   enough and two survive one's loss): those found over mDNS on its own segment first, then
///   those found by wide-area DNS-SD; a local hub found later displaces a wide-area one. Only
///   established hub links count, so instances that claim `hub=1` and never complete a
///   handshake cannot keep a node from its real hubs; and the direct links it keeps mean a hub
///   that withholds records cannot cut it off either.
/// - A hub (`isHub`) dials only hubs, all it finds (and its static peers): the ordinary nodes
///   dial it.
struct HubPreference: Sendable, Equatable {
    /// Ordinary instances an ordinary node stays linked to (links it dialled) while a hub is linked.
    var maxDirect = 2
    /// Hubs an ordinary node links to at most.
    var maxHubs = 2
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
        /// Found over mDNS on this node's segment (false: by wide-area DNS-SD).
        var local: Bool

        init(serial: UInt64, hub: Bool, established: Bool, dialledInstance: Bool, local: Bool = true) {
            (self.serial, self.hub, self.established, self.dialledInstance, self.local) = (serial, hub, established, dialledInstance, local)
        }
    }

    /// Whether a hub is linked now.
    static func hubLinked(_ links: [Link]) -> Bool { links.contains { $0.hub && $0.established } }

    /// Whether to dial an instance (a hub if `hub`; found on this segment if `local`) now, given
    /// the links open (not closing).
    func mayDial(hub: Bool, local: Bool = true, links: [Link]) -> Bool {
        if hub {
            // Only established hub links count: an instance that says `hub=1` but never
            // completes a handshake must not keep the real hubs from being dialled.
            if isHub { return true }
            let hubs = links.filter { $0.hub && $0.established }
            return hubs.count < maxHubs || (local && hubs.contains { !$0.local })
        }
        if isHub { return false }
        guard Self.hubLinked(links) else { return true }
        return links.filter { !$0.hub && $0.dialledInstance }.count < maxDirect
    }

    /// The serials of the links to close now: the links to ordinary instances this node dialled
    /// beyond `maxDirect` (the newest ones) while a hub is linked, and the established hub links
    /// beyond `maxHubs` (wide-area ones before local ones, the newest first); on a hub, every
    /// link it dialled to an ordinary instance.
    func surplus(_ links: [Link]) -> [UInt64] {
        let direct = links.filter { !$0.hub && $0.dialledInstance }.sorted { $0.serial < $1.serial }
        if isHub { return direct.map(\.serial) }
        guard Self.hubLinked(links) else { return [] }
        let hubs = links.filter { $0.hub && $0.established }.sorted { a, b in
            a.local != b.local ? a.local : a.serial < b.serial
        }
        return hubs.dropFirst(maxHubs).map(\.serial) + direct.dropFirst(maxDirect).map(\.serial)
    }
}
