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
        try Self.checkMembership(record)
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

    /// A card's membership certificate (field 18) carries a signature of its own (§6.8), checked
    /// with the record's: a forged one is `invalid-body`, the card's author's fault.
    static func checkMembership(_ record: Record) throws(RecordError) {
        guard record.type == .profile, let certificate = ProfileCard.membership(inBody: record.body),
              !certificate.hasValidSignature else { return }
        throw RecordError(.invalidBody, "the card's membership certificate from \(MembershipCertificate.printKey(certificate.ca).prefix(16))… does not verify; it was altered or forged")
    }

    /// Signs a new record. The body must be a valid body of `type` (it is checked).
    /// `account`: the account a device key signs for (nil: the author is the account).
    public static func sign(type: RecordType, by author: SigningKeyPair, for account: PublicKey? = nil, seq: UInt64, timestamp: UInt64,
                            clock: VectorClock = VectorClock(), body: [UInt8]) throws(RecordError) -> VerifiedRecord {
        let message = Record.signedBytes(type: type, account: account, author: author.publicKey.key, seq: seq,
                                         timestamp: timestamp, clock: clock, body: body)
        let encoded = message + author.signature(for: message)
        // Decoding our own output checks limits and the schema exactly as a peer would.
        let record = try Record.decode(encoded)
        try checkMembership(record)
        return VerifiedRecord(unchecked: record, encoded: encoded)
    }
}

/// The secrets two accounts share: a pair key only they can compute, from which come the tag
/// that marks their sealed records and the key that encrypts them. Version 1 agrees on it with
/// the two accounts' Ed25519 keys (converted to X25519, PROTOCOL.md §7.3); version 2 with an
/// encryption key of each (§7.5), which every current device of the account holds.
public struct PairSecrets: Sendable {
    public let me: PublicKey
    public let other: PublicKey
    private let pairKey: [UInt8]

    static let context = Array("mentormate pair v1".utf8)
    static let contextV2 = Array("mentormate pair v2".utf8)

    public init(me: SigningKeyPair, other: PublicKey) throws(CryptoError) {
        let otherSigning = try SigningPublicKey(bytes: other.bytes)
        var secret = X25519.secretKey(fromEd25519: me)
        defer { zeroize(&secret) }
        var shared = try X25519.sharedSecret(secretKey: secret, publicKey: X25519.publicKey(fromEd25519: otherSigning))
        defer { zeroize(&shared) }
        self.init(me: me.publicKey.key, other: other, shared: shared, context: Self.context)
    }

    /// Version 2: `mySecret` is one of my account's encryption keys (or the X25519 form of its
    /// Ed25519 key), `theirKey` the other account's public encryption key the record names.
    public init(me: PublicKey, mySecret: [UInt8], other: PublicKey, theirKey: [UInt8]) throws(CryptoError) {
        var shared = try X25519.sharedSecret(secretKey: mySecret, publicKey: theirKey)
        defer { zeroize(&shared) }
        self.init(me: me, other: other, shared: shared, context: Self.contextV2)
    }

    private init(me: PublicKey, other: PublicKey, shared: [UInt8], context: [UInt8]) {
        let (lo, hi) = me < other ? (me, other) : (other, me)
        self.me = me
        self.other = other
        self.pairKey = BLAKE2b.hash(context + lo.bytes + hi.bytes, key: shared, outputLength: 32)
    }

    /// The tag of a sealed record of `type` written by `author` (one of the pair's accounts).
    public func tag(type: RecordType, author: PublicKey) -> [UInt8] {
        BLAKE2b.hash(Array("tag".utf8) + [type.rawValue] + author.bytes, key: pairKey, outputLength: SealedBody.tagLength)
    }

    var encryptionKey: [UInt8] { BLAKE2b.hash(Array("enc".utf8), key: pairKey, outputLength: 32) }

    /// Encrypts a payload for the pair, bound to the record type, author account and tag (and,
    /// in version 2, the sender's encryption key).
    public func seal(_ plaintext: [UInt8], type: RecordType, author: PublicKey, senderKey: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let tag = tag(type: type, author: author)
        return try XChaCha20Poly1305.seal(plaintext, key: encryptionKey, associatedData: [type.rawValue] + author.bytes + tag + (senderKey ?? []))
    }

