import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Device keys under an account (PROTOCOL.md §6.2, §8.3): certificates, device-signed records,
/// concurrent card edits from two devices, revocation and expiry.
@Suite struct DeviceReplicaTests {
    static let ana = keyPair(150)
    static let laptop = keyPair(151)
    static let lab = keyPair(152)
    static let mallory = keyPair(153)
    static var anaKey: PublicKey { ana.publicKey.key }

    /// Ana's account chain: her first card, then certificates for her laptop and lab machine.
    static func accountChain(labExpires: UInt64? = nil) throws -> (VerifiedRecord, VerifiedRecord, VerifiedRecord, RecordWriter) {
        var w = RecordWriter(keys: ana)
        let card = try w.profile(ProfileCard(name: "Ana", role: .student, bio: "first"), at: 1000)
        let c1 = try w.certify(laptop.publicKey.key, label: "laptop", epoch: 1, at: 1001)
        let c2 = try w.certify(lab.publicKey.key, label: "lab-3", expires: labExpires, epoch: 1, at: 1002)
        return (card, c1, c2, w)
    }

    static func outcomeCode(_ o: ApplyOutcome) -> RecordError.Code? {
        if case .refused(let e) = o { return e.code }
        return nil
    }

    @Test func aDeviceRecordWaitsForItsCertificateThenWritesTheAccountsCard() throws {
        let (card, c1, _, _) = try Self.accountChain()
        var laptopW = RecordWriter(keys: Self.laptop, account: Self.anaKey)
        let edit = try laptopW.profile(ProfileCard(bio: "from the laptop"), at: 2000)
        #expect(edit.encoded[3] == 2)   // format version 2: names the account
        #expect(edit.record.account == Self.anaKey && edit.record.author == Self.laptop.publicKey.key)

        let r = try memoryReplica()
        let early = try r.applyOne(edit)
        #expect(early == .held)
        #expect(try r.applyOne(card) == .applied)
        let stillHeld = try r.card(of: Self.anaKey)?.card.bio
        #expect(stillHeld == "first")
        #expect(try r.applyOne(c1) == .applied)
        let bio = try r.card(of: Self.anaKey)?.card.bio
        #expect(bio == "from the laptop")
        // The device is no account of its own: no card, not among the known accounts.
        #expect(try r.card(of: Self.laptop.publicKey.key)?.card.name == nil)
        #expect(try !r.knownAuthors().contains(Self.laptop.publicKey.key))
        let devices = try r.devices(of: Self.anaKey)
        #expect(devices.map(\.label) == ["laptop"])
        #expect(devices.first?.lastSeq == 1)
    }

    @Test func concurrentEditsFromTwoDevicesAreAConflictUntilAnEditThatSawBoth() throws {
        let (card, c1, c2, _) = try Self.accountChain()
        var laptopW = RecordWriter(keys: Self.laptop, account: Self.anaKey)
        var labW = RecordWriter(keys: Self.lab, account: Self.anaKey)
        // Both saw only the account's first card (the account key's seq 1).
        let seen = VectorClock([(Self.anaKey, 1)])
        let a = try laptopW.next(.profile, body: ProfileCard(bio: "laptop bio").validated().body, clock: seen, at: 3000)
        let b = try labW.next(.profile, body: ProfileCard(bio: "lab bio").validated().body, clock: seen, at: 3001)
        let records = [card, c1, c2, a, b]
        var digests: Set<[UInt8]> = []
        for order in [records, records.reversed(), [b, c2, card, a, c1]] {
            let r = try memoryReplica()
            for v in order { _ = try r.applyOne(v) }
            let state = try #require(try r.card(of: Self.anaKey))
            #expect(state.card.bio == "lab bio")                       // the later timestamp wins
            #expect(state.conflicts[.bio] == [Array("laptop bio".utf8)])
            #expect(!state.forked)                                     // ordinary concurrency, no fork
            digests.insert(try r.digest())
        }
        #expect(digests.count == 1)
        // An edit that saw both resolves it everywhere.
        let resolved = try laptopW.next(.profile, body: ProfileCard(bio: "settled").validated().body,
                                        clock: VectorClock([(Self.anaKey, 1), (Self.lab.publicKey.key, 1)]), at: 4000)
        let r = try memoryReplica()
        for v in records + [resolved] { _ = try r.applyOne(v) }
        let state = try #require(try r.card(of: Self.anaKey))
        #expect(state.card.bio == "settled")
        #expect(state.conflicts[.bio] == nil)
        // Both superseded device cards were dropped (compaction is per account).
        #expect(try r.counts().records == 4)
    }

