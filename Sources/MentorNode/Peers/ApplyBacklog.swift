import Dispatch
import Foundation
import MentorCore
import MentorCrypto

/// One batch's verification results, filled on `verifyQueue` and waited for on `applyQueue`.
/// `@unchecked Sendable`: `results` is written once under `lock` before `done` is signalled,
/// and read only after `done` (or under `lock`).
final class VerifiedBatch: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var results: [Result<VerifiedRecord, RecordError>]?

    func fill(_ results: [Result<VerifiedRecord, RecordError>]) {
        lock.withLock { self.results = results }
        done.signal()
    }

    /// Whether `wait()` would return at once.
    var isReady: Bool { lock.withLock { results != nil } }

    /// The results, once filled (called once per batch).
    func wait() -> [Result<VerifiedRecord, RecordError>] {
        done.wait()
        return lock.withLock { results ?? [] }
    }
}

/// Received batches waiting to be applied, oldest first: pushed on the peer manager's queue,
/// taken on its apply queue. `@unchecked Sendable`: `jobs` is only touched under `lock`. At
/// most a window of batches per link waits (a peer with more unacknowledged is closed).
final class ApplyBacklog: @unchecked Sendable {
    struct Job {
        /// Records the peer sent in the batch (what its ack pays for), and those left after
        /// the budget's sure declines, being verified in `checked`.
        var received: Int
        var kept: [[UInt8]]
        var checked: VerifiedBatch
        /// The link it came from (found again on the queue by key and serial).
        var key: ObjectIdentifier
        var serial: UInt64
        /// When its ack may go by the records-per-second bucket (nil: at once), and whether it
        /// was acknowledged when queued (`SyncDriver.accepted`).
        var ackAt: ContinuousClock.Instant?
        var accepted = false
    }

    private let lock = NSLock()
    private var jobs: [Job] = []

    func push(_ job: Job) { lock.withLock { jobs.append(job) } }

    /// The oldest batch (verified or not), then each next one already verified, while the
    /// records together stay within `limit`; empty when nothing waits.
    func take(records limit: Int) -> [Job] {
        lock.withLock {
            guard let first = jobs.first else { return [] }
            var count = first.kept.count, n = 1
            while n < jobs.count, jobs[n].checked.isReady, count + jobs[n].kept.count <= limit {
                count += jobs[n].kept.count
                n += 1
            }
            defer { jobs.removeFirst(n) }
            return Array(jobs.prefix(n))
        }
    }
}
