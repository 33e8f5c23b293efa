import Foundation
import Testing
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
@testable import MentorNode
import MentorSystem

/// The storage budgets carried out over a replica (`BudgetGate`): an author's budget of bytes,
/// the node-wide count of foreign accounts across batches applied together, and this node's
/// own accounts exempt from both.
@Suite struct BudgetGateTests {
    private func keys(_ seed: UInt8) throws -> SigningKeyPair {
        try SigningKeyPair(seed: [UInt8](repeating: seed, count: 32))
    }

    private func gate(_ replica: Replica, local: [PublicKey] = [], authorBudget: Int64,
                      maxAccounts: Int = 1_000, maxBytes: Int64 = 1 << 30) -> BudgetGate {
        BudgetGate(replica: replica, localAccounts: { local }, authorBudget: authorBudget,
                   budget: .init(maxAccounts: maxAccounts, maxBytes: maxBytes), logger: DiscardingLogger())
    }

    @Test func recordsOfAnAuthorOverItsBudgetAreDroppedAndTheAuthorReported() throws {
        let replica = try Replica(path: ":memory:")
        let anaKeys = try keys(1)
        var ana = RecordWriter(keys: anaKeys)
        let anaKey = anaKeys.publicKey.key
        let benKeys = try keys(2)
        var ben = RecordWriter(keys: benKeys)
        let a = try (1...3).map { try ana.profile(ProfileCard(bio: "bio \($0)"), at: UInt64($0)).encoded }
        let b = try ben.profile(ProfileCard(name: "Ben"), at: 1).encoded
        // Room for Ana's first two records, not her third.
        let budgets = gate(replica, authorBudget: Int64(a[0].count + a[1].count))
        var admittedBytes: [PublicKey: Int64] = [:]
        let batch = [a[0], b, a[1], a[2]]
        let (admitted, over, classes) = budgets.withinBudget(batch, admittedBytes: &admittedBytes)
        #expect(admitted == [0, 1, 2], "Ana's third record is dropped, Ben's is kept")
        #expect(over == [anaKey])
        #expect(classes.count == 3 && classes.allSatisfy { $0.priority == .other })
        #expect(admittedBytes[anaKey] == Int64(a[0].count + a[1].count))
    }

    @Test func aNewAccountIsCountedOnceAcrossBatchesAppliedTogether() throws {
        let replica = try Replica(path: ":memory:")
        let cyKeys = try keys(3)
        var cy = RecordWriter(keys: cyKeys)
        let cyKey = cyKeys.publicKey.key
        let first = try cy.profile(ProfileCard(name: "Cy"), at: 1).encoded
        let second = try cy.profile(ProfileCard(bio: "again"), at: 2).encoded
        // Room for one foreign account: counting Cy twice would decline the second batch.
        let budgets = gate(replica, authorBudget: 1 << 20, maxAccounts: 1)
        var admittedBytes: [PublicKey: Int64] = [:]
        let one = budgets.withinBudget([first], admittedBytes: &admittedBytes)
        let two = budgets.withinBudget([second], admittedBytes: &admittedBytes)
        #expect(one.admitted == [0] && two.admitted == [0], "the second batch is an update of an account admitted already")
        #expect(one.classes.map(\.newAccount) == [true] && two.classes.map(\.newAccount) == [false])
        #expect(admittedBytes[cyKey] == Int64(first.count + second.count))
        #expect(budgets.storage.accounts == 1)
        budgets.countStored([first], one.classes, [.applied])
        budgets.countStored([second], two.classes, [.applied])
        #expect(budgets.storage.accounts == 1 && budgets.storage.bytes == Int64(first.count + second.count))
        #expect(budgets.storage.declinedRecords == 0)
    }

    @Test func recordsOfThisNodesAccountsAreAlwaysAdmitted() throws {
        let replica = try Replica(path: ":memory:")
        let deeKeys = try keys(4)
        var dee = RecordWriter(keys: deeKeys)
        let deeKey = deeKeys.publicKey.key
        let eveKeys = try keys(5)
        var eve = RecordWriter(keys: eveKeys)
        let eveKey = eveKeys.publicKey.key
        let own = try (1...3).map { try dee.profile(ProfileCard(bio: "mine \($0)"), at: UInt64($0)).encoded }
        let stranger = try eve.profile(ProfileCard(name: "Eve"), at: 1).encoded
        // No byte of an author's budget and no foreign account left: only Dee's records pass.
        let budgets = gate(replica, local: [deeKey], authorBudget: 1, maxAccounts: 0)
        var admittedBytes: [PublicKey: Int64] = [:]
        let (admitted, over, classes) = budgets.withinBudget(own + [stranger], admittedBytes: &admittedBytes)
        #expect(admitted == [0, 1, 2])
        #expect(classes.allSatisfy { $0.priority == .own && !$0.newAccount })
        #expect(over == [eveKey], "the stranger is over its budget; the node's own account never is")
        #expect(admittedBytes[deeKey] == nil, "own records are not counted against a budget")
        // Before verifying, the full node-wide budget declines the stranger, never the own account.
        let kept = budgets.declinedBeforeVerifying(own + [stranger]) { _ in false }
        #expect(kept == own)
    }
}
