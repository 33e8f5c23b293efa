import MentorCore
import MentorCrypto

/// What the node-wide storage budget (issue 13 item 4; the daemon's `StorageBudget`) reads from
/// the replica: how many foreign accounts it holds and the bytes of their records, once at
/// start (the daemon keeps the counts from then on), and whether an author is a partner of a
/// local account. Each is one query whose cost does not grow with the replica's size: the bytes
/// of all records are kept by triggers (migration 10), the local accounts' own are summed by
/// author (a few accounts).
extension Replica {
    /// Accounts held that do not live on this node (an `authors` row: a record or a record held
    /// back of theirs is stored), and the bytes of their records (`records` and `pending`).
    /// Counting the accounts reads the `authors` key index once (~40 bytes an account): at start.
    public func foreignStorage() throws(StoreError) -> (accounts: Int, bytes: Int64) {
        let accounts = try read { db throws(StoreError) in
            // Signing keys, in fact: a foreign account with devices counts once per key. The local
            // accounts' own keys — theirs and their devices' — are not foreign.
            try db.queryOne("""
                SELECT (SELECT count(*) FROM authors)
                       - (SELECT count(*) FROM local_accounts l CROSS JOIN authors a WHERE a.key = l.key)
                       - (SELECT count(*) FROM local_accounts l CROSS JOIN device_certs d CROSS JOIN authors a
                          WHERE d.account = l.key AND a.key = d.device)
                """)?.int64(0) ?? 0
        }
        return (Int(accounts), try foreignBytes())
    }

    /// The bytes of the stored records of accounts that do not live on this node: the triggers'
    /// total less the local accounts' own (summed by author). Cheap enough to read again while
    /// the budget is full (compaction drops superseded card edits, so counted bytes only grow).
    ///
    /// `CROSS JOIN` fixes the loop order — the node's few accounts outside, their records found
    /// by index — which the planner, without statistics, otherwise turns around: a scan of
    /// every record with two look-ups each (ten seconds at a million records, before the
    /// daemon answered its socket). `foreignBytesQueryPlan` lets a test check it.
    public func foreignBytes() throws(StoreError) -> Int64 {
        try read { db throws(StoreError) in
            let row = try db.cachedStatement(Self.foreignBytesSQL).queryOne()
            return max(0, row?.int64(0) ?? 0)
        }
    }

    static let foreignBytesSQL = """
        SELECT coalesce((SELECT bytes FROM storage_totals WHERE id = 1), 0)
               - coalesce((SELECT sum(length(r.bytes)) FROM local_accounts l CROSS JOIN authors a CROSS JOIN records r
                           WHERE a.key = l.key AND r.author = a.id), 0)
               - coalesce((SELECT sum(length(p.bytes)) FROM local_accounts l CROSS JOIN authors a CROSS JOIN pending p
                           WHERE a.key = l.key AND p.author = a.id), 0)
               - coalesce((SELECT sum(length(r.bytes)) FROM local_accounts l CROSS JOIN device_certs d CROSS JOIN authors a
                           CROSS JOIN records r WHERE d.account = l.key AND a.key = d.device AND r.author = a.id), 0)
        """

    /// The plan SQLite chose for `foreignBytes` (EXPLAIN QUERY PLAN's detail column), for tests:
    /// no step may scan `records` or `pending`.
    public func foreignBytesQueryPlan() throws(StoreError) -> [String] {
        try read { db throws(StoreError) in
            try db.query("EXPLAIN QUERY PLAN " + Self.foreignBytesSQL).compactMap { $0.text(3) }
        }
    }

    /// Whether a local account likes or matched `author` (its pair view says so): such an
    /// account is stored past the budget — local users' own choices bound how many there are
    /// (a like *from* a stranger does not make it a partner: strangers could make many).
    public func isPartner(_ author: PublicKey) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT 1 FROM pairs WHERE other = ? AND (i_like = 1 OR matched = 1) LIMIT 1")
                .queryOne([.blob(author.bytes)]) != nil
        }
    }

    /// Whether the replica holds anything of `author` (a record, or one held back).
    public func holdsAccount(_ author: PublicKey) throws(StoreError) -> Bool {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT 1 FROM authors WHERE key = ?").queryOne([.blob(author.bytes)]) != nil
        }
    }
}
