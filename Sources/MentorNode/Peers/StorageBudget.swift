import MentorCore

/// The node-wide storage budget (issue 13, item 4): how many foreign accounts, and how many
/// bytes of their records, this node keeps, and what it does when that is full. Pure: the
/// counts are kept incrementally by the caller's reports (`stored`), never by a pass over the
/// replica; the priority of an author is decided by the caller (it knows the node's accounts,
/// pairs and nearby list) and passed in.
///
/// Policy when full — the node degrades, it never fails:
/// 1. `own` accounts (living on this node) are always stored and not counted.
/// 2. `partner` accounts (a local account likes them or matched them) and 3. `nearby` ones (on
///    a linked node's `here` list) are always stored and counted, even past the budget: they are
///    bounded by what local users do and by the links, not by strangers.
/// 4. `other` accounts: while the node is under both budgets they are stored. Past the account
///    budget a *new* one is declined (its records are not stored; accounts already stored keep
///    their updates); past the byte budget every record of an `other` account is declined.
///    Declining is not blame: the peer that offered it proved nothing wrong.
///
/// Declined authors are remembered in a bounded set (`declinedCapacity`, oldest forgotten
/// first), so the caller can drop their records before verifying them when they are offered
/// again (reconciliation keeps showing them as differences). The counts are started from the
/// replica (`Replica.foreignStorage`) and kept here; the caller owns the locking.
struct StorageBudget: Sendable {
    struct Settings: Sendable, Equatable {
        /// Foreign accounts kept (`foreign_accounts_max`).
        var maxAccounts = 1_000_000
        /// Bytes of foreign records kept (`foreign_storage_mb`, default 2 GiB).
        var maxBytes: Int64 = 2 << 30
        /// Declined authors remembered.
        var declinedCapacity = 262_144
    }

    enum Priority: Int, Sendable, Comparable {
        case own = 1, partner = 2, nearby = 3, other = 4
        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    enum Decision: Sendable, Equatable { case store, decline }

    let settings: Settings
    /// Foreign accounts and their record bytes stored (started from the replica once, then kept).
    private(set) var accounts: Int
    private(set) var bytes: Int64
    /// Bytes of records `decide` let through that are not applied yet (`stored` or `notStored`
    /// settles them): batches applied together are decided before any of them is stored, and
    /// without this each would see the budget as the last commit left it, so a run of them
    /// could overshoot the byte budget by its whole size instead of by one record.
    private(set) var admitted: Int64 = 0
    /// Records declined since start (for status).
    private(set) var declinedRecords = 0
    private var declined: Set<PublicKey> = []
    private var declinedOrder: [PublicKey] = []
    private var declinedHead = 0

    init(settings: Settings, accounts: Int = 0, bytes: Int64 = 0) {
        self.settings = settings
        self.accounts = accounts
        self.bytes = bytes
    }

    var accountsFull: Bool { accounts >= settings.maxAccounts }
    var bytesFull: Bool { bytes + admitted >= settings.maxBytes }
    /// Full, or something was declined since start: what `status` reports as degraded.
    var isDegraded: Bool { accountsFull || bytesFull || declinedRecords > 0 }
    var declinedAuthors: Int { declined.count }

    /// Whether a record of `size` bytes by an author of `priority` is stored; `isNew` says the
    /// replica holds nothing of the author yet (nor does an earlier record of the same batch).
    /// A new foreign account that is stored is counted at once (reserved), so that a batch of
    /// new accounts cannot take the count past the budget before it is applied; the caller
    /// gives it back with `released` if the replica then does not store the record.
    mutating func decide(_ author: PublicKey, priority: Priority, isNew: Bool, size: Int) -> Decision {
        guard priority != .own else { return .store }
        if priority == .other, bytesFull || (isNew && accountsFull) || (isNew && isDeclined(author)) {
            declinedRecords += 1
            remember(author)
            return .decline
        }
        if isNew { accounts += 1 }
        if priority != .own { admitted += Int64(size) }
        return .store
    }

    /// The replica stored a record of `size` bytes that `decide` let through.
    mutating func stored(priority: Priority, size: Int) {
        guard priority != .own else { return }
        bytes += Int64(size)
        admitted = max(0, admitted - Int64(size))
    }

    /// The replica did not store a record of `size` bytes that `decide` let through (a
    /// duplicate, refused, or its batch failed).
    mutating func notStored(priority: Priority, size: Int) {
        guard priority != .own else { return }
        admitted = max(0, admitted - Int64(size))
    }

    /// The replica did not store the first record of a new account that `decide` counted.
    mutating func released(priority: Priority) {
        guard priority != .own, accounts > 0 else { return }
        accounts -= 1
    }

    /// Whether a record by an author of `priority` would be declined now without looking it up
    /// (the author is known to be new, or was declined lately): what lets the caller drop a
    /// flood of new strangers' records before verifying them.
    func wouldDecline(priority: Priority, isNew: Bool, author: PublicKey) -> Bool {
        priority == .other && (bytesFull || (isNew && (accountsFull || isDeclined(author))))
    }

    /// The replica's own count of the bytes (read again: compaction drops records the counts
    /// here added, so they only grow between reads).
    mutating func recount(bytes: Int64) { self.bytes = bytes }

    /// Whether an author's records were declined lately: its records may be dropped before they
    /// are verified — unless it has since become a partner or nearby (the caller checks that).
    func isDeclined(_ author: PublicKey) -> Bool { declined.contains(author) }

    private mutating func remember(_ author: PublicKey) {
        guard settings.declinedCapacity > 0, !declined.contains(author) else { return }
        if declined.count >= settings.declinedCapacity {
            declined.remove(declinedOrder[declinedHead])
            declinedOrder[declinedHead] = author
            declinedHead = (declinedHead + 1) % settings.declinedCapacity
        } else {
            declinedOrder.append(author)
        }
        declined.insert(author)
    }
}
