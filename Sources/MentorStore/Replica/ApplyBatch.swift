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
    /// The entries of each card register this batch has read or written, exactly as a SELECT
    /// of `card_entries` would return them now, so a register written again in the same batch
    /// is not read back and its clocks not decoded again. Emptied when card entries change
    /// anywhere else (`unstore`, `rebuildCard`).
    private var cardRegisters: [CardRegister: [RegisterEntry<[UInt8]>]] = [:]
    /// The reconciliation tree's leaves whose IDs this batch changed (`ReconIndex`).
    private var recon = ReconDirty()

    /// What this batch added to and removed from the counted tables (`Replica.counts()`).
    private(set) var countChanges = CountChanges()
    /// Authors (by id) known to have card entries now: their next new entry adds no card.
    private var withCard: Set<Int64> = []

    struct PairKey: Hashable { var account: PublicKey; var other: PublicKey }
    struct CardRegister: Hashable { var author: Int64; var field: UInt8 }

    init(db: Database, settings: Replica.Settings, openers: [PublicKey: SealedOpener]) {
        self.db = db
        self.settings = settings
        self.openers = openers
    }

    // MARK: Sequence, hold-back, equivocation

    mutating func apply(_ v: VerifiedRecord) throws(StoreError) -> ApplyOutcome {
        let r = v.record
        var author = try state(of: r.author)
        // Each lookup runs only where the record could be: not past the author's highest stored
        // seq, not while `pending` is known to be empty.
        if r.seq <= recordSeqBound[author.id, default: .max],
           try exists("SELECT 1 FROM records WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) {
            return .duplicate
        }
        if try pendingMayHaveRows(),
           try exists("SELECT 1 FROM pending WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) {
            return .duplicate
        }
        if r.seq <= author.contiguous {
            return try applyVariant(v, author: &author)
        }
        if r.seq == author.contiguous + 1 {
            try ensureRow(&author, r.author)
            try store(v, authorID: author.id)
            author.contiguous = r.seq
            author.dirty = true
            authors[r.author] = author
            try releasePending(of: r.author)
            return .applied
        }
        guard r.seq - author.contiguous <= settings.maxSequenceGap else {
            return .refused(RecordError(.sequenceGapTooLarge,
                "seq \(r.seq) of \(r.author.shortID)… is \(r.seq - author.contiguous) past the \(author.contiguous) held; at most \(settings.maxSequenceGap) are held back — sync the earlier records first"))
        }
        let pending = try pendingTotal()
        guard pending < settings.maxPending else {
            return .refused(RecordError(.pendingFull,
                "\(pending) records are already waiting for missing predecessors; try again after syncing"))
        }
        try ensureRow(&author, r.author)
        try statement("INSERT INTO pending(author, seq, id, bytes) VALUES (?, ?, ?, ?)")
            .run([.integer(author.id), .integer(Int64(r.seq)), .blob(v.id), .blob(v.encoded)])
        recon.added(v.id)
        pendingCount = pending + 1
        countChanges.pending += 1
        return .held
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
        if author.id != 0, try exists("SELECT 1 FROM records WHERE author = ? AND seq = ? AND id = ?", author.id, r.seq, v.id) {
            return .duplicate
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

    /// A record for an (author, seq) already held with a different ID.
    private mutating func applyVariant(_ v: VerifiedRecord, author: inout AuthorState) throws(StoreError) -> ApplyOutcome {
        let r = v.record
        let siblings = try db.cachedStatement("SELECT id, bytes FROM records WHERE author = ? AND seq = ? ORDER BY id")
            .query([.integer(author.id), .integer(Int64(r.seq))])
        // Keep the evidence: every record that shared this (author, seq).
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
            authors[r.author] = author
        }
        let ids = siblings.compactMap { $0.blob(0) }
        if ids.count >= settings.maxVariantsPerSeq {
            // Deterministic cap: the lowest IDs stay, so all replicas keep the same variants.
            guard let highest = ids.last, v.id.lexicographicallyPrecedes(highest) else {
                return .refused(RecordError(.equivocation,
                    "\(r.author.shortID)… already has \(ids.count) different records at seq \(r.seq); evidence kept, this one is not merged"))
            }
            try unstore(recordID: highest, author: r.author, authorID: author.id, seq: r.seq)
        }
        try store(v, authorID: author.id)
        return .forked
    }

    private mutating func releasePending(of key: PublicKey) throws(StoreError) {
        guard var author = authors[key], try pendingMayHaveRows() else { return }
        let select = try statement("SELECT id, bytes FROM pending WHERE author = ? AND seq = ? ORDER BY id")
        let delete = try statement("DELETE FROM pending WHERE author = ? AND seq = ?")
        while true {
            let next = author.contiguous + 1
            let rows = try select.query([.integer(author.id), .integer(Int64(next))])
            if rows.isEmpty { break }
            try delete.run([.integer(author.id), .integer(Int64(next))])
            for row in rows { if let id = row.blob(0) { recon.removed(id) } }
            pendingCount = pendingCount.map { $0 - rows.count }
            countChanges.pending -= rows.count
            // Held records were verified before they were held; one that no longer decodes
            // (a damaged database) is dropped, and the first that does becomes the seq's record.
            let held = rows.compactMap { row in row.blob(1).flatMap { try? VerifiedRecord(alreadyVerified: $0) } }
            guard !held.isEmpty else { break }
            for (i, v) in held.enumerated() {
                if i == 0 {
                    try store(v, authorID: author.id)
                    author.contiguous = next
                    author.dirty = true
                    authors[key] = author
                } else {
                    _ = try applyVariant(v, author: &author)
                }
            }
        }
    }

    // MARK: Storing and materializing

    /// Every record this batch stored, in the order it was stored (released held records too).
    private(set) var stored: [VerifiedRecord] = []

    private mutating func store(_ v: VerifiedRecord, authorID: Int64) throws(StoreError) {
        stored.append(v)
        countChanges.records += 1
        let r = v.record
        try statement("INSERT INTO records(author, seq, id, type, timestamp, bytes) VALUES (?, ?, ?, ?, ?, ?)")
            .run([.integer(authorID), .integer(Int64(r.seq)), .blob(v.id), .integer(Int64(r.type.rawValue)),
                  .integer(Int64(clamping: r.timestamp)), .blob(v.encoded)])
        recon.added(v.id)
        try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(v.id)), .integer(authorID)])
        if let bound = recordSeqBound[authorID], r.seq > bound { recordSeqBound[authorID] = r.seq }
        guard let schema = RecordSchemas.schema(for: r.type) else { return }
        switch schema.publicMerge {
        case .fieldRegisters:
            try mergeCardFields(v, authorID: authorID)
        case .sealed:
            try openSealed(v, authorID: authorID)
        }
    }

    /// Removes a record that lost its place among an (author, seq)'s variants, and rebuilds
    /// what it had touched from the records that remain.
    private mutating func unstore(recordID: [UInt8], author: PublicKey, authorID: Int64, seq: UInt64) throws(StoreError) {
        stored.removeAll { $0.id == recordID }
        cardRegisters.removeAll()
        try db.execute("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?",
                       [.integer(authorID), .integer(Int64(seq)), .blob(recordID)])
        recon.removed(recordID)
        countChanges.records -= db.changes
        try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(recordID)), .integer(authorID)])
        try db.execute("DELETE FROM card_entries WHERE author = ? AND record_id = ?", [.integer(authorID), .blob(recordID)])
        try rebuildCard(authorID: authorID)
        for row in try db.query("SELECT account, other FROM pair_entries WHERE record_id = ?", [.blob(recordID)]) {
            if let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let o = row.blob(1).flatMap(PublicKey.init(bytes:)) {
                dirtyPairs.insert(PairKey(account: a, other: o))
            }
        }
        try db.execute("DELETE FROM pair_entries WHERE record_id = ?", [.blob(recordID)])
        try db.execute("DELETE FROM unopened WHERE id = ?", [.blob(recordID)])
    }

    private mutating func mergeCardFields(_ v: VerifiedRecord, authorID: Int64) throws(StoreError) {
        let fields: FieldList
        do { fields = try FieldList.decode(v.record.body, known: ProfileCard.bodyTags, what: "profile") }
        catch { return } // cannot happen: the body was validated when decoded
        let clock = v.record.effectiveClock
        let clockBytes = clock.encoded
        // `field = +?`, not `field = ?`: a bare parameter compared where the partial index
        // `card_entries_photo` (field = 8) might apply makes SQLite prepare the statement again
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
        // The proof of work (seq 1 only) was checked on arrival and is no register of the card.
        for (tag, value) in fields.fields where tag != ProfileCard.workTag {
            let register = CardRegister(author: authorID, field: tag)
            let current: [RegisterEntry<[UInt8]>]
            if let known = cardRegisters[register] {
                current = known
            } else {
                current = try select.query([.integer(authorID), .integer(Int64(tag))]).compactMap(Self.registerEntry)
            }
            let new = RegisterEntry(clock: clock, timestamp: v.record.timestamp, recordID: v.id, value: value)
            guard let merged = MVRegister.merge(current, new) else {
                cardRegisters[register] = current
                continue
            }
            var superseded = current.filter { e in !merged.contains(where: { $0.recordID == e.recordID }) }
            if merged.contains(where: { $0.recordID == v.id }) {
                let stored: [SQLValue] = [.blob(v.id), .blob(clockBytes), .integer(Int64(clamping: v.record.timestamp)), .blob(value)]
                if let replaced = superseded.popLast() {
                    // One statement where the usual case (a newer write replaces the register's
                    // only entry) would take a DELETE and an INSERT; the rows end up the same.
                    try replace.run(stored + [.integer(authorID), .integer(Int64(tag)), .blob(replaced.recordID)])
                } else {
                    // The author's first entry of any field makes a card (counted once).
                    if !withCard.contains(authorID) {
                        if try statement("SELECT 1 FROM card_entries WHERE author = ? LIMIT 1").queryOne([.integer(authorID)]) == nil {
                            countChanges.cards += 1
                        }
                        withCard.insert(authorID)
                    }
                    try insert.run([.integer(authorID), .integer(Int64(tag))] + stored)
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
        countChanges.exact = false   // the card may go or stay: counted afresh
        try db.execute("DELETE FROM card_entries WHERE author = ?", [.integer(authorID)])
        let rows = try db.query("SELECT bytes FROM records WHERE author = ? AND type = ? ORDER BY seq, id",
                                [.integer(authorID), .integer(Int64(RecordType.profile.rawValue))])
        for row in rows {
            guard let bytes = row.blob(0), let v = try? VerifiedRecord(alreadyVerified: bytes) else { continue }
            try mergeCardFields(v, authorID: authorID)
        }
    }

    /// Local accounts that are not unlocked (their sealed records wait in `unopened`).
    private var lockedAccounts: [PublicKey]?

    private mutating func openSealed(_ v: VerifiedRecord, authorID: Int64? = nil) throws(StoreError) {
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
        for key in openers.keys.sorted() {
            guard var opener = openers[key] else { continue }
            let opened = opener.open(v)
            openers[key] = opener
            guard let (other, entry) = opened else { continue }
            var liked: SQLValue = .null, peerSeq: SQLValue = .null, text: SQLValue = .null, answers: SQLValue = .null
            let kind: Int64
            switch entry.kind {
            case .like(let l, let p): kind = 1; liked = .integer(l ? 1 : 0); peerSeq = .integer(Int64(clamping: p))
            case .chat(let p, let a, let t):
                kind = 2; peerSeq = .integer(Int64(clamping: p)); text = .text(t); answers = a.map { .blob($0) } ?? .null
            case .unmatch(let p): kind = 3; peerSeq = .integer(Int64(clamping: p))
            }
            try db.cachedStatement("""
                INSERT OR IGNORE INTO pair_entries(account, other, record_id, author, seq, timestamp, kind, liked, peer_seq, text, answers)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).run([.blob(key.bytes), .blob(other.bytes), .blob(v.id), .blob(entry.author.bytes),
                          .integer(Int64(entry.seq)), .integer(Int64(clamping: entry.timestamp)), .integer(kind), liked, peerSeq, text, answers])
            dirtyPairs.insert(PairKey(account: key, other: other))
        }
    }

    /// Opens, for an account that is being unlocked, the sealed records it has not seen: all
    /// held ones the first time, afterwards only those that arrived while it was locked.
    mutating func openPending(for account: PublicKey) throws(StoreError) {
        let scanned = try db.queryOne("SELECT scanned FROM local_accounts WHERE key = ?", [.blob(account.bytes)])?.int64(0) == 1
        var rows: [[UInt8]] = []
        if scanned {
            try db.forEachRow("""
                SELECT r.bytes FROM unopened u JOIN records r ON r.author = u.author AND r.seq = u.seq AND r.id = u.id
                WHERE u.account = ?
                """, [.blob(account.bytes)]) { row in
                if let b = row.blob(0) { rows.append(b) }
            }
        } else {
            let sealedTypes = RecordSchemas.all.filter { $0.publicMerge == .sealed }.map { String($0.type.rawValue) }
            try db.forEachRow("SELECT bytes FROM records WHERE type IN (\(sealedTypes.joined(separator: ",")))") { row in
                if let b = row.blob(0) { rows.append(b) }
            }
        }
        try db.execute("DELETE FROM unopened WHERE account = ?", [.blob(account.bytes)])
        try db.execute("UPDATE local_accounts SET scanned = 1 WHERE key = ?", [.blob(account.bytes)])
        for bytes in rows {
            guard let v = try? VerifiedRecord(alreadyVerified: bytes) else { continue }
            try openSealed(v)
        }
        try finish()
    }

    // MARK: End of batch

    /// Writes back author states and recomputes the views of the pairs the batch touched.
    mutating func finish() throws(StoreError) {
        let update = try db.cachedStatement("UPDATE authors SET contiguous = ?, forked = ? WHERE id = ?")
        for (key, a) in authors where a.dirty {
            try update.run([.integer(Int64(a.contiguous)), .integer(a.forked ? 1 : 0), .integer(a.id)])
            authors[key]?.dirty = false
        }
        for pair in dirtyPairs {
            let view = try PairQueries.view(db, account: pair.account, other: pair.other)
            try db.cachedStatement("""
                INSERT OR REPLACE INTO pairs(account, other, i_like, they_like, matched, unmatched_by, messages)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).run([.blob(pair.account.bytes), .blob(pair.other.bytes), .integer(view.iLike ? 1 : 0),
                          .integer(view.theyLike ? 1 : 0), .integer(view.matched ? 1 : 0),
                          view.unmatchedBy.map { .blob($0.bytes) } ?? .null, .integer(Int64(view.messages.count))])
        }
        dirtyPairs.removeAll()
        try ReconIndex.update(db, &recon)
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
        authors[key] = author
    }

    private func exists(_ sql: StaticString, _ author: Int64, _ seq: UInt64, _ id: [UInt8]) throws(StoreError) -> Bool {
        try statement(sql).queryOne([.integer(author), .integer(Int64(seq)), .blob(id)]) != nil
    }

    /// The connection's cached statement for `sql`, found by the literal's address.
    private func statement(_ sql: StaticString) throws(StoreError) -> Statement {
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
