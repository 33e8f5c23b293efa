/// An Ed25519 public key as a value: the identity of an account or a node.
/// Signing and verification live in MentorCrypto; the core only compares and prints keys.
public struct PublicKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let length = 32
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    public static func < (a: PublicKey, b: PublicKey) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// Keys are uniformly distributed: the first 8 bytes hash as well as all 32 (equality
    /// still compares all of them).
    public func hash(into h: inout Hasher) {
        var prefix: UInt64 = 0
        for b in bytes.prefix(8) { prefix = prefix << 8 | UInt64(b) }
        h.combine(prefix)
    }

    public static func == (a: PublicKey, b: PublicKey) -> Bool { a.bytes == b.bytes }

    /// The printed, typo-checked form: bech32 with prefix "mm" ("mm1" + 52 data + 6 checksum characters).
    public var id: String { Bech32.encode(hrp: AccountID.hrp, data: bytes) }
    public var description: String { id }
    /// A short form for logs and tables: the first 12 characters of the ID.
    public var shortID: String { String(id.prefix(12)) }
}

/// Parsing what a person typed where an account (or node) ID is expected.
public enum AccountID {
    public static let hrp = "mm"
    public static let prefix = "mm1"
    /// Characters that must follow "mm1" in a prefix for it to be accepted.
    public static let minimumPrefixLength = 6
    public static let fullLength = 61

    public enum Query: Equatable, Sendable {
        /// A complete, checksum-valid ID.
        case exact(PublicKey)
        /// A prefix (normalized to lower case, including "mm1") to look up among known IDs.
        case prefix(String)
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Parses a full ID or a prefix. A full-length ID with a bad checksum is a typo, not a prefix.
    public static func parse(_ input: String) throws(ParseError) -> Query {
        let text = String(input.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()).lowercased()
        let body = text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
        if text.count == fullLength && text.hasPrefix(prefix) {
            do {
                let data = try Bech32.decode(text, expectedHRP: hrp)
                guard let key = PublicKey(bytes: data) else {
                    throw ParseError(description: "'\(input)' does not hold a 32-byte key")
                }
                return .exact(key)
            } catch let e as Bech32.DecodeError {
                let why: String
                switch e {
                case .badChecksum: why = "its checksum does not match, so it has a typo"
                case .invalidCharacter(let c): why = "it contains '\(c)', which never appears in IDs (no b, i, o or 1 after mm1)"
                default: why = "it is not a valid MentorMate ID (\(e))"
                }
                throw ParseError(description: "'\(input)': \(why); copy the ID again from `mentormate whoami` or `mentormate feed`")
            } catch let e as ParseError {
                throw e
            } catch {
                throw ParseError(description: "'\(input)' is not a valid ID")
            }
        }
        guard Bech32.isDataCharacters(body) else {
            throw ParseError(description: "'\(input)' contains characters that never appear in IDs (IDs start with mm1 and use 0-9 and a-z without b, i, o and 1)")
        }
        guard body.count >= minimumPrefixLength else {
            throw ParseError(description: "'\(input)' is too short: give at least \(minimumPrefixLength) characters after mm1")
        }
        guard body.count < fullLength - prefix.count else {
            throw ParseError(description: "'\(input)' is longer than an ID")
        }
        return .prefix(prefix + body)
    }

    public enum Resolution: Equatable, Sendable {
        case found(PublicKey)
        case notFound
        case ambiguous([PublicKey])
    }

    /// Resolves a query against the known keys (pure; the store supplies candidates).
    public static func resolve(_ query: Query, among known: some Sequence<PublicKey>) -> Resolution {
        switch query {
        case .exact(let key):
            return known.contains(key) ? .found(key) : .notFound
        case .prefix(let p):
            let matches = known.filter { $0.id.hasPrefix(p) }.sorted()
            switch matches.count {
            case 0: return .notFound
            case 1: return .found(matches[0])
            default: return .ambiguous(matches)
            }
        }
    }
}
