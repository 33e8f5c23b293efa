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
    /// Bytes of one `recon` message the sender fills at most (a side with more to say keeps the
    /// rest for its next message), under the 1 MiB frame.
    public static let maxReconBytes = 1_000_000
    /// Short IDs in one `ids` or `need` item, at most (what fits a frame).
    public static let maxReconIDs = 131_072
    /// Records in one `records` batch.
    public static let maxBatchRecords = 256
    /// Bytes of one `records` message, encoded (so that it fits one frame: 1 MiB of plaintext).
    public static let maxBatchBytes = 1024 * 1024
    /// Record IDs in one `ihave` or `graft` (lazy push, PROTOCOL.md §13.7): 32 KiB of IDs.
    public static let maxTreeIDs = 1024
    /// Bytes of the offer in one `link` message (PROTOCOL.md §13.8: `LinkOffer.maxEncodedLength`,
    /// an offer with a 64-byte label).
    public static let maxLinkOffer = 159
    /// The largest record encoding `Record.decode` accepts.
    public static let maxRecordBytes = Record.maxEncodedBytes
}

/// One item of a `recon` message (sync protocol v2, PROTOCOL.md §13.3): what the sender says
/// about the node (depth, prefix) of its reconciliation tree (`ReconTree`).
public struct ReconItem: Equatable, Hashable, Sendable {
    /// A non-empty child in a `split`: its nibble, count and fingerprint.
    public struct Child: Equatable, Hashable, Sendable {
        public let nibble: UInt8
        public let count: UInt32
        public let fingerprint: UInt64
        public init(nibble: UInt8, count: UInt32, fingerprint: UInt64) {
            self.nibble = nibble; self.count = count; self.fingerprint = fingerprint
        }
    }

    public enum Kind: Equatable, Hashable, Sendable {
        /// My node here: its count (≥ 1) and fingerprint.
        case fingerprint(count: UInt32, fingerprint: UInt64)
        /// My non-empty children of a node whose fingerprint did not match (depth < 4), by
        /// nibble ascending; a child not named is empty on my side.
        case split([Child])
        /// The short IDs of every ID I hold under the node, ascending (may be none).
        case ids([UInt64])
        /// Send me the records with these short IDs (from your `ids` of this node).
        case need([UInt64])
    }

    public let depth: UInt8
    public let prefix: UInt16
    public let kind: Kind

    public init(depth: UInt8, prefix: UInt16, _ kind: Kind) { self.depth = depth; self.prefix = prefix; self.kind = kind }

    /// Bytes of the item on the wire.
    public var encodedSize: Int {
        switch kind {
        case .fingerprint: 4 + 12
        case .split(let c): 4 + 2 + 12 * c.count
        case .ids(let s), .need(let s): 4 + 4 + 8 * s.count
        }
    }

    enum KindTag: UInt8 { case fingerprint = 1, split = 2, ids = 3, need = 4 }
}

