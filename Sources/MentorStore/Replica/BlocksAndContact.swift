import MentorCore

/// A local account's blocks (what its block notes say, PROTOCOL.md §7.6) and its own contact
/// text (node-local; its node seals it to each current match, §7.7). Migration 14.
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

    /// The contact text `account` gave (`profile set --contact`); nil: never given.
    public func contactText(of account: PublicKey) throws(StoreError) -> String? {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT text FROM account_contact WHERE account = ?").queryOne([.blob(account.bytes)])?.text(0)
        }
    }

    /// Keeps `account`'s contact text (empty: cleared; nil: forgotten, as after `logout --forget`).
    public func setContactText(_ text: String?, of account: PublicKey) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            if let text {
                try db.execute("INSERT OR REPLACE INTO account_contact(account, text) VALUES (?, ?)", [.blob(account.bytes), .text(text)])
            } else {
                try db.execute("DELETE FROM account_contact WHERE account = ?", [.blob(account.bytes)])
            }
        }
    }
}
