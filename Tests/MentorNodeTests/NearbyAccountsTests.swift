import Dispatch
import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// "Nearby now" over a shell's links (`NearbyAccounts`, PROTOCOL.md §13.3, §13.4), over a fake
/// shell and fake links (no sockets, a manual clock, timers run by the test): our `here` goes
/// to a link once established and to every link whose session said hello when the accounts
/// change; a peer's `here` over the rate is kept, the newest only, and handed to its session
/// when the bucket has refilled (one timer per link, nothing once the link closes); the
/// accounts named on open links are nearby now.
@Suite struct NearbyAccountsTests {

    final class FakeLink: NearbyLink {
        let serial: Int
        var closing = false
        var sessionIsEstablished = true
        var accounts: Set<PublicKey> = []
        var here = MessageGate(tag: SyncMessage.hereTag, burst: 2, period: .seconds(30))
        var hereTimer: DispatchWorkItem?
        var received: [[UInt8]] = []
        init(serial: Int) { self.serial = serial }
        func receive(_ bytes: [UInt8]) { received.append(bytes) }
    }

    final class FakeShell: NearbyShell {
        var links: [FakeLink] = []
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var sent: [(link: Int, bytes: [UInt8])] = []
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func send(_ bytes: [UInt8], on link: FakeLink) { sent.append((link.serial, bytes)) }
    }

    static func account(_ n: UInt8) -> PublicKey { PublicKey(bytes: [UInt8](repeating: n, count: 32))! }
    static func here(_ n: UInt8) -> [UInt8] { SyncMessage.here([account(n)]).encoded }

    final class Harness {
        let shell = FakeShell()
        let clock = ManualClock()
        var local: [PublicKey] = [NearbyAccountsTests.account(1)]
        var nearbyNow: [Set<PublicKey>] = []
        var nearby: NearbyAccounts<FakeShell>!
        let t0: ContinuousClock.Instant

        init(links count: Int = 1) {
            let clock = self.clock
            t0 = clock.now
            nearby = NearbyAccounts(localAccounts: { [unowned self] in self.local },
                                    setNearby: { [unowned self] in self.nearbyNow.append($0) }, clock: { clock.now })
            nearby.shell = shell
            shell.links = (0..<count).map { FakeLink(serial: $0) }
        }
    }

    @Test func ourHereGoesToANewLinkAndToEveryLinkThatSaidHelloWhenTheAccountsChange() {
        let h = Harness(links: 3)
        h.nearby.linkEstablished(h.shell.links[0])
        #expect(h.shell.sent.map(\.link) == [0] && h.shell.sent.first?.bytes == Self.here(1))
        h.shell.links[1].sessionIsEstablished = false
        h.shell.links[2].closing = true
        h.local = [Self.account(1), Self.account(2)]
        h.nearby.accountsChanged()
        #expect(h.shell.sent.map(\.link) == [0, 0], "neither a link before hello nor a closing one")
        #expect(h.shell.sent.last?.bytes == SyncMessage.here([Self.account(1), Self.account(2)]).encoded, "the accounts now")
        h.shell.isStopped = true
        h.nearby.accountsChanged()
        #expect(h.shell.sent.count == 2, "nothing once the shell stopped")
    }

    @Test func aHereOverTheRateIsKeptTheNewestOnlyAndHandedOverWhenTheBucketRefilled() {
        let h = Harness()
        let link = h.shell.links[0]
        let other = SyncMessage.ihave([[UInt8](repeating: 7, count: 32)]).encoded
        #expect(h.nearby.admit(Self.here(2), from: link) && h.nearby.admit(Self.here(3), from: link), "the burst passes")
        #expect(!h.nearby.admit(Self.here(4), from: link), "over the rate: kept")
        #expect(h.shell.scheduled.count == 1 && h.shell.scheduled[0].at == h.t0 + .seconds(15), "one token's refill: 30 s / 2")
        #expect(link.hereTimer === h.shell.scheduled[0].work)
        #expect(!h.nearby.admit(Self.here(5), from: link))
        #expect(h.shell.scheduled.count == 1, "one timer per link")
        #expect(h.nearby.admit(other, from: link), "other messages pass")

        let early = h.shell.scheduled.removeFirst()
        early.work.perform()   // at t0: no token yet
        #expect(link.received.isEmpty && h.shell.scheduled.count == 1, "no token yet: looked at again one refill later")
        let timer = h.shell.scheduled.removeFirst()
        h.clock.advance(timer.at - h.clock.now)
        timer.work.perform()
        #expect(link.received == [Self.here(5)], "the newest, handed to the session")
        #expect(link.hereTimer == nil && h.shell.scheduled.isEmpty)
    }

    @Test func aKeptHereIsDroppedWhenItsLinkClosesOrTheShellStops() {
        let h = Harness(links: 2)
        for link in h.shell.links {
            for n in UInt8(2)...4 { _ = h.nearby.admit(Self.here(n), from: link) }
        }
        #expect(h.shell.scheduled.count == 2)
        h.clock.advance(.seconds(15))
        h.shell.links[0].closing = true
        h.shell.scheduled[0].work.perform()
        #expect(h.shell.links[0].received.isEmpty && h.shell.links[0].hereTimer == nil)
        h.shell.isStopped = true
        h.shell.scheduled[1].work.perform()
        #expect(h.shell.links[1].received.isEmpty && h.shell.links[1].hereTimer == nil)
        #expect(h.shell.scheduled.count == 2, "no timer set again")
    }

    @Test func theAccountsNamedOnOpenLinksAreNearbyNow() {
        let h = Harness(links: 3)
        h.shell.links[0].accounts = [Self.account(5), Self.account(6)]
        h.shell.links[1].accounts = [Self.account(6), Self.account(7)]
        h.shell.links[2].accounts = [Self.account(8)]
        h.shell.links[2].closing = true
        h.nearby.publish()
        #expect(h.nearbyNow == [[Self.account(5), Self.account(6), Self.account(7)]], "the union, without the closing link's")
        h.shell.links = []
        h.nearby.publish()
        #expect(h.nearbyNow.last == [], "no link: nobody is nearby")
    }
}
