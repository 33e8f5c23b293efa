import MentorCore

/// An account's encryption keys (PROTOCOL.md §7.5): X25519 key pairs numbered by epoch, which
/// every current device of the account holds. Likes, messages and unmatches are sealed to the
/// recipient account's newest epoch key; revoking a device starts a new epoch that the revoked
/// device never receives, so it cannot read what is sealed after it (it still holds what it
/// had). Epoch 0 is not in a keyring: it is the X25519 form of the account's Ed25519 key, used
/// by accounts that never certified a device.
public struct AccountKeyring: Sendable, Equatable {
    /// At most this many epochs (one per revocation, and the first).
    public static let maxEpochs = EncryptionKey.maxEpochs
    /// X25519 secret keys by epoch (1, 2, …).
    public private(set) var secrets: [UInt32: [UInt8]] = [:]

    public init() {}

    /// The account's encryption keys of epochs `epochs`, derived from its key (PROTOCOL.md
    /// §7.5): `BLAKE2b-256 keyed with the account's 32-byte seed over "mentormate epoch v1" ‖
    /// u32(epoch)`, used as an X25519 secret. The account key can make any epoch's key again
    /// (an export file holds the seed alone); a device receives them in boxes.
    public static func derived(from account: SigningKeyPair, epochs: ClosedRange<UInt32>) -> AccountKeyring {
        var k = AccountKeyring()
        var seed = account.seed
        defer { zeroize(&seed) }
        for e in epochs where e >= 1 {
            var w = ByteWriter(capacity: 4); w.u32(e)
            k.secrets[e] = BLAKE2b.hash(Array("mentormate epoch v1".utf8) + w.bytes, key: seed, outputLength: 32)
        }
        return k
    }

    /// This keyring in a box for `device` of `account` (a certificate's field 6).
    public func box(for device: PublicKey, of account: PublicKey) throws(CryptoError) -> [UInt8] {
        try box(for: device, of: account, ephemeralSecret: nil, nonce: nil)
    }

    /// With a fixed ephemeral secret and nonce: the protocol's test vectors only.
    func box(for device: PublicKey, of account: PublicKey, ephemeralSecret: [UInt8]?, nonce: [UInt8]?) throws(CryptoError) -> [UInt8] {
        try DeviceBox.seal(encoded, to: device, associatedData: Self.keyringContext + account.bytes + device.bytes,
                           ephemeralSecret: ephemeralSecret, nonce: nonce)
    }

    /// Opens a certificate's keyring box with the device key it was made for.
    public static func open(_ box: [UInt8], device: SigningKeyPair, of account: PublicKey) -> AccountKeyring? {
        guard let plain = DeviceBox.open(box, device: device, associatedData: keyringContext + account.bytes + device.publicKey.bytes) else { return nil }
        return try? AccountKeyring(encoded: plain)
    }

    /// One epoch's secret in a box for `device` (a revocation's grant).
    public func grant(epoch: UInt32, for device: PublicKey, of account: PublicKey) throws(CryptoError) -> [UInt8] {
        try grant(epoch: epoch, for: device, of: account, ephemeralSecret: nil, nonce: nil)
    }

    func grant(epoch: UInt32, for device: PublicKey, of account: PublicKey, ephemeralSecret: [UInt8]?, nonce: [UInt8]?) throws(CryptoError) -> [UInt8] {
        guard let secret = secrets[epoch] else { throw CryptoError(.invalidKeyLength, "no encryption key of epoch \(epoch) to grant") }
        var w = ByteWriter(capacity: 36); w.u32(epoch); w.raw(secret)
        var e = ByteWriter(capacity: 4); e.u32(epoch)
        return try DeviceBox.seal(w.bytes, to: device, associatedData: Self.grantContext + account.bytes + device.bytes + e.bytes,
                                  ephemeralSecret: ephemeralSecret, nonce: nonce)
    }

    /// Opens a grant meant for `device`, for the epoch the revocation names.
    public static func openGrant(_ box: [UInt8], epoch: UInt32, device: SigningKeyPair, of account: PublicKey) -> AccountKeyring? {
        var e = ByteWriter(capacity: 4); e.u32(epoch)
        guard let plain = DeviceBox.open(box, device: device, associatedData: grantContext + account.bytes + device.publicKey.bytes + e.bytes),
              plain.count == 36 else { return nil }
        var k = AccountKeyring()
        guard Array(plain.prefix(4)) == e.bytes, (try? k.add(epoch: epoch, secret: Array(plain.suffix(32)))) != nil else { return nil }
        return k
    }

    static let keyringContext = Array("mentormate keyring v1".utf8)
    static let grantContext = Array("mentormate grant v1".utf8)

    /// A keyring holding one fresh key at `epoch`.
    public static func fresh(epoch: UInt32 = 1) -> AccountKeyring {
        var k = AccountKeyring()
        k.secrets[epoch] = X25519.generateKeyPair().secretKey
        return k
    }

    public var isEmpty: Bool { secrets.isEmpty }

