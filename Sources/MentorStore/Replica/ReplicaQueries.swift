import MentorCore
import MentorCrypto

/// A card as materialized: each field's winning value, and the concurrent values that lost.
public struct CardState: Sendable, Equatable {
    public var author: PublicKey
    public var card: ProfileCard
    /// Fields with concurrent writes, with the values that lost (strongest first).
    public var conflicts: [ProfileCard.Field: [[UInt8]]]
    /// The author's key signed two different records with one sequence number.
    public var forked: Bool
    /// Timestamp of the newest winning write.
    public var updatedAt: UInt64
}

public struct ReplicaCounts: Sendable, Equatable {
    public var records: Int
    public var authors: Int
    public var pending: Int
    /// Records dated ahead of this node's clock, kept aside until due.
    public var heldUntilDue: Int = 0
    /// Equivocation evidence kept: records that shared an (author, seq) with another.
    public var evidence: Int = 0
    public var forkedAuthors: Int
    public var cards: Int
}

/// Rows a write added to (or, negative, removed from) the tables `ReplicaCounts` counts, as the
/// write counted them itself; `exact` is false once it did something it cannot count cheaply
/// (rebuilding a card), and then the counts are read afresh.
struct CountChanges: Equatable {
    var records = 0, authors = 0, pending = 0, heldUntilDue = 0, evidence = 0, forkedAuthors = 0, cards = 0
    var exact = true

    func applied(to c: ReplicaCounts) -> ReplicaCounts {
        ReplicaCounts(records: c.records + records, authors: c.authors + authors, pending: c.pending + pending,
                      heldUntilDue: c.heldUntilDue + heldUntilDue, evidence: c.evidence + evidence,
                      forkedAuthors: c.forkedAuthors + forkedAuthors, cards: c.cards + cards)
    }
}

/// How a `PairEntry.Kind` is stored in `pair_entries`: the `kind` number and its four columns
/// (`kind, liked, peer_seq, text, answers`), written (`ApplyBatch`) and read (`PairQueries`) here
/// only.
enum PairEntryColumns {
    /// The `kind` column (migration 1).
    enum Kind: Int64 { case like = 1, chat = 2, unmatch = 3, contact = 4 }

    /// `kind, liked, peer_seq, text, answers, mine` for an entry of `kind`.
    static func values(_ kind: PairEntry.Kind) -> [SQLValue] {
        func blob(_ b: [UInt8]?) -> SQLValue { b.map { .blob($0) } ?? .null }
        switch kind {
        case .like(let liked, let peerSeq):
            return [.integer(Kind.like.rawValue), .integer(liked ? 1 : 0), .integer(Int64(clamping: peerSeq)), .null, .null, .null]
        case .chat(let peerSeq, let answers, let mine, let text):
            return [.integer(Kind.chat.rawValue), .null, .integer(Int64(clamping: peerSeq)), .text(text), blob(answers), blob(mine)]
        case .unmatch(let peerSeq, let answers, let mine):
            return [.integer(Kind.unmatch.rawValue), .null, .integer(Int64(clamping: peerSeq)), .null, blob(answers), blob(mine)]
        case .contact(let answers, let mine, let text):
            return [.integer(Kind.contact.rawValue), .null, .integer(0), .text(text), .blob(answers), .blob(mine)]
        }
    }

    /// The entry kind in `row`'s columns `at`...`at + 5` (as `values` wrote them); nil for an
    /// unknown kind number.
    static func kind(_ row: Row, at i: Int) -> PairEntry.Kind? {
        guard let number = row.int64(i), let kind = Kind(rawValue: number) else { return nil }
        let peerSeq = UInt64(row.int64(i + 2) ?? 0)
        switch kind {
        case .like: return .like(row.int64(i + 1) == 1, peerSeq: peerSeq)
        case .chat: return .chat(peerSeq: peerSeq, answers: row.blob(i + 4), mine: row.blob(i + 5), text: row.text(i + 3) ?? "")
        case .unmatch: return .unmatch(peerSeq: peerSeq, answers: row.blob(i + 4), mine: row.blob(i + 5))
        case .contact:
            guard let answers = row.blob(i + 4), let mine = row.blob(i + 5) else { return nil }
            return .contact(answers: answers, mine: mine, text: row.text(i + 3) ?? "")
        }
    }

