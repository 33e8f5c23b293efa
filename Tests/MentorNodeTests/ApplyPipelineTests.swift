import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import Testing
@testable import MentorNode
import MentorSystem

/// The received batches' way into the replica (`ApplyPipeline`), over a fake shell, fake links
/// and a stand-in store (no sockets, a manual clock): batches waiting are applied together up
/// to the record limit; a batch is acknowledged when queued only while the pacer has no delay
/// and fewer than 8 are so acknowledged node-wide, and the count is given back after the apply;
/// an apply failure ends only its link; outcomes reach the link the batch came from, never a
/// link closed or replaced since; duplicates, forks and authors over budget reach the shell
/// and the session; the records held until due are released when due.
@Suite struct ApplyPipelineTests {
    /// A link: what the pipeline told its session, in order. Touched on the pipeline's queue
    /// (or the test's thread while the queue is idle).
    final class FakeLink: ApplyLink {
        let serial: UInt64
        var closing = false
        var remoteAddress: String { "10.0.0.\(serial):7000" }
        var pacer: AckPacer
        var ackTimer: DispatchWorkItem?
        var notNowLogged: Set<String> = []
        var heldAcks = 0
        var acceptedCount = 0
        var outcomes: [Outcome] = []
        var deferredAuthors: [[PublicKey]] = []
        var abandoned: [[PublicKey]] = []
        var acksReleased = 0

        struct Outcome: Equatable { var stored: Int, refused: Int, holdAck: Bool }

        init(serial: UInt64, recordsPerSecond: Int = 1_000_000, burst: Int = 1_000_000, now: ContinuousClock.Instant) {
            self.serial = serial
            pacer = AckPacer(recordsPerSecond: recordsPerSecond, burst: burst, now: now)
        }

        func accepted() { acceptedCount += 1 }
        func applied(stored: Int, refused: Int, holdAck: Bool) { outcomes.append(Outcome(stored: stored, refused: refused, holdAck: holdAck)) }
        func deferred(_ authors: [PublicKey]) { if !authors.isEmpty { deferredAuthors.append(authors) } }
        func heldAside(_ authors: [PublicKey]) {}
        func abandon(_ authors: [PublicKey]) { abandoned.append(authors) }
        func releaseAcks() { acksReleased += 1 }
    }

    /// The shell: the links it keeps by key, the timers asked of it (run by the test), and what
    /// the pipeline told it.
    final class FakeShell: ApplyShell {
        var links: [ObjectIdentifier: FakeLink] = [:]
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var failed: [(serial: UInt64, reason: String)] = []
        var duplicates: [(serial: UInt64, count: Int)] = []
        var forks = 0

        func add(_ link: FakeLink) { links[ObjectIdentifier(link)] = link }
        func link(_ key: ObjectIdentifier) -> FakeLink? { links[key] }
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func applyFailed(_ link: FakeLink, reason: String) { failed.append((link.serial, reason)) }
        func duplicatesApplied(_ count: Int, from link: FakeLink) { duplicates.append((link.serial, count)) }
        func forkApplied() { forks += 1 }
    }

    /// The node and its replica, standing in: a record's first byte names its outcome (see
    /// `record(_:)`), each apply's batches are logged by origin and size, and an apply that
    /// holds a batch of a `failing` link throws.
    final class FakeStore: @unchecked Sendable {   // everything under `lock`
        private let lock = NSLock()
        private var applies: [[(origin: UInt64, records: Int)]] = []
        private var failingOrigins: Set<UInt64> = []
        private var due: UInt64?
        private var released = 0

        var runs: [[(origin: UInt64, records: Int)]] { lock.withLock { applies } }
        var releases: Int { lock.withLock { released } }
        func fail(_ origin: UInt64) { lock.withLock { _ = failingOrigins.insert(origin) } }
        func setDue(_ at: UInt64?) { lock.withLock { due = at } }

        static let outcomes: [ApplyOutcome] = [.applied, .duplicate, .forked, .refused(RecordError(.badSignature, "forged"))]

