/// A campus membership certificate (PROTOCOL.md §6.8): a certifying authority's statement that
/// an account belongs to someone who proved an address at a mail domain. It names the account
/// key and the domain — never the address — and is carried in field 18 of the account's card.
///
/// ```
/// magic "MMC" ‖ version 0x01 ‖ ca (32) ‖ account (32) ‖ issued u64 ‖ expires u64 ‖
///   domain length u8 ‖ domain ‖ signature (64, Ed25519 by ca over every byte before it)
/// ```
///
/// The core checks the form; the signature is checked where signatures are
/// (`MembershipCertificate.verifySignature` in MentorCrypto), before anything is stored.
public struct MembershipCertificate: Equatable, Hashable, Sendable {
    public static let magic: [UInt8] = Array("MMC".utf8)
    public static let version: UInt8 = 1
    public static let signatureLength = 64
    public static let maxDomainBytes = 253
    /// The fixed bytes around the domain: 3 + 1 + 32 + 32 + 8 + 8 + 1 before it, 64 after.
    public static let fixedLength = 85 + signatureLength
    public static let maxLength = fixedLength + maxDomainBytes
    /// The printed form of a CA key: bech32 with this prefix ("mmca1…"), so that it is never
    /// mistaken for an account ID.
    public static let keyHRP = "mmca"

    /// The certifying authority's Ed25519 key.
    public let ca: PublicKey
    /// The account certified.
    public let account: PublicKey
    /// Milliseconds since the Unix epoch: when it was signed, and when it stops counting.
    public let issued: UInt64
    public let expires: UInt64
    /// The mail domain the account's person proved an address at, in canonical form.
    public let domain: String
    public let signature: [UInt8]

    /// The bytes the CA signs: the encoding without its signature.
    public var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: Self.fixedLength + domain.utf8.count)
        w.raw(Self.magic); w.u8(Self.version)
        w.raw(ca.bytes); w.raw(account.bytes)
        w.u64(issued); w.u64(expires)
        w.u8(UInt8(domain.utf8.count)); w.raw(Array(domain.utf8))
        return w.bytes
    }

    public var encoded: [UInt8] { signedBytes + signature }

    /// Whether it counts at `now` (ms): between its issue and its expiry.
    public func isCurrent(at now: UInt64) -> Bool { issued <= now && now < expires }

    /// A certificate from its parts (the signature as made by `sign` in MentorCrypto).
    public init(ca: PublicKey, account: PublicKey, issued: UInt64, expires: UInt64, domain: String,
                signature: [UInt8]) throws(RecordError) {
        guard signature.count == Self.signatureLength else {
            throw RecordError(.malformed, "membership certificate signature must be 64 bytes, is \(signature.count)")
        }
        try Self.checkDomain(domain)
        guard issued < expires else {
            throw RecordError(.invalidBody, "membership certificate expires (\(expires)) no later than it is issued (\(issued))")
        }
        self.ca = ca; self.account = account; self.issued = issued; self.expires = expires
        self.domain = domain; self.signature = signature
    }

    /// Decodes the canonical form (every rule above; the signature is not checked here).
    public init(encoded bytes: [UInt8]) throws(RecordError) {
        var r = ByteReader(bytes)
        guard try r.raw(3, "membership certificate magic") == Self.magic else {
            throw RecordError(.malformed, "membership certificate does not start with 'MMC'")
        }
        let version = try r.u8("membership certificate version")
        guard version == Self.version else {
            throw RecordError(.malformed, "membership certificate version \(version) is not 1")
        }
        let ca = PublicKey(bytes: try r.raw(32, "membership certificate CA key"))!
        let account = PublicKey(bytes: try r.raw(32, "membership certificate account"))!
        let issued = try r.u64("membership certificate issue time")
        let expires = try r.u64("membership certificate expiry")
        let length = Int(try r.u8("membership certificate domain length"))
        guard let domain = String(validating: try r.raw(length, "membership certificate domain"), as: UTF8.self) else {
            throw RecordError(.malformed, "membership certificate domain is not UTF-8")
        }
        let signature = try r.raw(Self.signatureLength, "membership certificate signature")
        guard r.isAtEnd else { throw RecordError(.malformed, "\(r.remaining) trailing bytes after the membership certificate") }
        try self.init(ca: ca, account: account, issued: issued, expires: expires, domain: domain, signature: signature)
    }

    /// A mail domain in canonical form: lower-case ASCII labels of letters, digits and hyphens
    /// (1–63 bytes, no hyphen at either end), at least two, joined by single dots, 253 bytes
    /// at most — what is left of an address after its '@', lower-cased.
    public static func checkDomain(_ domain: String) throws(RecordError) {
        let bytes = Array(domain.utf8)
        guard (1...maxDomainBytes).contains(bytes.count) else {
            throw RecordError(.invalidBody, "membership domain is \(bytes.count) bytes; 1 to \(maxDomainBytes) allowed")
        }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else {
            throw RecordError(.invalidBody, "membership domain '\(domain)' has one label; a mail domain has at least two (campus.edu)")
        }
        for label in labels {
            guard (1...63).contains(label.count),
                  label.allSatisfy({ isDomainByte($0) }),
                  label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                throw RecordError(.invalidBody, "membership domain '\(domain)' is not canonical: lower-case letters, digits and inner hyphens in labels of 1–63 bytes, joined by single dots")
            }
        }
    }

    private static func isDomainByte(_ b: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || b == UInt8(ascii: "-")
    }

    /// The domain of a mail address, lower-cased (nil when it is no address: one '@', a
    /// non-empty local part, a canonical domain after it).
    public static func domain(ofAddress address: String) -> String? {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64 else { return nil }
        let domain = parts[1].lowercased()
        guard (try? checkDomain(domain)) != nil else { return nil }
        return domain
    }

    /// The printed form of a CA key ("mmca1…").
    public static func printKey(_ key: PublicKey) -> String { Bech32.encode(hrp: keyHRP, data: key.bytes) }

    /// Parses a printed CA key; the error names the expected form.
    public static func parseKey(_ text: String) -> PublicKey? {
        let trimmed = text.trimmingASCIIWhitespace.lowercased()
        guard let data = try? Bech32.decode(trimmed, expectedHRP: keyHRP) else { return nil }
        return PublicKey(bytes: data)
    }
}

extension String {
    /// The text without ASCII spaces, tabs and line ends at either end.
    var trimmingASCIIWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
