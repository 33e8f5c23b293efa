import Testing
import MentorCore
@testable import MentorCrypto

@Suite struct RecordSigningTests {
    let ana = try! SigningKeyPair(seed: [UInt8](repeating: 1, count: 32))   // fixed test seeds, cannot fail
    let ben = try! SigningKeyPair(seed: [UInt8](repeating: 2, count: 32))
    let cy = try! SigningKeyPair(seed: [UInt8](repeating: 3, count: 32))

    @Test func signedRecordVerifiesAndAnyAlteredByteIsRefused() throws {
        var w = RecordWriter(keys: ana)
        let v = try w.profile(ProfileCard(name: "Ana", role: .student), at: 42)
        #expect(try VerifiedRecord(v.encoded) == v)
        #expect(v.id == BLAKE2b.hash(v.encoded, outputLength: 32))
        for i in stride(from: 0, to: v.encoded.count, by: 3) {
            var bad = v.encoded
            bad[i] ^= 0x20
            #expect(throws: RecordError.self) { try VerifiedRecord(bad) }
        }
    }

    @Test func aRecordSignedByAnotherKeyIsRefusedAsBadSignature() throws {
        var w = RecordWriter(keys: ana)
        let v = try w.profile(ProfileCard(name: "Ana"), at: 1)
        // Put Ben's key in the author field, keep Ana's signature.
        var forged = v.encoded
        forged.replaceSubrange(5..<37, with: ben.publicKey.bytes)
        #expect { try VerifiedRecord(forged) } throws: { ($0 as? RecordError)?.code == .badSignature }
    }

    @Test func pairSecretsAreTheSameFromBothSidesAndDifferForOtherPairs() throws {
        let ab = try PairSecrets(me: ana, other: ben.publicKey.key)
        let ba = try PairSecrets(me: ben, other: ana.publicKey.key)
        let ac = try PairSecrets(me: ana, other: cy.publicKey.key)
        #expect(ab.tag(type: .like, author: ana.publicKey.key) == ba.tag(type: .like, author: ana.publicKey.key))
        #expect(ab.tag(type: .like, author: ana.publicKey.key) != ab.tag(type: .like, author: ben.publicKey.key))
        #expect(ab.tag(type: .like, author: ana.publicKey.key) != ac.tag(type: .like, author: ana.publicKey.key))
        #expect(ab.tag(type: .like, author: ana.publicKey.key) != ab.tag(type: .chat, author: ana.publicKey.key))
    }

    @Test func onlyTheTwoAccountsCanOpenASealedRecord() throws {
        var w = RecordWriter(keys: ana)
        let chat = try w.chat(to: ben.publicKey.key, peerSeq: 7, answers: [UInt8](repeating: 7, count: 32), text: "meet at the library", at: 5)
        var forBen = SealedOpener(account: ben), forAna = SealedOpener(account: ana), forCy = SealedOpener(account: cy)
        let maybe = forBen.open(chat)
        let opened = try #require(maybe)
        #expect(opened.other == ana.publicKey.key)
        #expect(opened.entry.kind == .chat(peerSeq: 7, answers: [UInt8](repeating: 7, count: 32), text: "meet at the library"))
        // The author's own replica knows whom it wrote to, through the self box.
        let mine = forAna.open(chat), theirs = forCy.open(chat)
        #expect(mine?.other == ben.publicKey.key)
        #expect(theirs == nil)
    }

    @Test func aBoxReplayedUnderAnotherTypeOrAuthorDoesNotOpen() throws {
        var w = RecordWriter(keys: ana)
        let like = try w.like(ben.publicKey.key, at: 1)
        let sealed = try SealedBody(body: like.record.body, what: "like", maxPlaintext: 64)
        let s = try PairSecrets(me: ben, other: ana.publicKey.key)
        #expect(throws: CryptoError.self) { try s.open(sealed, type: .chat, author: ana.publicKey.key) }
        #expect(throws: CryptoError.self) { try s.open(sealed, type: .like, author: ben.publicKey.key) }
        #expect(try LikePayload(plaintext: s.open(sealed, type: .like, author: ana.publicKey.key)).liked)
    }

    @Test func writerRefusesToSealToItself() throws {
        var w = RecordWriter(keys: ana)
        #expect { try w.like(ana.publicKey.key, at: 1) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        #expect(w.lastSeq == 0)
    }
}
