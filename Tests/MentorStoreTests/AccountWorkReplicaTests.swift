import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// A replica of a network that asks for proof of work (PROTOCOL.md §6.1, §9 step 1).
@Suite struct AccountWorkReplicaTests {
    /// Cy's seed and the nonce an independent search found for it at the default difficulty on
    /// the built-in network (AccountWorkTests checks the hash).
    let cy = try! SigningKeyPair(seed: (0x21...0x40).map { UInt8($0) })   // a fixed 32-byte seed, cannot fail
    let cyNonce: UInt64 = 3_184_834

    func replica(bits: Int) throws -> Replica {
        var settings = testSettings()
        settings.accountWork = AccountWork.Requirement(bits: bits, network: .default)
        return try memoryReplica(settings: settings)
    }

    /// At the default difficulty a first card without work, or with too little, is refused as
    /// `insufficient-work` (an offence) and leaves no trace; with enough it is applied.
    @Test func atTheDefaultDifficultyAFirstRecordWithoutEnoughWorkIsRefused() throws {
        let r = try replica(bits: AccountWork.defaultBits)
        let digest = try r.digest()
        var bare = RecordWriter(keys: cy)
        let none = try bare.profile(ProfileCard(name: "Cy", role: .tutor), at: 1000)
        var weak = RecordWriter(keys: cy)
        let little = try weak.profile(ProfileCard(name: "Cy", role: .tutor, work: 0), at: 1000)
        var liker = RecordWriter(keys: cy)
        let like = try liker.like(keyPair(2).publicKey.key, at: 1000)
        for record in [none, little, like] {
            guard case .refused(let e) = try r.applyOne(record) else { Issue.record("applied without work: \(record.record)"); continue }
            #expect(e.code == .insufficientWork && e.code.isOffence)
        }
        #expect(try r.digest() == digest, "refusals store nothing")
        #expect(try r.knownAuthors().isEmpty, "a refused first record leaves no author behind")

        var good = RecordWriter(keys: cy)
        let card = try good.profile(ProfileCard(name: "Cy", role: .tutor, work: cyNonce), at: 1000)
        #expect(try r.applyOne(card) == .applied)
        #expect(try r.card(of: cy.publicKey.key)?.card.name == "Cy")
    }

    /// Records after seq 1 are held back until a valid seq 1 arrives; a seq 1 without work
    /// does not release them.
    @Test func laterRecordsWaitForAValidFirstRecord() throws {
        let r = try replica(bits: 8)
        let requirement = r.settings.accountWork
        let key = keyPair(5)
        var writer = RecordWriter(keys: key, accountWork: requirement)
        let first = try writer.profile(ProfileCard(name: "Eve"), at: 1000)
        let second = try writer.profile(ProfileCard(bio: "second"), at: 2000)
        #expect(try r.applyOne(second) == .held)
        var bare = RecordWriter(keys: key)
        let workless = try bare.profile(ProfileCard(name: "Eve"), at: 1000)
        guard case .refused(let e) = try r.applyOne(workless) else { Issue.record("a workless first card was taken"); return }
        #expect(e.code == .insufficientWork)
        #expect(try r.counts().pending == 1, "the held record stays held")
        let report = try r.applyReporting(batch: [first.encoded]); let (outcomes, stored) = (report.outcomes, report.stored)
        #expect(outcomes == [.applied] && stored.count == 2, "the valid first record releases the held one")
        #expect(try r.card(of: key.publicKey.key)?.card.bio == "second")
    }

    /// The check is part of verification (`Replica.verify`), so every path from outside meets
    /// it — the import pipeline too — and a replica at difficulty 0 takes workless cards.
    @Test func verificationChecksTheWorkOnEveryPath() throws {
        var bare = RecordWriter(keys: keyPair(6))
        let workless = try bare.profile(ProfileCard(name: "Fay"), at: 1000)
        let strict = try replica(bits: 8)
        let summary = try strict.importBatches([[workless.encoded]])
        #expect(summary.refusedByCode[.insufficientWork] == 1 && summary.applied == 0)
        let verified = Replica.verify([workless.encoded], work: strict.settings.accountWork)
        guard case .failure(let e) = verified[0] else { Issue.record("verify passed a workless first card"); return }
        #expect(e.code == .insufficientWork)
        #expect(try replica(bits: 0).applyOne(workless) == .applied, "difficulty 0 asks for no work")
    }
}
