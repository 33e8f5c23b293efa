import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// Which received batches one apply takes together (`ApplyBacklog`): the oldest, verified or
/// not, then each next one already verified, within the record limit, in arrival order.
@Suite struct ApplyBacklogTests {
    private final class Link {}
    private let link = Link()

    private func job(_ records: Int, serial: UInt64 = 1, verified: Bool) -> ApplyBacklog.Job {
        let checked = VerifiedBatch()
        if verified { checked.fill([]) }
        return ApplyBacklog.Job(received: records, kept: Array(repeating: [0], count: records), checked: checked,
                                key: ObjectIdentifier(link), serial: serial)
    }

    @Test func theOldestBatchAndTheVerifiedOnesAfterItAreTakenTogetherUpToTheLimit() {
        let backlog = ApplyBacklog()
        #expect(backlog.take(records: 768).isEmpty, "nothing waits")
        for serial in 1...4 { backlog.push(job(256, serial: UInt64(serial), verified: true)) }
        let first = backlog.take(records: 768)
        #expect(first.map(\.serial) == [1, 2, 3], "three batches of 256 fit in 768, the fourth waits")
        #expect(backlog.take(records: 768).map(\.serial) == [4])
        #expect(backlog.take(records: 768).isEmpty)
    }

    @Test func anUnverifiedBatchIsTakenOnlyFirstAndStopsTheRun() {
        let backlog = ApplyBacklog()
        backlog.push(job(10, serial: 1, verified: false))   // taken, and waited for by the caller
        backlog.push(job(10, serial: 2, verified: true))
        backlog.push(job(10, serial: 3, verified: false))   // not verified yet: the run ends before it
        backlog.push(job(10, serial: 4, verified: true))    // order is kept: not taken past 3
        #expect(backlog.take(records: 768).map(\.serial) == [1, 2])
        #expect(backlog.take(records: 768).map(\.serial) == [3, 4])
    }

    @Test func aBatchLargerThanTheLimitIsStillTakenAlone() {
        let backlog = ApplyBacklog()
        backlog.push(job(1000, serial: 1, verified: true))
        backlog.push(job(1, serial: 2, verified: true))
        #expect(backlog.take(records: 768).map(\.serial) == [1])
        #expect(backlog.take(records: 768).map(\.serial) == [2])
    }

    @Test func aVerifiedBatchIsReadyAndGivesItsResults() {
        let batch = VerifiedBatch()
        #expect(!batch.isReady)
        batch.fill([.failure(RecordError(.malformed, "x"))])
        #expect(batch.isReady)
        #expect(batch.wait().count == 1)
    }
}
