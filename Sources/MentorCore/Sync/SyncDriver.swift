/// A timer a `SyncDriver` asks its host to run: when it is due the host calls
/// `SyncDriver.fire(_:)` (late is fine; a fire the driver no longer waits for is ignored).
public enum SyncTimer: Hashable, Sendable, CaseIterable {
    /// The initiator's next reconciliation round (every `roundInterval` while the link is up).
    case round
    /// Ask the peer again for records the replica could not take now (`SyncSession.retryDeferred`).
    case deferralRetry
}

/// What a `SyncDriver` needs from the node (or the simulation, or a test) it runs a link for:
/// the wire, the replica, the clock, timers, and where the session's news go.
///
/// All calls come on the driver's caller's thread (the daemon's peer queue), in order. Nothing
/// here calls back into the driver synchronously except as documented: `apply` is asynchronous,
/// its outcome comes back later through `SyncDriver.applied(...)`.
public protocol SyncHost: AnyObject {
    /// Whether the link is still open (false: the driver drops what is left).
    var isOpen: Bool { get }
    /// The clock the driver's timers and back-offs read.
    var now: ContinuousClock.Instant { get }
    /// Send one message to the peer (in order; the host buffers on backpressure).
    func send(_ message: SyncMessage)
    /// The records of `author` at these seqs, all stored variants, in seq order (`want`).
    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]]
    /// The records with these IDs (unknown IDs skipped), by (author, seq, id).
    func records(ids: [[UInt8]]) throws -> [[UInt8]]
    /// Up to `limit` records under a node of the tree after `after`, and where the read stopped
    /// (nil: the subtree is done). The token in a `FetchCursor` is the host's to choose.
    func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?)
    /// Runs `body` inside one read of the replica's reconciliation tree.
    func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T
    /// The replica's contiguous seq of an author (for deferrals asked for again).
    func contiguousSeq(of author: PublicKey) -> UInt64
    /// Verify and apply a batch the peer sent, asynchronously; report with
    /// `SyncDriver.applied(stored:refused:holdAck:)` (and `deferred(_:)` first, if any).
    func apply(_ batch: [[UInt8]])
    /// Run `timer` at `at` (replacing one of the same kind); the host cancels all at `finished`.
    func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant)
    /// The session's totals changed (`event.sync`).
    func progress(sent: Int, received: Int)
    /// The accounts living on the peer's node (replacing what it said before).
    func peerAccounts(_ accounts: [PublicKey])
    /// The peer asks for a blob: answer it. A reason to close the link for, if the peer is at fault.
    func serveBlob(hash: [UInt8]) -> String?
    /// A part of a blob the peer sent. A reason to close the link for, if the peer is at fault.
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String?
    /// The session is over: close the link. `blame`: the peer misbehaved (`.close`), else no
    /// offence (`.end`: another protocol version; or a local read failed). Called at most once.
    func finished(_ reason: String, blame: Bool)
    /// The directives of one input were carried out (the host may look at the session now).
    func didRun()
    /// A lazy-push signal from the peer (`ihave`, `prune`, `graft`; PROTOCOL §13.7): the node's
    /// push tree is the host's, shared by its links. Hosts without lazy push ignore it.
    func pushSignal(_ signal: PushSignal)
    /// The peer offers a device for linking (`link`, PROTOCOL §13.8): an encoded `LinkOffer`,
    /// or empty when it withdraws its offers. A reason to close the link for, if the peer is at
    /// fault (the offer is malformed). Hosts that do not link devices ignore it.
    func linkOffer(_ offer: [UInt8]) -> String?
}

public extension SyncHost {
    func didRun() {}
    func pushSignal(_ signal: PushSignal) {}
    func linkOffer(_ offer: [UInt8]) -> String? { nil }
}

/// Runs one link's `SyncSession` against a `SyncHost`: the one interpreter of `SyncDirective`s,
/// shared by the daemon (`PeerManager`), the deterministic simulation and the replica-level
/// tests, so the three cannot drift apart.
///
/// Every input of the session has a method here that feeds it and carries out what it says:
/// fetches are answered from the host's replica and fed back at once (depth first, in the order
/// the session gave them), a `.reconcile` runs inside one tree read, a batch goes to the host's
/// asynchronous apply, `.close`/`.end` finish the link once. The driver also owns the link's
/// timers (rounds, deferral retries) through the host's clock, and the per-link rates of the
/// messages that cost a read of the replica or a timer each (`recon`, `want`, and when set
/// `ihave`/`prune`/`graft`: PROTOCOL.md §13.4).
///
/// Not thread-safe: one caller (the daemon's peer queue). A new directive is one `case` in `run`.
public final class SyncDriver {
    public struct Settings: Sendable {
        /// The initiator starts a round this often while the link is up.
        public var roundInterval: Duration = .seconds(60)
        /// `recon` messages the peer may send: a burst of this many, refilled at that rate per
        /// `reconPeriod`; past it the session ends as an offence (each makes us read the tree).
        public var reconBurst = 128
        public var reconPeriod: Duration = .seconds(30)
        /// `want` messages the peer may send, likewise (an honest session sends at most
        /// `SyncSession.wantsPerPeriod` per `SyncSession.wantPeriod`: half of this).
        public var wantBurst = 256
        public var wantPeriod: Duration = .seconds(30)
        /// `ihave`, `prune` and `graft` messages the peer may send together (PROTOCOL.md §13.7),
        /// likewise; 0 (the default): not rated. The daemon sets its `treeBurst`/`treePeriod`
        /// here (`PeerManager.Settings.driver`: 512 per 30 s), and so does the simulation.
        public var treeBurst = 0
        public var treePeriod: Duration = .seconds(30)
        public init() {}
    }

