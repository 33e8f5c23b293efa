import Dispatch
import MentorAPI
import MentorCore
import Testing
@testable import MentorNode

/// What a shell tells about its links (`PeerNotifier`, docs/API.md), over a fake shell and fake
/// links (a manual clock, timers run by the test): the connected-peers list on the status board
/// (established, open links, oldest first); `event.peer` only for a link whose peer is known;
/// `event.sync` at once the first time, at most once per interval after (one timer per link,
/// carrying the totals of when it fires), at once when the session caught up — which the shell
/// hears of once — and never for unchanged totals.
@Suite struct PeerNotifierTests {

    final class FakeLink: NoticeLink {
        var closing = false
        var info: PeerInfo?
        var syncTotals: SyncEventThrottle.Totals = (0, 0, false)
        var announced: SyncEventThrottle.Totals = (0, 0, false)
        var announcedAt: ContinuousClock.Instant?
        var syncTimer: DispatchWorkItem?
        init(node: String?, since: UInt64 = 1) {
            info = node.map { PeerInfo(node: $0, address: "10.0.0.2:7000", via: "config", since: since) }
        }
    }

    final class FakeShell: NoticeShell {
        var links: [FakeLink] = []
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var caughtUp = 0
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func announcedCaughtUp() { caughtUp += 1 }
    }

    final class Harness {
        let shell = FakeShell()
        let clock = ManualClock()
        let board = StatusBoard()
        var events: [(name: String, notification: RPCNotification)] = []
        var notifier: PeerNotifier<FakeShell>!
        let t0: ContinuousClock.Instant

        init() {
            let clock = self.clock
            t0 = clock.now
            notifier = PeerNotifier(board: board, interval: .milliseconds(250), broadcast: { [unowned self] in
                self.events.append(($0.rawValue, $1))
            }, clock: { clock.now })
            notifier.shell = shell
        }

        var names: [String] { events.map(\.name) }
        /// The `received` of each `event.sync` broadcast, in order.
        var syncReceived: [Int64] {
            events.compactMap { event -> Int64? in
                guard event.name == "sync", case .int(let n)? = event.notification.params["received"] else { return nil }
                return n
            }
        }
    }

    @Test func theConnectedPeersAreTheEstablishedOpenLinksOldestFirst() {
        let h = Harness()
        let late = FakeLink(node: "late", since: 20), early = FakeLink(node: "early", since: 10)
        let closing = FakeLink(node: "closing", since: 5), handshaking = FakeLink(node: nil), notYet = FakeLink(node: "x", since: 0)
        closing.closing = true
        h.shell.links = [late, early, closing, handshaking, notYet]
        h.notifier.snapshot()
        #expect(h.board.peers.map(\.node) == ["early", "late"])
        h.shell.links = []
        h.notifier.snapshot()
        #expect(h.board.peers.isEmpty, "published again: replaced")
    }

    @Test func aPeerEventGoesOutOnlyForALinkWhosePeerIsKnown() {
        let h = Harness()
        h.notifier.peer(FakeLink(node: nil), .disconnected)
        #expect(h.events.isEmpty)
        h.notifier.peer(FakeLink(node: "n1"), .connected)
        #expect(h.names == ["peer"])
        #expect(h.events.first?.notification.method == "event.peer")
        #expect(h.events.first?.notification.params["peer"] == ["node": "n1", "address": "10.0.0.2:7000", "via": "config", "since": 1, "hub": false])
        #expect(h.events.first?.notification.params["state"] == "connected")
    }

    @Test func syncEventsAreThrottledPerLinkAndCarryTheTotalsWhenTheTimerFires() {
        let h = Harness()
        let link = FakeLink(node: "n1")
        h.shell.links = [link]
        link.syncTotals = (10, 0, false)
        h.notifier.sync(link)
        #expect(h.syncReceived == [10], "the first goes at once")
        #expect(h.events.first?.notification == RPCNotification(method: "event.sync", params: [
            "peer": "n1", "address": "10.0.0.2:7000", "received": 10, "sent": 0, "caughtUp": false]))
        #expect(link.announcedAt == h.t0)
        h.notifier.sync(link)
        #expect(h.syncReceived == [10], "unchanged totals are not announced again")

        h.clock.advance(.milliseconds(100))
        link.syncTotals = (20, 0, false)
        h.notifier.sync(link)
        #expect(h.syncReceived == [10] && h.shell.scheduled.map(\.at) == [h.t0 + .milliseconds(250)], "too soon: one timer")
        link.syncTotals = (30, 0, false)
        h.notifier.sync(link)
        #expect(h.shell.scheduled.count == 1, "one timer per link")

        h.clock.advance(.milliseconds(150))
        h.shell.scheduled[0].work.perform()
        #expect(h.syncReceived == [10, 30], "the totals of when it fired")
        #expect(link.syncTimer == nil && link.announcedAt == h.t0 + .milliseconds(250))
        #expect(h.shell.caughtUp == 0)
    }

    @Test func caughtUpGoesOutAtOnceAndTheShellHearsOfItOnce() {
        let h = Harness()
        let link = FakeLink(node: "n1")
        h.shell.links = [link]
        link.syncTotals = (10, 0, false)
        h.notifier.sync(link)
        link.syncTotals = (12, 0, true)
        h.notifier.sync(link)
        #expect(h.syncReceived == [10, 12], "caught up: at once, within the interval")
        #expect(h.shell.caughtUp == 1 && h.shell.scheduled.isEmpty)
        h.clock.advance(.seconds(1))
        link.syncTotals = (13, 0, true)
        h.notifier.sync(link)
        #expect(h.syncReceived == [10, 12, 13] && h.shell.caughtUp == 1, "still caught up: not news to the shell")
    }

    @Test func noSyncEventForAnUnknownPeerAClosedLinkOrAStoppedShell() {
        let h = Harness()
        let anonymous = FakeLink(node: nil)
        anonymous.syncTotals = (5, 0, false)
        h.notifier.sync(anonymous)
        #expect(h.events.isEmpty)

        let link = FakeLink(node: "n1")
        link.syncTotals = (5, 0, false)
        h.notifier.sync(link)
        link.syncTotals = (6, 0, false)
        h.notifier.sync(link)
        link.closing = true
        h.clock.advance(.seconds(1))
        h.shell.scheduled[0].work.perform()
        #expect(h.syncReceived == [5], "the link closed before its timer fired")

        let other = FakeLink(node: "n2")
        other.syncTotals = (5, 0, false)
        h.notifier.sync(other)
        other.syncTotals = (7, 0, false)
        h.notifier.sync(other)
        h.shell.isStopped = true
        h.clock.advance(.seconds(1))
        h.shell.scheduled[1].work.perform()
        #expect(h.syncReceived == [5, 5], "the shell stopped before the timer fired")
    }
}
