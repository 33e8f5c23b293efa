import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import MentorSystem

/// Connects the node to its peers: accepts on the peer listener (responders), dials the static
/// peers and the mDNS instances found (initiators), and runs one `SyncSession` per established
/// link in a `SyncDriver`, carrying out its directives against the node and the replica. This
/// class is the shell: it owns the listener and the links (`PeerConnection`s, confined to
/// `queue`), adopts, establishes and closes them, and wires the pieces in `Peers/`, which make
/// the decisions and own their state and timers — the clock and randomness injected, each
/// tested on its own over fakes — and call back here through narrow protocols:
///
/// - Sync v2 (PROTOCOL.md §13.3): each side says hello with a fresh salt; the side that dialled
///   starts a reconciliation round at once, every `reconInterval`, and after applying a fork
///   variant. Each link's driver reaches the replica, the wire and the pipelines through its
///   `LinkHost` (`LinkShell`); subtree reads keep the replica's cursor there (`CursorTable`).
/// - Dialling: `DialScheduler` (`DialShell`) carries out `Redialer`'s decisions — backoff with
///   jitter, never before a refusal of the address ends, a target parked while its node is
///   linked elsewhere, mDNS instances found, lost and forgotten (a bounded `DiscoveredTable`).
/// - Two links to the same node collapse to one (`DuplicateLinks`): both ends keep the link
///   whose initiator has the smaller node key and close the other.
/// - Defence: a session's `.close` closes its link, the reason logged once with the peer's
///   address (`.end`, another protocol version, without blame). `PeerDefence` says whose fault a
///   link's end is — a failed handshake, a bad frame, a broken protocol, records whose refusal
///   proves an offence (`RecordError.Code.isOffence`, read by `RefusalVerdict`) — and refuses
///   the address for a growing interval (`PenaltyBox`: the listener closes its connections at
///   once). What is nobody's fault is held until due, kept as evidence or asked for again
///   later, and the session goes on (PROTOCOL.md §10.1).
/// - Applying: `ApplyPipeline` (`ApplyShell`) verifies and applies received batches off
///   `queue` — records per second paced by acks (`AckPacer`), the storage budgets by
///   `BudgetGate` (`StorageBudget`: past the node-wide one strangers' records are declined, no
///   offence), batches waiting applied together (`ApplyBacklog`).
/// - Push (PROTOCOL.md §13.7): `PushRelay` (`PushShell`/`PushLink`, over `PushLinks`) sends
///   what is applied here (`Node.changes`) to every link but the one it came over — bodies on
///   the links the push tree keeps eager, `ihave` on the others — grafts an announced ID whose
///   body does not come within `graftTimeout`, and prunes a link its duplicates came over.
/// - Nearby now: `NearbyAccounts` (`NearbyShell`/`NearbyLink`) sends `here` after hello and
///   after a signup, takes peers' at their rate (a `MessageGate`), and hands the accounts direct
///   links named (never relays) to the feed and the budget gate.
/// - Linking a device (PROTOCOL.md §13.8): `LinkOffers` (`LinkOfferShell`/`LinkOfferLink`)
///   sends this node's device offer (`offerLink`) to every link that is up and to each new one,
///   takes peers' at their rate (a `MessageGate`), and keeps them, bounded, for the node to
///   find by code ID (`linkOffers(codeID:)`).
/// - Photos: `PhotoExchange` (`PhotoShell`/`PhotoLink`, over `BlobFetcher` and `PhotoSync`)
///   fetches the photos current cards name and the replica lacks, one blob per link each way,
///   once links catching up have caught up, within the photo and author budgets (§13.4, §13.6).
/// - Notifications: `PeerNotifier` (`NoticeShell`/`NoticeLink`) publishes the connected peers
///   on the `StatusBoard` (what `status` reads without waiting), `event.peer` when a link is
///   established or ends, and `event.sync` at most every `syncEventInterval` per link and when
///   it caught up (`SyncEventThrottle`).
/// - Settings: `PeerManager.Settings` (`Peers/PeerSettings.swift`).
///
/// Threading: the listener, the links, the dialers and all session state live on `queue` (its
/// own, never the node's). Replica reads run synchronously on `queue`; `Node.applyRemote` runs
/// on the pipeline's `applyQueue` (serial) and its outcome comes back to `queue`; the node
/// never waits on `queue` (its `NodeChanges` subscription hops here with `async`, and `peers` reads a
/// lock-protected snapshot), so there is no cycle. `@unchecked Sendable`: mutable state is
/// confined to `queue` — the pieces' too — except what `status` reads (`StatusBoard`, behind
/// its lock), the storage budgets, which `BudgetGate` confines (to `applyQueue`, or behind its
/// own lock), and the pipeline's, which `ApplyPipeline` confines.
public final class PeerManager: @unchecked Sendable {
    public let settings: Settings
    /// Where peers reach us (the bound port when `--listen` said 0).
    public let listenAddress: PeerAddress
    let node: Node
    let logger: any Logger
    private let myKey: SigningPublicKey
    let queue = DispatchQueue(label: "MentorNode.PeerManager")
    private var listener: PeerListener!

