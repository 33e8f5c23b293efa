import Testing
@testable import MentorCore
import MentorCrypto

/// A host that records what the driver asks of it.
private final class FakeHost: SyncHost {
    var sent: [SyncMessage] = []
    var applies: [[[UInt8]]] = []
    var timers: [SyncTimer: ContinuousClock.Instant] = [:]
    var finished: [(reason: String, blame: Bool)] = []
    var failReads = false
    var clock = ContinuousClock.now
    var isOpen: Bool { finished.isEmpty }
    var now: ContinuousClock.Instant { clock }
    struct ReadFailure: Error {}
    func send(_ message: SyncMessage) { sent.append(message) }
    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]] { if failReads { throw ReadFailure() }; return [] }
    func records(ids: [[UInt8]]) throws -> [[UInt8]] { if failReads { throw ReadFailure() }; return [] }
    func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?) { ([], nil) }
    func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T { try body(MemoryReconTree([[UInt8]]())) }
    func contiguousSeq(of author: PublicKey) -> UInt64 { 0 }
    func apply(_ batch: [[UInt8]]) { applies.append(batch) }
    func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) { timers[timer] = at }
    func progress(sent: Int, received: Int) {}
    func peerAccounts(_ accounts: [PublicKey]) {}
    func serveBlob(hash: [UInt8]) -> String? { "not asked" }
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String? { nil }
    func finished(_ reason: String, blame: Bool) { finished.append((reason, blame)) }
    var offers: [[UInt8]] = []
    var offerProblem: String?
    func linkOffer(_ offer: [UInt8]) -> String? { offers.append(offer); return offerProblem }
}

private func record(_ seq: UInt64) -> [UInt8] {
    Record.signedBytes(type: .profile, author: PublicKey(bytes: [UInt8](repeating: 9, count: 32))!, seq: seq,
                       timestamp: 1_700_000_000_000 + seq, clock: VectorClock(), body: ProfileCard(name: "d\(seq)").body)
        + [UInt8](repeating: 9, count: 64)
}

@Suite struct SyncDriverTests {
    fileprivate func established(_ role: SyncRole) -> (SyncDriver, FakeHost) {
        let host = FakeHost()
        let driver = SyncDriver(session: SyncSession(role: role, hashing: ReconHash.hashing), host: host)
        driver.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        driver.receive(bytes: SyncMessage.hello(salt: [UInt8](repeating: 2, count: 16), held: 0).encoded)
        return (driver, host)
    }

    @Test func theInitiatorSaysHelloOpensARoundAndSchedulesTheNext() {
        let (driver, host) = established(.initiator)
        #expect(host.sent.first == .hello(salt: [UInt8](repeating: 1, count: 16), held: 0))
        #expect(host.sent.contains { if case .recon = $0 { true } else { false } }, "the .reconcile ran inside the host's tree read")
        #expect(host.timers[.round] == host.clock + driver.settings.roundInterval)
        let (_, responder) = established(.responder)
        #expect(responder.timers[.round] == nil, "only the initiator runs rounds")
    }

    /// Delivers what each host sent to the other driver until both are quiet, except the
    /// messages `hold` keeps back (returned), given the sending host.
    fileprivate func exchange(_ a: (SyncDriver, FakeHost), _ b: (SyncDriver, FakeHost),
                              hold: (FakeHost, SyncMessage) -> Bool = { _, _ in false }) -> [SyncMessage] {
        var held: [SyncMessage] = []
        while !a.1.sent.isEmpty || !b.1.sent.isEmpty {
            for (from, to) in [(a.1, b.0), (b.1, a.0)] {
                let out = from.sent
                from.sent = []
                for m in out { if hold(from, m) { held.append(m) } else { to.receive(bytes: m.encoded) } }
            }
        }
        return held
    }

