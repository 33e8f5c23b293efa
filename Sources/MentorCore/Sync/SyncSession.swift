/// What a sync session asks its I/O shell to do.
public enum SyncDirective: Equatable, Sendable {
    /// Encode and send this message to the peer.
    case send(SyncMessage)
    /// Read these records of `author` from the replica (all stored variants, in seq order) and
    /// hand them back with `SyncSession.fetched(_:next:)` (the peer's `want`).
    case fetch(author: PublicKey, seqs: ClosedRange<UInt64>)
    /// Read the records with these IDs (by author, seq; unknown IDs skipped) and hand them back
    /// with `SyncSession.fetched(_:next:)`.
    case fetchIDs([[UInt8]])
    /// Read up to `limit` records under this node of the tree after `after` (by author, seq,
    /// id) and hand them back with `SyncSession.fetched(_:next:)`, with where the read stopped
    /// (nil: the subtree is done).
    case fetchSubtree(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int)
    /// Open a read of the replica's reconciliation tree and call `SyncSession.reconcile(in:)`
    /// with it (a round step is due: an answer to the peer's `recon`, or a round to start).
    case reconcile
    /// Verify and apply this batch received from the peer, then call `SyncSession.applied(...)`.
    case apply([[UInt8]])
    /// End the connection; the reason is for the log. Emitted at most once. The peer is at fault.
    case close(String)
    /// End the connection without blame (the peer speaks another protocol version): the reason
    /// is logged once. Emitted at most once, instead of `close`.
    case end(String)
    /// Totals so far, in records (for `event.sync`).
    case progress(sent: Int, received: Int)
    /// The peer asks for this blob: send it in `blob` parts (or say it is not held).
    case serveBlob(hash: [UInt8])
    /// The accounts living on the peer's node (replacing what it said before).
    case peerAccounts([PublicKey])
    /// A part of a blob the peer sent (the shell checks it against what it asked for).
    case blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8])
    /// Lazy push (PROTOCOL.md §13.7): what the peer said about the push tree, for the shell's
    /// `PushTree` (a `graft`'s bodies are queued by the session itself).
    case tree(PushSignal)
    /// The peer offers a device for linking (PROTOCOL.md §13.8): the encoded `LinkOffer`, or
    /// empty when it withdraws its offers. The shell checks the bytes (a malformed offer is a
    /// violation: it hands the session its reason).
    case linkOffer([UInt8])
}

/// What a peer said about lazy push (`SyncDirective.tree`).
public enum PushSignal: Equatable, Sendable {
    /// It just applied the records with these IDs (`ihave`).
    case announced([[UInt8]])
    /// Send it IDs instead of bodies (`prune`).
    case pruned
    /// Send it bodies again (`graft`; the IDs it asked for are queued for sending).
    case grafted
}

/// Which end of the link this session is: the side that dialled starts reconciliation rounds.
public enum SyncRole: Sendable, Equatable {
    case initiator, responder
}

/// Tuning of a sync session. Both ends of a connection must use the same `window`: a receiver
/// disconnects a peer that has more unacknowledged batches in flight than that.
public struct SyncSettings: Sendable, Equatable {
    /// Batches sent and not yet acknowledged, at most.
    public var window: Int
    /// Records per batch (and per fetch), at most; capped by `SyncLimits.maxBatchRecords`.
    public var batchSize: Int

    public init(window: Int = 4, batchSize: Int = 256) {
        self.window = max(1, window)
        self.batchSize = min(max(1, batchSize), SyncLimits.maxBatchRecords)
    }
}


