import Foundation
import MentorCore
import MentorCrypto
import MentorStore
import MentorSystem

/// The campus's membership policy (issue 19 item 5; PROTOCOL.md §6.8, OPERATIONS.md "A campus
/// CA"): which accounts its certifying authority vouches for, and — with `require_membership` —
/// that only they are stored, relayed and shown here.
///
/// - **Members.** An account is a member while this node holds a current certificate for it
///   signed by `campus_ca_key`, carried in one of its cards (stored or held back: the replica
///   keeps them in `memberships`, migration 24). Loaded at start, kept here as cards arrive.
/// - **Admission** (`admit`, on the apply queue, after verification): with `require_membership`,
///   a record of an account that is neither a member nor this node's own is declined — not
///   stored, not relayed, no offence, the batch acknowledged like any other — unless it is a
///   card carrying a current certificate of this campus (that card makes its account a member).
///   Decided over the whole batch first, so the order of records within it does not matter;
///   across batches a record declined before its account's certificate arrived comes again
///   with the next reconciliation round.
/// - **Cheap refusals** (`declinedBeforeVerifying`, on the peer queue): records (cards aside)
///   of accounts declined lately are dropped before their signatures are checked; at most
///   `declinedCapacity` accounts are remembered.
/// - **Shown** (`hiddenAccounts`): with `require_membership`, the accounts whose cards this
///   node holds but that are not members now (held from before the setting, whose certificate
///   expired, or this node's own not certified) are left out of every list, like blocked ones.
///
/// `@unchecked Sendable`: the mutable state is guarded by `lock`; the rest is immutable.
public final class Campus: @unchecked Sendable {
    public struct Settings: Sendable, Equatable {
        /// `campus_ca_key`: nil, nobody is a member and nothing is required.
        public var caKey: PublicKey?
        /// `require_membership` (only with a key).
        public var requireMembership = false
        /// `campus_ca`: where clients reach the CA service (shown in `status`).
        public var caAddress: String?
        public init(caKey: PublicKey? = nil, requireMembership: Bool = false, caAddress: String? = nil) {
            self.caKey = caKey; self.requireMembership = requireMembership; self.caAddress = caAddress
        }
        public var requires: Bool { requireMembership && caKey != nil }
    }

    public struct Member: Sendable, Equatable {
        public var domain: String
        public var expires: UInt64
    }

    public let settings: Settings
    static let declinedCapacity = 262_144

    private let replica: Replica
    private let now: @Sendable () -> UInt64
    private let logger: any Logger
    private let lock = NSLock()
    private var members: [PublicKey: Member] = [:]
    private var declined: Set<PublicKey> = []
    private var declinedRecords = 0
    private var declinedLogged = false
    /// Members now, until the earliest of their certificates expires (`counts`; 0: count again).
    private var memberCount: (value: Int, validUntil: UInt64) = (0, 0)
    /// The held accounts that are not members (`hiddenAccounts`), read once then kept here.
    private struct Hidden { var accounts: Set<PublicKey>; var nextExpiry: UInt64 }
    private var hidden: Hidden?

    public init(settings: Settings, replica: Replica, now: @escaping @Sendable () -> UInt64, logger: any Logger) {
        self.settings = settings
        self.replica = replica
        self.now = now
        self.logger = logger
        guard let ca = settings.caKey else { return }
        do {
            for m in try replica.memberships(ca: ca) { members[m.account] = Member(domain: m.domain, expires: m.expires) }
        } catch {
            logger.log(.warning, "reading the campus memberships failed; accounts count as members again as their cards arrive",
                           ["error": "\(error)"])
        }
    }

    /// The account's membership of this campus now, if it holds a current certificate.
    public func member(_ account: PublicKey) -> Member? {
        guard settings.caKey != nil else { return nil }
        let now = self.now()
        return lock.withLock { members[account].flatMap { $0.expires > now ? $0 : nil } }
    }

    /// Members now, and records declined since start (`status.campus`). The members are counted
    /// again only after a certificate arrives or one expires, so `status` costs the same however
    /// many there are.
    public var counts: (members: Int, declinedRecords: Int, declinedAccounts: Int) {
        let now = self.now()
        return lock.withLock {
            if now >= memberCount.validUntil {
                var count = 0
                var until = UInt64.max
                for m in members.values where m.expires > now { count += 1; until = min(until, m.expires) }
                memberCount = (count, until)
            }
            return (memberCount.value, declinedRecords, declined.count)
        }
    }

    /// Takes note of a certificate whose signature was verified: one of this campus's counts
    /// from now on (the replica keeps it too, in the same apply).
    public func note(_ certificate: MembershipCertificate) {
        guard let ca = settings.caKey, certificate.ca == ca else { return }
        lock.withLock {
            if let known = members[certificate.account], known.expires >= certificate.expires { return }
            members[certificate.account] = Member(domain: certificate.domain, expires: certificate.expires)
            memberCount.validUntil = 0
            declined.remove(certificate.account)
            if var h = hidden {
                if certificate.expires > now() { h.accounts.remove(certificate.account) }
                h.nextExpiry = min(h.nextExpiry, certificate.expires)
                hidden = h
            }
        }
    }

    /// A current certificate of this campus in a verified card, if it carries one.
    func certificate(in record: Record, at now: UInt64) -> MembershipCertificate? {
        guard let ca = settings.caKey, record.type == .profile,
              let c = ProfileCard.membership(inBody: record.body), c.ca == ca, c.isCurrent(at: now) else { return nil }
        return c
    }