    /// A stored effective clock (nil: none stored, an entry written before clocks were).
    static func clock(_ row: Row, at i: Int) -> VectorClock? {
        guard let bytes = row.blob(i) else { return nil }
        var reader = ByteReader(bytes)
        return try? VectorClock.decode(from: &reader, maxEntries: Limits.maxClockEntries + 1)
    }
}

enum PairQueries {
    static func entries(_ db: Database, account: PublicKey, other: PublicKey, likesOnly: Bool = false) throws(StoreError) -> [PairEntry] {
        try db.cachedStatement(likesOnly ? likesSQL : entriesSQL).query([.blob(account.bytes), .blob(other.bytes)]).compactMap { row in
            guard let id = row.blob(0), let author = row.blob(1).flatMap(PublicKey.init(bytes:)),
                  let seq = row.int64(2), let ts = row.int64(3), let kind = PairEntryColumns.kind(row, at: 4) else { return nil }
            return PairEntry(author: author, seq: UInt64(seq), timestamp: UInt64(ts), recordID: id, kind: kind,
                             clock: PairEntryColumns.clock(row, at: 10))
        }
    }
    private static let entriesSQL = """
        SELECT record_id, author, seq, timestamp, kind, liked, peer_seq, text, answers, mine, clock
        FROM pair_entries WHERE account = ? AND other = ?
        """
    private static let likesSQL = entriesSQL + " AND kind = \(PairEntryColumns.Kind.like.rawValue)"

    static func view(_ db: Database, account: PublicKey, other: PublicKey) throws(StoreError) -> PairView {
        PairView.build(me: account, other: other, entries: try entries(db, account: account, other: other))
    }
}