/// Anti-entropy with one connected peer (sync protocol v2, PROTOCOL.md §13.3), as a pure state
/// machine (no I/O, no clock, no cryptography: the salted hashes come from `makeHashing`).
///
/// Both sides send `hello` with a fresh salt. The initiator then runs reconciliation rounds:
/// the two sides walk their trees of record IDs down to where they differ (`Reconciler`, one
/// `recon` message answering each `recon`), and each queues what the other lacks — lists of IDs
/// and whole subtrees — which the shell reads from the replica (`fetchIDs`, `fetchSubtree`: no
/// record bytes are queued for work that waits) and the session sends in `records` batches,
/// at most `window` unacknowledged. When a side's round is over and all it queued is sent, it
/// sends `caughtUp`. Records applied here are pushed at once (`localRecordsAdded`; the shell
/// does not pass a session the records that came over its own link) — or, on a link the
/// shell's `PushTree` keeps lazy, announced by ID (`announce`, PROTOCOL.md §13.7); the peer's
/// `ihave`, `prune` and `graft` come back as `.tree` directives for that tree, and a `graft`'s
/// IDs are queued for sending like a round's.
///
/// Anything out of order or malformed from the peer yields one `.close`; afterwards the session
/// ignores every input.
public struct SyncSession: Sendable {
    public let settings: SyncSettings
    public let role: SyncRole
    /// Builds the session's hashing from our salt and the peer's (the shell: `ReconHash`).
    private let makeHashing: @Sendable (_ mine: [UInt8], _ theirs: [UInt8]) -> ReconHashing

    /// Batches we sent that the peer has not acknowledged.
    public private(set) var inFlight = 0
    /// Batches the peer sent that we have not acknowledged yet (being applied, or applied with
    /// the ack held back by the shell's rate limit).
    public private(set) var unackedReceived = 0
    /// Of those, applied batches whose ack is held back (`applied(..., holdAck: true)`).
    public private(set) var heldAcks = 0
    /// Batches acknowledged when the shell queued them (`accepted()`) and not applied yet: the
    /// shell holds at most `window` of them, so a link holds at most two windows of batches.
    public private(set) var acceptedUnapplied = 0
    public private(set) var isClosed = false
    public private(set) var recordsSent = 0
    public private(set) var recordsReceived = 0
    /// What the peer's hello said it holds (informational).
    public private(set) var peerHeld: UInt64 = 0
    /// Rounds this side has finished (for tests and metrics).
    public private(set) var roundsFinished = 0
    /// `recon` messages sent and their bytes (for tests and benchmarks).
    public private(set) var reconMessagesSent = 0
    public private(set) var reconBytesSent = 0
    /// Record IDs the peer announced in `ihave` (lazy push, for `status`).
    public private(set) var idsAnnounced = 0
    /// IDs this side announced in `ihave` and those it could not (over its budget).
    public private(set) var idsAnnouncedSent = 0
    public private(set) var announcementsDropped = 0

    private var started = false
    private var mySalt: [UInt8] = []
    private var peerSalt: [UInt8]?
    private var reconciler: Reconciler?

    // The round (PROTOCOL.md §13.3, "A round").
    private var roundOpen = false
    /// The initiator is to open a round at the next `reconcile(in:)`.
    private var wantRound = false
    /// A `.reconcile` went out and `reconcile(in:)` has not come back yet.
    private var reconcileAsked = false
    /// The peer's items still to answer.
    private var inbox: [ReconItem]?
    /// Items of ours that did not fit the last message: sent in the next one.
    private var outbox: [ReconItem] = []
    private var lastSentEmpty = false
    private var lastReceivedEmpty = false
    /// We sent a `recon` and the peer's answer has not come (the peer may not send one before).
    private var awaitingPeer = false
    /// A round finished and its `caughtUp` has not gone out yet.
    private var caughtUpDue = false
    /// A round finished and the peer's `caughtUp` after it has not come: the peer may still be
    /// sending that round's records, so a new round now would ask for them a second time
    /// (the driver postpones its periodic round meanwhile, `SyncDriver.fire`).
    public private(set) var awaitingPeerCaughtUp = false
    private var batchesReceived = 0
    private var batchesApplied = 0
    /// `batchesReceived` when the peer's last `caughtUp` came.
    private var peerCaughtUpAt: Int?
    private var wasCaughtUp = false

