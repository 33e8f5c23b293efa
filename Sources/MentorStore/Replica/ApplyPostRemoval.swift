import MentorCore
import MentorCrypto

/// A post, comment or like of a post leaving the replica other than by a deletion (PROTOCOL.md
/// §6.6): a revoked device's record past its last seq (`purge`, §6.2), or a variant that lost
/// its place to a lower ID under the fork cap (`unstore`, §9.2). The rows it wrote go with it;
/// what other records wrote about the post stays, so the replica holds what it would had the
/// record never arrived — a post's comments and likes wait for it as when they come first.
extension ApplyBatch {
    mutating func forgetPostRecord(_ v: VerifiedRecord) throws(StoreError) {
        let id = v.id, account = v.record.account.bytes
        switch v.record.type {
        case .post:
            guard let post = try? Post(body: v.record.body) else { return }
            switch post.action {
            case .create:
                // Only the post's own rows: its search entry goes with its row (trigger), its
                // photos' rows with `card_photos` (the blobs at the next collection).
                try statement("DELETE FROM posts WHERE id = ?").run([.blob(id)])
                try statement("DELETE FROM post_tags WHERE post = ?").run([.blob(id)])
                try statement("DELETE FROM card_photos WHERE record_id = ?").run([.blob(id)])
            case .edit(let p, _, _):
                try forgetPostOp(id, post: p)
                try refoldRegisters(of: p)
            case .delete(let p):
                // A post it purged is gone for good (its records are superseded everywhere that
                // saw it); one not arrived yet is no longer deleted when it comes.
                try forgetPostOp(id, post: p)
            }
        case .comment:
            guard let c = try? PostComment(body: v.record.body) else { return }
            switch c.action {
            case .create:
                try statement("DELETE FROM comments WHERE id = ? AND account = ?").run([.blob(id), .blob(account)])
                try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(c.post), .blob(id)])
            case .delete, .hide:
                try forgetPostOp(id, post: c.post)
            }
        case .postLike:
            guard let like = try? PostLike(body: v.record.body) else { return }
            // Only the register's winner is stored (an older like is dropped when a newer one
            // comes), so the account's like of the post is simply no more.
            try statement("DELETE FROM post_likes WHERE post = ? AND account = ? AND record_id = ?")
                .run([.blob(like.post), .blob(account), .blob(id)])
            try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(like.post), .blob(id)])
        default:
            return
        }
    }

    private func forgetPostOp(_ id: [UInt8], post: [UInt8]) throws(StoreError) {
        try statement("DELETE FROM post_ops WHERE id = ?").run([.blob(id)])
        try statement("DELETE FROM post_refs WHERE post = ? AND id = ?").run([.blob(post), .blob(id)])
    }

    /// The caption and tags registers of a live post computed again from its creating record
    /// and the edits still held: the greatest (timestamp, record ID) of each wins.
    private mutating func refoldRegisters(of post: [UInt8]) throws(StoreError) {
        guard let row = try statement("SELECT created FROM posts WHERE id = ?").queryOne([.blob(post)]), let created = row.int64(0),
              let bytes = try statement("SELECT bytes FROM records INDEXED BY records_by_id WHERE id = ?").queryOne([.blob(post)])?.blob(0),
              let v = try? VerifiedRecord(alreadyVerified: bytes), let body = try? Post(body: v.record.body),
              case .create(_, let caption, let tags) = body.action else { return }
        try statement("""
            UPDATE posts SET caption = ?1, caption_at = ?2, caption_id = ?3, tags = ?4, tags_at = ?2, tags_id = ?3 WHERE id = ?3
            """).run([.text(caption), .integer(created), .blob(post), .text(tags.joined(separator: " "))])
        try setTags(post, tags)
        try refoldEdits(of: post)
    }
}
