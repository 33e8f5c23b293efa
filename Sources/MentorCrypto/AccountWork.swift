import CSodium
import MentorCore

/// The proof of work an account's first record carries (PROTOCOL.md §6.1): a nonce such that
///
///     BLAKE2b-256("mm-pow-v1" ‖ network ID (32) ‖ account key (32) ‖ u64 nonce)
///
/// starts with at least `bits` zero bits, where the network ID is BLAKE2b-256 keyed with the
/// network key over "mm-pow-network-v1" (so work done for one network is worth nothing on
/// another, and the ID reveals nothing of a closed network's key). Finding one takes 2^bits
/// hashes on average; checking one takes one hash.
///
/// The work is bound to the account key alone — not to the record — so it is done once per
/// account, and a fork of seq 1 (the same account on two nodes) can carry the same nonce.
public enum AccountWork {
    /// The difficulty of the built-in network and of any network whose operator did not set
    /// `network_work_bits`: 2^23 hashes on average, a median of about 2 CPU-seconds on one
    /// laptop core (OPERATIONS.md, "Cheap identities").
    public static let defaultBits = 23
    /// The most a network may ask for: 2^32 hashes is about half an hour on one core.
    public static let maxBits = 32

    static let domain = Array("mm-pow-v1".utf8)
    static let networkDomain = Array("mm-pow-network-v1".utf8)
    /// `"mm-pow-v1" ‖ network ID ‖ account key ‖ nonce`.
    static let inputLength = 9 + 32 + 32 + 8

    /// What a network asks of an account's first record.
    public struct Requirement: Sendable, Equatable, CustomStringConvertible {
        /// Leading zero bits the work hash must have; 0 asks for no work at all.
        public let bits: Int
        /// The network ID the work is bound to (32 bytes).
        public let network: [UInt8]

        /// `bits` in 0...`maxBits` (checked by the configuration before it gets here; out of
        /// range is clamped, so a caller's mistake can never mean "no work").
        public init(bits: Int, network: NetworkKey) {
            self.bits = min(max(bits, 0), AccountWork.maxBits)
            self.network = AccountWork.networkID(network)
        }

        /// No work asked (difficulty 0): what a replica opened without settings requires.
        public static let none = Requirement(bits: 0, network: .default)

        public var description: String { "\(bits) bits" }
    }

    /// BLAKE2b-256, keyed with the network key, of "mm-pow-network-v1".
    public static func networkID(_ key: NetworkKey) -> [UInt8] {
        BLAKE2b.hash(networkDomain, key: key.bytes, outputLength: 32)
    }

    /// The work hash of `nonce` for `account` on the network `network` (its ID).
    public static func hash(account: PublicKey, nonce: UInt64, network: [UInt8]) -> [UInt8] {
        var input = domain + network + account.bytes
        withUnsafeBytes(of: nonce.bigEndian) { input.append(contentsOf: $0) }
        return BLAKE2b.hash(input)
    }

    /// Leading zero bits of `hash`, most significant bit of the first byte first.
    public static func leadingZeroBits(_ hash: [UInt8]) -> Int {
        var bits = 0
        for byte in hash {
            if byte == 0 { bits += 8; continue }
            return bits + byte.leadingZeroBitCount
        }
        return bits
    }

    /// The work `nonce` proves for `account` on the requirement's network, in bits.
    public static func bits(account: PublicKey, nonce: UInt64, network: [UInt8]) -> Int {
        leadingZeroBits(hash(account: account, nonce: nonce, network: network))
    }

