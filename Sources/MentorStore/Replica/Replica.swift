import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import MentorCore
import MentorCrypto

/// What applying one record did.
public enum ApplyOutcome: Equatable, Sendable {
    /// Stored and merged (plus any held records of its author it released).
    case applied
    /// Already held, or superseded by what is held (a card edit each of whose fields has a newer
    /// winner: not stored, PROTOCOL.md §9.3): nothing changed. No offence either way.
    case duplicate
    /// Verified and kept aside until its author's first record (seq 1) arrives.
    case held
    /// A second record for an (author, seq) we hold: the author's key signed two histories
    /// (the same account used on two nodes, or a stolen key). Evidence is kept, the author is
    /// marked forked, and the record is merged as a write concurrent with its sibling.
    case forked
    /// Verified, but dated more than `Settings.futureTolerance` ahead of this node's clock (and
    /// at most `Settings.maxHoldAhead`): kept aside, not merged, and applied once due
    /// (`Replica.releaseDue()`). Survives a restart.
    case heldUntilDue
    /// Refused: nothing was stored (equivocation evidence aside). Whether the peer that sent it
    /// is at fault is `RecordError.Code.isOffence`.
    case refused(RecordError)

    public var isStored: Bool { self == .applied || self == .forked || self == .held || self == .heldUntilDue }
}

/// The local replica: the verified records its state needs (superseded card edits are dropped,
/// PROTOCOL.md §9.3), and the state materialized from them, in SQLite.
///
/// All access goes through one `DatabaseQueue`, so records apply one batch at a time and every
/// batch is one transaction: the raw records and the materialized cards, likes, matches and
/// messages change together or not at all. Applying the same set of records in any order, with
/// duplicates, gives the same `digest()`.
///
/// `@unchecked Sendable`: the mutable state (`openers`) is only touched inside closures run by
/// `queue`, which runs them one at a time; everything else is immutable.
public final class Replica: @unchecked Sendable {
    public struct Settings: Sendable {
        /// Records held back because their author's seq 1 is not held yet, across all authors.
        public var maxPending = 100_000
        /// The highest seq held back before its author's seq 1 arrives (further: refused as
        /// `sequence-gap-too-large`, asked for again later).
        public var maxSequenceGap = Limits.maxSequenceGap
        /// Records kept per (author, seq): the lowest IDs win, so every replica keeps the same ones.
        public var maxVariantsPerSeq = 2
        public var synchronous = Database.Options.Synchronous.normal
        /// SQLite's page cache for the replica, in KiB. A sync from many authors touches each
        /// author's rows, card registers and the reconciliation tree's leaves all over the file;
        /// SQLite's default 2 MiB reads them again batch after batch (the local import used
        /// 16 MiB already, `ImportSettings.cacheKiB`). Pages are taken as used, so a small
        /// replica costs no more.
        public var cacheKiB = 16 * 1024
        /// WAL pages between automatic checkpoints. Each batch rewrites pages all over the
        /// reconciliation tree and the indexes; checkpointing every 1,000 pages (SQLite's
        /// default) copies and syncs them again batch after batch. 10,000 (about 40 MiB of WAL)
        /// is what the local import used (`ImportSettings.walAutocheckpointPages`). With
        /// `synchronous = NORMAL` a power loss may lose the last commits since the checkpoint,
        /// never consistency; a sync takes them again from the peer.
        public var walAutocheckpointPages = 10_000
        /// Milliseconds since the Unix epoch (injected so tests control time).
        public var now: @Sendable () -> UInt64 = { WallClock.millis() }
        /// Records dated at most this far ahead of `now` (ms) are applied at once.
        public var futureTolerance = Limits.maxFutureSkewMillis
        /// Records dated further ahead than the tolerance but at most this far (ms) are held
        /// until due; further still, they are refused as `timestamp-in-future` (not an offence:
        /// nothing is kept and the peer offers them again in a later session).
        public var maxHoldAhead = Limits.maxHoldAheadMillis
        /// Records held until due, at most, and their bytes (all authors together); past
        /// either, more are refused as `timestamp-in-future` (again not an offence).
        public var maxHeldUntilDue = 10_000
        public var maxHeldUntilDueBytes = 16 * 1024 * 1024
        /// The proof of work an account's first record must carry (PROTOCOL.md §6.1): the
        /// network's difficulty and ID. The daemon sets it from `network_work_bits` and the
        /// network key; without it a replica asks for none (difficulty 0).
        public var accountWork = AccountWork.Requirement.none
        /// How long (ms) a record stays held back waiting for its author's seq 1: then it is
        /// dropped, and a peer that holds it offers it again (PROTOCOL.md §9).
        public var maxPendingAge: UInt64 = 3_600_000
        /// Whether superseded card records are dropped (PROTOCOL.md §9.3). Always on in a node:
        /// replicas that are to reconcile to equal sets must all compact. Off only to measure
        /// what compaction saves (`mentormate-bench reconcile --only g`) and in tests comparing
        /// a compacted replica with a full one.
        public var compaction = true
        /// The reconciliation tree's deferral bounds: a write that takes the leaves waiting to
        /// at least `reconDeferredLeaves`, or the IDs added to at least `reconDeferredIDs`,
        /// writes the tree itself; below, the changes wait for the next read of the tree
        /// (`Replica.settleRecon`). Internal: tests set them, so they exercise the deferral whatever
        /// the default.
        var reconDeferredLeaves = 4096
        var reconDeferredIDs = 16_384

