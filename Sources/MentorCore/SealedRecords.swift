/// Likes, chat messages and unmatches are end-to-end encrypted between two accounts. On the
/// wire and in every replica they are opaque: a pair tag that only the two accounts can
/// compute, a box only they can open, and a box only the author can open (so the author's
/// other replicas know whom it was for). Their clocks are empty: naming the other writer in
/// clear would tell everyone who likes or talks to whom. The causal dependency on the other
/// side travels inside the box (`peerSeq`).
public struct SealedBody: Equatable, Sendable {
    public enum Tag: UInt8, CaseIterable { case pairTag = 1, box = 2, selfBox = 3, senderKey = 4, purgeTag = 5 }
    public static let tagLength = 32
    /// nonce 24 ‖ ciphertext ‖ tag 16
    public static let boxOverhead = 24 + 16
    /// Sealed with the account's Ed25519 key (no sender key): the self box holds the counterpart.
    public static let selfBoxLength = boxOverhead + PublicKey.length
    /// Sealed with an account encryption key (PROTOCOL.md §7.5): the self box holds the
    /// counterpart and the counterpart's encryption key it was sealed to.
    public static let selfBoxLengthV2 = boxOverhead + PublicKey.length + 32

    /// BLAKE2b keyed by the pair key over "tag" ‖ type ‖ author: lets an account recognize a
    /// record meant for it with one hash (plus one X25519 per distinct author, cached) instead
    /// of trying to decrypt every record.
    public var pairTag: [UInt8]
    public var box: [UInt8]
    public var selfBox: [UInt8]
    /// The author account's encryption key (X25519 public) it was sealed with; nil: sealed
    /// with the account's Ed25519 key itself (PROTOCOL.md §7.3).
    public var senderKey: [UInt8]?
    /// A message's or an unmatch's purge tag (PROTOCOL.md §8.8): the same for every message
    /// its author wrote in one match, and named by the author's unmatch of that match, which
    /// removes them from every replica. Computable only by the author's account.
    public var purgeTag: [UInt8]?

    public init(pairTag: [UInt8], box: [UInt8], selfBox: [UInt8], senderKey: [UInt8]? = nil, purgeTag: [UInt8]? = nil) {
        self.pairTag = pairTag; self.box = box; self.selfBox = selfBox; self.senderKey = senderKey; self.purgeTag = purgeTag
    }

    public init(body: [UInt8], what: String, maxPlaintext: Int) throws(RecordError) {
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        pairTag = try f.require(f.bytes(Tag.pairTag.rawValue, "pair tag", length: Self.tagLength, what: what), "pair tag", what: what)
        senderKey = try f.bytes(Tag.senderKey.rawValue, "sender key", length: 32, what: what)
        purgeTag = try f.bytes(Tag.purgeTag.rawValue, "purge tag", length: 32, what: what)
        let selfLength = senderKey == nil ? Self.selfBoxLength : Self.selfBoxLengthV2
        selfBox = try f.require(f.bytes(Tag.selfBox.rawValue, "self box", length: selfLength, what: what), "self box", what: what)
        box = try f.require(f[Tag.box.rawValue], "box", what: what)
        guard box.count > Self.boxOverhead, box.count <= Self.boxOverhead + maxPlaintext else {
            throw RecordError(.invalidBody, "\(what) box is \(box.count) bytes; must be \(Self.boxOverhead + 1)...\(Self.boxOverhead + maxPlaintext)")
        }
    }

    public var encoded: [UInt8] {
        var f = FieldList()
        f.set(Tag.pairTag.rawValue, pairTag)
        f.set(Tag.box.rawValue, box)
        f.set(Tag.selfBox.rawValue, selfBox)
        if let senderKey { f.set(Tag.senderKey.rawValue, senderKey) }
        if let purgeTag { f.set(Tag.purgeTag.rawValue, purgeTag) }
        return f.encoded
    }
}

/// A sealed record type: one struct with its limits and its private payload schema.
public protocol SealedRecordSchema: RecordSchema {
    associatedtype Payload: SealedPayload
    var sealed: SealedBody { get }
    init(sealed: SealedBody)
}

