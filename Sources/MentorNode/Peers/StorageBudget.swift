import MentorCore

/// The node-wide storage budget (issue 13, item 4): how many foreign accounts, and how many
/// bytes of their records, this node keeps, and what it does when that is full. Pure: the
/// counts are kept incrementally by the caller's reports (`stored`), never by a pass over the
/// replica; the priority of an author is decided by the caller (it knows the node's accounts,
/// pairs and nearby list) and passed in.
///
/// Policy when full — the node degrades, it never fails:
/// 1. `own` accounts (living on this node) are always stored and not counted.
/// 2. `partner` accounts (a like, match or chat with a local account) and 3. `nearby` ones (on
///    a linked node's `here` list) are always stored and counted, even past the budget: they are
///    bounded by what local users do and by the links, not by strangers.
/// 4. `other` accounts: while the node is under both budgets they are stored. Past the account
///    budget a *new* one is declined (its records are not stored; accounts already stored keep
///    their updates); past the byte budget every record of an `other` account is declined.
///    Declining is not blame: the peer that offered it proved nothing wrong.
///
/// Declined authors are remembered in a bounded set (`declinedCapacity`, oldest forgotten
/// first), so the caller can drop their records before verifying them when they are offered
/// again (reconciliation keeps showing them as differences).
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
    var bytesFull: Bool { bytes >= settings.maxBytes }
    /// Full, or something was declined since start: what `status` reports as degraded.
    var isDegraded: Bool { accountsFull || bytesFull || declinedRecords > 0 }
    var declinedAuthors: Int { declined.count }

    /// Whether a record of `size` bytes by an author of `priority` is stored; `isNew` says the
    /// replica holds nothing of the author yet.
    mutating func decide(_ author: PublicKey, priority: Priority, isNew: Bool, size: Int) -> Decision {
        guard priority == .other else { return .store }
        if bytesFull || (isNew && accountsFull) || (isNew && isDeclined(author)) {
            declinedRecords += 1
            remember(author)
            return .decline
        }
        return .store
    }

    /// The replica stored a record (`newAccount`: the first of its author here).
    mutating func stored(priority: Priority, newAccount: Bool, size: Int) {
        guard priority != .own else { return }
        if newAccount { accounts += 1 }
        bytes += Int64(size)
    }

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