    /// What to send, read from the replica one fetch at a time.
    enum Work: Equatable, Sendable {
        case ids([[UInt8]])
        case subtree(ReconNodeRef, FetchCursor?)
        case author(PublicKey, from: UInt64)
    }
    private var work: [Work] = []
    private var queuedIDs = 0
    private var queuedSubtrees: Set<ReconNodeRef> = []
    /// The one outstanding fetch.
    private var fetching: Work?
    /// Record bytes ready to send, waiting for the window: at most one fetch result plus
    /// pushes (at most `maxBufferedPushes`; past that a push waits for the next round).
    private var ready: [[UInt8]] = []
    /// Hashes (Swift's per-process seeded `Hasher`) of the last `recentlyReceivedBound` records
    /// the peer sent: a push or fetched record among them is not sent back (it reached us from
    /// elsewhere too, and the peer holds it). A chance clash only skips a push the next round
    /// makes up for.
    private var recentlyReceived: Set<Int> = []
    private var recentlyReceivedOrder: [Int] = []
    public static let recentlyReceivedBound = 8192
    /// Per author, the highest seq the peer sent us (for deferrals; forgotten past 4096 authors).
    private var peerHolds: [PublicKey: UInt64] = [:]
    /// Authors of records the peer sent that the replica could not take now, through no fault
    /// of the peer (a sequence gap, a full hold-back area, a timestamp past the hold bound:
    /// `RecordError.Code.isDeferral`): asked for again with `want` from our contiguous seq,
    /// after a back-off, until we hold what the peer showed it holds. The next round would
    /// find them too; `want` is quicker.
    private var deferrals: [PublicKey: (retryAt: ContinuousClock.Instant, attempts: Int)] = [:]

    /// IDs queued for sending at most; past that the rest waits for the next round.
    public static let maxQueuedIDs = 262_144
    /// Subtrees queued at most (there are 69,905 nodes; a hostile peer cannot make us queue more).
    public static let maxQueuedSubtrees = 70_000
    /// Pushed records waiting for the window, at most.
    public static let maxBufferedPushes = 1024
    /// Authors tracked for a later `want` at most (more are left to the next round).
    public static let maxDeferredAuthors = 1024
    /// The first `want` for deferred records goes this long after they were deferred; each
    /// further one waits twice as long, up to `maxDeferralRetry`.
    public static let firstDeferralRetry: Duration = .seconds(1)
    public static let maxDeferralRetry: Duration = .seconds(600)
    /// `want`s one `retryDeferred(now:held:)` sends at most; the other due authors wait
    /// `firstDeferralRetry` more.
    public static let maxWantsPerRetry = 64
    /// `want`s this side sends at most per link: `wantsPerPeriod` at once, refilled at that many
    /// per `wantPeriod` — half of what a receiver allows before it cuts the link off (PROTOCOL.md
    /// §13.4: 256 per 30 s), so an honest node never trips it however many timers fire.
    public static let wantsPerPeriod = 128
    public static let wantPeriod: Duration = .seconds(30)
    private var wantBudget = MessageRate(capacity: SyncSession.wantsPerPeriod, per: SyncSession.wantPeriod)
    /// `ihave` and `graft` messages this side sends at most per link, each: `treeMessagesPerPeriod`
    /// per `treePeriod`. Together with the prunes (at most one per graft and per link) that stays
    /// under what a receiver allows before it cuts the link off (PROTOCOL.md §13.7: 512 lazy-push
    /// messages per 30 s). An `ihave` over the budget is dropped (the peer gets the body from its
    /// tree, or the next round finds it); a `graft` over it is left to the round.
    public static let treeMessagesPerPeriod = 128
    public static let treePeriod: Duration = .seconds(30)
    private var ihaveBudget = MessageRate(capacity: SyncSession.treeMessagesPerPeriod, per: SyncSession.treePeriod)
    private var graftBudget = MessageRate(capacity: SyncSession.treeMessagesPerPeriod, per: SyncSession.treePeriod)

    public init(role: SyncRole, settings: SyncSettings = SyncSettings(),
                hashing makeHashing: @escaping @Sendable (_ mine: [UInt8], _ theirs: [UInt8]) -> ReconHashing) {
        self.role = role
        self.settings = settings
        self.makeHashing = makeHashing
    }