    /// Takes note of the certificates of this campus among records the replica just stored
    /// (`Node.afterApply`: from peers, released when due, or written here).
    func note(stored records: [Record]) {
        guard settings.caKey != nil, records.contains(where: { $0.type == .profile }) else { return }
        let now = self.now()
        for r in records { if let c = certificate(in: r, at: now) { note(c) } }
    }

    /// On the apply queue, after verification: which of the verified records (nil: refused by
    /// verification, left to the replica to blame) this node takes. Every current certificate
    /// of the batch counts first; then, with `require_membership`, records of accounts neither
    /// local nor members are declined.
    ///
    /// `readmitted`: the keys (the account, and the key that signed its certificate's card) of
    /// accounts this node declined lately that a certificate of this batch makes members: their
    /// earlier records are worth asking the peer for again now (`want`, PROTOCOL.md §6.8) rather
    /// than at the next round.
    func admit(_ records: [VerifiedRecord?], local: Set<PublicKey>) -> (takes: [Bool], readmitted: [PublicKey]) {
        let now = self.now()
        var readmitted: Set<PublicKey> = []
        for case let v? in records {
            guard let c = certificate(in: v.record, at: now) else { continue }
            if lock.withLock({ declined.contains(c.account) }) { readmitted.formUnion([c.account, v.record.author]) }
            note(c)
        }
        let again = readmitted.sorted()
        guard settings.requires else { return (records.map { _ in true }, again) }
        var out: [Bool] = []
        out.reserveCapacity(records.count)
        var newlyDeclined: [PublicKey] = []
        var count = 0
        for v in records {
            guard let v else { out.append(true); continue }
            let account = v.record.account
            if local.contains(account) || member(account) != nil { out.append(true); continue }
            out.append(false)
            count += 1
            newlyDeclined.append(account)
        }
        guard count > 0 else { return (out, again) }
        let first = lock.withLock { () -> Bool in
            declinedRecords += count
            if declined.count + newlyDeclined.count > Self.declinedCapacity { declined.removeAll(keepingCapacity: true) }
            declined.formUnion(newlyDeclined)
            defer { declinedLogged = true }
            return !declinedLogged
        }
        logger.log(first ? .info : .debug,
                   "records of accounts that are not members of the campus are not stored (require_membership; no fault of the peer)",
                   ["records": "\(count)", "accounts": "\(Set(newlyDeclined).count)"])
        return (out, again)
    }

    /// On the peer queue, before verification: drops the records of accounts declined lately
    /// (cards aside: one may bring the certificate). Never an offence.
    func declinedBeforeVerifying(_ batch: [[UInt8]], local: Set<PublicKey>) -> [[UInt8]] {
        guard settings.requires, lock.withLock({ !declined.isEmpty }) else { return batch }
        var dropped = 0
        let kept = batch.filter { bytes in
            // The type is byte 4 in both formats (PROTOCOL.md §4).
            guard bytes.count > 4, bytes[4] != RecordType.profile.rawValue,
                  let p = try? RecordPosition.peek(bytes), !local.contains(p.account),
                  lock.withLock({ declined.contains(p.account) }) else { return true }
            dropped += 1
            return false
        }
        if dropped > 0 { lock.withLock { declinedRecords += dropped } }
        return kept
    }

    /// With `require_membership`: the accounts to leave out of what `viewer` is shown — those
    /// this node holds a card of that are not members now, and this node's own accounts
    /// (`locals`) that are not — never `viewer`; empty otherwise.
    ///
    /// The accounts held are read once (`Replica.cardAccounts`, a pass over every account:
    /// ~100 ms at 50,000, `mentormate-bench campus`); after that the set only changes in
    /// memory — with `require_membership` a stranger's account reaches the replica only as a
    /// member, so the set shrinks when a certificate arrives (`note`) and grows when a member's
    /// certificate expires (the members are looked over once per expiry, not per request).
    public func hiddenAccounts(viewer: PublicKey?, locals: Set<PublicKey>) -> Set<PublicKey> {
        guard settings.requires else { return [] }
        let now = self.now()
        if lock.withLock({ hidden == nil }) {
            let held: [PublicKey]
            do { held = try replica.cardAccounts() } catch {
                logger.log(.warning, "reading the accounts held failed; non-members may be shown until it succeeds", ["error": "\(error)"])
                return []
            }
            lock.withLock {
                guard hidden == nil else { return }
                hidden = Hidden(accounts: Set(held.filter { members[$0].map { $0.expires <= now } ?? true }), nextExpiry: nextExpiry(after: now))
            }
        }
        return lock.withLock {
            guard var h = hidden else { return [] }
            if now >= h.nextExpiry {
                for (account, m) in members where m.expires <= now { h.accounts.insert(account) }
                h.nextExpiry = nextExpiry(after: now)
                hidden = h
            }
            var out = h.accounts
            for account in locals where members[account].map({ $0.expires <= now }) ?? true { out.insert(account) }
            if let viewer { out.remove(viewer) }
            return out
        }
    }

    /// The earliest expiry after `now` among the members (under `lock`).
    private func nextExpiry(after now: UInt64) -> UInt64 {
        members.values.lazy.map(\.expires).filter { $0 > now }.min() ?? .max
    }
}
