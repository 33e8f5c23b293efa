import MentorCore
import MentorCrypto

/// A Unix user's account on this node (node-local, never replicated).
public struct NodeAccount: Sendable, Equatable {
    public var uid: UInt32
    public var account: PublicKey
    public var email: String
    public var protected: Bool
    public var created: UInt64

    public init(uid: UInt32, account: PublicKey, email: String, protected: Bool, created: UInt64) {
        self.uid = uid; self.account = account; self.email = email; self.protected = protected; self.created = created
    }
}

/// Node-local state that lives in the replica's database (so it shares its transactions and
/// backups) but is never sent to peers: accounts of local users, passes, photo blobs.
extension Replica {
    public func nodeAccounts() throws(StoreError) -> [NodeAccount] {
        try read { db throws(StoreError) in
            try db.query("SELECT uid, account, email, protected, created FROM node_accounts ORDER BY uid").compactMap(Self.nodeAccount)
        }
    }

    public func nodeAccount(uid: UInt32) throws(StoreError) -> NodeAccount? {
        try read { db throws(StoreError) in
            try db.queryOne("SELECT uid, account, email, protected, created FROM node_accounts WHERE uid = ?",
                            [.integer(Int64(uid))]).flatMap(Self.nodeAccount)
        }
    }

    /// Records a new local account; fails with a constraint error if the uid already has one.
    public func addNodeAccount(_ a: NodeAccount) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            try db.execute("INSERT INTO node_accounts(uid, account, email, protected, created) VALUES (?, ?, ?, ?, ?)",
                           [.integer(Int64(a.uid)), .blob(a.account.bytes), .text(a.email), .integer(a.protected ? 1 : 0),
                            .integer(Int64(clamping: a.created))])
        }
    }

    /// A local account's new e-mail address (the setting `email`).
    public func setNodeAccountEmail(uid: UInt32, email: String) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            try db.execute("UPDATE node_accounts SET email = ? WHERE uid = ?", [.text(email), .integer(Int64(uid))])
        }
    }

    public func removeNodeAccount(uid: UInt32) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            // Its settings go with it (`logout --forget` on a shared machine leaves none behind).
            try db.execute("DELETE FROM account_settings WHERE account IN (SELECT account FROM node_accounts WHERE uid = ?)", [.integer(Int64(uid))])
            try db.execute("DELETE FROM node_accounts WHERE uid = ?", [.integer(Int64(uid))])
        }
    }

    private static func nodeAccount(_ row: Row) -> NodeAccount? {
        guard let uid = row.int64(0), let key = row.blob(1).flatMap(PublicKey.init(bytes:)), let email = row.text(2),
              let p = row.int64(3), let c = row.int64(4) else { return nil }
        return NodeAccount(uid: UInt32(truncatingIfNeeded: uid), account: key, email: email, protected: p == 1, created: UInt64(c))
    }

    // MARK: Passes

    public func setPass(account: PublicKey, target: PublicKey, at: UInt64) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            try db.execute("INSERT OR REPLACE INTO passes(account, target, at) VALUES (?, ?, ?)",
                           [.blob(account.bytes), .blob(target.bytes), .integer(Int64(clamping: at))])
        }
    }

    /// Removes a pass; returns whether there was one.
    public func removePass(account: PublicKey, target: PublicKey) throws(StoreError) -> Bool {
        try write(countsUnchanged: true) { db throws(StoreError) in
            try db.execute("DELETE FROM passes WHERE account = ? AND target = ?", [.blob(account.bytes), .blob(target.bytes)])
            return db.changes > 0
        }
    }

    public func passes(of account: PublicKey) throws(StoreError) -> Set<PublicKey> {
        try read { db throws(StoreError) in
            Set(try db.query("SELECT target FROM passes WHERE account = ?", [.blob(account.bytes)])
                .compactMap { $0.blob(0).flatMap(PublicKey.init(bytes:)) })
        }
    }

    // MARK: Pairs of a local account

    /// The materialized relations of a local account (one row per account it has private
    /// records with): (other, iLike, theyLike, matched, unmatchedBy, messages).
    public func pairSummaries(of account: PublicKey) throws(StoreError) -> [PairSummary] {
        try read { db throws(StoreError) in
            try db.query("SELECT other, i_like, they_like, matched, unmatched_by, messages FROM pairs WHERE account = ?",
                         [.blob(account.bytes)]).compactMap { row in
                guard let other = row.blob(0).flatMap(PublicKey.init(bytes:)) else { return nil }
                return PairSummary(other: other, iLike: row.int64(1) == 1, theyLike: row.int64(2) == 1,
                                   matched: row.int64(3) == 1, unmatchedBy: row.blob(4).flatMap(PublicKey.init(bytes:)),
                                   messages: row.int(5) ?? 0)
            }
        }
    }

    /// The summary row of one pair of a local account (nil if they have no private records).
    public func pairSummary(account: PublicKey, other: PublicKey) throws(StoreError) -> PairSummary? {
        try pairSummaries(of: account).first { $0.other == other }
    }

    /// The highest seq of `author` such that 1...seq were all applied — stored, or superseded
    /// and dropped (0 if none). Records past a gap are applied too; this is what the author's
    /// log is known to hold without holes.
    public func contiguousSeq(of author: PublicKey) throws(StoreError) -> UInt64 {
        try read { db throws(StoreError) in
            UInt64(try db.cachedStatement("SELECT contiguous FROM authors WHERE key = ?").queryOne([.blob(author.bytes)])?.int64(0) ?? 0)
        }
    }

    // MARK: Blobs

    /// Stores a blob after checking its limits and format; returns its reference. `uploadedAt`
    /// (Unix ms) marks a local user's upload, which `collectBlobs` spares for a while even though
    /// no card names it yet; nil for a photo fetched from a peer.
    public func putBlob(_ data: [UInt8], uploadedAt: UInt64? = nil) throws(BlobError) -> PhotoRef {
        guard !data.isEmpty, data.count <= Limits.maxPhotoBytes else {
            throw BlobError(message: "the photo is \(data.count) bytes; it must be 1 byte to \(Limits.maxPhotoBytes / (1024 * 1024)) MiB")
        }
        guard let format = PhotoRef.sniff(data) else {
            throw BlobError(message: "the file is not a JPEG, PNG or WebP image (checked by content, not by name)")
        }
        let ref = PhotoRef(hash: BLAKE2b.hash(data, outputLength: 32), size: UInt32(data.count), format: format)
        do {
            try write(countsUnchanged: true) { db throws(StoreError) in
                try db.execute("INSERT OR IGNORE INTO blobs(hash, format, size, data, uploaded) VALUES (?, ?, ?, ?, ?)",
                               [.blob(ref.hash), .integer(Int64(format.rawValue)), .integer(Int64(data.count)), .blob(data),
                                uploadedAt.map { .integer(Int64(clamping: $0)) } ?? .null])
                if let uploadedAt {
                    try db.execute("UPDATE blobs SET uploaded = ? WHERE hash = ?", [.integer(Int64(clamping: uploadedAt)), .blob(ref.hash)])
                }
            }
        } catch {
            throw BlobError(message: "could not store the photo: \(error)", storage: error)
        }
        return ref
    }

    /// A current card entry (winner or concurrent value) naming, at any position of its photo
    /// list, the photo whose hash is the SQL expression `hash`: a row of `card_photos`
    /// (migration 16), whose `ref` is a 37-byte `PhotoRef` starting with the hash. Its index
    /// `card_photos_by_hash` serves it: one look-up per photo, not a scan of every card.
    private static func cardNamingPhoto(_ hash: String) -> String {
        "SELECT 1 FROM card_photos WHERE substr(ref, 1, 32) = \(hash)"
    }

    /// Photos that current profile cards name (winners and concurrent values) and this node does
    /// not hold, with the author naming each: what to fetch from peers. At most `limit`,
    /// smallest first (so a node whose photo budget is nearly full fetches the many small photos
    /// people take before the few 4 MiB ones an attacker makes), then in hash order.
    ///
    /// The first rows of `photos_missing` (migration 11), which triggers keep as cards and blobs
    /// change: the cost is that of the rows returned, not of the cards held.
    public func missingPhotos(limit: Int = 256) throws(StoreError) -> [(ref: PhotoRef, author: PublicKey)] {
        try read { db throws(StoreError) in
            try db.cachedStatement(Self.missingPhotosSQL).query([.integer(Int64(limit))])
                .compactMap { row in
                    guard let ref = row.blob(0).flatMap({ try? PhotoRef.decode($0) }),
                          let author = row.blob(1).flatMap(PublicKey.init(bytes:)) else { return nil }
                    return (ref, author)
                }
        }
    }

    static let missingPhotosSQL = """
        SELECT m.value, a.key FROM photos_missing m CROSS JOIN authors a
        WHERE a.id = m.author ORDER BY m.size, m.value LIMIT ?
        """

    /// The plan SQLite chose for `missingPhotos` (EXPLAIN QUERY PLAN's detail column), for tests.
    func missingPhotosQueryPlan() throws(StoreError) -> [String] {
        try read { db throws(StoreError) in
            try db.query("EXPLAIN QUERY PLAN " + Self.missingPhotosSQL, [.integer(1)]).compactMap { $0.text(3) }
        }
    }

    /// Whether a current card names this photo (a fetched blob is stored only then).
    public func isNamedPhoto(hash: [UInt8]) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in
            try db.queryOne(Self.cardNamingPhoto("?") + " LIMIT 1", [.blob(hash)]) != nil
        }
    }

    /// Deletes every blob no current card names at any position of its photo list — a photo its
    /// card replaced or removed, or one fetched for an edit that was superseded — except a local
    /// upload younger than `uploadGrace` ms that no card has named yet (its card edit may still
    /// follow; once named, `uploaded` is cleared). Returns how many blobs and bytes went.
    @discardableResult
    public func collectBlobs(now: UInt64, uploadGrace: UInt64 = 3_600_000) throws(StoreError) -> (blobs: Int, bytes: Int64) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            // Named by a card: one index look-up per blob held, asked first, so that `uploaded` —
            // stored after the data — is read only for the unnamed ones.
            let keep = "EXISTS (\(Self.cardNamingPhoto("blobs.hash"))) OR (uploaded IS NOT NULL AND uploaded > ?)"
            let cutoff = SQLValue.integer(Int64(clamping: now) - Int64(clamping: uploadGrace))
            let doomed = try db.queryOne("SELECT count(*), coalesce(sum(size), 0) FROM blobs WHERE NOT (\(keep))", [cutoff])
            let count = Int(doomed?.int64(0) ?? 0), bytes = doomed?.int64(1) ?? 0
            if count > 0 { try db.execute("DELETE FROM blobs WHERE NOT (\(keep))", [cutoff]) }
            return (count, bytes)
        }
    }

    /// Blobs held and their bytes (what the node-wide photo budget counts).
    public func blobUsage() throws(StoreError) -> (blobs: Int, bytes: Int64) {
        try read { db throws(StoreError) in
            let row = try db.queryOne("SELECT count(*), coalesce(sum(size), 0) FROM blobs")
            return (Int(row?.int64(0) ?? 0), row?.int64(1) ?? 0)
        }
    }

    /// The bytes of an author's stored records (variants and held-back records included) and of
    /// the photos its current card names that this node holds: what the per-author budget counts.
    public func authorUsage(_ author: PublicKey) throws(StoreError) -> Int64 {
        guard case .some(.some(let usage)) = try authorUsages([author])[author] else { return 0 }
        return usage.bytes
    }

    /// What the per-author budget counts (`authorUsage`) for each of `authors`, in one read:
    /// nil for an author the replica holds nothing of (no row in `authors`). A batch of records
    /// or a listing of missing photos asks this once for all its authors, not once per record.
    public func authorUsages(_ authors: some Collection<PublicKey>) throws(StoreError) -> [PublicKey: AuthorUsage?] {
        guard !authors.isEmpty else { return [:] }
        return try read { db throws(StoreError) in
            // Cached statements, parsed once: a listing asks for up to 1,024 authors.
            let find = try db.cachedStatement("SELECT id FROM authors WHERE key = ?")
            let records = try db.cachedStatement("""
                SELECT coalesce((SELECT sum(length(bytes)) FROM records WHERE author = ?1), 0)
                     + coalesce((SELECT sum(length(bytes)) FROM pending WHERE author = ?1), 0)
                """)
            // Every photo of every current entry of the author's card (`card_photos`), each blob once.
            let photos = try db.cachedStatement("""
                SELECT coalesce(sum(b.size), 0) FROM blobs b WHERE b.hash IN (
                    SELECT substr(ref, 1, 32) FROM card_photos WHERE author = ?)
                """)
            var usages: [PublicKey: AuthorUsage?] = [:]
            usages.reserveCapacity(authors.count)
            for author in authors where usages[author] == nil {
                guard let id = try find.queryOne([.blob(author.bytes)])?.int64(0) else {
                    usages[author] = .some(nil)
                    continue
                }
                let bytes = try (records.queryOne([.integer(id)])?.int64(0) ?? 0) + (photos.queryOne([.integer(id)])?.int64(0) ?? 0)
                usages[author] = AuthorUsage(bytes: bytes)
            }
            return usages
        }
    }

    public func blob(hash: [UInt8]) throws(StoreError) -> (ref: PhotoRef, data: [UInt8])? {
        try read { db throws(StoreError) in
            guard let row = try db.queryOne("SELECT format, size, data FROM blobs WHERE hash = ?", [.blob(hash)]),
                  let f = row.int64(0).flatMap({ PhotoRef.Format(rawValue: UInt8(truncatingIfNeeded: $0)) }),
                  let size = row.int64(1), let data = row.blob(2) else { return nil }
            return (PhotoRef(hash: hash, size: UInt32(size), format: f), data)
        }
    }
}

