import MentorCore

/// What a replica holds of one author, as sync compares it: the contiguous seq, and a digest of
/// the IDs of every stored record of the author (fork variants included).
public struct AuthorSummary: Sendable, Equatable {
    public var seq: UInt64
    public var digest: UInt64
    public init(seq: UInt64, digest: UInt64) { self.seq = seq; self.digest = digest }
}

/// The per-author digest: the XOR of a term per stored record — the first 8 bytes of its ID
/// (BLAKE2b-256 of the encoding), big-endian, as a signed 64-bit integer (SQLite's integer).
/// XOR makes it independent of the order records arrived in and lets a removed variant be
/// taken out again; IDs are hashes, so two different sets of records at the same seqs differ
/// in it with overwhelming probability.
///
/// Sync v1 only (its hello and `summary`), to be removed with v1 (issue 13): sync v2 compares
/// the reconciliation tree (`ReconIndex`) instead. Once nothing reads `AuthorSummary.digest`,
/// drop this, its toggles in `ApplyBatch.store`/`unstore`, `Replica.computeMissingDigests` and
/// the column's use (the column itself stays: migrations are never edited).
enum AuthorDigest {
    static func term(_ id: [UInt8]) -> Int64 {
        var v: UInt64 = 0
        for b in id.prefix(8) { v = v << 8 | UInt64(b) }
        return Int64(bitPattern: v)
    }

    /// digest := digest XOR ?1 for author ?2 (SQLite has no XOR operator: (a | b) & ~(a & b)).
    static let toggleSQL: StaticString = "UPDATE authors SET digest = (coalesce(digest, 0) | ?1) & ~(coalesce(digest, 0) & ?1) WHERE id = ?2"
}