extension SealedRecordSchema {
    /// A sealed record's clock names only other keys of its author's account (its like
    /// register's writers, §8.4): never the counterpart, who stays hidden (§12).
    public static var maxClockEntries: Int { Limits.maxDevicesPerAccount }
    public static var publicMerge: PublicMerge { .sealed }
    public init(body: [UInt8]) throws(RecordError) {
        self.init(sealed: try SealedBody(body: body, what: Self.name, maxPlaintext: Payload.maxBytes))
    }
    /// A device holds the account's encryption keys, not its Ed25519 key: what a device signs
    /// is sealed with an encryption key and names it (PROTOCOL.md §7.5).
    public static func validate(record: Record) throws(RecordError) {
        let sealed = try? SealedBody(body: record.body, what: name, maxPlaintext: Limits.maxBodyBytes)
        guard !record.isDeviceSigned || sealed?.senderKey != nil else {
            throw RecordError(.invalidBody, "a \(name) signed by a device key must be sealed with the account's encryption key (field 4, the sender key)")
        }
        guard type != .like || sealed?.purgeTag == nil else {
            throw RecordError(.invalidBody, "a like carries no purge tag (field 5 belongs to messages and unmatches)")
        }
        guard type != .contact || sealed?.purgeTag != nil else {
            throw RecordError(.invalidBody, "a contact carries its match's purge tag (field 5), so its author's unmatch removes it")
        }
    }
    public var body: [UInt8] { sealed.encoded }
}

/// What is inside a sealed record's box: a canonical field list whose first field is the
/// other account (the recipient), so a box can never be replayed to a different pair.
public protocol SealedPayload: Sendable, Equatable {
    static var maxBytes: Int { get }
    var counterpart: PublicKey { get }
    init(plaintext: [UInt8]) throws(RecordError)
    var plaintext: [UInt8] { get }
}

public struct Like: SealedRecordSchema {
    public static let type = RecordType.like
    public static let name = "like"
    public typealias Payload = LikePayload
    public let sealed: SealedBody
    public init(sealed: SealedBody) { self.sealed = sealed }
}

public struct ChatMessage: SealedRecordSchema {
    public static let type = RecordType.chat
    public static let name = "chat"
    public typealias Payload = ChatPayload
    public let sealed: SealedBody
    public init(sealed: SealedBody) { self.sealed = sealed }
}

public struct Unmatch: SealedRecordSchema {
    public static let type = RecordType.unmatch
    public static let name = "unmatch"
    public typealias Payload = UnmatchPayload
    public let sealed: SealedBody
    public init(sealed: SealedBody) { self.sealed = sealed }
}

/// A person's contact sealed to one match (PROTOCOL.md §7.7): never on the public card.
public struct Contact: SealedRecordSchema {
    public static let type = RecordType.contact
    public static let name = "contact"
    public typealias Payload = ContactPayload
    public let sealed: SealedBody
    public init(sealed: SealedBody) { self.sealed = sealed }
}

/// Like (or, with `liked == false`, an undone like) of `target`. One register per (liker, target).
/// `peerSeq` is the highest seq of the target's records the liker had applied when it wrote: a
/// withdrawal hides the messages written against the withdrawn like that the liker had not seen
/// (section 8.5 of PROTOCOL.md). Records written before the field existed read as peer seq 0.
public struct LikePayload: SealedPayload {
    public static let maxBytes = 64
    public var target: PublicKey
    public var liked: Bool
    public var peerSeq: UInt64
    public var counterpart: PublicKey { target }

    public init(target: PublicKey, liked: Bool, peerSeq: UInt64) { self.target = target; self.liked = liked; self.peerSeq = peerSeq }

    public init(plaintext: [UInt8]) throws(RecordError) {
        let f = try FieldList.decode(plaintext, known: [1, 2, 3], what: "like payload")
        target = try f.require(f.key(1, "target", what: "like payload"), "target", what: "like payload")
        let flag = try f.require(f.bytes(2, "liked", length: 1, what: "like payload"), "liked", what: "like payload")
        guard flag[0] <= 1 else { throw RecordError(.malformed, "like payload flag must be 0 or 1") }
        liked = flag[0] == 1
        peerSeq = try f.u64(3, "peer seq", what: "like payload") ?? 0
    }

    public var plaintext: [UInt8] {
        var f = FieldList(); f.set(1, target.bytes); f.set(2, [liked ? 1 : 0]); f.set(3, u64: peerSeq); return f.encoded
    }
}

/// A chat message to `recipient`; `peerSeq` is the highest seq of the recipient's records the
/// sender had applied (its causal dependency on the other side), and `answers` the record ID of
/// the recipient's like of the sender that stood in the sender's replica when it wrote. A record
/// ID cannot be known before the like exists, so no message can be prepared for a match that
/// has not happened (section 8.5 of PROTOCOL.md). A payload without it (written before the field
/// existed) opens, but the message is never valid.
public struct ChatPayload: SealedPayload {
    public static let maxTextBytes = 4000
    public static let maxBytes = maxTextBytes + 160
    public static let likeIDLength = 32
    public var recipient: PublicKey
    /// The message's place in the conversation (field 2): 1 + the highest place among the
    /// pair's messages the sender's node held when it wrote — a Lamport clock over both
    /// accounts and all their devices (PROTOCOL.md §8.6).
    public var peerSeq: UInt64
    public var text: String
    /// The recipient's like the message answers (field 4) and the sender's own like (field
    /// 5): the match it belongs to, by the two likes' record IDs (§8.5).
    public var answers: [UInt8]?
    public var mine: [UInt8]?
    public var counterpart: PublicKey { recipient }

