import Testing
import MentorCore
@testable import MentorCrypto

/// Membership certificates (PROTOCOL.md §6.8): the form, the CA's signature, and field 18 of a
/// card — a forged or misplaced certificate is refused before anything stores it.
@Suite struct MembershipCertificateTests {
    let ca = try! SigningKeyPair(seed: [UInt8](repeating: 0x43, count: 32))   // fixed test seeds, cannot fail
    let ana = try! SigningKeyPair(seed: [UInt8](repeating: 1, count: 32))
    let ben = try! SigningKeyPair(seed: [UInt8](repeating: 2, count: 32))
    static let day: UInt64 = 86_400_000

    func certificate(for account: SigningKeyPair, domain: String = "campus.edu", issued: UInt64 = 1_000,
                     by signer: SigningKeyPair? = nil) throws -> MembershipCertificate {
        try MembershipCertificate.sign(by: signer ?? ca, account: account.publicKey.key, domain: domain,
                                       issued: issued, expires: issued + 365 * Self.day)
    }

    @Test func aCertificateRoundTripsAndItsSignatureIsTheCAs() throws {
        let c = try certificate(for: ana)
        #expect(c.encoded.count == MembershipCertificate.fixedLength + "campus.edu".utf8.count)
        #expect(Array(c.encoded.prefix(4)) == Array("MMC".utf8) + [1])
        let back = try MembershipCertificate(encoded: c.encoded)
        #expect(back == c && back.hasValidSignature)
        #expect(back.ca == ca.publicKey.key && back.account == ana.publicKey.key && back.domain == "campus.edu")
        #expect(back.isCurrent(at: 1_000) && back.isCurrent(at: 1_000 + 365 * Self.day - 1))
        #expect(!back.isCurrent(at: 999) && !back.isCurrent(at: 1_000 + 365 * Self.day))
        // Any byte changed breaks the signature or the form.
        for i in stride(from: 0, to: c.encoded.count, by: 5) {
            var bad = c.encoded
            bad[i] ^= 0x01
            let decoded = try? MembershipCertificate(encoded: bad)
            #expect(decoded.map { !$0.hasValidSignature } ?? true, "byte \(i)")
        }
    }

    @Test func theFormIsStrict() throws {
        let c = try certificate(for: ana)
        #expect(throws: RecordError.self) { try MembershipCertificate(encoded: c.encoded + [0]) }
        #expect(throws: RecordError.self) { try MembershipCertificate(encoded: Array(c.encoded.dropLast())) }
        var version = c.encoded
        version[3] = 2
        #expect(throws: RecordError.self) { try MembershipCertificate(encoded: version) }
        for bad in ["Campus.edu", "campus", "campus..edu", "-campus.edu", "campus-.edu", "cam pus.edu", ".campus.edu", "campus.edu.", "",
                    "ü.edu", String(repeating: "a", count: 64) + ".edu"] {
            #expect(throws: RecordError.self, "\(bad)") { try MembershipCertificate.checkDomain(bad) }
        }
        for good in ["campus.edu", "cs.campus.edu", "uni-x.ac.uk", "a1.b2"] {
            #expect(throws: Never.self) { try MembershipCertificate.checkDomain(good) }
        }
        #expect(throws: RecordError.self) {
            try MembershipCertificate.sign(by: ca, account: ana.publicKey.key, domain: "campus.edu", issued: 5, expires: 5)
        }
        #expect(MembershipCertificate.domain(ofAddress: "Ana.Lima@Campus.EDU") == "campus.edu")
        for bad in ["ana", "@campus.edu", "ana@", "a@b@campus.edu", "ana@campus", "ana@campus.edu\r\nBcc: x@y.z"] {
            #expect(MembershipCertificate.domain(ofAddress: bad) == nil, "\(bad)")
        }
        let printed = MembershipCertificate.printKey(ca.publicKey.key)
        #expect(printed.hasPrefix("mmca1") && MembershipCertificate.parseKey(" \(printed)\n") == ca.publicKey.key)
        #expect(MembershipCertificate.parseKey(ana.publicKey.key.id) == nil)   // an account ID is no CA key
        #expect(MembershipCertificate.parseKey(String(printed.dropLast()) + (printed.last == "q" ? "p" : "q")) == nil)
    }

    @Test func aCardCarriesItsOwnAccountsCertificate() throws {
        var card = ProfileCard()
        card.membership = try certificate(for: ana)
        var w = RecordWriter(keys: ana)
        let v = try w.profile(card, at: 2_000)
        let back = try VerifiedRecord(v.encoded)
        #expect(try ProfileCard(body: back.record.body).membership == card.membership)
        #expect(ProfileCard.membership(inBody: back.record.body) == card.membership)
    }

    @Test func aCertificateForAnotherAccountIsRefusedAsInvalidBody() throws {
        var card = ProfileCard()
        card.membership = try certificate(for: ben)   // Ben's certificate in Ana's card
        let record = Record.signedBytes(type: .profile, author: ana.publicKey.key, seq: 2, timestamp: 2_000, clock: VectorClock(), body: card.body)
        let encoded = record + ana.signature(for: record)
        #expect { try VerifiedRecord(encoded) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        var w = RecordWriter(keys: ana)
        #expect { try w.profile(card, at: 2_000) } throws: { ($0 as? RecordError)?.code == .invalidBody }
    }

    @Test func aForgedCertificateIsRefusedAsInvalidBody() throws {
        let real = try certificate(for: ana)
        // The domain changed after signing: the form is fine, the CA's signature is not.
        let forged = try MembershipCertificate(ca: real.ca, account: real.account, issued: real.issued, expires: real.expires,
                                               domain: "other.edu", signature: real.signature)
        // One signed by a key that is not the CA it names.
        let mallory = try SigningKeyPair(seed: [UInt8](repeating: 9, count: 32))
        let unsigned = try MembershipCertificate(ca: ca.publicKey.key, account: ana.publicKey.key, issued: 1, expires: 2, domain: "campus.edu",
                                                 signature: [UInt8](repeating: 0, count: 64))
        let wrongSigner = try MembershipCertificate(ca: ca.publicKey.key, account: ana.publicKey.key, issued: 1, expires: 2,
                                                    domain: "campus.edu", signature: mallory.signature(for: unsigned.signedBytes))
        for bad in [forged, wrongSigner] {
            #expect(!bad.hasValidSignature)
            var card = ProfileCard()
            card.membership = bad
            let message = Record.signedBytes(type: .profile, author: ana.publicKey.key, seq: 2, timestamp: 2_000, clock: VectorClock(), body: card.body)
            #expect { try VerifiedRecord(message + ana.signature(for: message)) } throws: { ($0 as? RecordError)?.code == .invalidBody }
            var w = RecordWriter(keys: ana)
            #expect { try w.profile(card, at: 2_000) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        }
    }
}