    public var isEstablished: Bool { started && peerSalt != nil && !isClosed }
    /// A round has finished here, the peer said `caughtUp`, and every batch it sent before
    /// that is applied (apart from deferred records, asked for again later). Stays true for the
    /// session once it was (later rounds only find what was written meanwhile).
    public var isCaughtUp: Bool {
        guard isEstablished else { return false }
        if wasCaughtUp { return true }
        guard roundsFinished > 0, !roundOpen, let at = peerCaughtUpAt else { return false }
        return batchesApplied >= at
    }
    /// Whether a round is in progress (for the shell's periodic rounds and tests).
    public var isReconciling: Bool { roundOpen || wantRound }
    /// Authors whose deferred records will be asked for again (for tests and metrics).
    public var deferredAuthors: Set<PublicKey> { Set(deferrals.keys) }
    /// When `retryDeferred(now:held:)` has something to ask for next (nil: nothing is deferred).
    public var nextDeferralRetry: ContinuousClock.Instant? { deferrals.values.map(\.retryAt).min() }
    /// Record encodings waiting for the window (for tests and metrics).
    public var bufferedRecords: Int { ready.count }
    /// Nothing queued, fetching, buffered, in flight or unacknowledged, and no round open.
    public var isIdle: Bool {
        work.isEmpty && fetching == nil && ready.isEmpty && inFlight == 0 && unackedReceived == 0
            && !roundOpen && !wantRound && inbox == nil && outbox.isEmpty && !caughtUpDue
    }

    // MARK: Inputs

    /// The connection is up: say hello with our fresh 16-byte salt and the size of our set.
    public mutating func start(salt: [UInt8], held: UInt64) -> [SyncDirective] {
        guard !isClosed, !started else { return [] }
        precondition(salt.count == SyncMessage.saltBytes, "the shell passes a 16-byte salt")
        started = true
        mySalt = salt
        var out: [SyncDirective] = [.send(.hello(salt: salt, held: held))]
        if peerSalt != nil { establish(&out) }
        return out
    }

    /// Decodes and handles a frame's bytes; malformed bytes close the session.
    public mutating func receive(bytes: [UInt8]) -> [SyncDirective] {
        guard !isClosed else { return [] }
        do {
            return receive(try SyncMessage.decode(bytes))
        } catch {
            return close("malformed sync message: \(error)")
        }
    }

    public mutating func receive(_ message: SyncMessage) -> [SyncDirective] {
        guard !isClosed else { return [] }
        var out: [SyncDirective] = []
        if case .hello(let version, let salt, let held) = message {
            guard peerSalt == nil else { return close("protocol violation: a second hello") }
            guard version == SyncMessage.protocolVersion else {
                return end("the peer speaks sync protocol v\(version); this build speaks v\(SyncMessage.protocolVersion) — upgrade it")
            }
            guard salt.count == SyncMessage.saltBytes else { return close("malformed sync message: a hello salt of \(salt.count) bytes") }
            peerSalt = salt
            peerHeld = held
            if started { establish(&out) }
            return out
        }
        guard peerSalt != nil else { return close("protocol violation: \(Self.name(message)) before hello") }
        switch message {
        case .hello:
            break
        case .records(let batch):
            guard unackedReceived < settings.window else {
                return close("protocol violation: more than \(settings.window) unacknowledged batches in flight")
            }
            for bytes in batch {
                let p: RecordPosition
                do { p = try RecordPosition.peek(bytes) } catch {
                    return close("malformed record in batch: \(error)")
                }
                if peerHolds[p.author] == nil, peerHolds.count >= 4096 { peerHolds = [:] }
                peerHolds[p.author] = max(peerHolds[p.author] ?? 0, p.seq)
                noteReceived(bytes)
            }
            unackedReceived += 1
            batchesReceived += 1
            recordsReceived += batch.count
            out.append(.apply(batch))
        case .ack(let count):
            guard Int(count) <= inFlight else {
                return close("protocol violation: ack of \(count) batches but \(inFlight) in flight")
            }
            inFlight -= Int(count)
            pump(&out)
            out.append(.progress(sent: recordsSent, received: recordsReceived))
        case .want(let author, let from):
            if let i = work.firstIndex(where: { if case .author(author, _) = $0 { true } else { false } }) {
                if case .author(_, let queued) = work[i], from < queued { work[i] = .author(author, from: from) }
            } else {
                work.append(.author(author, from: from))
            }
            pump(&out)
        case .wantBlob(let hash):
            out.append(.serveBlob(hash: hash))
        case .blob(let hash, let total, let offset, let bytes):
            out.append(.blobPart(hash: hash, total: total, offset: offset, bytes: bytes))
        case .here(let accounts):
            out.append(.peerAccounts(accounts))
        case .recon(let items):
            // Ping-pong: the peer answers our message; only the initiator opens a round.
            guard awaitingPeer || (role == .responder && !roundOpen) else {
                return close("protocol violation: a recon message out of turn (one answers each of ours)")
            }
            if !roundOpen {
                roundOpen = true
                lastSentEmpty = false
            }
            awaitingPeer = false
            lastReceivedEmpty = items.isEmpty
            if items.isEmpty, outbox.isEmpty, lastSentEmpty {
                finishRound(&out)
            } else {
                inbox = items
                askReconcile(&out)
            }
        case .caughtUp:
            peerCaughtUpAt = batchesReceived
            awaitingPeerCaughtUp = false
            noteCaughtUp()
        case .ihave(let ids):
            idsAnnounced += ids.count
            out.append(.tree(.announced(ids)))
        case .prune:
            out.append(.tree(.pruned))
        case .link(let offer):
            out.append(.linkOffer(offer))
        case .graft(let ids):
            // The bodies it asks for, read like a round's IDs (unknown ones are skipped: no
            // answer, no offence); past `maxQueuedIDs` the rest is left to the next round.
            out.append(.tree(.grafted))
            let take = min(ids.count, Self.maxQueuedIDs - queuedIDs)
            if take > 0 {
                queuedIDs += take
                work.append(.ids(Array(ids.prefix(take))))
            }
            pump(&out)
        }
        return out
    }