    public init(recipient: PublicKey, peerSeq: UInt64, answers: [UInt8]?, mine: [UInt8]? = nil, text: String) {
        self.recipient = recipient; self.peerSeq = peerSeq; self.answers = answers; self.mine = mine; self.text = text
    }

    public init(plaintext: [UInt8]) throws(RecordError) {
        let w = "chat payload"
        let f = try FieldList.decode(plaintext, known: [1, 2, 3, 4, 5], what: w)
        recipient = try f.require(f.key(1, "recipient", what: w), "recipient", what: w)
        peerSeq = try f.require(f.u64(2, "peer seq", what: w), "peer seq", what: w)
        text = try f.require(f.text(3, "text", maxBytes: Self.maxTextBytes, what: w), "text", what: w)
        answers = try f.bytes(4, "answered like", length: Self.likeIDLength, what: w)
        mine = try f.bytes(5, "own like", length: Self.likeIDLength, what: w)
        guard !text.isEmpty else { throw RecordError(.invalidBody, "chat message is empty") }
    }

    public var plaintext: [UInt8] {
        var f = FieldList(); f.set(1, recipient.bytes); f.set(2, u64: peerSeq); f.set(3, text: text)
        if let answers { f.set(4, answers) }
        if let mine { f.set(5, mine) }
        return f.encoded
    }
}

/// Ends a match with `target`: the one of the two likes `answers` (the target's) and `mine`
/// (the author's), so that the two may match again with new likes (PROTOCOL.md §8.7). Without
/// them (written before they existed) it ends every match of the pair, for good.
public struct UnmatchPayload: SealedPayload {
    public static let maxBytes = 128
    public var target: PublicKey
    public var peerSeq: UInt64
    public var answers: [UInt8]?
    public var mine: [UInt8]?
    public var counterpart: PublicKey { target }

    public init(target: PublicKey, peerSeq: UInt64, answers: [UInt8]? = nil, mine: [UInt8]? = nil) {
        self.target = target; self.peerSeq = peerSeq; self.answers = answers; self.mine = mine
    }

    public init(plaintext: [UInt8]) throws(RecordError) {
        let w = "unmatch payload"
        let f = try FieldList.decode(plaintext, known: [1, 2, 3, 4], what: w)
        target = try f.require(f.key(1, "target", what: w), "target", what: w)
        peerSeq = try f.require(f.u64(2, "peer seq", what: w), "peer seq", what: w)
        answers = try f.bytes(3, "their like", length: ChatPayload.likeIDLength, what: w)
        mine = try f.bytes(4, "own like", length: ChatPayload.likeIDLength, what: w)
        guard (answers == nil) == (mine == nil) else {
            throw RecordError(.malformed, "\(w) names one like of the match; it names both or neither")
        }
    }

    public var plaintext: [UInt8] {
        var f = FieldList(); f.set(1, target.bytes); f.set(2, u64: peerSeq)
        if let answers, let mine { f.set(3, answers); f.set(4, mine) }
        return f.encoded
    }
}

/// The author's contact text (phone, chat handle: at most 200 bytes; empty: cleared) for
/// `recipient`, in the match of the two likes `answers` (the recipient's) and `mine` (the
/// author's): it carries that match's purge tag, and is shown only while that match stands.
public struct ContactPayload: SealedPayload {
    public static let maxTextBytes = 200
    public static let maxBytes = maxTextBytes + 120
    public var recipient: PublicKey
    public var text: String
    public var answers: [UInt8]
    public var mine: [UInt8]
    public var counterpart: PublicKey { recipient }

    public init(recipient: PublicKey, text: String, answers: [UInt8], mine: [UInt8]) {
        self.recipient = recipient; self.text = text; self.answers = answers; self.mine = mine
    }

    public init(plaintext: [UInt8]) throws(RecordError) {
        let w = "contact payload"
        let f = try FieldList.decode(plaintext, known: [1, 2, 3, 4], what: w)
        recipient = try f.require(f.key(1, "recipient", what: w), "recipient", what: w)
        text = try f.text(2, "text", maxBytes: Self.maxTextBytes, what: w) ?? ""
        answers = try f.require(f.bytes(3, "their like", length: ChatPayload.likeIDLength, what: w), "their like", what: w)
        mine = try f.require(f.bytes(4, "own like", length: ChatPayload.likeIDLength, what: w), "own like", what: w)
    }

    public var plaintext: [UInt8] {
        var f = FieldList(); f.set(1, recipient.bytes)
        if !text.isEmpty { f.set(2, text: text) }
        f.set(3, answers); f.set(4, mine)
        return f.encoded
    }
}
