/// Why a sync message (or a peer's behaviour in a sync session) was refused. Codes are matched
/// by name; the message says what was wrong.
public struct SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public var description: String { name }

        /// The bytes do not follow the canonical encoding (truncated, trailing bytes, unsorted
        /// vector, zero counters, unknown message type).
        public static let malformed = Code(name: "malformed")
        /// A count or length is over its limit (checked before anything is allocated).
        public static let tooLarge = Code(name: "too-large")
        /// The peer speaks a sync protocol version this build does not.
        public static let unsupportedVersion = Code(name: "unsupported-version")
        /// A well-formed message at the wrong time (records before hello, a second hello, an ack
        /// for more batches than were sent, more unacknowledged batches than the window).
        public static let protocolViolation = Code(name: "protocol-violation")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// Limits on sync messages; a peer exceeding any of them is disconnected.
public enum SyncLimits {
    /// Accounts one `here` names.
    public static let maxHereAccounts = 1024
    /// Bytes of a blob in one `blob` message.
    public static let maxBlobPart = 256 * 1024
    /// Authors named in one hello (over all its parts).
    public static let maxVectorEntries = 100_000
    /// Authors named in one `hello` or `summary` message (48 bytes each: 786 KiB, under a frame).
    public static let maxVectorPart = 16_384
    /// Parts of one hello: the most entries in parts of the most a part holds (7), and one more.
    public static let maxHelloParts = (maxVectorEntries + maxVectorPart - 1) / maxVectorPart + 1
    /// Records in one `records` batch.
    public static let maxBatchRecords = 256
    /// Bytes of one `records` message, encoded (so that it fits one frame: 1 MiB of plaintext).
    public static let maxBatchBytes = 1024 * 1024
    /// The largest record encoding `Record.decode` accepts.
    public static let maxRecordBytes = Record.fixedOverhead + Limits.maxClockEntries * 40 + Limits.maxBodyBytes
}

/// The messages of the anti-entropy protocol. Canonical encoding (integers big-endian):
///
///     hello    0x01 ‖ version u8 ‖ flags u8 ‖ count u32 ‖ count × entry
///              entry = author 32 bytes ‖ contiguous seq u64 ‖ digest u64 (of the author's record IDs)
///              flags: bit 0 = more parts follow (the vector is split into parts of ≤ 16,384
///              entries, ≤ 100,000 in all); other bits 0. Authors strictly ascending across the
///              parts, seqs 1 ... 2^63-1 (authors we hold nothing of are omitted)
///     records  0x02 ‖ count u16 ‖ count × (length u32 ‖ record encoding)
///              1 ... 256 records, each ≤ SyncLimits.maxRecordBytes, ≤ 1 MiB in all
///     ack      0x03 ‖ batches u32 (≥ 1)
///     want     0x04 ‖ author 32 bytes ‖ from seq u64 (≥ 1)
///     wantBlob 0x05 ‖ BLAKE2b-256 hash 32 bytes
///     blob     0x06 ‖ hash 32 bytes ‖ total u32 ‖ offset u32 ‖ length u32 ‖ length bytes
///              total 0 (with offset 0, length 0): not held; else total ≤ 4 MiB, length 1 ... 256 KiB,
///              offset + length ≤ total
///     here     0x07 ‖ count u16 ‖ count × account key 32 bytes (strictly ascending, ≤ 1024)
///     summary  0x08 ‖ flags u8 ‖ count u32 ‖ count × entry — what hello says, again, later (to
///              find forks hidden below where the two sides stood at hello)
///
/// Decoding is strict: every count and length is checked against its limit and against the
/// bytes that remain before anything is allocated, and trailing bytes are refused.
public enum SyncMessage: Equatable, Sendable {
    /// One entry of a hello's vector: the author's records held contiguously from seq 1, and the
    /// digest of the IDs of all of them (fork variants included; 0 = not given).
    public struct Entry: Hashable, Sendable {
        public let author: PublicKey
        public let seq: UInt64
        public let digest: UInt64
        public init(author: PublicKey, seq: UInt64, digest: UInt64 = 0) { self.author = author; self.seq = seq; self.digest = digest }
    }

    public static let protocolVersion: UInt8 = 1

