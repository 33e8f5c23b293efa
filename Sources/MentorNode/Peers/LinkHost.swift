import Dispatch
import MentorCore
import MentorCrypto
import MentorStore

extension PeerManager.Settings {
    /// The settings of each link's `SyncDriver`: the round interval and the per-link rates of
    /// `recon`, `want` and `ihave`/`prune`/`graft` (PROTOCOL.md §13.4, §13.7). The lazy-push
    /// rate is never off in the daemon: a `treeBurst` below 1 rates one message per period.
    var driver: SyncDriver.Settings {
        var d = SyncDriver.Settings()
        d.roundInterval = reconInterval
        d.reconBurst = reconBurst
        d.reconPeriod = reconPeriod
        d.wantBurst = wantBurst
        d.wantPeriod = wantPeriod
        d.treeBurst = max(1, treeBurst)
        d.treePeriod = treePeriod
        return d
    }
}

/// What a link's `LinkHost` needs of the shell that owns the link (`PeerManager`), on the
/// shell's queue: its replica, its queue's timers, the wire and the pipelines it runs for all
/// links (verify/apply, lazy push, photos, notifications, penalties).
protocol LinkShell: ShellQueue {
    var replica: Replica { get }
    func send(_ message: SyncMessage, on connection: PeerConnection)
    /// What the peer said about the push tree (PROTOCOL.md §13.7).
    func pushSignal(_ signal: PushSignal, on connection: PeerConnection)
    /// Verifies and applies a batch off the queue; the outcome comes back as `driver.applied`.
    func verifyAndApply(_ batch: [[UInt8]], from connection: PeerConnection)
    /// The session's totals moved (`event.sync`).
    func announceSync(_ connection: PeerConnection)
    /// A link's peer named the accounts on its node (`connection.accounts`): "nearby now" changed.
    func publishNearby()
    func answerBlobRequest(_ hash: [UInt8], on connection: PeerConnection)
    /// A part of the blob asked for on this link; a reason to close for, if the peer is at fault.
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8], on connection: PeerConnection) -> String?
    /// The session is over: close the link, and refuse its address for a while if `blame`.
    func sessionFinished(_ connection: PeerConnection, reason: String, blame: Bool)
    /// The driver carried out what one input said (photos may wait for this link to catch up).
    func sessionRan(_ connection: PeerConnection)
    /// The peer's device offer (`link`, §13.8; empty: withdrawn); a reason to close for, if
    /// the offer is malformed.
    func linkOffer(_ offer: [UInt8], on connection: PeerConnection) -> String?
}

extension PeerManager: LinkShell {}

/// A link's side of its `SyncDriver`: the replica, the wire, the timers and the shell's
/// pipelines, on the shell's queue. The decisions are the driver's; this only carries them out,
/// keeping per link what the shell need not see (the driver's timers, the replica's cursors of
/// subtree reads, the accounts its peer named). Every call after the link closed, or after the
/// shell stopped, does nothing.
final class LinkHost: SyncHost {
    unowned let shell: any LinkShell
    /// Weak: the shell owns the connection (which owns the driver, which owns this); a call
    /// after the link closed finds it gone and does nothing.
    weak var connection: PeerConnection?
    private let clock: @Sendable () -> ContinuousClock.Instant
    init(shell: any LinkShell, connection: PeerConnection, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.shell = shell
        self.connection = connection
        self.clock = clock
    }

    var isOpen: Bool { guard let connection else { return false }; return !shell.isStopped && !connection.closing }
    var now: ContinuousClock.Instant { clock() }

    func send(_ message: SyncMessage) { if let connection { shell.send(message, on: connection) } }
    func pushSignal(_ signal: PushSignal) { if let connection { shell.pushSignal(signal, on: connection) } }

    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]] {
        try shell.replica.records(of: author, seqs: seqs)
    }

    func records(ids: [[UInt8]]) throws -> [[UInt8]] { try shell.replica.reconRecords(ids: ids) }

    func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?) {
        guard let connection else { return ([], nil) }
        // The session carries a token; the replica's cursor stays here (one read of a
        // subtree is under way per session at a time).
        let resume = connection.cursors.resume(after?.token)
        let page = try shell.replica.reconRecords(depth: depth, prefix: prefix, after: resume, limit: limit)
        return (page.records, page.next.map { FetchCursor(token: connection.cursors.keep($0)) })
    }

    func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T { try shell.replica.withReconView(body) }

    func contiguousSeq(of author: PublicKey) -> UInt64 { (try? shell.replica.contiguousSeq(of: author)) ?? 0 }

    func apply(_ batch: [[UInt8]]) { if let connection { shell.verifyAndApply(batch, from: connection) } }

    /// One timer of each kind per link: a new one replaces the one pending. It fires into the
    /// driver unless the link closed or the shell stopped meanwhile.
    func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) {
        guard let connection else { return }
        connection.timers[timer]?.cancel()
        let item = DispatchWorkItem { [weak shell = self.shell, weak connection] in
            guard let shell, let connection, !shell.isStopped, !connection.closing else { return }
            connection.timers[timer] = nil
            connection.driver.fire(timer)
        }
        connection.timers[timer] = item
        shell.schedule(item, at: at)
    }

    func progress(sent: Int, received: Int) { if let connection { shell.announceSync(connection) } }

    func peerAccounts(_ accounts: [PublicKey]) {
        guard let connection else { return }
        connection.accounts = Set(accounts)
        shell.publishNearby()
    }

    func serveBlob(hash: [UInt8]) -> String? {
        guard let connection else { return nil }
        // An honest peer asks for one blob at a time, after reading the last: a peer that
        // asks on while our answers wait unsent would make us buffer without bound.
        if BlobFetcher.asksFasterThanItReads(unsentBytes: connection.unsent.reduce(0, { $0 + $1.count })) {
            return "asks for blobs faster than it reads them"
        }
        shell.answerBlobRequest(hash, on: connection)
        return nil
    }

    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String? {
        guard let connection else { return nil }
        return shell.blobPart(hash: hash, total: total, offset: offset, bytes: bytes, on: connection)
    }

    func linkOffer(_ offer: [UInt8]) -> String? {
        guard let connection else { return nil }
        return shell.linkOffer(offer, on: connection)
    }

    func finished(_ reason: String, blame: Bool) {
        // Held strongly: closing the link drops the shell's reference to it.
        guard let connection else { return }
        shell.sessionFinished(connection, reason: reason, blame: blame)
    }

    func didRun() {
        guard let connection else { return }
        shell.sessionRan(connection)
    }
}
