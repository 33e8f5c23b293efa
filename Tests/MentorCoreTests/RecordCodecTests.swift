import Testing
@testable import MentorCore

/// Codec tests that need no keys: signatures are placeholders (verification is MentorCrypto's).
@Suite struct RecordCodecTests {
    let author = PublicKey(bytes: [UInt8](repeating: 7, count: 32))!
    let other = PublicKey(bytes: [UInt8](repeating: 9, count: 32))!

    func encode(type: RecordType = .profile, seq: UInt64 = 1, clock: VectorClock = VectorClock(),
                body: [UInt8]? = nil) -> [UInt8] {
        let b = body ?? ProfileCard(name: "Ana").body
        return Record.signedBytes(type: type, author: author, seq: seq, timestamp: 1_700_000_000_000,
                                  clock: clock, body: b) + [UInt8](repeating: 0xAB, count: 64)
    }

    func code(_ bytes: [UInt8]) -> RecordError.Code? {
        do { _ = try Record.decode(bytes); return nil } catch { return error.code }
    }

    @Test func decodeThenEncodeGivesTheSameBytes() throws {
        let bytes = encode()
        let r = try Record.decode(bytes)
        #expect(r.encoded == bytes)
        #expect(r.author == author && r.seq == 1 && r.type == .profile)
        #expect(try ProfileCard(body: r.body).name == "Ana")
    }

    @Test func eachRefusalHasItsOwnCode() {
        var badMagic = encode(); badMagic[0] = UInt8(ascii: "X")
        #expect(code(badMagic) == .malformed)
        var badVersion = encode(); badVersion[3] = 3
        #expect(code(badVersion) == .unsupportedVersion)
        var badType = encode(); badType[4] = 200
        #expect(code(badType) == .unknownType)
        #expect(code(encode() + [0]) == .malformed)                  // trailing byte
        #expect(code(Array(encode().dropLast())) == .malformed)      // truncated signature
        #expect(code(encode(seq: 0)) == .malformed)
        #expect(code(encode(seq: UInt64(Int64.max) + 1)) == .malformed)             // beyond what SQLite stores
        #expect(code(encode(seq: .max)) == .malformed)
        let huge = [UInt8](repeating: 0, count: Limits.maxBodyBytes + 1)
        #expect(code(encode(body: huge)) == .bodyTooLarge)
        // A card's writers are the account's keys, at most 1 + 32 of them: a clock naming 33
        // others is too large for its type (one naming a few is fine).
        #expect(code(encode(clock: VectorClock([(other, 1)]))) == nil)
        let crowd = (100...UInt8(100 + Limits.maxDevicesPerAccount)).compactMap { PublicKey(bytes: [UInt8](repeating: $0, count: 32)) }
        #expect(code(encode(clock: VectorClock(crowd.map { ($0, 1) }))) == .clockTooLarge)
        #expect(code(encode(clock: VectorClock([(author, 1)]))) == .malformed)
        #expect(code([]) == .malformed)
    }

    @Test func bytesOverTheLargestPossibleRecordAreRefusedAsTooLargeBeforeAnyParsing() {
        // A version-2 record (it names the account too) with the fullest clock and body.
        let largest = Record.fixedOverhead + 32 + Limits.maxClockEntries * 40 + Limits.maxBodyBytes
        #expect(largest == Record.maxEncodedBytes)
        // Garbage (no magic) of that size plus one: the size alone refuses it, before the header
        // is read; at exactly that size it is parsed (and refused for its bad magic).
        #expect(code([UInt8](repeating: 0x5A, count: largest + 1)) == .bodyTooLarge)
        #expect(code([UInt8](repeating: 0x5A, count: largest)) == .malformed)
        #expect(code(encode() + [UInt8](repeating: 0, count: largest)) == .bodyTooLarge)
    }

    @Test func bodyAtExactlyTheLimitIsAcceptedByTheEnvelope() {
        // 16 KiB of bio does not fit the bio limit, so use a raw sealed-size check instead:
        // the envelope accepts 16384 bytes and leaves the schema to judge.
        let body = [UInt8](repeating: 0, count: Limits.maxBodyBytes)
        #expect(code(encode(body: body)) == .malformed) // schema refuses the zeros, not the size
    }

