import MentorNet
import Testing

// MARK: TXTRecord (RFC 6763 §6)

@Test func txtRecordOfTheProtocolVersionEncodesAsOneLengthPrefixedString() throws {
    let txt: TXTRecord = ["v": "1"]
    #expect(try txt.encoded() == [3, 0x76, 0x3D, 0x31])
    #expect(TXTRecord(decoding: try txt.encoded()) == txt)
    #expect(TXTRecord(decoding: [3, 0x76, 0x3D, 0x31])["v"] == "1")
}

@Test func emptyTXTRecordIsOneZeroByteAndDecodesToNothing() throws {
    #expect(try TXTRecord().encoded() == [0])
    #expect(TXTRecord(decoding: [0]).entries.isEmpty)
    #expect(TXTRecord(decoding: []).entries.isEmpty)
}

@Test func txtDecodingKeepsTheFirstOfARepeatedKeyIgnoringCaseAndSkipsBadStrings() {
    // "V=1", "v=2" (repeated key), "" (empty), "=x" (no key), "flag" (bare), "e=" (empty value).
    let bytes: [UInt8] = [3] + Array("V=1".utf8) + [3] + Array("v=2".utf8) + [0] + [2] + Array("=x".utf8)
        + [4] + Array("flag".utf8) + [2] + Array("e=".utf8)
    let txt = TXTRecord(decoding: bytes)
    #expect(txt["v"] == "1")
    #expect(txt.entries.map(\.key) == ["V", "flag", "e"])
    #expect(txt.contains("flag") && txt["flag"] == nil)
    #expect(txt["e"] == "")
}

@Test func txtDecodingStopsAtALengthRunningPastTheEnd() {
    let txt = TXTRecord(decoding: [3] + Array("v=1".utf8) + [9] + Array("short".utf8))
    #expect(txt.entries.map(\.key) == ["v"])
}

@Test func txtEncodingRefusesBadKeysAndOverlongEntries() throws {
    var badKey = TXTRecord()
    badKey["a=b"] = "1"
    #expect(throws: DNSSDError.self) { try badKey.encoded() }
    var emptyKey = TXTRecord()
    emptyKey[""] = "1"
    #expect(throws: DNSSDError.self) { try emptyKey.encoded() }
    var long = TXTRecord()
    long["k"] = String(repeating: "x", count: 254)  // "k=" + 254 = 256 bytes
    do {
        _ = try long.encoded()
        Issue.record("a 256-byte TXT string was encoded")
    } catch {
        #expect(error.code == .badParam)
    }
    long["k"] = String(repeating: "x", count: 253)
    #expect(try long.encoded().count == 256)
}

// MARK: DNSSDError

@Test func dnssdErrorNamesTheCodeAndSaysAvahiIsUnreachableForUnknown() {
    let error = DNSSDError(.unknown, "register _mentormate._tcp")
    #expect(error.code.rawValue == -65537)
    #expect(error.code.name == "kDNSServiceErr_Unknown")
    #expect(error.description.hasPrefix("register _mentormate._tcp: kDNSServiceErr_Unknown (-65537), Avahi/D-Bus unreachable; "))
    #expect(DNSSDError.Code(rawValue: -65548) == .nameConflict)
    #expect(DNSSDError.Code(rawValue: -65548).name == "kDNSServiceErr_NameConflict")
    #expect(DNSSDError.Code(rawValue: -1).name == "DNSServiceErrorType")
}