        public init() {}
    }

    public let path: String
    public let settings: Settings
    let queue: DatabaseQueue
    /// The reconciliation tree's changed leaves: of the write in progress, and of committed
    /// writes not yet written into `recon_nodes` (its root row is absent meanwhile); `reconRebuild`
    /// when a rolled-back write lost track of them. Confined to `queue` (`settleRecon`).
    var reconInTransaction = ReconDirty()
    var reconPending = ReconDirty()
    var reconRebuild = false
    /// Unlocked local accounts, by key. Confined to `queue`.
    private var openers: [PublicKey: SealedOpener] = [:]
    /// `counts()` until a write changes them in a way it cannot say exactly. Confined to `queue`.
    var cachedCounts: ReplicaCounts?
    /// What the write in progress changed in the tables `counts()` counts, when it knows it
    /// exactly (an `ApplyBatch` counts its own inserts and deletes); nil: unknown, so the counts
    /// are read afresh next time. Keeping them across writes is what makes `status` cheap while
    /// a sync applies thousands of small batches: reading them counts every row (every record
    /// and every author's card). Confined to `queue`.
    var countChanges: CountChanges?
    /// How often `counts()` counted the tables (for tests). Confined to `queue`.
    var countsRead = 0

    /// Opens (creating if needed) the replica at `path` and runs pending schema migrations.
    public init(path: String, settings: Settings = Settings()) throws(StoreError) {
        self.path = path
        self.settings = settings
        queue = try DatabaseQueue(path: path, options: .init(synchronous: settings.synchronous, cacheKiB: settings.cacheKiB,
                                                                   walAutocheckpointPages: settings.walAutocheckpointPages))
        try run { db throws(StoreError) in
            try ReplicaSchema.migrator.migrate(db)
            try Self.computeMissingDigests(db)
            try ReconIndex.buildIfMissing(db)
        }
        try releaseHeldOnOpen()
    }

    /// Starts the lifetime of records held back before migration 9 (`arrived` 0) now, and
    /// applies those an older build held back behind a gap of an admitted author: since
    /// migration 9 only a missing seq 1 holds a record back.
    private func releaseHeldOnOpen() throws(StoreError) {
        let now = settings.now()
        let stale = try read { db throws(StoreError) in try db.queryOne("SELECT 1 FROM pending WHERE arrived = 0 LIMIT 1") != nil }
        guard stale else { return }
        try write { db throws(StoreError) in
            try db.execute("UPDATE pending SET arrived = ? WHERE arrived = 0", [.integer(Int64(clamping: now))])
            var batch = ApplyBatch(db: db, settings: settings, openers: [:], now: now)
            try batch.releaseAdmittedPending()
            try batch.finish(recon: &reconInTransaction)
        }
    }

    /// Fills the digest of authors that have none yet (after migration 3).
    static func computeMissingDigests(_ db: Database) throws(StoreError) {
        let authors = try db.query("SELECT id FROM authors WHERE digest IS NULL").compactMap { $0.int64(0) }
        guard !authors.isEmpty else { return }
        try db.transaction { () throws(StoreError) in
            for author in authors {
                var digest: Int64 = 0
                try db.forEachRow("SELECT id FROM records WHERE author = ?", [.integer(author)]) { row in
                    if let id = row.blob(0) { digest ^= AuthorDigest.term(id) }
                }
                try db.execute("UPDATE authors SET digest = ? WHERE id = ?", [.integer(digest), .integer(author)])
            }
        }
    }