/// The messages of the anti-entropy protocol, v2 (PROTOCOL.md §13.3). Canonical encoding
/// (integers big-endian):
///
///     hello    0x01 ‖ version u8 (2) ‖ salt 16 bytes ‖ held u64 (the size of the set, informational)
///     records  0x02 ‖ count u16 ‖ count × (length u32 ‖ record encoding)
///              1 ... 256 records, each ≤ SyncLimits.maxRecordBytes, ≤ 1 MiB in all
///     ack      0x03 ‖ batches u32 (≥ 1)
///     want     0x04 ‖ author 32 bytes ‖ from seq u64 (≥ 1)
///     wantBlob 0x05 ‖ BLAKE2b-256 hash 32 bytes
///     blob     0x06 ‖ hash 32 bytes ‖ total u32 ‖ offset u32 ‖ length u32 ‖ length bytes
///              total 0 (with offset 0, length 0): not held; else total ≤ 4 MiB, length 1 ... 256 KiB,
///              offset + length ≤ total
///     here     0x07 ‖ count u16 ‖ count × account key 32 bytes (strictly ascending, ≤ 1024)
///     (0x08, v1's summary, is gone: receiving it is a protocol violation)
///     recon    0x09 ‖ count u16 ‖ count × item
///              item = depth u8 (0...4) ‖ prefix u16 (no bits below the depth) ‖ kind u8 ‖ body
///              1 fingerprint: count u32 (≥ 1) ‖ fp u64
///              2 split (depth < 4): bitmap u16 (≥ 1 bit) ‖ per set bit ascending: count u32 (≥ 1) ‖ fp u64
///              3 ids:  n u32 ‖ n × short ID u64, strictly ascending (n may be 0)
///              4 need: n u32 (≥ 1) ‖ n × short ID u64, strictly ascending
///     caughtUp 0x0a
///     ihave    0x0b ‖ count u16 (1 ... 1024) ‖ count × record ID 32 bytes (strictly ascending)
///     prune    0x0c
///     graft    0x0d ‖ count u16 (1 ... 1024) ‖ count × record ID 32 bytes (strictly ascending)
///     link     0x0e ‖ length u16 (0 ... 159) ‖ length bytes: a device offered for linking
///              (PROTOCOL.md §13.8; the bytes are a `LinkOffer`, which this layer does not read),
///              or none: the sender withdraws what it offered
///
/// A hello of another version decodes (version and nothing else) so that the session can say
/// which version the peer speaks. Decoding is strict: every count and length is checked against
/// its limit and against the bytes that remain before anything is allocated, and trailing bytes
/// are refused.
public enum SyncMessage: Equatable, Sendable {
    /// 3: records of format version 2 (device-signed) and types 5 (device) and 6 (revoke).
    /// 4: record types 8-16 (contact, posts, follows, quiz results, meetups), which a
    /// version-3 node would take for offences (`unknown-type`).
    /// 5: profile field 18, the membership certificate (PROTOCOL.md §6.8), which a version-4
    /// node would take for an offence (`malformed`: an unknown field).
    public static let protocolVersion: UInt8 = 5
    /// Bytes of each side's salt in its hello.
    public static let saltBytes = 16

    /// `salt` is empty and `held` 0 for a hello of another version (whose body is not read).
    case hello(version: UInt8, salt: [UInt8], held: UInt64)
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
    /// One step of a reconciliation round.
    case recon([ReconItem])
    /// Every record the round just finished found the receiver lacks has been sent.
    case caughtUp
    /// Lazy push (PROTOCOL.md §13.7): the sender just applied the records with these IDs
    /// (BLAKE2b-256 of their encodings) and did not send their bodies on this link.
    case ihave([[UInt8]])
    /// Stop sending me bodies eagerly (I got them from elsewhere first): send `ihave` instead.
    case prune
    /// Send me the records with these IDs, and send bodies eagerly again.
    case graft([[UInt8]])
    /// Linking a device (PROTOCOL.md §13.8): the encoding of the sender's `LinkOffer` (checked by
    /// the shell, which holds the cryptography), or empty: the sender withdraws its offers.
    case link([UInt8])

    /// A v2 hello.
    public static func hello(salt: [UInt8], held: UInt64) -> SyncMessage {
        .hello(version: protocolVersion, salt: salt, held: held)
    }

    enum Tag: UInt8 { case hello = 1, records = 2, ack = 3, want = 4, wantBlob = 5, blob = 6, here = 7, summary = 8, recon = 9, caughtUp = 10, ihave = 11, prune = 12, graft = 13, link = 14 }
    /// The first byte of an encoded `here`, for a shell that rates messages before decoding them.
    public static let hereTag = Tag.here.rawValue
    /// The first byte of an encoded `recon` (rated by the shell like `here`).
    public static let reconTag = Tag.recon.rawValue
    /// The first byte of an encoded `link` (rated by the shell like `here`).
    public static let linkTag = Tag.link.rawValue
    /// The first bytes of the lazy-push messages (rated together by the shell).
    public static let treeTags: Set<UInt8> = [Tag.ihave.rawValue, Tag.prune.rawValue, Tag.graft.rawValue]

