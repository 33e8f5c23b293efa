import CSodium

/// Argon2id password hashing as a key-derivation function (`crypto_pwhash` with
/// `crypto_pwhash_ALG_ARGON2ID13`): turns a passphrase and a salt into a key.
public enum Argon2id {
    public static let saltLength = Int(crypto_pwhash_SALTBYTES)
    public static let minimumKeyLength = Int(crypto_pwhash_BYTES_MIN)

    /// Cost parameters: passes over memory and bytes of memory. Both are stored with what they
    /// protect, so a key can be derived again with the same cost later.
    public struct Parameters: Sendable, Equatable {
        public var opsLimit: UInt64
        public var memLimit: UInt64

        public init(opsLimit: UInt64, memLimit: UInt64) {
            self.opsLimit = opsLimit
            self.memLimit = memLimit
        }

        /// libsodium's interactive level: 2 passes, 64 MiB.
        public static let interactive = Parameters(
            opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE),
            memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE))
        /// libsodium's moderate level: 3 passes, 256 MiB, under a second on a desktop. Use this
        /// for key files.
        public static let moderate = Parameters(
            opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MODERATE),
            memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_MODERATE))
        /// 1 pass, 8 MiB: fast and weak. Only for tests.
        public static let testing = Parameters(
            opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN), memLimit: 8 << 20)
    }

    /// A `length`-byte key from `passphrase` and a `saltLength`-byte random `salt`. The same
    /// inputs always give the same key. Throws `.invalidParameters` for a wrong salt length, a
    /// too-short output or parameters outside libsodium's limits, and `.keyDerivationFailed` when
    /// the memory could not be allocated.
    public static func deriveKey(passphrase: [UInt8], salt: [UInt8], parameters: Parameters,
                                 length: Int = 32) throws(CryptoError) -> [UInt8] {
        guard salt.count == saltLength else {
            throw CryptoError(.invalidParameters, "an Argon2id salt is \(saltLength) bytes, got \(salt.count)")
        }
        guard length >= minimumKeyLength else {
            throw CryptoError(.invalidParameters, "an Argon2id key is at least \(minimumKeyLength) bytes, asked for \(length)")
        }
        let opsRange = UInt64(crypto_pwhash_argon2id_opslimit_min())...UInt64(crypto_pwhash_argon2id_opslimit_max())
        let memRange = UInt64(crypto_pwhash_argon2id_memlimit_min())...UInt64(crypto_pwhash_argon2id_memlimit_max())
        guard opsRange.contains(parameters.opsLimit), memRange.contains(parameters.memLimit) else {
            throw CryptoError(.invalidParameters,
                              "Argon2id parameters out of range: opsLimit \(parameters.opsLimit) (allowed \(opsRange)), memLimit \(parameters.memLimit) (allowed \(memRange))")
        }
        Sodium.ensureInitialized()
        var key = [UInt8](repeating: 0, count: length)
        // crypto_pwhash wants a non-null passphrase pointer even for an empty passphrase.
        let bytes = passphrase.isEmpty ? [0] : passphrase
        let status = bytes.withUnsafeBufferPointer { pass in
            pass.withMemoryRebound(to: CChar.self) { pass in
                crypto_pwhash(&key, UInt64(length), pass.baseAddress!, UInt64(passphrase.count), salt,
                              parameters.opsLimit, Int(parameters.memLimit), crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard status == 0 else {
            zeroize(&key)
            throw CryptoError(.keyDerivationFailed,
                              "Argon2id could not run with memLimit \(parameters.memLimit) bytes (out of memory?); free memory or use smaller parameters")
        }
        return key
    }
}