        var store: ApplyStore {
            ApplyStore(
                // A stand-in for a verified record: the outcome it will have, by index, in the message.
                verify: { batch in batch.map { .failure(RecordError(.malformed, "\($0.first ?? 0)")) } },
                apply: { (batches) throws(StoreError) in
                    let (log, failing) = self.lock.withLock { () -> ([(origin: UInt64, records: Int)], Bool) in
                        let log = batches.map { (origin: $0.origin ?? 0, records: $0.verified.count) }
                        self.applies.append(log)
                        return (log, log.contains { self.failingOrigins.contains($0.origin) })
                    }
                    _ = log
                    if failing { throw StoreError(.error, "disk I/O error") }
                    return batches.map { batch in
                        batch.verified.map { result -> ApplyOutcome in
                            guard case .failure(let e) = result, let k = Int(e.message), k < Self.outcomes.count else { return .applied }
                            return Self.outcomes[k]
                        }
                    }
                },
                nextDue: { () throws(StoreError) in self.lock.withLock { self.due } },
                releaseDue: { () throws(StoreError) in self.lock.withLock { self.released += 1; return 1 } })
        }
    }

    /// A record whose outcome is `ApplyOutcome` number `k` of `FakeStore.outcomes` (not a
    /// record the budgets can read: it is admitted as the replica's to refuse).
    static func record(_ k: UInt8 = 0) -> [UInt8] { [k] }
    static func batch(_ n: Int, _ k: UInt8 = 0) -> [[UInt8]] { Array(repeating: record(k), count: n) }

    /// A pipeline over the fakes; its `queue` stands for the shell's.
    final class Harness {
        let queue = DispatchQueue(label: "ApplyPipelineTests.queue")
        let shell = FakeShell()
        let store: FakeStore
        let clock: ManualClock
        /// The wall clock, in Unix milliseconds (held).
        let wall: UInt64
        let pipeline: ApplyPipeline<FakeShell>

        init(recordsPerApply: Int = 1024, authorBudget: Int64 = 64 << 20) throws {
            let store = FakeStore(), clock = ManualClock(), wall: UInt64 = 1_800_000_000_000
            self.store = store
            self.clock = clock
            self.wall = wall
            let gate = BudgetGate(replica: try Replica(path: ":memory:"), localAccounts: { [] }, authorBudget: authorBudget,
                                  budget: .init(maxAccounts: 1_000, maxBytes: 1 << 30), logger: DiscardingLogger())
            pipeline = ApplyPipeline(queue: queue, store: store.store, budgetGate: gate, recordsPerApply: recordsPerApply,
                                     logger: DiscardingLogger(), clock: { clock.now }, wallClock: { wall })
            pipeline.shell = shell
        }

        func link(_ serial: UInt64, recordsPerSecond: Int = 1_000_000, burst: Int = 1_000_000) -> FakeLink {
            let link = FakeLink(serial: serial, recordsPerSecond: recordsPerSecond, burst: burst, now: clock.now)
            shell.add(link)
            return link
        }

        /// A batch from `link`, handed over on the shell's queue as `PeerManager` does.
        func submit(_ batch: [[UInt8]], from link: FakeLink) {
            queue.sync { pipeline.submit(batch, from: link, linked: { _ in false }) }
        }

        /// Keeps the apply queue busy until the returned closure is called, and then until
        /// every batch submitted meanwhile is verified (so one run can take them all).
        func holdApplies() -> () -> Void {
            let hold = DispatchSemaphore(value: 0)
            pipeline.applyQueue.async { hold.wait() }
            return {
                self.pipeline.verifyQueue.sync(flags: .barrier) {}
                hold.signal()
            }
        }

        /// Waits until every batch submitted is applied and its outcome handed to its link.
        func drain() {
            pipeline.applyQueue.sync {}
            queue.sync {}
        }

        var acceptedBatches: Int { queue.sync { pipeline.acceptedBatches } }
    }