    public private(set) var session: SyncSession
    public let settings: Settings
    private let host: any SyncHost
    /// `.close` or `.end` was carried out (or a read failed): nothing more is done.
    public private(set) var isFinished = false
    /// The timers asked of the host and not fired yet, and when they are due.
    public private(set) var pendingTimers: [SyncTimer: ContinuousClock.Instant] = [:]
    /// Periodic rounds postponed in a row while the peer was still sending (`fire(.round)`).
    public private(set) var roundsPostponed = 0
    public static let maxRoundsPostponed = 5
    private var reconRate: MessageRate
    private var wantRate: MessageRate
    private var treeRate: MessageRate?

    public init(session: SyncSession, settings: Settings = Settings(), host: any SyncHost) {
        self.session = session
        self.settings = settings
        self.host = host
        reconRate = MessageRate(capacity: settings.reconBurst, per: settings.reconPeriod)
        wantRate = MessageRate(capacity: settings.wantBurst, per: settings.wantPeriod)
        treeRate = settings.treeBurst > 0 ? MessageRate(capacity: settings.treeBurst, per: settings.treePeriod) : nil
    }

    // MARK: Inputs

    /// The link is established: say hello; the initiator's round timer starts.
    public func start(salt: [UInt8], held: UInt64) {
        run(session.start(salt: salt, held: held))
        if session.role == .initiator, !isFinished { schedule(.round, at: host.now + settings.roundInterval) }
    }

    /// A frame's bytes from the peer. `recon`, `want` and (when rated) `ihave`/`prune`/`graft`
    /// over their rate end the session as an offence before anything is decoded (the type byte
    /// says which it is).
    public func receive(bytes: [UInt8]) {
        guard !isFinished else { return }
        if let excess = overRate(bytes) { return run(session.violation(excess)) }
        run(session.receive(bytes: bytes))
    }

    /// A decoded message from the peer (no rate check: for tests that hand messages over).
    public func receive(_ message: SyncMessage) {
        guard !isFinished else { return }
        run(session.receive(message))
    }

    /// The host's apply of the oldest batch outstanding is done (`SyncSession.applied`).
    public func applied(stored: Int, refused: Int = 0, holdAck: Bool = false) {
        run(session.applied(stored: stored, refused: refused, holdAck: holdAck))
    }

    /// The replica could not take records of these authors now: they are asked for again when
    /// the session's back-off says so (the `deferralRetry` timer).
    public func deferred(_ authors: [PublicKey]) {
        guard !isFinished, !authors.isEmpty else { return }
        session.deferred(authors, now: host.now)
        scheduleDeferralRetry()
    }

    /// The replica keeps records of these authors aside until due (nothing to do today).
    public func heldAside(_ authors: [PublicKey]) {
        session.heldAside(authors)
    }

    /// The host stopped taking records of these authors (over their storage budget).
    public func abandon(_ authors: [PublicKey]) {
        run(session.abandon(authors))
    }

    /// Acks the host's rate limit held back may go now.
    public func releaseAcks() {
        run(session.releaseAcks())
    }

    /// The host queued the oldest unacknowledged batch for applying: acknowledged now, if the
    /// session allows (`SyncSession.accepted`). Whether it was.
    @discardableResult
    public func accepted() -> Bool {
        let before = session.acceptedUnapplied
        run(session.accepted())
        return session.acceptedUnapplied > before
    }

    /// Records the replica applied that did not come over this link: pushed to the peer.
    public func localRecordsAdded(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) {
        guard !records.isEmpty else { return }
        run(session.localRecordsAdded(records))
    }

    /// Records just applied, announced by ID on a lazy link (`ihave`).
    public func announce(_ ids: [[UInt8]]) {
        guard !ids.isEmpty else { return }
        run(session.announce(ids, now: host.now))
    }

    /// Asks the peer for bodies it announced that did not come, and makes the link eager (`graft`).
    public func graft(_ ids: [[UInt8]]) {
        guard !ids.isEmpty else { return }
        run(session.graft(ids, now: host.now))
    }

    /// Tells the peer to stop pushing bodies eagerly on this link (`prune`).
    public func prune() {
        run(session.prune())
    }

    /// Start a round now (the initiator, e.g. after a fork variant was applied).
    public func startRound() {
        run(session.startRound())
    }

    /// The host found the peer at fault: close with `reason` (an offence).
    public func violation(_ reason: String) {
        run(session.violation(reason))
    }

