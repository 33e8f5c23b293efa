import Dispatch
import Foundation
import MentorCore
import MentorNet
import MentorStore
import MentorSystem

/// The storage budgets of received records, carried out over the replica: each author's budget
/// of bytes (`authorBudget`: records plus photos; accounts of this node are exempt) and the
/// node-wide budget (`StorageBudget` decides the policy; this class keeps its counts, asks the
/// replica what it needs and logs). Owned by `PeerManager`; its `ApplyPipeline` calls it around each batch:
/// `declinedBeforeVerifying` when the batch arrives, `withinBudget` before it is applied,
/// `countStored` with its outcomes.
///
/// Confinement:
/// - On the apply pipeline's `applyQueue` (serial): `withinBudget`, `countStored` (and the
///   `recountBytesIfFull` they call). They alone touch `authorBytes`, `overBudgetLogged` and
///   `bytesRecountedAt`, so those need no lock.
/// - On the peer manager's `queue`: `declinedBeforeVerifying` and `setNearby`. They touch only
///   what `lock` guards (and read the replica, which is safe from any thread).
/// - Anywhere: `storage` (for `status.storage`; never waits on either queue).
/// - `lock` guards `budget`, `nearby` and `fullLogged`: the budget is decided on `applyQueue`,
///   consulted on `queue` before verifying and read by `status`.
///
/// `@unchecked Sendable`: every mutable field is either confined to `applyQueue` (above) or
/// guarded by `lock`; the injected replica, logger and closures are `Sendable`.
final class BudgetGate: @unchecked Sendable {
    /// How the node-wide budget counted an admitted record (`countStored` settles it).
    struct Admission {
        var priority: StorageBudget.Priority
        /// The first record of an account the replica did not hold: counted by `decide`.
        var newAccount: Bool
    }

    /// Bytes one author's records and photos may take on this node (`author_storage_mb`).
    let authorBudget: Int64
    private let replica: Replica
    /// The accounts of this node (exempt from every budget).
    private let localAccounts: @Sendable () -> [PublicKey]
    private let logger: any Logger
    /// When a recount of the bytes is due (injected so tests can hold the clock).
    private let now: @Sendable () -> ContinuousClock.Instant

    // Confined to applyQueue:
    /// Bytes of each author's records and photos, as last read or counted, and whether the
    /// replica holds anything of it (at most `authorBytesCapacity` authors, then read afresh —
    /// one read per batch for the authors it names that are not here), and the authors logged
    /// as over budget.
    private var authorBytes: [PublicKey: AuthorBytes] = [:]
    private struct AuthorBytes { var bytes: Int64; var held: Bool }
    private static let authorBytesCapacity = 65_536
    private var overBudgetLogged: Set<PublicKey> = []
    /// When the node-wide byte count was last read again from the replica.
    private var bytesRecountedAt: ContinuousClock.Instant?

    /// The node-wide storage budget and a copy of the nearby accounts it ranks by, and whether
    /// "full" was logged at info yet (guarded by `lock`).
    private let lock = NSLock()
    private var budget: StorageBudget
    private var nearby: Set<PublicKey> = []
    private var fullLogged = false

    /// Reads what the replica holds for other accounts to start the node-wide count from (from
    /// zero, logged, if that read fails).
    init(replica: Replica, localAccounts: @escaping @Sendable () -> [PublicKey], authorBudget: Int64,
         budget settings: StorageBudget.Settings, logger: any Logger,
         now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.replica = replica
        self.localAccounts = localAccounts
        self.authorBudget = authorBudget
        self.logger = logger
        self.now = now
        self.budget = StorageBudget(settings: settings)
        do {
            let held = try replica.foreignStorage()
            budget = StorageBudget(settings: budget.settings, accounts: held.accounts, bytes: held.bytes)
        } catch {
            logger.info("reading the storage held for other accounts failed; the budget counts from zero", ["error": "\(error)"])
        }
    }

    /// The node-wide storage budget now (`status.storage`). Never waits on a queue.
    var storage: StorageStatus {
        lock.withLock {
            StorageStatus(accounts: budget.accounts, bytes: budget.bytes, maxAccounts: budget.settings.maxAccounts,
                          maxBytes: budget.settings.maxBytes, declinedAuthors: budget.declinedAuthors,
                          declinedRecords: budget.declinedRecords, degraded: budget.isDegraded)
        }
    }

    /// On `queue`: the accounts the linked nodes named in `here` (ranked `.nearby`).
    func setNearby(_ all: Set<PublicKey>) {
        lock.withLock { nearby = all }
    }

