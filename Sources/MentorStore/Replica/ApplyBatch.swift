import MentorCore
import MentorCrypto

/// One write transaction's worth of applying: sequence checks, hold-back, equivocation, and
/// materialization. Lives only inside `Replica.write`.
struct ApplyBatch {
    let db: Database
    let settings: Replica.Settings
    var openers: [PublicKey: SealedOpener]

    struct AuthorState {
        var id: Int64
        var contiguous: UInt64
        var forked: Bool
        var dirty: Bool
    }
    /// Authors touched by this batch; written back in `finish()`.
    private var authors: [PublicKey: AuthorState] = [:]
    /// For each author (by id) touched by this batch, a bound no seq in `records` of that author
    /// exceeds: a record past it cannot be a stored duplicate, so its lookup is skipped.
    private var recordSeqBound: [Int64: UInt64] = [:]
    private var pendingCount: Int?
    /// Whether `pending` has rows, when known and `pendingCount` is not: false lets a batch skip
    /// the hold-back lookups (the usual case, a sync delivering each author's records in order).
    private var pendingHasRows: Bool?
    /// The statements run for every record, by the address of their SQL literal: looking them up
    /// in the connection's cache by text hashed the whole SQL string on every use.
    private let statements = StatementsByLiteral()
    /// Pairs whose view must be recomputed at the end of the batch.
    private var dirtyPairs: Set<PairKey> = []
    /// The pairs of local accounts whose summary this batch changed (`finish`), in no order.
    private(set) var pairChanges: [PairChange] = []
    /// The entries of each card register this batch has read or written, exactly as a SELECT
    /// of `card_entries` would return them now, so a register written again in the same batch
    /// is not read back and its clocks not decoded again. Emptied when card entries change
    /// anywhere else (`unstore`, `rebuildCard`).
    private var cardRegisters: [CardRegister: [RegisterEntry<[UInt8]>]] = [:]
    /// Authors whose row this batch made (`ensureRow`): they had no card entries before it, so
    /// a register of theirs not in `cardRegisters` is empty and is not read — at a campus's
    /// many new accounts, seven reads per first card. Emptied with `cardRegisters`.
    private var newAuthors: Set<Int64> = []
    /// The reconciliation tree's leaves whose IDs this batch changed (`ReconIndex`).
    var recon = ReconDirty()

    /// What this batch added to and removed from the counted tables (`Replica.counts()`).
    var countChanges = CountChanges()
    /// Authors (by id) known to have card entries now: their next new entry adds no card.
    private var withCard: Set<Int64> = []

    struct PairKey: Hashable { var account: PublicKey; var other: PublicKey }
    struct CardRegister: Hashable { var author: Int64; var field: UInt8 }

    /// This node's clock when the batch began (ms): when a held-back record arrived.
    let now: UInt64

    init(db: Database, settings: Replica.Settings, openers: [PublicKey: SealedOpener], now: UInt64? = nil) {
        self.db = db
        self.settings = settings
        self.openers = openers
        self.now = now ?? settings.now()
    }

    // MARK: Sequence, hold-back, equivocation

