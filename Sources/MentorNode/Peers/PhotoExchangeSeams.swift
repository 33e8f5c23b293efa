import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

// The photo exchange's seams: what it needs of the node's replica (`PhotoStore`), of each
// link (`PhotoLink`) and of the shell that owns the links (`PhotoShell`), and the daemon's
// conformances. `PhotoExchange.swift` holds the exchange itself.

/// What the photo exchange needs of the node and its replica, as functions (so a test can
/// stand in for them): the photos current cards name and the replica lacks, the bytes photos
/// take, one author's usage, the node's own accounts, whether a card still names a photo,
/// storing a fetched photo and reading one to serve. `PhotoStore(node:)` is the daemon's.
struct PhotoStore {
    /// Photos current cards name and the replica lacks, smallest first (`Replica.missingPhotos`).
    var missingPhotos: (_ limit: Int) throws(StoreError) -> [(ref: PhotoRef, author: PublicKey)]
    /// Bytes all photos held take (`Replica.blobUsage`).
    var blobBytes: () throws(StoreError) -> Int64
    /// Bytes an author's records and photos take (`Replica.authorUsage`).
    var authorUsage: (_ author: PublicKey) throws(StoreError) -> Int64
    /// The accounts living on this node (exempt from the budgets).
    var localAccounts: () -> [PublicKey]
    /// Whether a current card names the photo (`Replica.isNamedPhoto`).
    var isNamedPhoto: (_ hash: [UInt8]) throws(StoreError) -> Bool
    /// Stores a fetched photo, checking its limits and format (`Replica.putBlob`).
    var putBlob: (_ data: [UInt8]) throws(BlobError) -> Void
    /// The photo's bytes, if the replica holds it (`Replica.blob`).
    var blob: (_ hash: [UInt8]) throws(StoreError) -> [UInt8]?
}

extension PhotoStore {
    init(node: Node) {
        let replica = node.replica
        missingPhotos = { (limit) throws(StoreError) in try replica.missingPhotos(limit: limit) }
        blobBytes = { () throws(StoreError) in try replica.blobUsage().bytes }
        authorUsage = { (author) throws(StoreError) in try replica.authorUsage(author) }
        localAccounts = { node.localAccounts() }
        isNamedPhoto = { (hash) throws(StoreError) in try replica.isNamedPhoto(hash: hash) }
        putBlob = { (data) throws(BlobError) in _ = try replica.putBlob(data) }
        blob = { (hash) throws(StoreError) in try replica.blob(hash: hash)?.data }
    }
}

/// One link as the photo exchange sees it, on the shell's queue (`PeerConnection` in the
/// daemon, a fake in tests): whether it is up and where its session stands, and the blob asked
/// of it (one at a time), when the request or its last part came, and the timer that checks it.
/// `SendableMetatype`: the exchange's closures name the type, never an instance off the queue.
protocol PhotoLink: AnyObject, SendableMetatype {
    /// Names the link for good (`BlobFetcher` names links by it).
    var serial: UInt64 { get }
    var closing: Bool { get }
    /// The handshake is done and the link kept (`PeerConnection.since` is set).
    var linkUp: Bool { get }
    /// Its session said hello (`SyncSession.isEstablished`) and has caught up (`isCaughtUp`).
    var sessionIsEstablished: Bool { get }
    var sessionIsCaughtUp: Bool { get }
    /// The blob being received over the link, when the request was sent or its last part came,
    /// and the timer that ends the link if no part comes for the answer timeout.
    var blobIn: BlobAssembly? { get set }
    var blobPartAt: ContinuousClock.Instant { get set }
    var blobTimer: DispatchWorkItem? { get set }
}

/// What the photo exchange needs of the shell that owns the links (`PeerManager`), on the
/// shell's queue. `SendableMetatype` as `PhotoLink`.
protocol PhotoShell: ShellQueue, SendableMetatype {
    associatedtype Link: PhotoLink
    /// Every link the shell keeps now, closing or not, in any order.
    var links: [Link] { get }
    func send(_ message: SyncMessage, on link: Link)
    /// No part of the blob asked of `link` came for the answer timeout: end the link, no
    /// offence (its close comes back as `linkClosed`, and the photo is asked of another).
    func blobAnswerOverdue(_ link: Link, reason: String)
}

extension PeerManager: PhotoShell {}

extension PeerConnection: PhotoLink {
    var linkUp: Bool { since != 0 }
    var sessionIsEstablished: Bool { session.isEstablished }
    var sessionIsCaughtUp: Bool { session.isCaughtUp }
}
