import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import MentorSystem

/// Who is calling: the Unix user (from SO_PEERCRED) and the connection (for uploads and
/// subscriptions, which end with it).
public struct Requester: Sendable, Hashable {
    public var uid: UInt32
    public var connection: UInt64
    public init(uid: UInt32, connection: UInt64) { self.uid = uid; self.connection = connection }
}

/// One record the replica just applied: what a sync session needs to push it.
public struct AppliedRecord: Sendable, Equatable {
    public let author: PublicKey
    public let seq: UInt64
    public let bytes: [UInt8]
    /// The link it came over (the peer manager's serial; nil: written here, or released from
    /// the hold-back area): pushed to every other link, not back over this one.
    public let origin: UInt64?
    /// Its record ID (BLAKE2b of `bytes`), as verification computed it: not hashed again.
    public let id: [UInt8]
    public init(author: PublicKey, seq: UInt64, bytes: [UInt8], origin: UInt64? = nil, id: [UInt8]? = nil) {
        self.author = author; self.seq = seq; self.bytes = bytes; self.origin = origin
        self.id = id ?? VerifiedRecord.id(of: bytes)
    }
    init(_ v: VerifiedRecord, origin: UInt64? = nil) {
        self.init(author: v.record.author, seq: v.record.seq, bytes: v.encoded, origin: origin, id: v.id)
    }
}

/// The node: the API's methods over the replica, for the local users' accounts.
///
/// All state is confined to one serial queue (`queue`); `handle` runs each request there, one at
/// a time — the replica has one writer anyway, and each request is short. `@unchecked Sendable`
/// is safe because every mutable member is touched only on that queue.
public final class Node: @unchecked Sendable {
    /// The configuration the node started with. Immutable: `prepareKey` reads it off the queue
    /// (the key file's path and the passphrase cost, during Argon2id), which was a data race
    /// while SIGHUP's `reload` wrote the e-mail domains into it on the queue.
    public let config: NodeConfig
    /// The campus e-mail domains sign-up accepts: the configuration's, until a reload (SIGHUP)
    /// replaces them. On `queue`.
    private(set) var emailDomains: [String]
    public let replica: Replica
    public let nodeKeys: SigningKeyPair
    /// Where notifications go (the daemon's API connections).
    let notifications: any NotificationSink
    /// The daemon's facts for `status`, `peers` and `doctor`.
    let runtime: any RuntimeFacts
    /// Where the node logs.
    let logger: any Logger
    /// The records this node applies and its local accounts changing, published for the peer
    /// manager (`NodeChanges`).
    public let changes: NodeChanges
    /// The campus's members and, with `require_membership`, who is stored and shown (`Campus`).
    public let campus: Campus

    /// At most `config.passphraseChecksAtOnce` Argon2id runs at a time, node-wide.
    public let passphraseGate: PassphraseGate
    /// At most `config.signupWorkAtOnce` proof-of-work searches (a few CPU-seconds each, one
    /// core each) at a time, node-wide; more wait their turn, first come first served.
    public let workGate: PassphraseGate
    /// Where `respond` runs a login's or signup's key work (Argon2id, the proof of work):
    /// threads that may block, not Swift's few cooperative ones. Ordinary requests never come here.
    private let work = DispatchQueue(label: "MentorNode.work", attributes: .concurrent)

    let queue = DispatchQueue(label: "MentorNode.Node")
    /// Accounts whose node is linked to ours now (announced by connected peers).
    var nearbyAccounts: Set<PublicKey> = []
    /// The accounts of this node's users.
    var localKeys: Set<PublicKey> = []
    /// Unlocked accounts: uid → the writer of their everyday records on this node (holds this
    /// machine's device key; for an account made before devices existed, the account key).
    var writers: [UInt32: RecordWriter] = [:]
    /// Unlocked account keys, where this node holds them (`config.accountKeyPath`): they
    /// certify and revoke devices, and seal and open likes and messages (PROTOCOL.md §7).
    var accountKeys: [UInt32: SigningKeyPair] = [:]
    /// Accounts whose users logged out (an unprotected key stays locked until `login`).
    var loggedOut: Set<UInt32> = []
    /// Card summaries of every author with a card, for the feed, their names, and the local
    /// viewers' rankings; read it through `feedIndex`, which first reads again the cards changed
    /// since.
    private var feedState = FeedIndex()
    /// Authors whose card records were applied since the index last read their card. Read again
    /// when the index is next asked, not per applied batch: a cold sync applies thousands of
    /// cards nobody looks at meanwhile, and reading each back was a tenth of its CPU.
    private var staleCards: Set<PublicKey> = []
    var feedIndex: FeedIndex {
        _read { readStaleCards(); yield feedState }
        _modify { readStaleCards(); yield &feedState }
    }
    var cards: [PublicKey: Feed.Candidate] { feedIndex.candidates }
    var names: [PublicKey: String] { feedIndex.names }
    /// Unfinished photo uploads: token → (caller, bytes).
    var uploads: [String: (caller: Requester, data: [UInt8])] = [:]
    /// Subscriptions: connection → (uid, events).
    var subscriptions: [UInt64: (uid: UInt32, events: Set<String>)] = [:]
    /// Wrong passphrases per uid: (count, until when further attempts are refused).
    var loginFailures: [UInt32: (count: Int, until: ContinuousClock.Instant)] = [:]
    /// Users with a passphrase check (login or signup) admitted and not finished: one at a time
    /// each, so parallel attempts cannot get around the back-off.
    var passphraseChecksInFlight: Set<UInt32> = []
    /// `device link`s waiting for their approval, by user.
    var pendingLinks: [UInt32: PendingLink] = [:]
    /// The UTC day (days since the epoch) each user's age was last checked (`refreshAge`).
    var ageCheckedDay: [UInt32: UInt64] = [:]
    /// When meetups ended a week ago were last collected (this node's clock, ms; §6.7).
    var meetupsCollectedAt: UInt64 = 0
    /// The timer that wakes the node for the next meetup reminder.
    var meetupReminderTimer: DispatchWorkItem?
    /// Hashes per second of the proof-of-work search here, once measured (`signupWorkSeconds`).
    var workRate: Double?
    /// The per-account settings there are (`Settings.swift`).
    var settingsRegistry = SettingsRegistry.standard

