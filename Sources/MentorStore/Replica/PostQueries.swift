import MentorCore

/// A post as the replica holds it (PROTOCOL.md §6.6), with its public counts.
public struct PostSummary: Sendable, Equatable {
    public var id: [UInt8]
    public var account: PublicKey
    public var created: UInt64
    public var caption: String
    public var tags: [String]
    public var photos: [PhotoRef]
    /// Accounts whose like of the post stands.
    public var likes: Int
    /// Comments not hidden by the post's author.
    public var comments: Int
}

/// A comment on a post.
public struct CommentSummary: Sendable, Equatable {
    public var id: [UInt8]
    public var post: [UInt8]
    public var account: PublicKey
    public var created: UInt64
    public var text: String
    /// Hidden by the post's author: shown to its writer only.
    public var hidden: Bool
}

/// Which posts a listing returns, newest first.
public struct PostFilter: Sendable, Equatable {
    /// Only posts carrying this (canonical) tag.
    public var tag: String?
    /// Only posts of these accounts (nil: anyone's).
    public var authors: Set<PublicKey>?
    /// Posts of these accounts come first (people followed, nearby), then the others.
    public var first: Set<PublicKey> = []
    /// Left out (hidden by the viewer, or of accounts the viewer blocks).
    public var excluded: Set<[UInt8]> = []
    public var excludedAuthors: Set<PublicKey> = []
    public var limit: Int = 50

    public init(tag: String? = nil, authors: Set<PublicKey>? = nil, first: Set<PublicKey> = [], limit: Int = 50) {
        self.tag = tag; self.authors = authors; self.first = first; self.limit = limit
    }
}

extension Replica {
    private static let postColumns = "p.id, p.account, p.created, p.caption, p.tags, "
        + "(SELECT count(*) FROM post_likes l WHERE l.post = p.id AND l.liked = 1), "
        + "(SELECT count(*) FROM comments c WHERE c.post = p.id AND NOT EXISTS "
        + "(SELECT 1 FROM post_ops o WHERE o.target = c.id AND o.kind = 3))"

    private static func summary(_ row: Row, _ db: Database) throws(StoreError) -> PostSummary? {
        guard let id = row.blob(0), let account = row.blob(1).flatMap(PublicKey.init(bytes:)), let created = row.int64(2),
              let caption = row.text(3), let tags = row.text(4) else { return nil }
        let photos = try db.cachedStatement("SELECT ref FROM card_photos WHERE record_id = ? ORDER BY slot").query([.blob(id)])
            .compactMap { $0.blob(0).flatMap { try? PhotoRef.decode($0) } }
        return PostSummary(id: id, account: account, created: UInt64(max(created, 0)), caption: caption,
                           tags: tags.split(separator: " ").map(String.init), photos: photos,
                           likes: row.int(5) ?? 0, comments: row.int(6) ?? 0)
    }

    /// The post with this record ID, if the replica holds it (not deleted).
    public func post(_ id: [UInt8]) throws(StoreError) -> PostSummary? {
        try read { db throws(StoreError) in
            guard let row = try db.cachedStatement("SELECT \(Self.postColumns) FROM posts p WHERE p.id = ?").queryOne([.blob(id)]) else { return nil }
            return try Self.summary(row, db)
        }
    }

