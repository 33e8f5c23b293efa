import MentorCrypto
import MentorNet

/// Decides when to dial each peer a node dials (PROTOCOL.md §13.4, §13.5): the static peers
/// (`--peer`, via "config") and the mDNS instances found (via "mdns", kept in a bounded
/// `DiscoveredTable`). A peer is dialled when it is configured or found; after a failed dial or
/// when its link ends it is redialled with exponential backoff (`initialBackoff` doubling to
/// `maxBackoff`) and jitter (between half and all of the delay, so peers do not redial in step),
/// never before a refusal of its address ends. A peer whose node is linked through another link
/// (the survivor of a duplicate pair) waits, parked, until that link closes. An instance that
/// says goodbye is no longer dialled; one silent for the table's `forgetAfter` is forgotten and
/// its slot reused once no link of its is left.
///
/// A value type with the clock and randomness passed in (like `SyncSession`'s `now:`): inputs
/// are found, lost, dial started, failed, link adopted, established, closed and "due"; the output
/// is each target's `dialAt` — dial this address at this instant — which the shell turns into
/// timers, and the slots `found` says to dial at once. Links are named by the shell's serials.
struct Redialer: Sendable {
    struct Settings: Sendable {
        var initialBackoff: Duration = .milliseconds(250)
        var maxBackoff: Duration = .seconds(30)
        var discovery = DiscoveredTable.Settings()
    }

    /// A peer we dial: a static one or an mDNS instance.
    struct Target: Sendable {
        var peer: PeerManager.StaticPeer
        var via: LinkOrigin
        /// The mDNS instance name, for discovered peers (nil once forgotten).
        var name: String?
        /// False once a discovered instance was lost or forgotten: no more dialling (its link, if any, stays).
        var active = true
        /// Failed attempts since the last link established (the backoff's exponent).
        var attempt = 0
        /// The link dialled to it (the shell's serial), from adoption until it closes, and
        /// whether that link was established.
        var link: UInt64?
        var linkUp = false
        /// The node the last link reached, and the IP address it reached (for refusals).
        var lastKey: SigningPublicKey?
        var lastHost: String?
        /// When the next dial is due (nil: none scheduled).
        var dialAt: ContinuousClock.Instant?
        /// Waiting for the link to `lastKey` (kept as a duplicate's survivor) to close.
        var parked = false
        /// Failed dials since the last link, for logging them once and then at a slowing rate.
        var unreachable = RecurringFailure()
        /// The instance advertises itself as a hub (TXT `hub=1`, PROTOCOL.md §13.5).
        var hub = false
        /// Found over mDNS on this node's segment (false: by wide-area DNS-SD, in a unicast domain).
        var local = true
        /// Not dialled while a hub is linked (`HubPreference`): no redial is scheduled until
        /// `releaseHeld` (the last hub link closed) or a new dial starts.
        var held = false
    }

    /// What `found` did, for the shell to act on and log.
    struct Found: Sendable, Equatable {
        /// Dial this slot now.
        var dial: Int?
        /// A new instance was kept (`dial` is its slot).
        var added = false
        /// The table is full of instances that answer: not kept (true the first time of a streak).
        var notKept = false
    }

    let settings: Settings
    private(set) var targets: [Target]
    private var discovered: DiscoveredTable
    /// Slots of forgotten instances, for new ones to reuse.
    private var freeSlots: [Int] = []
    private var fullReported = false
    /// Instances forgotten since the shell last took them (for its log): name and address.
    private var forgotten: [(name: String, host: String)] = []

    init(staticPeers: [PeerManager.StaticPeer], settings: Settings = Settings()) {
        self.settings = settings
        self.targets = staticPeers.map { Target(peer: $0, via: .config) }
        self.discovered = DiscoveredTable(settings: settings.discovery)
    }

    /// The mDNS instances kept now.
    var instances: [String] { discovered.names }

    /// Whether `host` is the address of an mDNS instance being dialled (an incoming link from
    /// it is "mdns": both ends dial, and one of the two links survives).
    func isDialledInstance(host: String) -> Bool {
        targets.contains { $0.via == .mdns && $0.active && $0.peer.host == host }
    }

    // MARK: Discovery

