import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

/// Connects the node to its peers: accepts on the peer listener (responders), dials the static
/// peers (initiators, redialled with exponential backoff and jitter), and runs one `SyncSession`
/// per established link, carrying out its directives against the node and the replica.
///
/// - Sync v2 (PROTOCOL.md §13.3): each side says hello with a fresh salt; the side that dialled
///   starts a reconciliation round at once, every `reconInterval`, and after applying a fork
///   variant; `.reconcile` is answered inside one read of the replica's tree, `fetchIDs` and
///   `fetchSubtree` from the replica (pages of a subtree by the replica's cursor, which stays
///   here: the session carries a token).
/// - Records applied here (`Node.onApplied`: written locally or received from any peer) go to
///   every session's `localRecordsAdded` except the session of the link they came over (echo
///   suppression by link): that is push, and relaying along lines of nodes — fork variants too.
///   Lazy push (PROTOCOL.md §13.7, `PushTree`): bodies go in full only on the links the tree
///   keeps eager, IDs (`ihave`) on the others; a duplicate body prunes its link, an announced
///   ID whose body does not come within `graftTimeout` is grafted from its announcer.
/// - Two links to the same node collapse to one: both ends keep the link whose initiator has the
///   smaller node key and close the other.
/// - A session's `.close` closes its link; the reason is logged once with the peer's address.
///   `.end` (a peer speaking another protocol version) closes it the same way, without blame.
/// - Defence: a host whose link fails the handshake, sends a bad frame, breaks the sync protocol
///   or sends records whose refusal proves it misbehaved (`RecordError.Code.isOffence`) is
///   refused for a growing interval (`PenaltyBox`): the listener closes its connections at once
///   and a static peer at that address is redialled only after. A third fork variant, a
///   timestamp ahead of our clock, a full hold-back area or a gap are nobody's fault on the
///   link: such records are held (until due), kept as evidence or asked for again later
///   (`want`), and the session goes on (PROTOCOL.md §10.1).
///   Records per second are limited per peer by pacing acks (a token bucket): a peer that keeps
///   to the window is slowed down, one that does not is disconnected by its session.
/// - Nearby now: after its hello each side sends `here` with the accounts living on its node
///   (again after a signup); while a link is up, the accounts its peer named rank as "nearby
///   now" in the feed. Only direct links count, never relays.
/// - Photos: profile cards name photos by BLAKE2b-256 hash (`PhotoRef`). A photo that a current
///   card names and the replica lacks is asked of one connected peer at a time (`wantBlob`),
///   received in parts (`blob`), checked against the hash and size, and stored; a peer that does
///   not hold it says so and the next is asked. Each link carries at most one blob each way.
///   Photos are looked for once the links catching up have caught up (at most `photoDeferral`
///   late), so a backlog of edits fetches only the current photo; a photo superseded while it
///   was fetched is not stored; the node's photo budget and each author's storage budget decide
///   what is not fetched (PROTOCOL.md §13.4). The node deletes the photos no card names.
/// - Budgets and rates: records of an author over its storage budget are dropped unread (no
///   offence); past the node-wide budget (`StorageBudget`: foreign accounts and their bytes)
///   the node degrades — own, partner and nearby accounts and those held are kept, strangers'
///   records declined (before verifying once the author was declined), no offence; `recon` and `want` messages over their per-link rate end the session as an
///   offence. mDNS instances live in a bounded `DiscoveredTable`; silent ones are forgotten.
/// - Notifications: `event.peer` when a link is established or ends, `event.sync` with a
///   session's totals (at most every `syncEventInterval` per peer, and when it caught up).
///
/// The decisions that need no I/O live in value types in `Peers/`, with the clock and randomness
/// passed in and tests of their own: `Redialer` (when to dial whom), `BlobFetcher` (which photo
/// from which link, when), `PhotoSync` (when to list missing photos, serving and checking them),
/// `PushLinks` (lazy push across the links), `AckPacer` (records per second),
/// `SyncEventThrottle` (when `event.sync` goes out), `PeerStatus` (the peer list and events),
/// `PeerDefence` (whose fault a link's end is, refusals), `HereGate` (the `here` rate),
/// `DuplicateLinks` (which of two links closes); `BudgetGate` carries out the storage budgets
/// over the replica, `RefusalVerdict` reads a batch's outcomes. Each link's session runs in a
/// `SyncDriver` (with the per-link rates, lazy push's included) whose host, `LinkHost`, calls
/// back here through `LinkShell`; the batches it receives are verified and applied by the
/// `ApplyPipeline` (early acks, batches applied together, the release of records held until
/// due), whose outcomes come back through `ApplyShell`; the photo exchange — listing the photos
/// the replica lacks, `wantBlob`s sent with their answer timeout, parts received, checked and
/// stored, peers' `wantBlob`s answered — is `PhotoExchange`'s (over `BlobFetcher` and
/// `PhotoSync`), which calls back through `PhotoShell`. This class keeps the links, the timers
/// and the I/O, and carries their decisions out.
///
/// Threading: the listener, the links, the dialers and all session state live on `queue` (its
/// own, never the node's). Replica reads run synchronously on `queue`; `Node.applyRemote` runs
/// on the pipeline's `applyQueue` (serial) and its outcome comes back to `queue`;
/// the node never waits on `queue` (its `onApplied` hops here with `async`, and `peers` reads a
/// lock-protected snapshot), so there is no cycle. `@unchecked Sendable`: mutable state is
/// confined to `queue`, except what `status` reads (`StatusBoard`, behind its lock), the storage
/// budgets, which `BudgetGate` confines (to `applyQueue`, or behind its own lock), and the
/// pipeline's, which `ApplyPipeline` confines; `PhotoExchange`'s state is on `queue` too.
public final class PeerManager: @unchecked Sendable {
    public let settings: Settings
    /// Where peers reach us (the bound port when `--listen` said 0).
    public let listenAddress: PeerAddress
    private let node: Node
    private let logger: any Logger
    private let queue = DispatchQueue(label: "MentorNode.PeerManager")
    /// Where received batches are verified and applied, off `queue`, and their outcomes handed
    /// back to their links (`ApplyPipeline`; its shell is this manager, set in `init`).
    private let pipeline: ApplyPipeline<PeerManager>
    private let myKey: SigningPublicKey
    private var listener: PeerListener!

