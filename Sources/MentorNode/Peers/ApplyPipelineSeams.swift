import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

// The apply pipeline's seams: what it needs of the node's replica (`ApplyStore`), of each
// link (`ApplyLink`) and of the shell that owns the links (`ApplyShell`), and the daemon's
// conformances. `ApplyPipeline.swift` holds the pipeline itself.

/// What the apply pipeline needs of the node and its replica, as functions (so a test can
/// stand in for them): verifying a batch, applying batches together in one transaction, and
/// the records held until due. `ApplyStore(node:)` is the daemon's.
struct ApplyStore: Sendable {
    /// Decodes and verifies a batch (`Replica.verify`); called on the verify queue, several at once.
    var verify: @Sendable (_ batch: [[UInt8]]) -> [Result<VerifiedRecord, RecordError>]
    /// Applies batches in one transaction, each named by the link it came from, and gives the
    /// outcomes of each in its order (`Node.applyRemote(batches:)`); on the apply queue.
    var apply: @Sendable (_ batches: [(verified: [Result<VerifiedRecord, RecordError>], origin: UInt64?)]) throws(StoreError)
        -> [[ApplyOutcome]]
    /// When the earliest record held until due is due, in Unix milliseconds by this node's
    /// clock (nil: none is held).
    var nextDue: @Sendable () throws(StoreError) -> UInt64?
    /// Applies the records held until due whose time has come; how many were stored.
    var releaseDue: @Sendable () throws(StoreError) -> Int
}

extension ApplyStore {
    init(node: Node) {
        let replica = node.replica
        verify = { replica.verify($0) }
        apply = { (batches) throws(StoreError) in try node.applyRemote(batches: batches) }
        nextDue = { () throws(StoreError) in
            guard let earliest = try replica.earliestHeldUntilDue() else { return nil }
            return earliest - min(earliest, replica.settings.futureTolerance)
        }
        releaseDue = { () throws(StoreError) in try node.releaseDueRecords() }
    }
}

/// One link as the apply pipeline sees it, on the shell's queue (`PeerConnection` in the
/// daemon, a fake in tests): its records-per-second bucket and the timer that releases the
/// acks the bucket held back, the kinds of "not taken now" logged on it, and its session's
/// inputs for a batch's outcome (each one a `SyncDriver` call). `SendableMetatype`: the
/// pipeline's closures name the type, never an instance off the shell's queue.
protocol ApplyLink: AnyObject, SendableMetatype {
    /// Names the link for good (the shell's key of a link is reused once the link is gone).
    var serial: UInt64 { get }
    var closing: Bool { get }
    /// The peer's address, for log lines.
    var remoteAddress: String { get }
    var pacer: AckPacer { get set }
    var ackTimer: DispatchWorkItem? { get set }
    var notNowLogged: Set<String> { get set }
    /// Acks the session holds back for the rate (`SyncSession.heldAcks`).
    var heldAcks: Int { get }
    /// The oldest batch outstanding was queued: acknowledged now if the session allows.
    func accepted()
    func applied(stored: Int, refused: Int, holdAck: Bool)
    func deferred(_ authors: [PublicKey])
    func heldAside(_ authors: [PublicKey])
    func abandon(_ authors: [PublicKey])
    func releaseAcks()
}

/// What the apply pipeline needs of the shell that owns the links (`PeerManager`), on the
/// shell's queue. `SendableMetatype` as `ApplyLink`.
protocol ApplyShell: ShellQueue, SendableMetatype {
    associatedtype Link: ApplyLink
    /// The link the shell keeps under `key` now, closing or not (the pipeline checks the serial).
    func link(_ key: ObjectIdentifier) -> Link?
    /// Applying a batch of the link failed (a local error, no offence): end the link.
    func applyFailed(_ link: Link, reason: String)
    /// Bodies of a batch from the link that were already held (lazy push counts them, and may
    /// prune the link).
    func duplicatesApplied(_ count: Int, from link: Link)
    /// A fork variant was applied (reconciliation rounds start now).
    func forkApplied()
}

extension PeerManager: ApplyShell {}

extension PeerConnection: ApplyLink {
    var remoteAddress: String { "\(link.remote)" }
    var heldAcks: Int { session.heldAcks }
    func accepted() { driver.accepted() }
    func applied(stored: Int, refused: Int, holdAck: Bool) { driver.applied(stored: stored, refused: refused, holdAck: holdAck) }
    func deferred(_ authors: [PublicKey]) { driver.deferred(authors) }
    func heldAside(_ authors: [PublicKey]) { driver.heldAside(authors) }
    func abandon(_ authors: [PublicKey]) { driver.abandon(authors) }
    func releaseAcks() { driver.releaseAcks() }
}