    /// On `applyQueue`: splits a batch into the records to apply (their indices, and how the
    /// node-wide budget counted each) and the authors over their storage budget (`authorBudget`:
    /// records plus photos; accounts of this node are exempt), whose records are dropped: not
    /// stored, not an offence, the session goes on. The node-wide budget (`StorageBudget`) then
    /// declines what its policy says — records of new strangers past the account budget, of
    /// every stranger past the byte budget — likewise without offence.
    ///
    /// `admittedBytes` carries what earlier batches of the same apply admitted and are not
    /// counted yet (`countStored` counts them once applied), so batches applied together cannot
    /// overshoot either.
    func withinBudget(_ batch: [[UInt8]], admittedBytes: inout [PublicKey: Int64])
        -> (admitted: [Int], overBudget: [PublicKey], classes: [Admission]) {
        var admitted: [Int] = []
        admitted.reserveCapacity(batch.count)
        var classes: [Admission] = []
        var over: [PublicKey] = []
        var partners: [PublicKey: Bool] = [:]
        var declined = 0
        let local = Set(localAccounts())
        let nearby = lock.withLock { self.nearby }
        recountBytesIfFull()
        let positions = batch.map { try? RecordPosition.peek($0) }
        let authors = positions.map { $0?.author }
        // What the replica holds of the authors not known here, in one read for the batch.
        var unknown: Set<PublicKey> = []
        for case let author? in authors where !local.contains(author) && authorBytes[author] == nil { unknown.insert(author) }
        if !unknown.isEmpty {
            if authorBytes.count + unknown.count > Self.authorBytesCapacity { authorBytes = [:] }
            let usages = (try? replica.authorUsages(unknown)) ?? [:]
            for author in unknown {
                switch usages[author] {
                case .some(.some(let usage)): authorBytes[author] = AuthorBytes(bytes: usage.bytes, held: true)
                case .some(.none): authorBytes[author] = AuthorBytes(bytes: 0, held: false)
                case .none: authorBytes[author] = AuthorBytes(bytes: 0, held: true)   // the read failed: no bytes, not new
                }
            }
        }
        for (i, bytes) in batch.enumerated() {
            // Whose it is — local, nearby, a partner — is a question about the account, whichever
            // of its keys signed (PROTOCOL.md §6.2); bytes are counted by signing key.
            let account = positions[i]?.account
            guard let author = authors[i], let account, !local.contains(account), let known = authorBytes[author] else {
                admitted.append(i)   // malformed ones are refused (and blamed) by the replica
                classes.append(Admission(priority: .own, newAccount: false))
                continue
            }
            // Within the batch, what it would add counts too (so one batch cannot overshoot).
            let pending = admittedBytes[author]
            guard known.bytes + (pending ?? 0) + Int64(bytes.count) <= authorBudget else {
                if !over.contains(author) { over.append(author) }
                continue
            }
            // Node-wide: the replica holds nothing of a new account (nor did this batch admit one).
            let isNew = !known.held && pending == nil
            var priority: StorageBudget.Priority = nearby.contains(account) ? .nearby : .other
            if priority == .other, lock.withLock({ budget.wouldDecline(priority: .other, isNew: isNew, author: author) }) {
                let partner = partners[account] ?? ((try? replica.isPartner(account)) ?? false)
                partners[account] = partner
                if partner { priority = .partner }
            }
            guard lock.withLock({ budget.decide(author, priority: priority, isNew: isNew, size: bytes.count) }) == .store else {
                declined += 1
                continue
            }
            admittedBytes[author] = (pending ?? 0) + Int64(bytes.count)
            admitted.append(i)
            classes.append(Admission(priority: priority, newAccount: isNew))
        }
        for author in over where overBudgetLogged.count < 4096 && overBudgetLogged.insert(author).inserted {
            logger.info("records of an author over its storage budget are not stored",
                        ["author": author.shortID, "budget": "\(authorBudget >> 20) MiB"])
        }
        if declined > 0 { logBudgetFull(declined) }
        return (admitted, over, classes)
    }