    public func open(_ body: SealedBody, type: RecordType, author: PublicKey) throws(CryptoError) -> [UInt8] {
        try XChaCha20Poly1305.open(body.box, key: encryptionKey, associatedData: [type.rawValue] + author.bytes + body.pairTag + (body.senderKey ?? []))
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

    /// Version 2: keyed by the author account's encryption key, so that every device holding
    /// it learns the counterpart and the counterpart's encryption key the record was sealed to.
    static func keyV2(_ secret: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(Array("mentormate self v2".utf8), key: secret, outputLength: 32)
    }

    static func sealV2(counterpart: PublicKey, theirKey: [UInt8], secret: [UInt8], senderKey: [UInt8], type: RecordType) throws(CryptoError) -> [UInt8] {
        try XChaCha20Poly1305.seal(counterpart.bytes + theirKey, key: keyV2(secret), associatedData: [type.rawValue] + senderKey)
    }

    static func openV2(_ box: [UInt8], secret: [UInt8], senderKey: [UInt8], type: RecordType) -> (PublicKey, [UInt8])? {
        guard let plain = try? XChaCha20Poly1305.open(box, key: keyV2(secret), associatedData: [type.rawValue] + senderKey),
              plain.count == 64, let counterpart = PublicKey(bytes: Array(plain.prefix(32))) else { return nil }
        return (counterpart, Array(plain.suffix(32)))
    }
}

/// What a writer seals version-2 records with: its account, and the secret and public key of
/// the account's newest encryption key.
public struct SealingKey: Sendable {
    public let account: PublicKey
    public let epoch: UInt32
    public let secret: [UInt8]
    public let publicKey: [UInt8]
    /// The account's purge key (`PurgeTag`), from its epoch-1 key; nil without it.
    public let purgeKey: [UInt8]?

    public init(account: PublicKey, epoch: UInt32, secret: [UInt8], firstEpochSecret: [UInt8]? = nil) throws(CryptoError) {
        self.account = account; self.epoch = epoch; self.secret = secret
        self.publicKey = try X25519.publicKey(fromSecret: secret)
        self.purgeKey = firstEpochSecret.map(PurgeTag.key(firstEpochSecret:))
    }
}

/// Purge tags (PROTOCOL.md §8.8): every message an account writes in one match carries the
/// same tag, which only that account can compute; its unmatch of the match names the tag, and
/// every replica removes those messages.
///
///     P   = BLAKE2b-256 keyed with the account's epoch-1 encryption secret over "mentormate purge v1"
///     tag = BLAKE2b-256 keyed with P over "match" ‖ lo ‖ hi    (lo, hi: the match's two like IDs, sorted)
public enum PurgeTag {
    public static func key(firstEpochSecret: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(Array("mentormate purge v1".utf8), key: firstEpochSecret, outputLength: 32)
    }

    /// The purge key of an account whose key this node holds.
    public static func key(account: SigningKeyPair) -> [UInt8]? {
        AccountKeyring.derived(from: account, epochs: 1...1).secrets[1].map { key(firstEpochSecret: $0) }
    }

    public static func tag(key: [UInt8], likes a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        let (lo, hi) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a)
        return BLAKE2b.hash(Array("match".utf8) + lo + hi, key: key, outputLength: 32)
    }

    /// The match a payload names (a message's or an unmatch's two likes), if it names one.
    static func match(of payload: any SealedPayload) -> ([UInt8], [UInt8])? {
        if let p = payload as? ChatPayload, let a = p.answers, let b = p.mine { return (a, b) }
        if let p = payload as? UnmatchPayload, let a = p.answers, let b = p.mine { return (a, b) }
        if let p = payload as? ContactPayload { return (p.answers, p.mine) }
        return nil
    }
}

extension SealedRecordSchema {
    /// Seals `payload` from `author` to its counterpart, as a record body of this type.
    public static func seal(_ payload: Payload, from author: SigningKeyPair) throws(CryptoError) -> Self {
        let secrets = try PairSecrets(me: author, other: payload.counterpart)
        let me = author.publicKey.key
        let purge = PurgeTag.match(of: payload).flatMap { m in PurgeTag.key(account: author).map { PurgeTag.tag(key: $0, likes: m.0, m.1) } }
        let body = SealedBody(pairTag: secrets.tag(type: type, author: me),
                              box: try secrets.seal(payload.plaintext, type: type, author: me),
                              selfBox: try SelfBox.seal(counterpart: payload.counterpart, author: author, type: type),
                              purgeTag: purge)
        return Self(sealed: body)
    }