    /// One link and its session's state (`PeerConnection`). Confined to `queue`.
    typealias Connection = PeerConnection

    // Confined to queue:
    private var connections: [ObjectIdentifier: Connection] = [:]
    /// When to dial the static peers and mDNS instances, and the timers that do it
    /// (`DialScheduler` over `Redialer`; slots are `staticIndex`; its shell is this manager).
    private let dials: DialScheduler
    private var stopped = false
    /// Who is at fault when a link ends, and the refusals of their addresses (`PeerDefence`).
    private var defence: PeerDefence
    private var serials: UInt64 = 0
    /// The photo exchange of every link: which photos to fetch, from which link, when, the
    /// `wantBlob`s sent and answered, the blobs received (`PhotoExchange`; its shell is this
    /// manager, set in `init`).
    private let photos: PhotoExchange<PeerManager>
    /// The storage budgets: each author's and the node-wide one (`BudgetGate`; its methods run
    /// on the pipeline's `applyQueue` or `queue` as it says, its node-wide state behind its own lock).
    private let budgetGate: BudgetGate
    /// What `peers`, `recordsReceived` and `pushCounters` read without waiting on `queue`.
    private let board = StatusBoard()
    /// Push across the links: bodies or `ihave`s, grafts and their timer, prunes (`PushRelay`
    /// over `PushLinks`; its shell is this manager).
    private let relay: PushRelay<PeerManager>
    /// "Nearby now": `here` sent and taken at its rate, the accounts linked peers named
    /// (`NearbyAccounts`; its shell is this manager).
    private let nearby: NearbyAccounts<PeerManager>
    /// The connected-peers list on `board`, `event.peer` and `event.sync` (`PeerNotifier`; its
    /// shell is this manager).
    private let notifier: PeerNotifier<PeerManager>

