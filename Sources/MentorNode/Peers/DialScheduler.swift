import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import MentorSystem

/// What the dial scheduler needs of the shell that owns the links (`PeerManager`), on the
/// shell's queue.
protocol DialShell: ShellQueue {
    /// Connects to `peer` (the I/O): the link comes back as the shell adopts it for `slot`
    /// (`adopted`), a failure as `dialFailed`.
    func connect(_ peer: PeerManager.StaticPeer, slot: Int)
    /// Until when `host` is refused, if it is (a redial waits for the end).
    func refusedUntil(_ host: String) -> ContinuousClock.Instant?
    /// Whether the node `key` is linked now (an established link, not closing).
    func isLinked(_ key: SigningPublicKey) -> Bool
    /// Whether to dial the mDNS instance (a hub if `hub`) now (`HubPreference`); one that may
    /// not is held until `releaseHeld`.
    func mayDialInstance(hub: Bool, local: Bool) -> Bool
    /// How many instances are held now (for `status`, published where it never waits on the queue).
    func heldChanged(_ count: Int)
}

extension DialShell {
    func mayDialInstance(hub: Bool, local: Bool) -> Bool { true }
    func heldChanged(_ count: Int) {}
}

/// Dialling the static peers and the mDNS instances found, for a shell: the `Redialer`'s
/// decisions (when to dial whom: backoff, jitter, refusals, parking, forgetting) carried out —
/// one timer per target that has a `dialAt`, replaced when the instant changes and cancelled
/// when it has none; when one fires the target is dialled, or parked if its node is linked
/// through another link — and the log lines about it (an unreachable peer at info once, then at
/// a slowing rate; instances found, lost and forgotten at debug). Owned by the shell, which
/// hands over the events (found, lost, a dial failed, a link adopted, established, kept as a
/// duplicate's loser, closed) and does the connecting through `DialShell`.
///
/// Confinement: everything here is on the shell's queue; the clock, the randomness (the
/// jitter) and the logger are injected. `@unchecked Sendable` for that reason (its timers
/// capture it weakly and run on that queue).
final class DialScheduler: @unchecked Sendable {
    /// Set once by the shell that owns this scheduler (weak: the shell owns the scheduler).
    weak var shell: (any DialShell)?
    private let logger: any Logger
    private let clock: @Sendable () -> ContinuousClock.Instant

    // Confined to the shell's queue:
    /// When to dial whom (slots are `PeerConnection.staticIndex`).
    private(set) var redialer: Redialer
    private var random: InjectedRandom
    /// The timers that carry out the redialer's `dialAt`s, by slot.
    private var timers: [Int: (at: ContinuousClock.Instant, timer: DispatchWorkItem)] = [:]

    init(staticPeers: [PeerManager.StaticPeer], settings: Redialer.Settings, random: any RandomNumberGenerator & Sendable,
         logger: any Logger, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.redialer = Redialer(staticPeers: staticPeers, settings: settings)
        self.random = InjectedRandom(source: random)
        self.logger = logger
        self.clock = clock
    }

    /// The address to dial of those an mDNS instance resolved to (PROTOCOL.md, "Addresses"): the
    /// first IPv4 one; else the first IPv6 link-local one with its scope (the instance was found
    /// over multicast on that very link, so it answers there, whatever routes exist); else the
    /// first other IPv6 one (ULA or global); else the first.
    static func preferred(_ addresses: [PeerAddress]) -> PeerAddress? {
        addresses.first(where: { !HostPort.isIPv6($0.host) })
            ?? addresses.first(where: { HostPort.isLinkLocalIPv6($0.host) && HostPort.scope(of: $0.host) != nil })
            ?? addresses.first(where: { HostPort.isIPv6($0.host) && !HostPort.isLinkLocalIPv6($0.host) })
            ?? addresses.first
    }