    /// Whether a post was deleted by its author (its tombstone is held).
    public func isDeletedPost(_ id: [UInt8]) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in try db.queryOne("SELECT 1 FROM posts_gone WHERE id = ?", [.blob(id)]) != nil }
    }

    /// A post's comments, oldest first: those its author hid only for their writer `viewer`.
    public func comments(of post: [UInt8], viewer: PublicKey?) throws(StoreError) -> [CommentSummary] {
        try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT c.id, c.account, c.created, c.text,
                       EXISTS (SELECT 1 FROM post_ops o WHERE o.target = c.id AND o.kind = 3)
                FROM comments c WHERE c.post = ? ORDER BY c.created, c.id
                """).query([.blob(post)]).compactMap { row -> CommentSummary? in
                guard let id = row.blob(0), let account = row.blob(1).flatMap(PublicKey.init(bytes:)),
                      let created = row.int64(2), let text = row.text(3) else { return nil }
                let hidden = row.int64(4) == 1
                guard !hidden || account == viewer else { return nil }
                return CommentSummary(id: id, post: post, account: account, created: UInt64(max(created, 0)), text: text, hidden: hidden)
            }
        }
    }

    /// A comment by its record ID.
    public func comment(_ id: [UInt8]) throws(StoreError) -> CommentSummary? {
        try read { db throws(StoreError) in
            guard let row = try db.queryOne("""
                SELECT c.post, c.account, c.created, c.text, EXISTS (SELECT 1 FROM post_ops o WHERE o.target = c.id AND o.kind = 3)
                FROM comments c WHERE c.id = ?
                """, [.blob(id)]), let post = row.blob(0), let account = row.blob(1).flatMap(PublicKey.init(bytes:)),
                  let created = row.int64(2), let text = row.text(3) else { return nil }
            return CommentSummary(id: id, post: post, account: account, created: UInt64(max(created, 0)), text: text, hidden: row.int64(4) == 1)
        }
    }

    /// Whether `account`'s like of the post stands.
    public func likesPost(_ post: [UInt8], account: PublicKey) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT liked FROM post_likes WHERE post = ? AND account = ?")
                .queryOne([.blob(post), .blob(account.bytes)])?.int64(0) == 1
        }
    }

    /// The IDs of posts (`comments` false) or comments whose hex spelling starts with `prefix`
    /// (lower-case hex), at most `limit`: how a typed short ID is resolved.
    public func postIDs(prefix: String, comments: Bool = false, limit: Int = 2) throws(StoreError) -> [[UInt8]] {
        try ids(in: comments ? "comments" : "posts", prefix: prefix, limit: limit)
    }

    /// The IDs (the `id` primary key of `table`) whose hex spelling starts with `prefix`: a range
    /// scan on the key from the prefix's low end. Posts, comments and meetups resolve short IDs so.
    func ids(in table: StaticString, prefix: String, limit: Int) throws(StoreError) -> [[UInt8]] {
        guard !prefix.isEmpty, prefix.count <= 64, prefix.allSatisfy(\.isHexDigit) else { return [] }
        let evenPrefix = prefix.count % 2 == 0 ? prefix : prefix + "0"
        guard let low = Hex.decode(evenPrefix) else { return [] }
        return try read { db throws(StoreError) in
            try db.query("SELECT id FROM \(table) WHERE id >= ? ORDER BY id LIMIT 64", [.blob(low)])
                .compactMap { $0.blob(0) }
                .filter { Hex.encode($0).hasPrefix(prefix.lowercased()) }
                .prefix(limit).map { $0 }
        }
    }

    /// Posts, newest first — those of `filter.first` before the others.
    public func posts(_ filter: PostFilter) throws(StoreError) -> [PostSummary] {
        var conditions: [String] = []
        var args: [SQLValue] = []
        if let tag = filter.tag {
            conditions.append("p.id IN (SELECT post FROM post_tags WHERE tag = ?)")
            args.append(.text(tag))
        }
        if let authors = filter.authors {
            conditions.append("p.account IN (\(Array(repeating: "?", count: authors.count).joined(separator: ",")))")
            args += authors.map { .blob($0.bytes) }
        }
        let firstKeys = Array(filter.first.prefix(512))
        // No priority term without keys: a bare `1` in ORDER BY names the first column (the ID).
        let priority = firstKeys.isEmpty ? ""
            : "CASE WHEN p.account IN (\(Array(repeating: "?", count: firstKeys.count).joined(separator: ","))) THEN 0 ELSE 1 END, "
        let where_ = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT \(Self.postColumns) FROM posts p \(where_) ORDER BY \(priority)p.created DESC, p.id DESC LIMIT ?"
        let limit = max(filter.limit, 0)
        let fetch = limit + filter.excluded.count + min(filter.excludedAuthors.count * 8, 1024)
        let all = args + firstKeys.map { .blob($0.bytes) } + [.integer(Int64(fetch))]
        return try read { db throws(StoreError) in
            var out: [PostSummary] = []
            for row in try db.query(sql, all) where out.count < limit {
                guard let s = try Self.summary(row, db), !filter.excluded.contains(s.id), !filter.excludedAuthors.contains(s.account) else { continue }
                out.append(s)
            }
            return out
        }
    }

    /// Posts matching `text` in their caption or tags (SQLite FTS5: every word must appear, the
    /// last one as the start of a word — it may be half typed): of the newest `window` matches (by creation), the best first
    /// by bm25, newer first between equals (PostSearch.swift).
    public func searchPosts(_ text: String, limit: Int = 50, excluded: Set<[UInt8]> = [],
                            window: Int = PostSearch.window) throws(StoreError) -> [PostSummary] {
        let words = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).prefix(16)
        guard !words.isEmpty else { return [] }
        // Words hold letters and digits only, so each is a safe FTS5 string. FTS5 gives the
        // matches in rowid order, newest first (the rowid is `recency`), and stops after the
        // window; those are ranked alone, and counts are read for the rows returned only.
        // Only the last word is a prefix (it may be half typed), read as the whole words it
        // starts (PostSearch.lastWord).
        let wanted = max(limit, 0) + excluded.count
        return try read { db throws(StoreError) in
            let match = try (words.dropLast().map { "\"\($0)\"" } + [PostSearch.lastWord(words[words.count - 1], db)]).joined(separator: " ")
            var out: [PostSummary] = []
            let rows = try db.cachedStatement("""
                SELECT \(Self.postColumns) FROM (
                    SELECT rowid, rank FROM (
                        SELECT rowid, bm25(post_search) AS rank FROM post_search WHERE post_search MATCH ?1
                        ORDER BY rowid DESC LIMIT ?2
                    ) ORDER BY rank, rowid DESC LIMIT ?3
                ) s CROSS JOIN posts p ON p.rowid = s.rowid ORDER BY s.rank, s.rowid DESC
                """).query([.text(match), .integer(Int64(max(window, wanted))), .integer(Int64(wanted))])
            for row in rows where out.count < limit {
                guard let s = try Self.summary(row, db), !excluded.contains(s.id) else { continue }
                out.append(s)
            }
            return out
        }
    }

    /// The IDs of the newest `limit` posts (what `explore` samples from).
    public func recentPostIDs(limit: Int) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in
            try db.query("SELECT id FROM posts ORDER BY created DESC, id DESC LIMIT ?", [.integer(Int64(max(limit, 0)))]).compactMap { $0.blob(0) }
        }
    }

    /// How many posts an account has (not deleted).
    public func postCount(of account: PublicKey) throws(StoreError) -> Int {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT count(*) FROM posts WHERE account = ?").queryOne([.blob(account.bytes)])?.int(0) ?? 0
        }
    }

    /// Checkpoints the WAL into the database and truncates it to nothing, so deleted content
    /// (a purged post's words: `secure_delete` zeroed it in the pages) is not left in old
    /// WAL frames. Best effort: with readers in the way the WAL stays until the next one.
    public func truncateLog() throws(StoreError) {
        try run { db throws(StoreError) in _ = try db.query("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// The posts `account` hid from its own lists (its notes, on every one of its devices).
    public func hiddenPosts(of account: PublicKey) throws(StoreError) -> Set<[UInt8]> {
        try read { db throws(StoreError) in
            Set(try db.cachedStatement("SELECT post FROM hidden_posts WHERE account = ? AND hidden = 1")
                .query([.blob(account.bytes)]).compactMap { $0.blob(0) })
        }
    }
}