    /// Binds `listener` (accepting starts with `start()`).
    public init(node: Node, listener tcp: TCPListener, staticPeers: [StaticPeer], settings: Settings = Settings(),
                logger: some Logger = DiscardingLogger()) {
        self.node = node
        self.settings = settings
        self.logger = logger
        self.listenAddress = tcp.address
        self.myKey = node.nodeKeys.publicKey
        self.dials = DialScheduler(staticPeers: staticPeers, settings: .init(initialBackoff: settings.initialBackoff,
                                                                            maxBackoff: settings.maxBackoff, discovery: settings.discovery),
                                   random: settings.random, logger: logger)
        self.defence = PeerDefence(settings: settings.penalties)
        self.relay = PushRelay(lazyPush: settings.lazyPush, graftTimeout: settings.graftTimeout, held: { [replica = node.replica] ids in
            // A failed read holds none (a graft then asks for what we may hold: a duplicate, no harm).
            guard let records = try? replica.reconRecords(ids: ids) else { return [] }
            return Set(records.map { VerifiedRecord.id(of: $0) })
        }, board: board)
        self.budgetGate = BudgetGate(replica: node.replica, localAccounts: { node.localAccounts() },
                                     authorBudget: settings.authorBudget,
                                     budget: .init(maxAccounts: settings.foreignAccountsMax, maxBytes: settings.foreignBytesMax),
                                     logger: logger)
        self.nearby = NearbyAccounts(localAccounts: { node.localAccounts() }, setNearby: { [budgetGate] all in
            node.setNearby(all)
            budgetGate.setNearby(all)
        })
        self.notifier = PeerNotifier(board: board, interval: settings.syncEventInterval) { node.broadcast($0, $1) }
        self.photos = PhotoExchange(fetcher: .init(retry: settings.blobRetry, deferral: settings.photoDeferral,
                                                   photoBudget: settings.photoBudget, authorBudget: settings.authorBudget),
                                    rules: .init(lookupInterval: settings.photoLookupInterval, answerTimeout: settings.blobAnswerTimeout),
                                    store: PhotoStore(node: node), logger: logger)
        self.pipeline = ApplyPipeline(queue: queue, store: ApplyStore(node: node), budgetGate: budgetGate,
                                      recordsPerApply: settings.recordsPerApply, logger: logger, wallClock: settings.now)
        var listenerSettings = settings.listener
        listenerSettings.link = settings.link
        self.listener = PeerListener(listener: tcp, identity: node.nodeKeys, queue: queue, settings: listenerSettings,
                                     logger: logger) { [unowned self] link in
            self.adopt(link, via: "incoming", staticIndex: nil)
        }
        listener.refusal = { [unowned self] host in self.defence.refusalReason(host, now: .now) }
        pipeline.shell = self
        photos.shell = self
        dials.shell = self
        relay.shell = self
        nearby.shell = self
        notifier.shell = self
    }

