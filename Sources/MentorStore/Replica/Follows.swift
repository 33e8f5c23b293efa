import MentorCore

/// Who follows whom (record type 12, PROTOCOL.md §6.5; migration 18): for each (account,
/// target) the newest follow entry — by timestamp, then record ID — says whether it follows.
extension Replica {
    /// The newest entry per (account, target), kept when it says "following".
    static let currentFollows = """
        SELECT f.account, f.target, f.timestamp FROM follow_entries f
        WHERE f.following = 1 AND NOT EXISTS (
            SELECT 1 FROM follow_entries g WHERE g.account = f.account AND g.target = f.target
              AND (g.timestamp > f.timestamp OR (g.timestamp = f.timestamp AND g.record_id > f.record_id)))
        """

    /// The accounts `account` follows, with since when (ms), newest first.
    public func following(of account: PublicKey) throws(StoreError) -> [(account: PublicKey, since: UInt64)] {
        try follows("SELECT target, timestamp FROM (\(Self.currentFollows)) WHERE account = ? ORDER BY timestamp DESC, target", account)
    }

    /// The accounts that follow `account`, with since when (ms), newest first.
    public func followers(of account: PublicKey) throws(StoreError) -> [(account: PublicKey, since: UInt64)] {
        try follows("SELECT account, timestamp FROM (\(Self.currentFollows)) WHERE target = ? ORDER BY timestamp DESC, account", account)
    }

    /// Whether `account` follows `target` now.
    public func follows(_ account: PublicKey, _ target: PublicKey) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT following FROM follow_entries WHERE account = ? AND target = ?
                ORDER BY timestamp DESC, record_id DESC LIMIT 1
                """).queryOne([.blob(account.bytes), .blob(target.bytes)])?.int64(0) == 1
        }
    }

    private func follows(_ sql: String, _ key: PublicKey) throws(StoreError) -> [(account: PublicKey, since: UInt64)] {
        try read { db throws(StoreError) in
            try db.cachedStatement(sql).query([.blob(key.bytes)]).compactMap { row in
                guard let other = row.blob(0).flatMap(PublicKey.init(bytes:)), let at = row.int64(1) else { return nil }
                return (other, UInt64(max(at, 0)))
            }
        }
    }
}
