import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

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
    public init(author: PublicKey, seq: UInt64, bytes: [UInt8]) { self.author = author; self.seq = seq; self.bytes = bytes }
}

/// The node: the API's methods over the replica, for the local users' accounts.
///
/// All state is confined to one serial queue (`queue`); `handle` runs each request there, one at
/// a time — the replica has one writer anyway, and each request is short. `@unchecked Sendable`
/// is safe because every mutable member is touched only on that queue.
public final class Node: @unchecked Sendable {
    public private(set) var config: NodeConfig
    public let replica: Replica
    public let nodeKeys: SigningKeyPair
    /// Delivers a notification to one connection (set by the daemon).
    public var deliver: @Sendable (_ connection: UInt64, _ notification: RPCNotification) -> Void = { _, _ in }
    /// Daemon facts for status/doctor (set by the daemon).
    public var runtimeInfo: @Sendable () -> RuntimeInfo = {
        RuntimeInfo(socketPath: "", listen: nil, discovery: "off", peers: [], startedAt: 0)
    }
    /// Where the node logs (set by the daemon).
    public var logger: any Logger = DiscardingLogger()
    /// Records this node just applied (written here by `write`, or received by `applyRemote`),
    /// outcome `.applied` only, in (author, seq) order; the peer manager pushes them to every
    /// sync session. Called on whatever queue applied them: it must not block (hop queues).
    /// Set by the daemon before `start()`.
    public var onApplied: @Sendable ([AppliedRecord]) -> Void = { _ in }

    /// The node's set of local accounts changed (a signup): the peer manager tells its peers.
    /// Called on the node's queue: it must not block.
    public var onAccountsChanged: @Sendable () -> Void = {}

    let queue = DispatchQueue(label: "MentorNode.Node")
    /// Accounts whose node is linked to ours now (announced by connected peers).
    var nearbyAccounts: Set<PublicKey> = []
    /// The accounts of this node's users.
    var localKeys: Set<PublicKey> = []
    /// Unlocked accounts: uid → writer (holds the key).
    var writers: [UInt32: RecordWriter] = [:]
    /// Accounts whose users logged out (an unprotected key stays locked until `login`).
    var loggedOut: Set<UInt32> = []
    /// Card summaries of every author with a card, for the feed.
    var cards: [PublicKey: Feed.Candidate] = [:]
    var names: [PublicKey: String] = [:]
    /// Course names interned as small integers for the feed.
    var courseIDs: [String: Int32] = [:]
    var courseNames: [String] = []
    /// Unfinished photo uploads: token → (caller, bytes).
    var uploads: [String: (caller: Requester, data: [UInt8])] = [:]
    /// Subscriptions: connection → (uid, events).
    var subscriptions: [UInt64: (uid: UInt32, events: Set<String>)] = [:]
    /// The key a login or signup prepared off the queue, for the request being dispatched.
    var preparedKey: PreparedKey?
    /// Wrong passphrases per uid: (count, until when further attempts are refused).
    var loginFailures: [UInt32: (count: Int, until: ContinuousClock.Instant)] = [:]
    /// Last pair summaries seen per local account, to turn replica changes into events.
    var pairSnapshots: [PublicKey: [PublicKey: PairSummary]] = [:]

