import MentorCore

extension SigningPublicKey {
    /// The core's value type for this key.
    public var key: PublicKey {
        // Both types hold exactly 32 bytes, checked at construction.
        PublicKey(bytes: bytes)!
    }
}

extension PublicKey {
    /// Verifies an Ed25519 signature by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let k = try? SigningPublicKey(bytes: bytes) else { return false }
        return k.isValidSignature(signature, for: message)
    }
}

/// A record whose encoding was decoded canonically and whose signature verified, with its ID.
public struct VerifiedRecord: Sendable, Hashable {
    public let record: Record
    /// The exact bytes that were verified (canonical: re-encoding gives the same bytes).
    public let encoded: [UInt8]
    /// BLAKE2b-256 of `encoded`: the record's unique ID.
    public let id: [UInt8]

    /// Decodes, validates the schema and verifies the signature. Nothing is trusted before this.
    public init(_ bytes: [UInt8]) throws(RecordError) {
        let record = try Record.decode(bytes)
        guard record.author.isValidSignature(record.signature, for: Array(bytes.dropLast(Record.signatureLength))) else {
            throw RecordError(.badSignature, "signature of \(record.author.shortID)… seq \(record.seq) does not verify; the record was altered or forged")
        }
        self.init(unchecked: record, encoded: bytes)
    }

    /// Decodes bytes this replica verified before it stored them, without checking the
    /// signature again (used when re-reading its own database; never for bytes from outside).
    public init(alreadyVerified bytes: [UInt8]) throws(RecordError) {
        self.init(unchecked: try Record.decode(bytes), encoded: bytes)
    }

    private init(unchecked record: Record, encoded: [UInt8]) {
        self.record = record
        self.encoded = encoded
        self.id = VerifiedRecord.id(of: encoded)
    }

    public static func id(of encoded: [UInt8]) -> [UInt8] { BLAKE2b.hash(encoded, outputLength: 32) }

    /// Signs a new record. The body must be a valid body of `type` (it is checked).
    /// `account`: the account a device key signs for (nil: the author is the account).
    public static func sign(type: RecordType, by author: SigningKeyPair, for account: PublicKey? = nil, seq: UInt64, timestamp: UInt64,
                            clock: VectorClock = VectorClock(), body: [UInt8]) throws(RecordError) -> VerifiedRecord {
        let message = Record.signedBytes(type: type, account: account, author: author.publicKey.key, seq: seq,
                                         timestamp: timestamp, clock: clock, body: body)
        let encoded = message + author.signature(for: message)
        // Decoding our own output checks limits and the schema exactly as a peer would.
        let record = try Record.decode(encoded)
        return VerifiedRecord(unchecked: record, encoded: encoded)
    }
}

/// The secrets two accounts share, derived from their Ed25519 keys (converted to X25519):
/// a pair key only they can compute, from which come the tag that marks their sealed records
/// and the key that encrypts them.
public struct PairSecrets: Sendable {
    public let me: PublicKey
    public let other: PublicKey
    private let pairKey: [UInt8]

    static let context = Array("mentormate pair v1".utf8)

    public init(me: SigningKeyPair, other: PublicKey) throws(CryptoError) {
        let otherSigning = try SigningPublicKey(bytes: other.bytes)
        let shared = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: me),
                                             publicKey: X25519.publicKey(fromEd25519: otherSigning))
        let (lo, hi) = me.publicKey.key < other ? (me.publicKey.key, other) : (other, me.publicKey.key)
        self.me = me.publicKey.key
        self.other = other
        self.pairKey = BLAKE2b.hash(Self.context + lo.bytes + hi.bytes, key: shared, outputLength: 32)
    }

    /// The tag of a sealed record of `type` written by `author` (one of the pair).
    public func tag(type: RecordType, author: PublicKey) -> [UInt8] {
        BLAKE2b.hash(Array("tag".utf8) + [type.rawValue] + author.bytes, key: pairKey, outputLength: SealedBody.tagLength)
    }

    var encryptionKey: [UInt8] { BLAKE2b.hash(Array("enc".utf8), key: pairKey, outputLength: 32) }

    /// Encrypts a payload for the pair, bound to the record type, author and tag.
    public func seal(_ plaintext: [UInt8], type: RecordType, author: PublicKey) throws(CryptoError) -> [UInt8] {
        let tag = tag(type: type, author: author)
        return try XChaCha20Poly1305.seal(plaintext, key: encryptionKey, associatedData: [type.rawValue] + author.bytes + tag)
    }

    public func open(_ body: SealedBody, type: RecordType, author: PublicKey) throws(CryptoError) -> [UInt8] {
        try XChaCha20Poly1305.open(body.box, key: encryptionKey, associatedData: [type.rawValue] + author.bytes + body.pairTag)
    }
}

