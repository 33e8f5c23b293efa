/// Limits every node enforces on every record (SPEC §3).
public enum Limits {
    /// A record body is at most 16 KiB.
    public static let maxBodyBytes = 16 * 1024
    /// A photo blob is at most 4 MiB.
    public static let maxPhotoBytes = 4 * 1024 * 1024
    /// A clock never names more than this many writers.
    public static let maxClockEntries = 64
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

    public static func < (a: RecordType, b: RecordType) -> Bool { a.rawValue < b.rawValue }
    public var description: String { RecordSchemas.schema(for: self)?.name ?? "type-\(rawValue)" }
}

/// A record as it travels and as it is stored: signed by its author over its canonical encoding.
///
/// Canonical encoding (all integers big-endian; see docs/PROTOCOL.md):
///
///     magic      3 bytes  "MMR"
///     version    u8       1
///     type       u8
///     author     32 bytes Ed25519 public key
///     seq        u64      1 ... 2^63-1, contiguous per author
///     timestamp  u64      milliseconds since the Unix epoch (author's wall clock; a hint)
///     clock      u8 count, then count × (key 32 bytes ‖ seq u64), keys strictly ascending,
///                counters > 0, never the author itself
///     body       u32 length ‖ body bytes (≤ 16 KiB), the type's canonical field list
///     signature  64 bytes  Ed25519 over every byte before it
public struct Record: Hashable, Sendable {
    public static let magic: [UInt8] = Array("MMR".utf8)
    public static let version: UInt8 = 1
    public static let signatureLength = 64
    /// Bytes of everything but the body and the clock entries: magic..clock count, body length, signature.
    public static let fixedOverhead = 3 + 1 + 1 + 32 + 8 + 8 + 1 + 4 + 64

    public let type: RecordType
    public let author: PublicKey
    public let seq: UInt64
    public let timestamp: UInt64
    /// Dependencies on the other writers of the object this record changes.
    public let clock: VectorClock
    public let body: [UInt8]
    public let signature: [UInt8]

    public init(type: RecordType, author: PublicKey, seq: UInt64, timestamp: UInt64,
                clock: VectorClock, body: [UInt8], signature: [UInt8]) {
        self.type = type
        self.author = author
        self.seq = seq
        self.timestamp = timestamp
        self.clock = clock
        self.body = body
        self.signature = signature
    }

    /// The record's full causal position: its clock plus its own (author, seq).
    public var effectiveClock: VectorClock {
        var c = clock
        c.advance(author, to: seq)
        return c
    }

    /// The bytes the author signs: the encoding up to and including the body.
    public static func signedBytes(type: RecordType, author: PublicKey, seq: UInt64, timestamp: UInt64,
                                   clock: VectorClock, body: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: fixedOverhead + clock.count * 40 + body.count)
        w.raw(magic)
        w.u8(version)
        w.u8(type.rawValue)
        w.raw(author.bytes)
        w.u64(seq)
        w.u64(timestamp)
        clock.encode(into: &w)
        w.u32(UInt32(body.count))
        w.raw(body)
        return w.bytes
    }

    public var signedBytes: [UInt8] {
        Self.signedBytes(type: type, author: author, seq: seq, timestamp: timestamp, clock: clock, body: body)
    }

    public var encoded: [UInt8] { signedBytes + signature }

    /// Decodes the canonical encoding and checks everything that needs no key and no state:
    /// magic, version, known type, lengths, limits, clock form, and the body's schema.
    /// Signature verification is MentorCrypto's job (`Record.verified()`).
    public static func decode(_ bytes: [UInt8]) throws(RecordError) -> Record {
        guard bytes.count <= fixedOverhead + Limits.maxClockEntries * 40 + Limits.maxBodyBytes else {
            throw RecordError(.bodyTooLarge, "record is \(bytes.count) bytes; a body may hold at most \(Limits.maxBodyBytes) bytes")
        }
        var r = ByteReader(bytes)
        guard try r.raw(3, "magic") == magic else {
            throw RecordError(.malformed, "does not start with the record magic \"MMR\"")
        }
        let version = try r.u8("version")
        guard version == Self.version else {
            throw RecordError(.unsupportedVersion, "record format version \(version); this build reads version \(Self.version) (upgrade MentorMate to read newer records)")
        }
        let type = RecordType(rawValue: try r.u8("type"))
        guard let schema = RecordSchemas.schema(for: type) else {
            throw RecordError(.unknownType, "record type \(type.rawValue) is not known to this build")
        }
        guard let author = PublicKey(bytes: try r.raw(32, "author")) else {
            throw RecordError(.malformed, "author key has the wrong length")
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
        return Record(type: type, author: author, seq: seq, timestamp: timestamp, clock: clock, body: body, signature: signature)
    }
}
