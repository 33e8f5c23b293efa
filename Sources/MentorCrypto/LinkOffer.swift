import CSodium
import MentorCore

/// The one-time code a new machine prints when it asks to be linked to an account
/// (PROTOCOL.md §13.8): 10 characters of the bech32 alphabet, printed `xxxxx-xxxxx`. The first
/// 2 characters (10 bits) are the public **code ID**, which the new machine's offer carries so
/// that the approving machine finds it among the offers its peers sent; the other 8 (40 bits)
/// are the **secret**, which never leaves the screen: the offer carries only a MAC keyed with
/// an Argon2id hash of it.
///
/// `description` is the printed form, secret included (it is what the person reads off the
/// screen); do not log it.
public struct LinkCode: Sendable, Equatable, CustomStringConvertible {
    /// Characters in a code, without the dash.
    public static let length = 10
    /// Of those, the characters of the public code ID (the rest are the secret).
    public static let idLength = 2
    /// Code IDs are below this (10 bits).
    public static let codeIDs: UInt16 = 1024

    /// The public part: which offer to look for (`LinkOffer.codeID`), 0 ..< 1024.
    public let codeID: UInt16
    /// The secret part: 8 values 0 ... 31 (bech32 characters).
    private let secret: [UInt8]

    /// `values`: `length` values 0 ... 31, the code's characters in order.
    init(values: [UInt8]) {
        precondition(values.count == Self.length && values.allSatisfy { $0 < 32 }, "a link code is 10 five-bit values")
        codeID = UInt16(values[0]) << 5 | UInt16(values[1])
        secret = Array(values[Self.idLength...])
    }

    /// A fresh code from the system's secure random source (each character uniform: a random
    /// byte's low 5 bits).
    public static func generate() -> LinkCode {
        var bytes = SecureRandom.bytes(length)
        defer { zeroize(&bytes) }
        return LinkCode(values: bytes.map { $0 & 31 })
    }

    /// A code as a person typed it: upper or lower case, with or without the dash after the
    /// fifth character, surrounding whitespace ignored. Anything else is refused with
    /// `.invalidLinkCode`, saying what is wrong.
    public static func parse(_ text: String) throws(CryptoError) -> LinkCode {
        let trimmed = Array(text.unicodeScalars.drop(while: \.properties.isWhitespace).reversed()
            .drop(while: \.properties.isWhitespace).reversed())
        var typed = ""
        typed.unicodeScalars.append(contentsOf: trimmed)
        guard !trimmed.isEmpty else {
            throw CryptoError(.invalidLinkCode, "no link code given: type the code the new machine shows (xxxxx-xxxxx)")
        }
        let dashes = trimmed.indices.filter { trimmed[$0] == "-" }
        guard dashes.isEmpty || dashes == [5] else {
            throw CryptoError(.invalidLinkCode,
                              "\"\(typed)\" is not a link code: the code is 10 characters with at most one dash, in the middle (xxxxx-xxxxx)")
        }
        var values: [UInt8] = []
        for (i, c) in trimmed.enumerated() where c != "-" {
            let lower = c.properties.lowercaseMapping.unicodeScalars
            guard lower.count == 1, let scalar = lower.first, scalar.isASCII,
                  let value = Bech32.value(of: UInt8(scalar.value)) else {
                throw CryptoError(.invalidLinkCode,
                                  "\"\(c)\" (character \(i + 1)) is not in a link code: codes use the letters and digits \(String(decoding: Bech32.alphabet, as: UTF8.self)) — no 1, b, i or o")
            }
            values.append(value)
        }
        guard values.count == length else {
            throw CryptoError(.invalidLinkCode, "a link code has 10 characters (xxxxx-xxxxx); \"\(typed)\" has \(values.count)")
        }
        return LinkCode(values: values)
    }

    /// The printed form, `xxxxx-xxxxx`, lower case.
    public var description: String {
        let chars = characters
        return String(decoding: chars[..<5] + [UInt8(ascii: "-")] + chars[5...], as: UTF8.self)
    }

    /// The 10 characters, ASCII, no dash.
    private var characters: [UInt8] {
        [UInt8(codeID >> 5), UInt8(codeID & 31)].map { Bech32.alphabet[Int($0)] } + secretASCII
    }

    /// The secret's 8 characters as ASCII (what Argon2id hashes).
    var secretASCII: [UInt8] { secret.map { Bech32.alphabet[Int($0)] } }
}

