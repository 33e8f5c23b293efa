import Dispatch
import MentorCore
import MentorCrypto
import Synchronization

/// What importing a stream of batches did, summed over the batches that committed.
public struct ImportSummary: Sendable, Equatable {
    /// Batches applied (each one transaction).
    public var batches = 0
    /// Records received in those batches.
    public var records = 0
    /// Stored and merged on arrival.
    public var applied = 0
    /// Stored as a second variant of an (author, seq): the author forked.
    public var forked = 0
    /// Already held, or superseded by what is held: nothing changed.
    public var duplicate = 0
    /// Kept aside until their author's seq 1 arrives, or until due.
    public var held = 0
    /// Refused: failed verification, or refused by the merge rules.
    public var refused = 0
    /// The refusals by reason.
    public var refusedByCode: [RecordError.Code: Int] = [:]
    /// Wall time spent verifying (decode + signatures, on all cores), summed over batches.
    public var verifyTime: Duration = .zero
    /// Wall time spent applying and committing, summed over batches.
    public var applyTime: Duration = .zero
    /// Wall time the importer waited for an apply to finish before it could hand over the next
    /// verified batch. Close to `applyTime` minus `verifyTime` when applying is the bottleneck,
    /// near zero when verifying is.
    public var waitTime: Duration = .zero

    public init() {}

    mutating func add(_ outcomes: [ApplyOutcome]) {
        batches += 1
        records += outcomes.count
        for outcome in outcomes {
            switch outcome {
            case .applied: applied += 1
            case .forked: forked += 1
            case .duplicate: duplicate += 1
            case .held, .heldUntilDue: held += 1
            case .refused(let e):
                refused += 1
                refusedByCode[e.code, default: 0] += 1
            }
        }
    }
}

/// How the connection is tuned while `importBatches` runs; the previous values are restored
/// when it returns (also when it throws).
public struct ImportSettings: Sendable {
    /// SQLite's page cache, in KiB (`PRAGMA cache_size = -N`). A sync touches every author's
    /// last pages and the card registers in each batch; the default 2 MiB cache re-reads them.
    public var cacheKiB = 16 * 1024
    /// WAL pages between automatic checkpoints (`PRAGMA wal_autocheckpoint`). Fewer, larger
    /// checkpoints copy a page rewritten by many batches once. With `synchronous = NORMAL` the
    /// WAL is synced at checkpoints, so a power loss (not a crash) may lose more of the last
    /// commits; it never corrupts. The import ends with a passive checkpoint.
    public var walAutocheckpointPages = 10_000
    /// False: verify each batch, then apply it, one after the other, so `ImportSummary`'s
    /// `verifyTime` and `applyTime` show what each stage costs alone (for diagnosis).
    public var pipelined = true

    public init() {}
}

/// One committed batch of an import, as reported to the `progress` callback.
public struct ImportProgress: Sendable {
    /// 0 for the first batch of the sequence (empty batches are skipped and not counted).
    public var batchIndex: Int
    /// One outcome per record of the batch, in its order.
    public var outcomes: [ApplyOutcome]
    /// Totals so far, this batch included.
    public var summary: ImportSummary
}