extension Replica {
    /// A digest of the replica's state: the set of records held, the materialized cards, the
    /// forked authors, and (with `includePrivate`) the private views of the local accounts.
    /// Two replicas that hold the same records have the same public digest.
    public func digest(includePrivate: Bool = true) throws(StoreError) -> [UInt8] {
        try read { db throws(StoreError) in
            var h = BLAKE2b.Hasher(outputLength: 32)
            h.update(Array("mentormate digest v1\u{0}records\u{0}".utf8))
            try db.forEachRow("""
                SELECT a.key, r.seq, r.id FROM records r JOIN authors a ON a.id = r.author ORDER BY a.key, r.seq, r.id
                """) { row in
                var w = ByteWriter(capacity: 72)
                w.raw(row.blob(0) ?? []); w.u64(UInt64(row.int64(1) ?? 0)); w.raw(row.blob(2) ?? [])
                h.update(w.bytes)
            }
            h.update(Array("cards\u{0}".utf8))
            try db.forEachRow("""
                SELECT a.key, c.field, c.record_id, c.value FROM card_entries c JOIN authors a ON a.id = c.author
                ORDER BY a.key, c.field, c.record_id
                """) { row in
                var w = ByteWriter()
                let value = row.blob(3) ?? []
                w.raw(row.blob(0) ?? []); w.u8(UInt8(truncatingIfNeeded: row.int64(1) ?? 0)); w.raw(row.blob(2) ?? [])
                w.u32(UInt32(value.count)); w.raw(value)
                h.update(w.bytes)
            }
            h.update(Array("forked\u{0}".utf8))
            try db.forEachRow("SELECT key FROM authors WHERE forked = 1 ORDER BY key") { row in h.update(row.blob(0) ?? []) }
            // Derived public state a merge could get wrong while the records agree: the quiz
            // results that count and the scores computed from them, and who follows whom.
            h.update(Array("quiz\u{0}".utf8))
            try db.forEachRow("SELECT account, day, record_id, score FROM (\(Self.countingQuizResults)) ORDER BY account, day") { row in
                var w = ByteWriter()
                w.raw(row.blob(0) ?? []); w.raw(Array((row.text(1) ?? "").utf8)); w.raw(row.blob(2) ?? []); w.u64(UInt64(row.int64(3) ?? 0))
                h.update(w.bytes)
            }
            h.update(Array("meetups\u{0}".utf8))
            try db.forEachRow("SELECT id, title, topic, start, ends, place, seats, min_age, max_age, about, cancelled, taken FROM meetups ORDER BY id") { row in
                var w = ByteWriter()
                w.raw(row.blob(0) ?? [])
                for i in [1, 2, 5, 9] { let t = Array((row.text(i) ?? "").utf8); w.u32(UInt32(t.count)); w.raw(t) }
                for i in [3, 4, 6, 7, 8, 10, 11] { w.u64(UInt64(bitPattern: row.int64(i) ?? 0)) }
                h.update(w.bytes)
            }
            h.update(Array("follows\u{0}".utf8))
            try db.forEachRow("SELECT account, target FROM (\(Self.currentFollows)) ORDER BY account, target") { row in
                h.update((row.blob(0) ?? []) + (row.blob(1) ?? []))
            }
            if includePrivate {
                h.update(Array("pairs\u{0}".utf8))
                let pairs = try db.query("SELECT account, other FROM pairs ORDER BY account, other")
                for row in pairs {
                    guard let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let o = row.blob(1).flatMap(PublicKey.init(bytes:)) else { continue }
                    let v = try PairQueries.view(db, account: a, other: o)
                    var w = ByteWriter()
                    w.raw(a.bytes); w.raw(o.bytes)
                    w.u8((v.iLike ? 1 : 0) | (v.theyLike ? 2 : 0) | (v.matched ? 4 : 0))
                    w.raw(v.unmatchedBy?.bytes ?? [UInt8](repeating: 0, count: 32))
                    w.u32(UInt32(v.messages.count))
                    for m in v.messages { w.raw(m.recordID) }
                    h.update(w.bytes)
                }
            }
            return h.finalize()
        }
    }

    /// The materialized card of `author` (nil if no card record of it is held).
    public func card(of author: PublicKey) throws(StoreError) -> CardState? {
        try cards(of: [author]).first
    }

    /// The materialized cards of `authors` (those that have one), in the given order, in one
    /// read transaction.
    public func cards(of authors: [PublicKey]) throws(StoreError) -> [CardState] {
        try read { db throws(StoreError) in
            var out: [CardState] = []
            for author in authors { if let c = try Self.card(db, author) { out.append(c) } }
            return out
        }
    }

    static func card(_ db: Database, _ author: PublicKey) throws(StoreError) -> CardState? {
        guard let row = try db.cachedStatement("SELECT id, forked FROM authors WHERE key = ?").queryOne([.blob(author.bytes)]),
              let id = row.int64(0) else { return nil }
        let forked = row.int64(1) == 1
        var byField: [UInt8: [RegisterEntry<[UInt8]>]] = [:]
        for r in try db.cachedStatement("SELECT record_id, clock, timestamp, value, field FROM card_entries WHERE author = ?").query([.integer(id)]) {
            guard let e = ApplyBatch.registerEntry(r), let f = r.int64(4) else { continue }
            byField[UInt8(truncatingIfNeeded: f), default: []].append(e)
        }
        return card(author, forked: forked, byField)
    }