    /// The shell opened a read of the replica's tree for a `.reconcile`: answers the peer's
    /// last `recon`, or opens a round. An error reading the view is the shell's to report.
    public mutating func reconcile(in view: some ReconView) throws -> [SyncDirective] {
        reconcileAsked = false
        guard isEstablished, let reconciler else { return [] }
        var out: [SyncDirective] = []
        if let items = inbox {
            inbox = nil
            let step = try reconciler.respond(to: items, in: view)
            queue(step)
            outbox += step.reply
            sendRecon(&out)
        } else if wantRound, !roundOpen {
            wantRound = false
            roundOpen = true
            lastReceivedEmpty = false
            outbox = try reconciler.opening(view)
            sendRecon(&out)
        }
        pump(&out)
        return out
    }

    /// Opens a new round (the initiator, every minute and after a fork variant was applied);
    /// nothing if one is under way or this side is the responder.
    public mutating func startRound() -> [SyncDirective] {
        guard isEstablished, role == .initiator, !roundOpen, !wantRound else { return [] }
        wantRound = true
        var out: [SyncDirective] = []
        askReconcile(&out)
        return out
    }

    /// The shell stopped taking records of these authors (over their storage budget): nothing
    /// waits for them (kept for the shell's sake; v2 has no per-author catch-up).
    public mutating func abandon(_ authors: [PublicKey]) -> [SyncDirective] {
        guard !isClosed else { return [] }
        return [.progress(sent: recordsSent, received: recordsReceived)]
    }

    /// The shell read the records of the outstanding fetch; for `fetchSubtree`, `next` is where
    /// the read stopped (nil: the subtree is done).
    public mutating func fetched(_ records: [[UInt8]], next: FetchCursor? = nil) -> [SyncDirective] {
        guard !isClosed, let f = fetching else { return [] }
        fetching = nil
        switch f {
        case .subtree(let node, _):
            if let next, !records.isEmpty { work.insert(.subtree(node, next), at: 0) } else { queuedSubtrees.remove(node) }
        case .author(let author, let from):
            let upper = from + UInt64(settings.batchSize) - 1
            if !records.isEmpty, upper < Limits.maxSeq { work.insert(.author(author, from: upper + 1), at: 0) }
        case .ids(let ids):
            queuedIDs -= ids.count
        }
        ready.append(contentsOf: records.filter { $0.count <= SyncLimits.maxRecordBytes })
        var out: [SyncDirective] = []
        pump(&out)
        return out
    }

