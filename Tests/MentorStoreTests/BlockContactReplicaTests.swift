import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Blocks (notes with field 3, PROTOCOL.md §7.6) and contacts sealed to one match (§7.7).
@Suite struct BlockContactReplicaTests {
    static let ana = keyPair(160), ben = keyPair(161), cy = keyPair(162), laptop = keyPair(163)

    /// Ana's card and a device certificate (publishing her epoch-1 key), and a writer that
    /// seals notes with that key.
    static func anaWithNotes() throws -> (records: [VerifiedRecord], writer: RecordWriter) {
        var w = RecordWriter(keys: ana)
        let records = [try w.profile(ProfileCard(name: "Ana"), at: 1), try w.certify(laptop.publicKey.key, label: "laptop", epoch: 1, at: 2)]
        let secret = try #require(AccountKeyring.derived(from: ana, epochs: 1...1).secrets[1])
        w.sealingKey = try SealingKey(account: ana.publicKey.key, epoch: 1, secret: secret)
        return (records, w)
    }

    /// Block notes are a register per (account, target) apart from passes: the newest by
    /// (timestamp, record ID) wins, whatever order the notes arrive in, and a pass or its
    /// undoing does not touch the block.
    @Test func blockNotesAreARegisterOfTheirOwnNewestWinsInAnyOrder() throws {
        let fixture = try Self.anaWithNotes()
        let base = fixture.records
        var w = fixture.writer
        let ben = Self.ben.publicKey.key, cy = Self.cy.publicKey.key
        let block = try w.note(NotePayload(target: ben, blocked: true), at: 10)
        let staleUnblock = try w.note(NotePayload(target: ben, blocked: false), at: 5)
        let pass = try w.note(NotePayload(target: ben, passed: true), at: 11)
        let unpass = try w.note(NotePayload(target: ben, passed: false), at: 12)
        let blockCy = try w.note(NotePayload(target: cy, blocked: true), at: 13)
        let notes = [block, staleUnblock, pass, unpass, blockCy]
        for order in [notes, notes.reversed(), [unpass, blockCy, staleUnblock, pass, block]] {
            let r = try memoryReplica(unlocking: [Self.ana])
            for v in base + order { #expect(try r.applyOne(v) == .applied) }
            #expect(try r.blockedAccounts(of: Self.ana.publicKey.key) == [ben, cy])
            #expect(try r.passes(of: Self.ana.publicKey.key).isEmpty, "the pass was undone; the block stays")
            #expect(try r.blocks(of: Self.ana.publicKey.key).first { $0.target == ben }?.at == 10)
        }
        let r = try memoryReplica(unlocking: [Self.ana])
        for v in base + notes { _ = try r.applyOne(v) }
        #expect(try r.applyOne(try w.note(NotePayload(target: ben, blocked: false), at: 20)) == .applied)
        #expect(try r.blockedAccounts(of: Self.ana.publicKey.key) == [cy])
        // A replica that is not Ana's holds the notes and learns nothing from them.
        let relay = try memoryReplica(unlocking: [Self.ben])
        for v in base + notes { _ = try relay.applyOne(v) }
        #expect(try relay.blockedAccounts(of: Self.ana.publicKey.key).isEmpty)
        #expect(try relay.blockedAccounts(of: ben).isEmpty)
    }

    @Test func aNotePayloadCarriesExactlyOneOfPassedAndBlocked() throws {
        let target = Self.ben.publicKey.key
        for payload in [NotePayload(target: target, passed: true), NotePayload(target: target, blocked: false)] {
            #expect(try NotePayload(plaintext: payload.plaintext) == payload)
        }
        var both = FieldList(); both.set(1, target.bytes); both.set(2, [1]); both.set(3, [1])
        var neither = FieldList(); neither.set(1, target.bytes)
        var badFlag = FieldList(); badFlag.set(1, target.bytes); badFlag.set(3, [2])
        for bad in [both, neither, badFlag] {
            #expect(throws: RecordError.self) { _ = try NotePayload(plaintext: bad.encoded) }
        }
    }

    /// Ana, Ben matched; Ana's contact for Ben.
    static func matchWithContact(_ text: String = "+1 555 0100") throws -> (records: [VerifiedRecord], contact: VerifiedRecord,
                                                                            a: RecordWriter, la: VerifiedRecord, lb: VerifiedRecord) {
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben), c = RecordWriter(keys: cy)
        let cards = [try a.profile(ProfileCard(name: "Ana"), at: 1), try b.profile(ProfileCard(name: "Ben"), at: 1),
                     try c.profile(ProfileCard(name: "Cy"), at: 1)]
        let la = try a.like(b.author, at: 2), lb = try b.like(a.author, at: 3)
        let contact = try a.contact(to: b.author, text: text, answers: lb.id, mine: la.id, at: 4)
        return (cards + [la, lb], contact, a, la, lb)
    }