    /// The proof-of-work field (tag 9, PROTOCOL.md §6.1): a u64 nonce, at seq 1 only, never
    /// alone, and no register of the card.
    @Test func theWorkFieldIsAnEightByteNonceAllowedOnlyInTheFirstRecord() throws {
        let card = ProfileCard(name: "Ana", work: 0x0102_0304_0506_0708)
        #expect(card.body == ProfileCard(name: "Ana").body + [9, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try ProfileCard(body: card.body) == card)
        #expect(ProfileCard.workNonce(inBody: card.body) == 0x0102_0304_0506_0708)
        #expect(ProfileCard.workNonce(inBody: ProfileCard(name: "Ana").body) == nil)
        #expect(try Record.decode(encode(seq: 1, body: card.body)).seq == 1)
        #expect { try Record.decode(self.encode(seq: 2, body: card.body)) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        let short = ProfileCard(name: "Ana").body + [9, 0, 7, 1, 2, 3, 4, 5, 6, 7]
        #expect { try Record.decode(self.encode(seq: 1, body: short)) } throws: { ($0 as? RecordError)?.code == .malformed }
        let alone: [UInt8] = [9, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect { try Record.decode(self.encode(seq: 1, body: alone)) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        let unknown = ProfileCard(name: "Ana").body + [10, 0, 1, 0]
        #expect { try Record.decode(self.encode(seq: 1, body: unknown)) } throws: { ($0 as? RecordError)?.code == .malformed }
    }

    @Test func profileBodyRefusesUnknownOutOfOrderAndInvalidFields() {
        #expect(throws: RecordError.self) { try ProfileCard(body: [99, 0, 0]) }                   // unknown tag
        var f = FieldList(); f.set(1, text: "A"); f.set(2, text: "tutor")
        var swapped = f.encoded
        swapped = Array(swapped[4...]) + Array(swapped[..<4])                                        // tag 2 before tag 1
        #expect(throws: RecordError.self) { try ProfileCard(body: swapped) }
        #expect { try ProfileCard(body: ProfileCard(role: nil).body) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        var role = FieldList(); role.set(2, text: "wizard")
        #expect { try ProfileCard(body: role.encoded) } throws: { ($0 as? RecordError)?.code == .invalidBody }
        var courses = FieldList(); courses.set(4, [6] + Array("cs 490".utf8))
        #expect { try ProfileCard(body: courses.encoded) } throws: { ($0 as? RecordError)?.code == .invalidBody }
    }

    @Test func profileCardRoundTripsEveryField() throws {
        let photo = PhotoRef(hash: [UInt8](repeating: 3, count: 32), size: 1234, format: .png)
        let card = ProfileCard(name: "Ben", role: .tutor, bio: "I teach\nalgorithms", courses: ["CS 490", "MATH 221"],
                               wage: 25, budget: nil, availability: "Mon-Wed", photos: [photo])
        #expect(try ProfileCard(body: card.body) == card)
        let removal = ProfileCard(photos: [])
        #expect(try ProfileCard(body: removal.body).photos == [])
        #expect(ProfileCard.normalizeCourse("  cs   490 ") == "CS 490")
    }

    /// PROTOCOL.md §6: the course rule works on scalars and bytes, the same in every Unicode
    /// version — the old rule used Swift's grapheme whitespace, full case mapping and canonical
    /// equivalence, which another implementation could not reproduce.
    @Test func theCanonicalCourseIsDefinedOnScalarsAndBytes() throws {
        #expect(ProfileCard.normalizeCourse(" \u{00C1}lgebra\u{2003}ii ") == "\u{00C1}LGEBRA II")
        #expect(ProfileCard.normalizeCourse("\u{00E9}co 101") == "\u{00E9}CO 101")   // é kept: not ASCII
        #expect(ProfileCard.normalizeCourse("a\t\n\u{3000}b") == "A B")
        func accepts(_ courses: [String]) -> Bool { (try? ProfileCard(courses: courses).validated()) != nil }
        #expect(accepts(["\u{00E9}CO 101"]))                                      // old rule: refused (full upper case)
        #expect(accepts(["\u{00C9}CO 101", "E\u{0301}CO 101"]))                     // old rule: refused (canonically equal)
        #expect(!accepts(["CS\u{00A0}490"]))                                        // whitespace other than U+0020
        #expect(!accepts(["CS \u{0001}490"]) && !accepts(["CS\u{0085}490"]) && !accepts(["CS\u{009B}1"]))
        #expect(!accepts(["cs 490"]) && !accepts(["CS  490"]) && !accepts([" CS 490"]) && !accepts(["CS 490", "CS 490"]))
    }

    @Test func aValueThatDoesNotFitIsRefusedNotTruncated() {
        let long = String(repeating: "A", count: 260)     // would wrap a u8 length to 4
        #expect { try ProfileCard(courses: [long]).validated() } throws: { ($0 as? RecordError)?.code == .invalidBody }
        #expect { try ProfileCard(courses: (0..<40).map { "C\($0)" }).validated() } throws: { ($0 as? RecordError)?.code == .invalidBody }
        #expect { try ProfileCard(name: String(repeating: "n", count: 101)).validated() } throws: { ($0 as? RecordError)?.code == .invalidBody }
        #expect((try? ProfileCard(name: "Ana", courses: ["CS 490"]).validated()) != nil)
    }

    @Test func photoFormatIsSniffedFromContent() {
        #expect(PhotoRef.sniff([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(PhotoRef.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(PhotoRef.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        #expect(PhotoRef.sniff(Array("GIF89a".utf8)) == nil)
        #expect(PhotoRef.sniff(Array("<svg>".utf8)) == nil)
    }

    @Test func sealedPayloadsRoundTripAndRefuseGarbage() throws {
        let like = LikePayload(target: other, liked: true, peerSeq: 9)
        #expect(try LikePayload(plaintext: like.plaintext) == like)
        let chat = ChatPayload(recipient: other, peerSeq: 42, answers: [UInt8](repeating: 3, count: 32), text: "hi 👋")
        #expect(try ChatPayload(plaintext: chat.plaintext) == chat)
        // Payloads written before the peer seq of likes and the answered like of chats existed
        // still open (peer seq 0, no answered like: such a message is never valid).
        #expect(try LikePayload(plaintext: [1, 0, 32] + other.bytes + [2, 0, 1, 1]) == LikePayload(target: other, liked: true, peerSeq: 0))
        #expect(try ChatPayload(plaintext: ChatPayload(recipient: other, peerSeq: 1, answers: nil, text: "old").plaintext).answers == nil)
        // An answered-like field of another size is malformed.
        #expect(throws: RecordError.self) {
            try ChatPayload(plaintext: ChatPayload(recipient: other, peerSeq: 1, answers: [1, 2, 3], text: "x").plaintext)
        }
        let un = UnmatchPayload(target: other, peerSeq: 3)
        #expect(try UnmatchPayload(plaintext: un.plaintext) == un)
        #expect(throws: RecordError.self) { try ChatPayload(plaintext: ChatPayload(recipient: other, peerSeq: 1, answers: nil, text: "").plaintext) }
        #expect(throws: RecordError.self) { try LikePayload(plaintext: [1, 0, 2, 1, 2]) }
    }
}