    /// A node over `replica`, wired once: its notifications go to `notifications`, its changes
    /// to `changes`' subscribers, `status`/`doctor` read `runtime`.
    public init(config: NodeConfig, replica: Replica, nodeKeys: SigningKeyPair,
                notifications: any NotificationSink = DroppingNotifications(), changes: NodeChanges = NodeChanges(),
                runtime: any RuntimeFacts = NoRuntime(), logger: any Logger = DiscardingLogger()) {
        self.config = config
        self.notifications = notifications
        self.changes = changes
        self.runtime = runtime
        self.logger = logger
        emailDomains = config.emailDomains
        self.replica = replica
        self.nodeKeys = nodeKeys
        campus = Campus(settings: config.campus, replica: replica, now: config.now, logger: logger)
        passphraseGate = PassphraseGate(slots: config.passphraseChecksAtOnce)
        workGate = PassphraseGate(slots: config.signupWorkAtOnce)
    }

    /// Loads the local accounts (unlocking those without a passphrase) and the card index.
    public func start() throws {
        try queue.sync {
            try FileManager.default.createDirectory(atPath: config.accountsDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            localKeys = Set(try replica.nodeAccounts().map(\.account))
            for account in try replica.nodeAccounts() where !account.protected {
                do {
                    let keys = try KeyFile.read(from: config.keyPath(uid: account.uid))
                    let accountPath = config.accountKeyPath(uid: account.uid)
                    let accountKeys = FileManager.default.fileExists(atPath: accountPath) ? try KeyFile.read(from: accountPath) : nil
                    try unlock(uid: account.uid, keys: keys, account: account.account, accountKeys: accountKeys)
                } catch {
                    logger.log(.error, "account stays locked: its key could not be read", ["uid": "\(account.uid)", "error": "\(error)"])
                }
            }
            try rebuildCardIndex()
            // The mineral catalogue compiled in (`identify`): parsed and checked now, once.
            if let error = Catalogue.loaded.error {
                logger.log(.error, "the mineral catalogue of this build is malformed: identify is unavailable", ["error": "\(error)"])
            }
            if let error = GameCatalogue.loaded.error {
                logger.log(.error, "the games catalogue of this build is malformed: games and game show are unavailable", ["error": "\(error)"])
            }
            collectPhotos()   // photos an older build kept after their cards moved on
            // A revoked or expired device says so plainly at start.
            for (uid, writer) in writers where writer.isDevice {
                guard let state = try? deviceFacts(uid, account: writer.account).state, state == "revoked" || state == "expired" else { continue }
                logger.log(.warning, "this machine's device is \(state): every node refuses what it signs; `mentormate logout --forget`, then `mentormate device link`, to use it again",
                           ["uid": "\(uid)", "account": writer.account.shortID, "device": Self.deviceID(writer.author)])
            }
        }
    }

    /// Runs one API request for `caller`, blocking the calling thread (tests; the daemon uses
    /// `respond`).
    public func handle(_ name: String, _ params: [String: JSON], caller: Requester) -> Result<JSON, RPCError> {
        let method: APIMethod
        do { method = try APIMethod.named(name) } catch { return .failure(error) }
        switch queue.sync(execute: { admit(method, params, caller) }) {
        case .refused(let error):
            return .failure(error)
        case .none:
            return finish(method, params, caller, prepared: nil)
        case .check(let check):
            let arrived = ContinuousClock.now
            var prepared: PreparedKey
            if check.needsArgon2id {
                passphraseGate.wait()
                prepared = prepareKey(check, caller, waited: .now - arrived)
                passphraseGate.leave()
            } else {
                prepared = prepareKey(check, caller, waited: .zero)
            }
            if let keys = workToProve(check, prepared) {
                let queued = ContinuousClock.now
                workGate.wait()
                prepared.work = proveWork(keys, waited: .now - queued)
                workGate.leave()
            }
            return finish(method, params, caller, prepared: prepared)
        }
    }

    /// Runs one API request for `caller`: what the daemon calls. An ordinary request is admitted
    /// and run in one turn of the node's queue, and its result encoded once the queue is let go
    /// (no other thread waits for the queue on its behalf). A login or signup is two typed steps:
    /// the key work on the `work` queue — Argon2id waits for its turn at `passphraseGate`, the
    /// proof of work at `workGate`, neither holding a thread — then the request on the queue
    /// with what that work prepared.
    public func respond(_ name: String, _ params: [String: JSON], caller: Requester) async -> Result<JSON, RPCError> {
        let method: APIMethod
        do { method = try APIMethod.named(name) } catch { return .failure(error) }
        let first: FirstTurn = await onQueue {
            switch self.admit(method, params, caller) {
            case .refused(let error): .answered(.failure(error))
            case .none: .answered(self.run(method, params, caller, prepared: nil))
            case .check(let check): .check(check)
            }
        }
        switch first {
        case .answered(let outcome):
            return encode(outcome, of: method)
        case .check(let check):
            let arrived = ContinuousClock.now
            var prepared: PreparedKey
            if check.needsArgon2id {
                await passphraseGate.enter()
                prepared = await onWork { self.prepareKey(check, caller, waited: .now - arrived) }
                passphraseGate.leave()
            } else {
                prepared = await onWork { self.prepareKey(check, caller, waited: .zero) }
            }
            if let keys = workToProve(check, prepared) {
                // Seconds of one core, on the work queue: never on the node's queue, and at
                // most `signupWorkAtOnce` at a time (waiting holds no thread).
                let queued = ContinuousClock.now
                await workGate.enter()
                let work = await onWork { self.proveWork(keys, waited: .now - queued) }
                workGate.leave()
                prepared.work = work
            }
            let ready = prepared
            defer {
                for path in [ready.temporaryPath, ready.accountTemporaryPath].compactMap({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
            }
            let outcome = await onQueue { self.run(method, params, caller, prepared: ready) }
            return encode(outcome, of: method)
        }
    }

    /// What the first turn of the node's queue made of a request: its answer, or the key work
    /// a login or signup needs first.
    private enum FirstTurn: Sendable {
        case answered(Result<any APIObject, RPCError>)
        case check(PassphraseCheck)
    }

    private func onWork<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            work.async { continuation.resume(returning: body()) }
        }
    }

    /// Runs `body` on the node's queue, after what was queued before it; the caller's task waits
    /// without holding a thread.
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }

