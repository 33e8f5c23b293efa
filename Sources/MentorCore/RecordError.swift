/// Why a record (or a body, or a batch) was refused. Each refusal has its own code so callers
/// and tests can match by name; the message says what was wrong.
public struct RecordError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public var description: String { name }

        /// The signature does not verify against the author's key.
        public static let badSignature = Code(name: "bad-signature")
        /// The type byte names no known record type.
        public static let unknownType = Code(name: "unknown-type")
        /// The format version is not one this build reads.
        public static let unsupportedVersion = Code(name: "unsupported-version")
        /// The bytes do not follow the canonical encoding.
        public static let malformed = Code(name: "malformed")
        /// The body is larger than `Limits.maxBodyBytes`.
        public static let bodyTooLarge = Code(name: "body-too-large")
        /// The clock names more writers than the object has.
        public static let clockTooLarge = Code(name: "clock-too-large")
        /// The sequence number is further ahead of what we hold than we are willing to hold back.
        public static let sequenceGapTooLarge = Code(name: "sequence-gap-too-large")
        /// The hold-back area for out-of-order records is full.
        public static let pendingFull = Code(name: "pending-full")
        /// A second, different record with an author and sequence number we already hold.
        public static let equivocation = Code(name: "equivocation")
        /// A well-formed body whose values are outside their limits (a name too long, an
        /// unknown role, a non-canonical course, an empty chat message).
        public static let invalidBody = Code(name: "invalid-body")
        /// The record's timestamp is too far in the future.
        public static let timestampInFuture = Code(name: "timestamp-in-future")
        /// An account's first record (seq 1) without the proof of work its network asks for: not
        /// a profile card, no work field, or too few leading zero bits (PROTOCOL.md §6.1). An
        /// offence: the difficulty is a parameter of the network, like its key, so every node
        /// of the network refuses the record and an honest relay never passes it on.
        public static let insufficientWork = Code(name: "insufficient-work")
        /// A record signed by a device key after the account (or the device itself) revoked it:
        /// its seq is above the revocation's last seq. No offence — the relay may not hold the
        /// revocation yet — and final: it never becomes valid.
        public static let deviceRevoked = Code(name: "device-revoked")
        /// A record signed by a device key and dated after the device's certificate expired.
        /// No offence (the relay may not hold the certificate) and final.
        public static let deviceExpired = Code(name: "device-expired")
        /// An edit or deletion of a post, or a deletion or hiding of a comment, by an account
        /// other than the one allowed (the post's author; the comment's author to delete it).
        /// Decided against the post or comment the replica holds, so no offence — a relay that
        /// did not hold it could not tell — and final: the record is remembered and never stored.
        public static let notAuthor = Code(name: "not-author")

        /// Whether a peer that sends a record refused with this code has proved that it
        /// misbehaves (PROTOCOL.md §10, "Whose fault"). Every node checks the same things before
        /// it stores or relays a record, so an honest relay never passes on a record that fails
        /// a check of the record alone (signature, encoding, type, version, sizes, body values):
        /// those are offences. The others depend on what the receiving replica holds or on its
        /// clock — a third fork variant the relay could not know was a third, a timestamp ahead
        /// of the receiver's clock, a full hold-back area, a gap past what the receiver holds —
        /// and are nobody's fault on that link: the record is held or dropped quietly.
        public var isOffence: Bool {
            switch self {
            case .sequenceGapTooLarge, .pendingFull, .equivocation, .timestampInFuture, .deviceRevoked, .deviceExpired, .notAuthor: false
            default: true
            }
        }

        /// A refusal that is not an offence and that a later try may turn into a stored record
        /// (the receiver should ask again later): everything not an offence but equivocation,
        /// whose outcome depends only on the set of variants and so never changes.
        public var isDeferral: Bool { !isOffence && self != .equivocation && self != .deviceRevoked && self != .deviceExpired && self != .notAuthor }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