    @Test func batchesWaitingAreAppliedTogetherUpToTheRecordLimitEachWithItsOwnOutcome() throws {
        let h = try Harness(recordsPerApply: 768)
        let a = h.link(1), b = h.link(2)
        let release = h.holdApplies()
        h.submit(Self.batch(256), from: a)
        h.submit(Self.batch(200), from: b)
        h.submit(Self.batch(256), from: a)
        h.submit(Self.batch(100), from: b)
        release()
        h.drain()
        let runs = h.store.runs
        #expect(runs.map { $0.map(\.origin) } == [[1, 2, 1], [2]], "three batches (712 records) fit in 768, the fourth waits: \(runs)")
        #expect(runs.map { $0.map(\.records) } == [[256, 200, 256], [100]])
        #expect(a.outcomes == [.init(stored: 256, refused: 0, holdAck: false), .init(stored: 256, refused: 0, holdAck: false)])
        #expect(b.outcomes == [.init(stored: 200, refused: 0, holdAck: false), .init(stored: 100, refused: 0, holdAck: false)])
    }

    @Test func anEarlyAckIsGivenToAtMostEightBatchesNodeWideAndTheCountIsGivenBackAfterTheApply() throws {
        let h = try Harness()
        let a = h.link(1), b = h.link(2)
        let release = h.holdApplies()
        for _ in 0..<5 { h.submit(Self.batch(1), from: a) }
        for _ in 0..<4 { h.submit(Self.batch(1), from: b) }
        #expect(h.acceptedBatches == 8)
        #expect(a.acceptedCount == 5 && b.acceptedCount == 3, "the ninth batch (b's fourth) waits for its apply to be acknowledged")
        release()
        h.drain()
        #expect(h.acceptedBatches == 0, "every early-acknowledged batch was applied")
        #expect(a.outcomes.count == 5 && b.outcomes.count == 4)
        h.submit(Self.batch(1), from: b)
        #expect(h.queue.sync { b.acceptedCount } == 4, "with the count given back, the next batch is acknowledged when queued")
        h.drain()
    }

    @Test func noEarlyAckWhileThePacerHasADelayAndTheHeldAckGoesWhenTheDebtIsPaid() throws {
        let h = try Harness()
        // 10 records per second, a burst of 10: a batch of 20 leaves a debt of one second.
        let slow = h.link(1, recordsPerSecond: 10, burst: 10)
        let t0 = h.clock.now
        h.submit(Self.batch(20), from: slow)
        h.drain()
        #expect(slow.acceptedCount == 0, "the bucket has not paid for the batch")
        #expect(h.acceptedBatches == 0)
        #expect(slow.outcomes == [.init(stored: 20, refused: 0, holdAck: true)])
        #expect(h.shell.scheduled.count == 1 && h.shell.scheduled[0].at == t0 + .seconds(1))
        // Half paid: the timer looks again later; paid: the held ack goes.
        h.clock.advance(.milliseconds(500))
        h.queue.sync { h.shell.scheduled[0].work.perform() }
        #expect(slow.acksReleased == 0 && h.shell.scheduled.count == 2)
        h.clock.advance(.milliseconds(500))
        h.queue.sync { h.shell.scheduled[1].work.perform() }
        #expect(slow.acksReleased == 1)

        // Acks the session holds back keep a new batch from an early ack too, tokens or not.
        let holding = h.link(2)
        holding.heldAcks = 1
        h.submit(Self.batch(1), from: holding)
        h.drain()
        #expect(holding.acceptedCount == 0)
        #expect(holding.outcomes == [.init(stored: 1, refused: 0, holdAck: true)])
    }

    @Test func anApplyFailureEndsOnlyThatLink() throws {
        let h = try Harness()
        let a = h.link(1), b = h.link(2)
        h.store.fail(1)
        h.submit(Self.batch(3), from: a)
        h.drain()
        h.submit(Self.batch(2), from: b)
        h.drain()
        #expect(h.shell.failed.map(\.serial) == [1])
        #expect(h.shell.failed.first?.reason.hasPrefix("applying records from the peer failed: ") == true)
        #expect(a.outcomes.isEmpty, "a failed batch has no outcome to acknowledge")
        #expect(b.outcomes == [.init(stored: 2, refused: 0, holdAck: false)])
        #expect(h.acceptedBatches == 0, "the failed batch's early ack is given back too")
    }

