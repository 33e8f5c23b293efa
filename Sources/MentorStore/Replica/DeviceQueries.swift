import MentorCore
import MentorCrypto

/// One device key of an account as this replica knows it (PROTOCOL.md §6.2).
public struct DeviceState: Sendable, Equatable {
    public var device: PublicKey
    public var label: String
    /// When the account certified it (ms, the account's clock).
    public var created: UInt64
    /// When its certificate expires (ms); nil: never.
    public var expires: UInt64?
    /// Its records above this seq are refused; nil: not revoked.
    public var revokedAfter: UInt64?
    /// The newest timestamp of its records this replica holds (ms); nil: none.
    public var lastSeen: UInt64?
    /// Its highest seq this replica holds (0: none).
    public var lastSeq: UInt64

    /// Whether it may still write at `now` (ms): not revoked, not expired.
    public func isCurrent(at now: UInt64) -> Bool {
        revokedAfter == nil && (expires.map { now <= $0 } ?? true)
    }
}

extension Replica {
    /// The devices `account` certified, oldest first.
    public func devices(of account: PublicKey) throws(StoreError) -> [DeviceState] {
        try read { db throws(StoreError) in
            let rows = try db.query("""
                SELECT c.device, c.label, min(c.created), max(c.expires IS NULL), max(c.expires),
                       (SELECT min(r.last_seq) FROM device_revocations r WHERE r.account = c.account AND r.device = c.device),
                       (SELECT max(x.timestamp) FROM records x WHERE x.author = a.id),
                       (SELECT max(x.seq) FROM records x WHERE x.author = a.id)
                FROM device_certs c LEFT JOIN authors a ON a.key = c.device
                WHERE c.account = ? GROUP BY c.device ORDER BY min(c.created), c.device
                """, [.blob(account.bytes)])
            return rows.compactMap { row -> DeviceState? in
                guard let device = row.blob(0).flatMap(PublicKey.init(bytes:)), let label = row.text(1),
                      let created = row.int64(2) else { return nil }
                let never = row.int64(3) == 1
                return DeviceState(device: device, label: label, created: UInt64(max(created, 0)),
                                   expires: never ? nil : row.int64(4).map { UInt64(max($0, 0)) },
                                   revokedAfter: row.int64(5).map { UInt64(max($0, 0)) },
                                   lastSeen: row.int64(6).map { UInt64(max($0, 0)) },
                                   lastSeq: UInt64(max(row.int64(7) ?? 0, 0)))
            }
        }
    }

    /// What an edit of `account`'s card has seen: the pointwise maximum of the clocks of the
    /// card's current entries (winners and conflicts), so a new edit written with it dominates
    /// every one of them (PROTOCOL.md §8.3).
    public func cardClock(of account: PublicKey) throws(StoreError) -> VectorClock {
        try read { db throws(StoreError) in
            var pairs: [(PublicKey, UInt64)] = []
            for row in try db.query("""
                SELECT c.clock FROM card_entries c JOIN authors a ON a.id = c.author WHERE a.key = ?
                """, [.blob(account.bytes)]) {
                guard let bytes = row.blob(0) else { continue }
                var reader = ByteReader(bytes)
                guard let clock = try? VectorClock.decode(from: &reader, maxEntries: Limits.maxClockEntries + 1) else { continue }
                pairs += clock.entries.map { ($0.key, $0.seq) }
            }
            return VectorClock(pairs)
        }
    }

    /// The account a device key was certified by, if any (the first, should several have).
    public func account(ofDevice device: PublicKey) throws(StoreError) -> PublicKey? {
        try read { db throws(StoreError) in
            try db.queryOne("SELECT account FROM device_certs WHERE device = ? ORDER BY created LIMIT 1", [.blob(device.bytes)])?
                .blob(0).flatMap(PublicKey.init(bytes:))
        }
    }
}