/// The author's key for the self box (lets any replica holding the author's key learn whom a
/// sealed record was for).
public enum SelfBox {
    static func key(_ author: SigningKeyPair) -> [UInt8] {
        var seed = author.seed
        defer { zeroize(&seed) }
        return BLAKE2b.hash(Array("mentormate self v1".utf8), key: seed, outputLength: 32)
    }

    public static func seal(counterpart: PublicKey, author: SigningKeyPair, type: RecordType) throws(CryptoError) -> [UInt8] {
        try XChaCha20Poly1305.seal(counterpart.bytes, key: key(author), associatedData: [type.rawValue])
    }

    public static func open(_ box: [UInt8], author: SigningKeyPair, type: RecordType) -> PublicKey? {
        guard let plain = try? XChaCha20Poly1305.open(box, key: key(author), associatedData: [type.rawValue]) else { return nil }
        return PublicKey(bytes: plain)
    }
}

extension SealedRecordSchema {
    /// Seals `payload` from `author` to its counterpart, as a record body of this type.
    public static func seal(_ payload: Payload, from author: SigningKeyPair) throws(CryptoError) -> Self {
        let secrets = try PairSecrets(me: author, other: payload.counterpart)
        let me = author.publicKey.key
        let body = SealedBody(pairTag: secrets.tag(type: type, author: me),
                              box: try secrets.seal(payload.plaintext, type: type, author: me),
                              selfBox: try SelfBox.seal(counterpart: payload.counterpart, author: author, type: type))
        return Self(sealed: body)
    }
}

/// Opens sealed records for one local account.
public struct SealedOpener: Sendable {
    public let account: SigningKeyPair
    private var cache: [PublicKey: PairSecrets] = [:]

    public init(account: SigningKeyPair) { self.account = account }

    /// Secrets with `other`, cached (one X25519 per counterpart).
    public mutating func secrets(with other: PublicKey) -> PairSecrets? {
        if let s = cache[other] { return s }
        guard let s = try? PairSecrets(me: account, other: other) else { return nil }
        cache[other] = s
        return s
    }

    /// If the record concerns this account (it wrote it, or it is the counterpart), returns
    /// the counterpart and the decrypted, schema-checked entry; otherwise nil.
    public mutating func open(_ v: VerifiedRecord) -> (other: PublicKey, entry: PairEntry)? {
        let r = v.record
        guard let schema = RecordSchemas.schema(for: r.type), schema.publicMerge == .sealed,
              let sealed = try? SealedBody(body: r.body, what: schema.name, maxPlaintext: Limits.maxBodyBytes) else { return nil }
        let me = account.publicKey.key
        let other: PublicKey
        if r.author == me {
            guard let o = SelfBox.open(sealed.selfBox, author: account, type: r.type) else { return nil }
            other = o
        } else {
            other = r.author
        }
        guard other != me, let s = secrets(with: other), s.tag(type: r.type, author: r.author) == sealed.pairTag,
              let plain = try? s.open(sealed, type: r.type, author: r.author) else { return nil }
        let kind: PairEntry.Kind
        switch r.type {
        case .like:
            guard let p = try? LikePayload(plaintext: plain), p.counterpart == (r.author == me ? other : me) else { return nil }
            kind = .like(p.liked, peerSeq: p.peerSeq)
        case .chat:
            guard let p = try? ChatPayload(plaintext: plain), p.counterpart == (r.author == me ? other : me) else { return nil }
            kind = .chat(peerSeq: p.peerSeq, answers: p.answers, text: p.text)
        case .unmatch:
            guard let p = try? UnmatchPayload(plaintext: plain), p.counterpart == (r.author == me ? other : me) else { return nil }
            kind = .unmatch(peerSeq: p.peerSeq)
        default:
            return nil
        }
        return (other, PairEntry(author: r.author, seq: r.seq, timestamp: r.timestamp, recordID: v.id, kind: kind))
    }
}