    /// Brings the reconciliation tree up to date (so the next open need not rebuild it) and
    /// closes the connection.
    public func close() throws(StoreError) {
        try? queue.inDatabase { db throws(StoreError) in try bringReconUpToDate(db) }
        try queue.close()
    }

    // MARK: Applying records

    /// Verifies (on all cores) and applies a batch in one transaction. A `StoreError` means the
    /// transaction did not commit and nothing of the batch was stored.
    public func apply(batch: [[UInt8]]) throws(StoreError) -> [ApplyOutcome] {
        try apply(verified: verify(batch))
    }

    public func apply(_ encoded: [UInt8]) throws(StoreError) -> ApplyOutcome {
        try apply(batch: [encoded])[0]
    }

    /// Decodes and verifies signatures in parallel, and checks the proof of work of every
    /// account's first record against `work` (one hash each). Pure: touches no state. Every
    /// record from outside goes through this (or the instance method) before `apply(verified:)`.
    public static func verify(_ batch: [[UInt8]], work: AccountWork.Requirement) -> [Result<VerifiedRecord, RecordError>] {
        parallelMap(batch) { bytes in
            Result { () throws(RecordError) in
                let v = try VerifiedRecord(bytes)
                if let refusal = AccountWork.refusal(of: v.record, requirement: work) { throw refusal }
                return v
            }
        }
    }

    /// `verify(_:work:)` with this replica's `settings.accountWork`.
    public func verify(_ batch: [[UInt8]]) -> [Result<VerifiedRecord, RecordError>] {
        Self.verify(batch, work: settings.accountWork)
    }

    /// Applies verified records (refusals pass through) in one transaction. The records must
    /// come from `verify` (or be this node's own, checked the same way by the caller).
    public func apply(verified: [Result<VerifiedRecord, RecordError>]) throws(StoreError) -> [ApplyOutcome] {
        try applyReporting(verified: verified).outcomes
    }

    /// Verifies and applies a batch, and also returns every record that became part of the
    /// replica — including held records that this batch released — in the order stored. This is
    /// what the node indexes and pushes on to its peers.
    public func applyReporting(batch: [[UInt8]]) throws(StoreError) -> ApplyReport {
        try applyReporting(verified: verify(batch))
    }

    public func applyReporting(verified: [Result<VerifiedRecord, RecordError>]) throws(StoreError) -> ApplyReport {
        let now = settings.now()
        return try write { db throws(StoreError) in
            var batch = ApplyBatch(db: db, settings: settings, openers: openers, now: now)
            try batch.expirePending(now: now)
            var outcomes: [ApplyOutcome] = []
            outcomes.reserveCapacity(verified.count)
            for item in verified {
                switch item {
                case .failure(let e): outcomes.append(.refused(e))
                case .success(let v):
                    if v.record.timestamp > now &+ settings.futureTolerance {
                        outcomes.append(try batch.holdUntilDue(v, now: now))
                    } else {
                        outcomes.append(try batch.apply(v))
                    }
                }
            }
            try batch.finish(recon: &reconInTransaction)
            openers = batch.openers
            countChanges = batch.countChanges
            return ApplyReport(outcomes: outcomes, stored: batch.stored, pairs: batch.pairChanges)
        }
    }

    /// Applies the records held until due whose time has come (dated at most
    /// `futureTolerance` ahead of `now`), in (author, seq) order, in one transaction; returns
    /// every record that became part of the replica (with held records they released).
    public func releaseDue() throws(StoreError) -> [VerifiedRecord] {
        try releaseDueReporting().stored
    }

    /// `releaseDue`, with the pairs of local accounts the released records changed.
    public func releaseDueReporting() throws(StoreError) -> ApplyReport {
        let now = settings.now()
        return try write { db throws(StoreError) in
            var batch = ApplyBatch(db: db, settings: settings, openers: openers, now: now)
            try batch.expirePending(now: now)
            try batch.releaseDue(now: now)
            try batch.finish(recon: &reconInTransaction)
            openers = batch.openers
            countChanges = batch.countChanges
            return ApplyReport(outcomes: [], stored: batch.stored, pairs: batch.pairChanges)
        }
    }

