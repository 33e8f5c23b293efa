import Dispatch
import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// Push across a shell's links (`PushRelay` over `PushLinks`, PROTOCOL.md §13.7), over a fake
/// shell and fake links (no sockets, a manual clock, timers run by the test, the replica stood
/// in for by a set of held IDs): records applied go in full to every other link that is up and
/// eager, as IDs to the lazy ones, never back over the link they came from; an announced ID
/// whose body does not come is grafted from its announcer after the graft timeout, unless it
/// came or its link closed; duplicates prune a redundant link (never with lazy push off); the
/// counts reach the status board.
@Suite struct PushRelayTests {

    final class FakeLink: PushLink {
        let serial: UInt64
        var closing = false
        var linkUp = true
        var bodies: [[(author: PublicKey, seq: UInt64, bytes: [UInt8])]] = []
        var announced: [[[UInt8]]] = []
        var grafts: [[[UInt8]]] = []
        var prunes = 0
        init(serial: UInt64) { self.serial = serial }

        func pushBodies(_ records: [(author: PublicKey, seq: UInt64, bytes: [UInt8])]) { bodies.append(records) }
        func announce(_ ids: [[UInt8]]) { announced.append(ids) }
        func graft(_ ids: [[UInt8]]) { grafts.append(ids) }
        func prune() { prunes += 1 }
        /// The seqs pushed in full, batch by batch.
        var seqs: [[UInt64]] { bodies.map { $0.map(\.seq) } }
    }