    @Test func aRevokedDevicesLaterRecordsAreRefusedAndThoseHeldAlreadyRemoved() throws {
        var (card, c1, c2, w) = try Self.accountChain()
        var labW = RecordWriter(keys: Self.lab, account: Self.anaKey)
        let before = try labW.profile(ProfileCard(bio: "lab, before"), at: 3000)       // seq 1
        let after = try labW.profile(ProfileCard(name: "Stolen"), at: 3001)           // seq 2
        let revoke = try w.revoke(Self.lab.publicKey.key, lastSeq: 1, at: 3500)
        let later = try labW.profile(ProfileCard(bio: "lab, later"), at: 3600)        // seq 3

        // Revocation after the device's records: seq 2 is removed, seq 1 stays.
        let r = try memoryReplica()
        for v in [card, c1, c2, before, after] { #expect(try r.applyOne(v) == .applied) }
        let stolen = try r.card(of: Self.anaKey)?.card.name
        #expect(stolen == "Stolen")
        #expect(try r.applyOne(revoke) == .applied)
        let state = try #require(try r.card(of: Self.anaKey))
        #expect(state.card.name == "Ana")
        #expect(state.card.bio == "lab, before")
        #expect(Self.outcomeCode(try r.applyOne(later)) == .deviceRevoked)
        #expect(Self.outcomeCode(try r.applyOne(after)) == .deviceRevoked)
        #expect(try r.records(of: Self.lab.publicKey.key, seqs: 1...10).count == 1)
        #expect(try r.devices(of: Self.anaKey).first { $0.label == "lab-3" }?.revokedAfter == 1)

        // Revocation first: the same state, whatever the order.
        let s = try memoryReplica()
        for v in [card, revoke, c2, after, later, before, c1] { _ = try s.applyOne(v) }
        #expect(try s.digest() == r.digest())
        // Refusing a revoked device's records is no offence (a relay may not hold the revocation).
        #expect(!RecordError.Code.deviceRevoked.isOffence && !RecordError.Code.deviceRevoked.isDeferral)
    }

    @Test func aDeviceRevokingItselfWritesNoMore() throws {
        let (card, c1, _, _) = try Self.accountChain()
        var laptopW = RecordWriter(keys: Self.laptop, account: Self.anaKey)
        let edit = try laptopW.profile(ProfileCard(bio: "bye"), at: 3000)
        let selfRevoke = try laptopW.revoke(Self.laptop.publicKey.key, lastSeq: 0, at: 3001)
        #expect(try DeviceRevocation(body: selfRevoke.record.body).lastSeq == 2)
        let after = try laptopW.profile(ProfileCard(bio: "still here?"), at: 3002)
        let r = try memoryReplica()
        for v in [card, c1, edit, selfRevoke] { #expect(try r.applyOne(v) == .applied) }
        #expect(Self.outcomeCode(try r.applyOne(after)) == .deviceRevoked)
        let bio = try r.card(of: Self.anaKey)?.card.bio
        #expect(bio == "bye")
    }

    @Test func anExpiredDevicesRecordsAreRefused() throws {
        let (card, c1, c2, _) = try Self.accountChain(labExpires: 5000)
        var labW = RecordWriter(keys: Self.lab, account: Self.anaKey)
        let inTime = try labW.profile(ProfileCard(bio: "in time"), at: 4999)
        let late = try labW.profile(ProfileCard(bio: "too late"), at: 5001)
        let r = try memoryReplica()
        for v in [card, c1, c2, inTime] { #expect(try r.applyOne(v) == .applied) }
        #expect(Self.outcomeCode(try r.applyOne(late)) == .deviceExpired)
        // Held back before the certificate, refused when it arrives.
        let s = try memoryReplica()
        for v in [card, c1, late, inTime] { _ = try s.applyOne(v) }
        #expect(try s.applyOne(c2) == .applied)
        let bio = try s.card(of: Self.anaKey)?.card.bio
        #expect(bio == "in time")
        #expect(try s.counts().pending == 0)
    }

    @Test func certificatesAndRevocationsOnlyFromTheRightKeys() throws {
        let (card, c1, _, _) = try Self.accountChain()
        _ = card; _ = c1
        // A device cannot certify another device.
        var laptopW = RecordWriter(keys: Self.laptop, account: Self.anaKey)
        #expect(throws: RecordError.self) {
            _ = try laptopW.certify(Self.mallory.publicKey.key, label: "evil", epoch: 1, at: 3000)
        }
        // Nor revoke another one.
        #expect(throws: RecordError.self) { _ = try laptopW.revoke(Self.lab.publicKey.key, lastSeq: 0, at: 3000) }
        // The account cannot certify or revoke its own key.
        var w = RecordWriter(keys: Self.ana, lastSeq: 5)
        #expect(throws: RecordError.self) {
            _ = try w.certify(Self.anaKey, label: "me", epoch: 1, at: 3000)
        }
        #expect(throws: RecordError.self) { _ = try w.revoke(Self.anaKey, lastSeq: 1, at: 3000) }
        // A device has no Ed25519 account key to seal with: without an encryption key it cannot.
        #expect(throws: RecordError.self) { _ = try laptopW.like(Self.mallory.publicKey.key, at: 3000) }
        // A device certified by Ana cannot write for Mallory: its record waits for a
        // certificate from Mallory that never comes.
        var mw = RecordWriter(keys: Self.mallory)
        let mCard = try mw.profile(ProfileCard(name: "Mallory"), at: 1000)
        var hijack = RecordWriter(keys: Self.laptop, account: Self.mallory.publicKey.key)
        let claim = try hijack.profile(ProfileCard(bio: "Ana's laptop, for Mallory"), at: 3000)
        let r = try memoryReplica()
        for v in [card, c1, mCard] { _ = try r.applyOne(v) }
        #expect(try r.applyOne(claim) == .held)
        let bio = try r.card(of: Self.mallory.publicKey.key)?.card.bio
        #expect(bio == nil)
    }

    /// A node holding only the account key (an account made before devices existed, or the
    /// machine it was imported to) makes each published epoch's key from it and reads what is
    /// sealed to the account's encryption key.
    @Test func theAccountKeyAloneReadsWhatIsSealedToItsEpochKeys() throws {
        let (card, c1, _, _) = try Self.accountChain()
        var bw = RecordWriter(keys: Self.mallory)
        let benCard = try bw.profile(ProfileCard(name: "Ben"), at: 1000)
        // Ben seals to Ana's epoch-1 key (published in her certificate).
        let epoch1 = try #require(try DeviceCertificate(body: c1.record.body).encryptionKey.publicKey)
        let benSecret = try #require(AccountKeyring.derived(from: Self.mallory, epochs: 1...1).secrets[1])
        bw.sealingKey = try SealingKey(account: Self.mallory.publicKey.key, epoch: 1, secret: benSecret)
        let like = try bw.like(Self.anaKey, to: epoch1, at: 2000)
        let r = try memoryReplica()
        try r.unlock(account: Self.anaKey, accountKeys: Self.ana, device: nil)
        for v in [card, benCard, like] { _ = try r.applyOne(v) }
        #expect(try r.pairView(account: Self.anaKey, other: Self.mallory.publicKey.key).theyLike == false, "before the epoch is known")
        _ = try r.applyOne(c1)
        #expect(try r.pairView(account: Self.anaKey, other: Self.mallory.publicKey.key).theyLike, "the certificate published epoch 1")
        #expect(r.sealingKey(for: Self.anaKey)?.epoch == 1)
    }

    /// An unmatch purges its author's messages of the match by their purge tag, on a relay too
    /// (it cannot read them); a copy offered again is a duplicate; the database stays sound.
    @Test func anUnmatchPurgesItsAuthorsMessagesOnARelay() throws {
        var a = RecordWriter(keys: Self.ana), b = RecordWriter(keys: Self.mallory)
        let cards = [try a.profile(ProfileCard(name: "Ana"), at: 1), try b.profile(ProfileCard(name: "Ben"), at: 1)]
        let la = try a.like(b.author, at: 2), lb = try b.like(a.author, at: 3)
        let m1 = try a.chat(to: b.author, peerSeq: 1, answers: lb.id, mine: la.id, text: "one", at: 4)
        let m2 = try a.chat(to: b.author, peerSeq: 2, answers: lb.id, mine: la.id, text: "two", at: 5)
        let reply = try b.chat(to: a.author, peerSeq: 3, answers: la.id, mine: lb.id, text: "three", at: 6)
        let unmatch = try a.unmatch(b.author, peerSeq: 0, answers: lb.id, mine: la.id, at: 7)
        let relay = try memoryReplica()
        for v in cards + [la, lb, m1, m2, reply] { #expect(try relay.applyOne(v) == .applied) }
        #expect(try relay.records(of: a.author, seqs: 1...10).count == 4)
        #expect(try relay.applyOne(unmatch) == .applied)
        // Ana's two messages are gone; Ben's stays until his own unmatch (only he has his tag).
        let left = try relay.records(of: a.author, seqs: 1...10).compactMap { try? Record.decode($0).type }
        #expect(left == [.profile, .like, .unmatch])
        #expect(try relay.records(of: b.author, seqs: 1...10).count == 3)
        #expect(try relay.applyOne(m1) == .duplicate)
        let integrity = try relay.integrityCheck()
        #expect(integrity == ["ok"], "\(integrity)")
    }

    /// Sync reads a record's position from its prefix (`RecordPosition.peek`): in format
    /// version 2 the account comes first, then the signing key and its seq.
    @Test func syncReadsADeviceRecordsPositionPastTheAccount() throws {
        var w = RecordWriter(keys: Self.laptop, account: Self.anaKey, lastSeq: 6)
        let v = try w.profile(ProfileCard(bio: "x"), at: 1)
        let position = try RecordPosition.peek(v.encoded)
        #expect(position.author == Self.laptop.publicKey.key && position.seq == 7)
        var aw = RecordWriter(keys: Self.ana, lastSeq: 2)
        let old = try RecordPosition.peek(try aw.profile(ProfileCard(name: "Ana"), at: 1).encoded)
        #expect(old.author == Self.anaKey && old.seq == 3)
    }

    @Test func aSecondEncodingOfTheSameRecordIsRefused() throws {
        var w = RecordWriter(keys: Self.laptop, account: Self.anaKey)
        let v = try w.profile(ProfileCard(bio: "x"), at: 1)
        #expect(try Record.decode(v.encoded) == v.record)
        // Version 2 naming its own author as the account: malformed (that record is version 1).
        let selfNamed = Record.signedBytes(type: .profile, author: Self.laptop.publicKey.key, seq: 1, timestamp: 1,
                                           clock: VectorClock(), body: try ProfileCard(bio: "x").validated().body)
        var v2 = selfNamed
        v2[3] = 2
        v2.insert(contentsOf: Self.laptop.publicKey.key.bytes, at: 5)
        let signed = v2 + Self.laptop.signature(for: v2)
        #expect(throws: RecordError(.malformed, "a version-2 record names its own author as its account; a record the account key signs is version 1")) {
            _ = try VerifiedRecord(signed)
        }
        // A version-1 record still decodes exactly as before (its account is its author).
        var aw = RecordWriter(keys: Self.ana)
        let old = try aw.profile(ProfileCard(name: "Ana"), at: 1)
        #expect(old.encoded[3] == 1 && old.record.account == Self.anaKey && !old.record.isDeviceSigned)
    }
}