    /// The earliest timestamp among the records held until due (nil: none is held).
    public func earliestHeldUntilDue() throws(StoreError) -> UInt64? {
        try read { db throws(StoreError) in
            try db.queryOne("SELECT min(timestamp) FROM held_until_due")?.int64(0).map { UInt64(max($0, 0)) }
        }
    }

    // MARK: Local accounts

    /// Hosts `account` here: its sealed records (likes, chats, unmatches) are opened and
    /// materialized from now on. The first unlock opens every sealed record already held; later
    /// ones open only those that arrived while the account was locked.
    public func unlock(_ account: SigningKeyPair) throws(StoreError) {
        try write { db throws(StoreError) in
            let key = account.publicKey.key
            try db.execute("INSERT OR IGNORE INTO local_accounts(key) VALUES (?)", [.blob(key.bytes)])
            var batch = ApplyBatch(db: db, settings: settings, openers: [key: SealedOpener(account: account)])
            try batch.openPending(for: key)
            openers[key] = batch.openers[key]
        }
    }

    /// Starts opening `account`'s sealed records on this node: with its account key where the
    /// node holds it, and with the encryption keys `device` received (its certificate and the
    /// rotations since, PROTOCOL.md §7.5) — more arrive with later certificates and rotations.
    public func unlock(account: PublicKey, accountKeys: SigningKeyPair?, device: SigningKeyPair?) throws(StoreError) {
        try write { db throws(StoreError) in
            try db.execute("INSERT OR IGNORE INTO local_accounts(key) VALUES (?)", [.blob(account.bytes)])
            var batch = ApplyBatch(db: db, settings: settings, openers: [:])
            var keyring = try device.map { d throws(StoreError) in try batch.keyring(of: account, for: d) } ?? AccountKeyring()
            // The account key makes every epoch's key itself (PROTOCOL.md §7.5).
            if let accountKeys,
               let epoch = try db.queryOne("SELECT max(epoch) FROM account_keys WHERE account = ?", [.blob(account.bytes)])?.int64(0), epoch >= 1 {
                keyring.merge(AccountKeyring.derived(from: accountKeys, epochs: 1...UInt32(clamping: epoch)))
            }
            batch.openers[account] = SealedOpener(account: account, accountKeys: accountKeys, device: device, keyring: keyring)
            try batch.openPending(for: account)
            openers[account] = batch.openers[account]
        }
    }

    /// The key `account`'s likes and messages are sealed with on this node (its newest
    /// encryption key this node's device received); nil: none (seal with the account key).
    public func sealingKey(for account: PublicKey) -> SealingKey? {
        (try? read { _ throws(StoreError) in openers[account]?.sealingKey }) ?? nil
    }

    /// The newest encryption key `account` published (what to seal to); nil: none, seal to
    /// the X25519 form of its account key.
    public func encryptionKey(of account: PublicKey) throws(StoreError) -> EncryptionKey? {
        try read { db throws(StoreError) in
            guard let row = try db.queryOne("SELECT epoch, public FROM account_keys WHERE account = ? ORDER BY epoch DESC, public LIMIT 1",
                                            [.blob(account.bytes)]),
                  let epoch = row.int64(0), let key = row.blob(1) else { return nil }
            return EncryptionKey(epoch: UInt32(clamping: epoch), publicKey: key)
        }
    }

    /// The newest epoch `account` published (0: none).
    public func encryptionEpoch(of account: PublicKey) throws(StoreError) -> UInt32 {
        try encryptionKey(of: account)?.epoch ?? 0
    }

    /// Stops opening sealed records for `account` (its materialized view stays).
    public func lock(_ account: PublicKey) throws(StoreError) {
        try write(countsUnchanged: true) { _ throws(StoreError) in openers[account] = nil }
    }

    // MARK: Helpers