extension Replica {
    /// Verifies and applies a stream of batches, verifying batch k+1 (on all cores) while
    /// batch k is applied and committed on the replica's queue. At most two batches are in
    /// memory as verified records at once — the one being applied and the one being verified —
    /// and `batches` is not asked for the next batch before the previous one was handed over,
    /// so a lazy sequence (a socket, a file) is read only as fast as the replica takes it.
    ///
    /// Each batch is one transaction, exactly as `apply(batch:)`: batches are applied in order
    /// and each commits before the next one starts. `progress` is called on the calling thread
    /// once per committed batch, in order. Batches of a few thousand records amortize each
    /// commit (on 2 cores, 2000 records a batch imported about 10% faster than 1000). While
    /// importing, the connection runs with `settings` (a larger page cache, rarer WAL
    /// checkpoints). Blocks the calling thread until the last batch committed.
    ///
    /// Throws the first `StoreError` of an apply: the batches reported to `progress` before it
    /// are committed, the failing batch is not, and no further batch is read or verified.
    /// Records refused for what they are (bad signature, gaps, ...) are outcomes, not errors.
    public func importBatches(_ batches: some Sequence<[[UInt8]]>, settings: ImportSettings = ImportSettings(),
                              progress: (ImportProgress) -> Void = { _ in }) throws(StoreError) -> ImportSummary {
        let previous = try run { db throws(StoreError) in
            (cacheSize: try db.queryOne("PRAGMA cache_size")?.int64(0) ?? -2000,
             autocheckpoint: try db.queryOne("PRAGMA wal_autocheckpoint")?.int64(0) ?? 1000)
        }
        try run { db throws(StoreError) in
            try db.execute("PRAGMA cache_size = \(-Int64(max(settings.cacheKiB, 0)))")
            _ = try db.queryOne("PRAGMA wal_autocheckpoint = \(max(settings.walAutocheckpointPages, 0))")
        }
        defer {
            // Best effort: these only tune speed, and a closed connection has nothing to restore.
            _ = try? run { db throws(StoreError) in
                try db.execute("PRAGMA cache_size = \(previous.cacheSize)")
                _ = try db.queryOne("PRAGMA wal_autocheckpoint = \(previous.autocheckpoint)")
            }
        }
        let summary = try pipeline(batches, overlapping: settings.pipelined, progress: progress)
        // Leave a short WAL behind, as the usual autocheckpoint would have.
        try run { db throws(StoreError) in _ = try db.query("PRAGMA wal_checkpoint(PASSIVE)") }
        return summary
    }

    private func pipeline(_ batches: some Sequence<[[UInt8]]>, overlapping: Bool,
                          progress: (ImportProgress) -> Void) throws(StoreError) -> ImportSummary {
        let clock = ContinuousClock()
        let applier = DispatchQueue(label: "MentorStore.Replica.import")
        let handoff = ApplyHandoff()
        var summary = ImportSummary()
        var inFlight = false

        // Waits for the batch being applied (if any) and adds its outcomes to the summary.
        func finishApply() throws(StoreError) -> ImportProgress? {
            guard inFlight else { return nil }
            let waitStart = clock.now
            let (result, applyTime) = handoff.take()
            inFlight = false
            summary.waitTime += clock.now - waitStart
            summary.applyTime += applyTime
            let outcomes = try result.get()
            summary.add(outcomes)
            return ImportProgress(batchIndex: summary.batches - 1, outcomes: outcomes, summary: summary)
        }

        for batch in batches where !batch.isEmpty {
            let verifyStart = clock.now
            let verified = verify(batch)
            summary.verifyTime += clock.now - verifyStart
            let previous = try finishApply()
            inFlight = true
            applier.async { [self] in
                let start = clock.now
                let result = Result { () throws(StoreError) in try self.apply(verified: verified) }
                handoff.put(result, applyTime: clock.now - start)
            }
            // Reported once the next apply is under way, so a slow callback does not stall it.
            if let previous { progress(previous) }
            if !overlapping, let done = try finishApply() { progress(done) }
        }
        if let last = try finishApply() { progress(last) }
        return summary
    }
}

/// Hands one apply result from the import's apply queue back to the importing thread.
/// `put` is called at most once between two `take`s: the importer submits the next batch only
/// after `take` returned.
private final class ApplyHandoff: Sendable {
    private let ready = DispatchSemaphore(value: 0)
    private let slot = Mutex<(Result<[ApplyOutcome], StoreError>, Duration)?>(nil)

    func put(_ result: Result<[ApplyOutcome], StoreError>, applyTime: Duration) {
        slot.withLock { $0 = (result, applyTime) }
        ready.signal()
    }

    /// Blocks until `put` was called, then empties the slot.
    func take() -> (Result<[ApplyOutcome], StoreError>, Duration) {
        ready.wait()
        // `put` filled the slot before it signalled, so it cannot be empty here.
        return slot.withLock { value in
            defer { value = nil }
            return value!
        }
    }
}
