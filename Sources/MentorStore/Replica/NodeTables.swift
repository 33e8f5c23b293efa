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
        try write { db throws(StoreError) in
            try db.execute("INSERT INTO node_accounts(uid, account, email, protected, created) VALUES (?, ?, ?, ?, ?)",
                           [.integer(Int64(a.uid)), .blob(a.account.bytes), .text(a.email), .integer(a.protected ? 1 : 0),
                            .integer(Int64(clamping: a.created))])
        }
    }

    public func removeNodeAccount(uid: UInt32) throws(StoreError) {
        try write { db throws(StoreError) in try db.execute("DELETE FROM node_accounts WHERE uid = ?", [.integer(Int64(uid))]) }
    }

    private static func nodeAccount(_ row: Row) -> NodeAccount? {
        guard let uid = row.int64(0), let key = row.blob(1).flatMap(PublicKey.init(bytes:)), let email = row.text(2),
              let p = row.int64(3), let c = row.int64(4) else { return nil }
        return NodeAccount(uid: UInt32(truncatingIfNeeded: uid), account: key, email: email, protected: p == 1, created: UInt64(c))
    }

    // MARK: Passes

    public func setPass(account: PublicKey, target: PublicKey, at: UInt64) throws(StoreError) {
        try write { db throws(StoreError) in
            try db.execute("INSERT OR REPLACE INTO passes(account, target, at) VALUES (?, ?, ?)",
                           [.blob(account.bytes), .blob(target.bytes), .integer(Int64(clamping: at))])
        }
    }

    /// Removes a pass; returns whether there was one.
    public func removePass(account: PublicKey, target: PublicKey) throws(StoreError) -> Bool {
        try write { db throws(StoreError) in
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

    /// The highest seq of `author` such that 1...seq are all held (0 if none).
    public func contiguousSeq(of author: PublicKey) throws(StoreError) -> UInt64 {
        try read { db throws(StoreError) in
            UInt64(try db.cachedStatement("SELECT contiguous FROM authors WHERE key = ?").queryOne([.blob(author.bytes)])?.int64(0) ?? 0)
        }
    }

    // MARK: Blobs

    /// Stores a blob after checking its limits and format; returns its reference.
    public func putBlob(_ data: [UInt8]) throws(BlobError) -> PhotoRef {
        guard !data.isEmpty, data.count <= Limits.maxPhotoBytes else {
            throw BlobError(message: "the photo is \(data.count) bytes; it must be 1 byte to \(Limits.maxPhotoBytes / (1024 * 1024)) MiB")
        }
        guard let format = PhotoRef.sniff(data) else {
            throw BlobError(message: "the file is not a JPEG, PNG or WebP image (checked by content, not by name)")
        }
        let ref = PhotoRef(hash: BLAKE2b.hash(data, outputLength: 32), size: UInt32(data.count), format: format)
        do {
            try write { db throws(StoreError) in
                try db.execute("INSERT OR IGNORE INTO blobs(hash, format, size, data) VALUES (?, ?, ?, ?)",
                               [.blob(ref.hash), .integer(Int64(format.rawValue)), .integer(Int64(data.count)), .blob(data)])
            }
        } catch {
            throw BlobError(message: "could not store the photo: \(error)", storage: error)
        }
        return ref
    }

    /// Photos that current profile cards name (winners and concurrent values) and this node does
    /// not hold: what to fetch from peers. At most `limit`, in hash order.
    public func missingPhotos(limit: Int = 256) throws(StoreError) -> [PhotoRef] {
        try read { db throws(StoreError) in
            try db.query("""
                SELECT DISTINCT value FROM card_entries
                WHERE field = ? AND length(value) = 37 AND substr(value, 1, 32) NOT IN (SELECT hash FROM blobs)
                ORDER BY value LIMIT ?
                """, [.integer(Int64(ProfileCard.Field.photo.rawValue)), .integer(Int64(limit))])
                .compactMap { row in row.blob(0).flatMap { try? PhotoRef.decode($0) } }
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

public struct PairSummary: Sendable, Equatable {
    public var other: PublicKey
    public var iLike: Bool
    public var theyLike: Bool
    public var matched: Bool
    public var unmatchedBy: PublicKey?
    public var messages: Int
}

public struct BlobError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var storage: StoreError?
    public var description: String { message }
    public init(message: String, storage: StoreError? = nil) { self.message = message; self.storage = storage }
}
