/// What a sync session asks its I/O shell to do.
public enum SyncDirective: Equatable, Sendable {
    /// Encode and send this message to the peer.
    case send(SyncMessage)
    /// Read these records of `author` from the replica (all stored variants, in seq order) and
    /// hand them back with `SyncSession.fetched(_:)`.
    case fetch(author: PublicKey, seqs: ClosedRange<UInt64>)
    /// Verify and apply this batch received from the peer, then call `SyncSession.applied(...)`.
    case apply([[UInt8]])
    /// End the connection; the reason is for the log. Emitted at most once.
    case close(String)
    /// Totals so far, in records (for `event.sync`).
    case progress(sent: Int, received: Int)
    /// The peer asks for this blob: send it in `blob` parts (or say it is not held).
    case serveBlob(hash: [UInt8])
    /// The accounts living on the peer's node (replacing what it said before).
    case peerAccounts([PublicKey])
    /// The peer's hello or summary named these authors with these seqs and digests: the shell
    /// compares them with its own and calls `resend(_:)` for those whose seqs agree but whose
    /// digests do not (a fork one side never saw).
    case compare([SyncMessage.Entry])
    /// A part of a blob the peer sent (the shell checks it against what it asked for).
    case blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8])
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

/// Anti-entropy with one connected peer, as a pure state machine (no I/O, no clock).
///
/// Both sides send `hello` with the version vector of what they hold contiguously per author.
/// Each side then sends the peer what the peer lacks: it asks the shell to `fetch` ranges from
/// the replica (no record bytes are queued for work that waits), packs them into batches and
/// keeps at most `window` batches unacknowledged. The receiver applies each batch and acks it.
/// New local records are pushed at once (`localRecordsAdded`), unless the peer is believed to
/// hold them already (so records are never echoed to the peer that sent them); records applied
/// from one peer and passed to the sessions of the others are relayed the same way.
///
/// Anything out of order or malformed from the peer yields one `.close`; afterwards the session
/// ignores every input.
public struct SyncSession: Sendable {
    public let settings: SyncSettings

    /// What we hold contiguously per author (start vector, raised by local additions).
    public private(set) var localVector: [PublicKey: UInt64] = [:]
    /// What we believe the peer holds contiguously: its hello, raised by what it sent us and by
    /// what we sent it. Nil until the peer's hello arrives.
    public private(set) var peerVector: [PublicKey: UInt64]? = nil
    /// Batches we sent that the peer has not acknowledged.
    public private(set) var inFlight = 0
    /// Batches the peer sent that we have not acknowledged yet (being applied, or applied with
    /// the ack held back by the shell's rate limit).
    public private(set) var unackedReceived = 0
    /// Of those, applied batches whose ack is held back (`applied(..., holdAck: true)`).
    public private(set) var heldAcks = 0
    public private(set) var isClosed = false
    public private(set) var recordsSent = 0
    public private(set) var recordsReceived = 0

    private var started = false
    /// Hello parts received so far, and the last author of the last part (order check). Parts
    /// are taken in as they come: entries of authors we hold go into `helloParts`; the others
    /// only into `peerOnly`, so a hello naming many authors we lack costs 16 bytes per author,
    /// not a key each (§13.4).
    private var helloParts: [PublicKey: UInt64] = [:]
    private var helloPartCount = 0
    private var helloEntries = 0
    private var helloLastAuthor: PublicKey?
    /// What the peer's hello said it holds of authors we held nothing of then, by the first 8
    /// bytes of the author's key (keys are uniformly distributed; a clash only makes us think
    /// the peer holds what it may not, which its next hello corrects): two sorted arrays, as the
    /// hello's authors ascend, 16 bytes an author. The top bit of a value marks an entry we have
    /// caught up with; `peerOnlyMissing` counts the others.
    private var peerOnlyKeys: [UInt64] = []
    private var peerOnlySeqs: [UInt64] = []
    private var peerOnlyMissing = 0
    private static let caughtUpBit: UInt64 = 1 << 63
    private var summaryLastAuthor: PublicKey?
    /// Authors to resend once the hello is complete.
    private var pendingResend: Set<PublicKey> = []
    /// The peer's hello, until both ends are known; then the authors of which it held more than
    /// we did, and up to which seq (what we lack to have caught up).
    private var peerHello: [PublicKey: UInt64] = [:]
    private var missing: [PublicKey: UInt64] = [:]
    /// Authors with work (local > peer), in the order they got it; `queued` mirrors it.
    private var workQueue: [PublicKey] = []
    private var queued: Set<PublicKey> = []
    /// The one outstanding fetch.
    private var fetching: (author: PublicKey, seqs: ClosedRange<UInt64>)? = nil
    /// Record bytes ready to send, waiting for the window: at most one fetch result plus the
    /// pushes of one `localRecordsAdded` call (pushes never wait here while the window is full).
    private var ready: [[UInt8]] = []
    /// Per author, the highest seq the peer has shown it holds: its hello, and every record it
    /// sent us. A record waiting in `ready` at or below it is dropped instead of sent back.
    private var peerHolds: [PublicKey: UInt64] = [:]
    /// Authors of records the peer sent that the replica could not take now, through no fault
    /// of the peer (a sequence gap, a full hold-back area, a timestamp past the hold bound:
    /// `RecordError.Code.isDeferral`): asked for again with `want` from our contiguous seq,
    /// after a back-off, until we hold what the peer showed it holds.
    private var deferrals: [PublicKey: (retryAt: ContinuousClock.Instant, attempts: Int)] = [:]