    /// The mDNS instances kept now.
    var instances: [String] { redialer.instances }
    /// "config" or "mdns": how the target in `slot` came to be dialled.
    func via(_ slot: Int) -> LinkOrigin { redialer.targets[slot].via }
    /// Whether `host` is an mDNS instance being dialled (an incoming link from it is "mdns").
    func isDialledInstance(host: String) -> Bool { redialer.isDialledInstance(host: host) }
    /// Timers pending now, by slot (for tests).
    var pendingTimers: [Int: ContinuousClock.Instant] { timers.mapValues(\.at) }

    /// Dials every static peer (the shell starts).
    func start() {
        for index in redialer.targets.indices { dial(index) }
    }

    /// The shell stops: every redial timer is cancelled.
    func cancelTimers() {
        for (_, entry) in timers { entry.timer.cancel() }
        timers = [:]
    }

    // MARK: Discovery

    /// An mDNS instance was found (or found again, maybe at a new address) at `address`: dialled
    /// unless it is being dialled or linked already. Whether it was new (the shell publishes).
    func found(name: String, address: PeerAddress, hub: Bool = false, local: Bool = true) -> Bool {
        let found = redialer.found(name: name, peer: PeerManager.StaticPeer(host: address.host, port: address.port), hub: hub,
                                   local: local, now: clock())
        logForgotten()
        if found.notKept {
            logger.info("an mDNS instance was not kept: the table of found instances is full of peers that answer",
                        ["dnssd.instance": name, "capacity": "\(redialer.settings.discovery.capacity)"])
        }
        if found.added { logger.debug("peer found over mDNS", ["dnssd.instance": name, "peer.address": "\(address)"]) }
        if let index = found.dial { dial(index) }
        syncTimers()
        return found.added
    }

    /// An mDNS instance said goodbye or expired: no more dialling it (its link stays). False
    /// when it was not kept.
    func lost(name: String) -> Bool {
        guard redialer.lost(name: name) else { return false }
        syncTimers()
        logger.debug("peer lost over mDNS", ["dnssd.instance": name])
        return true
    }

    /// The machine's network changed: static peers waiting for a redial are dialled now
    /// (`Redialer.networkChanged`). Returns how many.
    func networkChanged() -> Int {
        let count = redialer.networkChanged(now: clock(), refusedUntil: refusedUntil)
        syncTimers()
        return count
    }

    // MARK: Dialling

    private func dial(_ index: Int) {
        guard let shell, !shell.isStopped else { return }
        let target = redialer.targets[index]
        if target.via == .mdns, target.active, !shell.mayDialInstance(hub: target.hub, local: target.local) {
            redialer.hold(index)
            shell.heldChanged(redialer.heldCount)
            logger.debug(target.hub ? "hub not dialled: enough hubs are linked" : "instance not dialled: a hub is linked",
                         ["dnssd.instance": target.name ?? "?", "peer.address": target.peer.host])
            return
        }
        guard let peer = redialer.startDial(index) else { return }
        shell.connect(peer, slot: index)
    }

    // MARK: Hubs

    /// Whether the target in `slot` advertises a hub.
    func isHub(_ slot: Int) -> Bool { redialer.isHub(slot) }
    /// Whether the target in `slot` was found on this segment (mDNS) rather than by wide-area DNS-SD.
    func isLocal(_ slot: Int) -> Bool { redialer.targets[slot].local }
    /// The instance dialled for `slot` is this node itself: not dialled again.
    func itsUs(_ slot: Int) {
        redialer.itsUs(slot)
        syncTimers()
    }
    /// Whether `host` is the address of an instance advertising a hub.
    func isHubHost(_ host: String) -> Bool { redialer.isHubHost(host) }
    /// Instances held back because a hub is linked.
    var heldCount: Int { redialer.heldCount }

    /// The link dialled for `slot` is closed as surplus while a hub is linked: not redialled
    /// until `releaseHeld`.
    func hold(_ slot: Int) {
        redialer.hold(slot)
        syncTimers()
    }

    /// No hub is linked any more: the instances held back are dialled now (the mesh again); with
    /// `onlyHubs`, the hubs held back (a hub link closed, another remains). Returns how many.
    func releaseHeld(onlyHubs: Bool = false) -> Int {
        let released = redialer.releaseHeld(now: clock(), onlyHubs: onlyHubs)
        for index in released { dial(index) }
        syncTimers()
        return released.count
    }