    // Confined to queue:
    var connections: [ObjectIdentifier: PeerConnection] = [:]
    private var serials: UInt64 = 0
    var stopped = false
    /// Who is at fault when a link ends, and the refusals of their addresses.
    var defence: PeerDefence

    // The pieces (each one's shell is this manager, set in `init`; see above):
    let dials: DialScheduler
    let pipeline: ApplyPipeline<PeerManager>
    let photos: PhotoExchange<PeerManager>
    let relay: PushRelay<PeerManager>
    let nearby: NearbyAccounts<PeerManager>
    let offers: LinkOffers<PeerManager>
    let notifier: PeerNotifier<PeerManager>
    /// The storage budgets (on `applyQueue` or `queue` as each method says; behind its own lock).
    private let budgetGate: BudgetGate
    /// What `peers`, `recordsReceived` and `pushCounters` read without waiting on `queue`.
    let board = StatusBoard()

    /// Binds `listener` (accepting starts with `start()`).
    public init(node: Node, listener tcp: TCPListener, staticPeers: [StaticPeer], settings: Settings = Settings(),
                logger: some Logger = DiscardingLogger()) {
        self.node = node
        self.settings = settings
        self.logger = logger
        self.listenAddress = tcp.address
        self.myKey = node.nodeKeys.publicKey
        self.defence = PeerDefence(settings: settings.penalties)
        self.dials = DialScheduler(staticPeers: staticPeers, settings: .init(initialBackoff: settings.initialBackoff,
                                                                            maxBackoff: settings.maxBackoff, discovery: settings.discovery),
                                   random: settings.random, logger: logger, clock: settings.clock)
        self.relay = PushRelay(lazyPush: settings.lazyPush, graftTimeout: settings.graftTimeout, held: { [replica = node.replica] ids in
            // A failed read holds none (a graft then asks for what we may hold: a duplicate, no harm).
            guard let records = try? replica.reconRecords(ids: ids) else { return [] }
            return Set(records.map { VerifiedRecord.id(of: $0) })
        }, board: board, clock: settings.clock)
        let budgetGate = BudgetGate(replica: node.replica, localAccounts: { node.localAccounts() }, authorBudget: settings.authorBudget,
                                    budget: .init(maxAccounts: settings.foreignAccountsMax, maxBytes: settings.foreignBytesMax),
                                    logger: logger)
        self.budgetGate = budgetGate
        self.nearby = NearbyAccounts(localAccounts: { node.localAccounts() }, setNearby: { all in
            node.setNearby(all)
            budgetGate.setNearby(all)
        }, clock: settings.clock)
        self.offers = LinkOffers(clock: settings.clock, now: settings.now)
        self.notifier = PeerNotifier(board: board, interval: settings.syncEventInterval, broadcast: { node.broadcast($0, $1) },
                                     clock: settings.clock)
        self.photos = PhotoExchange(fetcher: .init(retry: settings.blobRetry, deferral: settings.photoDeferral,
                                                   photoBudget: settings.photoBudget, authorBudget: settings.authorBudget),
                                    rules: .init(lookupInterval: settings.photoLookupInterval, answerTimeout: settings.blobAnswerTimeout),
                                    store: PhotoStore(node: node), logger: logger, clock: settings.clock)
        self.pipeline = ApplyPipeline(queue: queue, store: ApplyStore(node: node), budgetGate: budgetGate,
                                      campus: node.campus, localAccounts: { node.localAccounts() },
                                      recordsPerApply: settings.recordsPerApply, logger: logger, clock: settings.clock,
                                      wallClock: settings.now)
        var listenerSettings = settings.listener
        listenerSettings.link = settings.link
        self.listener = PeerListener(listener: tcp, identity: node.nodeKeys, queue: queue, settings: listenerSettings,
                                     logger: logger) { [unowned self] link in
            self.adopt(link, via: .incoming, staticIndex: nil)
        }
        listener.refusal = { [unowned self] host in self.defence.refusalReason(host, now: self.settings.clock()) }
        pipeline.shell = self
        photos.shell = self
        dials.shell = self
        relay.shell = self
        nearby.shell = self
        offers.shell = self
        notifier.shell = self
    }