    /// Searches nonces `start`, `start` + 1, … for the first that meets `requirement` (2^bits
    /// hashes on average; nil only if `shouldStop` said so, checked every 65,536 tries, or the
    /// nonces ran out). Runs on the calling thread: the node calls it on its work queue, never
    /// on its serial queue.
    public static func solve(account: PublicKey, requirement: Requirement, startingAt start: UInt64 = 0,
                             shouldStop: () -> Bool = { false }) -> UInt64? {
        guard requirement.bits > 0 else { return start }
        Sodium.ensureInitialized()
        var input = domain + requirement.network + account.bytes + [UInt8](repeating: 0, count: 8)
        var output = [UInt8](repeating: 0, count: 32)
        let bits = requirement.bits
        let nonceOffset = inputLength - 8
        var nonce = start
        return input.withUnsafeMutableBufferPointer { inp -> UInt64? in
            output.withUnsafeMutableBufferPointer { out -> UInt64? in
                // Both buffers have fixed, non-zero lengths, so their addresses exist.
                guard let outAddress = out.baseAddress, let inAddress = inp.baseAddress else { return nil }
                // Allocation-free loop: the nonce is written in place, the hash into one buffer.
                while true {
                    if nonce & 0xFFFF == 0, nonce != start, shouldStop() { return nil }
                    var n = nonce.bigEndian
                    withUnsafeBytes(of: &n) { b in
                        for i in 0..<8 { inp[nonceOffset + i] = b[i] }
                    }
                    _ = crypto_generichash(outAddress, 32, inAddress, UInt64(inputLength), nil, 0)
                    if leadingZeroBits(out) >= bits { return nonce }
                    guard nonce < .max else { return nil }
                    nonce += 1
                }
            }
        }
    }

    static func leadingZeroBits(_ hash: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var bits = 0
        for byte in hash {
            if byte == 0 { bits += 8; continue }
            return bits + byte.leadingZeroBitCount
        }
        return bits
    }

    /// Hashes per second on this thread, measured over `tries` hashes (for the estimate a
    /// newcomer is shown and for the benchmark).
    public static func measureRate(tries: Int = 1 << 16) -> Double {
        // A requirement no nonce in range meets: exactly `tries` hashes.
        let key = PublicKey(bytes: [UInt8](repeating: 0x42, count: 32))!
        let impossible = Requirement(bits: maxBits, network: .default)
        var done = 0
        let started = ContinuousClock.now
        _ = solve(account: key, requirement: impossible) {
            done += 1 << 16
            return done >= tries
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(max(done, 1)) / max(seconds, 1e-9)
    }

    /// Seconds the median search takes at `bits` and `rate` hashes per second: the first success
    /// of tries each succeeding with probability 2^-bits comes after ln 2 · 2^bits tries or
    /// fewer half the time.
    public static func medianSeconds(bits: Int, rate: Double) -> Double {
        guard bits > 0 else { return 0 }
        return 0.693 * Double(UInt64(1) << UInt64(bits)) / max(rate, 1)
    }

    /// Why `record` does not meet `requirement` as an account's first record, or nil if it does
    /// (or is not one). One hash: the check costs the verifier almost nothing.
    ///
    /// At difficulty 0 nothing is asked. Otherwise seq 1 must be a profile card with the work
    /// field (tag 9) whose hash has at least `bits` leading zero bits. Records after seq 1 carry
    /// no work (a work field there is refused by the schema, `invalid-body`); they are applied
    /// only after their author's seq 1, which has passed this check.
    public static func refusal(of record: Record, requirement: Requirement) -> RecordError? {
        // A device's first record proves nothing: the account's own seq 1 did, and only the
        // account key certifies devices (PROTOCOL.md §6.2).
        guard requirement.bits > 0, record.seq == 1, !record.isDeviceSigned else { return nil }
        let hint = "every account's first record needs \(requirement.bits) bits of proof of work on this network (network_work_bits); if the sender is an honest node, its network_work_bits differs from ours — every node of a network must use the same value"
        guard record.type == .profile else {
            return RecordError(.insufficientWork, "seq 1 of \(record.author.shortID)… is a \(record.type) record, not a profile card with proof of work: \(hint)")
        }
        guard let nonce = ProfileCard.workNonce(inBody: record.body) else {
            return RecordError(.insufficientWork, "seq 1 of \(record.author.shortID)… carries no proof of work: \(hint)")
        }
        let have = bits(account: record.author, nonce: nonce, network: requirement.network)
        guard have >= requirement.bits else {
            return RecordError(.insufficientWork, "seq 1 of \(record.author.shortID)… carries \(have) bits of proof of work for this network, \(requirement.bits) needed: \(hint)")
        }
        return nil
    }
}
