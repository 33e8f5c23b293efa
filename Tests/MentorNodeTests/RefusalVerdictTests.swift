import Foundation
import Testing
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// What the peer manager makes of a batch's outcomes (PROTOCOL.md §10, "Whose fault"): only
/// refusals the sender could have checked itself count against it; the others are asked for
/// again (gap, pending-full, timestamp past the hold bound) or kept as evidence (equivocation).
@Suite struct RefusalVerdictTests {
    @Test func aFullHoldBackAreaAGapAndAThirdVariantAreNoOffenceAForgeryIs() throws {
        let now: UInt64 = 1_800_000_000_000
        var settings = Replica.Settings()
        settings.now = { now }
        settings.maxPending = 1
        let replica = try Replica(path: ":memory:", settings: settings)
        let ana = try SigningKeyPair(seed: [UInt8](repeating: 1, count: 32))
        let ben = try SigningKeyPair(seed: [UInt8](repeating: 2, count: 32))
        var a = RecordWriter(keys: ana)
        _ = try replica.apply(try a.profile(ProfileCard(name: "Ana"), at: 1).encoded)
        // Records of authors whose seq 1 is not held wait for it (the hold-back area has room
        // for one), unless they are too far ahead.
        let cy = try SigningKeyPair(seed: [UInt8](repeating: 3, count: 32))
        let dee = try SigningKeyPair(seed: [UInt8](repeating: 4, count: 32))
        var skip = RecordWriter(keys: cy, lastSeq: 2)
        let three = try skip.profile(ProfileCard(bio: "3"), at: 3)
        let four = try skip.profile(ProfileCard(bio: "4"), at: 4)
        var gap = RecordWriter(keys: dee, lastSeq: Limits.maxSequenceGap + 10)
        let far = try gap.profile(ProfileCard(name: "Ben"), at: 5)
        let variants = try ["x", "y", "z"].map { bio in
            var w = RecordWriter(keys: ben)
            return try w.profile(ProfileCard(bio: bio), at: 6)
        }.sorted { $0.id.lexicographicallyPrecedes($1.id) }
        _ = try replica.apply(batch: [variants[0].encoded, variants[1].encoded])
        var forged = try a.profile(ProfileCard(bio: "forged"), at: 7).encoded
        forged[forged.count - 1] ^= 1

        let honest = [three.encoded, four.encoded, far.encoded, variants[2].encoded]
        let outcomes = try replica.apply(batch: honest)
        #expect(outcomes.first == .held)
        let verdict = PeerManager.RefusalVerdict(outcomes, honest)
        #expect(verdict.offences == 0, "\(outcomes)")
        #expect(verdict.deferred == [cy.publicKey.key, dee.publicKey.key].sorted(), "pending-full (Cy) and the gap (Dee) are asked for again")
        #expect(verdict.notNow == ["pending-full": 1, "sequence-gap-too-large": 1, "equivocation": 1])

        let withForgery = honest + [forged]
        let again = PeerManager.RefusalVerdict(try replica.apply(batch: withForgery), withForgery)
        #expect(again.offences == 1, "a bad signature proves the sender did not check what it relays")
        #expect(again.firstOffence?.code == .badSignature, "the first offence is kept for the log line")
        #expect(verdict.firstOffence == nil)
    }

    /// On a network that asks for proof of work, a first card without it is the sender's fault
    /// (every node of the network refuses it), and the verdict names the code.
    @Test func aFirstRecordWithoutTheNetworksWorkIsAnOffence() throws {
        var settings = Replica.Settings()
        settings.accountWork = AccountWork.Requirement(bits: 8, network: .default)
        let replica = try Replica(path: ":memory:", settings: settings)
        var bare = RecordWriter(keys: try SigningKeyPair(seed: [UInt8](repeating: 3, count: 32)))
        var paid = RecordWriter(keys: try SigningKeyPair(seed: [UInt8](repeating: 4, count: 32)), accountWork: settings.accountWork)
        let batch = [try paid.profile(ProfileCard(name: "Paid"), at: 1).encoded, try bare.profile(ProfileCard(name: "Free"), at: 1).encoded]
        let outcomes = try replica.apply(batch: batch)
        #expect(outcomes.first == .applied)
        let verdict = PeerManager.RefusalVerdict(outcomes, batch)
        #expect(verdict.offences == 1 && verdict.firstOffence?.code == .insufficientWork && verdict.notNow.isEmpty)
    }
}