    /// The shell applied a batch the peer sent. `refused` counts the records whose refusal
    /// proves the peer misbehaved (`RecordError.Code.isOffence`: forged, malformed, over a
    /// limit); they end the session. Refusals that are nobody's fault on this link are not
    /// counted here (the shell reports those it can retry with `deferred(_:now:)`). Otherwise
    /// the batch is acknowledged — at once, or with `holdAck` (the shell's rate limit) when
    /// `releaseAcks()` is called. Held batches still count against the window, so a peer that
    /// sends on without the ack breaks it and is closed.
    public mutating func applied(stored: Int, refused: Int = 0, holdAck: Bool = false) -> [SyncDirective] {
        guard !isClosed else { return [] }
        if acceptedUnapplied > 0 {
            // Acknowledged already (`accepted`): only the outcome is left.
            acceptedUnapplied -= 1
            guard refused == 0 else { return close("peer sent \(refused) refused record(s)") }
            batchesApplied += 1
            noteCaughtUp()
            return [.progress(sent: recordsSent, received: recordsReceived)]
        }
        guard unackedReceived > heldAcks else { return [] }
        guard refused == 0 else { return close("peer sent \(refused) refused record(s)") }
        batchesApplied += 1
        noteCaughtUp()
        if holdAck {
            heldAcks += 1
            return [.progress(sent: recordsSent, received: recordsReceived)]
        }
        unackedReceived -= 1
        return [.send(.ack(count: 1)), .progress(sent: recordsSent, received: recordsReceived)]
    }

    /// The replica could not take records of these authors now, through no fault of the peer
    /// (`RecordError.Code.isDeferral`). Once `firstDeferralRetry` has passed,
    /// `retryDeferred(now:held:)` asks the peer for them again from our contiguous seq.
    public mutating func deferred(_ authors: [PublicKey], now: ContinuousClock.Instant) {
        guard !isClosed else { return }
        for author in authors {
            guard deferrals[author] == nil, deferrals.count < Self.maxDeferredAuthors else { continue }
            deferrals[author] = (now + Self.firstDeferralRetry, 0)
        }
    }

    /// The replica keeps records of these authors aside until they are due: nothing to do
    /// (they will be ours without asking again).
    public mutating func heldAside(_ authors: [PublicKey]) {}

    /// Sends a `want` for each deferred author whose retry is due and whose records we still
    /// lack (`held`: the replica's contiguous seq of an author, below what the peer sent us),
    /// backing off each time; forgets the others.
    public mutating func retryDeferred(now: ContinuousClock.Instant, held: (PublicKey) -> UInt64) -> [SyncDirective] {
        guard isEstablished else { return [] }
        var out: [SyncDirective] = []
        for (author, d) in deferrals.sorted(by: { $0.key < $1.key }) where d.retryAt <= now {
            let have = held(author)
            guard have < peerHolds[author] ?? 0, have < Limits.maxSeq else {
                deferrals[author] = nil
                continue
            }
            guard out.count < Self.maxWantsPerRetry, wantBudget.take(now: now) else {
                deferrals[author] = (now + Self.firstDeferralRetry, d.attempts)
                continue
            }
            out.append(.send(.want(author: author, from: have + 1)))
            let attempts = d.attempts + 1
            let wait = min(Self.firstDeferralRetry * (1 << min(attempts, 20)), Self.maxDeferralRetry)
            deferrals[author] = (now + wait, attempts)
        }
        return out
    }

    /// The shell took the oldest unacknowledged batch into its queue for applying, and may
    /// hold it there (at most `window` such batches): acknowledge it now, so the peer sends the
    /// next while this one is verified and applied. Its `applied(...)` later brings only the
    /// outcome (a refusal that proves misbehaviour still ends the session then). Nothing is
    /// acknowledged this way while acks are held back for the rate limit, or past the bound.
    public mutating func accepted() -> [SyncDirective] {
        guard !isClosed, heldAcks == 0, unackedReceived > 0, acceptedUnapplied < settings.window else { return [] }
        unackedReceived -= 1
        acceptedUnapplied += 1
        return [.send(.ack(count: 1))]
    }

    /// Acknowledges every batch whose ack was held, in one ack.
    public mutating func releaseAcks() -> [SyncDirective] {
        guard !isClosed, heldAcks > 0 else { return [] }
        let count = heldAcks
        unackedReceived -= count
        heldAcks = 0
        return [.send(.ack(count: UInt32(count))), .progress(sent: recordsSent, received: recordsReceived)]
    }

