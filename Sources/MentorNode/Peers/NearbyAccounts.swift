import Dispatch
import MentorCore
import MentorCrypto

/// One link as "nearby now" sees it, on the shell's queue (`PeerConnection` in the daemon, a
/// fake in tests): whether its session said hello, the accounts its peer named, its `here`
/// gate and the gate's timer, and its driver's input. `SendableMetatype`: the closures here
/// name the type, never an instance off the queue.
protocol NearbyLink: AnyObject, SendableMetatype {
    var closing: Bool { get }
    /// Its session said hello (`SyncSession.isEstablished`).
    var sessionIsEstablished: Bool { get }
    /// The accounts the peer's node said live there (its last `here`).
    var accounts: Set<PublicKey> { get }
    /// How often the peer may make us update "nearby now", and the timer that takes a `here`
    /// the gate kept once its bucket has a token again.
    var here: MessageGate { get set }
    var hereTimer: DispatchWorkItem? { get set }
    /// Hands a message from the peer to the link's session (`SyncDriver.receive`).
    func receive(_ bytes: [UInt8])
}

/// What "nearby now" needs of the shell that owns the links (`PeerManager`), on the shell's
/// queue. `SendableMetatype` as `NearbyLink`.
protocol NearbyShell: ShellQueue, SendableMetatype {
    associatedtype Link: NearbyLink
    /// Every link the shell keeps now, closing or not, in any order.
    var links: [Link] { get }
    /// Sends an encoded message on `link` (in order, after what waits unsent).
    func send(_ bytes: [UInt8], on link: Link)
}

/// "Nearby now" over a shell's links (PROTOCOL.md §13.3, §13.4): after its hello each side sends
/// `here` with the accounts living on its node, and again to every link after a signup; the
/// accounts the peers of open links named are "nearby now" (direct links only, never relays) —
/// handed to the node's feed and the budget gate through `setNearby`. A `here` over the link's
/// rate (its `MessageGate`) is no offence: the newest is kept and handed to the session when the
/// bucket has refilled (one timer per link). Owned by the shell, which hands over the events (a
/// link established, a message received, the accounts changed here or named there).
///
/// Confinement: everything here and every link are on the shell's queue; the node's accounts,
/// where "nearby now" goes and the clock are injected. `@unchecked Sendable` for that reason
/// (its timers capture it weakly and run on that queue).
final class NearbyAccounts<Shell: NearbyShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this (weak: the shell owns it).
    weak var shell: Shell?
    private let localAccounts: () -> [PublicKey]
    private let setNearby: (Set<PublicKey>) -> Void
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// `localAccounts`: the accounts living on this node; `setNearby`: where the accounts nearby
    /// now go (the node's feed, the budget gate).
    init(localAccounts: @escaping () -> [PublicKey], setNearby: @escaping (Set<PublicKey>) -> Void,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.localAccounts = localAccounts
        self.setNearby = setNearby
        self.clock = clock
    }

    /// The accounts living here changed (a signup): `here` to every link whose session said hello.
    func accountsChanged() {
        guard let shell, !shell.isStopped else { return }
        let here = SyncMessage.here(localAccounts()).encoded
        for link in shell.links where !link.closing && link.sessionIsEstablished {
            shell.send(here, on: link)
        }
    }

    /// A link was established: our `here` goes after the hello.
    func linkEstablished(_ link: Link) {
        shell?.send(SyncMessage.here(localAccounts()).encoded, on: link)
    }

    /// A message from the peer on `link`: whether to hand it to the session now. A `here` over
    /// the rate is kept (the newest) and handed over when the gate's bucket has refilled.
    func admit(_ bytes: [UInt8], from link: Link) -> Bool {
        guard case .hold(let armTimer) = link.here.admit(bytes, now: clock()) else { return true }
        if armTimer { awaitRefill(link) }
        return false
    }

    /// The accounts the peers of the open links named are nearby now.
    func publish() {
        var all: Set<PublicKey> = []
        for link in shell?.links ?? [] where !link.closing { all.formUnion(link.accounts) }
        setNearby(all)
    }

    /// Takes the `here` the link's gate kept once its bucket has a token again (`MessageGate`).
    private func awaitRefill(_ link: Link) {
        let timer = DispatchWorkItem { [weak self, weak link] in
            guard let self, let link else { return }
            link.hereTimer = nil
            guard let shell = self.shell, !shell.isStopped, !link.closing else { return }
            switch link.here.refilled(now: self.clock()) {
            case .take(let here): link.receive(here)
            case .again: self.awaitRefill(link)
            case .nothing: break
            }
        }
        link.hereTimer = timer
        shell?.schedule(timer, at: clock() + link.here.refill)
    }
}

extension PeerManager: NearbyShell {}

extension PeerConnection: NearbyLink {
    func receive(_ bytes: [UInt8]) { driver.receive(bytes: bytes) }
}