    /// On `queue`, before a batch is verified: drops the records the node-wide budget declines
    /// for sure — of strangers while the byte budget is full, of strangers the replica does not
    /// hold (or that were declined lately) while the account budget is full — so that a flood of
    /// new accounts costs a peek and one indexed lookup per record, not a signature check. Never
    /// an offence (nothing of them is read but the author). Accounts of this node, those a
    /// linked node named (`linked`, asked on `queue`) and partners are kept; the rest is decided
    /// again, exactly, by `withinBudget`.
    func declinedBeforeVerifying(_ batch: [[UInt8]], linked: (PublicKey) -> Bool) -> [[UInt8]] {
        let (full, anyDeclined) = lock.withLock { (budget.accountsFull || budget.bytesFull, budget.declinedAuthors > 0) }
        guard full || anyDeclined else { return batch }
        let local = Set(localAccounts())
        var kept: [[UInt8]] = []
        kept.reserveCapacity(batch.count)
        var verdicts: [PublicKey: Bool] = [:]   // author -> new (the replica holds nothing of it)
        var declined = 0
        for bytes in batch {
            guard let position = try? RecordPosition.peek(bytes), !local.contains(position.account), !linked(position.account) else {
                kept.append(bytes)
                continue
            }
            let author = position.author
            let isNew: Bool
            if let known = verdicts[author] { isNew = known } else {
                // A declined author was new when declined and is not stored since (unless it became
                // a partner, looked up below): no look-up in the replica for the records offered again.
                isNew = lock.withLock { budget.isDeclined(author) } || !((try? replica.holdsAccount(author)) ?? true)
                verdicts[author] = isNew
            }
            // A partner is kept (looked up only for a record that would be declined).
            guard lock.withLock({ budget.wouldDecline(priority: .other, isNew: isNew, author: author) }),
                  (try? replica.isPartner(position.account)) == false,
                  lock.withLock({ budget.wouldDecline(priority: .other, isNew: isNew, author: author)
                                    && budget.decide(author, priority: .other, isNew: isNew, size: bytes.count) == .decline }) else {
                kept.append(bytes)
                continue
            }
            declined += 1
        }
        if declined > 0 { logBudgetFull(declined) }
        return kept
    }

    /// Once at info (then at debug), that the node degrades: its storage budget is full. On
    /// either queue (only `lock`'s state is touched).
    private func logBudgetFull(_ declined: Int) {
        let state = storage
        let first = lock.withLock { () -> Bool in
            defer { fullLogged = true }
            return !fullLogged
        }
        logger.log(first ? .info : .debug,
                   "the node's storage budget is full: records of accounts of strangers are not stored (no fault of the peer; the link stays)",
                   ["records": "\(declined)", "accounts": "\(state.accounts)", "foreign_accounts_max": "\(state.maxAccounts)",
                    "bytes": "\(state.bytes)", "foreign_storage_mb": "\(state.maxBytes >> 20)",
                    "kept": "own accounts, partners, nearby accounts and the accounts already held"])
    }

    /// On `applyQueue`, while the byte budget is full, reads the replica's own count again (at
    /// most once a second): compaction drops superseded card edits the count here added, so a
    /// stranger editing its card over and over cannot fill the budget for everyone.
    private func recountBytesIfFull() {
        guard lock.withLock({ budget.bytesFull }) else { return }
        let now = self.now()
        if let at = bytesRecountedAt, now - at < .seconds(1) { return }
        bytesRecountedAt = now
        guard let bytes = try? replica.foreignBytes() else { return }
        lock.withLock { budget.recount(bytes: bytes) }
    }

    /// On `applyQueue`: adds what the replica stored of a batch to the authors' counted bytes
    /// and to the node-wide budget: only records that were stored count (a peer replaying an
    /// author's records as duplicates adds nothing, so it cannot push an honest author over its
    /// budget); a new account counted by `decide` whose record was not stored is given back
    /// (`outcomes` nil: the batch failed, nothing was stored).
    func countStored(_ batch: [[UInt8]], _ classes: [Admission], _ outcomes: [ApplyOutcome]?) {
        lock.withLock {
            for (k, admission) in classes.enumerated() where admission.priority != .own {
                let outcome = outcomes.flatMap { k < $0.count ? $0[k] : nil }
                switch outcome {
                case .applied?, .forked?, .held?: budget.stored(priority: admission.priority, size: batch[k].count)
                default:
                    budget.notStored(priority: admission.priority, size: batch[k].count)
                    if admission.newAccount { budget.released(priority: admission.priority) }
                }
            }
        }
        guard let outcomes else { return }
        for (bytes, outcome) in zip(batch, outcomes) {
            switch outcome {
            case .duplicate, .refused: continue
            default: break
            }
            guard let author = try? RecordPosition.peek(bytes).author, let known = authorBytes[author] else { continue }
            authorBytes[author] = AuthorBytes(bytes: known.bytes + Int64(bytes.count), held: true)
        }
    }
}
