import MentorCore

/// The hashes of the reconciliation tree (`ReconTree` in MentorCore) and of what goes on the
/// wire (PROTOCOL.md §13.3).
public enum ReconHash {
    /// A leaf's hash over its IDs (ascending, 32 bytes each).
    public static func leaf(_ ids: [[UInt8]]) -> [UInt8] {
        var h = BLAKE2b.Hasher()
        h.update(Array("mm-recon-leaf-v2".utf8))
        h.update(u32(ids.count))
        for id in ids { h.update(id) }
        return h.finalize()
    }

    /// An internal node's hash over its non-empty children (by nibble ascending).
    public static func node(count: UInt32, children: [(nibble: UInt8, hash: [UInt8])]) -> [UInt8] {
        var h = BLAKE2b.Hasher()
        h.update(Array("mm-recon-node-v2".utf8))
        h.update(u32(Int(count)))
        for c in children { h.update([c.nibble]); h.update(c.hash) }
        return h.finalize()
    }

    /// The session's salt from the two 16-byte salts of the hellos (order-independent).
    public static func sessionSalt(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        let (lo, hi) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a)
        return BLAKE2b.hash(Array("mm-recon-salt-v2".utf8) + lo + hi)
    }

    /// The 8-byte fingerprint of a node's hash under the session's salt.
    public static func fingerprint(_ nodeHash: [UInt8], salt: [UInt8]) -> UInt64 {
        be64(BLAKE2b.hash(nodeHash, key: salt, outputLength: 16))
    }

    /// The 8-byte short ID of a record ID under the session's salt.
    public static func shortID(_ id: [UInt8], salt: [UInt8]) -> UInt64 {
        be64(BLAKE2b.hash(id, key: salt, outputLength: 16))
    }

    private static func u32(_ v: Int) -> [UInt8] {
        let x = UInt32(truncatingIfNeeded: v)
        return [UInt8(x >> 24), UInt8(x >> 16 & 0xff), UInt8(x >> 8 & 0xff), UInt8(x & 0xff)]
    }

    private static func be64(_ b: [UInt8]) -> UInt64 {
        var v: UInt64 = 0
        for x in b.prefix(8) { v = v << 8 | UInt64(x) }
        return v
    }
}