    public init(config: NodeConfig, replica: Replica, nodeKeys: SigningKeyPair) {
        self.config = config
        self.replica = replica
        self.nodeKeys = nodeKeys
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
                    try unlock(uid: account.uid, keys: keys)
                } catch {
                    logger.log(.error, "account stays locked: its key could not be read", ["uid": "\(account.uid)", "error": "\(error)"])
                }
            }
            try rebuildCardIndex()
            collectPhotos()   // photos an older build kept after their cards moved on
        }
    }

    /// Runs one API request for `caller`.
    public func handle(_ method: String, _ params: [String: JSON], caller: Requester) -> Result<JSON, RPCError> {
        // Passphrase work (Argon2id: ~0.5 s and 256 MiB) runs before taking the node's queue, so
        // one user's login never stalls everyone else's requests.
        let prepared = prepareKey(method, params, caller)
        defer { if let path = prepared?.temporaryPath { try? FileManager.default.removeItem(atPath: path) } }
        return queue.sync {
            do {
                if let failure = prepared?.failure { throw failure }
                preparedKey = prepared
                defer { preparedKey = nil }
                return .success(try dispatch(method, Params(params, method: method), caller))
            } catch let e as RPCError {
                return .failure(e)
            } catch let e as StoreError {
                logger.log(.error, "storage error", ["method": method, "error": "\(e)"])
                return .failure(RPCError(.storage, "the replica could not be written (\(e.message)); nothing was stored — check free disk space and the state directory"))
            } catch {
                logger.log(.error, "internal error", ["method": method, "error": "\(error)"])
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
        queue.sync { config.emailDomains = emailDomains }
    }

    /// Forgets a closed connection's uploads and subscriptions.
    public func connectionClosed(_ connection: UInt64) {
        queue.sync {
            subscriptions[connection] = nil
            uploads = uploads.filter { $0.value.caller.connection != connection }
        }
    }

    /// Applies records that came from elsewhere (peers) and publishes the resulting events.
    public func applyRemote(_ batch: [[UInt8]]) throws(StoreError) -> [ApplyOutcome] {
        // `stored` includes held records this batch released, so they are indexed and pushed on too.
        let (outcomes, stored) = try replica.applyReporting(batch: batch)
        queue.sync { afterApply(stored.map(\.record)) }
        let applied = stored.map { AppliedRecord(author: $0.record.author, seq: $0.record.seq, bytes: $0.encoded) }
        if !applied.isEmpty {
            onApplied(applied.sorted { ($0.author, $0.seq) < ($1.author, $1.seq) })
        }
        return outcomes
    }

    // MARK: Passphrase work off the queue

    struct PreparedKey {
        var keys: SigningKeyPair?
        /// A new key file written under a temporary name (signup), renamed into place on success.
        var temporaryPath: String?
        var failure: RPCError?
    }

    /// For `account.login` with a passphrase: reads (decrypts) the key file; for `account.signup`
    /// with a passphrase: writes the new key to a temporary file. Nil when there is nothing slow to do.
    func prepareKey(_ method: String, _ params: [String: JSON], _ caller: Requester) -> PreparedKey? {
        guard let passphrase = params["passphrase"]?.stringValue, !passphrase.isEmpty else { return nil }
        switch method {
        case "account.login":
            let waiting: Duration? = queue.sync {
                guard let f = loginFailures[caller.uid] else { return nil }
                let now = ContinuousClock.now
                return f.until > now ? f.until - now : nil
            }
            if let waiting {
                let seconds = Int((Double(waiting.components.seconds) + Double(waiting.components.attoseconds) / 1e18).rounded(.up))
                return PreparedKey(failure: RPCError(.wrongPassphrase, "too many wrong passphrases; try again in \(seconds) s"))
            }
            do {
                return PreparedKey(keys: try KeyFile.read(from: config.keyPath(uid: caller.uid), passphrase: Array(passphrase.utf8)))
            } catch let e where e.code == .wrongPassphrase {
                queue.sync {
                    let count = (loginFailures[caller.uid]?.count ?? 0) + 1
                    // The first mistake is free; then 1 s, 2 s, 4 s … up to a minute between attempts.
                    let wait = count < 2 ? 0 : min(60, 1 << min(count - 2, 6))
                    loginFailures[caller.uid] = (count, .now + .seconds(wait))
                }
                return PreparedKey(failure: RPCError(.wrongPassphrase, "wrong passphrase; try again"))
            } catch {
                return nil   // missing account or file: the method itself says what is wrong
            }
        case "account.signup":
            let keys = SigningKeyPair.generate()
            let path = config.keyPath(uid: caller.uid) + ".new-" + Hex.encode(SecureRandom.bytes(6))
            do {
                try FileManager.default.createDirectory(atPath: config.accountsDirectory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
                try KeyFile.write(keys, to: path, passphrase: Array(passphrase.utf8), parameters: config.passphraseCost)
            } catch {
                return PreparedKey(failure: RPCError(.internalError, "could not write the account key: \(error)"))
            }
            return PreparedKey(keys: keys, temporaryPath: path)
        default:
            return nil
        }
    }

    // MARK: Internals used by the methods (on `queue`)

    func unlock(uid: UInt32, keys: SigningKeyPair) throws {
        try replica.unlock(keys)
        let last = try replica.contiguousSeq(of: keys.publicKey.key)
        writers[uid] = RecordWriter(keys: keys, lastSeq: last)
        pairSnapshots[keys.publicKey.key] = Dictionary(uniqueKeysWithValues: try replica.pairSummaries(of: keys.publicKey.key).map { ($0.other, $0) })
    }

    func rebuildCardIndex() throws {
        cards = [:]
        names = [:]
        for key in try replica.knownAuthors() { try refreshCard(key) }
    }

    func refreshCard(_ key: PublicKey) throws {
        guard let state = try replica.card(of: key) else { return }
        cards[key] = Feed.Candidate(key: key, role: state.card.role, courses: (state.card.courses ?? []).map(courseID),
                                    updatedAt: state.updatedAt, nearby: isNearby(key))
        names[key] = state.card.name
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
            for key in changed where cards[key] != nil { cards[key]?.nearby = isNearby(key) }
        }
    }

    /// The accounts of this node's users (for `here`).
    public func localAccounts() -> [PublicKey] {
        queue.sync { localKeys.sorted() }
    }

    func courseID(_ name: String) -> Int32 {
        if let id = courseIDs[name] { return id }
        let id = Int32(courseNames.count)
        courseIDs[name] = id
        courseNames.append(name)
        return id
    }

    /// Signs and applies one record of the caller's account; throws unless it was applied.
    @discardableResult
    func write(_ uid: UInt32, _ make: (inout RecordWriter, UInt64) throws(RecordError) -> VerifiedRecord) throws -> VerifiedRecord {
        guard var writer = writers[uid] else { throw try lockedError(uid) }
        // Another node using the same account may have moved the sequence on.
        let held = try replica.contiguousSeq(of: writer.author)
        if held > writer.lastSeq { writer = RecordWriter(keys: writer.keys, lastSeq: held) }
        let record: VerifiedRecord
        do { record = try make(&writer, config.now()) } catch {
            throw RPCError(.invalidValue, error.message)
        }
        let outcome = try replica.apply(verified: [.success(record)])[0]
        guard outcome == .applied else {
            throw RPCError(.internalError, "the new record was not applied (\(outcome)); nothing was changed")
        }
        writers[uid] = writer
        afterApply([record.record])
        onApplied([AppliedRecord(author: record.record.author, seq: record.record.seq, bytes: record.encoded)])
        return record
    }

    /// Updates the card index and publishes match/message/unmatch events after records applied.
    func afterApply(_ records: [Record]) {
        for r in records where r.type == .profile { try? refreshCard(r.author) }
        if records.contains(where: { $0.type == .profile }) { collectPhotos() }
        guard records.contains(where: { $0.type != .profile }) else { return }
        for (uid, writer) in writers {
            let me = writer.author
            guard let now = try? replica.pairSummaries(of: me) else { continue }
            let before = pairSnapshots[me] ?? [:]
            for s in now {
                let old = before[s.other]
                if s.matched && old?.matched != true {
                    publish(uid, "match", RPCNotification(method: "event.match", params: ["id": .string(s.other.id), "name": names[s.other].map(JSON.string) ?? .null]))
                }
                if let by = s.unmatchedBy, old?.unmatchedBy == nil {
                    publish(uid, "unmatch", RPCNotification(method: "event.unmatch", params: ["id": .string(s.other.id), "by": .string(by.id)]))
                }
                if s.messages > (old?.messages ?? 0), let view = try? replica.pairView(account: me, other: s.other) {
                    for m in view.messages.suffix(s.messages - (old?.messages ?? 0)) {
                        publish(uid, "message", RPCNotification(method: "event.message",
                                                                params: ["with": .string(s.other.id), "message": messageJSON(m, me: me)]))
                    }
                }
            }
            pairSnapshots[me] = Dictionary(uniqueKeysWithValues: now.map { ($0.other, $0) })
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
    public func broadcast(_ event: String, _ notification: RPCNotification) {
        queue.async { [self] in
            for (connection, sub) in subscriptions where sub.events.contains(event) {
                deliver(connection, notification)
            }
        }
    }

    func publish(_ uid: UInt32, _ event: String, _ notification: RPCNotification) {
        for (connection, sub) in subscriptions where sub.uid == uid && sub.events.contains(event) {
            deliver(connection, notification)
        }
    }

    func lockedError(_ uid: UInt32) throws -> RPCError {
        guard try replica.nodeAccount(uid: uid) != nil else { return noAccount() }
        return RPCError(.locked, "your account is locked (passphrase-protected key, or you logged out); run `mentormate login`")
    }

    func noAccount() -> RPCError {
        RPCError(.noAccount, "you have no account on this node; run `mentormate signup --email ADDR --name NAME --role student|tutor`")
    }
}
