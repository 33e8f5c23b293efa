import CSodium

/// XChaCha20-Poly1305 authenticated encryption (`crypto_aead_xchacha20poly1305_ietf`).
///
/// A sealed box is `nonce (24) ‖ ciphertext (same length as the plaintext) ‖ tag (16)`. The
/// nonce is 192 bits, so random nonces are safe for any practical number of messages per key.
public enum XChaCha20Poly1305 {
    public static let keyLength = 32
    public static let nonceLength = 24
    public static let tagLength = 16
    /// The bytes a box adds to its plaintext.
    public static let overhead = nonceLength + tagLength

    /// Encrypts and authenticates `plaintext`, and authenticates `associatedData` (which is not
    /// stored in the box: `open` must be given the same bytes). The nonce is random unless given;
    /// give one only for test vectors or when the protocol guarantees it is never reused with
    /// this key.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = [],
                            nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        try checkKey(key)
        let nonce = nonce ?? SecureRandom.bytes(nonceLength)
        guard nonce.count == nonceLength else {
            throw CryptoError(.invalidNonceLength,
                              "an XChaCha20-Poly1305 nonce is \(nonceLength) bytes, got \(nonce.count); omit it to get a random one")
        }
        Sodium.ensureInitialized()
        var sealed = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var sealedLength: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &sealed, &sealedLength, plaintext, UInt64(plaintext.count),
            associatedData, UInt64(associatedData.count), nil, nonce, key)
        return nonce + sealed
    }

    /// Checks and decrypts a box made by `seal`. Throws `.decryptionFailed` if the box is too
    /// short or was altered, or if the key or associated data differ from sealing.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try checkKey(key)
        guard box.count >= overhead else {
            throw CryptoError(.decryptionFailed,
                              "sealed box is \(box.count) bytes, shorter than the \(overhead)-byte minimum; it was truncated")
        }
        Sodium.ensureInitialized()
        let nonce = Array(box[..<nonceLength])
        let sealed = Array(box[nonceLength...])
        var plaintext = [UInt8](repeating: 0, count: sealed.count - tagLength)
        var plaintextLength: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            &plaintext, &plaintextLength, nil, sealed, UInt64(sealed.count),
            associatedData, UInt64(associatedData.count), nonce, key)
        guard status == 0 else {
            throw CryptoError(.decryptionFailed,
                              "sealed box failed authentication: it was altered, or the key or associated data are not the ones it was sealed with")
        }
        return plaintext
    }

    private static func checkKey(_ key: [UInt8]) throws(CryptoError) {
        guard key.count == keyLength else {
            throw CryptoError(.invalidKeyLength,
                              "an XChaCha20-Poly1305 key is \(keyLength) bytes, got \(key.count)")
        }
    }
}
