/// Limits every node enforces on every record (SPEC §3).
public enum Limits {
    /// A record body is at most 16 KiB.
    public static let maxBodyBytes = 16 * 1024
    /// A photo blob is at most 4 MiB.
    public static let maxPhotoBytes = 4 * 1024 * 1024
    /// A clock never names more than this many writers.
    public static let maxClockEntries = 64
    /// Device keys an account may certify; further certificates certify nothing.
    public static let maxDevicesPerAccount = 32
    /// Records further than this past an author's contiguous prefix are refused, not held.
    public static let maxSequenceGap: UInt64 = 4096
    /// Sequence numbers and clock counters fit in a signed 64-bit integer (what SQLite stores).
    public static let maxSeq = UInt64(Int64.max)
    /// Records accepted from the future (clock skew allowance), in milliseconds.
    public static let maxFutureSkewMillis: UInt64 = 10 * 60 * 1000
    /// Records further ahead than `maxFutureSkewMillis` but at most this far (24 h) are held
    /// until due rather than refused (a node whose clock runs hours fast still reaches everyone).
    public static let maxHoldAheadMillis: UInt64 = 24 * 60 * 60 * 1000
}

/// The record types. The byte value is part of the signed encoding and never reused.
public struct RecordType: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let profile = RecordType(rawValue: 1)
    public static let like = RecordType(rawValue: 2)
    public static let chat = RecordType(rawValue: 3)
    public static let unmatch = RecordType(rawValue: 4)
    /// An account's certificate for one of its device keys (signed by the account key).
    public static let device = RecordType(rawValue: 5)
    /// The end of a device key: signed by the account key, or by the device itself.
    public static let revoke = RecordType(rawValue: 6)
    /// A note an account writes to itself (its passes), sealed so only its devices read it.
    public static let note = RecordType(rawValue: 7)
    /// A person's contact (phone, chat handle), sealed to one match (PROTOCOL.md §7.7).
    public static let contact = RecordType(rawValue: 8)
    /// Following an account, or stopping (public, PROTOCOL.md §6.5).
    public static let follow = RecordType(rawValue: 12)
    /// A public post: photos, caption, tags; its edits and deletion (PROTOCOL.md §6.6).
    public static let post = RecordType(rawValue: 9)
    /// A comment on a post, its deletion or its hiding (§6.6).
    public static let comment = RecordType(rawValue: 10)
    /// A like of a post, or its withdrawal (§6.6).
    public static let postLike = RecordType(rawValue: 11)
    /// A player's answers to the quiz of a day (public, PROTOCOL.md §15.4).
    public static let quizResult = RecordType(rawValue: 13)
    /// A meetup, its edit or cancellation (public, PROTOCOL.md §6.7).
    public static let meetup = RecordType(rawValue: 14)
    /// Joining or leaving a meetup (§6.7).
    public static let meetupJoin = RecordType(rawValue: 15)
    /// A meetup's roster, by its host (§6.7).
    public static let meetupRoster = RecordType(rawValue: 16)

    public static func < (a: RecordType, b: RecordType) -> Bool { a.rawValue < b.rawValue }
    public var description: String { RecordSchemas.schema(for: self)?.name ?? "type-\(rawValue)" }
}

/// A record as it travels and as it is stored: signed by its author over its canonical encoding.
///
/// The author is the key that signs. It is either the account key itself (format version 1:
/// the account *is* the author) or a device key the account certified (format version 2, which
/// names the account too; docs/PROTOCOL.md §4 and §6.2).
///
/// Canonical encoding (all integers big-endian; see docs/PROTOCOL.md):
///
///     magic      3 bytes  "MMR"
///     version    u8       1 (signed by the account key) or 2 (signed by a device key)
///     type       u8
///     account    32 bytes only in version 2: the account the device speaks for (never the author)
///     author     32 bytes Ed25519 public key that signs
///     seq        u64      1 ... 2^63-1, contiguous per author
///     timestamp  u64      milliseconds since the Unix epoch (author's wall clock; a hint)
///     clock      u8 count, then count × (key 32 bytes ‖ seq u64), keys strictly ascending,
///                counters > 0, never the author itself
///     body       u32 length ‖ body bytes (≤ 16 KiB), the type's canonical field list
///     signature  64 bytes  Ed25519 over every byte before it
public struct Record: Hashable, Sendable {
    public static let magic: [UInt8] = Array("MMR".utf8)
    /// The format of a record signed by the account key.
    public static let version: UInt8 = 1
    /// The format of a record signed by a device key: it names the account as well.
    public static let deviceVersion: UInt8 = 2
    public static let signatureLength = 64
    /// Bytes of everything but the body and the clock entries: magic..clock count, body length, signature.
    public static let fixedOverhead = 3 + 1 + 1 + 32 + 8 + 8 + 1 + 4 + 64
    /// The longest record either format allows (a version-2 record, full clock and body).
    public static let maxEncodedBytes = fixedOverhead + 32 + Limits.maxClockEntries * 40 + Limits.maxBodyBytes