    /// Version 2 (PROTOCOL.md §7.5): sealed with the author account's encryption key `key` to
    /// the counterpart's encryption key `theirKey` (its newest; for an account that has none,
    /// the X25519 form of its Ed25519 key).
    public static func seal(_ payload: Payload, with key: SealingKey, to theirKey: [UInt8]) throws(CryptoError) -> Self {
        let secrets = try PairSecrets(me: key.account, mySecret: key.secret, other: payload.counterpart, theirKey: theirKey)
        let body = SealedBody(pairTag: secrets.tag(type: type, author: key.account),
                              box: try secrets.seal(payload.plaintext, type: type, author: key.account, senderKey: key.publicKey),
                              selfBox: try SelfBox.sealV2(counterpart: payload.counterpart, theirKey: theirKey, secret: key.secret,
                                                          senderKey: key.publicKey, type: type),
                              senderKey: key.publicKey,
                              purgeTag: PurgeTag.match(of: payload).flatMap { m in key.purgeKey.map { PurgeTag.tag(key: $0, likes: m.0, m.1) } })
        return Self(sealed: body)
    }
}

/// Notes to self (PROTOCOL.md §7.6): a pass, sealed with the account's own encryption key.
///
///     key = BLAKE2b-256 keyed with the epoch secret over "mentormate note v1"
///     box = XChaCha20-Poly1305(key, random nonce, associated data [7] ‖ account ‖ sender key, payload)
public enum NoteBox {
    static func key(_ secret: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(Array("mentormate note v1".utf8), key: secret, outputLength: 32)
    }

    public static func seal(_ payload: NotePayload, with key: SealingKey) throws(CryptoError) -> Note {
        try seal(payload, with: key, nonce: nil)
    }

    static func seal(_ payload: NotePayload, with key: SealingKey, nonce: [UInt8]?) throws(CryptoError) -> Note {
        let box = try XChaCha20Poly1305.seal(payload.plaintext, key: Self.key(key.secret),
                                             associatedData: [RecordType.note.rawValue] + key.account.bytes + key.publicKey, nonce: nonce)
        return Note(senderKey: key.publicKey, box: box)
    }

    public static func open(_ note: Note, account: PublicKey, secret: [UInt8]) -> NotePayload? {
        guard let plain = try? XChaCha20Poly1305.open(note.box, key: key(secret),
                                                      associatedData: [RecordType.note.rawValue] + account.bytes + note.senderKey) else { return nil }
        return try? NotePayload(plaintext: plain)
    }
}

/// Opens sealed records for one local account: with its Ed25519 key where this node holds it
/// (version 1, and version 2 sealed to an account that had no encryption key yet), and with
/// the encryption keys of its keyring (version 2).
public struct SealedOpener: Sendable {
    public let account: PublicKey
    /// The account key, where this node holds it.
    public let accountKeys: SigningKeyPair?
    /// This node's device key of the account: it opens the keyrings and grants meant for it.
    public let device: SigningKeyPair?
    public private(set) var keyring: AccountKeyring
    private var cache: [PublicKey: PairSecrets] = [:]
    private var cacheV2: [[UInt8]: PairSecrets] = [:]

    public init(account: SigningKeyPair) {
        self.init(account: account.publicKey.key, accountKeys: account, device: nil, keyring: AccountKeyring())
    }

    public init(account: PublicKey, accountKeys: SigningKeyPair?, device: SigningKeyPair?, keyring: AccountKeyring) {
        self.account = account; self.accountKeys = accountKeys; self.device = device; self.keyring = keyring
    }

    /// Adds encryption keys (a certificate or a rotation reached this device).
    public mutating func learn(_ more: AccountKeyring) { keyring.merge(more) }

    /// The key new records are sealed with: the keyring's newest epoch.
    public var sealingKey: SealingKey? {
        keyring.current.flatMap { try? SealingKey(account: account, epoch: $0.epoch, secret: $0.secret, firstEpochSecret: keyring.secrets[1]) }
    }

    /// Version-1 secrets with `other`, cached (one X25519 per counterpart).
    public mutating func secrets(with other: PublicKey) -> PairSecrets? {
        if let s = cache[other] { return s }
        guard let accountKeys, let s = try? PairSecrets(me: accountKeys, other: other) else { return nil }
        cache[other] = s
        return s
    }

