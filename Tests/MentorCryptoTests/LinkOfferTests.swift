import Foundation
import Testing
import MentorCore
@testable import MentorCrypto

/// Linking a device (PROTOCOL.md §13.8): the one-time code as printed and as typed, and the
/// offer the new machine sends — its round trip, that only its own code recognises it (not
/// another secret, not another code ID, not after any field changed), the strict decoding
/// with a message naming the field, and the documented vector (the `mm-link` block;
/// `MM_PRINT_SYNC_VECTORS=1` prints it).
@Suite struct LinkOfferTests {
    static let device = PublicKey(bytes: [UInt8](repeating: 0x44, count: 32))!
    static let vectorCode = "mm2te-st7xy"
    static let vectorNonce = Array(UInt8(0x00)...UInt8(0x0f))
    static let vectorExpires: UInt64 = 1_700_000_600_000
    /// The new machine asks for an 8-hour certificate (`device link --expires 8h`).
    static let vectorLifetime: UInt32 = 28_800

    func offer(_ code: LinkCode, label: String = "lab-3", expires: UInt64 = vectorExpires) throws -> LinkOffer {
        try LinkOffer.make(code: code, device: Self.device, label: label, expires: expires, nonce: Self.vectorNonce)
    }

    func refusal(_ body: () throws(CryptoError) -> Void) -> CryptoError? {
        do { try body(); return nil } catch { return error }
    }

    // MARK: Codes

    @Test func aGeneratedCodePrintsAsTwoGroupsOfFiveAndParsesBack() throws {
        var ids: Set<UInt16> = []
        for _ in 0..<200 {
            let code = LinkCode.generate()
            let printed = code.description
            #expect(printed.count == 11 && Array(printed)[5] == "-")
            #expect(printed.utf8.allSatisfy { $0 == UInt8(ascii: "-") || Bech32.value(of: $0) != nil })
            #expect(code.codeID < 1024)
            #expect(try LinkCode.parse(printed) == code)
            ids.insert(code.codeID)
        }
        #expect(ids.count > 100, "the code ID is random too (\(ids.count) distinct of 200)")
        #expect(LinkCode.generate() != LinkCode.generate())
    }

    @Test func theCodeIDIsItsFirstTwoCharacters() throws {
        // q = 0, p = 1, l = 31: "pq" is 1 · 32 + 0, "ll" is 1023.
        #expect(try LinkCode.parse("pqqqq-qqqqq").codeID == 32)
        #expect(try LinkCode.parse("llqqq-qqqqq").codeID == 1023)
        #expect(try LinkCode.parse("qqlll-lllll").codeID == 0)
        #expect(try LinkCode.parse(Self.vectorCode).codeID == 27 * 32 + 27)   // m = 27
    }

    @Test func aTypedCodeMayBeUpperCaseWithoutTheDashAndPadded() throws {
        let code = try LinkCode.parse(Self.vectorCode)
        for typed in ["MM2TE-ST7XY", "mm2test7xy", "  Mm2Te-St7xY\n", "\tMM2TEST7XY "] {
            #expect(try LinkCode.parse(typed) == code, "\(typed)")
        }
        #expect(code.description == Self.vectorCode)
    }

    @Test func aBadCodeIsRefusedSayingWhatIsWrong() {
        let cases: [(String, String)] = [
            ("", "no link code given"),
            ("   ", "no link code given"),
            ("mm2te-st7x", "has 9"),
            ("mm2test7xyq", "has 11"),
            ("mm2t-est7xy", "one dash, in the middle"),
            ("mm2te--st7xy", "one dash, in the middle"),
            ("mm2te st7xy", "\" \" (character 6) is not in a link code"),
            ("mm2tb-st7xy", "\"b\" (character 5) is not in a link code"),
            ("mm1te-st7xy", "\"1\" (character 3)"),
            ("mm2te-st7xö", "\"ö\" (character 11)"),
            ("mm2te-st7xI", "no 1, b, i or o"),
        ]
        for (typed, says) in cases {
            let error = refusal { () throws(CryptoError) in _ = try LinkCode.parse(typed) }
            #expect(error?.code == .invalidLinkCode, "\(typed)")
            #expect(error?.message.contains(says) == true, "\(typed): \(error?.message ?? "accepted")")
        }
    }