    case hello(version: UInt8, vector: [Entry], more: Bool = false)
    case records([[UInt8]])
    case ack(count: UInt32)
    case want(author: PublicKey, from: UInt64)
    /// Asks for a content-addressed blob (a photo) by its BLAKE2b-256 hash.
    case wantBlob(hash: [UInt8])
    /// A part of a blob asked for (total 0: the sender does not hold it).
    case blob(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8])
    /// The accounts that live on the sending node (all of them, replacing what it said before):
    /// what makes them "nearby now" for the receiver while the link is up.
    case here([PublicKey])
    /// The sender's vector again (parts like hello's), for the receiver to compare digests.
    case summary(vector: [Entry], more: Bool)

    /// A hello in canonical form (sorted, zero counters dropped) from a version vector, in one
    /// part, without digests.
    public static func hello(_ vector: [PublicKey: UInt64]) -> SyncMessage {
        .hello(version: protocolVersion,
               vector: vector.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { Entry(author: $0.key, seq: $0.value) })
    }

    /// The canonical entries of a vector with digests (sorted, zero counters dropped) in parts
    /// of at most `SyncLimits.maxVectorPart`.
    public static func parts(_ vector: [PublicKey: UInt64], digests: [PublicKey: UInt64]) -> [[Entry]] {
        let entries = vector.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { Entry(author: $0.key, seq: $0.value, digest: digests[$0.key] ?? 0) }
        guard !entries.isEmpty else { return [[]] }
        return stride(from: 0, to: entries.count, by: SyncLimits.maxVectorPart).map {
            Array(entries[$0..<min($0 + SyncLimits.maxVectorPart, entries.count)])
        }
    }

    enum Tag: UInt8 { case hello = 1, records = 2, ack = 3, want = 4, wantBlob = 5, blob = 6, here = 7, summary = 8 }
    /// The first byte of an encoded `here`, for a shell that rates messages before decoding them.
    public static let hereTag = Tag.here.rawValue

    public var encoded: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .hello(let version, let vector, let more):
            w.u8(Tag.hello.rawValue)
            w.u8(version)
            Self.encode(vector, more: more, into: &w)
        case .records(let batch):
            w.u8(Tag.records.rawValue)
            w.u16(UInt16(batch.count))
            for r in batch { w.u32(UInt32(r.count)); w.raw(r) }
        case .ack(let count):
            w.u8(Tag.ack.rawValue)
            w.u32(count)
        case .want(let author, let from):
            w.u8(Tag.want.rawValue)
            w.raw(author.bytes)
            w.u64(from)
        case .wantBlob(let hash):
            w.u8(Tag.wantBlob.rawValue)
            w.raw(hash)
        case .blob(let hash, let total, let offset, let bytes):
            w.u8(Tag.blob.rawValue)
            w.raw(hash)
            w.u32(total)
            w.u32(offset)
            w.u32(UInt32(bytes.count))
            w.raw(bytes)
        case .here(let accounts):
            w.u8(Tag.here.rawValue)
            w.u16(UInt16(accounts.count))
            for a in accounts { w.raw(a.bytes) }
        case .summary(let vector, let more):
            w.u8(Tag.summary.rawValue)
            Self.encode(vector, more: more, into: &w)
        }
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(SyncError) -> SyncMessage {
        var r = ByteReader(bytes)
        let message: SyncMessage
        do {
            let tag = try r.u8("message type")
            switch Tag(rawValue: tag) {
            case .hello:
                let version = try r.u8("hello version")
                let (vector, more) = try Self.decodeVector(&r, "hello")
                message = .hello(version: version, vector: vector, more: more)
            case .records:
                let count = Int(try r.u16("record count"))
                guard count >= 1 else { throw SyncError(.malformed, "an empty records batch") }
                guard count <= SyncLimits.maxBatchRecords else {
                    throw SyncError(.tooLarge, "batch holds \(count) records; at most \(SyncLimits.maxBatchRecords) allowed")
                }
                guard r.remaining <= SyncLimits.maxBatchBytes + count * 4 else {
                    throw SyncError(.tooLarge, "batch is \(r.remaining) bytes; at most \(SyncLimits.maxBatchBytes) bytes of records allowed")
                }
                var batch: [[UInt8]] = []
                batch.reserveCapacity(count)
                for i in 0..<count {
                    let length = Int(try r.u32("record \(i) length"))
                    guard length <= SyncLimits.maxRecordBytes else {
                        throw SyncError(.tooLarge, "record \(i) is \(length) bytes; at most \(SyncLimits.maxRecordBytes) allowed")
                    }
                    batch.append(try r.raw(length, "record \(i)"))
                }
                message = .records(batch)
            case .ack:
                let count = try r.u32("ack count")
                guard count >= 1 else { throw SyncError(.malformed, "ack of zero batches") }
                message = .ack(count: count)
            case .want:
                guard let author = PublicKey(bytes: try r.raw(32, "want author")) else {
                    throw SyncError(.malformed, "want author has the wrong length")
                }
                let from = try r.u64("want from")
                guard from >= 1, from <= Limits.maxSeq else {
                    throw SyncError(.malformed, "want from seq \(from); must be 1 ... \(Limits.maxSeq)")
                }
                message = .want(author: author, from: from)
            case .wantBlob:
                message = .wantBlob(hash: try r.raw(32, "blob hash"))
            case .blob:
                let hash = try r.raw(32, "blob hash")
                let total = try r.u32("blob total")
                let offset = try r.u32("blob offset")
                let length = Int(try r.u32("blob part length"))
                if total == 0 {
                    guard offset == 0, length == 0 else { throw SyncError(.malformed, "a not-held blob answer carries bytes") }
                } else {
                    guard Int(total) <= Limits.maxPhotoBytes else {
                        throw SyncError(.tooLarge, "blob of \(total) bytes; at most \(Limits.maxPhotoBytes) allowed")
                    }
                    guard length >= 1, length <= SyncLimits.maxBlobPart else {
                        throw SyncError(.tooLarge, "blob part of \(length) bytes; 1 ... \(SyncLimits.maxBlobPart) allowed")
                    }
                    guard Int(offset) + length <= Int(total) else {
                        throw SyncError(.malformed, "blob part \(offset)+\(length) runs past the blob's \(total) bytes")
                    }
                }
                message = .blob(hash: hash, total: total, offset: offset, bytes: try r.raw(length, "blob part"))
            case .here:
                let count = Int(try r.u16("here count"))
                guard count <= SyncLimits.maxHereAccounts else {
                    throw SyncError(.tooLarge, "here names \(count) accounts; at most \(SyncLimits.maxHereAccounts) allowed")
                }
                var accounts: [PublicKey] = []
                for i in 0..<count {
                    guard let key = PublicKey(bytes: try r.raw(32, "here account \(i)")) else {
                        throw SyncError(.malformed, "here account \(i) has the wrong length")
                    }
                    if let last = accounts.last, !(last < key) {
                        throw SyncError(.malformed, "here accounts are not in strictly ascending order at entry \(i)")
                    }
                    accounts.append(key)
                }
                message = .here(accounts)
            case .summary:
                let (vector, more) = try Self.decodeVector(&r, "summary")
                message = .summary(vector: vector, more: more)
            case nil:
                throw SyncError(.malformed, "unknown sync message type \(tag)")
            }
        } catch let e as SyncError {
            throw e
        } catch let e as RecordError {
            throw SyncError(.malformed, e.message)
        } catch {
            throw SyncError(.malformed, "\(error)")
        }
        guard r.isAtEnd else {
            throw SyncError(.malformed, "\(r.remaining) trailing bytes after the message")
        }
        return message
    }
}