    /// An initiator and a responder that said hello to each other (their first round not run).
    fileprivate func linked() -> (initiator: (SyncDriver, FakeHost), responder: (SyncDriver, FakeHost)) {
        let hi = FakeHost(), hr = FakeHost()
        let i = SyncDriver(session: SyncSession(role: .initiator, hashing: ReconHash.hashing), host: hi)
        let r = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), host: hr)
        i.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        r.start(salt: [UInt8](repeating: 2, count: 16), held: 0)
        return ((i, hi), (r, hr))
    }

    @Test func aPeriodicRoundWaitsWhileThePeerStillSendsTheLastRoundsRecordsAtMostFiveTimes() {
        let (initiator, responder) = linked()
        // The first round, all of it but the responder's caughtUp (its records still on the way).
        let held = exchange(initiator, responder) { from, m in from === responder.1 && m == .caughtUp }
        #expect(initiator.0.session.roundsFinished == 1 && responder.0.session.roundsFinished == 1)
        #expect(held == [.caughtUp])
        #expect(initiator.0.session.awaitingPeerCaughtUp)
        for k in 1...SyncDriver.maxRoundsPostponed {
            initiator.0.fire(.round)
            #expect(!initiator.1.sent.contains { if case .recon = $0 { true } else { false } }, "postponed (\(k))")
            #expect(initiator.0.roundsPostponed == k && initiator.1.timers[.round] != nil)
        }
        initiator.0.fire(.round)
        #expect(initiator.1.sent.contains { if case .recon = $0 { true } else { false } }, "past the bound a round starts anyway")
        #expect(initiator.0.roundsPostponed == 0)

        // With the peer's caughtUp in, the next periodic round starts at once.
        let (other, peer) = linked()
        _ = exchange(other, peer)
        #expect(other.0.session.roundsFinished == 1 && !other.0.session.awaitingPeerCaughtUp)
        other.0.fire(.round)
        #expect(other.1.sent.contains { if case .recon = $0 { true } else { false } } && other.0.roundsPostponed == 0)
    }

    @Test func aBatchGoesToTheHostsApplyAndItsOutcomeBecomesAnAck() {
        let (driver, host) = established(.responder)
        driver.receive(bytes: SyncMessage.records([record(1)]).encoded)
        #expect(host.applies == [[record(1)]])
        host.sent = []
        driver.applied(stored: 1)
        #expect(host.sent == [.ack(count: 1)])
        driver.receive(bytes: SyncMessage.records([record(2)]).encoded)
        host.sent = []
        driver.applied(stored: 1, holdAck: true)
        #expect(host.sent.isEmpty, "a held ack waits")
        driver.releaseAcks()
        #expect(host.sent == [.ack(count: 1)])
    }

    @Test func anOffenceClosesWithBlameOnceAndAReadFailureEndsWithout() {
        let (driver, host) = established(.responder)
        driver.receive(bytes: SyncMessage.records([record(1)]).encoded)
        driver.applied(stored: 0, refused: 1)
        #expect(host.finished.count == 1 && host.finished[0].blame)
        #expect(driver.isFinished && driver.pendingTimers.isEmpty)
        driver.receive(bytes: [0xff])
        #expect(host.finished.count == 1, "nothing after the end")

        let (d2, h2) = established(.responder)
        h2.failReads = true
        d2.receive(bytes: SyncMessage.want(author: PublicKey(bytes: [UInt8](repeating: 9, count: 32))!, from: 1).encoded)
        #expect(h2.finished.count == 1 && !h2.finished[0].blame && h2.finished[0].reason.contains("reading records"))

        let (d3, h3) = established(.responder)
        d3.receive(bytes: SyncMessage.wantBlob(hash: [UInt8](repeating: 0, count: 32)).encoded)
        #expect(h3.finished.count == 1 && h3.finished[0].blame, "a host's reason becomes a violation")
    }

    @Test func anotherVersionEndsWithoutBlame() {
        let host = FakeHost()
        let driver = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), host: host)
        driver.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        driver.receive(.hello(version: 1, salt: [], held: 0))
        #expect(host.finished.count == 1 && !host.finished[0].blame)
    }

    @Test func wantsOverTheirRateEndTheSessionAsAnOffence() {
        var settings = SyncDriver.Settings()
        settings.wantBurst = 3
        let host = FakeHost()
        let driver = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), settings: settings, host: host)
        driver.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        driver.receive(bytes: SyncMessage.hello(salt: [UInt8](repeating: 2, count: 16), held: 0).encoded)
        let want = SyncMessage.want(author: PublicKey(bytes: [UInt8](repeating: 9, count: 32))!, from: 1).encoded
        for _ in 0..<3 { driver.receive(bytes: want) }
        #expect(host.finished.isEmpty)
        driver.receive(bytes: want)
        #expect(host.finished.count == 1 && host.finished[0].blame && host.finished[0].reason.contains("want messages"))
    }

    /// The lazy-push rate is off unless set; set (the daemon and the simulation set 512 per
    /// 30 s), the message past the burst ends the session with blame, and the bucket refills
    /// with time.
    @Test func lazyPushMessagesOverTheirRateEndTheSessionOnlyWhenTheRateIsSet() {
        let ihave = SyncMessage.ihave([[UInt8](repeating: 7, count: 32)]).encoded
        let (unrated, h0) = established(.responder)
        for _ in 0..<600 { unrated.receive(bytes: ihave) }
        #expect(h0.finished.isEmpty, "no tree rate by default")

        var settings = SyncDriver.Settings()
        settings.treeBurst = 4
        let host = FakeHost()
        let driver = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), settings: settings, host: host)
        driver.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        driver.receive(bytes: SyncMessage.hello(salt: [UInt8](repeating: 2, count: 16), held: 0).encoded)
        for _ in 0..<2 { driver.receive(bytes: ihave) }
        driver.receive(bytes: SyncMessage.prune.encoded)
        driver.receive(bytes: SyncMessage.graft([[UInt8](repeating: 8, count: 32)]).encoded)
        #expect(host.finished.isEmpty)
        host.clock += settings.treePeriod   // refilled
        for _ in 0..<4 { driver.receive(bytes: ihave) }
        #expect(host.finished.isEmpty)
        driver.receive(bytes: SyncMessage.prune.encoded)
        #expect(host.finished.count == 1 && host.finished[0].blame && host.finished[0].reason.contains("ihave/prune/graft"))
    }

    @Test func aDeferralSchedulesItsRetryAndAStaleFireIsIgnored() {
        let (driver, host) = established(.responder)
        driver.receive(bytes: SyncMessage.records([record(5)]).encoded)
        driver.deferred([PublicKey(bytes: [UInt8](repeating: 9, count: 32))!])
        #expect(host.timers[.deferralRetry] == host.clock + SyncSession.firstDeferralRetry)
        host.clock = host.timers[.deferralRetry]!
        host.sent = []
        driver.fire(.deferralRetry)
        #expect(host.sent == [.want(author: PublicKey(bytes: [UInt8](repeating: 9, count: 32))!, from: 1)])
        host.sent = []
        driver.fire(.round)   // never scheduled on a responder
        #expect(host.sent.isEmpty)
    }

    /// `link` (PROTOCOL.md §13.8): the offer reaches the host as it came; one the host finds
    /// malformed ends the session as an offence, with the host's reason.
    @Test func aLinkOfferGoesToTheHostAndOneItRefusesEndsTheSessionWithBlame() {
        let (driver, host) = established(.responder)
        driver.receive(bytes: SyncMessage.link([1, 2, 3]).encoded)
        driver.receive(bytes: SyncMessage.link([]).encoded)
        #expect(host.offers == [[1, 2, 3], []] && host.finished.isEmpty)
        host.offerProblem = "malformed link offer: link offer label is empty"
        driver.receive(bytes: SyncMessage.link([4]).encoded)
        #expect(host.finished.count == 1 && host.finished[0].blame)
        #expect(host.finished.first?.reason == "protocol violation: malformed link offer: link offer label is empty")
    }
}
