import MentorCore

/// A local account's blocks: what its block notes say (PROTOCOL.md §7.6). Migration 14.
extension Replica {
    /// The accounts `account` blocks now.
    public func blockedAccounts(of account: PublicKey) throws(StoreError) -> Set<PublicKey> {
        Set(try blocks(of: account).map(\.target))
    }

    /// The accounts `account` blocks, with when (the block note's timestamp, ms), oldest first.
    public func blocks(of account: PublicKey) throws(StoreError) -> [(target: PublicKey, at: UInt64)] {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT target, at FROM blocks WHERE account = ? ORDER BY at, target")
                .query([.blob(account.bytes)]).compactMap { row in
                    guard let target = row.blob(0).flatMap(PublicKey.init(bytes:)), let at = row.int64(1) else { return nil }
                    return (target, UInt64(max(at, 0)))
                }
        }
    }
}