    /// Authors tracked for a later `want` at most (more are left to the next session's hello).
    public static let maxDeferredAuthors = 1024
    /// The first `want` for deferred records goes this long after they were deferred; each
    /// further one waits twice as long, up to `maxDeferralRetry`.
    public static let firstDeferralRetry: Duration = .seconds(1)
    public static let maxDeferralRetry: Duration = .seconds(600)
    /// `want`s one `retryDeferred(now:)` sends at most; the other due authors wait
    /// `firstDeferralRetry` more.
    public static let maxWantsPerRetry = 64
    /// `want`s this side sends at most per link: `wantsPerPeriod` at once, refilled at that many
    /// per `wantPeriod` — half of what a receiver allows before it cuts the link off (PROTOCOL.md
    /// §13.4: 256 per 30 s), so an honest node never trips it however many timers fire.
    public static let wantsPerPeriod = 128
    public static let wantPeriod: Duration = .seconds(30)
    private var wantBudget = MessageRate(capacity: SyncSession.wantsPerPeriod, per: SyncSession.wantPeriod)

    public init(settings: SyncSettings = SyncSettings()) {
        self.settings = settings
    }

    public var isEstablished: Bool { started && peerVector != nil && !isClosed }
    /// We hold everything the peer held when it said hello, and have applied all it sent —
    /// apart from deferred records (`deferred(_:now:)`), which are asked for again later.
    public var isCaughtUp: Bool { isEstablished && missing.isEmpty && peerOnlyMissing == 0 && unackedReceived == 0 }
    /// Authors whose deferred records will be asked for again (for tests and metrics).
    public var deferredAuthors: Set<PublicKey> { Set(deferrals.keys) }
    /// When `retryDeferred(now:)` has something to ask for next (nil: nothing is deferred).
    public var nextDeferralRetry: ContinuousClock.Instant? { deferrals.values.map(\.retryAt).min() }
    /// Authors of the peer's hello kept by key prefix only (for tests and metrics).
    public var peerOnlyAuthors: Int { peerOnlyKeys.count }
    /// Record encodings waiting for the window (for tests and metrics).
    public var bufferedRecords: Int { ready.count }

    // MARK: Inputs

