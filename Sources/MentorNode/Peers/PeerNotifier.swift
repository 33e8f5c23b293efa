import Dispatch
import MentorAPI

/// One link as the notifications see it, on the shell's queue (`PeerConnection` in the daemon,
/// a fake in tests): who is on it, its session's totals, and what `event.sync` last said of it,
/// when, and the timer of the next one. `SendableMetatype`: the closures here name the type,
/// never an instance off the queue.
protocol NoticeLink: AnyObject, SendableMetatype {
    var closing: Bool { get }
    /// Who is on the link (nil: the handshake has not named the peer yet; `since` 0: not established).
    var info: PeerInfo? { get }
    /// The session's totals now: records received and sent, and whether it caught up.
    var syncTotals: SyncEventThrottle.Totals { get }
    var announced: SyncEventThrottle.Totals { get set }
    var announcedAt: ContinuousClock.Instant? { get set }
    var syncTimer: DispatchWorkItem? { get set }
}

/// What the notifications need of the shell that owns the links (`PeerManager`), on the shell's
/// queue. `SendableMetatype` as `NoticeLink`.
protocol NoticeShell: ShellQueue, SendableMetatype {
    associatedtype Link: NoticeLink
    /// Every link the shell keeps now, closing or not, in any order.
    var links: [Link] { get }
    /// An `event.sync` said for the first time that a link's session caught up (photos may
    /// wait for links catching up).
    func announcedCaughtUp()
}

/// What a shell tells about its links (docs/API.md): the connected-peers list on its
/// `StatusBoard` (`PeerStatus.connected`), `event.peer` when a link is established or ends, and
/// `event.sync` with a session's totals — at most every `interval` per link, at once when it
/// caught up (`SyncEventThrottle`; one timer per link for the one held back). Owned by the
/// shell, which says when the links changed, a link came up or ended, or a session's totals
/// moved.
///
/// Confinement: everything here and every link are on the shell's queue; the board, where
/// notifications go (`broadcast`: the event's name and the notification) and the clock are
/// injected. `@unchecked Sendable` for that reason (its timers capture it weakly and run on
/// that queue).
final class PeerNotifier<Shell: NoticeShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this (weak: the shell owns it).
    weak var shell: Shell?
    private let board: StatusBoard
    private let broadcast: (APIEvent, RPCNotification) -> Void
    /// `event.sync` per link at most this often (plus one when it caught up).
    let interval: Duration
    private let clock: @Sendable () -> ContinuousClock.Instant

    init(board: StatusBoard, interval: Duration, broadcast: @escaping (APIEvent, RPCNotification) -> Void,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.board = board
        self.interval = interval
        self.broadcast = broadcast
        self.clock = clock
    }

    /// The links changed: the connected peers are published again.
    func snapshot() {
        board.publish(PeerStatus.connected((shell?.links ?? []).lazy.map { (closing: $0.closing, info: $0.info) }))
    }

    /// `event.peer`: the link was established (`connected`) or ended (`disconnected`).
    func peer(_ link: Link, _ state: PeerEvent.State) {
        guard let info = link.info, let event = try? RPCNotification(.peer, PeerStatus.peerEvent(info, state: state)) else { return }
        broadcast(.peer, event)
    }

    /// `event.sync` with the session's totals: now if the last one is old enough or the session
    /// just caught up, else once at the end of the interval.
    func sync(_ link: Link) {
        guard link.syncTimer == nil, let info = link.info else { return }
        let totals = link.syncTotals
        let now = clock()
        switch SyncEventThrottle.decide(totals, announced: link.announced, announcedAt: link.announcedAt, interval: interval, now: now) {
        case .unchanged:
            return
        case .later(let at):
            let timer = DispatchWorkItem { [weak self, weak link] in
                guard let self, let link, let shell = self.shell, !shell.isStopped, !link.closing else { return }
                link.syncTimer = nil
                self.sync(link)
            }
            link.syncTimer = timer
            shell?.schedule(timer, at: at)
            return
        case .now:
            break
        }
        if totals.caughtUp && !link.announced.caughtUp { shell?.announcedCaughtUp() }
        link.announced = totals
        link.announcedAt = now
        guard let event = try? RPCNotification(.sync, PeerStatus.syncEvent(node: info.node, address: info.address, totals)) else { return }
        broadcast(.sync, event)
    }
}

extension PeerManager: NoticeShell {}

extension PeerConnection: NoticeLink {
    var syncTotals: SyncEventThrottle.Totals { (session.recordsReceived, session.recordsSent, session.isCaughtUp) }
}
