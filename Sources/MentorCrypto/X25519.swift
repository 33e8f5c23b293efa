import CSodium

/// X25519 Diffie-Hellman, with conversion from Ed25519 identity keys so one identity key can
/// both sign and agree on secrets.
public enum X25519 {
    public static let keyLength = 32

    /// The X25519 public key for an Ed25519 public key (`crypto_sign_ed25519_pk_to_curve25519`).
    /// Throws `.invalidPublicKey` for a small-order or otherwise invalid point.
    public static func publicKey(fromEd25519 key: SigningPublicKey) throws(CryptoError) -> [UInt8] {
        Sodium.ensureInitialized()
        var curveKey = [UInt8](repeating: 0, count: keyLength)
        guard crypto_sign_ed25519_pk_to_curve25519(&curveKey, key.bytes) == 0 else {
            throw CryptoError(.invalidPublicKey,
                              "Ed25519 public key \(key) is not a valid curve point of prime order; refuse this peer key")
        }
        return curveKey
    }

    /// The X25519 secret key for an Ed25519 key pair (`crypto_sign_ed25519_sk_to_curve25519`).
    /// The result is secret: zero it when done.
    public static func secretKey(fromEd25519 pair: SigningKeyPair) -> [UInt8] {
        Sodium.ensureInitialized()
        var curveKey = [UInt8](repeating: 0, count: keyLength)
        pair.secretKey.withUnsafePointer { sk in _ = crypto_sign_ed25519_sk_to_curve25519(&curveKey, sk) }
        return curveKey
    }

    /// The shared secret of our `secretKey` and a peer's `publicKey` (`crypto_scalarmult`).
    /// Throws `.invalidKeyLength` unless both are 32 bytes, and `.invalidPublicKey` when the
    /// result is all zeros (the peer sent a low-order point). Hash the result before using it as
    /// a key.
    public static func sharedSecret(secretKey: [UInt8], publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard secretKey.count == keyLength, publicKey.count == keyLength else {
            throw CryptoError(.invalidKeyLength,
                              "X25519 keys are \(keyLength) bytes, got a \(secretKey.count)-byte secret key and a \(publicKey.count)-byte public key")
        }
        Sodium.ensureInitialized()
        var shared = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
        guard crypto_scalarmult(&shared, secretKey, publicKey) == 0 else {
            zeroize(&shared)
            throw CryptoError(.invalidPublicKey,
                              "the peer's X25519 public key is a low-order point (shared secret would be all zeros); refuse this peer key")
        }
        return shared
    }

    /// A fresh random X25519 key pair (`crypto_box_keypair`), e.g. for an ephemeral handshake key.
    public static func generateKeyPair() -> (publicKey: [UInt8], secretKey: [UInt8]) {
        Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_box_SECRETKEYBYTES))
        _ = crypto_box_keypair(&publicKey, &secretKey)
        return (publicKey, secretKey)
    }
}