    /// Version-2 secrets from my `secret` and the other's `theirKey`, cached.
    private mutating func secrets(mySecret: [UInt8], other: PublicKey, theirKey: [UInt8]) -> PairSecrets? {
        let key = mySecret + other.bytes + theirKey
        if let s = cacheV2[key] { return s }
        guard let s = try? PairSecrets(me: account, mySecret: mySecret, other: other, theirKey: theirKey) else { return nil }
        cacheV2[key] = s
        return s
    }

    /// My secrets a version-2 record may be sealed to: every epoch of the keyring, and the
    /// X25519 form of the account key where held (a sender who saw no encryption key of mine).
    private var candidateSecrets: [[UInt8]] {
        keyring.secrets.sorted { $0.key > $1.key }.map(\.value) + (accountKeys.map { [X25519.secretKey(fromEd25519: $0)] } ?? [])
    }

    /// If the record concerns this account (it wrote it, or it is the counterpart), returns
    /// the counterpart and the decrypted, schema-checked entry; otherwise nil.
    public mutating func open(_ v: VerifiedRecord) -> (other: PublicKey, entry: PairEntry)? {
        let r = v.record
        guard let schema = RecordSchemas.schema(for: r.type), schema.publicMerge == .sealed,
              let sealed = try? SealedBody(body: r.body, what: schema.name, maxPlaintext: Limits.maxBodyBytes) else { return nil }
        let me = account
        let author = r.account
        let other: PublicKey
        let secrets: PairSecrets
        if let senderKey = sealed.senderKey {
            if author == me {
                guard let mine = keyring.secret(forPublicKey: senderKey),
                      let (o, theirKey) = SelfBox.openV2(sealed.selfBox, secret: mine.secret, senderKey: senderKey, type: r.type),
                      let s = self.secrets(mySecret: mine.secret, other: o, theirKey: theirKey) else { return nil }
                other = o
                secrets = s
            } else {
                other = author
                var found: PairSecrets?
                for candidate in candidateSecrets {
                    if let s = secretsIfTagged(candidate, other: author, senderKey: senderKey, sealed, r.type) { found = s; break }
                }
                guard let found else { return nil }
                secrets = found
            }
        } else {
            guard let accountKeys else { return nil }
            if author == me {
                guard let o = SelfBox.open(sealed.selfBox, author: accountKeys, type: r.type) else { return nil }
                other = o
            } else {
                other = author
            }
            guard let s = self.secrets(with: other) else { return nil }
            secrets = s
        }
        guard other != me, secrets.tag(type: r.type, author: author) == sealed.pairTag,
              let plain = try? secrets.open(sealed, type: r.type, author: author) else { return nil }
        let kind: PairEntry.Kind
        switch r.type {
        case .like:
            guard let p = try? LikePayload(plaintext: plain), p.counterpart == (author == me ? other : me) else { return nil }
            kind = .like(p.liked, peerSeq: p.peerSeq)
        case .chat:
            guard let p = try? ChatPayload(plaintext: plain), p.counterpart == (author == me ? other : me) else { return nil }
            kind = .chat(peerSeq: p.peerSeq, answers: p.answers, mine: p.mine, text: p.text)
        case .unmatch:
            guard let p = try? UnmatchPayload(plaintext: plain), p.counterpart == (author == me ? other : me) else { return nil }
            kind = .unmatch(peerSeq: p.peerSeq, answers: p.answers, mine: p.mine)
        case .contact:
            guard let p = try? ContactPayload(plaintext: plain), p.counterpart == (author == me ? other : me) else { return nil }
            kind = .contact(answers: p.answers, mine: p.mine, text: p.text)
        default:
            return nil
        }
        return (other, PairEntry(author: author, seq: r.seq, timestamp: r.timestamp, recordID: v.id, kind: kind,
                                 clock: r.effectiveClock))
    }

    /// A note of this account's (its pass), if this node holds the key it was sealed with.
    public func openNote(_ v: VerifiedRecord) -> NotePayload? {
        guard v.record.type == .note, v.record.account == account, let note = try? Note(body: v.record.body),
              let mine = keyring.secret(forPublicKey: note.senderKey) else { return nil }
        return NoteBox.open(note, account: account, secret: mine.secret)
    }

    private mutating func secretsIfTagged(_ mySecret: [UInt8], other: PublicKey, senderKey: [UInt8], _ sealed: SealedBody, _ type: RecordType) -> PairSecrets? {
        guard let s = secrets(mySecret: mySecret, other: other, theirKey: senderKey), s.tag(type: type, author: other) == sealed.pairTag else { return nil }
        return s
    }
}