    /// The newest epoch, its secret and its public key.
    public var current: (epoch: UInt32, secret: [UInt8], publicKey: [UInt8])? {
        guard let e = secrets.keys.max(), let s = secrets[e], let p = try? X25519.publicKey(fromSecret: s) else { return nil }
        return (e, s, p)
    }

    /// Adds (or replaces) an epoch's secret.
    public mutating func add(epoch: UInt32, secret: [UInt8]) throws(CryptoError) {
        guard epoch > 0, secret.count == X25519.keyLength else {
            throw CryptoError(.invalidKeyLength, "an account key of epoch \(epoch) must be a 32-byte X25519 secret of an epoch ≥ 1")
        }
        guard secrets[epoch] != nil || secrets.count < Self.maxEpochs else {
            throw CryptoError(.invalidKeyLength, "an account holds at most \(Self.maxEpochs) encryption key epochs")
        }
        secrets[epoch] = secret
    }

    public mutating func merge(_ other: AccountKeyring) {
        for (e, s) in other.secrets where secrets.count < Self.maxEpochs || secrets[e] != nil { secrets[e] = s }
    }

    /// The epoch and secret whose public key is `publicKey`.
    public func secret(forPublicKey publicKey: [UInt8]) -> (epoch: UInt32, secret: [UInt8])? {
        for (e, s) in secrets.sorted(by: { $0.key > $1.key }) where (try? X25519.publicKey(fromSecret: s)) == publicKey {
            return (e, s)
        }
        return nil
    }

    /// `count u8 ‖ count × (epoch u32 ‖ secret 32)`, epochs ascending.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 1 + secrets.count * 36)
        w.u8(UInt8(secrets.count))
        for (e, s) in secrets.sorted(by: { $0.key < $1.key }) { w.u32(e); w.raw(s) }
        return w.bytes
    }

    public init(encoded bytes: [UInt8]) throws(CryptoError) {
        var r = ByteReader(bytes)
        do {
            let count = Int(try r.u8("keyring count"))
            guard count <= Self.maxEpochs, bytes.count == 1 + count * 36 else {
                throw CryptoError(.invalidKeyLength, "an account keyring of \(count) epochs must be \(1 + count * 36) bytes, is \(bytes.count)")
            }
            var last: UInt32 = 0
            for _ in 0..<count {
                let e = try r.u32("epoch")
                guard e > last else { throw CryptoError(.invalidKeyLength, "account keyring epochs must ascend from 1") }
                last = e
                secrets[e] = try r.raw(32, "epoch secret")
            }
        } catch let e as CryptoError {
            throw e
        } catch {
            throw CryptoError(.invalidKeyLength, "account keyring is cut short")
        }
    }
}

/// A box only the holder of a device key can open (PROTOCOL.md §7.5): how an account hands its
/// encryption keys to a device, inside the device's certificate or a revocation.
///
///     e, E   = a fresh X25519 key pair
///     D      = X25519 public of the device's Ed25519 key
///     key    = BLAKE2b-256_{X25519(e, D)}("mentormate device box v1" ‖ E ‖ device key)
///     box    = E (32) ‖ XChaCha20-Poly1305(key, random nonce, associated data, plaintext)
public enum DeviceBox {
    public static let overhead = 32 + 24 + 16
    static let context = Array("mentormate device box v1".utf8)

    public static func seal(_ plaintext: [UInt8], to device: PublicKey, associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        try seal(plaintext, to: device, associatedData: associatedData, ephemeralSecret: nil, nonce: nil)
    }

    /// With a fixed ephemeral secret and nonce: the protocol's test vectors only.
    static func seal(_ plaintext: [UInt8], to device: PublicKey, associatedData: [UInt8],
                     ephemeralSecret fixed: [UInt8]?, nonce: [UInt8]?) throws(CryptoError) -> [UInt8] {
        let d = try X25519.publicKey(fromEd25519: SigningPublicKey(bytes: device.bytes))
        var ephemeralSecret = fixed ?? X25519.generateKeyPair().secretKey
        defer { zeroize(&ephemeralSecret) }
        let ephemeralPublic = try X25519.publicKey(fromSecret: ephemeralSecret)
        var shared = try X25519.sharedSecret(secretKey: ephemeralSecret, publicKey: d)
        defer { zeroize(&shared) }
        let key = BLAKE2b.hash(context + ephemeralPublic + device.bytes, key: shared, outputLength: 32)
        return ephemeralPublic + (try XChaCha20Poly1305.seal(plaintext, key: key, associatedData: associatedData, nonce: nonce))
    }

    public static func open(_ box: [UInt8], device: SigningKeyPair, associatedData: [UInt8]) -> [UInt8]? {
        guard box.count > overhead else { return nil }
        let ephemeralPublic = Array(box.prefix(32))
        var secret = X25519.secretKey(fromEd25519: device)
        defer { zeroize(&secret) }
        guard var shared = try? X25519.sharedSecret(secretKey: secret, publicKey: ephemeralPublic) else { return nil }
        defer { zeroize(&shared) }
        let key = BLAKE2b.hash(context + ephemeralPublic + device.publicKey.bytes, key: shared, outputLength: 32)
        return try? XChaCha20Poly1305.open(Array(box.dropFirst(32)), key: key, associatedData: associatedData)
    }
}