    /// A timer the driver asked for is due.
    public func fire(_ timer: SyncTimer) {
        guard !isFinished, pendingTimers.removeValue(forKey: timer) != nil else { return }
        switch timer {
        case .round:
            // While the peer still sends the last round's records (no `caughtUp` yet) a new
            // round would find them missing and ask for them again: at a campus's million
            // records, a cold sync outlasts a round interval and 6% came twice. Postponed at
            // most `maxRoundsPostponed` times, so a peer that never says `caughtUp` still gets
            // rounds.
            if session.awaitingPeerCaughtUp, roundsPostponed < Self.maxRoundsPostponed {
                roundsPostponed += 1
            } else {
                roundsPostponed = 0
                run(session.startRound())
            }
            if !isFinished { schedule(.round, at: host.now + settings.roundInterval) }
        case .deferralRetry:
            let host = self.host
            run(session.retryDeferred(now: host.now, held: { host.contiguousSeq(of: $0) }))
            scheduleDeferralRetry()
        }
    }

    // MARK: The interpreter

    /// Carries out directives; those that feed the session again are handled in turn, before
    /// the rest (depth first, as the session expects: one fetch outstanding at a time).
    private func run(_ directives: [SyncDirective]) {
        defer { host.didRun() }
        var pending = directives[...]
        while let directive = pending.popFirst() {
            guard !isFinished, host.isOpen else { return }
            switch directive {
            case .send(let message):
                host.send(message)
            case .fetch(let author, let seqs):
                guard let records = read({ try host.records(of: author, seqs: seqs) }) else { return }
                pending = session.fetched(records)[...] + pending
            case .fetchIDs(let ids):
                guard let records = read({ try host.records(ids: ids) }) else { return }
                pending = session.fetched(records)[...] + pending
            case .fetchSubtree(let depth, let prefix, let after, let limit):
                guard let page = read({ try host.records(depth: depth, prefix: prefix, after: after, limit: limit) }) else { return }
                pending = session.fetched(page.records, next: page.next)[...] + pending
            case .reconcile:
                let next: [SyncDirective]
                do {
                    next = try host.withReconView { view in try session.reconcile(in: view) }
                } catch {
                    return finish("reading the reconciliation tree failed: \(error)", blame: false)
                }
                pending = next[...] + pending
            case .apply(let batch):
                host.apply(batch)
            case .close(let reason):
                // The session closes only for what the peer did.
                return finish(reason, blame: true)
            case .end(let reason):
                // No offence (another protocol version): logged once, not punished.
                return finish(reason, blame: false)
            case .progress(let sent, let received):
                host.progress(sent: sent, received: received)
            case .peerAccounts(let accounts):
                host.peerAccounts(accounts)
            case .serveBlob(let hash):
                if let problem = host.serveBlob(hash: hash) { pending = session.violation(problem)[...] + pending }
            case .blobPart(let hash, let total, let offset, let bytes):
                if let problem = host.blobPart(hash: hash, total: total, offset: offset, bytes: bytes) {
                    pending = session.violation(problem)[...] + pending
                }
            case .tree(let signal):
                host.pushSignal(signal)
            case .linkOffer(let offer):
                if let problem = host.linkOffer(offer) { pending = session.violation(problem)[...] + pending }
            }
        }
    }

    /// A replica read; a failure ends the link without blame (it is ours).
    private func read<T>(_ body: () throws -> T) -> T? {
        do { return try body() } catch {
            finish("reading records from the replica failed: \(error)", blame: false)
            return nil
        }
    }

    private func finish(_ reason: String, blame: Bool) {
        guard !isFinished else { return }
        isFinished = true
        pendingTimers = [:]
        host.finished(reason, blame: blame)
    }

    private func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) {
        pendingTimers[timer] = at
        host.schedule(timer, at: at)
    }

    /// The retry timer follows the session's earliest due retry (moved earlier when a new
    /// deferral is due before the pending timer: a long back-off must not delay a first retry).
    private func scheduleDeferralRetry() {
        guard !isFinished, let at = session.nextDeferralRetry else { return }
        if let pending = pendingTimers[.deferralRetry], pending <= at { return }
        schedule(.deferralRetry, at: at)
    }

    /// Why a message is over its rate (§13.4), if it is.
    private func overRate(_ bytes: [UInt8]) -> String? {
        guard let tag = bytes.first else { return nil }
        let now = host.now
        switch tag {
        case SyncMessage.reconTag where !reconRate.take(now: now):
            return "more than \(settings.reconBurst) recon messages in \(settings.reconPeriod) (an honest node runs one round a minute)"
        case SyncMessage.Tag.want.rawValue where !wantRate.take(now: now):
            return "more than \(settings.wantBurst) want messages in \(settings.wantPeriod)"
        case let tag where SyncMessage.treeTags.contains(tag) && treeRate != nil && !treeRate!.take(now: now):
            return "more than \(settings.treeBurst) ihave/prune/graft messages in \(settings.treePeriod)"
        default:
            return nil
        }
    }
}
