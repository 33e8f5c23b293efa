import MentorCore

/// Writes an account's records: signs each with the account key and numbers them 1, 2, 3…
/// (the caller persists `lastSeq` — the replica's contiguous seq of the author is the truth).
public struct RecordWriter: Sendable {
    public let keys: SigningKeyPair
    public private(set) var lastSeq: UInt64

    public init(keys: SigningKeyPair, lastSeq: UInt64 = 0) {
        self.keys = keys
        self.lastSeq = lastSeq
    }

    public var author: PublicKey { keys.publicKey.key }

    public mutating func profile(_ card: ProfileCard, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.profile, body: card.validated().body, at: timestamp)
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
        let v = try VerifiedRecord.sign(type: type, by: keys, seq: lastSeq + 1, timestamp: timestamp, clock: clock, body: body)
        lastSeq += 1
        return v
    }
}
