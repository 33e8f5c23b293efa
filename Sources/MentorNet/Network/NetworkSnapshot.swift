import MentorSystem

/// The machine's usable addresses at one moment: those of interfaces that are up, have carrier
/// and are not loopback, by interface. A value, so what changed between two readings is a pure
/// function (`NetworkSnapshot.Change`), tested without a network.
public struct NetworkSnapshot: Sendable, Equatable, CustomStringConvertible {
    /// Interface name → its addresses (canonical text, link-local IPv6 with `%interface`), sorted.
    public private(set) var interfaces: [String: [String]]

    public init(_ addresses: [InterfaceAddress]) {
        var interfaces: [String: [String]] = [:]
        for a in addresses where a.running && !a.loopback {
            interfaces[a.interface, default: []].append(a.address)
        }
        self.interfaces = interfaces.mapValues { Array(Set($0)).sorted() }
    }

    public init(interfaces: [String: [String]] = [:]) {
        self.interfaces = interfaces.filter { !$0.value.isEmpty }.mapValues { Array(Set($0)).sorted() }
    }

    /// Every usable address.
    public var addresses: Set<String> { Set(interfaces.values.joined()) }

    /// Whether `address` (a link's local address, canonical) is still one of ours. A wildcard or
    /// loopback address always is: a link over loopback never depends on the network.
    public func holds(_ address: String) -> Bool {
        if address == "0.0.0.0" || address == "::" || address.hasPrefix("127.") || address == "::1" { return true }
        return addresses.contains(address)
    }

    /// "eth0 169.254.77.3 fe80::1%eth0; wlan0 …", interfaces in name order; "no network" when empty.
    public var description: String {
        guard !interfaces.isEmpty else { return "no network" }
        return interfaces.keys.sorted().map { ([$0] + interfaces[$0]!).joined(separator: " ") }.joined(separator: "; ")
    }

    /// What changed from one reading to the next.
    public struct Change: Sendable, Equatable {
        public var old: NetworkSnapshot
        public var new: NetworkSnapshot
        /// Addresses that were usable and are not now (removed, or their interface lost carrier).
        public var vanished: Set<String> { old.addresses.subtracting(new.addresses) }
        /// Addresses usable now that were not.
        public var appeared: Set<String> { new.addresses.subtracting(old.addresses) }

        /// The machine may be on another segment now: an address went, or an interface came
        /// (or came back with its carrier). An address merely added to an interface that stays
        /// is not that: the same neighbours are there.
        public var mayHaveMoved: Bool {
            !vanished.isEmpty || !Set(new.interfaces.keys).subtracting(old.interfaces.keys).isEmpty
        }

        public init(old: NetworkSnapshot, new: NetworkSnapshot) { (self.old, self.new) = (old, new) }
    }
}
