import CSodium

/// An Ed25519 public key: 32 bytes. Ordered lexicographically by its bytes.
public struct SigningPublicKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let length = 32
    /// Length of a detached Ed25519 signature.
    public static let signatureLength = 64

    public let bytes: [UInt8]

    /// Wraps 32 key bytes. Only the length is checked here; whether the bytes are a usable curve
    /// point shows when a signature is verified or the key is converted to X25519.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.length else {
            throw CryptoError(.invalidKeyLength,
                              "an Ed25519 public key is \(Self.length) bytes, got \(bytes.count); check where the key came from")
        }
        self.bytes = bytes
    }

    /// For bytes whose length libsodium already fixed.
    init(validatedBytes bytes: [UInt8]) {
        assert(bytes.count == Self.length)
        self.bytes = bytes
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key
    /// (`crypto_sign_verify_detached`). False for a signature of the wrong length.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == Self.signatureLength else { return false }
        Sodium.ensureInitialized()
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), bytes) == 0
    }

    public static func < (lhs: SigningPublicKey, rhs: SigningPublicKey) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// Lowercase hex of the key bytes.
    public var description: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 0x10 ? "0" + hex : hex
        }.joined()
    }
}

/// An Ed25519 key pair. The secret lives in one buffer that is zeroed when the last copy of the
/// pair is gone.
public struct SigningKeyPair: Sendable {
    public static let seedLength = 32

    public let publicKey: SigningPublicKey
    /// libsodium's 64-byte secret key: seed ‖ public key.
    let secretKey: SecretBytes

    private init(secretKey: SecretBytes, publicKeyBytes: [UInt8]) {
        self.secretKey = secretKey
        self.publicKey = SigningPublicKey(validatedBytes: publicKeyBytes)
    }

    /// A new key pair from the system random source.
    public static func generate() -> SigningKeyPair {
        Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: SigningPublicKey.length)
        let secret = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            _ = crypto_sign_keypair(&publicKey, sk)
        }
        return SigningKeyPair(secretKey: secret, publicKeyBytes: publicKey)
    }

    /// The key pair a 32-byte seed determines (`crypto_sign_seed_keypair`), as in RFC 8032.
    public init(seed: [UInt8]) throws(CryptoError) {
        guard seed.count == Self.seedLength else {
            throw CryptoError(.invalidKeyLength,
                              "an Ed25519 seed is \(Self.seedLength) bytes, got \(seed.count); check where the seed came from")
        }
        Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: SigningPublicKey.length)
        let secret = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            _ = crypto_sign_seed_keypair(&publicKey, sk, seed)
        }
        self.init(secretKey: secret, publicKeyBytes: publicKey)
    }

    /// The 32-byte seed the pair derives from (`crypto_sign_ed25519_sk_to_seed`). This is the
    /// secret: whoever has it can sign as this key.
    public var seed: [UInt8] {
        Sodium.ensureInitialized()
        var seed = [UInt8](repeating: 0, count: Self.seedLength)
        secretKey.withUnsafePointer { sk in _ = crypto_sign_ed25519_sk_to_seed(&seed, sk) }
        return seed
    }

    /// The 64-byte detached Ed25519 signature of `message` (`crypto_sign_detached`).
    public func signature(for message: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var signature = [UInt8](repeating: 0, count: SigningPublicKey.signatureLength)
        secretKey.withUnsafePointer { sk in
            _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), sk)
        }
        return signature
    }
}