    final class FakeShell: PushShell {
        var links: [FakeLink] = []
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        var pending: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] { scheduled.filter { !$0.work.isCancelled } }
    }

    static let alice = PublicKey(bytes: [UInt8](repeating: 0xa1, count: 32))!
    static func id(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 32) }
    static func record(_ seq: UInt64, from origin: UInt64? = nil) -> AppliedRecord {
        AppliedRecord(author: alice, seq: seq, bytes: [UInt8(seq)], origin: origin, id: id(UInt8(seq)))
    }

    final class Harness {
        let shell = FakeShell()
        let clock = ManualClock()
        let board = StatusBoard()
        /// The IDs the replica holds, and the look-ups asked of it.
        var held: Set<[UInt8]> = []
        var lookups: [[[UInt8]]] = []
        var relay: PushRelay<FakeShell>!
        let t0: ContinuousClock.Instant

        init(lazyPush: Bool = true, links serials: [UInt64] = [1, 2, 3]) {
            let clock = self.clock
            t0 = clock.now
            relay = PushRelay(lazyPush: lazyPush, graftTimeout: .seconds(1), held: { [unowned self] ids in
                self.lookups.append(ids)
                return Set(ids.filter { self.held.contains($0) })
            }, board: board, clock: { clock.now })
            relay.shell = shell
            for serial in serials {
                let link = FakeLink(serial: serial)
                shell.links.append(link)
                relay.linkUp(link)
            }
        }

        func link(_ serial: UInt64) -> FakeLink { shell.links.first { $0.serial == serial }! }

        /// Moves the clock to the only pending timer's instant and runs it (it is no longer pending).
        func fireTheTimer(sourceLocation: SourceLocation = #_sourceLocation) {
            takeTheOnlyTimer(&shell.scheduled, clock: clock, sourceLocation: sourceLocation)?.perform()
        }
    }

    @Test func recordsGoInFullToEveryOtherLinkThatIsUpAndNeverBackToTheirOrigin() {
        let h = Harness(links: [1, 2, 3])
        let closing = FakeLink(serial: 4), handshaking = FakeLink(serial: 5)
        closing.closing = true
        handshaking.linkUp = false
        h.shell.links += [closing, handshaking]
        h.relay.applied([Self.record(1), Self.record(2, from: 2)])
        #expect(h.link(1).seqs == [[1, 2]] && h.link(3).seqs == [[1, 2]])
        #expect(h.link(2).seqs == [[1]], "record 2 came over link 2: not sent back")
        #expect(closing.bodies.isEmpty && handshaking.bodies.isEmpty, "a closing link and one not up get nothing")
        #expect(h.shell.links.allSatisfy { $0.announced.isEmpty }, "every link is eager at first")
        h.relay.applied([Self.record(3, from: 1)])
        #expect(h.link(1).seqs == [[1, 2]], "nothing to send back over the only record's link")
        #expect(h.shell.scheduled.isEmpty, "no ID waits for its body: no timer")
    }

    @Test func aLinkThePeerPrunedGetsIDsAndOneItGraftedGetsBodiesAgain() {
        let h = Harness(links: [1, 2])
        h.relay.signal(.pruned, from: h.link(2))
        h.relay.applied([Self.record(7)])
        #expect(h.link(1).seqs == [[7]])
        #expect(h.link(2).bodies.isEmpty && h.link(2).announced == [[Self.id(7)]], "a lazy link gets the ID (ihave)")
        h.relay.signal(.grafted, from: h.link(2))
        h.relay.applied([Self.record(8)])
        #expect(h.link(2).seqs == [[8]])
    }

    @Test func anAnnouncedIDWhoseBodyDoesNotComeIsGraftedFromItsAnnouncerAfterTheTimeout() {
        let h = Harness(links: [1, 2])
        h.held = [Self.id(5)]
        h.relay.signal(.announced([Self.id(4), Self.id(5)]), from: h.link(2))
        #expect(h.board.pushCounters.announced == 2, "the announced IDs are counted on the board")
        #expect(h.relay.graftTimerAt == h.t0 + .seconds(1) && h.shell.pending.map(\.at) == [h.t0 + .seconds(1)])
        h.fireTheTimer()
        #expect(h.link(2).grafts == [[Self.id(4)]], "only the ID the replica lacks, from its announcer")
        #expect(h.link(1).grafts.isEmpty)
        #expect(h.lookups.last == [Self.id(4)], "the replica was asked again before the graft")
        #expect(h.relay.graftTimerAt == h.t0 + .seconds(2), "the ID waits another timeout for the next announcer")
        h.fireTheTimer()
        #expect(h.link(2).grafts.count == 1 && h.link(1).grafts.isEmpty, "no announcer left: forgotten")
        #expect(h.relay.graftTimerAt == nil && h.shell.pending.isEmpty, "nothing waits any more")
    }

    @Test func anIDWhoseBodyCameOrWhoseAnnouncerClosedIsNotGrafted() {
        let h = Harness(links: [1, 2])
        h.relay.signal(.announced([Self.id(4)]), from: h.link(2))
        let timer = h.shell.pending[0].work
        h.relay.applied([Self.record(4, from: 1)])   // the body came over link 1
        #expect(timer.isCancelled && h.relay.graftTimerAt == nil, "nothing waits: the timer is cancelled")
        h.clock.advance(.seconds(1))
        timer.perform()
        #expect(h.link(2).grafts.isEmpty && h.link(1).grafts.isEmpty)

        h.relay.signal(.announced([Self.id(6)]), from: h.link(2))
        h.link(2).closing = true
        h.fireTheTimer()
        #expect(h.link(2).grafts.isEmpty, "a closing link is not asked")
    }

    @Test func aStoppedShellGraftsNothing() {
        let h = Harness(links: [1, 2])
        h.relay.signal(.announced([Self.id(4)]), from: h.link(2))
        let timer = h.shell.pending[0].work
        h.shell.isStopped = true
        h.clock.advance(.seconds(2))
        timer.perform()
        #expect(h.link(2).grafts.isEmpty)
        h.relay.cancelTimers()
        #expect(timer.isCancelled && h.relay.graftTimerAt == nil)
    }

    @Test func duplicatesAreCountedAndPruneARedundantLinkButNeverTheLast() {
        let h = Harness(links: [1, 2])
        h.relay.duplicates(0, from: h.link(2))
        #expect(h.link(2).prunes == 0 && h.board.pushCounters.duplicates == 0)
        h.relay.duplicates(3, from: h.link(2))
        #expect(h.link(2).prunes == 1 && h.board.pushCounters.duplicates == 3)
        h.relay.duplicates(2, from: h.link(1))
        #expect(h.link(1).prunes == 0, "the last link carrying bodies is kept")
        #expect(h.board.pushCounters.duplicates == 5)
        h.relay.applied([Self.record(9)])
        #expect(h.link(2).announced == [[Self.id(9)]] && h.link(1).seqs == [[9]], "the pruned link gets IDs from now on")
    }

    @Test func withLazyPushOffNothingIsPrunedAndEveryLinkGetsBodies() {
        let h = Harness(lazyPush: false, links: [1, 2])
        h.relay.duplicates(3, from: h.link(2))
        h.relay.signal(.pruned, from: h.link(1))
        #expect(h.link(2).prunes == 0 && h.board.pushCounters.duplicates == 3)
        h.relay.applied([Self.record(9)])
        #expect(h.link(1).seqs == [[9]] && h.link(2).seqs == [[9]])
    }

    @Test func aLinkDownHandsWhatItAnnouncedToAnotherAnnouncer() {
        let h = Harness(links: [1, 2])
        h.relay.signal(.announced([Self.id(4)]), from: h.link(2))
        h.relay.signal(.announced([Self.id(4)]), from: h.link(1))
        let gone = h.link(2)
        h.shell.links.removeAll { $0 === gone }
        h.relay.linkDown(gone)
        h.clock.advance(.seconds(1))
        h.fireTheTimer()
        #expect(h.link(1).grafts == [[Self.id(4)]] && gone.grafts.isEmpty)
    }
}
