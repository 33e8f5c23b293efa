import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import MentorSystem

/// The received batches' way into the replica, for every link of a shell: each batch is
/// verified on `verifyQueue` and applied on `applyQueue` (serial: batches of one link in order,
/// one writer for the replica), so link I/O, keep-alives and pushes on the shell's `queue` never
/// wait behind replica work; the outcome comes back to `queue`, to the link it came from.
///
/// - While batch k is applied, batch k+1 (and the others the window lets in flight) are decoded
///   and their signatures checked on the other cores, so a sync runs at the rate of the apply
///   alone instead of verify + apply one after the other. Bounded: a session closes a peer with
///   more than `window` batches unacknowledged, and a batch is acknowledged only once queued.
/// - Batches waiting their turn are applied together: each run takes from `ApplyBacklog` the
///   oldest batch and every later one already verified, up to `recordsPerApply` records, in one
///   transaction — the per-transaction work (the commit, the reconciliation tree's upper
///   levels, the cards and pairs shown, the pushes) is shared, as in the local merge's batches
///   of 1,000. Each batch still gets its own outcomes, budget decision (`BudgetGate`) and
///   acknowledgement.
/// - A batch is acknowledged as soon as it is queued (`SyncDriver.accepted`: an ack means
///   taken, not stored), not after its apply, while the records-per-second bucket (`AckPacer`)
///   has paid for it and fewer than `acceptedBatchesMax` batches so acknowledged wait node-wide:
///   the peer then sends the next window while this one is verified and applied, so verifying
///   overlaps applying as in the local merge. At most `window` such batches per link (the
///   session's bound) and `acceptedBatchesMax` in all are held beyond the window.
/// - An outcome goes to the link found again by its key and serial (one closed or replaced
///   meanwhile gets nothing); a failed apply ends that link; offences end the session (its
///   driver decides), refusals that are nobody's fault are deferred and logged once per kind,
///   records dated ahead are held until due and released by a timer here, duplicates go to
///   lazy push, a fork variant starts reconciliation, authors over their budget are abandoned.
///
/// Confinement: `acceptedBatches`, the due-release timer and every link are on the shell's
/// `queue`; `applyWaiting` runs on `applyQueue`; `backlog` and `stopped` have their own locks.
/// `@unchecked Sendable` for those reasons; the injected store, gate, logger and clocks are
/// `Sendable`.
final class ApplyPipeline<Shell: ApplyShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this pipeline (weak: the shell owns the pipeline).
    weak var shell: Shell?
    /// Received records applied in one transaction at most (`PeerManager.Settings.recordsPerApply`).
    let recordsPerApply: Int
    /// Batches acknowledged before their apply that may wait node-wide.
    let acceptedBatchesMax: Int
    /// Where received batches are applied, one run at a time (the replica's one writer), and
    /// where they are decoded and verified meanwhile, several at once.
    let applyQueue = DispatchQueue(label: "MentorNode.PeerManager.apply")
    let verifyQueue = DispatchQueue(label: "MentorNode.PeerManager.verify", attributes: .concurrent)
    private let queue: DispatchQueue
    private let store: ApplyStore
    private let budgetGate: BudgetGate
    /// The campus's membership rule (`Campus`; nil: none), applied after the budgets.
    private let campus: Campus?
    /// The accounts of this node (never declined for membership).
    private let localAccounts: @Sendable () -> [PublicKey]
    private let logger: any Logger
    /// The monotonic clock (acks, timers) and the wall clock in Unix milliseconds (records
    /// held until due).
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let wallClock: @Sendable () -> UInt64

    /// Batches received and not applied yet, in order.
    private let backlog = ApplyBacklog()
    private let gate = NSLock()
    private var stopped = false   // guarded by gate

    // Confined to queue:
    /// Batches acknowledged before their apply, waiting node-wide.
    private(set) var acceptedBatches = 0
    /// Releases the records held until due when the earliest is due, and when it fires.
    private var dueTimer: DispatchWorkItem?
    private var dueTimerAt: ContinuousClock.Instant?

    /// `queue` is the shell's (its links live there); `budgetGate` is the shell's too (it
    /// also answers `status.storage`).
    init(queue: DispatchQueue, store: ApplyStore, budgetGate: BudgetGate, campus: Campus? = nil,
         localAccounts: @escaping @Sendable () -> [PublicKey] = { [] }, recordsPerApply: Int, acceptedBatchesMax: Int = 8,
         logger: any Logger, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
         wallClock: @escaping @Sendable () -> UInt64) {
        self.queue = queue
        self.store = store
        self.budgetGate = budgetGate
        self.campus = campus
        self.localAccounts = localAccounts
        self.recordsPerApply = recordsPerApply
        self.acceptedBatchesMax = acceptedBatchesMax
        self.logger = logger
        self.clock = clock
        self.wallClock = wallClock
    }

    /// On `queue`: no release of held records is set any more (the shell stops).
    func cancelTimers() {
        dueTimer?.cancel()
        dueTimer = nil
    }

    /// Off `queue` and `applyQueue`, once the shell stopped: a batch being applied finishes,
    /// none starts after this. Returns once that holds.
    func stop() {
        gate.withLock { stopped = true }
        applyQueue.sync {}
    }

    // MARK: Batches

    /// On `queue`: takes a batch a link's session received. The node-wide budget's sure declines
    /// are dropped unverified (`linked`: an account a linked node named, kept), the rest is
    /// verified on `verifyQueue` and applied on `applyQueue`; its outcome comes back as
    /// `link.applied(...)` (after `link.accepted()` if it was acknowledged when queued).
    func submit(_ batch: [[UInt8]], from link: Link, linked: (PublicKey) -> Bool) {
        let store = self.store
        let afterBudget = budgetGate.declinedBeforeVerifying(batch, linked: linked)
        let kept = campus.map { $0.declinedBeforeVerifying(afterBudget, local: Set(localAccounts())) } ?? afterBudget
        let checked = VerifiedBatch()
        verifyQueue.async { checked.fill(store.verify(kept)) }
        // Records per second: the bucket pays for the batch now; the ack may go at `ackAt`.
        let delay = rateDelay(link, records: batch.count)
        var job = ApplyBacklog.Job(received: batch.count, kept: kept, checked: checked,
                                   key: ObjectIdentifier(link), serial: link.serial,
                                   ackAt: delay.map { clock() + $0 })
        if delay == nil, acceptedBatches < acceptedBatchesMax {
            job.accepted = true
            acceptedBatches += 1
            // After the directive that brought the batch is done (the driver is not re-entered).
            let key = job.key, serial = job.serial
            queue.async { [weak self] in
                guard let self, let link = self.openLink(key, serial) else { return }
                link.accepted()
            }
        }
        // The link stays on `queue`: it is found again there by its key and serial.
        backlog.push(job)
        applyQueue.async { [weak self] in self?.applyWaiting() }
    }

    /// The link a job came from, if the shell still keeps it under the same key and serial,
    /// open, and the shell runs.
    private func openLink(_ key: ObjectIdentifier, _ serial: UInt64) -> Link? {
        guard let shell, let link = shell.link(key), link.serial == serial, !shell.isStopped, !link.closing else { return nil }
        return link
    }

    /// On `applyQueue`: applies the batches `backlog` gives (nothing if an earlier run took
    /// them), then hands each batch's outcome back to its link on `queue`.
    private func applyWaiting() {
        let jobs = backlog.take(records: recordsPerApply)
        guard !jobs.isEmpty, !gate.withLock({ stopped }) else { return }
        let verified = jobs.map { $0.checked.wait() }
        var admittedBytes: [PublicKey: Int64] = [:]
        let budgets = jobs.map { budgetGate.withinBudget($0.kept, admittedBytes: &admittedBytes) }
        // The campus's membership rule, over what the budgets admitted (`Campus.admit`): which
        // of each batch's admitted records are applied.
        var takes = budgets.map { $0.admitted.map { _ in true } }
        var readmitted = jobs.map { _ in [PublicKey]() }
        if let campus {
            let local = Set(localAccounts())
            for k in jobs.indices {
                (takes[k], readmitted[k]) = campus.admit(budgets[k].admitted.map { try? verified[k][$0].get() }, local: local)
            }
        }
        let applying = jobs.indices.map { k in zip(budgets[k].admitted, takes[k]).filter(\.1).map(\.0) }
        let store = self.store
        let result = Result<[[ApplyOutcome]], StoreError> { () throws(StoreError) in
            try store.apply(jobs.indices.map { k in
                (verified: applying[k].map { verified[k][$0] }, origin: jobs[k].serial)
            })
        }
        for (k, job) in jobs.enumerated() {
            let (indices, overBudget, classes) = budgets[k]
            let batchResult = result.map { $0[k] }
            // The budgets count every record they admitted: a record the campus declined was
            // not stored (a new account it counted is given back).
            let counted = (try? batchResult.get()).map { outcomes -> [ApplyOutcome] in
                var next = outcomes.makeIterator()
                return takes[k].map { $0 ? next.next() ?? .duplicate : .duplicate }
            }
            budgetGate.countStored(indices.map { job.kept[$0] }, classes, counted)
            let admitted = applying[k].map { job.kept[$0] }
            let again = readmitted[k]
            queue.async { self.applied(batchResult, of: job, admitted: admitted, overBudget: overBudget, readmitted: again) }
        }
    }

    /// On `queue`: a batch's outcome goes to its link's session (acknowledged, deferred, blamed).
    private func applied(_ result: Result<[ApplyOutcome], StoreError>, of job: ApplyBacklog.Job,
                         admitted: [[UInt8]], overBudget: [PublicKey], readmitted: [PublicKey] = []) {
        if job.accepted { acceptedBatches -= 1 }
        guard let shell, let link = openLink(job.key, job.serial) else { return }
        switch result {
        case .failure(let error):
            shell.applyFailed(link, reason: "applying records from the peer failed: \(error)")
        case .success(let outcomes):
            shell.duplicatesApplied(outcomes.filter { $0 == .duplicate }.count, from: link)
            let verdict = PeerManager.RefusalVerdict(outcomes, admitted)   // outcomes are those of the admitted records
            let refused = verdict.offences
            noteNotNow(verdict, from: link)
            // Accounts declined until a certificate of this batch made them members: ask for
            // their earlier records now (`Campus.admit`).
            if !readmitted.isEmpty { link.deferred(readmitted) }
            // Records per second: the ack waits until the bucket has paid for the batch (an ack
            // sent when the batch was queued has nothing left to wait for).
            let delay = refused == 0 ? job.ackAt.map { max(.zero, $0 - clock()) } : nil
            if let delay { scheduleAcks(link, after: delay) }
            link.applied(stored: outcomes.count - refused, refused: refused, holdAck: delay != nil)
            if !overBudget.isEmpty { link.abandon(overBudget) }
            if outcomes.contains(.forked) { shell.forkApplied() }
        }
    }

    // MARK: Refusals that are nobody's fault (on queue)

    /// Records the link's deferrals in its session (to be asked for again), logs what was not
    /// taken now — the first time per link and kind at info, after that at debug — and wakes
    /// the release of records held until due. Nothing here blames the peer.
    private func noteNotNow(_ verdict: PeerManager.RefusalVerdict, from link: Link) {
        if let e = verdict.firstOffence, e.code == .insufficientWork {
            // The session closes on it and the penalty is logged. This one offence an honest
            // node commits too, when its network_work_bits differs from ours: one line says so.
            logger.info("a record from a peer was refused as its fault", ["peer.address": link.remoteAddress,
                        "code": e.code.name, "records": "\(verdict.offences)", "why": e.message])
        }
        link.deferred(verdict.deferred)
        for (code, count) in verdict.notNow.sorted(by: { $0.key < $1.key }) {
            let first = link.notNowLogged.insert(code).inserted
            logger.log(first ? .info : .debug, "records from a peer not taken now (no fault of the peer; the link stays)",
                       ["peer.address": link.remoteAddress, "code": code, "records": "\(count)",
                        "then": code == RecordError.Code.equivocation.name ? "evidence kept" : "asked for again later"])
        }
        if let author = verdict.heldUntilDue.first {
            link.heldAside(verdict.heldUntilDue)
            let first = link.notNowLogged.insert("held-until-due").inserted
            logger.log(first ? .info : .debug, "records dated ahead of this node's clock are held until due (the author's clock runs fast)",
                       ["peer.address": link.remoteAddress, "author": author.shortID, "authors": "\(verdict.heldUntilDue.count)"])
            scheduleDueRelease()
        }
    }

    /// On `queue`: applies the records held until due once the earliest is due by the wall
    /// clock (looked at again at least once a minute: the wall clock may jump), on `applyQueue`
    /// like a batch.
    func scheduleDueRelease() {
        guard let shell, !shell.isStopped else { return }
        let dueAt: UInt64?
        do { dueAt = try store.nextDue() } catch {
            logger.info("reading the records held until due failed", ["error": "\(error)"])
            return
        }
        guard let dueAt else { return }
        let now = wallClock()
        let wait = Duration.milliseconds(Int64(min(dueAt - min(dueAt, now), 60_000)))
        let fireAt = clock() + wait
        if dueTimer != nil, let at = dueTimerAt, at <= fireAt { return }
        dueTimer?.cancel()
        let store = self.store
        let timer = DispatchWorkItem { [weak self] in
            guard let self, let shell = self.shell, !shell.isStopped else { return }
            self.dueTimer = nil
            self.dueTimerAt = nil
            self.applyQueue.async { [weak self] in
                guard let self, !self.gate.withLock({ self.stopped }) else { return }
                do {
                    let released = try store.releaseDue()
                    if released > 0 { self.logger.debug("records held until due applied", ["records": "\(released)"]) }
                } catch {
                    self.logger.info("applying the records held until due failed", ["error": "\(error)"])
                }
                self.queue.async { self.scheduleDueRelease() }
            }
        }
        dueTimer = timer
        dueTimerAt = fireAt
        shell.schedule(timer, at: fireAt)
    }

    // MARK: Ack pacing (on queue)

    /// Takes `records` from the link's bucket; the delay before acks may go, if any (`AckPacer`).
    private func rateDelay(_ link: Link, records: Int) -> Duration? {
        let held = link.heldAcks
        return link.pacer.take(records, heldAcks: held, now: clock())
    }

    /// Releases the link's held acks once its bucket's debt is paid (one timer per link).
    private func scheduleAcks(_ link: Link, after delay: Duration) {
        guard link.ackTimer == nil, let shell else { return }
        let timer = DispatchWorkItem { [weak self, weak link] in
            guard let self, let link, let shell = self.shell, !shell.isStopped, !link.closing else { return }
            link.ackTimer = nil
            // More batches may have been applied meanwhile: wait out the whole debt.
            if let more = self.rateDelay(link, records: 0), more > .zero {
                self.scheduleAcks(link, after: more)
                return
            }
            link.releaseAcks()
        }
        link.ackTimer = timer
        shell.schedule(timer, at: clock() + delay)
    }
}
