import MentorCore
@testable import MentorNode
import Testing

@Suite struct StorageBudgetTests {
    func key(_ i: Int) -> PublicKey {
        var b = [UInt8](repeating: 0, count: 32)
        b[0] = UInt8(i & 0xff); b[1] = UInt8((i >> 8) & 0xff); b[2] = UInt8((i >> 16) & 0xff)
        return PublicKey(bytes: b)!
    }

    @Test func pastTheAccountBudgetNewStrangersAreDeclinedButKnownOnesAndPriorityClassesAreKept() {
        var budget = StorageBudget(settings: .init(maxAccounts: 2, maxBytes: 1 << 30, declinedCapacity: 8))
        for i in 0..<2 {
            #expect(budget.decide(key(i), priority: .other, isNew: true, size: 100) == .store)
            budget.stored(priority: .other, size: 100)
        }
        #expect(budget.accountsFull && budget.accounts == 2)
        #expect(budget.isDegraded, "full is degraded")
        #expect(budget.decide(key(9), priority: .other, isNew: true, size: 100) == .decline)
        #expect(budget.isDeclined(key(9)))
        #expect(budget.decide(key(0), priority: .other, isNew: false, size: 100) == .store, "a stored account keeps its updates")
        for p in [StorageBudget.Priority.own, .partner, .nearby] {
            #expect(budget.decide(key(20 + p.rawValue), priority: p, isNew: true, size: 100) == .store, "\(p) is kept past the budget")
        }
        budget.stored(priority: .own, size: 100)
        #expect(budget.accounts == 4, "own accounts are not counted; the partner and the nearby one are (past the budget)")
        budget.stored(priority: .nearby, size: 100)
        #expect(budget.bytes == 300)
        budget.released(priority: .partner)
        #expect(budget.accounts == 3, "a counted new account whose record was not stored is given back")
        #expect(budget.declinedRecords == 1 && budget.isDegraded)
    }

    /// Batches applied together are all decided before the first is stored: what was let
    /// through and not stored yet counts, so they overshoot the byte budget by at most one
    /// record, not by the whole run (an end-to-end run overshot 1 MiB by 283 KB this way).
    @Test func recordsLetThroughButNotStoredYetCountAgainstTheByteBudget() {
        var budget = StorageBudget(settings: .init(maxAccounts: 100, maxBytes: 1000, declinedCapacity: 8))
        let decisions = (0..<5).map { budget.decide(key(1), priority: .other, isNew: $0 == 0, size: 400) }
        #expect(decisions == [.store, .store, .store, .decline, .decline], "400 + 400 + 400 decided: full before the fourth")
        #expect(budget.bytes == 0 && budget.admitted == 1200 && budget.bytesFull)
        budget.stored(priority: .other, size: 400)
        budget.stored(priority: .other, size: 400)
        budget.notStored(priority: .other, size: 400)   // a duplicate: nothing stored
        #expect(budget.bytes == 800 && budget.admitted == 0 && !budget.bytesFull, "settled: only what was stored counts")
        #expect(budget.decide(key(2), priority: .other, isNew: true, size: 100) == .store)
        budget.notStored(priority: .other, size: 100)   // its batch failed
        budget.released(priority: .other)
        #expect(budget.admitted == 0 && budget.accounts == 1)
        #expect(budget.decide(key(3), priority: .own, isNew: true, size: 5000) == .store)
        #expect(budget.admitted == 0, "own accounts are never counted")
    }

    @Test func pastTheByteBudgetEveryStrangersRecordIsDeclined() {
        var budget = StorageBudget(settings: .init(maxAccounts: 100, maxBytes: 250, declinedCapacity: 8))
        #expect(budget.decide(key(1), priority: .other, isNew: true, size: 200) == .store)
        budget.stored(priority: .other, size: 200)
        #expect(budget.decide(key(1), priority: .other, isNew: false, size: 100) == .store)
        budget.stored(priority: .other, size: 100)
        #expect(budget.bytesFull)
        #expect(budget.decide(key(1), priority: .other, isNew: false, size: 100) == .decline)
        #expect(budget.decide(key(2), priority: .partner, isNew: true, size: 100) == .store)
    }

    @Test func aBatchOfNewAccountsCannotOvershootTheBudgetBeforeItIsApplied() {
        var budget = StorageBudget(settings: .init(maxAccounts: 10, maxBytes: 1 << 30, declinedCapacity: 1024))
        // 256 new accounts decided in one batch, none of them applied yet.
        let stored = (0..<256).filter { budget.decide(key($0), priority: .other, isNew: true, size: 100) == .store }.count
        #expect(stored == 10 && budget.accounts == 10, "decide counts each new account it lets through")
        #expect(budget.wouldDecline(priority: .other, isNew: true, author: key(999)))
        #expect(!budget.wouldDecline(priority: .nearby, isNew: true, author: key(999)))
        #expect(!budget.wouldDecline(priority: .other, isNew: false, author: key(3)), "a held account keeps its updates")
    }

    @Test func theDeclinedSetIsBoundedAndForgetsTheOldestFirst() {
        var budget = StorageBudget(settings: .init(maxAccounts: 0, maxBytes: 1 << 30, declinedCapacity: 3))
        for i in 0..<5 { #expect(budget.decide(key(i), priority: .other, isNew: true, size: 1) == .decline) }
        #expect(budget.declinedAuthors == 3)
        #expect(!budget.isDeclined(key(0)) && !budget.isDeclined(key(1)))
        #expect(budget.isDeclined(key(2)) && budget.isDeclined(key(3)) && budget.isDeclined(key(4)))
        #expect(budget.declinedRecords == 5)
    }

    @Test func campusShapeCountsAreKeptWithoutAPassOverAccounts() {
        // 50,000 accounts of 3 records each: every decision and report is O(1).
        var budget = StorageBudget(settings: .init(maxAccounts: 40_000, maxBytes: 1 << 40, declinedCapacity: 1 << 16))
        var declined = 0
        for i in 0..<50_000 {
            var held = false
            for _ in 0..<3 {
                if budget.decide(key(i), priority: .other, isNew: !held, size: 200) == .store {
                    budget.stored(priority: .other, size: 200)
                    held = true
                } else { declined += 1 }
            }
        }
        #expect(budget.accounts == 40_000 && budget.bytes == 40_000 * 600)
        #expect(declined == 30_000, "every record of the 10,000 strangers past the budget is declined")
        #expect(budget.declinedAuthors == 10_000)
    }
}