    /// Every materialized card, in one pass over `card_entries` in author order (one statement,
    /// not two look-ups an author): what a node reads at start to index its feed — 100,000
    /// accounts in about a second, where a read per author took seconds more.
    public func forEachCard(_ body: (CardState) -> Void) throws(StoreError) {
        try read { db throws(StoreError) in
            var current: (id: Int64, key: PublicKey, forked: Bool)?
            var byField: [UInt8: [RegisterEntry<[UInt8]>]] = [:]
            func flush() {
                if let c = current, let state = Self.card(c.key, forked: c.forked, byField) { body(state) }
                byField = [:]
            }
            // CROSS JOIN: card_entries in its own (author, field, record_id) order outside.
            try db.forEachRow("""
                SELECT c.record_id, c.clock, c.timestamp, c.value, c.field, c.author, a.key, a.forked
                FROM card_entries c CROSS JOIN authors a WHERE a.id = c.author ORDER BY c.author
                """) { (r: Row) throws(StoreError) in
                guard let author = r.int64(5), let e = ApplyBatch.registerEntry(r), let f = r.int64(4) else { return }
                if current?.id != author {
                    flush()
                    guard let key = r.blob(6).flatMap(PublicKey.init(bytes:)) else { current = nil; return }
                    current = (author, key, r.int64(7) == 1)
                }
                byField[UInt8(truncatingIfNeeded: f), default: []].append(e)
            }
            flush()
        }
    }

    /// The card the entries of each field make (nil if there are none): the winner of each
    /// field's register, the other values as conflicts, the latest winner's time.
    static func card(_ author: PublicKey, forked: Bool, _ byField: [UInt8: [RegisterEntry<[UInt8]>]]) -> CardState? {
        guard !byField.isEmpty else { return nil }
        var winners: [(UInt8, [UInt8])] = []
        var conflicts: [ProfileCard.Field: [[UInt8]]] = [:]
        var updated: UInt64 = 0
        for (tag, entries) in byField.sorted(by: { $0.key < $1.key }) {
            let sorted = MVRegister.sorted(entries)
            guard let w = sorted.first else { continue }
            winners.append((tag, w.value))
            updated = max(updated, w.timestamp)
            if sorted.count > 1, let f = ProfileCard.Field(rawValue: tag) { conflicts[f] = sorted.dropFirst().map(\.value) }
        }
        let card = (try? ProfileCard(fieldValues: winners)) ?? ProfileCard()
        return CardState(author: author, card: card, conflicts: conflicts, forked: forked, updatedAt: updated)
    }

    /// The like of `other` for `account` that currently stands (nil if `other` does not like
    /// `account`): the record a message from `account` answers. Reads only the pair's likes.
    public func currentLike(account: PublicKey, by other: PublicKey) throws(StoreError) -> PairEntry? {
        try read { db throws(StoreError) in
            PairView.currentLike(of: other, in: try PairQueries.entries(db, account: account, other: other, likesOnly: true))
        }
    }

    /// Every decrypted entry of the pair (local account `account`, `other`).
    public func pairEntries(account: PublicKey, other: PublicKey) throws(StoreError) -> [PairEntry] {
        try read { db throws(StoreError) in try PairQueries.entries(db, account: account, other: other) }
    }

    /// The relation of local account `account` with `other`.
    public func pairView(account: PublicKey, other: PublicKey) throws(StoreError) -> PairView {
        try read { db throws(StoreError) in try PairQueries.view(db, account: account, other: other) }
    }

    /// For each author, the highest seq such that all of 1...seq are held (a version vector).
    public func versionVector() throws(StoreError) -> [PublicKey: UInt64] {
        try read { db throws(StoreError) in
            var out: [PublicKey: UInt64] = [:]
            try db.forEachRow("SELECT key, contiguous FROM authors WHERE contiguous > 0") { row in
                if let k = row.blob(0).flatMap(PublicKey.init(bytes:)), let c = row.int64(1) { out[k] = UInt64(c) }
            }
            return out
        }
    }