    /// Starts accepting and dialling; hooks the node's applied records to the sessions.
    public func start() {
        node.changes.subscribe { [weak self] change in
            guard let self else { return }
            switch change {
            case .applied(let records): self.queue.async { self.localRecordsAdded(records) }
            case .accountsChanged: self.queue.async { self.nearby.accountsChanged() }
            }
        }
        listener.start()
        queue.async { [self] in
            dials.start()
            pipeline.scheduleDueRelease()
        }
    }

    /// Stops accepting and dialling and closes every link; afterwards nothing touches the node
    /// or the replica. Returns once that holds.
    public func stop() {
        listener.close()
        queue.sync {
            stopped = true
            dials.cancelTimers()
            pipeline.cancelTimers()
            photos.cancelTimers()
            relay.cancelTimers()
            for connection in connections.values {
                connection.cancelTimers()
                connection.link.close()
            }
            connections = [:]
            notifier.snapshot()
        }
        // A batch being applied finishes; none starts after this.
        pipeline.stop()
    }

    /// The connected peers (established links), for `runtimeInfo().peers`. Never waits on `queue`.
    public var peers: [PeerInfo] { board.peers }
    /// Records received from peers since start, over every link, duplicates included (what
    /// `status` shows as `recordsReceived`: how many bodies reached this node per record written).
    public var recordsReceived: Int { board.recordsReceived }
    /// Lazy push (`status.sync`): bodies received (as `recordsReceived`), those of them already
    /// held (duplicates), and record IDs peers announced in `ihave`.
    public var pushCounters: (bodies: Int, duplicates: Int, announced: Int) { board.pushCounters }
    /// The node-wide storage budget now (`status.storage`). Never waits on `queue`.
    public var storage: StorageStatus { budgetGate.storage }
    /// Offers this node's device for linking (PROTOCOL.md §13.8; nil: withdraws it): sent to
    /// every established link now and to each link that comes up while it stands — until it is
    /// withdrawn or replaced, or its `expires` (at most `LinkOffer.lifetime` from now) passes by
    /// `settings.now`. Returns at once; the sending happens on the manager's queue.
    public func offerLink(_ offer: LinkOffer?) {
        queue.async { [self] in offers.offer(offer) }
    }

    /// The device offers linked peers sent under `codeID` and still live, newest first (the
    /// node then looks for the one its code `matches`). Never waits on `queue`.
    public func linkOffers(codeID: UInt16) -> [LinkOffer] { offers.offers(codeID: codeID) }

    /// Times the replica was asked for the photos it lacks (for tests: work, not time).
    public var photoLookupCount: Int { queue.sync { photos.listings } }
    /// Blobs received and stored since start (for tests and metrics).
    public var blobsFetched: Int { photos.blobsFetched }

