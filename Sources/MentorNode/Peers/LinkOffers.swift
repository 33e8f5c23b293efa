import Dispatch
import Foundation
import MentorCore
import MentorCrypto

/// One link as device linking sees it, on the shell's queue (`PeerConnection` in the daemon, a
/// fake in tests): whether it is up, whose node is at the other end, its `link` gate and the
/// gate's timer, and its driver's input. `SendableMetatype`: the closures here name the type,
/// never an instance off the queue.
protocol LinkOfferLink: AnyObject, SendableMetatype {
    var closing: Bool { get }
    /// The handshake is done, the link kept and our hello sent (`PeerConnection.since` is set).
    var linkUp: Bool { get }
    /// The peer's node key (set by the handshake): offers are kept per peer node, so a link
    /// that drops and comes back does not double them.
    var peerKey: SigningPublicKey? { get }
    /// How often the peer may change the offers we hold for it, and the timer that takes a
    /// `link` the gate kept once its bucket has a token again.
    var linkOffers: MessageGate { get set }
    var linkOffersTimer: DispatchWorkItem? { get set }
    /// Hands a message from the peer to the link's session (`SyncDriver.receive`).
    func receive(_ bytes: [UInt8])
}

/// What device linking needs of the shell that owns the links (`PeerManager`), on the shell's
/// queue. `SendableMetatype` as `LinkOfferLink`.
protocol LinkOfferShell: ShellQueue, SendableMetatype {
    associatedtype Link: LinkOfferLink
    /// Every link the shell keeps now, closing or not, in any order.
    var links: [Link] { get }
    /// Sends an encoded message on `link` (in order, after what waits unsent).
    func send(_ bytes: [UInt8], on link: Link)
}

/// The device offers this node's peers sent (PROTOCOL.md §13.8), bounded: at most `perPeer`
/// per peer node (a newer one replaces its older), at most `capacity` in all (the oldest
/// dropped), each dropped at its `expires` or `LinkOffer.lifetime` after it arrived, whichever
/// comes first (an `expires` further ahead is clamped, one already past is not kept). Kept when
/// the link goes down, until then: a link that drops and comes back does not lose them, and
/// the same offer sent again replaces its copy. A peer's withdrawal drops all of its offers.
///
/// A value type with both clocks passed in: the monotonic one every deadline is measured on,
/// and the wall clock (ms) the offers' `expires` are read against, once, on arrival.
struct ReceivedLinkOffers: Sendable {
    struct Entry: Sendable, Equatable {
        let peer: SigningPublicKey
        let offer: LinkOffer
        /// When it is dropped.
        let until: ContinuousClock.Instant
    }

    static let perPeer = 2
    static let capacity = 32

    /// Oldest first.
    private(set) var entries: [Entry] = []

    /// An offer from `peer` arrived at `now` (the wall clock says `wallNow`, ms).
    mutating func take(_ offer: LinkOffer, from peer: SigningPublicKey, now: ContinuousClock.Instant, wallNow: UInt64) {
        expire(now: now)
        guard offer.expires > wallNow else { return }
        entries.removeAll { $0.peer == peer && $0.offer == offer }
        let theirs = entries.indices.filter { entries[$0].peer == peer }
        if theirs.count >= Self.perPeer { entries.remove(at: theirs[0]) }
        if entries.count >= Self.capacity { entries.removeFirst() }
        entries.append(Entry(peer: peer, offer: offer, until: now + Self.remaining(offer.expires, wallNow: wallNow)))
    }

    /// `peer` withdrew what it offered.
    mutating func withdraw(from peer: SigningPublicKey) {
        entries.removeAll { $0.peer == peer }
    }

    /// Drops the offers whose time is up at `now`.
    mutating func expire(now: ContinuousClock.Instant) {
        entries.removeAll { $0.until <= now }
    }

    /// The live offers under `codeID`, newest first, each once (two peers may send the same: one
    /// copied the other's).
    func offers(codeID: UInt16, now: ContinuousClock.Instant) -> [LinkOffer] {
        var out: [LinkOffer] = []
        for entry in entries.reversed() where entry.offer.codeID == codeID && entry.until > now && !out.contains(entry.offer) {
            out.append(entry.offer)
        }
        return out
    }

    /// How long an offer ending at `expires` (ms) has left at `wallNow`, at most its lifetime.
    static func remaining(_ expires: UInt64, wallNow: UInt64) -> Duration {
        let lifetime = UInt64(LinkOffer.lifetime.components.seconds) * 1000
        return .milliseconds(expires > wallNow ? min(expires - wallNow, lifetime) : 0)
    }
}

