/// A record type is one schema: its type byte, its name, how many other writers its clock may
/// name, how the public replica merges it, and a canonical body codec with validation.
/// Adding a type means writing one struct conforming to this protocol, listing it in
/// `RecordSchemas.all`, and testing it.
public protocol RecordSchema: Sendable {
    static var type: RecordType { get }
    static var name: String { get }
    /// How many writers other than the author a record's clock may name.
    static var maxClockEntries: Int { get }
    /// How the public (key-less) replica materializes records of this type.
    static var publicMerge: PublicMerge { get }
    /// Decodes and validates a body; throws `.malformed` or `.invalidBody`.
    init(body: [UInt8]) throws(RecordError)
    /// Validates a body as the body of the author's record `seq` (a rule may depend on it: the
    /// proof-of-work field belongs only at seq 1). Defaults to `init(body:)`.
    static func validate(body: [UInt8], seq: UInt64) throws(RecordError)
    /// Rules that tie the body to the envelope (who may sign a record of this type); the body
    /// was validated already. Defaults to none.
    static func validate(record: Record) throws(RecordError)
    /// The canonical body bytes.
    var body: [UInt8] { get }
}

/// How the public replica folds a record type into its materialized state.
public enum PublicMerge: Sendable, Equatable {
    /// Each field present in the body is a write to the register (author, field): multi-value
    /// registers ordered by effective clock, concurrent writers kept as conflicts.
    case fieldRegisters
    /// End-to-end encrypted: the public replica keeps the record as an opaque member of a
    /// grow-only set; only the two accounts it concerns materialize its meaning.
    case sealed
    /// An account's certificates and revocations of its device keys: they decide which keys
    /// speak for the account (PROTOCOL.md §6.2).
    case devices
    /// Sealed to the author's own account: only its nodes read it (a pass, §7.6).
    case note
    /// One public register per (author's account, target): the newest says whether it follows (§6.5).
    case follow
    /// Posts, comments and likes of posts: public, merged per post (PROTOCOL.md §6.6).
    case posts
    /// Quiz results: one per (account, day), the earliest; the score computed here (§15.4).
    case quiz
    /// Meetups, joins and rosters: public, read per meetup (PROTOCOL.md §6.7).
    case meetups
}

public enum RecordSchemas {
    /// Every record type this build knows.
    public static let all: [any RecordSchema.Type] = [ProfileCard.self, Like.self, ChatMessage.self, Unmatch.self,
                                                      DeviceCertificate.self, DeviceRevocation.self, Note.self,
                                                      Contact.self, Post.self, PostComment.self, PostLike.self,
                                                      Follow.self, QuizResult.self,
                                                      Meetup.self, MeetupJoin.self, MeetupRoster.self]

    private static let byType: [RecordType: any RecordSchema.Type] = {
        var table: [RecordType: any RecordSchema.Type] = [:]
        for s in all { table[s.type] = s }
        return table
    }()

    public static func schema(for type: RecordType) -> (any RecordSchema.Type)? { byType[type] }
}

extension RecordSchema {
    public static func validate(body: [UInt8]) throws(RecordError) { _ = try Self(body: body) }
    public static func validate(body: [UInt8], seq: UInt64) throws(RecordError) { _ = try Self(body: body) }
    public static func validate(record: Record) throws(RecordError) {}
}

/// A photo as a card refers to it: content-addressed by BLAKE2b-256, with its size and format.
public struct PhotoRef: Hashable, Sendable {
    public enum Format: UInt8, Sendable, CaseIterable {
        case jpeg = 1, png = 2, webp = 3
        public var mimeType: String {
            switch self { case .jpeg: "image/jpeg"; case .png: "image/png"; case .webp: "image/webp" }
        }
    }
    public let hash: [UInt8]
    public let size: UInt32
    public let format: Format

    public init(hash: [UInt8], size: UInt32, format: Format) {
        self.hash = hash
        self.size = size
        self.format = format
    }

    /// Sniffs the format from content (magic bytes), never from a file name.
    public static func sniff(_ data: [UInt8]) -> Format? {
        if data.count >= 3, data[0] == 0xFF, data[1] == 0xD8, data[2] == 0xFF { return .jpeg }
        if data.count >= 8, data[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] { return .png }
        if data.count >= 12, data[0..<4] == Array("RIFF".utf8)[...], data[8..<12] == Array("WEBP".utf8)[...] { return .webp }
        return nil
    }

    /// The bytes of one reference in a card's photo field.
    public static let encodedSize = 37

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 37)
        w.raw(hash); w.u32(size); w.u8(format.rawValue)
        return w.bytes
    }

    public static func decode(_ v: [UInt8]) throws(RecordError) -> PhotoRef {
        guard v.count == 37 else { throw RecordError(.malformed, "profile photo reference must be 37 bytes, is \(v.count)") }
        var r = ByteReader(v)
        let hash = try r.raw(32, "photo hash")
        let size = try r.u32("photo size")
        guard let format = Format(rawValue: try r.u8("photo format")) else {
            throw RecordError(.invalidBody, "profile photo has an unknown format code")
        }
        guard size > 0, Int(size) <= Limits.maxPhotoBytes else {
            throw RecordError(.invalidBody, "profile photo is \(size) bytes; at most \(Limits.maxPhotoBytes) allowed")
        }
        return PhotoRef(hash: hash, size: size, format: format)
    }
}

extension PhotoRef {
    /// A card's photo field (field 8, PROTOCOL.md §6): 0 to `ProfileCard.maxPhotos` references
    /// of 37 bytes, concatenated, the main photo first. One photo encodes as it did before the
    /// field was a list; the empty value means no photo.
    public static func encodeList(_ photos: [PhotoRef]) -> [UInt8] {
        photos.flatMap(\.encoded)
    }

    public static func decodeList(_ v: [UInt8]) throws(RecordError) -> [PhotoRef] {
        guard v.count % encodedSize == 0 else {
            throw RecordError(.malformed, "profile photos field is \(v.count) bytes; it must be a list of \(encodedSize)-byte photo references (a multiple of \(encodedSize))")
        }
        let count = v.count / encodedSize
        guard count <= ProfileCard.maxPhotos else {
            throw RecordError(.invalidBody, "profile names \(count) photos; at most \(ProfileCard.maxPhotos) allowed")
        }
        var out: [PhotoRef] = []
        out.reserveCapacity(count)
        for i in 0..<count {
            let ref = try decode(Array(v[(i * encodedSize)..<((i + 1) * encodedSize)]))
            guard !out.contains(where: { $0.hash == ref.hash }) else {
                throw RecordError(.invalidBody, "profile names photo \(Hex.encode(ref.hash).prefix(16)) twice; each photo may appear once")
            }
            out.append(ref)
        }
        return out
    }
}
