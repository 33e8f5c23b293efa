import MentorCore

/// Campus memberships (migration 24, PROTOCOL.md §6.8): the certificates cards carry. Which
/// CA counts is the node's configuration (`campus_ca_key`); the replica keeps them all, one per
/// (account, CA), at most `maxCAsPerAccount` per account.
extension Replica {
    public struct Membership: Equatable, Sendable {
        public var account: PublicKey
        public var domain: String
        public var issued: UInt64
        public var expires: UInt64
    }

    public static let maxCAsPerAccount = 4

    /// The certificates of `ca` this replica has seen, one per account (the latest-expiring).
    public func memberships(ca: PublicKey) throws(StoreError) -> [Membership] {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT account, domain, issued, expires FROM memberships WHERE ca = ?")
                .query([.blob(ca.bytes)]).compactMap { row in
                    guard let account = row.blob(0).flatMap(PublicKey.init(bytes:)), let domain = row.text(1),
                          let issued = row.int64(2), let expires = row.int64(3) else { return nil }
                    return Membership(account: account, domain: domain, issued: UInt64(max(issued, 0)), expires: UInt64(max(expires, 0)))
                }
        }
    }

    /// Remembers a certificate (already verified) outside an apply: this node's own account
    /// publishing one (`membership.set`).
    public func noteMembership(_ certificate: MembershipCertificate) throws(StoreError) {
        try write(countsUnchanged: true) { db throws(StoreError) in try Self.noteMembership(certificate, in: db) }
    }

    /// Keeps the latest-expiring certificate per (account, CA), and the account's
    /// `maxCAsPerAccount` latest-expiring CAs.
    static func noteMembership(_ c: MembershipCertificate, in db: Database) throws(StoreError) {
        try db.cachedStatement("""
            INSERT INTO memberships(account, ca, domain, issued, expires) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(account, ca) DO UPDATE SET domain = excluded.domain, issued = excluded.issued, expires = excluded.expires
            WHERE excluded.expires > memberships.expires
            """).run([.blob(c.account.bytes), .blob(c.ca.bytes), .text(c.domain),
                      .integer(Int64(clamping: c.issued)), .integer(Int64(clamping: c.expires))])
        try db.cachedStatement("""
            DELETE FROM memberships WHERE account = ?1 AND ca NOT IN
                (SELECT ca FROM memberships WHERE account = ?1 ORDER BY expires DESC, ca LIMIT ?2)
            """).run([.blob(c.account.bytes), .integer(Int64(maxCAsPerAccount))])
    }

    /// Every account whose card this replica holds (for the campus's "who is not a member").
    public func cardAccounts() throws(StoreError) -> [PublicKey] {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT a.key FROM authors a WHERE EXISTS (SELECT 1 FROM card_entries c WHERE c.author = a.id)")
                .query([]).compactMap { $0.blob(0).flatMap(PublicKey.init(bytes:)) }
        }
    }
}