    // MARK: Discovered peers

    /// An mDNS instance was found (or found again, maybe at a new address): dial it unless it is
    /// being dialled or linked already (`DialScheduler`). Who it is, the handshake decides; one
    /// whose handshake fails is redialled with backoff, and not before a refusal of its address ends.
    public func discovered(name: String, addresses: [PeerAddress], hub: Bool = false, local: Bool = true) {
        queue.async { [self] in
            guard !stopped, let address = DialScheduler.preferred(addresses) else { return }
            var relabelled = false
            for c in connections.values where c.via == .incoming && c.link.remote.host == address.host {
                c.via = .mdns   // it dialled us first
                relabelled = true
            }
            // A hub that dialled us before we found it (two hubs finding each other at once: the
            // survivor of the pair may be its link): that link is a hub's from now on.
            var hubFound = false
            if hub {
                for c in connections.values where c.staticIndex == nil && !c.hub && c.link.remote.host == address.host {
                    c.hub = true
                    hubFound = true
                }
            }
            if relabelled || hubFound { notifier.snapshot() }
            if hubFound { applyHubPreference() }
            if dials.found(name: name, address: address, hub: hub, local: local) { notifier.snapshot() }
        }
    }

    /// The mDNS instances kept now (for tests).
    public var discoveredInstances: [String] { queue.sync { dials.instances } }

    /// An mDNS instance said goodbye or expired: stop dialling it. A link to it stays while it
    /// works (keep-alives end it when the host is gone; an Avahi restart on either side must not).
    public func lost(name: String) {
        queue.async { [self] in
            if dials.lost(name: name) { notifier.snapshot() }
        }
    }

    // MARK: Network changes

    /// The machine's addresses changed (`NetworkWatch`): every link whose local address is no
    /// longer usable — removed, or its interface lost carrier (a laptop moved to another network)
    /// — is closed at once, nobody's fault, instead of waiting for its silence timeout; when the
    /// machine may be on another network (`Change.mayHaveMoved`) the static peers waiting for a
    /// redial are dialled now (their backoff forgotten: the old network's failures say nothing
    /// about the new one; a refusal of their address still holds). Links over addresses that
    /// remain are left alone: if their path went with the move, keep-alives end them
    /// (`PeerLink.Settings.silenceTimeout`).
    /// Returns at once; the closing happens on the manager's queue.
    public func networkChanged(_ change: NetworkSnapshot.Change) {
        queue.async { [self] in
            guard !stopped else { return }
            var closed = 0
            for connection in connections.values.sorted(by: { $0.serial < $1.serial })
            where !connection.closing && connection.link.local.host != "?" && !change.new.holds(connection.link.local.host) {
                closed += 1
                end(connection, "the network changed: this machine no longer has the link's address \(connection.link.local.host)")
            }
            // Static peers are dialled again only when the machine may be on another network:
            // an address merely added (or an interface of a container host coming up) says
            // nothing about whether they are reachable now.
            let redialled = change.mayHaveMoved ? dials.networkChanged() : 0
            logger.log(closed + redialled > 0 ? .info : .debug, "links checked after a network change",
                       ["links.closed": "\(closed)", "peers.redialled": "\(redialled)"])
        }
    }

    // MARK: Links (on queue)