    // MARK: Offers

    @Test func anOfferRoundTripsAndMatchesItsCode() throws {
        let code = LinkCode.generate()
        let made = try LinkOffer.make(code: code, device: Self.device, label: "Ana's laptop ✓", expires: Self.vectorExpires)
        #expect(made.codeID == code.codeID && made.device == Self.device && made.label == "Ana's laptop ✓")
        #expect(made.nonce.count == 16 && made.mac.count == 32)
        let decoded = try LinkOffer.decode(made.encoded)
        #expect(decoded == made)
        #expect(try decoded.matches(code))
        let again = try LinkOffer.make(code: code, device: Self.device, label: "Ana's laptop ✓", expires: Self.vectorExpires)
        #expect(again.nonce != made.nonce && again.mac != made.mac, "a fresh nonce each time")
    }

    @Test func anotherSecretOrAnotherCodeIDDoesNotMatch() throws {
        let code = try LinkCode.parse(Self.vectorCode)
        let offer = try offer(code)
        #expect(try !offer.matches(LinkCode.parse("mm2te-st7xq")), "one secret character off")
        #expect(try !offer.matches(LinkCode.parse("qqqqq-qqqqq")))
        // The same secret under another code ID: refused before any Argon2id.
        #expect(try !offer.matches(LinkCode.parse("mp2te-st7xy")))
    }

    @Test func anOfferWithAnyFieldChangedNoLongerMatches() throws {
        let code = try LinkCode.parse(Self.vectorCode)
        let bytes = try offer(code).encoded
        // Offsets: code ID 0, device 2, label length 34, label 35 ("lab-3"), nonce 40, expires 56, mac 64.
        let edits: [(String, Int)] = [("device", 2), ("device", 33), ("label", 35), ("label", 39), ("nonce", 40),
                                      ("expires", 63), ("mac", 64), ("mac", 95)]
        for (field, at) in edits {
            var tampered = bytes
            tampered[at] ^= 0x01
            let offer = try LinkOffer.decode(tampered)
            #expect(try !offer.matches(code), "\(field) changed at byte \(at)")
        }
        var otherID = bytes
        otherID[1] ^= 0x01
        #expect(try !LinkOffer.decode(otherID).matches(code), "code ID changed")
        #expect(try LinkOffer.decode(bytes).matches(code), "the untouched bytes still match")
    }

    @Test func aBadLabelIsRefusedWhenMakingTheOffer() throws {
        let code = LinkCode.generate()
        for (label, says) in [("", "empty"), (String(repeating: "x", count: 65), "65 bytes"), ("lab\n3", "U+A"),
                              ("lab\u{1B}[31m", "U+1B"), ("lab\u{9B}", "U+9B"), ("lab\u{7F}", "U+7F")] {
            let error = refusal { () throws(CryptoError) in _ = try LinkOffer.make(code: code, device: Self.device, label: label, expires: 1) }
            #expect(error?.code == .invalidLinkOffer && error?.message.contains(says) == true, "\(label.debugDescription): \(String(describing: error))")
        }
        #expect(try LinkOffer.make(code: code, device: Self.device, label: String(repeating: "é", count: 32), expires: 1).label.utf8.count == 64)
    }