    /// For each author, the contiguous seq and the digest of its stored records' IDs (see
    /// `AuthorDigest`): what a sync hello announces. With `authors`, only those (unknown ones
    /// come back as seq 0, digest 0).
    public func versionSummary(of authors: [PublicKey]? = nil) throws(StoreError) -> [PublicKey: AuthorSummary] {
        try read { db throws(StoreError) in
            var out: [PublicKey: AuthorSummary] = [:]
            func add(_ row: Row) {
                if let k = row.blob(0).flatMap(PublicKey.init(bytes:)), let c = row.int64(1) {
                    out[k] = AuthorSummary(seq: UInt64(c), digest: UInt64(bitPattern: row.int64(2) ?? 0))
                }
            }
            if let authors {
                let statement = try db.cachedStatement("SELECT key, contiguous, digest FROM authors WHERE key = ?")
                for a in authors {
                    if let row = try statement.queryOne([.blob(a.bytes)]) { add(row) } else { out[a] = AuthorSummary(seq: 0, digest: 0) }
                }
            } else {
                try db.forEachRow("SELECT key, contiguous, digest FROM authors WHERE contiguous > 0") { add($0) }
            }
            return out
        }
    }

    /// Every signing key this replica holds records of: accounts and devices.
    public func allAuthorKeys() throws(StoreError) -> [PublicKey] {
        try read { db throws(StoreError) in
            try db.query("SELECT key FROM authors ORDER BY key").compactMap { $0.blob(0).flatMap(PublicKey.init(bytes:)) }
        }
    }

    /// Every account key this replica knows (for resolving ID prefixes): device keys left out.
    public func knownAuthors() throws(StoreError) -> [PublicKey] {
        try read { db throws(StoreError) in
            // Device keys speak for an account; they are not accounts of their own.
            try db.query("SELECT key FROM authors WHERE key NOT IN (SELECT device FROM device_certs) ORDER BY key")
                .compactMap { $0.blob(0).flatMap(PublicKey.init(bytes:)) }
        }
    }

    /// The records of `author` with seq in `range`, as signed (all variants of a forked seq).
    public func records(of author: PublicKey, seqs range: ClosedRange<UInt64>) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in
            try db.query("""
                SELECT r.bytes FROM records r JOIN authors a ON a.id = r.author
                WHERE a.key = ? AND r.seq BETWEEN ? AND ? ORDER BY r.seq, r.id
                """, [.blob(author.bytes), .integer(Int64(clamping: range.lowerBound)), .integer(Int64(clamping: range.upperBound))])
                .compactMap { $0.blob(0) }
        }
    }

    /// Equivocation evidence for `author`: the encodings that shared a sequence number.
    public func evidence(of author: PublicKey) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in
            try db.query("""
                SELECT e.bytes FROM evidence e JOIN authors a ON a.id = e.author WHERE a.key = ? ORDER BY e.seq, e.id
                """, [.blob(author.bytes)]).compactMap { $0.blob(0) }
        }
    }

    /// Counts for `status` (cached until the next write: counting a large replica takes ms).
    public func counts() throws(StoreError) -> ReplicaCounts {
        try read { db throws(StoreError) in
            if let cached = cachedCounts { return cached }
            countsRead += 1
            func count(_ sql: String) throws(StoreError) -> Int { try db.queryOne(sql)?.int(0) ?? 0 }
            let counts = ReplicaCounts(records: try count("SELECT count(*) FROM records"),
                                 authors: try count("SELECT count(*) FROM authors"),
                                 pending: try count("SELECT count(*) FROM pending"),
                                 heldUntilDue: try count("SELECT count(*) FROM held_until_due"),
                                 evidence: try count("SELECT count(*) FROM evidence"),
                                 forkedAuthors: try count("SELECT count(*) FROM authors WHERE forked = 1"),
                                 cards: try count("SELECT count(DISTINCT author) FROM card_entries"))
            cachedCounts = counts
            return counts
        }
    }

    /// `PRAGMA integrity_check`: ["ok"] for a sound database.
    public func integrityCheck() throws(StoreError) -> [String] {
        try run { db throws(StoreError) in try db.integrityCheck() }
    }
}