    /// Dialling `peer` for `slot` failed: redialled with backoff, logged at info once, then at
    /// a slowing rate, until a link works.
    func dialFailed(_ slot: Int, peer: PeerManager.StaticPeer, error: any Error) {
        let address = "\(PeerAddress(host: peer.host, port: peer.port))"
        if let missed = redialer.dialFailed(slot, now: clock(), refusedUntil: refusedUntil, random: &random) {
            let target = redialer.targets[slot]
            logger.info("peer unreachable; redialling with backoff",
                        ["peer.address": address, "via": target.via.rawValue, "error": "\(error)",
                         "failures": "\(target.unreachable.streak)", "unreported": "\(missed)"])
        } else {
            logger.debug("dialling a peer failed", ["peer.address": address, "error": "\(error)"])
        }
        logForgotten()
        syncTimers()
    }

    private func refusedUntil(_ host: String) -> ContinuousClock.Instant? { shell?.refusedUntil(host) }

    /// Makes the timers match the redialer's `dialAt`s (a target's timer is replaced when its
    /// instant changes, cancelled when it has none). When one fires, the target is dialled —
    /// or parked, if its node is linked through another link.
    private func syncTimers() {
        guard let shell, !shell.isStopped else { return }
        shell.heldChanged(redialer.heldCount)
        for (index, target) in redialer.targets.enumerated() where timers[index]?.at != target.dialAt {
            timers.removeValue(forKey: index)?.timer.cancel()
            guard let at = target.dialAt else { continue }
            let timer = DispatchWorkItem { [weak self] in
                guard let self, let shell = self.shell, !shell.isStopped, self.timers[index]?.at == at else { return }
                self.timers[index] = nil
                if self.redialer.due(index, isLinked: { shell.isLinked($0) }) { self.dial(index) }
                self.syncTimers()
            }
            timers[index] = (at, timer)
            shell.schedule(timer, at: at)
        }
    }

    /// Logs the instances the redialer forgot (they stayed silent, or made room for new ones).
    private func logForgotten() {
        for (name, host) in redialer.takeForgotten() {
            logger.debug("mDNS instance forgotten: it did not answer", ["dnssd.instance": name, "peer.address": host])
        }
    }

    // MARK: Links

    /// The shell adopted a link (serial `link`, reaching `host`); `slot`: the target it was dialled for.
    func adopted(_ slot: Int?, link: UInt64, host: String) {
        if let slot { redialer.adopted(slot, link: link, host: host) }
    }

    /// The link dialled for `slot` was established with the node `key`, and kept.
    func established(_ slot: Int?, link: UInt64, key: SigningPublicKey) {
        if let slot { redialer.established(slot, link: link, key: key, now: clock()) }
    }

    /// The link dialled for `slot` reached `key` but closes as a duplicate of another link.
    func duplicate(_ slot: Int?, key: SigningPublicKey) {
        if let slot { redialer.duplicate(slot, key: key) }
    }

    /// A link closed (the shell no longer keeps it): its target is redialled, and so are those
    /// parked behind the node `key` unless that node is still linked.
    func closed(_ slot: Int?, link: UInt64, key: SigningPublicKey?, wasEstablished: Bool) {
        let keyStillLinked = key.map { shell?.isLinked($0) ?? false } ?? false
        redialer.closed(slot, link: link, key: key, wasEstablished: wasEstablished, keyStillLinked: keyStillLinked,
                        now: clock(), refusedUntil: refusedUntil, random: &random)
        logForgotten()
        syncTimers()
    }
}

/// `PeerManager.Settings.random` as a concrete generator (the redialer takes `some RandomNumberGenerator`).
struct InjectedRandom: RandomNumberGenerator {
    var source: any RandomNumberGenerator & Sendable
    mutating func next() -> UInt64 { source.next() }
}

extension PeerManager: DialShell {}