    /// Applies one verified record (PROTOCOL.md §9, step 3 on).
    ///
    /// Records of an admitted author — one whose seq 1 (with its proof of work) is stored —
    /// apply at once, whatever the seqs before them: every merge is a CRDT, so the order does
    /// not matter. A card record that is superseded on arrival (each field it writes already
    /// has a newer winner) is not stored: it is remembered in `superseded` and reads as a
    /// `duplicate`. Records of an author not admitted yet wait in `pending` until its seq 1.
    mutating func apply(_ v: VerifiedRecord) throws(StoreError) -> ApplyOutcome {
        let r = v.record
        var author = try state(of: r.author)
        // Each lookup runs only where the record could be: not past the author's highest stored
        // seq (a superseded record's seq is below the record that superseded it), not while
        // `pending` is known to be empty.
        let mayBeHeld = author.id != 0 && r.seq <= recordSeqBound[author.id, default: .max]
        if mayBeHeld {
            if try exists("SELECT 1 FROM records WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) { return .duplicate }
            if try wasSuperseded(author.id, r.seq, v.id) { return .duplicate }
        }
        if author.id != 0, try pendingMayHaveRows(),
           try exists("SELECT 1 FROM pending WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) {
            return .duplicate
        }
        // A device's records apply once its certificate is stored (which needs the account's
        // seq 1, with its proof of work): then in any order, like the account's own.
        var admitted = r.seq == 1 || author.contiguous > 0
        if r.isDeviceSigned {
            switch try standing(of: r.author, in: r.account) {
            case .uncertified:
                admitted = false
            case .certified(let expires, let lastSeq):
                if let lastSeq, r.seq > lastSeq {
                    return .refused(RecordError(.deviceRevoked,
                        "\(r.author.shortID)… seq \(r.seq) was signed after the device was revoked (its last valid seq is \(lastSeq)); not kept"))
                }
                if let expires, r.timestamp > expires {
                    return .refused(RecordError(.deviceExpired,
                        "\(r.author.shortID)… seq \(r.seq) is dated after the device's certificate expired; not kept"))
                }
                admitted = true
            }
        }
        // A membership certificate counts from the moment its card is stored or held back
        // (migration 24): its account's first record may be waiting for it (§6.8).
        if r.type == .profile, let certificate = ProfileCard.membership(inBody: r.body) {
            try Replica.noteMembership(certificate, in: db)
        }
        if admitted {
            try ensureRow(&author, r.author)
            if mayBeHeld, try seqTaken(author.id, r.seq) {
                return try applyVariant(v, author: &author, key: r.author)
            }
            let kept = try store(v, author: &author, key: r.author)
            if let refused = refusal { refusal = nil; return .refused(refused) }
            if r.seq == 1 { try releasePending(of: r.author) }
            return kept ? .applied : .duplicate
        }
        guard r.seq <= settings.maxSequenceGap else {
            return .refused(RecordError(.sequenceGapTooLarge,
                "seq \(r.seq) of \(r.author.shortID)… arrived before its seq 1; at most seq \(settings.maxSequenceGap) is held back until then — sync the earlier records first"))
        }
        let pending = try pendingTotal()
        guard pending < settings.maxPending else {
            return .refused(RecordError(.pendingFull,
                "\(pending) records are already waiting for their author's first record; try again after syncing"))
        }
        try ensureRow(&author, r.author)
        try statement("INSERT INTO pending(author, seq, id, bytes, arrived) VALUES (?, ?, ?, ?, ?)")
            .run([.integer(author.id), .integer(Int64(r.seq)), .blob(v.id), .blob(v.encoded), .integer(Int64(clamping: now))])
        recon.added(v.id)
        pendingCount = pending + 1
        pendingHasRows = true
        countChanges.pending += 1
        return .held
    }

    /// Whether a record of the author with this seq is stored or was superseded.
    private func seqTaken(_ authorID: Int64, _ seq: UInt64) throws(StoreError) -> Bool {
        let key: [SQLValue] = [.integer(authorID), .integer(Int64(seq))]
        if try statement("SELECT 1 FROM records WHERE author = ? AND seq = ? LIMIT 1").queryOne(key) != nil { return true }
        return try statement("SELECT 1 FROM superseded WHERE author = ? AND seq = ? LIMIT 1").queryOne(key) != nil
    }

    /// Whether this record was superseded here (dropped, or not stored on arrival).
    private func wasSuperseded(_ authorID: Int64, _ seq: UInt64, _ id: [UInt8]) throws(StoreError) -> Bool {
        try exists("SELECT 1 FROM superseded WHERE author = ? AND seq = ? AND id_prefix = ?", authorID, seq, Array(id.prefix(8)))
    }

    // MARK: Held records' lifetime

    /// Drops the records held back longer than `maxPendingAge` (their author's seq 1 never
    /// came): they leave the reconciled set, and a peer that still holds them offers them again.
    mutating func expirePending(now: UInt64) throws(StoreError) {
        guard try pendingMayHaveRows() else { return }
        let before: SQLValue = .integer(Int64(clamping: now) - Int64(clamping: settings.maxPendingAge))
        let expired = try db.query("SELECT id FROM pending INDEXED BY pending_by_arrival WHERE arrived < ?", [before])
        guard !expired.isEmpty else { return }
        for row in expired { if let id = row.blob(0) { recon.removed(id) } }
        try db.execute("DELETE FROM pending WHERE arrived < ?", [before])
        countChanges.pending -= db.changes
        pendingCount = nil
        pendingHasRows = nil
    }

    /// Applies the held-back records of authors that are admitted (their seq 1 is stored): after
    /// migration 9, the records an older build held back behind a gap.
    mutating func releaseAdmittedPending() throws(StoreError) {
        guard try pendingMayHaveRows() else { return }
        let rows = try db.query("""
            SELECT a.key FROM authors a WHERE a.contiguous > 0 AND EXISTS (SELECT 1 FROM pending p WHERE p.author = a.id)
            """)
        for row in rows {
            guard let key = row.blob(0).flatMap(PublicKey.init(bytes:)) else { continue }
            _ = try state(of: key)
            try releasePending(of: key)
        }
    }

    // MARK: Records dated ahead of this node's clock

    /// Records and bytes in `held_until_due`, once counted.
    private var heldUntilDueTotals: (count: Int, bytes: Int)?

    /// A verified record dated more than the tolerance ahead of `now`: held until due if it is
    /// at most `maxHoldAhead` ahead and the area has room, else refused (`timestamp-in-future`,
    /// which is no offence: the peer offers it again later).
    mutating func holdUntilDue(_ v: VerifiedRecord, now: UInt64) throws(StoreError) -> ApplyOutcome {
        let r = v.record
        let ahead = r.timestamp - min(now, r.timestamp)
        guard ahead <= settings.maxHoldAhead else {
            return .refused(RecordError(.timestampInFuture,
                "timestamp is \(ahead / 1000) s ahead of this node's clock, past the \(settings.maxHoldAhead / 1000) s a record is held until due; not kept, the peer offers it again later — check the author's clock"))
        }
        let key: [SQLValue] = [.blob(r.author.bytes), .integer(Int64(r.seq)), .blob(v.id)]
        if try statement("SELECT 1 FROM held_until_due WHERE author = ? AND seq = ? AND id = ?").queryOne(key) != nil {
            return .duplicate
        }
        let author = try state(of: r.author)
        if author.id != 0 {
            if try exists("SELECT 1 FROM records WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) { return .duplicate }
            if try wasSuperseded(author.id, r.seq, v.id) { return .duplicate }
        }
        let totals: (count: Int, bytes: Int)
        if let known = heldUntilDueTotals {
            totals = known
        } else {
            let row = try db.queryOne("SELECT count(*), coalesce(sum(length(bytes)), 0) FROM held_until_due")
            totals = (row?.int(0) ?? 0, row?.int(1) ?? 0)
        }
        guard totals.count < settings.maxHeldUntilDue, totals.bytes + v.encoded.count <= settings.maxHeldUntilDueBytes else {
            heldUntilDueTotals = totals
            return .refused(RecordError(.timestampInFuture,
                "timestamp is \(ahead / 1000) s ahead of this node's clock and the \(totals.count) records held until due fill their area; not kept, the peer offers it again later"))
        }
        try statement("INSERT INTO held_until_due(author, seq, id, timestamp, bytes) VALUES (?, ?, ?, ?, ?)")
            .run(key + [.integer(Int64(clamping: r.timestamp)), .blob(v.encoded)])
        heldUntilDueTotals = (totals.count + 1, totals.bytes + v.encoded.count)
        countChanges.heldUntilDue += 1
        return .heldUntilDue
    }

    /// Applies, in (author, seq, ID) order, the held records dated at most the tolerance ahead
    /// of `now`, as if they had just arrived.
    mutating func releaseDue(now: UInt64) throws(StoreError) {
        let due: SQLValue = .integer(Int64(clamping: now.addingReportingOverflow(settings.futureTolerance).overflow
                                                      ? UInt64.max : now + settings.futureTolerance))
        // A held record is due at most `maxHoldAhead` after it arrived, so none outlives that
        // unless this node's clock was set back: those now dated further ahead than a record
        // may be held are dropped (the peers offer them again), so nothing is held for longer.
        let tooFar: SQLValue = .integer(Int64(clamping: now.addingReportingOverflow(settings.maxHoldAhead).overflow
                                                         ? UInt64.max : now + settings.maxHoldAhead))
        try db.execute("DELETE FROM held_until_due WHERE timestamp > ?", [tooFar])
        if db.changes > 0 {
            countChanges.heldUntilDue -= db.changes
            heldUntilDueTotals = nil
        }
        let rows = try db.query("SELECT bytes FROM held_until_due WHERE timestamp <= ? ORDER BY author, seq, id", [due])
        guard !rows.isEmpty else { return }
        try db.execute("DELETE FROM held_until_due WHERE timestamp <= ?", [due])
        countChanges.heldUntilDue -= db.changes
        heldUntilDueTotals = nil
        for row in rows {
            // Verified before it was held; one that no longer decodes (a damaged database) is dropped.
            guard let bytes = row.blob(0), let v = try? VerifiedRecord(alreadyVerified: bytes) else { continue }
            _ = try apply(v)
        }
    }

    /// A record for an (author, seq) already stored, or superseded, with a different ID.
    private mutating func applyVariant(_ v: VerifiedRecord, author: inout AuthorState, key: PublicKey) throws(StoreError) -> ApplyOutcome {
        let r = v.record
        let siblings = try db.cachedStatement("SELECT id, bytes FROM records WHERE author = ? AND seq = ? ORDER BY id")
            .query([.integer(author.id), .integer(Int64(r.seq))])
        // Keep the evidence: every record that shared this (author, seq) and is still stored (a
        // superseded one's bytes are gone; its evidence is there if the fork was seen before).
        let evidence = try db.cachedStatement("INSERT OR IGNORE INTO evidence(author, seq, id, bytes) VALUES (?, ?, ?, ?)")
        for row in siblings {
            try evidence.run([.integer(author.id), .integer(Int64(r.seq)), row[0], row[1]])
            countChanges.evidence += db.changes
        }
        try evidence.run([.integer(author.id), .integer(Int64(r.seq)), .blob(v.id), .blob(v.encoded)])
        countChanges.evidence += db.changes
        if !author.forked {
            countChanges.forkedAuthors += 1
            author.forked = true
            author.dirty = true
            authors[key] = author
        }
        // The variants seen at this seq: those stored and those superseded (by ID prefix). A
        // superseded one keeps its place, so which variants are kept depends only on the set
        // seen, not on whether a later edit had already superseded some when the next came.
        let atSeq: [SQLValue] = [.integer(author.id), .integer(Int64(r.seq))]
        let dropped = try statement("SELECT id_prefix FROM superseded WHERE author = ? AND seq = ?").query(atSeq).compactMap { $0.blob(0) }
        let slots = (siblings.compactMap { $0.blob(0) }.map { (prefix: Array($0.prefix(8)), stored: Optional($0)) }
                     + dropped.map { (prefix: $0, stored: [UInt8]?.none) })
            .sorted { $0.prefix.lexicographicallyPrecedes($1.prefix) }
        if slots.count >= settings.maxVariantsPerSeq {
            // Deterministic cap: the lowest IDs stay, so all replicas keep the same variants.
            guard let highest = slots.last, Array(v.id.prefix(8)).lexicographicallyPrecedes(highest.prefix) else {
                return .refused(RecordError(.equivocation,
                    "\(r.author.shortID)… already has \(slots.count) different records at seq \(r.seq); evidence kept, this one is not merged"))
            }
            if let id = highest.stored {
                try unstore(recordID: id, author: r.author, authorID: author.id, seq: r.seq)
            } else {
                try statement("DELETE FROM superseded WHERE author = ? AND seq = ? AND id_prefix = ?").run(atSeq + [.blob(highest.prefix)])
            }
        }
        _ = try store(v, author: &author, key: key)
        refusal = nil   // a variant's refusal (§6.6) is kept as evidence, like the fork
        return .forked
    }

    /// Applies every held-back record of an author whose seq 1 was just stored, in (seq, ID)
    /// order, as if it had just arrived.
    private mutating func releasePending(of key: PublicKey) throws(StoreError) {
        guard let author = authors[key], author.id != 0, try pendingMayHaveRows() else { return }
        let rows = try statement("SELECT id, bytes FROM pending WHERE author = ? ORDER BY seq, id").query([.integer(author.id)])
        guard !rows.isEmpty else { return }
        try statement("DELETE FROM pending WHERE author = ?").run([.integer(author.id)])
        for row in rows { if let id = row.blob(0) { recon.removed(id) } }
        pendingCount = pendingCount.map { $0 - rows.count }
        pendingHasRows = nil
        countChanges.pending -= rows.count
        for row in rows {
            // Held records were verified before they were held; one that no longer decodes (a
            // damaged database) is dropped.
            guard let v = row.blob(1).flatMap({ try? VerifiedRecord(alreadyVerified: $0) }) else { continue }
            _ = try apply(v)
        }
    }

    // MARK: Storing and materializing

    /// Every record this batch stored and still holds, in the order it was stored (released
    /// held records too; not those a later record of the batch superseded).
    var stored: [VerifiedRecord] {
        compactedInBatch.isEmpty ? storedInOrder : storedInOrder.filter { !compactedInBatch.contains($0.id) }
    }
    var storedInOrder: [VerifiedRecord] = []
    /// IDs of the records this batch dropped as superseded (some it stored itself).
    var compactedInBatch: Set<[UInt8]> = []
    /// How many records this batch dropped as superseded, or did not store for it (for tests).
    var supersededCount = 0
    /// Why `store` did not store a record it refused (a post's edit by another account, §6.6).
    var refusal: RecordError?
    /// Whether this batch purged a post (its search index is then rewritten in `finish`).
    var purgedPosts = false

    /// Stores and merges a record; false when it was superseded on arrival and not stored.
    /// Afterwards the records it superseded are dropped (`compact`) and the author's
    /// contiguous seq moves on if it can.
    private mutating func store(_ v: VerifiedRecord, author: inout AuthorState, key: PublicKey) throws(StoreError) -> Bool {
        let r = v.record
        let authorID = author.id
        let schema = RecordSchemas.schema(for: r.type)
        var displaced: [[UInt8]] = []
        // A card's registers are the account's, whichever of its keys wrote.
        let accountID = r.isDeviceSigned ? try rowID(of: r.account) : authorID
        if schema?.publicMerge == .fieldRegisters {
            let entered = try mergeCardFields(v, authorID: accountID, displaced: &displaced)
            // The account's seq 1 card stays whatever supersedes it: its proof of work admits
            // the account. A device's first card proves nothing and goes like any other.
            if !entered, r.seq > 1 || r.isDeviceSigned, settings.compaction {
                try noteSuperseded(authorID: authorID, seq: r.seq, id: v.id)
                supersededCount += 1
                try advanceContiguous(&author, key: key, past: r.seq)
                return false
            }
        }
        // A message (or contact) of a match its author's unmatch purged is not stored (PROTOCOL.md §8.8).
        let purgeTag = schema?.publicMerge == .sealed ? Self.purgeTag(of: v) : nil
        if Self.purgeable.contains(r.type), let purgeTag,
           try statement("SELECT 1 FROM purged WHERE account = ? AND tag = ?").queryOne([.blob(r.account.bytes), .blob(purgeTag)]) != nil {
            try noteSuperseded(authorID: authorID, seq: r.seq, id: v.id)
            supersededCount += 1
            try advanceContiguous(&author, key: key, past: r.seq)
            return false
        }
        // Posts, comments and their likes: who may do what, and what a deletion purges (§6.6).
        if schema?.publicMerge == .posts {
            let verdict = try admitPostRecord(v, accountRow: accountID)
            if case .store = verdict {} else {
                if case .refuse(let e) = verdict { refusal = e }
                try noteSuperseded(authorID: authorID, seq: r.seq, id: v.id)
                supersededCount += 1
                try advanceContiguous(&author, key: key, past: r.seq)
                return false
            }
        }
        // Meetups collected a week after they ended, and their records, are not stored again (§6.7).
        if schema?.publicMerge == .meetups, try meetupGone(v) {
            try noteSuperseded(authorID: authorID, seq: r.seq, id: v.id)
            supersededCount += 1
            try advanceContiguous(&author, key: key, past: r.seq)
            return false
        }
        storedInOrder.append(v)
        countChanges.records += 1
        try statement("INSERT INTO records(author, seq, id, type, timestamp, bytes) VALUES (?, ?, ?, ?, ?, ?)")
            .run([.integer(authorID), .integer(Int64(r.seq)), .blob(v.id), .integer(Int64(r.type.rawValue)),
                  .integer(Int64(clamping: r.timestamp)), .blob(v.encoded)])
        recon.added(v.id)
        try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(v.id)), .integer(authorID)])
        if let bound = recordSeqBound[authorID], r.seq > bound { recordSeqBound[authorID] = r.seq }
        if schema?.publicMerge == .sealed { try openSealed(v, authorID: authorID) }
        if let purgeTag {
            if Self.purgeable.contains(r.type) {
                try statement("INSERT OR IGNORE INTO chat_purge(account, tag, author, seq, id) VALUES (?, ?, ?, ?, ?)")
                    .run([.blob(r.account.bytes), .blob(purgeTag), .integer(authorID), .integer(Int64(r.seq)), .blob(v.id)])
            } else if r.type == .unmatch {
                try purgeMessages(of: r.account, tag: purgeTag)
            }
        }
        try advanceContiguous(&author, key: key, past: r.seq)
        if settings.compaction { try compact(displaced, accountID: accountID) }
        if schema?.publicMerge == .devices { try applyDeviceRecord(v) }
        if schema?.publicMerge == .follow, let follow = try? Follow(body: r.body) {
            try statement("INSERT OR IGNORE INTO follow_entries(account, target, record_id, timestamp, following) VALUES (?, ?, ?, ?, ?)")
                .run([.blob(r.account.bytes), .blob(follow.target.bytes), .blob(v.id), .integer(Int64(clamping: r.timestamp)),
                      .integer(follow.following ? 1 : 0)])
        }
        if schema?.publicMerge == .meetups { try applyMeetupRecord(v) }
        if schema?.publicMerge == .quiz, let result = try? QuizResult(body: r.body),
           let questions = QuizSeed.questions(day: result.day), !questions.isEmpty {
            try statement("INSERT OR IGNORE INTO quiz_results(account, day, record_id, timestamp, score) VALUES (?, ?, ?, ?, ?)")
                .run([.blob(r.account.bytes), .text(result.day), .blob(v.id), .integer(Int64(clamping: r.timestamp)),
                      .integer(Int64(Quiz.score(result.answers, questions)))])
        }
        if schema?.publicMerge == .note {
            if openers[r.account] != nil {
                try openNote(v)
            } else if try statement("SELECT 1 FROM local_accounts WHERE key = ?").queryOne([.blob(r.account.bytes)]) != nil {
                try db.cachedStatement("INSERT OR IGNORE INTO unopened(account, author, seq, id) VALUES (?, ?, ?, ?)")
                    .run([.blob(r.account.bytes), .integer(authorID), .integer(Int64(r.seq)), .blob(v.id)])
            }
        }
        return true
    }

    /// Drops the card records among `candidates` (IDs whose card entries a merge just removed)
    /// that no card entry names any more: every register they wrote has a newer winner. Each is
    /// deleted from `records` and the reconciliation set, and remembered in `superseded`. The
    /// seq 1 card stays. O(candidates): nothing else is read.
    private mutating func compact(_ candidates: [[UInt8]], accountID: Int64) throws(StoreError) {
        guard !candidates.isEmpty else { return }
        let named = try statement("SELECT 1 FROM card_entries WHERE author = ? AND record_id = ? LIMIT 1")
        // The record may be the account key's or one of its devices'.
        let find = try statement("SELECT author, seq FROM records INDEXED BY records_by_id WHERE id = ?")
        let delete = try statement("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?")
        var seen: Set<[UInt8]> = []
        for id in candidates where seen.insert(id).inserted {
            guard try named.queryOne([.integer(accountID), .blob(id)]) == nil,
                  let row = try find.queryOne([.blob(id)]), let authorID = row.int64(0), let seq = row.int64(1),
                  seq > 1 || authorID != accountID else { continue }
            try delete.run([.integer(authorID), .integer(seq), .blob(id)])
            countChanges.records -= 1
            recon.removed(id)
            try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(id)), .integer(authorID)])
            try noteSuperseded(authorID: authorID, seq: UInt64(seq), id: id)
            compactedInBatch.insert(id)
            supersededCount += 1
        }
    }

    /// Remembers a superseded record's (author, seq, ID prefix), at most `maxVariantsPerSeq` per
    /// (author, seq): one is enough to see a fork, and a key holder signing endless variants
    /// of a seq must not grow the table.
    func noteSuperseded(authorID: Int64, seq: UInt64, id: [UInt8]) throws(StoreError) {
        let key: [SQLValue] = [.integer(authorID), .integer(Int64(seq))]
        let held = try statement("SELECT count(*) FROM superseded WHERE author = ? AND seq = ?").queryOne(key)?.int(0) ?? 0
        guard held < settings.maxVariantsPerSeq else { return }
        try statement("INSERT OR IGNORE INTO superseded(author, seq, id_prefix) VALUES (?, ?, ?)").run(key + [.blob(Array(id.prefix(8)))])
    }

    /// Moves the author's contiguous seq on after `seq` was applied (stored or superseded):
    /// while the next seq is stored or superseded. Not past the highest stored seq, which no
    /// superseded seq exceeds, so an in-order sync looks nothing up.
    mutating func advanceContiguous(_ author: inout AuthorState, key: PublicKey, past seq: UInt64) throws(StoreError) {
        guard seq == author.contiguous + 1 else { return }
        var c = seq
        let bound = recordSeqBound[author.id, default: .max]
        while c < bound, try seqTaken(author.id, c + 1) { c += 1 }
        author.contiguous = c
        author.dirty = true
        authors[key] = author
    }

    /// Removes a record that lost its place among an (author, seq)'s variants, and rebuilds
    /// what it had touched from the records that remain.
    private mutating func unstore(recordID: [UInt8], author: PublicKey, authorID: Int64, seq: UInt64) throws(StoreError) {
        storedInOrder.removeAll { $0.id == recordID }
        cardRegisters.removeAll()
        newAuthors.removeAll()
        // Read before the row goes: whose card the record wrote, and the record itself.
        let accountID = try accountRowID(ofRecord: recordID, signer: authorID)
        let removed = try db.queryOne("SELECT bytes FROM records WHERE author = ? AND seq = ? AND id = ?",
                                      [.integer(authorID), .integer(Int64(seq)), .blob(recordID)])?.blob(0)
            .flatMap { try? VerifiedRecord(alreadyVerified: $0) }
        try db.execute("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?",
                       [.integer(authorID), .integer(Int64(seq)), .blob(recordID)])
        recon.removed(recordID)
        countChanges.records -= db.changes
        try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(recordID)), .integer(authorID)])
        try db.execute("DELETE FROM card_entries WHERE author = ? AND record_id = ?", [.integer(accountID), .blob(recordID)])
        try rebuildCard(authorID: accountID)
        for row in try db.query("SELECT account, other FROM pair_entries WHERE record_id = ?", [.blob(recordID)]) {
            if let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let o = row.blob(1).flatMap(PublicKey.init(bytes:)) {
                dirtyPairs.insert(PairKey(account: a, other: o))
            }
        }
        try db.execute("DELETE FROM pair_entries WHERE record_id = ?", [.blob(recordID)])
        try db.execute("DELETE FROM unopened WHERE id = ?", [.blob(recordID)])
        try db.execute("DELETE FROM follow_entries WHERE record_id = ?", [.blob(recordID)])
        try db.execute("DELETE FROM quiz_results WHERE record_id = ?", [.blob(recordID)])
        try dropMeetupRecord(recordID)
        if let removed, RecordSchemas.schema(for: removed.record.type)?.publicMerge == .posts { try forgetPostRecord(removed) }
    }

    /// Merges a card record's fields into their registers; whether the record entered any of
    /// them (false: superseded on arrival). `displaced` gets the IDs of the entries it pushed out.
    @discardableResult
    private mutating func mergeCardFields(_ v: VerifiedRecord, authorID: Int64, displaced: inout [[UInt8]]) throws(StoreError) -> Bool {
        let fields: FieldList
        do { fields = try FieldList.decode(v.record.body, known: ProfileCard.bodyTags, what: "profile") }
        catch { return true } // cannot happen: the body was validated when decoded
        var entered = false
        let clock = v.record.effectiveClock
        let clockBytes = clock.encoded
        // `field = +?`, not `field = ?`: a bare parameter compared where a partial index on
        // `card_entries` (`card_entries_photo`, field = 8, until migration 16) might apply makes SQLite prepare the statement again
        // every time a value is bound to it — three statements per card field applied. The unary
        // plus keeps the primary-key search (author, field[, record_id]).
        let select = try statement(
            "SELECT record_id, clock, timestamp, value FROM card_entries WHERE author = ? AND field = +?")
        let delete = try statement("DELETE FROM card_entries WHERE author = ? AND field = +? AND record_id = ?")
        let insert = try statement(
            "INSERT INTO card_entries(author, field, record_id, clock, timestamp, value) VALUES (?, ?, ?, ?, ?, ?)")
        let replace = try statement("""
            UPDATE card_entries SET record_id = ?, clock = ?, timestamp = ?, value = ?
            WHERE author = ? AND field = +? AND record_id = ?
            """)
        // A new author's registers are all empty, so every field enters: its rows go in with one
        // INSERT at the end, not one each. Each statement that writes `card_entries` (a table
        // with triggers) journals the pages it changes, so one statement journals them once.
        let newAuthor = newAuthors.contains(authorID)
        var newRows: [SQLValue] = []
        // The proof of work (seq 1 only) was checked on arrival and is no register of the card.
        for (tag, value) in fields.fields where tag != ProfileCard.workTag {
            let register = CardRegister(author: authorID, field: tag)
            let current: [RegisterEntry<[UInt8]>]
            if let known = cardRegisters[register] {
                current = known
            } else if newAuthor {
                current = []
            } else {
                current = try select.query([.integer(authorID), .integer(Int64(tag))]).compactMap(Self.registerEntry)
            }
            let new = RegisterEntry(clock: clock, timestamp: v.record.timestamp, recordID: v.id, value: value)
            guard let merged = MVRegister.merge(current, new) else {
                cardRegisters[register] = current
                continue
            }
            var superseded = current.filter { e in !merged.contains(where: { $0.recordID == e.recordID }) }
            displaced += superseded.map(\.recordID)
            if merged.contains(where: { $0.recordID == v.id }) {
                entered = true
                let stored: [SQLValue] = [.blob(v.id), .blob(clockBytes), .integer(Int64(clamping: v.record.timestamp)), .blob(value)]
                if let replaced = superseded.popLast() {
                    // One statement where the usual case (a newer write replaces the register's
                    // only entry) would take a DELETE and an INSERT; the rows end up the same.
                    try replace.run(stored + [.integer(authorID), .integer(Int64(tag)), .blob(replaced.recordID)])
                } else {
                    // The author's first entry of any field makes a card (counted once).
                    if !withCard.contains(authorID) {
                        if newAuthors.contains(authorID) {
                            countChanges.cards += 1
                        } else if try statement("SELECT 1 FROM card_entries WHERE author = ? LIMIT 1").queryOne([.integer(authorID)]) == nil {
                            countChanges.cards += 1
                        }
                        withCard.insert(authorID)
                    }
                    if newAuthor {
                        newRows += [.integer(authorID), .integer(Int64(tag))] + stored
                    } else {
                        try insert.run([.integer(authorID), .integer(Int64(tag))] + stored)
                    }
                }
            }
            for e in superseded {
                try delete.run([.integer(authorID), .integer(Int64(tag)), .blob(e.recordID)])
            }
            // What the table now holds for the register; the new entry as it reads back (its
            // timestamp clamped to the column's range).
            cardRegisters[register] = merged.map { e in
                guard e.recordID == v.id else { return e }
                var stored = e
                stored.timestamp = UInt64(Int64(clamping: e.timestamp))
                return stored
            }
        }
        if !newRows.isEmpty {
            try db.cachedStatement(Self.insertCardEntries(rows: newRows.count / 6)).run(newRows)
        }
        return entered
    }

    /// `INSERT INTO card_entries ... VALUES` with `rows` rows of six parameters (one per field
    /// a card can carry: the statements for 1...16 rows are built once).
    static func insertCardEntries(rows: Int) -> String {
        rows < insertCardEntriesSQL.count ? insertCardEntriesSQL[rows] : makeInsertCardEntries(rows: rows)
    }
    private static let insertCardEntriesSQL = (0...16).map(makeInsertCardEntries)
    private static func makeInsertCardEntries(rows: Int) -> String {
        "INSERT INTO card_entries(author, field, record_id, clock, timestamp, value) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?)", count: max(rows, 1)).joined(separator: ", ")
    }

    static func registerEntry(_ row: Row) -> RegisterEntry<[UInt8]>? {
        guard let id = row.blob(0), let clockBytes = row.blob(1), let ts = row.int64(2), let value = row.blob(3) else { return nil }
        var reader = ByteReader(clockBytes)
        guard let clock = try? VectorClock.decode(from: &reader, maxEntries: Limits.maxClockEntries + 1) else { return nil }
        return RegisterEntry(clock: clock, timestamp: UInt64(ts), recordID: id, value: value)
    }

    /// Recomputes an author's card registers from all its held card records.
    private mutating func rebuildCard(authorID: Int64) throws(StoreError) {
        cardRegisters.removeAll()
        newAuthors.removeAll()
        countChanges.exact = false   // the card may go or stay: counted afresh
        try db.execute("DELETE FROM card_entries WHERE author = ?", [.integer(authorID)])
        // The account key's cards and its certified devices' (a device record names its account).
        let rows = try db.query("""
            SELECT r.bytes FROM records r WHERE r.type = ?2 AND r.author IN (
                SELECT ?1 UNION SELECT a.id FROM device_certs d JOIN authors a ON a.key = d.device
                WHERE d.account = (SELECT key FROM authors WHERE id = ?1))
            ORDER BY r.author, r.seq, r.id
            """, [.integer(authorID), .integer(Int64(RecordType.profile.rawValue))])
        let account = try db.queryOne("SELECT key FROM authors WHERE id = ?", [.integer(authorID)])?.blob(0)
        for row in rows {
            guard let bytes = row.blob(0), let v = try? VerifiedRecord(alreadyVerified: bytes),
                  v.record.account.bytes == account else { continue }
            var displaced: [[UInt8]] = []
            try mergeCardFields(v, authorID: authorID, displaced: &displaced)
        }
    }

    /// Local accounts that are not unlocked (their sealed records wait in `unopened`).
    private var lockedAccounts: [PublicKey]?

    private mutating func openSealed(_ v: VerifiedRecord, authorID: Int64? = nil, only: PublicKey? = nil) throws(StoreError) {
        if let authorID {
            if lockedAccounts == nil {
                lockedAccounts = try db.query("SELECT key FROM local_accounts").compactMap { $0.blob(0).flatMap(PublicKey.init(bytes:)) }
                    .filter { openers[$0] == nil }
            }
            for key in lockedAccounts ?? [] {
                try db.cachedStatement("INSERT OR IGNORE INTO unopened(account, author, seq, id) VALUES (?, ?, ?, ?)")
                    .run([.blob(key.bytes), .integer(authorID), .integer(Int64(v.record.seq)), .blob(v.id)])
            }
        }
        for key in openers.keys.sorted() where only == nil || only == key {
            guard var opener = openers[key] else { continue }
            let opened = opener.open(v)
            openers[key] = opener
            guard let (other, entry) = opened else { continue }
            try db.cachedStatement("""
                INSERT OR IGNORE INTO pair_entries(account, other, record_id, author, seq, timestamp, kind, liked, peer_seq, text, answers, mine, clock)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).run([.blob(key.bytes), .blob(other.bytes), .blob(v.id), .blob(entry.author.bytes),
                          .integer(Int64(entry.seq)), .integer(Int64(clamping: entry.timestamp))] + PairEntryColumns.values(entry.kind)
                         + [entry.clock.map { .blob($0.encoded) } ?? .null])
            dirtyPairs.insert(PairKey(account: key, other: other))
        }
    }

    /// Opens, for an account that is being unlocked, the sealed records it has not seen: all
    /// held ones the first time, afterwards only those that arrived while it was locked.
    mutating func openPending(for account: PublicKey) throws(StoreError) {
        try openUnseen(for: account)
        var unchanged = ReconDirty()   // opening sealed records adds or removes no record
        try finish(recon: &unchanged)
    }

    private mutating func openUnseen(for account: PublicKey, all: Bool = false) throws(StoreError) {
        let wasScanned = try db.queryOne("SELECT scanned FROM local_accounts WHERE key = ?", [.blob(account.bytes)])?.int64(0) == 1
        let scanned = !all && wasScanned
        var rows: [[UInt8]] = []
        if scanned {
            try db.forEachRow("""
                SELECT r.bytes FROM unopened u JOIN records r ON r.author = u.author AND r.seq = u.seq AND r.id = u.id
                WHERE u.account = ?
                """, [.blob(account.bytes)]) { row in
                if let b = row.blob(0) { rows.append(b) }
            }
        } else {
            let sealedTypes = RecordSchemas.all.filter { $0.publicMerge == .sealed || $0.publicMerge == .note }.map { String($0.type.rawValue) }
            try db.forEachRow("SELECT bytes FROM records WHERE type IN (\(sealedTypes.joined(separator: ",")))") { row in
                if let b = row.blob(0) { rows.append(b) }
            }
        }
        try db.execute("DELETE FROM unopened WHERE account = ?", [.blob(account.bytes)])
        try db.execute("UPDATE local_accounts SET scanned = 1 WHERE key = ?", [.blob(account.bytes)])
        for bytes in rows {
            guard let v = try? VerifiedRecord(alreadyVerified: bytes) else { continue }
            if v.record.type == .note {
                if v.record.account == account { try openNote(v) }
            } else {
                try openSealed(v, only: account)
            }
        }
    }

    // MARK: End of batch

    /// Writes back author states and recomputes the views of the pairs the batch touched. The
    /// reconciliation tree's leaves the batch changed go into `recon` (the replica brings the
    /// tree up to date in batches of its own, `Replica.settleRecon`).
    mutating func finish(recon pending: inout ReconDirty) throws(StoreError) {
        // A keyring that grew may open records that arrived before its keys did.
        while let account = keyringsGrew.popFirst() { try openUnseen(for: account, all: true) }
        let update = try db.cachedStatement("UPDATE authors SET contiguous = ?, forked = ? WHERE id = ?")
        for (key, a) in authors where a.dirty {
            try update.run([.integer(Int64(a.contiguous)), .integer(a.forked ? 1 : 0), .integer(a.id)])
            authors[key]?.dirty = false
        }
        for pair in dirtyPairs {
            let view = try PairQueries.view(db, account: pair.account, other: pair.other)
            let before = try db.cachedStatement("""
                SELECT i_like, they_like, matched, unmatched_by, messages FROM pairs WHERE account = ? AND other = ?
                """).queryOne([.blob(pair.account.bytes), .blob(pair.other.bytes)]).map { row in
                    PairSummary(other: pair.other, iLike: row.int64(0) == 1, theyLike: row.int64(1) == 1,
                                matched: row.int64(2) == 1, unmatchedBy: row.blob(3).flatMap(PublicKey.init(bytes:)),
                                messages: row.int(4) ?? 0)
                }
            let after = PairSummary(other: pair.other, iLike: view.iLike, theyLike: view.theyLike, matched: view.matched,
                                    unmatchedBy: view.unmatchedBy, messages: view.messages.count)
            if after != before { pairChanges.append(PairChange(account: pair.account, before: before, after: after)) }
            try db.cachedStatement("""
                INSERT OR REPLACE INTO pairs(account, other, i_like, they_like, matched, unmatched_by, messages)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).run([.blob(pair.account.bytes), .blob(pair.other.bytes), .integer(view.iLike ? 1 : 0),
                          .integer(view.theyLike ? 1 : 0), .integer(view.matched ? 1 : 0),
                          view.unmatchedBy.map { .blob($0.bytes) } ?? .null, .integer(Int64(view.messages.count))])
        }
        dirtyPairs.removeAll()
        // A purged post's words leave the search index's pages, not only its lists (§6.6).
        if purgedPosts { try db.execute("INSERT INTO post_search(post_search) VALUES ('optimize')"); purgedPosts = false }
        pending.merge(recon)
        recon = ReconDirty()
    }

    // MARK: Notes to self (passes, blocks)

    /// A note of a local account's: the newest note of its kind about a target, by (timestamp,
    /// record ID), says whether it is passed (blocked); `passes` (`blocks`) follows — what the
    /// feed leaves out (PROTOCOL.md §7.6). Passes and blocks are two registers.
    private mutating func openNote(_ v: VerifiedRecord) throws(StoreError) {
        let r = v.record
        guard let opener = openers[r.account], let note = opener.openNote(v), note.target != r.account else { return }
        let key: [SQLValue] = [.blob(r.account.bytes), .blob(note.target.bytes)]
        if note.kind == .hidePost { return try openPostHide(v, note) }
        let (selectNewest, replaceNewest, insertState, deleteState): (StaticString, StaticString, StaticString, StaticString) = note.kind == .pass
            ? ("SELECT timestamp, record_id FROM pass_notes WHERE account = ? AND target = ?",
               "INSERT OR REPLACE INTO pass_notes(account, target, record_id, timestamp, passed) VALUES (?, ?, ?, ?, ?)",
               "INSERT OR REPLACE INTO passes(account, target, at) VALUES (?, ?, ?)",
               "DELETE FROM passes WHERE account = ? AND target = ?")
            : ("SELECT timestamp, record_id FROM block_notes WHERE account = ? AND target = ?",
               "INSERT OR REPLACE INTO block_notes(account, target, record_id, timestamp, blocked) VALUES (?, ?, ?, ?, ?)",
               "INSERT OR REPLACE INTO blocks(account, target, at) VALUES (?, ?, ?)",
               "DELETE FROM blocks WHERE account = ? AND target = ?")
        if let row = try statement(selectNewest).queryOne(key), let ts = row.int64(0), let id = row.blob(1) {
            let newer = Int64(clamping: r.timestamp) != ts ? Int64(clamping: r.timestamp) > ts : id.lexicographicallyPrecedes(v.id)
            guard newer else { return }
        }
        try statement(replaceNewest).run(key + [.blob(v.id), .integer(Int64(clamping: r.timestamp)), .integer(note.flag ? 1 : 0)])
        if note.flag {
            try statement(insertState).run(key + [.integer(Int64(clamping: r.timestamp))])
        } else {
            try statement(deleteState).run(key)
        }
    }

    // MARK: Purging an ended match's messages

    /// The sealed types a purge tag removes: messages and contacts (§8.8).
    static let purgeable: Set<RecordType> = [.chat, .contact]

    /// A sealed record's purge tag (field 5), if it carries one.
    static func purgeTag(of v: VerifiedRecord) -> [UInt8]? {
        guard let schema = RecordSchemas.schema(for: v.record.type) else { return nil }
        return (try? SealedBody(body: v.record.body, what: schema.name, maxPlaintext: Limits.maxBodyBytes))?.purgeTag
    }

    /// An unmatch of `account` named `tag`: its messages with that tag leave every replica —
    /// records, the reconciled set, the pair views — remembered like superseded records, so a
    /// copy offered again is a `duplicate`; later ones are not stored.
    private mutating func purgeMessages(of account: PublicKey, tag: [UInt8]) throws(StoreError) {
        try statement("INSERT OR IGNORE INTO purged(account, tag) VALUES (?, ?)").run([.blob(account.bytes), .blob(tag)])
        let rows = try db.query("SELECT author, seq, id FROM chat_purge WHERE account = ? AND tag = ?", [.blob(account.bytes), .blob(tag)])
        for row in rows {
            guard let authorID = row.int64(0), let seq = row.int64(1), let id = row.blob(2) else { continue }
            try db.execute("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?", [.integer(authorID), .integer(seq), .blob(id)])
            guard db.changes > 0 else { continue }
            countChanges.records -= 1
            recon.removed(id)
            try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(id)), .integer(authorID)])
            try noteSuperseded(authorID: authorID, seq: UInt64(seq), id: id)
            storedInOrder.removeAll { $0.id == id }
            compactedInBatch.insert(id)
            for pair in try db.query("SELECT account, other FROM pair_entries WHERE record_id = ?", [.blob(id)]) {
                if let a = pair.blob(0).flatMap(PublicKey.init(bytes:)), let o = pair.blob(1).flatMap(PublicKey.init(bytes:)) {
                    dirtyPairs.insert(PairKey(account: a, other: o))
                }
            }
            try db.execute("DELETE FROM pair_entries WHERE record_id = ?", [.blob(id)])
            try db.execute("DELETE FROM unopened WHERE id = ?", [.blob(id)])
        }
        try db.execute("DELETE FROM chat_purge WHERE account = ? AND tag = ?", [.blob(account.bytes), .blob(tag)])
    }

    // MARK: Device keys

    /// What the replica holds about a device key of an account (PROTOCOL.md §6.2).
    enum DeviceStanding {
        /// No certificate from the account is stored: the device's records wait in `pending`.
        case uncertified
        /// Certified; records dated after `expires` or with a seq above `lastSeq` are refused.
        case certified(expires: UInt64?, lastSeq: UInt64?)
    }
    struct DeviceKey: Hashable { var account: PublicKey; var device: PublicKey }
    /// Standings read in this batch; dropped when a certificate or revocation is stored.
    private var standings: [DeviceKey: DeviceStanding] = [:]

    mutating func standing(of device: PublicKey, in account: PublicKey) throws(StoreError) -> DeviceStanding {
        let key = DeviceKey(account: account, device: device)
        if let known = standings[key] { return known }
        let params: [SQLValue] = [.blob(account.bytes), .blob(device.bytes)]
        // Several certificates (a device certified again): the latest expiry counts, and none
        // (NULL) is never. Several revocations: the earliest last seq counts.
        let cert = try statement("""
            SELECT count(*), max(expires IS NULL), max(expires) FROM device_certs WHERE account = ? AND device = ?
            """).queryOne(params)
        let lastSeq = try statement("SELECT min(last_seq) FROM device_revocations WHERE account = ? AND device = ?")
            .queryOne(params)?.int64(0).map { UInt64(max($0, 0)) }
        let result: DeviceStanding
        if let cert, (cert.int64(0) ?? 0) > 0 {
            let never = cert.int64(1) == 1
            result = .certified(expires: never ? nil : cert.int64(2).map { UInt64(max($0, 0)) }, lastSeq: lastSeq)
        } else {
            // Even if revoked already: held back, then refused past the last seq once certified.
            result = .uncertified
        }
        standings[key] = result
        return result
    }

    /// A stored certificate or revocation takes effect: a certificate releases the device's
    /// held-back records; a revocation removes the device's records above its last seq from
    /// everything this replica holds (records, held-back, held until due), and the card and
    /// pair views they had touched are rebuilt without them.
    private mutating func applyDeviceRecord(_ v: VerifiedRecord) throws(StoreError) {
        let r = v.record
        standings.removeAll()
        switch r.type {
        case .device:
            guard let cert = try? DeviceCertificate(body: r.body) else { return }
            try noteEncryptionKey(cert.encryptionKey, of: r.account)
            if var opener = openers[r.account], let device = opener.device, device.publicKey.key == cert.device,
               let keyring = AccountKeyring.open(cert.keyring, device: device, of: r.account) {
                opener.learn(keyring)
                openers[r.account] = opener
                keyringsGrew.insert(r.account)
            }
            let certified = try statement("SELECT count(DISTINCT device) FROM device_certs WHERE account = ?")
                .queryOne([.blob(r.account.bytes)])?.int(0) ?? 0
            let already = try statement("SELECT 1 FROM device_certs WHERE account = ? AND device = ? LIMIT 1")
                .queryOne([.blob(r.account.bytes), .blob(cert.device.bytes)]) != nil
            // Bounded: an account certifies at most `maxDevicesPerAccount` keys.
            guard already || certified < Limits.maxDevicesPerAccount else { return }
            try statement("""
                INSERT OR IGNORE INTO device_certs(account, device, record_id, label, created, expires) VALUES (?, ?, ?, ?, ?, ?)
                """).run([.blob(r.account.bytes), .blob(cert.device.bytes), .blob(v.id), .text(cert.label),
                          .integer(Int64(clamping: cert.created)), cert.expires.map { .integer(Int64(clamping: $0)) } ?? .null])
            _ = try state(of: cert.device)
            try releasePending(of: cert.device)
        case .revoke:
            guard let revocation = try? DeviceRevocation(body: r.body) else { return }
            if let rotation = revocation.rotation {
                try noteEncryptionKey(rotation.key, of: r.account)
                if var opener = openers[r.account], let device = opener.device,
                   let grant = rotation.grants.first(where: { $0.device == device.publicKey.key }),
                   let keyring = AccountKeyring.openGrant(grant.box, epoch: rotation.key.epoch, device: device, of: r.account) {
                    opener.learn(keyring)
                    openers[r.account] = opener
                    keyringsGrew.insert(r.account)
                }
            }
            try statement("""
                INSERT OR IGNORE INTO device_revocations(account, device, record_id, last_seq) VALUES (?, ?, ?, ?)
                """).run([.blob(r.account.bytes), .blob(revocation.device.bytes), .blob(v.id), .integer(Int64(clamping: revocation.lastSeq))])
            try purge(device: revocation.device, of: r.account, above: revocation.lastSeq)
        default:
            return
        }
    }

    /// Accounts whose keyring on this node grew in this batch: their sealed records are opened
    /// again at its end (some may be sealed to the new keys).
    private(set) var keyringsGrew: Set<PublicKey> = []

    private mutating func noteEncryptionKey(_ key: EncryptionKey, of account: PublicKey) throws(StoreError) {
        try statement("INSERT OR IGNORE INTO account_keys(account, epoch, public) VALUES (?, ?, ?)")
            .run([.blob(account.bytes), .integer(Int64(key.epoch)), .blob(key.publicKey)])
        // A node holding the account key makes the epoch's key itself.
        if var opener = openers[account], let accountKeys = opener.accountKeys, opener.keyring.secrets[key.epoch] == nil {
            opener.learn(AccountKeyring.derived(from: accountKeys, epochs: 1...key.epoch))
            openers[account] = opener
            keyringsGrew.insert(account)
        }
    }

    /// The encryption keys `device` of `account` received in the certificates and rotations
    /// this replica holds (what a node's device can open when it is unlocked).
    func keyring(of account: PublicKey, for device: SigningKeyPair) throws(StoreError) -> AccountKeyring {
        var keyring = AccountKeyring()
        let rows = try db.query("""
            SELECT r.bytes FROM records r JOIN authors a ON a.id = r.author WHERE a.key = ? AND r.type IN (?, ?)
            """, [.blob(account.bytes), .integer(Int64(RecordType.device.rawValue)), .integer(Int64(RecordType.revoke.rawValue))])
        for row in rows {
            guard let bytes = row.blob(0), let v = try? VerifiedRecord(alreadyVerified: bytes) else { continue }
            if v.record.type == .device, let cert = try? DeviceCertificate(body: v.record.body), cert.device == device.publicKey.key,
               let k = AccountKeyring.open(cert.keyring, device: device, of: account) {
                keyring.merge(k)
            } else if v.record.type == .revoke, let rotation = (try? DeviceRevocation(body: v.record.body))?.rotation,
                      let grant = rotation.grants.first(where: { $0.device == device.publicKey.key }),
                      let k = AccountKeyring.openGrant(grant.box, epoch: rotation.key.epoch, device: device, of: account) {
                keyring.merge(k)
            }
        }
        return keyring
    }

    /// Removes what a revoked device signed past its last seq, for the account it signed for.
    private mutating func purge(device: PublicKey, of account: PublicKey, above lastSeq: UInt64) throws(StoreError) {
        let last: SQLValue = .integer(Int64(clamping: lastSeq))
        try db.execute("DELETE FROM held_until_due WHERE author = ? AND seq > ?", [.blob(device.bytes), last])
        countChanges.heldUntilDue -= db.changes
        if db.changes > 0 { heldUntilDueTotals = nil }
        var state = try state(of: device)
        guard state.id != 0 else { return }
        let signer: SQLValue = .integer(state.id)
        for row in try db.query("SELECT id FROM pending WHERE author = ? AND seq > ?", [signer, last]) {
            if let id = row.blob(0) { recon.removed(id) }
        }
        try db.execute("DELETE FROM pending WHERE author = ? AND seq > ?", [signer, last])
        if db.changes > 0 {
            countChanges.pending -= db.changes
            pendingCount = nil
            pendingHasRows = nil
        }
        var touched = false
        for row in try db.query("SELECT seq, id, bytes FROM records WHERE author = ? AND seq > ?", [signer, last]) {
            guard let seq = row.int64(0), let id = row.blob(1), let bytes = row.blob(2),
                  let stored = try? VerifiedRecord(alreadyVerified: bytes), stored.record.account == account else { continue }
            storedInOrder.removeAll { $0.id == id }
            compactedInBatch.insert(id)
            try db.execute("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?", [signer, .integer(seq), .blob(id)])
            countChanges.records -= db.changes
            recon.removed(id)
            try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(id)), signer])
            for pair in try db.query("SELECT account, other FROM pair_entries WHERE record_id = ?", [.blob(id)]) {
                if let a = pair.blob(0).flatMap(PublicKey.init(bytes:)), let o = pair.blob(1).flatMap(PublicKey.init(bytes:)) {
                    dirtyPairs.insert(PairKey(account: a, other: o))
                }
            }
            try db.execute("DELETE FROM pair_entries WHERE record_id = ?", [.blob(id)])
            try db.execute("DELETE FROM unopened WHERE id = ?", [.blob(id)])
            try db.execute("DELETE FROM follow_entries WHERE record_id = ?", [.blob(id)])
            try db.execute("DELETE FROM quiz_results WHERE record_id = ?", [.blob(id)])
            try dropMeetupRecord(id)
            if RecordSchemas.schema(for: stored.record.type)?.publicMerge == .posts { try forgetPostRecord(stored) }
            touched = true
        }
        if state.contiguous > lastSeq {
            state.contiguous = lastSeq
            state.dirty = true
            authors[device] = state
        }
        recordSeqBound[state.id] = nil
        if touched { try rebuildCard(authorID: try rowID(of: account)) }
    }

    /// The `authors` row of a key that has one (an admitted account always has).
    private mutating func rowID(of key: PublicKey) throws(StoreError) -> Int64 {
        var s = try state(of: key)
        try ensureRow(&s, key)
        return s.id
    }

    /// The row of the account whose card a stored record writes: its signer's, or for a
    /// device-signed record the account's it names.
    private mutating func accountRowID(ofRecord id: [UInt8], signer: Int64) throws(StoreError) -> Int64 {
        guard let bytes = try db.queryOne("SELECT bytes FROM records WHERE author = ? AND id = ?", [.integer(signer), .blob(id)])?.blob(0),
              let stored = try? VerifiedRecord(alreadyVerified: bytes), stored.record.isDeviceSigned else { return signer }
        return try rowID(of: stored.record.account)
    }

    // MARK: Small queries

    private mutating func state(of key: PublicKey) throws(StoreError) -> AuthorState {
        if let s = authors[key] { return s }
        let select = try statement("SELECT id, contiguous, forked FROM authors WHERE key = ?")
        if let row = try select.queryOne([.blob(key.bytes)]), let id = row.int64(0), let c = row.int64(1) {
            let s = AuthorState(id: id, contiguous: UInt64(c), forked: row.int64(2) == 1, dirty: false)
            // An index seek to the author's last (seq, id); NULL (no records) reads as 0.
            let highest = try statement("SELECT max(seq) FROM records WHERE author = ?").queryOne([.integer(id)])?.int64(0)
            recordSeqBound[id] = UInt64(max(highest ?? 0, 0))
            authors[key] = s
            return s
        }
        // Not known yet: the row is made only when something of this author is stored
        // (`ensureRow`), so a refused record from a new author leaves no trace.
        let s = AuthorState(id: 0, contiguous: 0, forked: false, dirty: false)
        authors[key] = s
        return s
    }

    /// Creates the author's row if it does not exist yet (id 0 means "no row").
    private mutating func ensureRow(_ author: inout AuthorState, _ key: PublicKey) throws(StoreError) {
        guard author.id == 0 else { return }
        try statement("INSERT INTO authors(key, digest) VALUES (?, 0)").run([.blob(key.bytes)])
        countChanges.authors += 1
        author.id = db.lastInsertRowID
        recordSeqBound[author.id] = 0
        newAuthors.insert(author.id)
        authors[key] = author
    }

    private func exists(_ sql: StaticString, _ author: Int64, _ seq: UInt64, _ id: [UInt8]) throws(StoreError) -> Bool {
        try statement(sql).queryOne([.integer(author), .integer(Int64(seq)), .blob(id)]) != nil
    }

    /// The connection's cached statement for `sql`, found by the literal's address.
    func statement(_ sql: StaticString) throws(StoreError) -> Statement {
        try statements.statement(sql, in: db)
    }

    /// False only when `pending` is known to be empty.
    private mutating func pendingMayHaveRows() throws(StoreError) -> Bool {
        if let c = pendingCount { return c > 0 }
        if let known = pendingHasRows { return known }
        let hasRows = try statement("SELECT 1 FROM pending LIMIT 1").queryOne() != nil
        pendingHasRows = hasRows
        return hasRows
    }

    private mutating func pendingTotal() throws(StoreError) -> Int {
        if let c = pendingCount { return c }
        let c = try db.queryOne("SELECT count(*) FROM pending")?.int(0) ?? 0
        pendingCount = c
        return c
    }
}

/// Statements of one `ApplyBatch`, keyed by the address of their SQL literal (a `StaticString`
/// has one address for the life of the process), each fetched once from the connection's cache.
/// A class so the batch's non-mutating methods can fill it; it lives only as long as the batch,
/// inside one `Replica.write`, and the statements stay owned by the connection's cache.
private final class StatementsByLiteral {
    private var byAddress: [UnsafeRawPointer: Statement] = [:]

    func statement(_ sql: StaticString, in db: Database) throws(StoreError) -> Statement {
        let address = UnsafeRawPointer(sql.utf8Start)
        if let statement = byAddress[address] { return statement }
        let statement = try db.cachedStatement(sql.description)
        byAddress[address] = statement
        return statement
    }
}