    /// An mDNS instance was found (or found again, maybe at a new address): dialled at once
    /// unless it is being dialled or linked already.
    mutating func found(name: String, peer: PeerManager.StaticPeer, hub: Bool = false, local: Bool = true,
                        now: ContinuousClock.Instant) -> Found {
        var result = Found()
        for stale in discovered.expired(now: now) where stale != name {
            // One with a link up answers (its link keeps it); the others are forgotten.
            if let slot = discovered.slot(of: stale), targets[slot].linkUp {
                discovered.answered(stale, now: now)
            } else {
                forget(stale)
            }
        }
        if let index = discovered.slot(of: name) {
            discovered.refound(name)
            let moved = targets[index].peer != peer || targets[index].hub != hub
            targets[index].peer = peer
            targets[index].hub = hub
            targets[index].local = local
            let wasActive = targets[index].active
            targets[index].active = true
            if wasActive && !moved { return result }
            if targets[index].link == nil && targets[index].dialAt == nil && (!targets[index].held || moved) {
                targets[index].attempt = 0
                result.dial = index
            }
            return result
        }
        if let victim = discovered.victim(now: now) { forget(victim) }
        guard !discovered.isFull else {
            result.notKept = !fullReported
            fullReported = true
            return result
        }
        fullReported = false
        var entry = Target(peer: peer, via: .mdns, name: name)
        entry.hub = hub
        entry.local = local
        let index: Int
        if let free = freeSlots.popLast() {
            targets[free] = entry
            index = free
        } else {
            targets.append(entry)
            index = targets.count - 1
        }
        discovered.insert(name, slot: index, now: now)
        result.dial = index
        result.added = true
        return result
    }

    /// An mDNS instance said goodbye or expired: no more dialling it (its link stays). False
    /// when it is not kept.
    mutating func lost(name: String) -> Bool {
        guard let index = discovered.slot(of: name) else { return false }
        discovered.lost(name)
        targets[index].active = false
        targets[index].dialAt = nil
        targets[index].parked = false
        targets[index].held = false
        return true
    }

    /// The instances forgotten (for their silence, or to make room) since the last call.
    mutating func takeForgotten() -> [(name: String, host: String)] {
        defer { forgotten = [] }
        return forgotten
    }

    /// Forgets an instance: not dialled again, its slot reused once no link of its is left.
    private mutating func forget(_ name: String) {
        guard let index = discovered.remove(name) else { return }
        targets[index].active = false
        targets[index].name = nil
        targets[index].dialAt = nil
        targets[index].parked = false
        targets[index].held = false
        if targets[index].link == nil { freeSlots.append(index) }
        forgotten.append((name, targets[index].peer.host))
    }

    // MARK: Dialling

    /// The shell dials `index` now (configured, found, or due): the address, or nil when the
    /// target is no longer dialled.
    mutating func startDial(_ index: Int) -> PeerManager.StaticPeer? {
        guard targets[index].active else { return nil }
        targets[index].dialAt = nil
        targets[index].parked = false
        targets[index].held = false
        return targets[index].peer
    }

    // MARK: Hubs (PROTOCOL.md §13.5)

    /// Whether the target in `index` advertises a hub.
    func isHub(_ index: Int) -> Bool { targets[index].hub }

    /// Whether `host` is the address of an active instance advertising a hub (an incoming link
    /// from it is a hub's).
    func isHubHost(_ host: String) -> Bool {
        targets.contains { $0.hub && $0.active && $0.peer.host == host }
    }

    /// `index` is not dialled while a hub is linked (`HubPreference`): its pending redial is
    /// dropped and none is scheduled when its link closes, until `releaseHeld`.
    mutating func hold(_ index: Int) {
        targets[index].held = true
        targets[index].dialAt = nil
        targets[index].parked = false
    }

    /// No hub is linked any more: every held target that is still found and has no link is due
    /// now (the node falls back to its own mesh); with `onlyHubs`, the held hubs only (a hub
    /// link closed, another remains). Returns their slots.
    mutating func releaseHeld(now: ContinuousClock.Instant, onlyHubs: Bool = false) -> [Int] {
        var released: [Int] = []
        for index in targets.indices where targets[index].held && (!onlyHubs || targets[index].hub) {
            targets[index].held = false
            guard targets[index].active, targets[index].link == nil else { continue }
            targets[index].attempt = 0
            targets[index].dialAt = now
            released.append(index)
        }
        return released
    }

    /// The instance in `index` turned out to be this node itself (its handshake said so: our
    /// own address, published in a wide-area domain): not dialled again until it is found anew.
    mutating func itsUs(_ index: Int) {
        targets[index].active = false
        targets[index].dialAt = nil
        targets[index].parked = false
        targets[index].held = false
    }

    /// Targets held now (for tests and `status`).
    var heldCount: Int { targets.filter { $0.held && $0.active }.count }

    /// A dial failed: schedules the redial (`dialAt`). Returns, when the failure is worth a log
    /// line, how many failures since the last one went unreported.
    mutating func dialFailed(_ index: Int, now: ContinuousClock.Instant, refusedUntil: (String) -> ContinuousClock.Instant?,
                             random: inout some RandomNumberGenerator) -> Int? {
        let missed = targets[index].unreachable.failed(now: now)
        scheduleRedial(index, now: now, refusedUntil: refusedUntil, random: &random)
        return missed
    }