    @Test func outcomesReachTheirOwnLinkAndNeverALinkClosedOrReplacedSince() throws {
        let h = try Harness()
        let a = h.link(1), b = h.link(2), replaced = h.link(3), closed = h.link(4), closing = h.link(5)
        let release = h.holdApplies()
        h.submit(Self.batch(3), from: a)
        h.submit(Self.batch(5), from: b)
        h.submit(Self.batch(2), from: replaced)
        h.submit(Self.batch(2), from: closed)
        h.submit(Self.batch(2), from: closing)
        // Meanwhile, on the shell's queue: a new link under the replaced one's key (keys are
        // reused once a link is gone), one link gone, one closing.
        let successor = FakeLink(serial: 6, now: h.clock.now)
        h.queue.sync {
            h.shell.links[ObjectIdentifier(replaced)] = successor
            h.shell.links[ObjectIdentifier(closed)] = nil
            closing.closing = true
        }
        release()
        h.drain()
        #expect(a.outcomes == [.init(stored: 3, refused: 0, holdAck: false)])
        #expect(b.outcomes == [.init(stored: 5, refused: 0, holdAck: false)])
        #expect(replaced.outcomes.isEmpty && successor.outcomes.isEmpty, "a different serial under the key: dropped")
        #expect(closed.outcomes.isEmpty && closing.outcomes.isEmpty)
        #expect(h.shell.failed.isEmpty)
        #expect(h.acceptedBatches == 0, "dropped outcomes give their early acks back too")
    }

    @Test func duplicatesForksAndOffencesReachTheShellAndTheSession() throws {
        let h = try Harness()
        let a = h.link(1)
        // applied, duplicate, duplicate, forked, a forged signature (an offence).
        h.submit([Self.record(0), Self.record(1), Self.record(1), Self.record(2), Self.record(3)], from: a)
        h.drain()
        #expect(h.shell.duplicates.map(\.serial) == [1] && h.shell.duplicates.map(\.count) == [2])
        #expect(h.shell.forks == 1, "a fork variant starts reconciliation")
        #expect(a.outcomes == [.init(stored: 4, refused: 1, holdAck: false)], "the session ends on the offence itself")
    }

    @Test func authorsOverTheirStorageBudgetAreAbandoned() throws {
        let h = try Harness(authorBudget: 1)
        let keys = try SigningKeyPair(seed: [UInt8](repeating: 9, count: 32))
        var writer = RecordWriter(keys: keys)
        let card = try writer.profile(ProfileCard(name: "Ana"), at: 1).encoded
        let a = h.link(1)
        h.submit([card, Self.record(0)], from: a)
        h.drain()
        #expect(a.abandoned == [[keys.publicKey.key]])
        #expect(h.store.runs.map { $0.map(\.records) } == [[1]], "the author's record is not applied")
        #expect(a.outcomes == [.init(stored: 1, refused: 0, holdAck: false)])
    }

    @Test func recordsHeldUntilDueAreReleasedWhenDueAndNothingOnceTheShellStopped() throws {
        let h = try Harness()
        h.store.setDue(h.wall + 5_000)
        let t0 = h.clock.now
        h.queue.sync { h.pipeline.scheduleDueRelease() }
        #expect(h.shell.scheduled.count == 1 && h.shell.scheduled[0].at == t0 + .seconds(5))
        // A later due time does not replace the earlier timer.
        h.store.setDue(h.wall + 9_000)
        h.queue.sync { h.pipeline.scheduleDueRelease() }
        #expect(h.shell.scheduled.count == 1)
        h.queue.sync { h.shell.scheduled[0].work.perform() }
        h.drain()
        #expect(h.store.releases == 1)
        #expect(h.shell.scheduled.count == 2, "looked at again after the release")
        h.queue.sync {
            h.shell.isStopped = true
            h.shell.scheduled[1].work.perform()
        }
        h.drain()
        #expect(h.store.releases == 1, "nothing is released once the shell stopped")
    }
}