    func adopt(_ link: PeerLink, via: LinkOrigin, staticIndex: Int?) {
        guard !stopped else { link.close(); return }
        serials += 1
        let connection = PeerConnection(link: link, via: via, staticIndex: staticIndex,
                                    pacer: AckPacer(recordsPerSecond: settings.recordsPerSecond, burst: settings.recordsBurst, now: settings.clock()),
                                    serial: serials,
                                    here: MessageGate(tag: SyncMessage.hereTag, burst: settings.hereBurst, period: settings.herePeriod),
                                    linkOffers: MessageGate(tag: SyncMessage.linkTag, burst: settings.linkOfferBurst,
                                                            period: settings.linkOfferPeriod))
        connection.driver = SyncDriver(session: SyncSession(role: link.role == .initiator ? .initiator : .responder,
                                                            settings: settings.sync, hashing: ReconHash.hashing),
                                       settings: settings.driver, host: LinkHost(shell: self, connection: connection, clock: settings.clock))
        connection.hub = staticIndex.map { dials.isHub($0) } ?? false
        let id = ObjectIdentifier(connection)
        connections[id] = connection
        dials.adopted(staticIndex, link: connection.serial, host: link.remote.host)
        link.onEstablished = { [unowned self, unowned connection] key in self.established(connection, key) }
        link.onMessage = { [unowned self, unowned connection] bytes in
            guard !self.stopped, !connection.closing else { return }
            if self.nearby.admit(bytes, from: connection), self.offers.admit(bytes, from: connection) {
                connection.driver.receive(bytes: bytes)
            }
        }
        link.onWritable = { [unowned connection] in connection.flushUnsent() }
        link.onClosed = { [unowned self] reason in self.closed(id, reason) }
    }

    private func established(_ connection: PeerConnection, _ key: SigningPublicKey) {
        guard !stopped else { return }
        connection.peerKey = key
        // Two links to one node: keep the one whose initiator has the smaller key (both ends
        // agree on that), else the older one.
        if let other = connections.values.first(where: { $0 !== connection && !$0.closing && $0.peerKey == key }) {
            let loser = DuplicateLinks.loser(me: myKey, peer: key, newDialledByMe: connection.link.role == .initiator,
                                             oldDialledByMe: other.link.role == .initiator) == .old ? other : connection
            logger.debug("duplicate link to a peer closed", ["peer.address": "\(loser.link.remote)", "peer.node": key.key.id])
            loser.closing = true
            dials.duplicate(loser.staticIndex, key: key)
            loser.link.close()
            if loser === connection { return }
        }
        connection.since = settings.now()
        defence.linkEstablished(host: connection.link.remote.host)
        if connection.via == .incoming, dials.isDialledInstance(host: connection.link.remote.host) { connection.via = .mdns }
        if connection.staticIndex == nil, dials.isHubHost(connection.link.remote.host) { connection.hub = true }
        dials.established(connection.staticIndex, link: connection.serial, key: key)
        logger.info("peer connected", ["peer.address": "\(connection.link.remote)", "peer.node": key.key.id, "via": connection.via.rawValue])
        notifier.snapshot()
        notifier.peer(connection, .connected)
        let held: Int
        do { held = try node.replica.reconSetSize() } catch {
            end(connection, "reading the size of the record set failed: \(error)")
            return
        }
        relay.linkUp(connection)
        connection.driver.start(salt: SecureRandom.bytes(SyncMessage.saltBytes), held: UInt64(held))
        nearby.linkEstablished(connection)
        offers.linkEstablished(connection)
        photos.linkEstablished()
        applyHubPreference()
    }