    public var encoded: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .hello(let version, let salt, let held):
            w.u8(Tag.hello.rawValue)
            w.u8(version)
            w.raw(salt)
            w.u64(held)
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
        case .recon(let items):
            w.u8(Tag.recon.rawValue)
            w.u16(UInt16(items.count))
            for item in items { Self.encode(item, into: &w) }
        case .caughtUp:
            w.u8(Tag.caughtUp.rawValue)
        case .ihave(let ids), .graft(let ids):
            if case .ihave = self { w.u8(Tag.ihave.rawValue) } else { w.u8(Tag.graft.rawValue) }
            w.u16(UInt16(ids.count))
            for id in ids { w.raw(id) }
        case .prune:
            w.u8(Tag.prune.rawValue)
        case .link(let offer):
            w.u8(Tag.link.rawValue)
            w.u16(UInt16(offer.count))
            w.raw(offer)
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
                guard version == protocolVersion else {
                    // Another version's body is its own business: say which version it is.
                    return .hello(version: version, salt: [], held: 0)
                }
                let salt = try r.raw(saltBytes, "hello salt")
                message = .hello(version: version, salt: salt, held: try r.u64("hello held"))
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
                throw SyncError(.protocolViolation, "a summary message (type 8): sync protocol v2 has none (v1 had)")
            case .recon:
                let count = Int(try r.u16("recon item count"))
                guard r.remaining >= count * 4 else {
                    throw SyncError(.malformed, "recon announces \(count) items but only \(r.remaining) bytes follow")
                }
                var items: [ReconItem] = []
                items.reserveCapacity(count)
                for i in 0..<count { items.append(try Self.decodeItem(&r, i)) }
                message = .recon(items)
            case .caughtUp:
                message = .caughtUp
            case .ihave:
                message = .ihave(try Self.decodeIDs(&r, "ihave"))
            case .prune:
                message = .prune
            case .graft:
                message = .graft(try Self.decodeIDs(&r, "graft"))
            case .link:
                let length = Int(try r.u16("link offer length"))
                guard length <= SyncLimits.maxLinkOffer else {
                    throw SyncError(.tooLarge, "link offer of \(length) bytes; at most \(SyncLimits.maxLinkOffer) allowed")
                }
                message = .link(try r.raw(length, "link offer"))
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
    static func encode(_ item: ReconItem, into w: inout ByteWriter) {
        w.u8(item.depth)
        w.u16(item.prefix)
        switch item.kind {
        case .fingerprint(let count, let fp):
            w.u8(ReconItem.KindTag.fingerprint.rawValue)
            w.u32(count)
            w.u64(fp)
        case .split(let children):
            w.u8(ReconItem.KindTag.split.rawValue)
            w.u16(children.reduce(UInt16(0)) { $0 | 1 << UInt16($1.nibble) })
            for c in children { w.u32(c.count); w.u64(c.fingerprint) }
        case .ids(let ids), .need(let ids):
            if case .ids = item.kind { w.u8(ReconItem.KindTag.ids.rawValue) } else { w.u8(ReconItem.KindTag.need.rawValue) }
            w.u32(UInt32(ids.count))
            for id in ids { w.u64(id) }
        }
    }

    /// The IDs of an `ihave` or `graft`: 1 ... `SyncLimits.maxTreeIDs` of 32 bytes each,
    /// strictly ascending (so none is named twice), all within the bytes left.
    static func decodeIDs(_ r: inout ByteReader, _ what: String) throws -> [[UInt8]] {
        let count = Int(try r.u16("\(what) count"))
        guard count >= 1 else { throw SyncError(.malformed, "an empty \(what)") }
        guard count <= SyncLimits.maxTreeIDs else {
            throw SyncError(.tooLarge, "\(what) names \(count) record IDs; at most \(SyncLimits.maxTreeIDs) allowed")
        }
        guard r.remaining == count * 32 else {
            throw SyncError(.malformed, "\(what) announces \(count) record IDs (\(count * 32) bytes) but \(r.remaining) bytes follow")
        }
        var ids: [[UInt8]] = []
        ids.reserveCapacity(count)
        for i in 0..<count {
            let id = try r.raw(32, "\(what) ID \(i)")
            if let last = ids.last, !last.lexicographicallyPrecedes(id) {
                throw SyncError(.malformed, "\(what) IDs are not strictly ascending at \(i)")
            }
            ids.append(id)
        }
        return ids
    }