    /// `dialAt` has come: whether to dial now. A target whose node is linked already (`isLinked`)
    /// is parked instead, and redialled when that link closes.
    /// The machine's network changed: each static peer waiting for its backoff to pass (a
    /// `dialAt` set: not linked, not being dialled, not parked) is due now and its backoff starts
    /// over — failures on the old network say nothing about the new one. mDNS instances are left
    /// to discovery (it browses again). A refusal of the peer's address still holds: such a
    /// peer is due when it ends, if that is later. Returns how many were made due earlier.
    mutating func networkChanged(now: ContinuousClock.Instant, refusedUntil: (String) -> ContinuousClock.Instant?) -> Int {
        var count = 0
        for index in targets.indices where targets[index].via == .config && targets[index].active
            && targets[index].link == nil && !targets[index].parked {
            guard let due = targets[index].dialAt else { continue }
            var at = now
            for host in [targets[index].peer.host, targets[index].lastHost].compactMap({ $0 }) {
                if let until = refusedUntil(host) { at = max(at, until) }
            }
            targets[index].attempt = 0
            guard at < due else { continue }
            targets[index].dialAt = at
            count += 1
        }
        return count
    }

    mutating func due(_ index: Int, isLinked: (SigningPublicKey) -> Bool) -> Bool {
        targets[index].dialAt = nil
        if let key = targets[index].lastKey, isLinked(key) {
            targets[index].parked = true
            return false
        }
        return true
    }

    /// Backoff: `initialBackoff · 2^attempt` up to `maxBackoff`, times a jitter in [0.5, 1);
    /// never before a refusal of the peer's address (or the address its last link reached) ends.
    private mutating func scheduleRedial(_ index: Int, now: ContinuousClock.Instant, refusedUntil: (String) -> ContinuousClock.Instant?,
                                         random: inout some RandomNumberGenerator) {
        guard targets[index].active, targets[index].dialAt == nil, !targets[index].held else { return }
        if let name = targets[index].name, discovered.isExpired(name, now: now) {
            forget(name)
            return
        }
        let attempt = targets[index].attempt
        targets[index].attempt += 1
        let capped = min(settings.initialBackoff * Double(1 << min(attempt, 20)), settings.maxBackoff)
        var at = now + capped * (0.5 + 0.5 * Double.random(in: 0..<1, using: &random))
        for host in [targets[index].peer.host, targets[index].lastHost].compactMap({ $0 }) {
            if let until = refusedUntil(host) { at = max(at, until) }
        }
        targets[index].dialAt = at
    }

    // MARK: Links

    /// A dial to `index` connected: its link (by serial) reached `host`.
    mutating func adopted(_ index: Int, link: UInt64, host: String) {
        targets[index].link = link
        targets[index].lastHost = host
    }

    /// The link dialled to `index` was established with the node `key` (and kept): the backoff
    /// starts again, and an instance answers.
    mutating func established(_ index: Int, link: UInt64, key: SigningPublicKey, now: ContinuousClock.Instant) {
        targets[index].attempt = 0
        targets[index].lastKey = key
        targets[index].unreachable.recovered()
        if targets[index].link == link { targets[index].linkUp = true }
        if let name = targets[index].name { discovered.answered(name, now: now) }
    }

    /// The link dialled to `index` reached `key` but was closed as a duplicate of another link.
    mutating func duplicate(_ index: Int, key: SigningPublicKey) { targets[index].lastKey = key }

    /// A link closed: the one dialled to `index` (if it is still that target's link) is
    /// redialled, or its slot freed if its instance was forgotten meanwhile; targets parked
    /// behind a link to `key` are redialled unless the node is still linked (`keyStillLinked`).
    mutating func closed(_ index: Int?, link: UInt64, key: SigningPublicKey?, wasEstablished: Bool, keyStillLinked: Bool,
                         now: ContinuousClock.Instant, refusedUntil: (String) -> ContinuousClock.Instant?,
                         random: inout some RandomNumberGenerator) {
        if let index, targets[index].link == link {
            targets[index].link = nil
            targets[index].linkUp = false
            if let name = targets[index].name, wasEstablished { discovered.answered(name, now: now) }
            if targets[index].via == .mdns, targets[index].name == nil, !freeSlots.contains(index) {
                freeSlots.append(index)   // forgotten while this link was up
            } else {
                scheduleRedial(index, now: now, refusedUntil: refusedUntil, random: &random)
            }
        }
        if let key, !keyStillLinked {
            for index in targets.indices where targets[index].parked && targets[index].lastKey == key {
                targets[index].parked = false
                scheduleRedial(index, now: now, refusedUntil: refusedUntil, random: &random)
            }
        }
    }
}
