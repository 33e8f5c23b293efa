import MentorCore

/// Writes an account's records: signs each with the account key and numbers them 1, 2, 3…
/// (the caller persists `lastSeq` — the replica's contiguous seq of the author is the truth).
///
/// The account's first record must be its profile card carrying the network's proof of work
/// (PROTOCOL.md §6.1). Given `accountWork`, the writer searches for it itself when it writes
/// seq 1 (2^bits hashes on the calling thread: tools and tests); the node instead searches on
/// its work queue and hands the nonce in with the card (`ProfileCard.work`).
public struct RecordWriter: Sendable {
    public let keys: SigningKeyPair
    /// The account the records belong to: the signing key itself, or the account that
    /// certified it as a device (then every record is format version 2).
    public let account: PublicKey
    public private(set) var lastSeq: UInt64
    /// The network's requirement, when this writer is to meet it itself.
    public var accountWork: AccountWork.Requirement?

    public init(keys: SigningKeyPair, account: PublicKey? = nil, lastSeq: UInt64 = 0, accountWork: AccountWork.Requirement? = nil) {
        self.keys = keys
        self.account = account ?? keys.publicKey.key
        self.lastSeq = lastSeq
        self.accountWork = accountWork
    }

    public var author: PublicKey { keys.publicKey.key }
    /// Whether this writer signs with a device key.
    public var isDevice: Bool { account != author }

    /// A card edit. `clock`: the account's other keys' writes the edit had seen (the clocks of
    /// the account's current card entries, PROTOCOL.md §8.3); the author itself is left out.
    public mutating func profile(_ card: ProfileCard, clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        var card = card
        if lastSeq == 0, !isDevice, card.work == nil, let requirement = accountWork, requirement.bits > 0 {
            card.work = AccountWork.solve(account: author, requirement: requirement)
        }
        let seen = VectorClock(clock.entries.filter { $0.key != author }.map { ($0.key, $0.seq) })
        return try next(.profile, body: card.validated().body, clock: seen, at: timestamp)
    }

    /// A like (or a withdrawal) of `target`; `peerSeq` is the highest seq of the target's records
    /// this account had applied.
    public mutating func like(_ target: PublicKey, liked: Bool = true, peerSeq: UInt64 = 0, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(Like.self, LikePayload(target: target, liked: liked, peerSeq: peerSeq), at: timestamp)
    }

    /// A message to `recipient`, answering the recipient's like `answers` (its record ID), with
    /// `peerSeq` the highest seq of the recipient's records this account had applied.
    public mutating func chat(to recipient: PublicKey, peerSeq: UInt64, answers: [UInt8]?, text: String, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(ChatMessage.self, ChatPayload(recipient: recipient, peerSeq: peerSeq, answers: answers, text: text), at: timestamp)
    }

    /// Certifies `device` as one of this account's devices (the account key only).
    public mutating func certify(_ certificate: DeviceCertificate, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.device, body: certificate.body, at: timestamp)
    }

    /// Revokes `device` (the account key), or — with `device` this writer's own key — itself,
    /// naming this record's seq as its last.
    public mutating func revoke(_ device: PublicKey, lastSeq: UInt64, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let last = device == author ? self.lastSeq + 1 : lastSeq
        return try next(.revoke, body: DeviceRevocation(device: device, lastSeq: last).body, at: timestamp)
    }

    public mutating func unmatch(_ target: PublicKey, peerSeq: UInt64, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(Unmatch.self, UnmatchPayload(target: target, peerSeq: peerSeq), at: timestamp)
    }

    public mutating func sealed<S: SealedRecordSchema>(_ schema: S.Type, _ payload: S.Payload, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        guard payload.counterpart != author else {
            throw RecordError(.invalidBody, "an account cannot send a \(S.name) to itself")
        }
        let body: S
        do { body = try S.seal(payload, from: keys) } catch {
            throw RecordError(.invalidBody, "cannot seal a \(S.name) to \(payload.counterpart.shortID)…: its key is not a usable Ed25519 key (\(error.message))")
        }
        return try next(S.type, body: body.body, at: timestamp)
    }

    /// Signs the next record; `lastSeq` advances only if signing succeeded.
    public mutating func next(_ type: RecordType, body: [UInt8], clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        if lastSeq == 0, !isDevice, type != .profile, let requirement = accountWork, requirement.bits > 0 {
            throw RecordError(.insufficientWork, "an account's first record must be its profile card, with proof of work; write the card first")
        }
        let v = try VerifiedRecord.sign(type: type, by: keys, for: isDevice ? account : nil, seq: lastSeq + 1,
                                        timestamp: timestamp, clock: clock, body: body)
        lastSeq += 1
        return v
    }
}