    public let type: RecordType
    /// The account the record belongs to: the author itself, or the account that certified
    /// the author as one of its devices.
    public let account: PublicKey
    /// The key that signed the record.
    public let author: PublicKey
    public let seq: UInt64
    public let timestamp: UInt64
    /// Dependencies on the other writers of the object this record changes.
    public let clock: VectorClock
    public let body: [UInt8]
    public let signature: [UInt8]

    public init(type: RecordType, account: PublicKey? = nil, author: PublicKey, seq: UInt64, timestamp: UInt64,
                clock: VectorClock, body: [UInt8], signature: [UInt8]) {
        self.type = type
        self.account = account ?? author
        self.author = author
        self.seq = seq
        self.timestamp = timestamp
        self.clock = clock
        self.body = body
        self.signature = signature
    }

    /// Whether a device key, not the account key, signed the record (format version 2).
    public var isDeviceSigned: Bool { account != author }

    /// The record's full causal position: its clock plus its own (author, seq).
    public var effectiveClock: VectorClock {
        var c = clock
        c.advance(author, to: seq)
        return c
    }

    /// The bytes the author signs: the encoding up to and including the body.
    /// `account` nil or equal to `author` is format version 1; another key, version 2.
    public static func signedBytes(type: RecordType, account: PublicKey? = nil, author: PublicKey, seq: UInt64, timestamp: UInt64,
                                   clock: VectorClock, body: [UInt8]) -> [UInt8] {
        let device = account.map { $0 != author } ?? false
        var w = ByteWriter(capacity: fixedOverhead + (device ? 32 : 0) + clock.count * 40 + body.count)
        w.raw(magic)
        w.u8(device ? deviceVersion : version)
        w.u8(type.rawValue)
        if device, let account { w.raw(account.bytes) }
        w.raw(author.bytes)
        w.u64(seq)
        w.u64(timestamp)
        clock.encode(into: &w)
        w.u32(UInt32(body.count))
        w.raw(body)
        return w.bytes
    }

    public var signedBytes: [UInt8] {
        Self.signedBytes(type: type, account: account, author: author, seq: seq, timestamp: timestamp, clock: clock, body: body)
    }

    public var encoded: [UInt8] { signedBytes + signature }

    /// Decodes the canonical encoding and checks everything that needs no key and no state:
    /// magic, version, known type, lengths, limits, clock form, and the body's schema.
    /// Signature verification is MentorCrypto's job (`Record.verified()`).
    public static func decode(_ bytes: [UInt8]) throws(RecordError) -> Record {
        guard bytes.count <= maxEncodedBytes else {
            throw RecordError(.bodyTooLarge, "record is \(bytes.count) bytes; a body may hold at most \(Limits.maxBodyBytes) bytes")
        }
        var r = ByteReader(bytes)
        guard try r.raw(3, "magic") == magic else {
            throw RecordError(.malformed, "does not start with the record magic \"MMR\"")
        }
        let version = try r.u8("version")
        guard version == Self.version || version == Self.deviceVersion else {
            throw RecordError(.unsupportedVersion, "record format version \(version); this build reads versions \(Self.version) and \(Self.deviceVersion) (upgrade MentorMate to read newer records)")
        }
        let type = RecordType(rawValue: try r.u8("type"))
        guard let schema = RecordSchemas.schema(for: type) else {
            throw RecordError(.unknownType, "record type \(type.rawValue) is not known to this build")
        }
        let account: PublicKey? = version == Self.deviceVersion ? PublicKey(bytes: try r.raw(32, "account")) : nil
        guard let author = PublicKey(bytes: try r.raw(32, "author")) else {
            throw RecordError(.malformed, "author key has the wrong length")
        }
        // One encoding per record: a key signing for itself writes version 1.
        if let account, account == author {
            throw RecordError(.malformed, "a version-2 record names its own author as its account; a record the account key signs is version 1")
        }
        let seq = try r.u64("seq")
        guard seq >= 1 else { throw RecordError(.malformed, "sequence number 0; sequences start at 1") }
        guard seq <= Limits.maxSeq else { throw RecordError(.malformed, "sequence number \(seq) is above the maximum \(Limits.maxSeq)") }
        let timestamp = try r.u64("timestamp")
        let clock = try VectorClock.decode(from: &r, maxEntries: Limits.maxClockEntries)
        guard clock[author] == 0 else {
            throw RecordError(.malformed, "clock names the record's own author (its position is implied by seq)")
        }
        guard clock.count <= schema.maxClockEntries else {
            throw RecordError(.clockTooLarge, "a \(schema.name) record may name at most \(schema.maxClockEntries) other writers; this one names \(clock.count)")
        }
        let bodyLength = Int(try r.u32("body length"))
        guard bodyLength <= Limits.maxBodyBytes else {
            throw RecordError(.bodyTooLarge, "body is \(bodyLength) bytes; at most \(Limits.maxBodyBytes) allowed")
        }
        let body = try r.raw(bodyLength, "body")
        let signature = try r.raw(signatureLength, "signature")
        guard r.isAtEnd else {
            throw RecordError(.malformed, "\(r.remaining) trailing bytes after the signature")
        }
        try schema.validate(body: body, seq: seq)
        let record = Record(type: type, account: account, author: author, seq: seq, timestamp: timestamp, clock: clock, body: body, signature: signature)
        try schema.validate(record: record)
        return record
    }
}