    /// One item, checked: depth 0...4, no prefix bits below the depth, known kind, counts ≥ 1
    /// where they must be, short IDs strictly ascending and within the bytes left.
    static func decodeItem(_ r: inout ByteReader, _ i: Int) throws -> ReconItem {
        let depth = try r.u8("recon item \(i) depth")
        guard Int(depth) <= ReconTree.leafDepth else {
            throw SyncError(.malformed, "recon item \(i) has depth \(depth); the tree has depths 0 ... \(ReconTree.leafDepth)")
        }
        let prefix = try r.u16("recon item \(i) prefix")
        let below: UInt16 = depth == 0 ? .max : .max >> UInt16(4 * depth)
        guard prefix & below == 0 else {
            throw SyncError(.malformed, "recon item \(i) prefix \(prefix) has bits below its depth \(depth)")
        }
        let tag = try r.u8("recon item \(i) kind")
        switch ReconItem.KindTag(rawValue: tag) {
        case .fingerprint:
            let count = try r.u32("recon item \(i) count")
            guard count >= 1 else { throw SyncError(.malformed, "recon item \(i): a fingerprint of an empty node") }
            return ReconItem(depth: depth, prefix: prefix, .fingerprint(count: count, fingerprint: try r.u64("recon item \(i) fingerprint")))
        case .split:
            guard Int(depth) < ReconTree.leafDepth else { throw SyncError(.malformed, "recon item \(i): a split of a leaf") }
            let bitmap = try r.u16("recon item \(i) bitmap")
            guard bitmap != 0 else { throw SyncError(.malformed, "recon item \(i): a split with no children (an empty node is sent as ids)") }
            var children: [ReconItem.Child] = []
            for nibble in 0..<16 where bitmap & 1 << UInt16(nibble) != 0 {
                let count = try r.u32("recon item \(i) child count")
                guard count >= 1 else { throw SyncError(.malformed, "recon item \(i): child \(nibble) is named with count 0") }
                children.append(.init(nibble: UInt8(nibble), count: count, fingerprint: try r.u64("recon item \(i) child fingerprint")))
            }
            return ReconItem(depth: depth, prefix: prefix, .split(children))
        case .ids, .need:
            let isNeed = tag == ReconItem.KindTag.need.rawValue
            let n = Int(try r.u32("recon item \(i) short-ID count"))
            guard n <= SyncLimits.maxReconIDs else {
                throw SyncError(.tooLarge, "recon item \(i) names \(n) short IDs; at most \(SyncLimits.maxReconIDs) allowed")
            }
            guard r.remaining >= n * 8 else {
                throw SyncError(.malformed, "recon item \(i) announces \(n) short IDs but only \(r.remaining) bytes follow")
            }
            if isNeed, n == 0 { throw SyncError(.malformed, "recon item \(i): a need of nothing") }
            var ids: [UInt64] = []
            ids.reserveCapacity(n)
            for j in 0..<n {
                let id = try r.u64("recon item \(i) short ID \(j)")
                if let last = ids.last, !(last < id) {
                    throw SyncError(.malformed, "recon item \(i) short IDs are not strictly ascending at \(j)")
                }
                ids.append(id)
            }
            return ReconItem(depth: depth, prefix: prefix, isNeed ? .need(ids) : .ids(ids))
        case nil:
            throw SyncError(.malformed, "recon item \(i) has unknown kind \(tag)")
        }
    }
}

/// The position of a record in its author's log, read from the fixed prefix of its canonical
/// encoding without decoding the rest (full decoding and verification are the replica's).
public struct RecordPosition: Hashable, Sendable {
    public let author: PublicKey
    public let seq: UInt64
    /// The account the record belongs to: its author, or (format version 2) the account the
    /// device key signs for.
    public let account: PublicKey

    public init(author: PublicKey, seq: UInt64, account: PublicKey? = nil) {
        self.author = author; self.seq = seq; self.account = account ?? author
    }

    /// Reads magic, version, type, (account,) author and seq; refuses what cannot be a record.
    public static func peek(_ bytes: [UInt8]) throws(SyncError) -> RecordPosition {
        var r = ByteReader(bytes)
        do {
            guard try r.raw(3, "magic") == Record.magic else {
                throw SyncError(.malformed, "does not start with the record magic \"MMR\"")
            }
            let version = try r.u8("version")
            _ = try r.u8("type")
            // Format version 2 (a device key signs) names the account first (PROTOCOL.md §4).
            let account = version == Record.deviceVersion ? PublicKey(bytes: try r.raw(32, "account")) : nil
            guard let author = PublicKey(bytes: try r.raw(32, "author")) else {
                throw SyncError(.malformed, "author key has the wrong length")
            }
            let seq = try r.u64("seq")
            guard seq >= 1, seq <= Limits.maxSeq else {
                throw SyncError(.malformed, "record sequence number \(seq) is outside 1 ... \(Limits.maxSeq)")
            }
            return RecordPosition(author: author, seq: seq, account: account)
        } catch let e as SyncError {
            throw e
        } catch let e as RecordError {
            throw SyncError(.malformed, "record: \(e.message)")
        } catch {
            throw SyncError(.malformed, "\(error)")
        }
    }
}
