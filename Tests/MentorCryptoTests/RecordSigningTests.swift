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

    /// Ana's sealed `record`, sealed by her to `original`, opened and sealed again by hand (she is
    /// the author and can sign anything) under the Ana–Ben pair key: with `tag` as the pair tag
    /// (the right one for Ana–Ben unless given), the box bound to that tag, and a self box
    /// naming `selfBoxNames` (Ben unless given).
    func resealedForBen(_ record: VerifiedRecord, sealedTo original: PublicKey, tag: [UInt8]? = nil,
                        selfBoxNames: PublicKey? = nil) throws -> VerifiedRecord {
        let type = record.record.type, me = ana.publicKey.key
        let sealed = try SealedBody(body: record.record.body, what: "sealed", maxPlaintext: Limits.maxBodyBytes)
        let plaintext = try PairSecrets(me: ana, other: original).open(sealed, type: type, author: me)
        let pair = try PairSecrets(me: ana, other: ben.publicKey.key)
        let pairTag = tag ?? pair.tag(type: type, author: me)
        let box = try XChaCha20Poly1305.seal(plaintext, key: pair.encryptionKey, associatedData: [type.rawValue] + me.bytes + pairTag)
        let body = SealedBody(pairTag: pairTag, box: box,
                              selfBox: try SelfBox.seal(counterpart: selfBoxNames ?? ben.publicKey.key, author: ana, type: type))
        var w = RecordWriter(keys: ana, lastSeq: record.record.seq)
        return try w.next(type, body: body.encoded, at: record.record.timestamp)
    }

    @Test func aSealedRecordWhosePairTagIsNotThePairsIsNotOpenedEvenIfItsBoxIs() throws {
        var w = RecordWriter(keys: ana)
        let like = try w.like(ben.publicKey.key, at: 1)
        // The control: rebuilt by hand with the right tag, it opens for Ben and for Ana.
        let rebuilt = try resealedForBen(like, sealedTo: ben.publicKey.key)
        var forBen = SealedOpener(account: ben), forAna = SealedOpener(account: ana)
        #expect(forBen.open(rebuilt)?.entry.kind == .like(true, peerSeq: 0))
        #expect(forAna.open(rebuilt)?.other == ben.publicKey.key)
        // Another pair's tag, the tag of another type, or zeros, with a box bound to that tag:
        // other replicas file it under another pair (or none), so neither of the two counts it.
        let otherPair = try PairSecrets(me: ana, other: cy.publicKey.key).tag(type: .like, author: ana.publicKey.key)
        let otherType = try PairSecrets(me: ana, other: ben.publicKey.key).tag(type: .chat, author: ana.publicKey.key)
        for tag in [otherPair, otherType, [UInt8](repeating: 0, count: SealedBody.tagLength)] {
            let forged = try resealedForBen(like, sealedTo: ben.publicKey.key, tag: tag)
            var benOpener = SealedOpener(account: ben), anaOpener = SealedOpener(account: ana)
            #expect(benOpener.open(forged) == nil)
            #expect(anaOpener.open(forged) == nil)
        }
    }

    @Test func aSealedRecordWhosePayloadNamesAThirdAccountIsNotOpened() throws {
        // Sealed for the Ana–Ben pair, but the payload inside says it is for Cy.
        var w = RecordWriter(keys: ana)
        let forCy = [try w.like(cy.publicKey.key, at: 1),
                     try w.chat(to: cy.publicKey.key, peerSeq: 1, answers: nil, text: "hi", at: 2),
                     try w.unmatch(cy.publicKey.key, peerSeq: 1, at: 3)]
        for record in forCy {
            let forged = try resealedForBen(record, sealedTo: cy.publicKey.key)
            var benOpener = SealedOpener(account: ben), anaOpener = SealedOpener(account: ana)
            #expect(benOpener.open(forged) == nil, "\(record.record.type)")
            #expect(anaOpener.open(forged) == nil, "\(record.record.type)")
        }
    }

    @Test func aSealedRecordAnAccountSealedToItselfIsNotOpened() throws {
        // Written by hand (the writer refuses it): Ana's like whose pair is Ana–Ana and whose self
        // box names Ana. Counting it would let an account match itself.
        var w = RecordWriter(keys: ana)
        let like = try w.like(ben.publicKey.key, at: 1)
        let payload = LikePayload(target: ana.publicKey.key, liked: true, peerSeq: 0)
        let selfPair = try PairSecrets(me: ana, other: ana.publicKey.key)
        let me = ana.publicKey.key
        let tag = selfPair.tag(type: .like, author: me)
        let box = try XChaCha20Poly1305.seal(payload.plaintext, key: selfPair.encryptionKey,
                                             associatedData: [RecordType.like.rawValue] + me.bytes + tag)
        let body = SealedBody(pairTag: tag, box: box, selfBox: try SelfBox.seal(counterpart: me, author: ana, type: .like))
        let toSelf = try w.next(.like, body: body.encoded, at: like.record.timestamp + 1)
        var forAna = SealedOpener(account: ana)
        #expect(forAna.open(toSelf) == nil)
        #expect(forAna.open(like) != nil)   // the control
    }

    @Test func writerRefusesToSealToItself() throws {
        var w = RecordWriter(keys: ana)
        #expect { try w.like(ana.publicKey.key, at: 1) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        #expect(w.lastSeq == 0)
    }
}
