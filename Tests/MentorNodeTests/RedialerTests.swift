import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// When the node dials its peers (PROTOCOL.md §13.4, §13.5): backoff with jitter, refusals,
/// parking behind a duplicate's survivor, mDNS instances found, lost and forgotten — on an
/// injected clock and random number generator.
@Suite struct RedialerTests {
    let t0 = ContinuousClock.now
    let config = PeerManager.StaticPeer(host: "10.0.0.2", port: 7000)
    let never: (String) -> ContinuousClock.Instant? = { _ in nil }
    let key = try! SigningPublicKey(bytes: [UInt8](repeating: 7, count: 32))

    /// Always the same draw: 0 gives the shortest jitter (half the delay), `.max` nearly the whole.
    struct Fixed: RandomNumberGenerator {
        var value: UInt64
        mutating func next() -> UInt64 { value }
    }

    private func redialer(forgetAfter: Duration = .seconds(600), capacity: Int = 256) -> Redialer {
        var settings = Redialer.Settings()
        settings.discovery.forgetAfter = forgetAfter
        settings.discovery.capacity = capacity
        return Redialer(staticPeers: [config], settings: settings)
    }

    /// Fails `count` dials of `index` in a row, each at its `dialAt`; the delays between them.
    private func failures(_ r: inout Redialer, _ index: Int, count: Int, from start: ContinuousClock.Instant,
                          random: inout some RandomNumberGenerator) -> [Duration] {
        var now = start, delays: [Duration] = []
        for _ in 0..<count {
            #expect(r.startDial(index) != nil)
            _ = r.dialFailed(index, now: now, refusedUntil: never, random: &random)
            guard let at = r.targets[index].dialAt else { break }
            delays.append(at - now)
            let dial = r.due(index, isLinked: { _ in false })
            #expect(dial)
            now = at
        }
        return delays
    }

