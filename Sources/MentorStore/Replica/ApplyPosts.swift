import MentorCore
import MentorCrypto

/// Posts, comments and likes of posts in the public replica (PROTOCOL.md §6.6): who may do
/// what, the caption and tags registers, the like registers, and a deletion's purge.
///
/// Every decision depends only on the set of records seen, so any order gives the same state:
/// an operation naming a post (or comment) the replica does not hold yet is stored and judged
/// when the post arrives — an edit or deletion by another account is then dropped, as it would
/// have been refused (`not-author`) had the post come first; both leave it remembered like a
/// superseded record, never stored.
extension ApplyBatch {
    enum PostVerdict {
        /// Store the record (its effects are applied already).
        case store
        /// Do not store it; remember it like a superseded record.
        case drop
        /// As `drop`, and the outcome is this refusal.
        case refuse(RecordError)
    }

    /// What the replica knows of a post.
    enum PostState: Equatable {
        case unknown
        case live(account: [UInt8])
        /// Deleted by its author: nothing naming it is stored again but the author's deletions.
        case gone(account: [UInt8])
    }

    /// The kinds of `post_ops` rows: operations one account may do to a post or a comment.
    enum PostOp: Int64 { case edit = 1, delete = 2, hide = 3, deleteComment = 4 }

    /// Applies a post, comment or like of a post before the record itself is stored; what to do
    /// with the record. `accountRow` is the `authors` row of the record's account.
    mutating func admitPostRecord(_ v: VerifiedRecord, accountRow: Int64) throws(StoreError) -> PostVerdict {
        let r = v.record
        let account = r.account.bytes
        switch r.type {
        case .post:
            // Verified records decode; one that does not (a damaged database) is not stored.
            guard let post = try? Post(body: r.body) else { return .drop }
            switch post.action {
            case .create(let photos, let caption, let tags):
                return try createPost(v, photos: photos, caption: caption, tags: tags, accountRow: accountRow)
            case .edit(let p, let caption, let tags):
                switch try postState(p) {
                case .gone: return .drop
                case .live(let owner):
                    guard owner == account else { return notAuthor(v, "edits a post of another account") }
                    try foldEdit(post: p, id: v.id, at: r.timestamp, caption: caption, tags: tags)
                case .unknown: break
                }
                try noteOp(v.id, post: p, account: account, kind: .edit, target: nil)
                return .store
            case .delete(let p):
                let state = try postState(p)
                switch state {
                case .gone(let owner), .live(let owner):
                    guard owner == account else { return notAuthor(v, "deletes a post of another account") }
                case .unknown: break
                }
                try noteOp(v.id, post: p, account: account, kind: .delete, target: nil)
                if case .live(let owner) = state { try purgePost(p, owner: owner) }
                return .store
            }
        case .comment:
            guard let c = try? PostComment(body: r.body) else { return .drop }
            let state = try subjectState(c.post)
            if case .gone = state { return .drop }
            switch c.action {
            case .create(let text):
                // Deleted by its author before it arrived here.
                if try statement("SELECT 1 FROM post_ops WHERE target = ? AND kind = 4 AND account = ?")
                    .queryOne([.blob(v.id), .blob(account)]) != nil {
                    try statement("INSERT OR IGNORE INTO comments_gone(id, account) VALUES (?, ?)").run([.blob(v.id), .blob(account)])
                    try dropOps(target: v.id, where: "kind = 3")
                    return .drop
                }
                try dropOps(target: v.id, where: "kind = 4", notBy: account)
                try statement("INSERT OR IGNORE INTO comments(id, post, account, created, text) VALUES (?, ?, ?, ?, ?)")
                    .run([.blob(v.id), .blob(c.post), .blob(account), .integer(Int64(clamping: r.timestamp)), .text(text)])
                try addRef(c.post, v.id)
                return .store
            case .delete(let cid):
                if let writer = try statement("SELECT account FROM comments WHERE id = ?").queryOne([.blob(cid)])?.blob(0) {
                    guard writer == account else { return notAuthor(v, "deletes a comment of another account") }
                    try purgeComment(cid, writer: writer)
                } else if let writer = try statement("SELECT account FROM comments_gone WHERE id = ?").queryOne([.blob(cid)])?.blob(0),
                          writer != account {
                    return notAuthor(v, "deletes a comment of another account")
                }
                try noteOp(v.id, post: c.post, account: account, kind: .deleteComment, target: cid)
                return .store
            case .hide(let cid):
                if case .live(let owner) = state, owner != account {
                    return notAuthor(v, "hides a comment on a post or meetup of another account")
                }
                if try statement("SELECT 1 FROM comments_gone WHERE id = ?").queryOne([.blob(cid)]) != nil { return .drop }
                try noteOp(v.id, post: c.post, account: account, kind: .hide, target: cid)
                return .store
            }
        case .postLike:
            guard let like = try? PostLike(body: r.body) else { return .drop }
            if case .gone = try postState(like.post) { return .drop }
            let key: [SQLValue] = [.blob(like.post), .blob(account)]
            if let row = try statement("SELECT timestamp, record_id FROM post_likes WHERE post = ? AND account = ?").queryOne(key),
               let ts = row.int64(0), let old = row.blob(1) {
                let at = Int64(clamping: r.timestamp)
                guard at != ts ? at > ts : old.lexicographicallyPrecedes(v.id) else { return .drop }
                try dropRecord(old)
                try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(like.post), .blob(old)])
            }
            try statement("INSERT OR REPLACE INTO post_likes(post, account, record_id, timestamp, liked) VALUES (?, ?, ?, ?, ?)")
                .run(key + [.blob(v.id), .integer(Int64(clamping: r.timestamp)), .integer(like.liked ? 1 : 0)])
            try addRef(like.post, v.id)
            return .store
        default:
            return .store
        }
    }

    private func notAuthor(_ v: VerifiedRecord, _ what: String) -> PostVerdict {
        .refuse(RecordError(.notAuthor, "\(v.record.author.shortID)… seq \(v.record.seq) \(what); only that account may; not kept"))
    }

    func postState(_ post: [UInt8]) throws(StoreError) -> PostState {
        if let a = try statement("SELECT account FROM posts WHERE id = ?").queryOne([.blob(post)])?.blob(0) { return .live(account: a) }
        if let a = try statement("SELECT account FROM posts_gone WHERE id = ?").queryOne([.blob(post)])?.blob(0) { return .gone(account: a) }
        return .unknown
    }

    /// What a comment names (PROTOCOL.md §6.6): a post, whose account hides its comments, or a
    /// meetup, whose host does; `gone` once the post was deleted or the meetup collected.
    func subjectState(_ id: [UInt8]) throws(StoreError) -> PostState {
        let post = try postState(id)
        guard post == .unknown else { return post }
        if let host = try statement("SELECT host FROM meetups WHERE id = ?").queryOne([.blob(id)])?.blob(0) { return .live(account: host) }
        if try statement("SELECT 1 FROM meetups_gone WHERE id = ?").queryOne([.blob(id)]) != nil { return .gone(account: []) }
        return .unknown
    }

    /// A meetup's create arrived: the hides of its comments stored while it was unknown that are
    /// not its host's go, as they would have been refused (`not-author`) had it come first.
    mutating func judgeCommentHides(meetup: [UInt8], host: [UInt8]) throws(StoreError) {
        try dropEarlyOps(on: meetup, kinds: "3", notBy: host)
    }

    /// Drops the operations of `kinds` on `subject` held before it arrived that are not `owner`'s.
    private mutating func dropEarlyOps(on subject: [UInt8], kinds: String, notBy owner: [UInt8]) throws(StoreError) {
        for row in try db.query("SELECT id FROM post_ops WHERE post = ? AND kind IN (\(kinds)) AND account != ?", [.blob(subject), .blob(owner)]) {
            guard let id = row.blob(0) else { continue }
            try dropRecord(id)
            try statement("DELETE FROM post_ops WHERE id = ?").run([.blob(id)])
            try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(subject), .blob(id)])
        }
    }

    /// A collected meetup's comments, their deletions and hides leave the replica with it.
    mutating func purgeComments(of meetup: [UInt8]) throws(StoreError) {
        for row in try db.query("SELECT id FROM post_refs WHERE post = ?", [.blob(meetup)]) {
            if let id = row.blob(0) { try dropRecord(id) }
        }
        try db.execute("DELETE FROM comments WHERE post = ?", [.blob(meetup)])
        try db.execute("DELETE FROM post_ops WHERE post = ?", [.blob(meetup)])
        try db.execute("DELETE FROM post_refs WHERE post = ?", [.blob(meetup)])
    }

    private mutating func createPost(_ v: VerifiedRecord, photos: [PhotoRef], caption: String, tags: [String],
                                     accountRow: Int64) throws(StoreError) -> PostVerdict {
        let p = v.id, account = v.record.account.bytes
        // Operations that arrived before the post: another account's edits, deletions and hides go.
        try dropEarlyOps(on: p, kinds: "1, 2, 3", notBy: account)
        // Deleted by its author before it arrived: gone at once.
        if try statement("SELECT 1 FROM post_ops WHERE post = ? AND kind = 2 AND account = ?").queryOne([.blob(p), .blob(account)]) != nil {
            try purgePost(p, owner: account)
            return .drop
        }
        // Its rowid is its place in time, which search walks newest first (PostSearch.swift).
        let recency = try postRecency(created: v.record.timestamp)
        try statement("""
            INSERT INTO posts(recency, id, account, created, photos, caption, caption_at, caption_id, tags, tags_at, tags_id)
            VALUES (?7, ?1, ?2, ?3, ?4, ?5, ?3, ?1, ?6, ?3, ?1)
            """).run([.blob(p), .blob(account), .integer(Int64(clamping: v.record.timestamp)), .integer(Int64(photos.count)),
                      .text(caption), .text(tags.joined(separator: " ")), .integer(recency)])
        try setTags(p, tags)
        // The photos are named like a card's: fetched, kept and collected by the same tables.
        let photo = try statement("INSERT OR IGNORE INTO card_photos(author, record_id, slot, ref) VALUES (?, ?, ?, ?)")
        for (slot, ref) in photos.enumerated() {
            try photo.run([.integer(accountRow), .blob(p), .integer(Int64(slot)), .blob(PhotoRef.encodeList([ref]))])
        }
        // The author's edits that arrived before the post.
        try refoldEdits(of: p)
        return .store
    }

    /// Folds every edit of the post held in `post_ops` into its registers.
    mutating func refoldEdits(of p: [UInt8]) throws(StoreError) {
        for row in try statement("SELECT id FROM post_ops WHERE post = ? AND kind = 1").query([.blob(p)]) {
            guard let id = row.blob(0),
                  let bytes = try statement("SELECT bytes FROM records INDEXED BY records_by_id WHERE id = ?").queryOne([.blob(id)])?.blob(0),
                  let edit = try? VerifiedRecord(alreadyVerified: bytes), let body = try? Post(body: edit.record.body),
                  case .edit(_, let caption, let tags) = body.action else { continue }
            try foldEdit(post: p, id: id, at: edit.record.timestamp, caption: caption, tags: tags)
        }
    }

    /// An edit writes the caption and tags registers: the greatest (timestamp, record ID) wins.
    private mutating func foldEdit(post: [UInt8], id: [UInt8], at: UInt64, caption: String?, tags: [String]?) throws(StoreError) {
        let at = SQLValue.integer(Int64(clamping: at))
        if let caption {
            try statement("""
                UPDATE posts SET caption = ?1, caption_at = ?2, caption_id = ?3
                WHERE id = ?4 AND (caption_at < ?2 OR (caption_at = ?2 AND caption_id < ?3))
                """).run([.text(caption), at, .blob(id), .blob(post)])
        }
        if let tags {
            try statement("""
                UPDATE posts SET tags = ?1, tags_at = ?2, tags_id = ?3
                WHERE id = ?4 AND (tags_at < ?2 OR (tags_at = ?2 AND tags_id < ?3))
                """).run([.text(tags.joined(separator: " ")), at, .blob(id), .blob(post)])
            if db.changes > 0 { try setTags(post, tags) }
        }
    }

    mutating func setTags(_ post: [UInt8], _ tags: [String]) throws(StoreError) {
        try statement("DELETE FROM post_tags WHERE post = ?").run([.blob(post)])
        let insert = try statement("INSERT OR IGNORE INTO post_tags(tag, post) VALUES (?, ?)")
        for t in tags { try insert.run([.text(t), .blob(post)]) }
    }

    private func noteOp(_ id: [UInt8], post: [UInt8], account: [UInt8], kind: PostOp, target: [UInt8]?) throws(StoreError) {
        try statement("INSERT OR IGNORE INTO post_ops(id, post, account, kind, target) VALUES (?, ?, ?, ?, ?)")
            .run([.blob(id), .blob(post), .blob(account), .integer(kind.rawValue), target.map { .blob($0) } ?? .null])
        try addRef(post, id)
    }

    private func addRef(_ post: [UInt8], _ id: [UInt8]) throws(StoreError) {
        try statement("INSERT OR IGNORE INTO post_refs(post, id) VALUES (?, ?)").run([.blob(post), .blob(id)])
    }

    /// Drops the operations on a comment matching `condition` (and not by `notBy`, if given).
    private mutating func dropOps(target: [UInt8], where condition: String, notBy: [UInt8]? = nil) throws(StoreError) {
        let sql = "SELECT id, post FROM post_ops WHERE target = ? AND \(condition)" + (notBy == nil ? "" : " AND account != ?")
        let args: [SQLValue] = [.blob(target)] + (notBy.map { [.blob($0)] } ?? [])
        for row in try db.query(sql, args) {
            guard let id = row.blob(0), let post = row.blob(1) else { continue }
            try dropRecord(id)
            try statement("DELETE FROM post_ops WHERE id = ?").run([.blob(id)])
            try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(post), .blob(id)])
        }
    }

    /// A comment deleted by its writer: the comment and the hides naming it leave the replica.
    private mutating func purgeComment(_ cid: [UInt8], writer: [UInt8]) throws(StoreError) {
        guard let post = try statement("SELECT post FROM comments WHERE id = ?").queryOne([.blob(cid)])?.blob(0) else { return }
        try statement("DELETE FROM comments WHERE id = ?").run([.blob(cid)])
        try statement("INSERT OR IGNORE INTO comments_gone(id, account) VALUES (?, ?)").run([.blob(cid), .blob(writer)])
        try dropRecord(cid)
        try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(post), .blob(cid)])
        try dropOps(target: cid, where: "kind = 3")
    }

    /// A post deleted by its author: the post, and every record naming it but the author's
    /// deletions (edits, likes, comments and their deletions and hides), leave the replica —
    /// records, the reconciled set, the digest, the views, the search index, its photos' rows
    /// (the blobs go at the next collection unless a card or another post names them).
    private mutating func purgePost(_ p: [UInt8], owner: [UInt8]) throws(StoreError) {
        let keep = try Set(db.query("SELECT id FROM post_ops WHERE post = ? AND kind = 2 AND account = ?", [.blob(p), .blob(owner)])
            .compactMap { $0.blob(0) })
        for row in try db.query("SELECT id FROM post_refs WHERE post = ?", [.blob(p)]) {
            guard let id = row.blob(0), !keep.contains(id) else { continue }
            try dropRecord(id)
        }
        try dropRecord(p)
        try db.execute("DELETE FROM posts WHERE id = ?", [.blob(p)])
        try db.execute("DELETE FROM post_tags WHERE post = ?", [.blob(p)])
        try db.execute("DELETE FROM card_photos WHERE record_id = ?", [.blob(p)])
        try db.execute("DELETE FROM comments WHERE post = ?", [.blob(p)])
        try db.execute("DELETE FROM post_likes WHERE post = ?", [.blob(p)])
        try db.execute("DELETE FROM post_ops WHERE post = ? AND NOT (kind = 2 AND account = ?)", [.blob(p), .blob(owner)])
        try db.execute("DELETE FROM post_refs WHERE post = ? AND id NOT IN (SELECT id FROM post_ops WHERE post = ?)", [.blob(p), .blob(p)])
        try db.execute("INSERT OR IGNORE INTO posts_gone(id, account) VALUES (?, ?)", [.blob(p), .blob(owner)])
        purgedPosts = true
    }

    /// Removes a stored record by ID (if stored) and remembers it like a superseded one, so a
    /// copy offered again is a `duplicate`.
    mutating func dropRecord(_ id: [UInt8]) throws(StoreError) {
        guard let row = try statement("SELECT author, seq FROM records INDEXED BY records_by_id WHERE id = ?").queryOne([.blob(id)]),
              let authorID = row.int64(0), let seq = row.int64(1) else { return }
        try statement("DELETE FROM records WHERE author = ? AND seq = ? AND id = ?").run([.integer(authorID), .integer(seq), .blob(id)])
        countChanges.records -= 1
        recon.removed(id)
        try statement(AuthorDigest.toggleSQL).run([.integer(AuthorDigest.term(id)), .integer(authorID)])
        try noteSuperseded(authorID: authorID, seq: UInt64(seq), id: id)
        storedInOrder.removeAll { $0.id == id }
        compactedInBatch.insert(id)
        supersededCount += 1
    }

    /// A note hiding a post from the account's own lists (PROTOCOL.md §7.6, field 4): a register
    /// per (account, post), the newest by (timestamp, record ID) deciding.
    mutating func openPostHide(_ v: VerifiedRecord, _ note: NotePayload) throws(StoreError) {
        let r = v.record
        let key: [SQLValue] = [.blob(r.account.bytes), .blob(note.target.bytes)]
        if let row = try statement("SELECT timestamp, record_id FROM hidden_posts WHERE account = ? AND post = ?").queryOne(key),
           let ts = row.int64(0), let id = row.blob(1) {
            let at = Int64(clamping: r.timestamp)
            guard at != ts ? at > ts : id.lexicographicallyPrecedes(v.id) else { return }
        }
        try statement("INSERT OR REPLACE INTO hidden_posts(account, post, record_id, timestamp, hidden) VALUES (?, ?, ?, ?, ?)")
            .run(key + [.blob(v.id), .integer(Int64(clamping: r.timestamp)), .integer(note.flag ? 1 : 0)])
    }
}