/// A new machine's offer of its device key to the machines that hold its account (PROTOCOL.md
/// §13.8), sent in a `link` message to every directly linked peer while the machine waits:
///
///     codeID u16 ‖ device key 32 ‖ label length u8 ‖ label 1 ... 64 bytes ‖ nonce 16 ‖ expires u64
///     ‖ lifetime u32 ‖ mac 32
///
/// `mac = BLAKE2b-256(key: K, "mentormate link v1" ‖ codeID u16 ‖ device ‖ label ‖ expires u64 ‖
/// lifetime u32)`; `lifetime` is how long the new machine asks its certificate to last, in
/// seconds (`device link --expires`; 0: no expiry),
/// `K = Argon2id13(the code's secret characters as ASCII, salt: nonce, 2 passes, 32 MiB)`.
/// Only who holds the code makes or recognises an offer; the code ID is public. A captured
/// offer lets an attacker test guesses of the 40-bit secret offline, at one 32 MiB Argon2id
/// each (2^39 on average) — far beyond the 10 minutes an offer lives (`lifetime`).
public struct LinkOffer: Sendable, Equatable {
    public static let nonceLength = 16
    public static let macLength = 32
    /// The device's label ("lab-3", "laptop"): 1 ... 64 bytes of UTF-8, no control characters
    /// (as a device certificate's label, §6.2; stricter: no tab or newline either).
    public static let maxLabelBytes = 64
    /// The shortest and longest encodings (a 1-byte and a 64-byte label).
    public static let minEncodedLength = 2 + 32 + 1 + 1 + nonceLength + 8 + 4 + macLength
    public static let maxEncodedLength = 2 + 32 + 1 + maxLabelBytes + nonceLength + 8 + 4 + macLength
    /// An offer lives at most this long: receivers drop it then, whatever `expires` says.
    public static let lifetime: Duration = .seconds(600)
    /// The Argon2id cost of the MAC key: 2 passes over 32 MiB.
    public static let keyParameters = Argon2id.Parameters(opsLimit: 2, memLimit: 32 << 20)
    static let macContext = Array("mentormate link v1".utf8)

    /// The code's public part (`LinkCode.codeID`).
    public let codeID: UInt16
    /// The new machine's device key, to be certified.
    public let device: PublicKey
    /// What the new machine calls itself; shown to the person approving.
    public let label: String
    /// Argon2id's salt for this offer.
    public let nonce: [UInt8]
    /// When the offer ends (ms since the Unix epoch, the new machine's clock).
    public let expires: UInt64
    /// How long the certificate the new machine asks for should last, in seconds; 0: no expiry.
    public let lifetime: UInt32
    public let mac: [UInt8]

    /// An offer of `device` under `code`, with a fresh random nonce. Costs one Argon2id (32 MiB):
    /// run it off any queue that must stay responsive. Throws `.invalidLinkOffer` for a label
    /// that breaks the rules, or Argon2id's error when it cannot run.
    public static func make(code: LinkCode, device: PublicKey, label: String, expires: UInt64, lifetime: UInt32 = 0) throws(CryptoError) -> LinkOffer {
        try make(code: code, device: device, label: label, expires: expires, lifetime: lifetime, nonce: SecureRandom.bytes(nonceLength))
    }

    /// `make` with a chosen nonce (the documented vector).
    static func make(code: LinkCode, device: PublicKey, label: String, expires: UInt64, lifetime: UInt32 = 0, nonce: [UInt8]) throws(CryptoError) -> LinkOffer {
        try checkLabel(Array(label.utf8))
        precondition(nonce.count == nonceLength, "a link offer's nonce is 16 bytes")
        let mac = try macOf(code: code, device: device, label: label, expires: expires, lifetime: lifetime, nonce: nonce)
        return LinkOffer(codeID: code.codeID, device: device, label: label, nonce: nonce, expires: expires, lifetime: lifetime, mac: mac)
    }

    private init(codeID: UInt16, device: PublicKey, label: String, nonce: [UInt8], expires: UInt64, lifetime: UInt32, mac: [UInt8]) {
        self.lifetime = lifetime
        self.codeID = codeID; self.device = device; self.label = label
        self.nonce = nonce; self.expires = expires; self.mac = mac
    }

    /// Whether this offer was made with `code`: its code ID is the offer's and the MAC
    /// recomputed with its secret is the offer's (compared in constant time). Says nothing of
    /// `expires` (the caller's clock decides). Costs one Argon2id (32 MiB) when the code IDs
    /// are equal; throws only when Argon2id cannot run (no memory).
    public func matches(_ code: LinkCode) throws(CryptoError) -> Bool {
        guard code.codeID == codeID else { return false }
        let expected = try Self.macOf(code: code, device: device, label: label, expires: expires, lifetime: lifetime, nonce: nonce)
        return expected.withUnsafeBytes { e in
            mac.withUnsafeBytes { m in sodium_memcmp(e.baseAddress!, m.baseAddress!, Self.macLength) == 0 }
        }
    }