    /// Records the local replica just applied (created here, or received over another link:
    /// the shell never passes a session what came over its own link). Pushed at once, in
    /// batches as the window allows; past `maxBufferedPushes` waiting, the rest is left to the
    /// next round. Before the session is established the first round finds them anyway.
    public mutating func localRecordsAdded(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) -> [SyncDirective] {
        guard isEstablished else { return [] }
        for r in records {
            if deferrals[r.author] != nil, r.seq >= peerHolds[r.author] ?? 0 { deferrals[r.author] = nil }
            guard r.bytes.count <= SyncLimits.maxRecordBytes, ready.count < Self.maxBufferedPushes,
                  !recentlyReceived.contains(Self.receivedHash(r.bytes)) else { continue }
            ready.append(r.bytes)
        }
        var out: [SyncDirective] = []
        pump(&out)
        return out
    }

    /// Lazy push: announces records just applied here (by ID) instead of pushing their bodies
    /// (the shell's `PushTree` says this link is lazy), in `ihave`s of at most
    /// `SyncLimits.maxTreeIDs`; what is over the budget is dropped (see `treeMessagesPerPeriod`).
    public mutating func announce(_ ids: [[UInt8]], now: ContinuousClock.Instant) -> [SyncDirective] {
        guard isEstablished else { return [] }
        return chunks(ids).compactMap { chunk in
            guard ihaveBudget.take(now: now) else {
                announcementsDropped += chunk.count
                return nil
            }
            idsAnnouncedSent += chunk.count
            return .send(.ihave(chunk))
        }
    }

    /// Lazy push: asks the peer for the bodies of these announced IDs and to push eagerly again
    /// (within the budget; the rest is left to the round).
    public mutating func graft(_ ids: [[UInt8]], now: ContinuousClock.Instant) -> [SyncDirective] {
        guard isEstablished else { return [] }
        return chunks(ids).compactMap { graftBudget.take(now: now) ? .send(.graft($0)) : nil }
    }

    /// Lazy push: tells the peer we got its last body from elsewhere first.
    public mutating func prune() -> [SyncDirective] {
        guard isEstablished else { return [] }
        return [.send(.prune)]
    }

    /// Distinct 32-byte IDs, ascending, in messages of at most `SyncLimits.maxTreeIDs`.
    private func chunks(_ ids: [[UInt8]]) -> [[[UInt8]]] {
        let sorted = Set(ids.filter { $0.count == 32 }).sorted { $0.lexicographicallyPrecedes($1) }
        return stride(from: 0, to: sorted.count, by: SyncLimits.maxTreeIDs).map {
            Array(sorted[$0..<min($0 + SyncLimits.maxTreeIDs, sorted.count)])
        }
    }

    /// The shell found the peer at fault (e.g. a blob it never asked for): close with `reason`.
    public mutating func violation(_ reason: String) -> [SyncDirective] {
        close("protocol violation: \(reason)")
    }

    // MARK: Internals

    private static func name(_ m: SyncMessage) -> String {
        switch m {
        case .hello: "hello"
        case .records: "records"
        case .ack: "ack"
        case .want: "want"
        case .wantBlob: "wantBlob"
        case .blob: "blob"
        case .here: "here"
        case .recon: "recon"
        case .caughtUp: "caughtUp"
        case .ihave: "ihave"
        case .prune: "prune"
        case .graft: "graft"
        case .link: "link"
        }
    }

    private mutating func establish(_ out: inout [SyncDirective]) {
        guard let peerSalt else { return }
        reconciler = Reconciler(hashing: makeHashing(mySalt, peerSalt))
        if role == .initiator {
            wantRound = true
            askReconcile(&out)
        }
        pump(&out)
    }

    private mutating func askReconcile(_ out: inout [SyncDirective]) {
        guard !reconcileAsked else { return }
        reconcileAsked = true
        out.append(.reconcile)
    }

    /// Sends one `recon` with as many waiting items as fit.
    private mutating func sendRecon(_ out: inout [SyncDirective]) {
        var bytes = 3, n = 0
        while n < outbox.count, n < Int(UInt16.max), bytes + outbox[n].encodedSize <= SyncLimits.maxReconBytes || n == 0 {
            bytes += outbox[n].encodedSize
            n += 1
        }
        let items = Array(outbox.prefix(n))
        outbox.removeFirst(n)
        out.append(.send(.recon(items)))
        reconMessagesSent += 1
        reconBytesSent += bytes
        lastSentEmpty = items.isEmpty
        awaitingPeer = true
        if items.isEmpty, lastReceivedEmpty { finishRound(&out) }
    }