    /// The recipient reads the contact; the author's other replicas know it was theirs; a third
    /// account reads nothing, and its database holds no byte of the text.
    @Test func aContactIsReadOnlyByTheMatchItIsSealedTo() throws {
        let (records, contact, _, _, _) = try Self.matchWithContact()
        let benKey = Self.ben.publicKey.key, anaKey = Self.ana.publicKey.key
        let dir = NSTemporaryDirectory() + "mm-contact-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let both = try Replica(path: dir + "/both.db", settings: testSettings())
        try both.unlock(Self.ana); try both.unlock(Self.ben)
        let third = try Replica(path: dir + "/third.db", settings: testSettings())
        try third.unlock(Self.cy)
        for r in [both, third] { for v in records + [contact] { #expect(try r.applyOne(v) == .applied) } }
        #expect(try both.pairView(account: benKey, other: anaKey).contact == "+1 555 0100")
        #expect(try both.pairView(account: anaKey, other: benKey).contact == nil, "her own contact is not hers to read from Ben")
        #expect(try third.pairEntries(account: Self.cy.publicKey.key, other: anaKey).isEmpty)
        // The database file and its write-ahead log, as they are on disk.
        let bytes = try ["", "-wal"].reduce(into: Data()) { all, suffix in
            all += (try? Data(contentsOf: URL(fileURLWithPath: dir + "/third.db" + suffix))) ?? Data()
        }
        #expect(bytes.range(of: Data("555 0100".utf8)) == nil, "the third replica holds the contact in clear")
        #expect(bytes.range(of: Data(contact.encoded.suffix(64))) != nil, "the record itself is there (the check can see bytes)")
    }

    /// Per (author, recipient) the newest contact of the standing match wins; "" clears it; a
    /// contact of an ended match is never shown, and the author's unmatch purges it from every
    /// replica, a relay's too — a copy offered again is a duplicate.
    @Test func theNewestContactWinsAndTheAuthorsUnmatchPurgesThem() throws {
        let (records, contact, writer, la, lb) = try Self.matchWithContact()
        var a = writer
        let benKey = Self.ben.publicKey.key, anaKey = Self.ana.publicKey.key
        let newer = try a.contact(to: benKey, text: "@ana on chat", answers: lb.id, mine: la.id, at: 6)
        let cleared = try a.contact(to: benKey, text: "", answers: lb.id, mine: la.id, at: 7)
        let r = try memoryReplica(unlocking: [Self.ben])
        let relay = try memoryReplica()
        for v in records + [newer, contact] { _ = try r.applyOne(v); _ = try relay.applyOne(v) }
        #expect(try r.pairView(account: benKey, other: anaKey).contact == "@ana on chat")
        _ = try r.applyOne(cleared); _ = try relay.applyOne(cleared)
        #expect(try r.pairView(account: benKey, other: anaKey).contact == nil)
        let unmatch = try a.unmatch(benKey, peerSeq: 0, answers: lb.id, mine: la.id, at: 8)
        for replica in [r, relay] {
            #expect(try replica.applyOne(unmatch) == .applied)
            let left = try replica.records(of: anaKey, seqs: 1...20).compactMap { try? Record.decode($0).type }
            #expect(left == [.profile, .like, .unmatch])
            #expect(try replica.applyOne(contact) == .duplicate)
            let integrity = try replica.integrityCheck()
            #expect(integrity == ["ok"], "\(integrity)")
        }
        #expect(try r.pairEntries(account: benKey, other: anaKey).allSatisfy { if case .contact = $0.kind { false } else { true } })
        // A contact written after the end of the match names it still: never shown, not stored.
        let late = try a.contact(to: benKey, text: "too late", answers: lb.id, mine: la.id, at: 9)
        #expect(try r.applyOne(late) == .duplicate)
        #expect(try r.pairView(account: benKey, other: anaKey).contact == nil)
    }

    /// The other side's unmatch ends the match at once for the view (before the author's own
    /// unmatch purges the record).
    @Test func aContactOfAnEndedMatchIsNotShown() throws {
        let (records, contact, _, la, lb) = try Self.matchWithContact()
        var b = RecordWriter(keys: Self.ben, lastSeq: 2)
        let unmatch = try b.unmatch(Self.ana.publicKey.key, peerSeq: 0, answers: la.id, mine: lb.id, at: 5)
        let r = try memoryReplica(unlocking: [Self.ben])
        for v in records + [contact, unmatch] { _ = try r.applyOne(v) }
        #expect(try r.pairView(account: Self.ben.publicKey.key, other: Self.ana.publicKey.key).contact == nil)
    }

    @Test func aContactWithoutAPurgeTagIsRefused() throws {
        let (_, contact, _, _, _) = try Self.matchWithContact()
        var sealed = try SealedBody(body: contact.record.body, what: "contact", maxPlaintext: ContactPayload.maxBytes)
        sealed.purgeTag = nil
        var w = RecordWriter(keys: Self.ana, lastSeq: 3)
        #expect(throws: RecordError.self) { _ = try w.next(.contact, body: sealed.encoded, at: 9) }
        #expect(ContactPayload.maxTextBytes == 200)
    }
}
