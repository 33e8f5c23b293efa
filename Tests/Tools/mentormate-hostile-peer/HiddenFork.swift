import MentorCore
import MentorCrypto

/// The hidden-fork attack on sync v1 (issue 13): one account signs 70 card edits; a second
/// chain differs from the first at some seqs — always at the last, so the two show different
/// bios — chosen so that v1's per-author digest (the XOR of the first 8 bytes of every record
/// ID, linear over GF(2)) comes out equal. Both chains are deterministic for a seed.
enum HiddenFork {
    static let edits = 70

    /// v1's per-author digest of a chain.
    static func v1Digest(_ chain: [VerifiedRecord]) -> UInt64 { chain.reduce(0) { $0 ^ prefix($1.id) } }

    static func prefix(_ id: [UInt8]) -> UInt64 { id.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }

    /// The two chains (`a`, `b`) and the seqs where they differ.
    /// `work`: the network's proof of work, which both chains' first card carries (the same
    /// nonce: the work binds the account key and the network, not the record).
    static func chains(keys: SigningKeyPair, work: AccountWork.Requirement) throws -> (a: [VerifiedRecord], b: [VerifiedRecord], differ: [Int]) {
        var wa = RecordWriter(keys: keys, accountWork: work), wb = RecordWriter(keys: keys, accountWork: work)
        var a: [VerifiedRecord] = [], alt: [VerifiedRecord] = []
        for seq in 1...edits {
            let at = 1_700_000_000_000 + UInt64(seq)
            a.append(try wa.profile(ProfileCard(name: "Hidden Hal", role: .tutor, bio: "bio A \(seq)", courses: ["FORK 101"]), at: at))
            alt.append(try wb.profile(ProfileCard(name: "Hidden Hal", role: .tutor, bio: "bio B \(seq)", courses: ["FORK 101"]), at: at))
        }
        // v_s = prefix(a_s) ⊕ prefix(alt_s): chain b takes alt at the seqs of a subset whose
        // v's XOR to 0, which leaves the digest unchanged. Take seq 70 and solve for the rest.
        let v = (0..<edits).map { prefix(a[$0].id) ^ prefix(alt[$0].id) }
        guard let subset = solve(target: v[edits - 1], from: Array(v[0..<(edits - 1)])) else {
            throw RecordError(.malformed, "no subset of the first 69 differences spans the 70th (a 2^-5 chance): try another seed")
        }
        let differ = subset + [edits - 1]
        let b = (0..<edits).map { differ.contains($0) ? alt[$0] : a[$0] }
        return (a, b, differ.map { $0 + 1 })
    }

    /// Indices of vectors among `from` whose XOR is `target` (Gaussian elimination over GF(2),
    /// each basis vector remembering which inputs it combines), or nil.
    static func solve(target: UInt64, from vectors: [UInt64]) -> [Int]? {
        // basis[bit]: a vector whose highest set bit is `bit`, and the inputs it is made of.
        var basis: [Int: (vector: UInt64, made: Set<Int>)] = [:]
        for (i, v) in vectors.enumerated() {
            var x = v, made: Set<Int> = [i]
            while x != 0 {
                let bit = 63 - x.leadingZeroBitCount
                guard let b = basis[bit] else { basis[bit] = (x, made); break }
                x ^= b.vector
                made.formSymmetricDifference(b.made)
            }
        }
        var x = target, made: Set<Int> = []
        while x != 0 {
            let bit = 63 - x.leadingZeroBitCount
            guard let b = basis[bit] else { return nil }
            x ^= b.vector
            made.formSymmetricDifference(b.made)
        }
        return made.sorted()
    }
}