    /// The request itself, on the node's queue, with the key a passphrase check prepared; its
    /// result is encoded after the queue is let go (a value, no node state). For `handle`.
    private func finish(_ method: APIMethod, _ params: [String: JSON], _ caller: Requester, prepared: PreparedKey?) -> Result<JSON, RPCError> {
        defer {
            for path in [prepared?.temporaryPath, prepared?.accountTemporaryPath].compactMap({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
        return encode(queue.sync { run(method, params, caller, prepared: prepared) }, of: method)
    }

    /// Step 2 of a request, on the node's queue: the method with what step 1 prepared (nil for
    /// an ordinary request), its errors turned into JSON-RPC errors.
    private func run(_ method: APIMethod, _ params: [String: JSON], _ caller: Requester, prepared: PreparedKey?) -> Result<any APIObject, RPCError> {
        do {
            if prepared != nil { passphraseChecksInFlight.remove(caller.uid) }
            if prepared?.wrongPassphrase == true {
                let count = (loginFailures[caller.uid]?.count ?? 0) + 1
                // The first mistake is free; then 1 s, 2 s, 4 s … up to a minute between attempts.
                let wait = count < 2 ? 0 : min(60, 1 << min(count - 2, 6))
                loginFailures[caller.uid] = (count, config.clock() + .seconds(wait))
                throw RPCError(.wrongPassphrase, "wrong passphrase; try again")
            }
            if let failure = prepared?.failure { throw failure }
            return .success(try dispatch(method, params, caller, prepared: prepared))
        } catch let e as RPCError {
            return .failure(e)
        } catch let e as StoreError {
            logger.log(.error, "storage error", ["method": method.rawValue, "error": "\(e)"])
            return .failure(RPCError(.storage, "the replica could not be written (\(e.message)); nothing was stored — check free disk space and the state directory"))
        } catch {
            logger.log(.error, "internal error", ["method": method.rawValue, "error": "\(error)"])
            return .failure(RPCError(.internalError, "internal error: \(error)"))
        }
    }

    /// A result as the wire's JSON (off the node's queue).
    private func encode(_ outcome: Result<any APIObject, RPCError>, of method: APIMethod) -> Result<JSON, RPCError> {
        outcome.flatMap { result in
            do {
                return .success(try JSONValueEncoder().encode(result))
            } catch {
                logger.log(.error, "internal error", ["method": method.rawValue, "error": "\(error)"])
                return .failure(RPCError(.internalError, "internal error: \(error)"))
            }
        }
    }

    /// Runs `body` on the node's queue after the work queued before it: the service manager's
    /// watchdog probe (while a request holds the queue, `body` does not run). `body` must not block.
    public func probe(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Applies a reloaded configuration's e-mail domains (SIGHUP).
    public func reload(emailDomains: [String]) {
        queue.sync { self.emailDomains = emailDomains }
    }

    /// Forgets a closed connection's uploads and subscriptions.
    public func connectionClosed(_ connection: UInt64) {
        queue.sync {
            subscriptions[connection] = nil
            uploads = uploads.filter { $0.value.caller.connection != connection }
        }
    }

    /// Applies records that came from elsewhere (peers) and publishes the resulting events.
    public func applyRemote(_ batch: [[UInt8]], origin: UInt64? = nil) throws(StoreError) -> [ApplyOutcome] {
        try applyRemote(verified: replica.verify(batch), origin: origin)
    }

    /// The same for records already decoded and verified (`Replica.verify`), so that a caller
    /// can verify its next batch while this one is applied. `origin` names the link they came
    /// from, so they are not pushed back to it.
    public func applyRemote(verified: [Result<VerifiedRecord, RecordError>], origin: UInt64? = nil) throws(StoreError) -> [ApplyOutcome] {
        try applyRemote(batches: [(verified, origin)])[0]
    }

    /// Several received batches in one transaction (each from the link `origin` names): the
    /// outcomes of each, in its order. The cards and pairs they touched are shown, and what they
    /// stored is pushed on, once for all.
    public func applyRemote(batches: [(verified: [Result<VerifiedRecord, RecordError>], origin: UInt64?)])
        throws(StoreError) -> [[ApplyOutcome]] {
        // `stored` includes held records this batch released, so they are indexed and pushed on too.
        let report = try replica.applyReporting(verified: batches.flatMap(\.verified))
        let (outcomes, stored) = (report.outcomes, report.stored)
        queue.sync { afterApply(stored.map(\.record), pairs: report.pairs) }
        var origins: [[UInt8]: UInt64] = [:]
        for batch in batches {
            guard let origin = batch.origin else { continue }
            // The first link a record came over is the one it was stored from (a later copy
            // in the same apply is a duplicate).
            for case .success(let v) in batch.verified where origins[v.id] == nil { origins[v.id] = origin }
        }
        let applied = stored.map {
            AppliedRecord($0, origin: origins[$0.id])
        }
        if !applied.isEmpty {
            changes.publish(.applied(applied.sorted { ($0.author, $0.seq) < ($1.author, $1.seq) }))
        }
        var split: [[ApplyOutcome]] = []
        var start = 0
        for batch in batches {
            split.append(Array(outcomes[start ..< start + batch.verified.count]))
            start += batch.verified.count
        }
        return split
    }

    /// Applies the records held until due whose time has come (PROTOCOL.md §9), then indexes
    /// and pushes them like records received from a peer. Returns how many were stored.
    @discardableResult
    public func releaseDueRecords() throws(StoreError) -> Int {
        let report = try replica.releaseDueReporting()
        let stored = report.stored
        guard !stored.isEmpty else { return 0 }
        queue.sync { afterApply(stored.map(\.record), pairs: report.pairs) }
        changes.publish(.applied(stored.map { AppliedRecord($0) }
            .sorted { ($0.author, $0.seq) < ($1.author, $1.seq) }))
        return stored.count
    }

    // MARK: Passphrase work off the queue

    struct PreparedKey: Sendable {
        /// The key that signs everyday records (a device key, or a legacy account's own key).
        var keys: SigningKeyPair?
        /// The account key, where the node holds it (signup makes one; login reads it).
        var accountKeys: SigningKeyPair?
        /// A signup's new account key file under a temporary name.
        var accountTemporaryPath: String?
        /// A new key file written under a temporary name (signup), renamed into place on success.
        var temporaryPath: String?
        var failure: RPCError?
        /// A login whose passphrase did not open the key (counted by `finish`, for the back-off).
        var wrongPassphrase = false
        /// A signup's proof-of-work nonce for `keys` (nil when the network asks for none).
        var work: UInt64?
        /// `device link`: the code and this machine's offer; `device approve`: the offer the
        /// code matched.
        var linkCode: LinkCode?
        var linkOffer: LinkOffer?
    }

    /// Slow work the node admitted for a request, done off its queue: a login's passphrase
    /// check, or a signup's new key (written with Argon2id when it has a passphrase) and its
    /// proof of work.
    enum PassphraseCheck: Sendable {
        case login(passphrase: String)
        /// A new account, or (`importing`) an existing account key brought from an export file:
        /// either way a new device key for this machine.
        case signup(passphrase: String?, importing: SigningKeyPair? = nil)
        /// `device link`: a new device key (its file protected with `passphrase`), a code and
        /// the offer (one Argon2id, PROTOCOL.md §13.8).
        case link(label: String, lifetime: UInt32, passphrase: String?)
        /// `device approve`: the peers' offers under the code's ID, each tried (one Argon2id each).
        case approve(LinkCode)

        var needsArgon2id: Bool {
            switch self {
            case .login, .link, .approve: true
            case .signup(let passphrase, _): passphrase != nil
            }
        }
    }

    /// The key whose proof of work a prepared signup still needs, if any.
    private func workToProve(_ check: PassphraseCheck, _ prepared: PreparedKey) -> SigningKeyPair? {
        guard case .signup(_, nil) = check, prepared.failure == nil, let keys = prepared.accountKeys,
              replica.settings.accountWork.bits > 0 else { return nil }
        return keys
    }

    /// The median seconds a signup's proof of work takes on this machine (one core), from a hash
    /// rate measured once (2^14 hashes, a few milliseconds); 0 when the network asks for none.
    func signupWorkSeconds() -> Double {
        let bits = replica.settings.accountWork.bits
        guard bits > 0 else { return 0 }
        if workRate == nil { workRate = AccountWork.measureRate(tries: 1 << 14) }
        return AccountWork.medianSeconds(bits: bits, rate: workRate ?? 1)
    }

    /// Off the queue, holding a work-gate slot: the new account's proof of work (PROTOCOL.md
    /// §6.1), 2^bits hashes on average.
    func proveWork(_ keys: SigningKeyPair, waited: Duration) -> UInt64? {
        let started = ContinuousClock.now
        let requirement = replica.settings.accountWork
        let nonce = AccountWork.solve(account: keys.publicKey.key, requirement: requirement)
        let ms = { (d: Duration) in "\(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)" }
        logger.info("account proof of work made", ["account": keys.publicKey.key.shortID, "bits": "\(requirement.bits)",
                                                   "waited_ms": ms(waited), "took_ms": ms(.now - started)])
        return nonce
    }

    /// What a hub refuses: everything that would put an account (or a device of one) here.
    static let accountMethods: Set<APIMethod> = [.accountSignup, .accountLogin, .accountImport, .deviceLink, .deviceApprove]

    /// The error a hub answers those with: what it is, and where to go instead.
    static func hubRefusal(_ method: APIMethod) -> RPCError {
        RPCError(.notAllowed, "this node runs as a hub (mentormated --hub, or hub = true in its config): it holds no accounts, "
                 + "so \(method.rawValue) is refused here; sign up and log in on a node started without --hub (your own machine's mentormated)")
    }

    enum Admission: Sendable {
        /// Nothing slow to do: the method runs (and says what is wrong, if anything).
        case none
        case refused(RPCError)
        /// Slow work must run off the queue (Argon2id behind its gate, a signup's proof of work
        /// behind its own), then the method. The user's place in `passphraseChecksInFlight` is
        /// taken; `finish` gives it back.
        case check(PassphraseCheck)
    }

    /// Step 1 of a request, on the queue, before any Argon2id: whether it needs a key prepared
    /// off the queue (a login of a protected, locked account with a passphrase; every signup).
    /// The cheap checks come first (arguments, the account, whether a key is needed at all),
    /// then for a login the back-off, and one check in flight per user — reserved here, so
    /// attempts sent in parallel cannot all pass a back-off that none of them has updated yet.
    /// What `prepareKey` then makes is handed to step 2 (`dispatch`) as its argument.
    func admit(_ method: APIMethod, _ params: [String: JSON], _ caller: Requester) -> Admission {
        if config.hub, Self.accountMethods.contains(method) { return .refused(Self.hubRefusal(method)) }
        let check: PassphraseCheck
        do {
            switch method {
            case .accountLogin:
                let request = try API.accountLogin.request(from: params)
                guard let given = request.passphrase, !given.isEmpty,
                      let account = try replica.nodeAccount(uid: caller.uid), account.protected,
                      writers[caller.uid] == nil else { return .none }
                let now = config.clock()
                if let f = loginFailures[caller.uid], f.until > now {
                    let waiting = f.until - now
                    let seconds = Int((Double(waiting.components.seconds) + Double(waiting.components.attoseconds) / 1e18).rounded(.up))
                    return .refused(RPCError(.wrongPassphrase, "too many wrong passphrases; try again in \(seconds) s"))
                }
                check = .login(passphrase: given)
            case .accountSignup:
                // Every signup is prepared off the queue: its key, and its proof of work.
                check = .signup(passphrase: try newAccount(try API.accountSignup.request(from: params), caller).passphrase)
            case .accountImport:
                let request = try API.accountImport.request(from: params)
                check = .signup(passphrase: request.passphrase, importing: try importedKeys(request, caller))
            case .deviceLink:
                check = try linkCheck(try API.deviceLink.request(from: params), caller)
            case .deviceApprove:
                check = .approve(try approveCheck(try API.deviceApprove.request(from: params), caller))
            default:
                return .none
            }
        } catch let e as RPCError {
            return .refused(e)
        } catch {
            return .none   // a storage error: the method meets it again and reports it
        }
        guard passphraseChecksInFlight.insert(caller.uid).inserted else {
            let what = switch check {
            case .login: "a login of your user is being checked already (one passphrase check at a time per user)"
            case .signup: "a sign-up of your user is under way already (one at a time per user)"
            case .link: "a `device link` of your user is being prepared already"
            case .approve: "a `device approve` of your user is being checked already"
            }
            return .refused(RPCError(.limitReached, "\(what); wait for its answer"))
        }
        return .check(check)
    }

    /// Off the queue, holding a gate slot: reads (decrypts) the key file for a login, or writes
    /// the new key to a temporary file for a signup. This is the only place Argon2id runs for
    /// an API request.
    func prepareKey(_ check: PassphraseCheck, _ caller: Requester, waited: Duration) -> PreparedKey {
        let started = ContinuousClock.now
        let prepared: PreparedKey
        switch check {
        case .login(let passphrase):
            do {
                let path = config.keyPath(uid: caller.uid), accountPath = config.accountKeyPath(uid: caller.uid)
                let hasAccountKey = FileManager.default.fileExists(atPath: accountPath)
                prepared = try withSecretBytes(of: passphrase) { bytes throws(CryptoError) in
                    PreparedKey(keys: try KeyFile.read(from: path, passphrase: bytes),
                                accountKeys: hasAccountKey ? try KeyFile.read(from: accountPath, passphrase: bytes) : nil)
                }
            } catch let e where e.code == .wrongPassphrase {
                prepared = PreparedKey(wrongPassphrase: true)
            } catch {
                prepared = PreparedKey(failure: RPCError(.internalError, "could not read your account key: \(error.message)"))
            }
        case .signup(let passphrase, let importing):
            // Two keys: the account's, and this machine's device key, which signs everyday
            // records under a certificate from the account key (PROTOCOL.md §6.2).
            let keys = SigningKeyPair.generate(), accountKeys = importing ?? SigningKeyPair.generate()
            let suffix = ".new-" + Hex.encode(SecureRandom.bytes(6))
            let path = config.keyPath(uid: caller.uid) + suffix, accountPath = config.accountKeyPath(uid: caller.uid) + suffix
            do {
                try writeKeyFiles([(keys, path), (accountKeys, accountPath)], passphrase: passphrase)
                prepared = PreparedKey(keys: keys, accountKeys: accountKeys, accountTemporaryPath: accountPath, temporaryPath: path)
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                try? FileManager.default.removeItem(atPath: accountPath)
                prepared = PreparedKey(failure: RPCError(.internalError, "could not write the account key: \(error)"))
            }
        case .link(let label, let lifetime, let passphrase):
            prepared = prepareLink(caller, label: label, lifetime: lifetime, passphrase: passphrase)
        case .approve(let code):
            prepared = findOffer(code)
        }
        let ms = { (d: Duration) in "\(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)" }
        logger.debug("passphrase checked", ["uid": "\(caller.uid)", "kind": { switch check {
                                                case .login: "login"; case .signup: "signup"; case .link: "link"; case .approve: "approve" } }(),
                                            "waited_ms": ms(waited), "took_ms": ms(.now - started),
                                            "outcome": prepared.wrongPassphrase ? "wrong" : prepared.failure == nil ? "ok" : "failed"])
        return prepared
    }

    /// Off the queue: writes new key files (mode 0600, in the accounts directory, made if
    /// missing), all under one passphrase (one Argon2id each) or none.
    func writeKeyFiles(_ files: [(keys: SigningKeyPair, path: String)], passphrase: String?) throws {
        try FileManager.default.createDirectory(atPath: config.accountsDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let cost = config.passphraseCost
        if let passphrase {
            try withSecretBytes(of: passphrase) { bytes throws(CryptoError) in
                for f in files { try KeyFile.write(f.keys, to: f.path, passphrase: bytes, parameters: cost) }
            }
        } else {
            for f in files { try KeyFile.write(f.keys, to: f.path, passphrase: nil, parameters: cost) }
        }
    }

    // MARK: Internals used by the methods (on `queue`)

    /// `keys` sign everyday records for `account` (a device key, or the account key itself);
    /// `accountKeys`, where this node holds them, seal and open the account's likes and
    /// messages and certify devices.
    func unlock(uid: UInt32, keys: SigningKeyPair, account: PublicKey, accountKeys: SigningKeyPair?) throws {
        let held = accountKeys ?? (keys.publicKey.key == account ? keys : nil)
        let device = keys.publicKey.key == account ? nil : keys
        try replica.unlock(account: account, accountKeys: held, device: device)
        let last = try replica.contiguousSeq(of: keys.publicKey.key)
        writers[uid] = RecordWriter(keys: keys, account: account, lastSeq: last)
        self.accountKeys[uid] = held
        // Unmatches that arrived while the account was locked are answered now (§8.8).
        for pair in try replica.pairSummaries(of: account) where pair.unmatchedBy == pair.other {
            acknowledgeUnmatches(uid, me: account, other: pair.other)
        }
        // A birthday that passed while the daemon was down.
        refreshAge(uid)
        // Matches that formed while it was locked, or lack the newest contact, get it (§7.7).
        sendContactLogged(uid, me: account)
        // Joins of its meetups that arrived while it was locked get their places (§6.7), and
        // its own meetups' reminders are set.
        updateRosters()
        meetupEvents()
    }

    func rebuildCardIndex() throws {
        feedState.removeAll()
        staleCards = []
        // One pass over the card entries: a read transaction per author kept a daemon with
        // 100,000 accounts from answering its socket for seconds after a restart.
        try replica.forEachCard(index)
    }

    /// Reads the cards changed since the index last did (role, courses, name, last update), in
    /// one read transaction. A failed read leaves them to be read next time.
    private func readStaleCards() {
        guard !staleCards.isEmpty else { return }
        do {
            // After a cold sync of many accounts, one pass over all cards beats a look-up each.
            if staleCards.count > 5_000 {
                try rebuildCardIndex()
                return
            }
            for state in try replica.cards(of: Array(staleCards)) { index(state) }
            staleCards = []
        } catch {
            logger.info("reading changed cards for the feed failed; tried again on the next request", ["error": "\(error)"])
        }
    }

    private func index(_ state: CardState) {
        feedState.index(state, nearby: isNearby(state.author))
    }

    /// An account is nearby now when it lives on this node or on a node linked to ours.
    func isNearby(_ key: PublicKey) -> Bool {
        nearbyAccounts.contains(key) || localKeys.contains(key)
    }

    /// The accounts announced by the peers linked now (replaces the last set). Does not wait.
    public func setNearby(_ accounts: Set<PublicKey>) {
        queue.async { [self] in
            let changed = accounts.symmetricDifference(nearbyAccounts)
            nearbyAccounts = accounts
            for key in changed { feedState.setNearby(key, isNearby(key)) }
        }
    }

    /// The accounts of this node's users (for `here`).
    public func localAccounts() -> [PublicKey] {
        queue.sync { localKeys.sorted() }
    }

    /// Signs and applies one record of the caller's account; throws unless it was applied.
    /// `signer` `.account`: signed by the account key (certificates, revocations, and — until
    /// sealing to devices exists — likes, messages and unmatches); `.everyday`: by this node's
    /// device key.
    @discardableResult
    func write(_ uid: UInt32, as signer: Signer = .everyday, _ make: (inout RecordWriter, UInt64) throws(RecordError) -> VerifiedRecord) throws -> VerifiedRecord {
        guard let everyday = writers[uid] else { throw try lockedError(uid) }
        var writer = everyday
        switch signer {
        case .account:
            guard let keys = accountKeys[uid] else {
                throw RPCError(.notAllowed, "this needs your account key, which is not on this node: do it on the machine you signed up on or imported the account to")
            }
            writer = RecordWriter(keys: keys, lastSeq: 0)
        case .sealing:
            // With the account's encryption key, by this machine's device (PROTOCOL.md §7.5);
            // an account that has none yet seals with its account key.
            if let key = replica.sealingKey(for: everyday.account) {
                if writer.isDevice { try checkStanding(of: writer) }
                writer.sealingKey = key
            } else if let keys = accountKeys[uid] {
                writer = RecordWriter(keys: keys, lastSeq: 0)
            } else {
                throw RPCError(.notAllowed, "this device has not received your account's encryption keys yet (its certificate has not arrived); wait for it to sync, then try again")
            }
        case .everyday:
            if writer.isDevice { try checkStanding(of: writer) }
        }
        // Another node using the same key may have moved the sequence on.
        let held = try replica.contiguousSeq(of: writer.author)
        if held > writer.lastSeq {
            let key = writer.sealingKey
            writer = RecordWriter(keys: writer.keys, account: writer.account, lastSeq: held)
            writer.sealingKey = key
        }
        let record: VerifiedRecord
        do { record = try make(&writer, config.now()) } catch {
            throw RPCError(.invalidValue, error.message)
        }
        // Checked like a record from a peer (`Replica.verify`): one this node's peers would
        // refuse must not be stored and relayed from here.
        if let refusal = AccountWork.refusal(of: record.record, requirement: replica.settings.accountWork) {
            throw RPCError(.internalError, "the new record was not applied (\(refusal)); nothing was changed")
        }
        let report = try replica.applyReporting(verified: [.success(record)])
        let outcome = report.outcomes[0]
        guard outcome == .applied else {
            throw RPCError(.internalError, "the new record was not applied (\(outcome)); nothing was changed")
        }
        if writer.author == everyday.author {
            writer.sealingKey = nil
            writers[uid] = writer
        }
        afterApply([record.record], pairs: report.pairs)
        changes.publish(.applied([AppliedRecord(record)]))
        return record
    }

    /// Updates the card index and publishes the match/message/unmatch events of the pairs the
    /// write changed. Whether a pair matched, unmatched or has new messages was decided once, by
    /// the apply that wrote its `pairs` row (`PairChange`); nothing is compared again here.
    /// Accounts that are locked get no events (their subscribers see the state on unlock).
    func afterApply(_ records: [Record], pairs: [PairChange]) {
        // A certificate may be the one a `device link` here waits for.
        if !pendingLinks.isEmpty, records.contains(where: { $0.type == .device }) {
            do { try finishLinks() } catch {
                logger.log(.error, "a linked device could not be set up", ["error": "\(error)"])
            }
        }
        // A revocation of one of this node's devices: said plainly.
        if records.contains(where: { $0.type == .revoke }) {
            for (uid, writer) in writers where writer.isDevice {
                guard let state = try? deviceFacts(uid, account: writer.account).state, state == "revoked" else { continue }
                logger.log(.warning, "this machine's device was revoked: every node refuses what it signs; `mentormate logout --forget`, then `mentormate device link`, to use it again",
                           ["uid": "\(uid)", "account": writer.account.shortID, "device": Self.deviceID(writer.author)])
            }
        }
        // Certificates of the campus count from now on (those in cards held back were noted
        // by the pipeline's `Campus.admit`, and are in the replica's `memberships` at start).
        campus.note(stored: records)
        // The cards the batch touched are read again when the feed is next asked for.
        let touched = records.filter { $0.type == .profile }.map(\.account)
        if !touched.isEmpty {
            staleCards.formUnion(touched)
            collectPhotos()
        }
        if records.contains(where: { $0.type == .post }) { afterPosts(records) }
        if records.contains(where: { $0.type == .meetupJoin }) { updateRosters() }
        if records.contains(where: { [.meetup, .meetupJoin, .meetupRoster].contains($0.type) }) { meetupEvents() }
        collectMeetupsHourly()
        guard !pairs.isEmpty else { return }
        let uids = Dictionary(writers.map { ($0.value.account, $0.key) }, uniquingKeysWith: { first, _ in first })
        for change in pairs.sorted(by: { ($0.account, $0.after.other) < ($1.account, $1.after.other) }) {
            guard let uid = uids[change.account] else { continue }
            let other = change.after.other
            // A blocked person raises no event; an unmatch of theirs is still answered (§8.8).
            if isBlocked(other, by: change.account) {
                if let by = change.unmatchedBy, by == other { acknowledgeUnmatches(uid, me: change.account, other: other) }
                continue
            }
            if change.becameMatched {
                publish(uid, .match, MatchEvent(id: other.id, name: names[other]))
                sendContactLogged(uid, me: change.account, only: other)
            }
            if let by = change.unmatchedBy {
                publish(uid, .unmatch, UnmatchEvent(id: other.id, by: by.id))
                if by == other { acknowledgeUnmatches(uid, me: change.account, other: other) }
            }
            if change.newMessages > 0, let view = try? replica.pairView(account: change.account, other: other) {
                for m in view.messages.suffix(change.newMessages) {
                    publish(uid, .message, MessageEvent(with: other.id, message: apiMessage(m, me: change.account)))
                }
            }
        }
    }

    /// Deletes the photos no current card names (replaced, or fetched for an edit since
    /// superseded); a local upload not yet named by a card is kept for an hour.
    func collectPhotos() {
        do {
            let gone = try replica.collectBlobs(now: config.now())
            if gone.blobs > 0 {
                logger.debug("photos no card names any more deleted", ["blobs": "\(gone.blobs)", "bytes": "\(gone.bytes)"])
            }
        } catch {
            logger.info("deleting photos no card names failed", ["error": "\(error)"])
        }
    }

    /// Delivers a node-wide notification (`peer`, `sync`: facts about the node that every local
    /// user may see, like `peers`) to every connection subscribed to `event`. Does not wait.
    public func broadcast(_ event: APIEvent, _ notification: RPCNotification) {
        queue.async { [self] in
            for (connection, sub) in subscriptions where sub.events.contains(event.rawValue) {
                notifications.deliver(notification, to: connection)
            }
        }
    }

    /// Sends `event` to `uid`'s connections that subscribed to it (encoded only when there is one).
    func publish(_ uid: UInt32, _ event: APIEvent, _ params: some APIObject) {
        let targets = subscriptions.filter { $0.value.uid == uid && $0.value.events.contains(event.rawValue) }.keys
        guard !targets.isEmpty, let notification = try? RPCNotification(event, params) else { return }
        for connection in targets { notifications.deliver(notification, to: connection) }
    }

    func lockedError(_ uid: UInt32) throws -> RPCError {
        guard try replica.nodeAccount(uid: uid) != nil else { return noAccount() }
        return RPCError(.locked, "your account is locked (passphrase-protected key, or you logged out); run `mentormate login`")
    }

    func noAccount() -> RPCError {
        RPCError(.noAccount, "you have no account on this node; run `mentormate signup --email ADDR --name NAME --role student|tutor`")
    }
}
