import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

/// Connects the node to its peers: accepts on the peer listener (responders), dials the static
/// peers (initiators, redialled with exponential backoff and jitter), and runs one `SyncSession`
/// per established link, carrying out its directives against the node and the replica.
///
/// - Records applied here (`Node.onApplied`: written locally or received from any peer) go to
///   every session's `localRecordsAdded`: that is push, and relaying along lines of nodes.
/// - Two links to the same node collapse to one: both ends keep the link whose initiator has the
///   smaller node key and close the other.
/// - A session's `.close` closes its link; the reason is logged once with the peer's address.
///
/// Threading: the listener, the links, the dialers and all session state live on `queue` (its
/// own, never the node's). Replica reads and `Node.applyRemote` run synchronously on `queue`;
/// the node never waits on `queue` (its `onApplied` hops here with `async`, and `peers` reads a
/// lock-protected snapshot), so there is no cycle. `@unchecked Sendable`: mutable state is
/// confined to `queue`, except `snapshot`, which is guarded by `snapshotLock`.
public final class PeerManager: @unchecked Sendable {
    public struct Settings: Sendable {
        public var link = PeerLink.Settings()
        public var listener = PeerListener.Settings()
        public var sync = SyncSettings()
        public var dialTimeout: Duration = .seconds(5)
        /// First redial delay; doubles per failed attempt up to `maxBackoff`.
        public var initialBackoff: Duration = .milliseconds(250)
        public var maxBackoff: Duration = .seconds(30)
        /// Wall clock in Unix milliseconds (for `since`).
        public var now: @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970 * 1000) }
        /// Uniform in [0, 1): the jitter of each backoff (injected so tests can replay it).
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        public init() {}
    }

    /// A static peer, as given by `--peer HOST:PORT`.
    public struct StaticPeer: Sendable, Hashable {
        public var host: String
        public var port: UInt16
        public init(host: String, port: UInt16) { self.host = host; self.port = port }

        /// "10.0.0.2:7000", "[::1]:7000", "peer.example:7000"; nil when it is not HOST:PORT.
        public init?(parsing text: String) {
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            self.init(host: host, port: port)
        }
    }

    public let settings: Settings
    /// Where peers reach us (the bound port when `--listen` said 0).
    public let listenAddress: PeerAddress
    private let node: Node
    private let logger: any Logger
    private let queue = DispatchQueue(label: "MentorNode.PeerManager")
    private let myKey: SigningPublicKey
    private var listener: PeerListener!

    /// One link and, once established, its session. Confined to `queue`.
    private final class Connection {
        let link: PeerLink
        let via: String
        /// Index into `dialed` for a link we dialled.
        let staticIndex: Int?
        var peerKey: SigningPublicKey?
        var session: SyncSession
        var since: UInt64 = 0
        /// Messages `send` refused (backpressure), in order; flushed on `onWritable`.
        var unsent: [[UInt8]] = []
        var closing = false

        init(link: PeerLink, via: String, staticIndex: Int?, sync: SyncSettings) {
            self.link = link
            self.via = via
            self.staticIndex = staticIndex
            self.session = SyncSession(settings: sync)
        }
    }

    private struct Dialed {
        let peer: StaticPeer
        var attempt = 0
        var connection: Connection?
        var lastKey: SigningPublicKey?
        var timer: DispatchWorkItem?
        /// Waiting for the link to `lastKey` (kept as a duplicate's survivor) to close.
        var parked = false
    }

    // Confined to queue:
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var dialed: [Dialed]
    private var stopped = false

    private let snapshotLock = NSLock()
    private var snapshot: [PeerInfo] = []

    /// Binds `listener` (accepting starts with `start()`).
    public init(node: Node, listener tcp: TCPListener, staticPeers: [StaticPeer], settings: Settings = Settings(),
                logger: some Logger = DiscardingLogger()) {
        self.node = node
        self.settings = settings
        self.logger = logger
        self.listenAddress = tcp.address
        self.myKey = node.nodeKeys.publicKey
        self.dialed = staticPeers.map { Dialed(peer: $0) }
        var listenerSettings = settings.listener
        listenerSettings.link = settings.link
        self.listener = PeerListener(listener: tcp, identity: node.nodeKeys, queue: queue, settings: listenerSettings,
                                     logger: logger) { [unowned self] link in
            self.adopt(link, via: "incoming", staticIndex: nil)
        }
    }

    /// Starts accepting and dialling; hooks the node's applied records to the sessions.
    public func start() {
        node.onApplied = { [weak self] records in
            guard let self else { return }
            self.queue.async { self.localRecordsAdded(records) }
        }
        listener.start()
        queue.async { [self] in
            for index in dialed.indices { dial(index) }
        }
    }

    /// Stops accepting and dialling and closes every link; afterwards nothing touches the node
    /// or the replica. Returns once that holds.
    public func stop() {
        listener.close()
        queue.sync {
            stopped = true
            for index in dialed.indices {
                dialed[index].timer?.cancel()
                dialed[index].timer = nil
            }
            for connection in connections.values { connection.link.close() }
            connections = [:]
            publishSnapshot()
        }
    }

    /// The connected peers (established links), for `runtimeInfo().peers`. Never waits on `queue`.
    public var peers: [PeerInfo] { snapshotLock.withLock { snapshot } }

    // MARK: Links (on queue)

    private func dial(_ index: Int) {
        guard !stopped else { return }
        dialed[index].timer = nil
        dialed[index].parked = false
        let peer = dialed[index].peer
        TCPDialer.connect(host: peer.host, port: peer.port, timeout: settings.dialTimeout, queue: queue) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                guard !self.stopped else { return }
                self.logger.debug("dialling a peer failed", ["peer.address": "\(PeerAddress(host: peer.host, port: peer.port))",
                                                            "error": "\(error)"])
                self.scheduleRedial(index)
            case .success(let stream):
                guard !self.stopped else { stream.close(); return }
                let link = PeerLink(stream: stream, role: .initiator, identity: self.node.nodeKeys, queue: self.queue,
                                    settings: self.settings.link, logger: self.logger)
                self.adopt(link, via: "config", staticIndex: index)
                link.start()
            }
        }
    }

    private func scheduleRedial(_ index: Int) {
        guard !stopped, dialed[index].timer == nil else { return }
        let attempt = dialed[index].attempt
        dialed[index].attempt += 1
        let base = Double(settings.initialBackoff.nanoseconds) * pow(2, Double(min(attempt, 20)))
        let capped = min(base, Double(settings.maxBackoff.nanoseconds))
        // Jitter: somewhere between half and all of the delay, so peers do not redial in step.
        let delay = capped * (0.5 + 0.5 * settings.random())
        let timer = DispatchWorkItem { [weak self] in
            guard let self, !self.stopped else { return }
            if let key = self.dialed[index].lastKey, self.isConnected(key) {
                self.dialed[index].timer = nil
                self.dialed[index].parked = true   // redialled when that link closes
                return
            }
            self.dial(index)
        }
        dialed[index].timer = timer
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay)), execute: timer)
    }

    private func adopt(_ link: PeerLink, via: String, staticIndex: Int?) {
        guard !stopped else { link.close(); return }
        let connection = Connection(link: link, via: via, staticIndex: staticIndex, sync: settings.sync)
        let id = ObjectIdentifier(connection)
        connections[id] = connection
        if let staticIndex { dialed[staticIndex].connection = connection }
        link.onEstablished = { [unowned self, unowned connection] key in self.established(connection, key) }
        link.onMessage = { [unowned self, unowned connection] bytes in
            guard !self.stopped, !connection.closing else { return }
            self.run(connection.session.receive(bytes: bytes), on: connection)
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
            let mineInitiator = connection.link.role == .initiator ? myKey : key
            let otherInitiator = other.link.role == .initiator ? myKey : key
            let loser = mineInitiator < otherInitiator ? other : connection
            logger.debug("duplicate link to a peer closed", ["peer.address": "\(loser.link.remote)", "peer.node": key.key.id])
            loser.closing = true
            if let index = loser.staticIndex { dialed[index].lastKey = key }
            loser.link.close()
            if loser === connection { return }
        }
        connection.since = settings.now()
        if let index = connection.staticIndex {
            dialed[index].attempt = 0
            dialed[index].lastKey = key
        }
        logger.info("peer connected", ["peer.address": "\(connection.link.remote)", "peer.node": key.key.id, "via": connection.via])
        publishSnapshot()
        let vector: [PublicKey: UInt64]
        do { vector = try node.replica.versionVector() } catch {
            end(connection, "reading the version vector failed: \(error)")
            return
        }
        run(connection.session.start(localVector: vector), on: connection)
    }

    private func closed(_ id: ObjectIdentifier, _ reason: PeerLink.CloseReason) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.closing = true
        publishSnapshot()
        if connection.peerKey != nil, connection.since != 0 {
            logger.info("peer disconnected", ["peer.address": "\(connection.link.remote)", "reason": "\(reason)"])
        }
        guard !stopped else { return }
        if let index = connection.staticIndex, dialed[index].connection === connection {
            dialed[index].connection = nil
            scheduleRedial(index)
        }
        // Static peers parked behind this node's surviving link dial again.
        if let key = connection.peerKey, !isConnected(key) {
            for index in dialed.indices where dialed[index].parked && dialed[index].lastKey == key {
                dialed[index].parked = false
                scheduleRedial(index)
            }
        }
    }

    private func isConnected(_ key: SigningPublicKey) -> Bool {
        connections.values.contains { !$0.closing && $0.peerKey == key && $0.since != 0 }
    }

    // MARK: Sessions (on queue)

    private func localRecordsAdded(_ records: [AppliedRecord]) {
        guard !stopped else { return }
        let tuples = records.map { (author: $0.author, seq: $0.seq, bytes: $0.bytes) }
        for connection in connections.values where !connection.closing && connection.since != 0 {
            run(connection.session.localRecordsAdded(tuples), on: connection)
        }
    }

    /// Carries out directives; those that feed the session again are handled in turn.
    private func run(_ directives: [SyncDirective], on connection: Connection) {
        var pending = directives[...]
        while let directive = pending.popFirst() {
            guard !stopped, !connection.closing else { return }
            switch directive {
            case .send(let message):
                send(message.encoded, on: connection)
            case .fetch(let author, let seqs):
                let records: [[UInt8]]
                do { records = try node.replica.records(of: author, seqs: seqs) } catch {
                    end(connection, "reading records from the replica failed: \(error)")
                    return
                }
                pending = connection.session.fetched(records)[...] + pending
            case .apply(let batch):
                let outcomes: [ApplyOutcome]
                do { outcomes = try node.applyRemote(batch) } catch {
                    end(connection, "applying records from the peer failed: \(error)")
                    return
                }
                let refused = outcomes.filter { if case .refused = $0 { true } else { false } }.count
                pending = connection.session.applied(stored: outcomes.count - refused, refused: refused)[...] + pending
            case .close(let reason):
                end(connection, reason)
                return
            case .progress:
                break
            }
        }
    }

    private func send(_ bytes: [UInt8], on connection: Connection) {
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
        publishSnapshot()
    }

    private func publishSnapshot() {
        let list = connections.values
            .filter { !$0.closing && $0.since != 0 }
            .compactMap { c in c.peerKey.map { PeerInfo(node: $0.key.id, address: "\(c.link.remote)", via: c.via, since: c.since) } }
            .sorted { $0.since < $1.since }
        snapshotLock.withLock { snapshot = list }
    }
}

private extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