extension SyncMessage {
    static func encode(_ vector: [Entry], more: Bool, into w: inout ByteWriter) {
        w.u8(more ? 1 : 0)
        w.u32(UInt32(vector.count))
        for e in vector { w.raw(e.author.bytes); w.u64(e.seq); w.u64(e.digest) }
    }

    /// flags ‖ count ‖ entries, checked: count ≤ maxVectorPart and within the bytes left,
    /// authors strictly ascending, seqs 1 ... maxSeq, unknown flag bits refused.
    static func decodeVector(_ r: inout ByteReader, _ what: String) throws -> ([Entry], Bool) {
        let flags = try r.u8("\(what) flags")
        guard flags & ~1 == 0 else { throw SyncError(.malformed, "\(what) has unknown flag bits \(flags)") }
        let count = Int(try r.u32("\(what) vector count"))
        guard count <= SyncLimits.maxVectorPart else {
            throw SyncError(.tooLarge, "\(what) part names \(count) authors; at most \(SyncLimits.maxVectorPart) allowed")
        }
        guard r.remaining >= count * 48 else {
            throw SyncError(.malformed, "\(what) announces \(count) entries but only \(r.remaining) bytes follow")
        }
        var vector: [Entry] = []
        vector.reserveCapacity(count)
        for i in 0..<count {
            guard let author = PublicKey(bytes: try r.raw(32, "\(what) author \(i)")) else {
                throw SyncError(.malformed, "\(what) author \(i) has the wrong length")
            }
            let seq = try r.u64("\(what) seq \(i)")
            guard seq >= 1, seq <= Limits.maxSeq else {
                throw SyncError(.malformed, "\(what) seq \(i) is \(seq); must be 1 ... \(Limits.maxSeq) (zero entries are omitted)")
            }
            let digest = try r.u64("\(what) digest \(i)")
            if let last = vector.last, !(last.author < author) {
                throw SyncError(.malformed, "\(what) authors are not in strictly ascending order at entry \(i)")
            }
            vector.append(Entry(author: author, seq: seq, digest: digest))
        }
        return (vector, flags & 1 == 1)
    }
}

/// The position of a record in its author's log, read from the fixed prefix of its canonical
/// encoding without decoding the rest (full decoding and verification are the replica's).
public struct RecordPosition: Hashable, Sendable {
    public let author: PublicKey
    public let seq: UInt64

    public init(author: PublicKey, seq: UInt64) { self.author = author; self.seq = seq }

    /// Reads magic, version, type, author and seq; refuses what cannot be a record.
    public static func peek(_ bytes: [UInt8]) throws(SyncError) -> RecordPosition {
        var r = ByteReader(bytes)
        do {
            guard try r.raw(3, "magic") == Record.magic else {
                throw SyncError(.malformed, "does not start with the record magic \"MMR\"")
            }
            _ = try r.u8("version")
            _ = try r.u8("type")
            guard let author = PublicKey(bytes: try r.raw(32, "author")) else {
                throw SyncError(.malformed, "author key has the wrong length")
            }
            let seq = try r.u64("seq")
            guard seq >= 1, seq <= Limits.maxSeq else {
                throw SyncError(.malformed, "record sequence number \(seq) is outside 1 ... \(Limits.maxSeq)")
            }
            return RecordPosition(author: author, seq: seq)
        } catch let e as SyncError {
            throw e
        } catch let e as RecordError {
            throw SyncError(.malformed, "record: \(e.message)")
        } catch {
            throw SyncError(.malformed, "\(error)")
        }
    }
}