    private mutating func finishRound(_ out: inout [SyncDirective]) {
        roundOpen = false
        awaitingPeer = false
        outbox = []
        roundsFinished += 1
        caughtUpDue = true
        awaitingPeerCaughtUp = true
        pump(&out)
    }

    /// A record's hash for `recentlyReceived`: its bytes hashed as one buffer (`[UInt8]`'s own
    /// `hashValue` feeds the hasher byte by byte, a visible share of a cold sync's receive path).
    static func receivedHash(_ bytes: [UInt8]) -> Int {
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    private mutating func noteReceived(_ bytes: [UInt8]) {
        let h = Self.receivedHash(bytes)
        guard recentlyReceived.insert(h).inserted else { return }
        recentlyReceivedOrder.append(h)
        if recentlyReceivedOrder.count > Self.recentlyReceivedBound {
            let drop = recentlyReceivedOrder.count - Self.recentlyReceivedBound / 2
            for old in recentlyReceivedOrder.prefix(drop) { recentlyReceived.remove(old) }
            recentlyReceivedOrder.removeFirst(drop)
        }
    }

    private mutating func noteCaughtUp() {
        if !wasCaughtUp, isCaughtUp { wasCaughtUp = true }
    }

    /// Queues what a step found the peer lacks (IDs in batch-sized fetches).
    private mutating func queue(_ step: ReconStep) {
        for node in step.sendSubtrees where queuedSubtrees.count < Self.maxQueuedSubtrees {
            if queuedSubtrees.insert(node).inserted { work.append(.subtree(node, nil)) }
        }
        var ids = step.sendIDs[...]
        while !ids.isEmpty, queuedIDs < Self.maxQueuedIDs {
            let chunk = Array(ids.prefix(min(settings.batchSize, Self.maxQueuedIDs - queuedIDs)))
            ids = ids.dropFirst(chunk.count)
            queuedIDs += chunk.count
            work.append(.ids(chunk))
        }
    }

    private mutating func end(_ reason: String) -> [SyncDirective] {
        guard !isClosed else { return [] }
        reset()
        return [.end(reason)]
    }

    private mutating func close(_ reason: String) -> [SyncDirective] {
        guard !isClosed else { return [] }
        reset()
        return [.close(reason)]
    }

    private mutating func reset() {
        isClosed = true
        ready = []
        work = []
        queuedSubtrees = []
        outbox = []
        inbox = nil
        deferrals = [:]
        peerHolds = [:]
        fetching = nil
    }

    /// Sends what the window allows, then asks for the next read when nothing waits; says
    /// `caughtUp` once a finished round's records are all out.
    private mutating func pump(_ out: inout [SyncDirective]) {
        guard isEstablished else { return }
        while inFlight < settings.window, !ready.isEmpty {
            var batch: [[UInt8]] = []
            var bytes = 0
            // The whole message (tag, count, a length per record) stays within maxBatchBytes,
            // which is also the most a frame carries.
            while let next = ready.first, batch.count < settings.batchSize,
                  3 + 4 * (batch.count + 1) + bytes + next.count <= SyncLimits.maxBatchBytes || batch.isEmpty {
                ready.removeFirst()
                // Waiting while the peer sent it to us: it holds it.
                if recentlyReceived.contains(Self.receivedHash(next)) { continue }
                batch.append(next)
                bytes += next.count
            }
            guard !batch.isEmpty else { continue }
            inFlight += 1
            recordsSent += batch.count
            out.append(.send(.records(batch)))
        }
        if inFlight < settings.window, ready.isEmpty, fetching == nil, !work.isEmpty {
            let next = work.removeFirst()
            fetching = next
            switch next {
            case .ids(let ids):
                out.append(.fetchIDs(ids))
            case .subtree(let node, let after):
                out.append(.fetchSubtree(depth: node.depth, prefix: node.prefix, after: after, limit: settings.batchSize))
            case .author(let author, let from):
                let upper = min(Limits.maxSeq, from + UInt64(settings.batchSize) - 1)
                out.append(.fetch(author: author, seqs: from...upper))
            }
            return
        }
        if caughtUpDue, !roundOpen, work.isEmpty, fetching == nil, ready.isEmpty {
            caughtUpDue = false
            out.append(.send(.caughtUp))
        }
    }
}
