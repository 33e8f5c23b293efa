import Testing
import MentorCore
@testable import MentorCrypto

/// The proof of work of an account's first record (PROTOCOL.md §6.1).
@Suite struct AccountWorkTests {
    /// Cy: the seed 21 22 … 40, whose work at the default difficulty on the built-in network was
    /// found by an independent Python search (hashlib.blake2b), nonce 3184834 (24 zero bits).
    static let cy = try! SigningKeyPair(seed: (0x21...0x40).map { UInt8($0) })   // a fixed 32-byte seed, cannot fail
    static let cyNonce: UInt64 = 3_184_834
    let cheap = AccountWork.Requirement(bits: 8, network: .default)
    let standard = AccountWork.Requirement(bits: AccountWork.defaultBits, network: .default)

    @Test func theWorkHashIsTheDocumentedBLAKE2bAndMatchesAnIndependentSearch() throws {
        let network = AccountWork.networkID(.default)
        #expect(Hex.encode(network) == "f97e5cbd75090a81d861ebee64420815a45f2ca9e3affbaaffcc9566266305c3")
        #expect(network == BLAKE2b.hash(Array("mm-pow-network-v1".utf8), key: NetworkKey.default.bytes, outputLength: 32))
        let key = Self.cy.publicKey.key
        var input = Array("mm-pow-v1".utf8) + network + key.bytes
        input += [0, 0, 0, 0, 0, 0x30, 0x98, 0xc2]   // 3184834 as u64, big-endian
        let hash = AccountWork.hash(account: key, nonce: Self.cyNonce, network: network)
        #expect(hash == BLAKE2b.hash(input))
        #expect(Hex.encode(hash) == "0000008e7cd4c28e87f7692c64305dc6279d2eeba300469c57a10cd74eeb3020")
        #expect(AccountWork.leadingZeroBits(hash) == 24)
        #expect(AccountWork.leadingZeroBits([0x00, 0x01]) == 15 && AccountWork.leadingZeroBits([0x80]) == 0
                && AccountWork.leadingZeroBits([0, 0]) == 16)
    }

    @Test func theSearchFindsTheFirstNonceThatMeetsTheDifficulty() throws {
        let key = Self.cy.publicKey.key
        let nonce = try #require(AccountWork.solve(account: key, requirement: cheap))
        let network = cheap.network
        #expect(AccountWork.bits(account: key, nonce: nonce, network: network) >= 8)
        for earlier in 0..<nonce { #expect(AccountWork.bits(account: key, nonce: earlier, network: network) < 8) }
        #expect(AccountWork.solve(account: key, requirement: .none) == 0, "difficulty 0 needs no search")
        #expect(AccountWork.solve(account: key, requirement: AccountWork.Requirement(bits: 32, network: .default)) { true } == nil,
                "a search told to stop stops")
    }

    @Test func aCardWithEnoughWorkPassesAndOneWithoutOrWithTooLittleIsRefused() throws {
        var writer = RecordWriter(keys: Self.cy)
        let good = try writer.profile(ProfileCard(name: "Cy", role: .tutor, work: Self.cyNonce), at: 1)
        #expect(AccountWork.refusal(of: good.record, requirement: standard) == nil)

        var bare = RecordWriter(keys: Self.cy)
        let none = try bare.profile(ProfileCard(name: "Cy", role: .tutor), at: 1)
        #expect(AccountWork.refusal(of: none.record, requirement: standard)?.code == .insufficientWork)
        #expect(AccountWork.refusal(of: none.record, requirement: .none) == nil, "difficulty 0 asks for nothing")

        // Nonce 0 of Cy falls short of the default difficulty.
        #expect(AccountWork.bits(account: Self.cy.publicKey.key, nonce: 0, network: standard.network) < AccountWork.defaultBits)
        var weak = RecordWriter(keys: Self.cy)
        let little = try weak.profile(ProfileCard(name: "Cy", role: .tutor, work: 0), at: 1)
        let refusal = try #require(AccountWork.refusal(of: little.record, requirement: standard))
        #expect(refusal.code == .insufficientWork && refusal.code.isOffence)
        #expect(refusal.message.contains("\(AccountWork.defaultBits) needed") && refusal.message.contains("network_work_bits"))

        // A first record that is not a card.
        var liker = RecordWriter(keys: Self.cy)
        let like = try liker.like(keyPairOther.publicKey.key, at: 1)
        #expect(AccountWork.refusal(of: like.record, requirement: cheap)?.code == .insufficientWork)
    }

    let keyPairOther = try! SigningKeyPair(seed: [UInt8](repeating: 9, count: 32))   // a fixed seed, cannot fail

    @Test func workIsBoundToTheAccountAndToTheNetwork() throws {
        let other = try NetworkKey(bytes: [UInt8](repeating: 7, count: 32))
        let elsewhere = AccountWork.Requirement(bits: AccountWork.defaultBits, network: other)
        var writer = RecordWriter(keys: Self.cy)
        let card = try writer.profile(ProfileCard(name: "Cy", work: Self.cyNonce), at: 1)
        #expect(AccountWork.refusal(of: card.record, requirement: elsewhere)?.code == .insufficientWork,
                "work for the built-in network is worth nothing on another")
        var thief = RecordWriter(keys: keyPairOther)
        let stolen = try thief.profile(ProfileCard(name: "Thief", work: Self.cyNonce), at: 1)
        #expect(AccountWork.refusal(of: stolen.record, requirement: standard)?.code == .insufficientWork,
                "another account cannot reuse Cy's nonce")
    }

    @Test func onlyTheFirstRecordIsCheckedAndOnlyItMayCarryTheField() throws {
        var writer = RecordWriter(keys: Self.cy, accountWork: cheap)
        let first = try writer.profile(ProfileCard(name: "Cy"), at: 1)
        #expect(ProfileCard.workNonce(inBody: first.record.body) != nil, "the writer searched for the work itself")
        #expect(AccountWork.refusal(of: first.record, requirement: cheap) == nil)
        let second = try writer.profile(ProfileCard(bio: "hi"), at: 2)
        #expect(ProfileCard.workNonce(inBody: second.record.body) == nil, "later edits carry no work")
        #expect(AccountWork.refusal(of: second.record, requirement: standard) == nil, "seq 2 is not checked")
        // A writer that must meet a difficulty refuses to start with anything but the card.
        var eager = RecordWriter(keys: keyPairOther, accountWork: cheap)
        #expect { _ = try eager.like(Self.cy.publicKey.key, at: 1) } throws: { ($0 as? RecordError)?.code == .insufficientWork }
        #expect(eager.lastSeq == 0)
        // The field at seq 2 is refused by the schema on every node.
        #expect { try VerifiedRecord.sign(type: .profile, by: Self.cy, seq: 2, timestamp: 3,
                                          body: ProfileCard(bio: "again", work: 5).body) } throws: { ($0 as? RecordError)?.code == .invalidBody }
    }

    @Test func theRateAndTheMedianAreConsistent() {
        let rate = AccountWork.measureRate(tries: 1 << 16)
        #expect(rate > 1000)
        #expect(AccountWork.medianSeconds(bits: 0, rate: rate) == 0)
        let m = AccountWork.medianSeconds(bits: 20, rate: 1_000_000)
        #expect(m > 0.72 && m < 0.73)
    }
}