    /// The connection is up: announce what we hold.
    /// `digests` (per author, of its record IDs) go into the hello for the peer to compare.
    public mutating func start(localVector vector: [PublicKey: UInt64], digests: [PublicKey: UInt64] = [:]) -> [SyncDirective] {
        guard !isClosed, !started else { return [] }
        started = true
        for (author, seq) in vector { localVector[author] = max(localVector[author] ?? 0, seq) }
        let parts = SyncMessage.parts(localVector, digests: digests)
        var out: [SyncDirective] = parts.enumerated().map { i, part in
            .send(.hello(version: SyncMessage.protocolVersion, vector: part, more: i < parts.count - 1))
        }
        if peerVector != nil {
            noteMissing()
            queueAllWork()
            pump(&out)
        }
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
        switch message {
        case .hello(let version, let vector, let more):
            guard peerVector == nil else { return close("protocol violation: a second hello") }
            guard version == SyncMessage.protocolVersion else {
                return close("unsupported sync protocol version \(version); this build speaks \(SyncMessage.protocolVersion)")
            }
            if let last = helloLastAuthor, let first = vector.first?.author, !(last < first) {
                return close("protocol violation: hello parts out of order")
            }
            helloPartCount += 1
            helloEntries += vector.count
            guard helloEntries <= SyncLimits.maxVectorEntries else {
                return close("hello names more than \(SyncLimits.maxVectorEntries) authors")
            }
            guard helloPartCount <= SyncLimits.maxHelloParts else {
                return close("protocol violation: a hello in more than \(SyncLimits.maxHelloParts) parts")
            }
            for e in vector {
                // Before `start` we do not know what we hold: keep every key.
                if !started || localVector[e.author] != nil {
                    helloParts[e.author] = e.seq
                } else {
                    let key = Self.prefix(e.author)
                    if peerOnlyKeys.last == key {
                        peerOnlySeqs[peerOnlySeqs.count - 1] = max(peerOnlySeqs[peerOnlySeqs.count - 1], e.seq)
                    } else {
                        peerOnlyKeys.append(key)
                        peerOnlySeqs.append(e.seq)
                        peerOnlyMissing += 1
                    }
                }
            }
            helloLastAuthor = vector.last?.author ?? helloLastAuthor
            // Only authors we hold can differ at an equal seq: the rest cost no replica read.
            if vector.contains(where: { $0.digest != 0 }) {
                let comparable = vector.filter { !started || localVector[$0.author] != nil }
                if !comparable.isEmpty { out.append(.compare(comparable)) }
            }
            guard !more else { return out }
            // Without the spare capacity of growing (exactly 16 bytes an author from now on).
            peerOnlyKeys = Array(peerOnlyKeys[...])
            peerOnlySeqs = Array(peerOnlySeqs[...])
            let pv = helloParts
            helloParts = [:]
            peerVector = pv
            peerHello = pv
            peerHolds = pv
            for author in pendingResend { lowerForResend(author) }
            pendingResend = []
            if started {
                noteMissing()
                queueAllWork()
                pump(&out)
            }
        case .records(let batch):
            guard peerVector != nil else { return close("protocol violation: records before hello") }
            guard unackedReceived < settings.window else {
                return close("protocol violation: more than \(settings.window) unacknowledged batches in flight")
            }
            var positions: [RecordPosition] = []
            positions.reserveCapacity(batch.count)
            for bytes in batch {
                do { positions.append(try RecordPosition.peek(bytes)) } catch {
                    return close("malformed record in batch: \(error)")
                }
            }
            // The peer holds what it sent: never send it back.
            for p in positions {
                if p.seq == peerHas(p.author) + 1 { peerVector?[p.author] = p.seq }
                peerHolds[p.author] = max(peerHeld(p.author), p.seq)
            }
            unackedReceived += 1
            recordsReceived += batch.count
            out.append(.apply(batch))
        case .ack(let count):
            guard peerVector != nil else { return close("protocol violation: ack before hello") }
            guard Int(count) <= inFlight else {
                return close("protocol violation: ack of \(count) batches but \(inFlight) in flight")
            }
            inFlight -= Int(count)
            pump(&out)
            out.append(.progress(sent: recordsSent, received: recordsReceived))
        case .want(let author, let from):
            guard peerVector != nil else { return close("protocol violation: want before hello") }
            if peerHas(author) >= from { peerVector?[author] = from - 1 }
            enqueue(author)
            pump(&out)
        case .wantBlob(let hash):
            guard peerVector != nil else { return close("protocol violation: wantBlob before hello") }
            out.append(.serveBlob(hash: hash))
        case .blob(let hash, let total, let offset, let bytes):
            guard peerVector != nil else { return close("protocol violation: blob before hello") }
            out.append(.blobPart(hash: hash, total: total, offset: offset, bytes: bytes))
        case .here(let accounts):
            guard peerVector != nil else { return close("protocol violation: here before hello") }
            out.append(.peerAccounts(accounts))
        case .summary(let vector, let more):
            guard peerVector != nil else { return close("protocol violation: summary before hello") }
            if let last = summaryLastAuthor, let first = vector.first?.author, !(last < first) {
                return close("protocol violation: summary parts out of order")
            }
            summaryLastAuthor = more ? (vector.last?.author ?? summaryLastAuthor) : nil
            let comparable = vector.filter { localVector[$0.author] != nil }
            if !comparable.isEmpty { out.append(.compare(comparable)) }
        }
        return out
    }