    @Test func backoffDoublesFromTheFirstDelayToTheCap() {
        var r = redialer()
        var low = Fixed(value: 0)
        let delays = failures(&r, 0, count: 10, from: t0, random: &low)
        // Half of 250 ms doubling, capped at half of 30 s (the jitter's least).
        #expect(delays == [.milliseconds(125), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4),
                           .seconds(8), .seconds(15), .seconds(15), .seconds(15)])
        var s = redialer()
        var high = Fixed(value: .max)
        let longest = failures(&s, 0, count: 9, from: t0, random: &high)
        #expect(longest.last! <= .seconds(30) && longest.last! > .milliseconds(29_999), "at most the cap itself")
    }

    @Test func jitterSpreadsTheDelayOverItsUpperHalfAndReplaysFromItsSeed() {
        var first = SeededRandom(seed: 42), again = SeededRandom(seed: 42), other = SeededRandom(seed: 43)
        var a = redialer(), b = redialer(), c = redialer()
        let one = failures(&a, 0, count: 12, from: t0, random: &first)
        #expect(one == failures(&b, 0, count: 12, from: t0, random: &again), "the same draws, the same schedule")
        #expect(one != failures(&c, 0, count: 12, from: t0, random: &other), "peers do not redial in step")
        for (i, delay) in one.enumerated() {
            let full = min(.milliseconds(250) * (1 << min(i, 20)), Duration.seconds(30))
            #expect(delay >= full / 2 && delay < full)
        }
        #expect(Set(one.suffix(5)).count == 5, "capped delays still differ")
    }

    @Test func anAddressIsNeverDialledBeforeItsRefusalEnds() {
        var r = redialer()
        var random = Fixed(value: 0)
        let until = t0 + .seconds(120)
        _ = r.startDial(0)
        _ = r.dialFailed(0, now: t0, refusedUntil: { $0 == "10.0.0.2" ? until : nil }, random: &random)
        #expect(r.targets[0].dialAt == until)
        // The address its last link reached counts too (a name that resolved elsewhere).
        var s = redialer()
        _ = s.startDial(0)
        s.adopted(0, link: 1, host: "10.0.0.9")
        s.closed(0, link: 1, key: nil, wasEstablished: false, keyStillLinked: false, now: t0,
                 refusedUntil: { $0 == "10.0.0.9" ? until : nil }, random: &random)
        #expect(s.targets[0].dialAt == until)
        // A refusal that ends before the backoff does not shorten it.
        var u = redialer()
        _ = u.startDial(0)
        _ = u.dialFailed(0, now: t0, refusedUntil: { _ in t0 + .milliseconds(1) }, random: &random)
        #expect(u.targets[0].dialAt == t0 + .milliseconds(125))
    }

    @Test func anEstablishedLinkStartsTheBackoffAgain() {
        var r = redialer()
        var random = Fixed(value: 0)
        _ = failures(&r, 0, count: 6, from: t0, random: &random)
        _ = r.startDial(0)
        r.adopted(0, link: 5, host: "10.0.0.2")
        r.established(0, link: 5, key: key, now: t0)
        #expect(r.targets[0].attempt == 0 && r.targets[0].linkUp && r.targets[0].unreachable.streak == 0)
        r.closed(0, link: 5, key: key, wasEstablished: true, keyStillLinked: false, now: t0 + .seconds(60), refusedUntil: never,
                 random: &random)
        #expect(r.targets[0].dialAt == t0 + .seconds(60) + .milliseconds(125) && r.targets[0].link == nil)
    }

    @Test func aFailureIsReportedOnceThenAtASlowingRate() {
        var r = redialer()
        var random = Fixed(value: 0)
        var reported: [Int] = []
        var now = t0
        for _ in 0..<20 {
            _ = r.startDial(0)
            if let missed = r.dialFailed(0, now: now, refusedUntil: never, random: &random) { reported.append(missed) }
            now = r.targets[0].dialAt!
            _ = r.due(0, isLinked: { _ in false })
        }
        #expect(reported.first == 0 && reported.count < 5, "\(reported)")
    }

    @Test func aPeerLinkedThroughAnotherLinkIsParkedUntilThatLinkCloses() {
        var r = redialer()
        var random = Fixed(value: 0)
        _ = r.startDial(0)
        r.adopted(0, link: 1, host: "10.0.0.2")
        // Our link lost the duplicate pair: the node stays linked through its own link.
        r.duplicate(0, key: key)
        r.closed(0, link: 1, key: key, wasEstablished: false, keyStillLinked: true, now: t0, refusedUntil: never, random: &random)
        let at = r.targets[0].dialAt!
        let dial = r.due(0, isLinked: { $0 == key })
        #expect(!dial && r.targets[0].parked && r.targets[0].dialAt == nil)
        // The surviving link (incoming, not ours: no index) closes: the parked target redials.
        r.closed(nil, link: 2, key: key, wasEstablished: true, keyStillLinked: false, now: at, refusedUntil: never, random: &random)
        #expect(!r.targets[0].parked && r.targets[0].dialAt != nil)
    }

    @Test func aClosedLinkThatIsNoLongerTheTargetsChangesNothing() {
        var r = redialer()
        var random = Fixed(value: 0)
        _ = r.startDial(0)
        r.adopted(0, link: 2, host: "10.0.0.2")
        r.closed(0, link: 1, key: nil, wasEstablished: false, keyStillLinked: false, now: t0, refusedUntil: never, random: &random)
        #expect(r.targets[0].link == 2 && r.targets[0].dialAt == nil)
    }

    @Test func aFoundInstanceIsDialledOnceAndAgainOnlyWhenItMovesOrReturns() {
        var r = redialer()
        let peer = PeerManager.StaticPeer(host: "10.0.0.5", port: 7000)
        var found = r.found(name: "A", peer: peer, now: t0)
        #expect(found.added && found.dial == 1 && r.instances == ["A"] && r.isDialledInstance(host: "10.0.0.5"))
        _ = r.startDial(1)
        found = r.found(name: "A", peer: peer, now: t0 + .seconds(1))
        #expect(found.dial == nil && !found.added, "found again while dialled: nothing")
        // Moved while its dial was in flight and no link came of it yet: dialled at the new address.
        let moved = PeerManager.StaticPeer(host: "10.0.0.6", port: 7000)
        #expect(r.found(name: "A", peer: moved, now: t0 + .seconds(2)).dial == 1 && r.targets[1].peer == moved)
        // Lost: not dialled; a scheduled redial goes too.
        var random = Fixed(value: 0)
        _ = r.startDial(1)
        _ = r.dialFailed(1, now: t0 + .seconds(3), refusedUntil: never, random: &random)
        #expect(r.lost(name: "A") && r.targets[1].dialAt == nil && !r.isDialledInstance(host: "10.0.0.6"))
        #expect(r.startDial(1) == nil)
        let lostB = r.lost(name: "B")
        #expect(!lostB, "not kept: nothing to lose")
        // Back: dialled at once, from the first backoff.
        #expect(r.found(name: "A", peer: moved, now: t0 + .seconds(4)).dial == 1 && r.targets[1].attempt == 0)
    }

    @Test func aSilentInstanceIsForgottenAndItsSlotReused() {
        var r = redialer(forgetAfter: .seconds(600))
        var random = Fixed(value: 0)
        _ = r.found(name: "silent", peer: .init(host: "10.0.0.7", port: 7000), now: t0)
        _ = r.startDial(1)
        _ = r.dialFailed(1, now: t0 + .seconds(10), refusedUntil: never, random: &random)
        #expect(r.targets[1].dialAt != nil && r.takeForgotten().isEmpty)
        // Its next failure comes after 10 minutes of silence: forgotten instead of redialled.
        _ = r.due(1, isLinked: { _ in false })
        _ = r.startDial(1)
        _ = r.dialFailed(1, now: t0 + .seconds(600), refusedUntil: never, random: &random)
        #expect(r.targets[1].dialAt == nil && !r.targets[1].active && r.instances.isEmpty)
        #expect(r.takeForgotten().map(\.name) == ["silent"] && r.takeForgotten().isEmpty)
        let next = r.found(name: "new", peer: .init(host: "10.0.0.8", port: 7000), now: t0 + .seconds(601))
        #expect(next.dial == 1 && r.targets.count == 2, "the slot is reused")
    }

    @Test func anExpiredInstanceWithALinkUpIsKeptAndOneForgottenWhileLinkedFreesItsSlotWhenTheLinkEnds() {
        var r = redialer(forgetAfter: .seconds(600), capacity: 1)
        var random = Fixed(value: 0)
        _ = r.found(name: "up", peer: .init(host: "10.0.0.7", port: 7000), now: t0)
        _ = r.startDial(1)
        r.adopted(1, link: 9, host: "10.0.0.7")
        r.established(1, link: 9, key: key, now: t0)
        // Long after, another instance is found: "up" expired by the table's clock, but its link keeps it.
        let full = r.found(name: "other", peer: .init(host: "10.0.0.8", port: 7000), now: t0 + .seconds(700))
        #expect(r.instances == ["up"] && full.notKept && full.dial == nil, "every kept instance answers: not kept")
        #expect(!r.found(name: "third", peer: .init(host: "10.0.0.9", port: 7000), now: t0 + .seconds(701)).notKept,
                "logged once per streak")
        // Its link goes; the table later makes room for a newcomer: forgotten, and the slot freed.
        r.closed(1, link: 9, key: key, wasEstablished: true, keyStillLinked: false, now: t0 + .seconds(702), refusedUntil: never,
                 random: &random)
        let later = r.found(name: "newcomer", peer: .init(host: "10.0.0.10", port: 7000), now: t0 + .seconds(1400))
        #expect(later.added && later.dial == 1 && r.instances == ["newcomer"])
    }
}