    private func closed(_ id: ObjectIdentifier, _ reason: PeerLink.CloseReason) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.closing = true
        connection.cancelTimers()
        notifier.snapshot()
        relay.linkDown(connection)
        if connection.peerKey != nil, connection.since != 0 {
            logger.info("peer disconnected", ["peer.address": "\(connection.link.remote)", "reason": "\(reason)"])
        }
        guard !stopped else { return }
        if case .handshakeFailed(let code, _) = reason, code == HandshakeError.Code.selfConnection.name,
           let slot = connection.staticIndex, dials.via(slot) == .mdns {
            // An instance found is this node (its own address, published in a wide-area domain
            // under another name): nobody's fault, and not dialled again.
            logger.debug("an instance found is this node itself; not dialled again", ["peer.address": "\(connection.link.remote)"])
            dials.itsUs(slot)
            dials.closed(slot, link: connection.serial, key: nil, wasEstablished: false)
            return
        }
        if connection.since != 0 { notifier.peer(connection, .disconnected) }
        if connection.hub, connection.since != 0 {
            if !HubPreference.hubLinked(hubLinks) {
                let released = dials.releaseHeld()
                logger.info("no hub is linked any more: back to the mesh", ["peers.redialled": "\(released)"])
            } else {
                _ = dials.releaseHeld(onlyHubs: true)   // another hub may take this one's place
            }
        }
        if !connection.accounts.isEmpty { nearby.publish() }
        photos.linkClosed(connection.serial)
        let ending = defence.linkEnded(host: connection.link.remote.host, reason: reason, handshakeDone: connection.peerKey != nil, now: settings.clock())
        PeerDefence.log(ending, reason: reason, address: "\(connection.link.remote)", via: connection.via, to: logger)
        // Its target is redialled, and so are the peers parked behind this node's surviving link.
        dials.closed(connection.staticIndex, link: connection.serial, key: connection.peerKey, wasEstablished: connection.since != 0)
    }

    // MARK: Hubs (PROTOCOL.md §13.5)

    /// The rule of `HubPreference` with this node's settings.
    var hubPreference: HubPreference {
        HubPreference(maxDirect: settings.maxDirectWithHub, maxHubs: settings.maxHubs, isHub: settings.hub)
    }

    /// The open links (not closing) as `HubPreference` sees them.
    var hubLinks: [HubPreference.Link] {
        connections.values.filter { !$0.closing }.map { c in
            HubPreference.Link(serial: c.serial, hub: c.hub, established: c.since != 0,
                               dialledInstance: c.staticIndex.map { dials.via($0) == .mdns } ?? false,
                               local: c.staticIndex.map { dials.isLocal($0) } ?? true)
        }
    }

    func mayDialInstance(hub: Bool, local: Bool) -> Bool { hubPreference.mayDial(hub: hub, local: local, links: hubLinks) }

    /// Closes the links `HubPreference` says are surplus (ordinary instances beyond the few kept
    /// while a hub is linked); their instances are held, not redialled, until no hub is linked.
    private func applyHubPreference() {
        let surplus = Set(hubPreference.surplus(hubLinks))
        guard !surplus.isEmpty else { return }
        for connection in connections.values.sorted(by: { $0.serial < $1.serial }) where surplus.contains(connection.serial) {
            if let slot = connection.staticIndex { dials.hold(slot) }
            end(connection, connection.hub
                ? "more than \(settings.maxHubs) hubs are linked: this one (found farther away, or later) is closed (PROTOCOL.md §13.5)"
                : "a hub is linked: links to ordinary nodes beyond \(settings.maxDirectWithHub) are closed (PROTOCOL.md §13.5)")
        }
    }

    /// Instances held back because a hub is linked (for `status`; never waits on `queue`).
    public var heldInstances: Int { board.held }

    func heldChanged(_ count: Int) { board.publish(held: count) }

    /// Ends a session: logs why, once, with the peer's address, and closes its link.
    func end(_ connection: PeerConnection, _ reason: String) {
        guard !connection.closing else { return }
        connection.closing = true
        logger.info("sync with a peer ended", ["peer.address": "\(connection.link.remote)",
                                               "peer.node": connection.peerKey?.key.id ?? "?", "reason": reason])
        connection.link.close()
        notifier.snapshot()
    }

    /// Refuses the peer's address for a while (`PeerDefence`) and says so.
    func punish(_ connection: PeerConnection, _ reason: String) {
        let punishment = defence.punish(connection.link.remote.host, reason: reason, now: settings.clock())
        PeerDefence.log(punishment, reason: reason, address: "\(connection.link.remote)", via: connection.via, to: logger)
    }

    /// Pushes what was applied to every link but the one it came over (`PushRelay`); photos
    /// they name are looked for.
    private func localRecordsAdded(_ records: [AppliedRecord]) {
        guard !stopped else { return }
        if !records.isEmpty { photos.recordsApplied() }
        relay.applied(records)
        if records.contains(where: { PhotoSync.setsAPhoto($0.bytes) }) { photos.lookSoon() }
    }
}
