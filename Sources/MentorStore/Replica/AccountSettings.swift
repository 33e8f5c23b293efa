import MentorCore

/// The per-account settings of local accounts (`account_settings`, migration 13): node-local,
/// never sent to peers. The store keeps text; which keys exist, their kinds and defaults are
/// MentorNode's registry (`Settings.swift`). A key without a row is at its default.
extension Replica {
    /// The settings `account` changed from their defaults: key → value.
    public func accountSettings(of account: PublicKey) throws(StoreError) -> [String: String] {
        try read { db throws(StoreError) in
            var out: [String: String] = [:]
            for row in try db.query("SELECT key, value FROM account_settings WHERE account = ?", [.blob(account.bytes)]) {
                if let key = row.text(0), let value = row.text(1) { out[key] = value }
            }
            return out
        }
    }

    /// Stores `value` for `key`, or with nil removes the row (the key is back at its default).
    public func setAccountSetting(_ account: PublicKey, key: String, value: String?) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in
            if let value {
                try db.execute("INSERT OR REPLACE INTO account_settings(account, key, value) VALUES (?, ?, ?)",
                               [.blob(account.bytes), .text(key), .text(value)])
            } else {
                try db.execute("DELETE FROM account_settings WHERE account = ? AND key = ?", [.blob(account.bytes), .text(key)])
            }
        }
    }
}
