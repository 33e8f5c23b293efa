import CSodium

/// BLAKE2b hashing (`crypto_generichash`), one-shot or incremental, optionally keyed.
///
/// Output lengths must be 16...64 bytes and keys 16...64 bytes. These are fixed by the calling
/// code, never by input data, so a wrong one is a programming error and traps like an
/// out-of-range array index.
public enum BLAKE2b {
    public static let outputLengthRange = Int(crypto_generichash_BYTES_MIN)...Int(crypto_generichash_BYTES_MAX)
    public static let keyLengthRange = Int(crypto_generichash_KEYBYTES_MIN)...Int(crypto_generichash_KEYBYTES_MAX)

    /// The BLAKE2b hash of `data`, keyed if `key` is given.
    public static func hash(_ data: [UInt8], key: [UInt8]? = nil, outputLength: Int = 32) -> [UInt8] {
        checkLengths(key: key, outputLength: outputLength)
        Sodium.ensureInitialized()
        var output = [UInt8](repeating: 0, count: outputLength)
        let key = key ?? []
        _ = crypto_generichash(&output, outputLength, data, UInt64(data.count), key.isEmpty ? nil : key, key.count)
        return output
    }

    fileprivate static func checkLengths(key: [UInt8]?, outputLength: Int) {
        precondition(outputLengthRange.contains(outputLength),
                     "BLAKE2b output length must be in \(outputLengthRange), got \(outputLength)")
        if let key {
            precondition(keyLengthRange.contains(key.count),
                         "BLAKE2b key length must be in \(keyLengthRange), got \(key.count)")
        }
    }

    /// An incremental BLAKE2b hash, for digests over data that arrives in pieces. Feeding the
    /// pieces to `update` gives the same digest as hashing their concatenation in one go.
    ///
    /// Noncopyable, so a half-done hash state is never shared by accident; `finalize()` consumes
    /// it. The state is zeroed and freed when the hasher goes away.
    public struct Hasher: ~Copyable {
        private let outputLength: Int
        /// libsodium's state struct (opaque to Swift) wants 64-byte alignment, so it lives in its
        /// own allocation.
        private let state: OpaquePointer

        public init(key: [UInt8]? = nil, outputLength: Int = 32) {
            BLAKE2b.checkLengths(key: key, outputLength: outputLength)
            Sodium.ensureInitialized()
            self.outputLength = outputLength
            state = OpaquePointer(UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64))
            let key = key ?? []
            _ = crypto_generichash_init(state, key.isEmpty ? nil : key, key.count, outputLength)
        }

        public mutating func update(_ data: [UInt8]) {
            _ = crypto_generichash_update(state, data, UInt64(data.count))
        }

        /// The digest of everything passed to `update`.
        public consuming func finalize() -> [UInt8] {
            var output = [UInt8](repeating: 0, count: outputLength)
            _ = crypto_generichash_final(state, &output, outputLength)
            return output
        }

        deinit {
            let raw = UnsafeMutableRawPointer(state)
            sodium_memzero(raw, crypto_generichash_statebytes())
            raw.deallocate()
        }
    }
}

/// `@unchecked Sendable`: the hasher is noncopyable, so its state pointer has exactly one owner
/// and moves with it; it is never reachable from two places at once.
extension BLAKE2b.Hasher: @unchecked Sendable {}