    /// The shell stopped taking records of these authors (over their storage budget): do not
    /// wait for them to have caught up.
    public mutating func abandon(_ authors: [PublicKey]) -> [SyncDirective] {
        guard !isClosed else { return [] }
        for author in authors {
            missing[author] = nil
            satisfyPeerOnly(author, seq: UInt64.max >> 1)
        }
        return [.progress(sent: recordsSent, received: recordsReceived)]
    }

    /// The shell read the records of a `.fetch` (all stored variants of the range, in order).
    public mutating func fetched(_ records: [[UInt8]]) -> [SyncDirective] {
        guard !isClosed, let f = fetching else { return [] }
        fetching = nil
        let believed = peerHas(f.author)
        if records.isEmpty {
            // The replica no longer has them (or never had): stop asking for this author.
            localVector[f.author] = min(localVector[f.author] ?? 0, believed)
        } else if believed + 1 == f.seqs.lowerBound {
            // Unless a `want` lowered the peer's vector meanwhile, it will hold the whole range.
            peerVector?[f.author] = f.seqs.upperBound
        }
        ready.append(contentsOf: records.filter { $0.count <= SyncLimits.maxRecordBytes })
        if (localVector[f.author] ?? 0) > peerHas(f.author) { enqueue(f.author) }
        var out: [SyncDirective] = []
        pump(&out)
        return out
    }

    /// The shell applied a batch the peer sent. `refused` counts the records whose refusal
    /// proves the peer misbehaved (`RecordError.Code.isOffence`: forged, malformed, over a
    /// limit); they end the session. Refusals that are nobody's fault on this link are not
    /// counted here (the shell reports those it can retry with `deferred(_:now:)`). Otherwise
    /// the batch is acknowledged — at once, or with `holdAck`
    /// (the shell's rate limit) when `releaseAcks()` is called. Held batches still count against
    /// the window, so a peer that sends on without the ack breaks it and is closed.
    public mutating func applied(stored: Int, refused: Int = 0, holdAck: Bool = false) -> [SyncDirective] {
        guard !isClosed else { return [] }
        guard unackedReceived > heldAcks else { return [] }
        guard refused == 0 else { return close("peer sent \(refused) refused record(s)") }
        if holdAck {
            heldAcks += 1
            return [.progress(sent: recordsSent, received: recordsReceived)]
        }
        unackedReceived -= 1
        return [.send(.ack(count: 1)), .progress(sent: recordsSent, received: recordsReceived)]
    }

    /// The replica could not take records of these authors now, through no fault of the peer
    /// (`RecordError.Code.isDeferral`). They are not ours yet — `localVector` does not move —
    /// so once `firstDeferralRetry` has passed `retryDeferred(now:)` asks the peer for them
    /// again from our contiguous seq (the peer believes it sent them, and would not otherwise
    /// in this session). They no longer keep the session from being caught up.
    public mutating func deferred(_ authors: [PublicKey], now: ContinuousClock.Instant) {
        guard !isClosed else { return }
        for author in authors {
            missing[author] = nil
            satisfyPeerOnly(author, seq: UInt64.max >> 1)
            guard deferrals[author] == nil, deferrals.count < Self.maxDeferredAuthors else { continue }
            deferrals[author] = (now + Self.firstDeferralRetry, 0)
        }
    }

    /// The replica keeps records of these authors aside until they are due (dated ahead of its
    /// clock): they will be ours without asking again, so the session does not wait for them
    /// to be caught up (and the summary still goes out).
    public mutating func heldAside(_ authors: [PublicKey]) {
        guard !isClosed else { return }
        for author in authors {
            missing[author] = nil
            satisfyPeerOnly(author, seq: UInt64.max >> 1)
        }
    }