    @Test func aMalformedEncodingIsRefusedNamingTheField() throws {
        let good = try offer(LinkCode.parse(Self.vectorCode)).encoded
        func with(_ at: Int, _ value: UInt8) -> [UInt8] { var b = good; b[at] = value; return b }
        let labelLength = 34
        let cases: [([UInt8], String)] = [
            ([], "truncated while reading link offer code ID"),
            (Array(good.prefix(20)), "truncated while reading link offer device key"),
            (Array(good.prefix(34)), "truncated while reading link offer label length"),
            (Array(good.dropLast()), "with a 5-byte label is 100 bytes; this one is 99"),
            (good + [0], "with a 5-byte label is 100 bytes; this one is 101"),
            (with(0, 0x04), "code ID 1147 is not below 1024"),
            (with(labelLength, 6), "with a 6-byte label is 101 bytes; this one is 100"),
            (Array(good.prefix(labelLength)) + [0] + good.suffix(60), "label is empty"),
            (Array(good.prefix(labelLength)) + [65] + [UInt8](repeating: 0x61, count: 65) + good.suffix(60), "at most 159 bytes"),
            (with(35, 0xFF), "label is not valid UTF-8"),
            (with(37, 0x07), "control character U+7"),
            ([UInt8](repeating: 0, count: 200), "at most 159 bytes; this one is 200"),
        ]
        for (bytes, says) in cases {
            let error = refusal { () throws(CryptoError) in _ = try LinkOffer.decode(bytes) }
            #expect(error?.code == .invalidLinkOffer, "\(says)")
            #expect(error?.message.contains(says) == true, "expected “\(says)”, got \(error?.message ?? "accepted")")
        }
        // The longest label fits exactly the most a `link` message carries.
        let longest = try LinkOffer.make(code: LinkCode.generate(), device: Self.device, label: String(repeating: "x", count: 64), expires: 1)
        #expect(longest.encoded.count == LinkOffer.maxEncodedLength && LinkOffer.maxEncodedLength == 159)
        #expect(SyncLimits.maxLinkOffer == LinkOffer.maxEncodedLength, "what a `link` message carries at most")
        #expect(try LinkOffer.decode(longest.encoded) == longest)
    }

    // MARK: The documented vector

    static func vectorLines() throws -> [(String, String)] {
        let code = try LinkCode.parse(vectorCode)
        let offer = try LinkOffer.make(code: code, device: device, label: "lab-3", expires: vectorExpires, lifetime: vectorLifetime, nonce: vectorNonce)
        let key = try LinkOffer.macKey(code: code, nonce: vectorNonce)
        return [
            ("code", vectorCode),
            ("code-id", String(code.codeID)),
            ("secret-ascii", String(decoding: code.secretASCII, as: UTF8.self)),
            ("device", Hex.encode(device.bytes)),
            ("label", "lab-3"),
            ("nonce", Hex.encode(vectorNonce)),
            ("expires", String(vectorExpires)),
            ("lifetime", String(vectorLifetime)),
            ("argon2id-key", Hex.encode(key)),
            ("mac-input", Hex.encode(LinkOffer.macInput(codeID: code.codeID, device: device, label: "lab-3", expires: vectorExpires, lifetime: vectorLifetime))),
            ("mac", Hex.encode(offer.mac)),
            ("offer", Hex.encode(offer.encoded)),
        ]
    }

    @Test func theDocumentedVectorMatches() throws {
        let values = try Self.vectorLines()
        if ProcessInfo.processInfo.environment["MM_PRINT_SYNC_VECTORS"] == "1" {
            print("```mm-link\n" + values.map { "\($0.0) \($0.1)" }.joined(separator: "\n") + "\n```")
        }
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        guard let start = text.range(of: "```mm-link\n"), let end = text.range(of: "```", range: start.upperBound..<text.endIndex) else {
            Issue.record("no mm-link block in docs/PROTOCOL.md")
            return
        }
        var documented: [String: String] = [:]
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { documented[parts[0]] = parts[1] }
        }
        #expect(documented.count == values.count)
        for (key, value) in values { #expect(documented[key] == value, "\(key): documented \(documented[key] ?? "nothing"), computed \(value)") }
        // And the documented offer is one the code recognises.
        let offer = try LinkOffer.decode(CryptoTestSupport.bytes(hex: documented["offer"] ?? ""))
        #expect(try offer.matches(LinkCode.parse(Self.vectorCode)))
        let macInput = CryptoTestSupport.bytes(hex: documented["mac-input"] ?? "")
        let key = CryptoTestSupport.bytes(hex: documented["argon2id-key"] ?? "")
        #expect(BLAKE2b.hash(macInput, key: key) == offer.mac, "mac = BLAKE2b-256(key: K, mac-input)")
    }
}