/// What the per-author budget counts of an author the replica holds something of.
public struct AuthorUsage: Sendable, Equatable {
    /// Its records' bytes (variants and held-back records included) and its held photos'.
    public var bytes: Int64
}

public struct PairSummary: Sendable, Equatable {
    public var other: PublicKey
    public var iLike: Bool
    public var theyLike: Bool
    public var matched: Bool
    public var unmatchedBy: PublicKey?
    public var messages: Int
}

/// One pair of a local account whose summary a write changed: the `pairs` row before and after
/// the transaction. A match, an unmatch or new messages are decided here, once (`ApplyBatch.finish`
/// writes the row); the node's events are read off these changes.
public struct PairChange: Sendable, Equatable {
    public var account: PublicKey
    /// The row before (nil: the pair had no private records yet).
    public var before: PairSummary?
    public var after: PairSummary

    public var becameMatched: Bool { after.matched && before?.matched != true }
    /// Who unmatched, when this change is the unmatch.
    public var unmatchedBy: PublicKey? { before?.unmatchedBy == nil ? after.unmatchedBy : nil }
    /// How many messages the change added (the newest ones of the pair).
    public var newMessages: Int { max(0, after.messages - (before?.messages ?? 0)) }
}

/// What one write transaction did: each record's outcome, the records it stored (held ones it
/// released included, in the order stored), and the pairs of local accounts it changed.
public struct ApplyReport: Sendable {
    public var outcomes: [ApplyOutcome]
    public var stored: [VerifiedRecord]
    public var pairs: [PairChange]
}

public struct BlobError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var storage: StoreError?
    public var description: String { message }
    public init(message: String, storage: StoreError? = nil) { self.message = message; self.storage = storage }
}
