import Dispatch
import MentorCore
import MentorCrypto

/// One link as the push relay sees it, on the shell's queue (`PeerConnection` in the daemon, a
/// fake in tests): whether it is up, and its session's lazy-push inputs (each one a
/// `SyncDriver` call). `SendableMetatype`: the relay's closures name the type, never an
/// instance off the queue.
protocol PushLink: AnyObject, SendableMetatype {
    /// Names the link for good (`PushLinks` names links by it).
    var serial: UInt64 { get }
    var closing: Bool { get }
    /// The handshake is done and the link kept (`PeerConnection.since` is set).
    var linkUp: Bool { get }
    /// Sends records applied here in full (`SyncDriver.localRecordsAdded`).
    func pushBodies(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])])
    /// Announces records applied here by ID (`ihave`).
    func announce(_ ids: [[UInt8]])
    /// Asks the peer for the bodies of announced IDs that did not come (`graft`).
    func graft(_ ids: [[UInt8]])
    /// Tells the peer its bodies are redundant here (`prune`).
    func prune()
}

/// What the push relay needs of the shell that owns the links (`PeerManager`), on the shell's
/// queue. `SendableMetatype` as `PushLink`.
protocol PushShell: ShellQueue, SendableMetatype {
    associatedtype Link: PushLink
    /// Every link the shell keeps now, closing or not, in any order.
    var links: [Link] { get }
}

/// Push across a shell's links (PROTOCOL.md §13.3, §13.7): `PushLinks`' decisions carried out.
/// Records applied here go to every link but the one they came over (echo suppression by link:
/// a fork variant of a seq a peer holds is pushed too) — in full on the links the push tree
/// keeps eager, as IDs (`ihave`) on the lazy ones; an announced ID whose body does not come
/// within the graft timeout is grafted from its announcer (one timer, for the next graft due);
/// duplicate bodies prune their link when the tree says so; the counts go to the `StatusBoard`.
/// Owned by the shell, which hands over the events (a link up or down, records applied, a
/// peer's push signal, duplicates applied) through this and the sends through `PushLink`.
///
/// Confinement: everything here and every link are on the shell's queue; the replica's answer
/// to "which of these IDs are held" (`held`: a failed read holds none), the board and the clock
/// are injected. `@unchecked Sendable` for that reason (its timer captures it weakly and runs
/// on that queue).
final class PushRelay<Shell: PushShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this relay (weak: the shell owns the relay).
    weak var shell: Shell?
    private let held: PushLinks.Held
    private let board: StatusBoard
    private let clock: @Sendable () -> ContinuousClock.Instant

    // Confined to the shell's queue:
    /// Which links carry bodies, which IDs wait for theirs (links named by serial).
    private(set) var push: PushLinks
    /// The timer of the next graft, and its instant.
    private var graftTimer: (at: ContinuousClock.Instant, timer: DispatchWorkItem)?

    init(lazyPush: Bool, graftTimeout: Duration, held: @escaping PushLinks.Held, board: StatusBoard,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.push = PushLinks(lazyPush: lazyPush, tree: .init(graftTimeout: graftTimeout))
        self.held = held
        self.board = board
        self.clock = clock
    }

    /// The instant of the graft timer pending (for tests).
    var graftTimerAt: ContinuousClock.Instant? { graftTimer?.at }

    /// The shell stops: the graft timer is cancelled.
    func cancelTimers() {
        graftTimer?.timer.cancel()
        graftTimer = nil
    }

    // MARK: What the shell hands over

    /// A link was established: it carries bodies until it is pruned.
    func linkUp(_ link: Link) { push.linkUp(link.serial) }

    /// A link closed: forgotten; what it announced is asked of the others that did.
    func linkDown(_ link: Link) { push.linkDown(link.serial) }

    /// Records were applied here (written locally or received over the link `origin` names):
    /// pushed to every other link that is up, in full or as IDs.
    func applied(_ records: [AppliedRecord]) {
        let ids = records.map(\.id)
        push.applied(ids)
        for link in shell?.links ?? [] where !link.closing && link.linkUp {
            let mine = records.indices.filter { records[$0].origin != link.serial }
            guard !mine.isEmpty else { continue }
            if push.carriesBodies(link.serial) {
                link.pushBodies(mine.map { (author: records[$0].author, seq: records[$0].seq, bytes: records[$0].bytes) })
            } else {
                link.announce(mine.map { ids[$0] })
            }
        }
        scheduleGraft()
    }

    /// What the peer on `link` said about the push tree.
    func signal(_ signal: PushSignal, from link: Link) {
        let waiting = push.signal(signal, from: link.serial, now: clock(), held: held)
        board.publish(push.counts)
        if waiting { scheduleGraft() }
    }

    /// Bodies of a batch from `link` that were already held: counted, and the link is pruned if
    /// the tree says so (it is redundant).
    func duplicates(_ count: Int, from link: Link) {
        let prune = push.duplicates(count, from: link.serial)
        if count > 0 { board.publish(push.counts) }
        if prune { link.prune() }
    }

    // MARK: Grafts

    /// Sends the grafts that are due, then sets the timer for the next one.
    private func scheduleGraft() {
        guard let shell, !shell.isStopped else { return }
        let now = clock()
        let links = shell.links
        let open = { (serial: UInt64) in links.first(where: { $0.serial == serial && !$0.closing }) }
        for graft in push.dueGrafts(now: now, isOpen: { open($0) != nil }, held: held) {
            open(graft.link)?.graft(graft.ids)
        }
        guard let at = push.nextGraft else {
            graftTimer?.timer.cancel()
            graftTimer = nil
            return
        }
        if let current = graftTimer, current.at == at { return }
        graftTimer?.timer.cancel()
        let timer = DispatchWorkItem { [weak self] in
            guard let self, let shell = self.shell, !shell.isStopped, self.graftTimer?.at == at else { return }
            self.graftTimer = nil
            self.scheduleGraft()
        }
        graftTimer = (at, timer)
        shell.schedule(timer, at: at)
    }
}

extension PeerManager: PushShell {}

extension PeerConnection: PushLink {
    func pushBodies(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) { driver.localRecordsAdded(records) }
    func announce(_ ids: [[UInt8]]) { driver.announce(ids) }
    func graft(_ ids: [[UInt8]]) { driver.graft(ids) }
    func prune() { driver.prune() }
}