    /// Sends a `want` for each deferred author whose retry is due and whose records we still
    /// lack (below what the peer showed it holds), backing off each time; forgets the others.
    public mutating func retryDeferred(now: ContinuousClock.Instant) -> [SyncDirective] {
        guard isEstablished else { return [] }
        var out: [SyncDirective] = []
        for (author, d) in deferrals.sorted(by: { $0.key < $1.key }) where d.retryAt <= now {
            let have = localVector[author] ?? 0
            guard have < peerHeld(author), have < Limits.maxSeq else {
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

    /// Acknowledges every batch whose ack was held, in one ack.
    public mutating func releaseAcks() -> [SyncDirective] {
        guard !isClosed, heldAcks > 0 else { return [] }
        let count = heldAcks
        unackedReceived -= count
        heldAcks = 0
        return [.send(.ack(count: UInt32(count))), .progress(sent: recordsSent, received: recordsReceived)]
    }

    /// Records now held contiguously by the local replica (created here, or applied from any
    /// peer). Pushed at once when the peer lacks them and the window allows; otherwise they
    /// become work fetched from the replica later.
    public mutating func localRecordsAdded(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) -> [SyncDirective] {
        guard !isClosed else { return [] }
        for r in records {
            if let need = missing[r.author], r.seq >= need { missing[r.author] = nil }
            if deferrals[r.author] != nil, r.seq >= peerHeld(r.author) { deferrals[r.author] = nil }
            satisfyPeerOnly(r.author, seq: r.seq)
            let hadWork = (localVector[r.author] ?? 0) > peerHas(r.author)
            localVector[r.author] = max(localVector[r.author] ?? 0, r.seq)
            guard isEstablished else { continue }               // hello will bring it up
            let peerHas = peerHas(r.author)
            if peerHas >= r.seq { continue }                       // the peer has it (maybe sent it)
            if r.seq == peerHas + 1, !hadWork, fetching?.author != r.author,
               inFlight < settings.window, r.bytes.count <= SyncLimits.maxRecordBytes {
                ready.append(r.bytes)
                peerVector?[r.author] = r.seq
            } else {
                enqueue(r.author)
            }
        }
        var out: [SyncDirective] = []
        pump(&out)
        return out
    }

    // MARK: Internals

    private static func prefix(_ author: PublicKey) -> UInt64 {
        var p: UInt64 = 0
        for b in author.bytes.prefix(8) { p = p << 8 | UInt64(b) }
        return p
    }

    /// Where `author` is in `peerOnlyKeys` (binary search), if it is.
    private func peerOnlyIndex(_ author: PublicKey) -> Int? {
        guard !peerOnlyKeys.isEmpty else { return nil }
        let key = Self.prefix(author)
        var low = 0, high = peerOnlyKeys.count
        while low < high {
            let mid = (low + high) / 2
            if peerOnlyKeys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low < peerOnlyKeys.count && peerOnlyKeys[low] == key ? low : nil
    }

    /// What we believe the peer holds contiguously of `author` (0 before its hello).
    private func peerHas(_ author: PublicKey) -> UInt64 {
        if let seq = peerVector?[author] { return seq }
        return peerOnlyIndex(author).map { peerOnlySeqs[$0] & ~Self.caughtUpBit } ?? 0
    }

    /// The highest seq the peer has shown it holds of `author`.
    private func peerHeld(_ author: PublicKey) -> UInt64 {
        if let seq = peerHolds[author] { return seq }
        return peerOnlyIndex(author).map { peerOnlySeqs[$0] & ~Self.caughtUpBit } ?? 0
    }

    /// We now hold `seq` of an author kept by prefix: caught up with it if the peer had no more.
    private mutating func satisfyPeerOnly(_ author: PublicKey, seq: UInt64) {
        guard let i = peerOnlyIndex(author) else { return }
        let entry = peerOnlySeqs[i]
        guard entry & Self.caughtUpBit == 0, seq >= entry else { return }
        peerOnlySeqs[i] = entry | Self.caughtUpBit
        peerOnlyMissing -= 1
    }

    /// Sends our vector with digests again (in parts), for the peer to compare: run when the
    /// session has caught up, so forks below where the two sides stood at hello are found too.
    public mutating func summary(localVector vector: [PublicKey: UInt64], digests: [PublicKey: UInt64]) -> [SyncDirective] {
        guard isEstablished else { return [] }
        let parts = SyncMessage.parts(vector, digests: digests)
        return parts.enumerated().map { i, part in .send(.summary(vector: part, more: i < parts.count - 1)) }
    }

    /// The shell found that the peer's records of these authors differ from ours at the same
    /// seqs (digests differ): send the peer every record of theirs we hold, all variants.
    public mutating func resend(_ authors: [PublicKey]) -> [SyncDirective] {
        guard !isClosed else { return [] }
        guard peerVector != nil else {
            pendingResend.formUnion(authors)
            return []
        }
        for author in authors { lowerForResend(author) }
        var out: [SyncDirective] = []
        pump(&out)
        return out
    }

    private mutating func lowerForResend(_ author: PublicKey) {
        guard (localVector[author] ?? 0) > 0 else { return }
        peerVector?[author] = 0
        peerHolds[author] = 0
        enqueue(author)
    }

    /// The shell found the peer at fault (e.g. a blob it never asked for): close with `reason`.
    public mutating func violation(_ reason: String) -> [SyncDirective] {
        close("protocol violation: \(reason)")
    }

    private mutating func close(_ reason: String) -> [SyncDirective] {
        guard !isClosed else { return [] }
        isClosed = true
        ready = []
        workQueue = []
        queued = []
        missing = [:]
        deferrals = [:]
        peerOnlyKeys = []
        peerOnlySeqs = []
        peerOnlyMissing = 0
        helloParts = [:]
        fetching = nil
        return [.close(reason)]
    }

    private mutating func noteMissing() {
        for (author, seq) in peerHello where seq > (localVector[author] ?? 0) { missing[author] = seq }
        peerHello = [:]
    }

    private mutating func enqueue(_ author: PublicKey) {
        if queued.insert(author).inserted { workQueue.append(author) }
    }

    private mutating func queueAllWork() {
        guard let pv = peerVector else { return }
        for (author, seq) in localVector.sorted(by: { $0.key < $1.key }) where seq > (pv[author] ?? peerHas(author)) {
            enqueue(author)
        }
    }

    /// Sends what the window allows, asking for the next range first while the next batch is
    /// not full and work waits: a batch carries records of many authors (a campus is many
    /// accounts with few records each; a batch per author made thousands of tiny batches, each a
    /// transaction and an ack at the receiver).
    private mutating func pump(_ out: inout [SyncDirective]) {
        guard isEstablished else { return }
        while true {
            if inFlight < settings.window, fetching == nil, ready.count < settings.batchSize, let next = nextFetch() {
                fetching = next
                out.append(.fetch(author: next.author, seqs: next.seqs))
                return
            }
            guard inFlight < settings.window, !ready.isEmpty else { return }
            sendBatch(&out)
        }
    }

    /// The next author's range the peer lacks, from the work queue (nil: no work left).
    private mutating func nextFetch() -> (author: PublicKey, seqs: ClosedRange<UInt64>)? {
        while !workQueue.isEmpty {
            let author = workQueue.removeFirst()
            queued.remove(author)
            let have = localVector[author] ?? 0
            let peerHas = peerHas(author)
            guard have > peerHas else { continue }
            return (author, (peerHas + 1)...min(have, peerHas + UInt64(settings.batchSize)))
        }
        return nil
    }

    /// One `records` message of what is ready, within the batch's record and byte bounds.
    private mutating func sendBatch(_ out: inout [SyncDirective]) {
        var batch: [[UInt8]] = []
        var bytes = 0
        // The whole message (tag, count, a length per record) stays within maxBatchBytes,
        // which is also the most a frame carries.
        while let next = ready.first, batch.count < settings.batchSize,
              3 + 4 * (batch.count + 1) + bytes + next.count <= SyncLimits.maxBatchBytes || batch.isEmpty {
            ready.removeFirst()
            // Pushed while the window was full, and the peer has sent it to us since.
            if let p = try? RecordPosition.peek(next), p.seq <= peerHeld(p.author) { continue }
            batch.append(next)
            bytes += next.count
        }
        guard !batch.isEmpty else { return }
        inFlight += 1
        recordsSent += batch.count
        out.append(.send(.records(batch)))
    }
}