    /// The key K and the MAC over the offer's fields; K is zeroed afterwards.
    static func macOf(code: LinkCode, device: PublicKey, label: String, expires: UInt64, lifetime: UInt32, nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        var key = try macKey(code: code, nonce: nonce)
        defer { zeroize(&key) }
        return BLAKE2b.hash(macInput(codeID: code.codeID, device: device, label: label, expires: expires, lifetime: lifetime), key: key)
    }

    /// `K = Argon2id13(secret ASCII, salt: nonce, keyParameters)`, 32 bytes.
    static func macKey(code: LinkCode, nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        var secret = code.secretASCII
        defer { zeroize(&secret) }
        return try Argon2id.deriveKey(passphrase: secret, salt: nonce, parameters: keyParameters)
    }

    /// What the MAC covers: `"mentormate link v1" ‖ codeID u16 ‖ device ‖ label ‖ expires u64 ‖ lifetime u32`.
    static func macInput(codeID: UInt16, device: PublicKey, label: String, expires: UInt64, lifetime: UInt32) -> [UInt8] {
        var w = ByteWriter()
        w.raw(macContext)
        w.u16(codeID)
        w.raw(device.bytes)
        w.raw(Array(label.utf8))
        w.u64(expires)
        w.u32(lifetime)
        return w.bytes
    }

    public var encoded: [UInt8] {
        let labelBytes = Array(label.utf8)
        var w = ByteWriter(capacity: Self.minEncodedLength - 1 + labelBytes.count)
        w.u16(codeID)
        w.raw(device.bytes)
        w.u8(UInt8(labelBytes.count))
        w.raw(labelBytes)
        w.raw(nonce)
        w.u64(expires)
        w.u32(lifetime)
        w.raw(mac)
        return w.bytes
    }

    /// Strict: every field's length exact, the code ID below 1024, the label's rules, no
    /// trailing bytes. Each error (`.invalidLinkOffer`) names the field.
    public static func decode(_ bytes: [UInt8]) throws(CryptoError) -> LinkOffer {
        guard bytes.count <= maxEncodedLength else {
            throw CryptoError(.invalidLinkOffer, "a link offer is at most \(maxEncodedLength) bytes; this one is \(bytes.count)")
        }
        var r = ByteReader(bytes)
        do {
            let codeID = try r.u16("link offer code ID")
            guard codeID < LinkCode.codeIDs else {
                throw CryptoError(.invalidLinkOffer, "link offer code ID \(codeID) is not below \(LinkCode.codeIDs) (10 bits)")
            }
            guard let device = PublicKey(bytes: try r.raw(32, "link offer device key")) else {
                throw CryptoError(.invalidLinkOffer, "link offer device key has the wrong length")
            }
            let labelLength = Int(try r.u8("link offer label length"))
            let length = minEncodedLength - 1 + labelLength
            guard bytes.count == length else {
                throw CryptoError(.invalidLinkOffer,
                                  "a link offer with a \(labelLength)-byte label is \(length) bytes; this one is \(bytes.count)")
            }
            let labelBytes = try r.raw(labelLength, "link offer label")
            let label = try checkLabel(labelBytes)
            let nonce = try r.raw(nonceLength, "link offer nonce")
            let expires = try r.u64("link offer expires")
            let lifetime = try r.u32("link offer lifetime")
            let mac = try r.raw(macLength, "link offer mac")
            return LinkOffer(codeID: codeID, device: device, label: label, nonce: nonce, expires: expires, lifetime: lifetime, mac: mac)
        } catch let e as CryptoError {
            throw e
        } catch let e as RecordError {
            // ByteReader's errors name the field and the offset.
            throw CryptoError(.invalidLinkOffer, e.message)
        } catch {
            throw CryptoError(.invalidLinkOffer, "link offer: \(error)")
        }
    }

    /// 1 ... 64 bytes of UTF-8 without control characters (Unicode's Cc: C0, DEL, C1 — none
    /// reaches the approver's terminal). The label as text.
    @discardableResult
    static func checkLabel(_ bytes: [UInt8]) throws(CryptoError) -> String {
        guard !bytes.isEmpty else { throw CryptoError(.invalidLinkOffer, "link offer label is empty; name the machine (1 ... \(maxLabelBytes) bytes)") }
        guard bytes.count <= maxLabelBytes else {
            throw CryptoError(.invalidLinkOffer, "link offer label is \(bytes.count) bytes; at most \(maxLabelBytes) allowed")
        }
        guard let label = String(validating: bytes, as: UTF8.self) else {
            throw CryptoError(.invalidLinkOffer, "link offer label is not valid UTF-8")
        }
        if let c = label.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw CryptoError(.invalidLinkOffer, "link offer label contains the control character U+\(String(c.value, radix: 16, uppercase: true))")
        }
        return label
    }
}
