import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import Testing
@testable import MentorNode

/// Dialling for a shell (`DialScheduler` over `Redialer`, PROTOCOL.md §13.4, §13.5), over a fake
/// shell (no sockets, a manual clock, a fixed jitter, timers run by the test): the static peers
/// are dialled at start; a failed dial sets one timer at the backoff, never before a refusal
/// ends, and its firing dials again; a target whose node is linked through another link is
/// parked until that link closes; an mDNS instance is dialled once when found and no more
/// once lost; a stopped shell dials nothing.
@Suite struct DialSchedulerTests {

    final class FakeShell: DialShell {
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var connects: [(peer: PeerManager.StaticPeer, slot: Int)] = []
        var refusals: [String: ContinuousClock.Instant] = [:]
        var linked: Set<SigningPublicKey> = []

        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func connect(_ peer: PeerManager.StaticPeer, slot: Int) { connects.append((peer, slot)) }
        func refusedUntil(_ host: String) -> ContinuousClock.Instant? { refusals[host] }
        func isLinked(_ key: SigningPublicKey) -> Bool { linked.contains(key) }

        /// The timers set, not cancelled and not run, in the order set.
        var pending: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] { scheduled.filter { !$0.work.isCancelled } }
        var slotsDialled: [Int] { connects.map(\.slot) }
    }

    /// The least jitter: every delay is half the backoff.
    struct Least: RandomNumberGenerator, Sendable { func next() -> UInt64 { 0 } }
    struct Unreachable: Error {}

    static let first = PeerManager.StaticPeer(host: "10.0.0.2", port: 7000)
    static let second = PeerManager.StaticPeer(host: "10.0.0.3", port: 7000)
    static let key = try! SigningPublicKey(bytes: [UInt8](repeating: 7, count: 32))

    final class Harness {
        let shell = FakeShell()
        let logger = CaptureLogger()
        let clock = ManualClock()
        let dials: DialScheduler
        let t0: ContinuousClock.Instant

        init(_ peers: [PeerManager.StaticPeer] = [DialSchedulerTests.first]) {
            let clock = self.clock
            t0 = clock.now
            dials = DialScheduler(staticPeers: peers, settings: .init(), random: Least(), logger: logger, clock: { clock.now })
            dials.shell = shell
        }

        /// Moves the clock to the only pending timer's instant and runs it (it is no longer pending).
        func fireTheTimer(sourceLocation: SourceLocation = #_sourceLocation) {
            takeTheOnlyTimer(&shell.scheduled, clock: clock, sourceLocation: sourceLocation)?.perform()
        }
    }

    @Test func staticPeersAreDialledAtStartAndRedialledWithBackoffAfterEachFailure() {
        let h = Harness([Self.first, Self.second])
        h.dials.start()
        #expect(h.shell.slotsDialled == [0, 1])
        #expect(h.shell.connects.map(\.peer) == [Self.first, Self.second])
        #expect(h.shell.scheduled.isEmpty, "nothing to redial before a dial failed")

        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers == [0: h.t0 + .milliseconds(125)], "half of the first backoff (250 ms): the least jitter")
        let logged = h.logger.lines("peer unreachable; redialling with backoff")
        #expect(logged.count == 1)
        #expect(logged.first?["peer.address"] == "10.0.0.2:7000" && logged.first?["via"] == "config" && logged.first?["failures"] == "1")

        h.fireTheTimer()
        #expect(h.shell.slotsDialled == [0, 1, 0], "redialled when its timer fired")
        #expect(h.dials.pendingTimers.isEmpty)

        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers == [0: h.t0 + .milliseconds(125) + .milliseconds(250)], "the backoff doubled")
        #expect(h.logger.lines("peer unreachable; redialling with backoff").count == 1, "the second failure in a row is not logged at info")
    }

    @Test func aRefusedAddressIsRedialledOnlyWhenItsRefusalEnds() {
        let h = Harness()
        h.shell.refusals["10.0.0.2"] = h.t0 + .seconds(40)
        h.dials.start()
        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers == [0: h.t0 + .seconds(40)])
        #expect(h.shell.pending.map(\.at) == [h.t0 + .seconds(40)], "the timer asked of the shell is the one kept")
    }

    /// A link dialled to a node closes while another link to that node is up: the timer that
    /// fires parks the target; it is redialled when the other link closes.
    @Test func aTargetWhoseNodeIsLinkedElsewhereIsParkedUntilThatLinkCloses() {
        let h = Harness()
        h.dials.start()
        h.dials.adopted(0, link: 1, host: "10.0.0.2")
        h.dials.established(0, link: 1, key: Self.key)
        h.shell.linked = [Self.key]   // an incoming link to the same node stays
        h.dials.closed(0, link: 1, key: Self.key, wasEstablished: true)
        h.fireTheTimer()
        #expect(h.shell.slotsDialled == [0], "parked, not dialled: its node is linked")
        #expect(h.dials.pendingTimers.isEmpty)

        h.shell.linked = []
        h.dials.closed(nil, link: 2, key: Self.key, wasEstablished: true)
        #expect(h.dials.pendingTimers.count == 1, "the other link closed: the parked target is redialled")
        h.fireTheTimer()
        #expect(h.shell.slotsDialled == [0, 0])
    }

    @Test func aStoppedShellDialsNothingAndItsTimersDoNothing() {
        let h = Harness()
        h.dials.start()
        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        let timer = h.shell.pending[0].work
        h.shell.isStopped = true
        timer.perform()
        #expect(h.shell.slotsDialled == [0], "a timer firing after the stop does not dial")
        h.dials.start()
        #expect(h.shell.slotsDialled == [0])
        h.dials.cancelTimers()
        #expect(timer.isCancelled && h.dials.pendingTimers.isEmpty)
    }

    /// An instance lost while its redial waited, then found again and failed again: the first
    /// timer does nothing even if it runs, the second dials.
    @Test func aTimerSupersededDoesNothingAndItsSuccessorDials() {
        let h = Harness([])
        let address = PeerAddress(host: "10.0.0.9", port: 7001)
        let peer = PeerManager.StaticPeer(host: "10.0.0.9", port: 7001)
        _ = h.dials.found(name: "alice", address: address)
        h.dials.dialFailed(0, peer: peer, error: Unreachable())
        let first = h.shell.pending[0].work
        _ = h.dials.lost(name: "alice")
        #expect(first.isCancelled)
        h.clock.advance(.seconds(1))
        _ = h.dials.found(name: "alice", address: address)
        #expect(h.shell.slotsDialled == [0, 0], "found again while not dialled: dialled at once")
        h.dials.dialFailed(0, peer: peer, error: Unreachable())
        #expect(h.dials.pendingTimers == [0: h.t0 + .seconds(1) + .milliseconds(125)], "the backoff started again")
        first.perform()
        #expect(h.shell.slotsDialled == [0, 0], "the superseded timer does not dial")
        h.fireTheTimer()
        #expect(h.shell.slotsDialled == [0, 0, 0])
    }

    @Test func anInstanceFoundIsDialledOnceAndNoLongerAfterItIsLost() {
        let h = Harness([])
        let address = PeerAddress(host: "10.0.0.9", port: 7001)
        #expect(h.dials.found(name: "alice", address: address), "a new instance")
        #expect(h.shell.connects.map(\.peer) == [PeerManager.StaticPeer(host: "10.0.0.9", port: 7001)])
        #expect(h.dials.via(0) == .mdns && h.dials.instances == ["alice"])
        #expect(h.dials.isDialledInstance(host: "10.0.0.9"))
        #expect(!h.dials.found(name: "alice", address: address), "found again: not new")
        #expect(h.shell.slotsDialled == [0], "being dialled already: not dialled again")
        #expect(h.logger.lines("peer found over mDNS").count == 1)

        h.dials.dialFailed(0, peer: PeerManager.StaticPeer(host: "10.0.0.9", port: 7001), error: Unreachable())
        let timer = h.shell.pending[0].work
        #expect(h.dials.lost(name: "alice"))
        #expect(timer.isCancelled && h.dials.pendingTimers.isEmpty, "a lost instance is not redialled")
        #expect(!h.dials.isDialledInstance(host: "10.0.0.9"))
        #expect(h.logger.lines("peer lost over mDNS").count == 1)
        #expect(!h.dials.lost(name: "bob"), "an instance never found")
    }

    @Test func anInstanceIsDialledAtIPv4ElseItsScopedLinkLocalElseItsGlobalIPv6Address() {
        let ula = PeerAddress(host: "fd00:77::2", port: 7000), scoped = PeerAddress(host: "fe80::2%eth0", port: 7000)
        let unscoped = PeerAddress(host: "fe80::3", port: 7000), v4 = PeerAddress(host: "169.254.77.2", port: 7000)
        #expect(DialScheduler.preferred([ula, scoped, v4]) == v4)
        #expect(DialScheduler.preferred([ula, scoped]) == scoped, "found over multicast on that link: its link-local address answers there")
        #expect(DialScheduler.preferred([unscoped, ula]) == ula, "a link-local address without its interface cannot be dialled")
        #expect(DialScheduler.preferred([unscoped]) == unscoped)
    }

    @Test func aNetworkChangeDialsStaticPeersWaitingForABackoffNowAndStartsTheirBackoffAgain() {
        let h = Harness([Self.first, Self.second])
        h.dials.start()
        for _ in 0..<4 {
            h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
            h.fireTheTimer()
        }
        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers[0].map { $0 - h.clock.now } == .seconds(2), "half of 4 s after five failures")
        let dialled = h.shell.slotsDialled.count
        #expect(h.dials.networkChanged() == 1, "slot 1's dial is under way (a link being made): only slot 0 waits")
        #expect(h.dials.pendingTimers == [0: h.clock.now], "due now")
        h.fireTheTimer()
        #expect(h.shell.slotsDialled.count == dialled + 1 && h.shell.slotsDialled.last == 0)
        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers[0].map { $0 - h.clock.now } == .milliseconds(125), "the backoff started over")

        // A refusal of the address still holds: due when it ends, not before.
        h.fireTheTimer()
        h.shell.refusals["10.0.0.2"] = h.clock.now + .seconds(40)
        h.dials.dialFailed(0, peer: Self.first, error: Unreachable())
        #expect(h.dials.pendingTimers[0] == h.shell.refusals["10.0.0.2"])
        #expect(h.dials.networkChanged() == 0 && h.dials.pendingTimers[0] == h.shell.refusals["10.0.0.2"], "not before the refusal ends")
    }

    @Test func theFirstIPv4AddressIsDialled() {
        let v6 = PeerAddress(host: "fe80::1", port: 7000), a = PeerAddress(host: "10.0.0.4", port: 7000)
        let b = PeerAddress(host: "10.0.0.5", port: 7000)
        #expect(DialScheduler.preferred([v6, a, b]) == a)
        #expect(DialScheduler.preferred([v6]) == v6)
        #expect(DialScheduler.preferred([]) == nil)
    }
}