    /// Starts accepting and dialling; hooks the node's applied records to the sessions.
    public func start() {
        node.onApplied = { [weak self] records in
            guard let self else { return }
            self.queue.async { self.localRecordsAdded(records) }
        }
        node.onAccountsChanged = { [weak self] in
            guard let self else { return }
            self.queue.async { self.nearby.accountsChanged() }
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
    public var pushCounters: (bodies: Int, duplicates: Int, announced: Int) {
        board.pushCounters
    }
    /// The node-wide storage budget now (`status.storage`). Never waits on `queue`.
    public var storage: StorageStatus { budgetGate.storage }
    /// Times the replica was asked for the photos it lacks (for tests: work, not time).
    public var photoLookupCount: Int { queue.sync { photos.listings } }
    /// Blobs received and stored since start (for tests and metrics).
    public var blobsFetched: Int { photos.blobsFetched }

    // MARK: Discovered peers

    /// An mDNS instance was found (or found again, maybe at a new address): dial it unless it is
    /// being dialled or linked already (`DialScheduler`). Who it is, the handshake decides; one
    /// whose handshake fails is redialled with backoff, and not before a refusal of its address ends.
    public func discovered(name: String, addresses: [PeerAddress]) {
        queue.async { [self] in
            guard !stopped, let address = DialScheduler.preferred(addresses) else { return }
            var relabelled = false
            for c in connections.values where c.via == "incoming" && c.link.remote.host == address.host {
                c.via = "mdns"   // it dialled us first
                relabelled = true
            }
            if relabelled { notifier.snapshot() }
            if dials.found(name: name, address: address) { notifier.snapshot() }
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

    // MARK: Links (on queue)

    // The shell's side of the dial scheduler (`DialShell`), on `queue`.

    func connect(_ peer: StaticPeer, slot: Int) {
        TCPDialer.connect(host: peer.host, port: peer.port, source: listenAddress.host, timeout: settings.dialTimeout, queue: queue) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                if !self.stopped { self.dials.dialFailed(slot, peer: peer, error: error) }
            case .success(let stream):
                guard !self.stopped else { stream.close(); return }
                let link = PeerLink(stream: stream, role: .initiator, identity: self.node.nodeKeys, queue: self.queue,
                                    settings: self.settings.link, logger: self.logger)
                self.adopt(link, via: self.dials.via(slot), staticIndex: slot)
                link.start()
            }
        }
    }

    func refusedUntil(_ host: String) -> ContinuousClock.Instant? { defence.refusedUntil(host, now: .now) }

    func isLinked(_ key: SigningPublicKey) -> Bool {
        connections.values.contains { !$0.closing && $0.peerKey == key && $0.since != 0 }
    }

    private func adopt(_ link: PeerLink, via: String, staticIndex: Int?) {
        guard !stopped else { link.close(); return }
        serials += 1
        let connection = Connection(link: link, via: via, staticIndex: staticIndex,
                                    pacer: AckPacer(recordsPerSecond: settings.recordsPerSecond, burst: settings.recordsBurst, now: .now),
                                    serial: serials, here: HereGate(burst: settings.hereBurst, period: settings.herePeriod))
        connection.driver = SyncDriver(session: SyncSession(role: link.role == .initiator ? .initiator : .responder,
                                                            settings: settings.sync, hashing: ReconHash.hashing),
                                       settings: settings.driver, host: LinkHost(shell: self, connection: connection))
        let id = ObjectIdentifier(connection)
        connections[id] = connection
        dials.adopted(staticIndex, link: connection.serial, host: link.remote.host)
        link.onEstablished = { [unowned self, unowned connection] key in self.established(connection, key) }
        link.onMessage = { [unowned self, unowned connection] bytes in
            guard !self.stopped, !connection.closing else { return }
            if self.nearby.admit(bytes, from: connection) { connection.driver.receive(bytes: bytes) }
        }
        link.onWritable = { [unowned self, unowned connection] in self.flushUnsent(connection) }
        link.onClosed = { [unowned self] reason in self.closed(id, reason) }
    }

    private func established(_ connection: Connection, _ key: SigningPublicKey) {
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
        if connection.via == "incoming", dials.isDialledInstance(host: connection.link.remote.host) { connection.via = "mdns" }
        dials.established(connection.staticIndex, link: connection.serial, key: key)
        logger.info("peer connected", ["peer.address": "\(connection.link.remote)", "peer.node": key.key.id, "via": connection.via])
        notifier.snapshot()
        notifier.peer(connection, "connected")
        let held: Int
        do { held = try node.replica.reconSetSize() } catch {
            end(connection, "reading the size of the record set failed: \(error)")
            return
        }
        relay.linkUp(connection)
        connection.driver.start(salt: SecureRandom.bytes(SyncMessage.saltBytes), held: UInt64(held))
        nearby.linkEstablished(connection)
        photos.linkEstablished()
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
        if connection.since != 0 { notifier.peer(connection, "disconnected") }
        if !connection.accounts.isEmpty { nearby.publish() }
        photos.linkClosed(connection.serial)
        switch defence.linkEnded(host: connection.link.remote.host, reason: reason, handshakeDone: connection.peerKey != nil, now: .now) {
        case .quiet:
            break
        case .punished(let offence, let punishment):
            logPunishment(connection, offence, punishment)
        case .handshakeCutShort(let logAtInfo):
            // The peer closed without an offence: maybe it holds another network key, or it refuses us.
            logger.log(logAtInfo ? .info : .debug, "peer handshake did not complete",
                       ["peer.address": "\(connection.link.remote)", "via": connection.via, "reason": "\(reason)"])
        }
        // Its target is redialled, and so are the peers parked behind this node's surviving link.
        dials.closed(connection.staticIndex, link: connection.serial, key: connection.peerKey, wasEstablished: connection.since != 0)
    }

    // MARK: Sessions (on queue)

    /// Pushes what was applied to every link but the one it came over (`PushRelay`); photos
    /// they name are looked for.
    private func localRecordsAdded(_ records: [AppliedRecord]) {
        guard !stopped else { return }
        if !records.isEmpty { photos.recordsApplied() }
        relay.applied(records)
        if records.contains(where: { PhotoSync.setsAPhoto($0.bytes) }) { photos.lookSoon() }
    }

    // The shell's side of each link's `LinkHost` (`LinkShell`): what its driver asks of the
    // replica, the queue and the pipelines shared by all links.

    var isStopped: Bool { stopped }
    var replica: Replica { node.replica }

    func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(.zero, at - .now).nanoseconds)), execute: work)
    }

    func send(_ message: SyncMessage, on connection: Connection) { send(message.encoded, on: connection) }

    func sessionFinished(_ connection: Connection, reason: String, blame: Bool) {
        end(connection, reason)
        if blame { punish(connection, reason) }
    }

    /// Photos waited for links catching up: this one may just have (after a hello with
    /// nothing to exchange, or its last batch).
    func sessionRan(_ connection: Connection) {
        if !stopped, connection.session.isCaughtUp { photos.linkCaughtUp() }
    }

    /// A part of a blob the peer sent; a reason to close the link for, if the peer is at fault.
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8], on connection: Connection) -> String? {
        photos.blobPart(hash: hash, total: total, offset: offset, bytes: bytes, on: connection)
    }

    /// Answers a peer's `wantBlob` (`PhotoExchange`).
    func answerBlobRequest(_ hash: [UInt8], on connection: Connection) { photos.answer(hash, on: connection) }

    /// What a peer said about the push tree (PROTOCOL.md §13.7; `PushRelay`).
    func pushSignal(_ signal: PushSignal, on connection: Connection) { relay.signal(signal, from: connection) }

    func send(_ bytes: [UInt8], on connection: Connection) {
        if connection.unsent.isEmpty, connection.link.send(bytes) { return }
        connection.unsent.append(bytes)
    }

    private func flushUnsent(_ connection: Connection) {
        while let next = connection.unsent.first, !connection.closing {
            guard connection.link.send(next) else { return }
            connection.unsent.removeFirst()
        }
    }

    /// Ends a session: logs why, once, with the peer's address, and closes its link.
    private func end(_ connection: Connection, _ reason: String) {
        guard !connection.closing else { return }
        connection.closing = true
        logger.info("sync with a peer ended", ["peer.address": "\(connection.link.remote)",
                                               "peer.node": connection.peerKey?.key.id ?? "?", "reason": reason])
        connection.link.close()
        notifier.snapshot()
    }

    /// A fork variant was applied: the links we dialled start a round now (the variant's
    /// siblings elsewhere are found without waiting for the minute).
    private func reconcileNow() {
        for connection in connections.values where !connection.closing && connection.since != 0 && connection.session.role == .initiator {
            connection.driver.startRound()
        }
    }

    /// A link's peer named its accounts: "nearby now" changed (`NearbyAccounts`).
    func publishNearby() { nearby.publish() }

    // MARK: Applying

    /// A link's batch goes to the apply pipeline (`ApplyPipeline`), counted for `status`; the
    /// accounts linked nodes named are kept past the node-wide budget. The outcome comes back
    /// to the link through the pipeline (`ApplyShell`, below).
    func verifyAndApply(_ batch: [[UInt8]], from connection: Connection) {
        board.received(batch.count)
        pipeline.submit(batch, from: connection) { author in
            connections.values.contains(where: { $0.accounts.contains(author) })
        }
    }

    // The shell's side of the pipeline (`ApplyShell`), on `queue`.

    func link(_ key: ObjectIdentifier) -> Connection? { connections[key] }
    func applyFailed(_ connection: Connection, reason: String) { end(connection, reason) }
    func duplicatesApplied(_ count: Int, from connection: Connection) { relay.duplicates(count, from: connection) }
    func forkApplied() { reconcileNow() }

    // The shell's side of the photo exchange (`PhotoShell`), on `queue`.

    var photoLinks: [Connection] { links }
    var links: [Connection] { Array(connections.values) }
    func blobAnswerOverdue(_ connection: Connection, reason: String) { end(connection, reason) }

    // MARK: Defence (on queue)

    /// Refuses the peer's address for a while (`PeerDefence`) and says so.
    private func punish(_ connection: Connection, _ reason: String) {
        logPunishment(connection, reason, defence.punish(connection.link.remote.host, reason: reason, now: .now))
    }

    /// The first offence of a streak at info; repeats (bounded by the doubling refusals) at debug.
    private func logPunishment(_ connection: Connection, _ reason: String, _ punishment: PeerDefence.Punishment) {
        logger.log(punishment.isFirstOfStreak ? .info : .debug, "peer refused for a while",
                   ["peer.address": "\(connection.link.remote)", "for": "\(punishment.interval)", "offences": "\(punishment.offences)",
                    "via": connection.via, "reason": reason])
    }

    // The shell's side of the notifications (`NoticeShell`), on `queue`.

    func announceSync(_ connection: Connection) { notifier.sync(connection) }
    func announcedCaughtUp() { photos.linkCaughtUp() }
}

private extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
