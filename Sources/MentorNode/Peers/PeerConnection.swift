import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

/// One link of the peer manager and, once established, its session: the per-link state the
/// shell keeps (the driver, its timers, what waits unsent, the pacer, the `here` and `link`
/// gates, the blob being received, what `event.sync` last said, the replica's cursors). Confined
/// to the peer manager's queue; the decisions about it are made by the pieces beside it
/// (`SyncDriver`, `AckPacer`, `MessageGate`, `PhotoExchange` over `BlobFetcher`,
/// `SyncEventThrottle`, `CursorTable`).
final class PeerConnection {
    let link: PeerLink
    /// How the link came to be (an incoming link from an address found over mDNS
    /// becomes "mdns" when established: both ends dial, and one of the two links survives).
    var via: LinkOrigin
    /// The redialer's slot (`Redialer.targets`) for a link we dialled.
    let staticIndex: Int?
    var peerKey: SigningPublicKey?
    /// The link reaches a hub (dialled to an instance advertising one, or coming from its address).
    var hub = false
    /// Runs the link's session (the directive interpreter shared with the simulation and the
    /// tests); its host is a `LinkHost` over this connection. Set by `adopt`.
    var driver: SyncDriver!
    var session: SyncSession { driver.session }
    /// The driver's timers (rounds, deferral retries), cancelled with the link.
    var timers: [SyncTimer: DispatchWorkItem] = [:]
    var since: UInt64 = 0
    /// Messages `send` refused (backpressure), in order; flushed on `onWritable`.
    var unsent: [[UInt8]] = []
    var closing = false
    /// Records per second: the bucket whose debt delays acks.
    var pacer: AckPacer
    /// Sends the acks the rate limit held back.
    var ackTimer: DispatchWorkItem?
    /// Serial number (ObjectIdentifiers are reused after deallocation).
    let serial: UInt64
    /// The accounts the peer's node said live there.
    var accounts: Set<PublicKey> = []
    /// The blob being received over this link (one at a time).
    var blobIn: BlobAssembly?
    /// When the request in `blobIn` was sent or last got a part, and the timer that checks it.
    var blobPartAt: ContinuousClock.Instant = .now
    var blobTimer: DispatchWorkItem?
    /// `event.sync` throttle: the totals last announced, when, and the pending timer.
    var announced: (received: Int, sent: Int, caughtUp: Bool) = (0, 0, false)
    var announcedAt: ContinuousClock.Instant?
    var syncTimer: DispatchWorkItem?
    /// Where the replica's read of a subtree stopped, by the token the session carries.
    var cursors = CursorTable<ReconCursor>()
    /// Kinds of "not taken now" already logged at info on this link.
    var notNowLogged: Set<String> = []
    /// How often the peer may make us update "nearby now" (a `MessageGate` of `here`; the driver
    /// rates `recon`, `want` and the lazy-push messages, §13.4), and the timer that takes a
    /// `here` it kept once its bucket has a token again.
    var here: MessageGate
    var hereTimer: DispatchWorkItem?
    /// Likewise for the peer's device offers (`link`, §13.8; `LinkOffers`).
    var linkOffers: MessageGate
    var linkOffersTimer: DispatchWorkItem?

    init(link: PeerLink, via: LinkOrigin, staticIndex: Int?, pacer: AckPacer, serial: UInt64, here: MessageGate,
         linkOffers: MessageGate) {
        self.here = here
        self.linkOffers = linkOffers
        self.serial = serial
        self.link = link
        self.via = via
        self.staticIndex = staticIndex
        self.pacer = pacer
    }

    /// Cancels every timer of the link (it closed, or the manager stopped).
    func cancelTimers() {
        ackTimer?.cancel()
        syncTimer?.cancel()
        for timer in timers.values { timer.cancel() }
        timers = [:]
        hereTimer?.cancel()
        linkOffersTimer?.cancel()
        blobTimer?.cancel()
    }

    var info: PeerInfo? {
        peerKey.map { PeerInfo(node: $0.key.id, address: "\(link.remote)", via: via.rawValue, since: since, hub: hub) }
    }

    /// Sends in order: what the link refuses now (backpressure) waits in `unsent`, and so does
    /// everything after it.
    func send(_ bytes: [UInt8]) {
        if unsent.isEmpty, link.send(bytes) { return }
        unsent.append(bytes)
    }

    /// The link is writable again: what waits goes out, in order, until it refuses again.
    func flushUnsent() {
        while let next = unsent.first, !closing {
            guard link.send(next) else { return }
            unsent.removeFirst()
        }
    }
}

/// The replica's cursors of the subtree reads a session has under way, named by the token the
/// session carries (`FetchCursor`): the session stays pure, the cursor stays with the shell.
/// Bounded: one read per session is under way at a time, so a token that is not known (a
/// stale or forged one) forgets them all, and at most `capacity` are kept.
struct CursorTable<Cursor: Sendable>: Sendable {
    let capacity: Int
    private var cursors: [UInt64: Cursor] = [:]
    private var lastToken: UInt64 = 0

    init(capacity: Int = 16) { self.capacity = max(1, capacity) }

    var count: Int { cursors.count }

    /// Where to resume a read: the cursor `token` names, taken (nil: a read from the start, or
    /// an unknown token — then every cursor is forgotten).
    mutating func resume(_ token: UInt64?) -> Cursor? {
        guard let token else { return nil }
        guard let cursor = cursors.removeValue(forKey: token) else {
            cursors = [:]
            return nil
        }
        return cursor
    }

    /// Keeps where a read stopped; the token to give the session.
    mutating func keep(_ cursor: Cursor) -> UInt64 {
        lastToken += 1
        if cursors.count >= capacity { cursors = [:] }
        cursors[lastToken] = cursor
        return lastToken
    }
}