    /// Runs `body` in a write transaction. The cached counts survive it when the body said what
    /// it changed (`countChanges`), or when `countsUnchanged` (it writes none of the counted tables).
    func write<T>(countsUnchanged: Bool = false, _ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try queue.inDatabase { db throws(StoreError) in
            let before = cachedCounts
            cachedCounts = nil
            countChanges = countsUnchanged ? CountChanges() : nil
            defer { countChanges = nil }
            reconInTransaction = ReconDirty()
            var settled: (waiting: ReconDirty, wroteTree: Bool)?
            let result: T
            do throws(StoreError) {
                result = try db.inTransaction(.immediate, { () throws(StoreError) in
                    let result = try body(db)
                    settled = try settleRecon(db)
                    return result
                }, convert: { $0 })
            } catch {
                // Rolled back: the tree changes it made are undone too. If it had brought the tree
                // up to date, the changes it took from `reconPending` are lost: rebuild instead.
                if settled?.wroteTree == true { reconRebuild = true }
                throw error
            }
            // Committed: what the body counted is now true of the tables.
            if let before, let changes = countChanges, changes.exact { cachedCounts = changes.applied(to: before) }
            if let settled {
                reconPending = settled.waiting
                if settled.wroteTree { reconRebuild = false }
            }
            return result
        }
    }

    // MARK: The reconciliation tree, brought up to date in batches

    // A write whose changed leaves, joined to those waiting, stay below
    // `settings.reconDeferredLeaves` (4,096) and `reconDeferredIDs` (16,384) leaves the tree
    // waiting; the next read of it (`withReconView`, `reconSetSize`, `reconRecords(depth:...)`,
    // each through `readRecon`), the next write past the bounds, or `close` brings it up to
    // date. Per write, the tree's upper levels and their pages are rewritten once for every few
    // thousand records instead of once per received batch.

    /// In a write's transaction: the tree changes of this write (`reconInTransaction`) joined to
    /// those waiting (`reconPending`); written into `recon_nodes` when past the bounds, else left
    /// waiting with the tree's root row deleted, so that a crash before the tree is brought up
    /// to date rebuilds it on the next open (`ReconIndex.buildIfMissing`). What waits after the
    /// write (nil: the write changed no leaf); set as `reconPending` once it commits.
    private func settleRecon(_ db: Database) throws(StoreError) -> (waiting: ReconDirty, wroteTree: Bool)? {
        guard !reconInTransaction.leaves.isEmpty else { return nil }
        var waiting = reconPending
        waiting.merge(reconInTransaction)
        reconInTransaction = ReconDirty()
        if reconRebuild {
            try ReconIndex.rebuild(db)
            return (ReconDirty(), true)
        }
        guard waiting.leaves.count >= settings.reconDeferredLeaves || waiting.addedIDs >= settings.reconDeferredIDs else {
            try ReconIndex.markStale(db)
            return (waiting, false)
        }
        try ReconIndex.update(db, &waiting)
        return (ReconDirty(), true)
    }

    /// On the queue, before the tree is read: writes what waits into `recon_nodes`, in a
    /// transaction of its own (a rebuild if a rolled-back write lost track of it).
    func bringReconUpToDate(_ db: Database) throws(StoreError) {
        if reconRebuild {
            try db.inTransaction(.immediate, { () throws(StoreError) in try ReconIndex.rebuild(db) }, convert: { $0 })
            reconRebuild = false
            reconPending = ReconDirty()
            return
        }
        guard !reconPending.leaves.isEmpty else { return }
        var waiting = reconPending
        try db.inTransaction(.immediate, { () throws(StoreError) in try ReconIndex.update(db, &waiting) }, convert: { $0 })
        reconPending = ReconDirty()
    }

    func read<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try queue.read(body)
    }

    func run<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try queue.inDatabase(body)
    }
}

/// Wall-clock milliseconds since the Unix epoch (the only place the store reads the clock; tests
/// inject their own). Not `Clock`: that name is Swift's clock protocol.
public enum WallClock {
    public static func millis() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}

/// Maps `items` on all cores, keeping order.
func parallelMap<T: Sendable, R: Sendable>(_ items: [T], _ transform: @Sendable (T) -> R) -> [R] {
    let count = items.count
    guard count > 64 else { return items.map(transform) }
    let chunks = min(count / 32, 64)
    let results = UnsafeMutableBufferPointer<R?>.allocate(capacity: count)
    results.initialize(repeating: nil)
    defer { results.deinitialize(); results.deallocate() }
    // Each iteration writes a disjoint index range, so the unchecked sharing is race-free.
    nonisolated(unsafe) let out = results
    DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
        let lo = chunk * count / chunks, hi = (chunk + 1) * count / chunks
        for i in lo..<hi { out[i] = transform(items[i]) }
    }
    return results.map { $0! }
}