/// Linking a device over the shell's links (PROTOCOL.md §13.8). Outgoing: while this node
/// offers its device (`offer`), the offer goes in a `link` message to every link that is up
/// and to each new link after its hello, until it is withdrawn (an empty `link` to every link
/// that is up) or replaced (the withdrawal, then the new offer), or its time is up (its
/// `expires`, at most `LinkOffer.lifetime` after it was set: then it is no longer sent, and
/// the peers drop it themselves). Incoming: what peers offer is checked (a malformed offer is
/// the peer's offence) and kept in a bounded table (`ReceivedLinkOffers`) that the node
/// searches by code ID (`offers(codeID:)`, from any thread). A `link` over the link's rate (its
/// `MessageGate`) is no offence: the newest is kept and handed to the session when the bucket
/// has refilled (one timer per link).
///
/// Confinement: our offer, every link and the gates' timers are on the shell's queue; the
/// received offers are behind `lock` (written on the queue, read from anywhere). The clocks
/// are injected. `@unchecked Sendable` for that reason (its timers capture it weakly and run on
/// that queue).
final class LinkOffers<Shell: LinkOfferShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this (weak: the shell owns it).
    weak var shell: Shell?
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let wallClock: @Sendable () -> UInt64
    /// Our offer while it stands, and when its time is up (on the shell's queue).
    private var mine: (offer: LinkOffer, until: ContinuousClock.Instant)?
    private let lock = NSLock()
    /// What the peers offered (under `lock`).
    private var table = ReceivedLinkOffers()

    /// `clock`: the monotonic clock deadlines are measured on; `now`: the wall clock in ms,
    /// which offers' `expires` are read against.
    init(clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
         now: @escaping @Sendable () -> UInt64) {
        self.clock = clock
        self.wallClock = now
    }

    // MARK: Outgoing

    /// Offers this node's device to its peers (nil: withdraws the offer): sent to every link
    /// that is up now, and to each link that comes up while it stands. A new offer replaces the
    /// one before (the withdrawal goes first).
    func offer(_ offer: LinkOffer?) {
        guard let shell, !shell.isStopped else { return }
        var messages: [[UInt8]] = []
        if current != nil { messages.append(SyncMessage.link([]).encoded) }
        mine = offer.map { ($0, clock() + ReceivedLinkOffers.remaining($0.expires, wallNow: wallClock())) }
        if let current { messages.append(SyncMessage.link(current.encoded).encoded) }
        for link in shell.links where !link.closing && link.linkUp {
            for message in messages { shell.send(message, on: link) }
        }
    }

    /// Our offer, while its time is not up.
    var current: LinkOffer? {
        guard let mine, clock() < mine.until else { return nil }
        return mine.offer
    }

    /// A link was established (our hello is out): our offer goes to it, if one stands.
    func linkEstablished(_ link: Link) {
        guard let current else { return }
        shell?.send(SyncMessage.link(current.encoded).encoded, on: link)
    }

    // MARK: Incoming

    /// A message from the peer on `link`: whether to hand it to the session now. A `link` over
    /// the rate is kept (the newest) and handed over when the gate's bucket has refilled.
    func admit(_ bytes: [UInt8], from link: Link) -> Bool {
        guard case .hold(let armTimer) = link.linkOffers.admit(bytes, now: clock()) else { return true }
        if armTimer { awaitRefill(link) }
        return false
    }

    /// The session handed over the peer's `link` (`SyncHost.linkOffer`): an offer is kept, an
    /// empty one withdraws the peer's offers. A reason to end the session for, if the offer is
    /// malformed.
    func received(_ bytes: [UInt8], from link: Link) -> String? {
        guard let peer = link.peerKey else { return nil }
        guard !bytes.isEmpty else {
            lock.withLock { table.withdraw(from: peer) }
            return nil
        }
        let offer: LinkOffer
        do { offer = try LinkOffer.decode(bytes) } catch { return "malformed link offer: \(error.message)" }
        let now = clock(), wallNow = wallClock()
        lock.withLock { table.take(offer, from: peer, now: now, wallNow: wallNow) }
        return nil
    }

    /// The live offers peers sent under `codeID`, newest first. From any thread.
    func offers(codeID: UInt16) -> [LinkOffer] {
        let now = clock()
        return lock.withLock {
            table.expire(now: now)
            return table.offers(codeID: codeID, now: now)
        }
    }

    /// Offers held now (for tests).
    var heldCount: Int {
        let now = clock()
        return lock.withLock {
            table.expire(now: now)
            return table.entries.count
        }
    }

    /// Takes the `link` the link's gate kept once its bucket has a token again (`MessageGate`).
    private func awaitRefill(_ link: Link) {
        let timer = DispatchWorkItem { [weak self, weak link] in
            guard let self, let link else { return }
            link.linkOffersTimer = nil
            guard let shell = self.shell, !shell.isStopped, !link.closing else { return }
            switch link.linkOffers.refilled(now: self.clock()) {
            case .take(let message): link.receive(message)
            case .again: self.awaitRefill(link)
            case .nothing: break
            }
        }
        link.linkOffersTimer = timer
        shell?.schedule(timer, at: clock() + link.linkOffers.refill)
    }
}

extension PeerManager: LinkOfferShell {}

extension PeerConnection: LinkOfferLink {}
