import Dispatch
import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// Linking a device over the peer links (`LinkOffers`, `ReceivedLinkOffers`, PROTOCOL.md
/// §13.8, §13.4): the received offers' table and its bounds (two per peer node, 32 in all, each
/// dropped at its expiry or ten minutes after arrival), our offer sent to every link that is up
/// and to each new one until it is withdrawn, replaced or over, a peer's `link` over the rate
/// kept (the newest) and taken at refill, a malformed offer the peer's offence — over fake
/// shells and links with a manual clock — and an offer set on one side found on the other over a
/// real `SyncSession` pair.
@Suite struct LinkOffersTests {
    static let wall0: UInt64 = 1_700_000_000_000
    static func peer(_ n: UInt8) -> SigningPublicKey { try! SigningPublicKey(bytes: [UInt8](repeating: n, count: 32)) }

    /// An offer built from its bytes (no Argon2id: the table never checks MACs), distinct by `n`.
    static func offer(_ n: Int, codeID: UInt16 = 7, expires: UInt64 = wall0 + 300_000) -> LinkOffer {
        var w = ByteWriter()
        w.u16(codeID)
        w.raw([UInt8](repeating: UInt8(n % 256), count: 32))
        let label = Array("device \(n)".utf8)
        w.u8(UInt8(label.count))
        w.raw(label)
        w.raw([UInt8](repeating: 0, count: 16))
        w.u64(expires)
        w.u32(0)
        w.raw([UInt8](repeating: UInt8(n % 256), count: 32))
        return try! LinkOffer.decode(w.bytes)
    }

    // MARK: The table

    @Test func aPeerKeepsAtMostTwoOffersTheNewerReplacingTheOlder() {
        var table = ReceivedLinkOffers()
        let t0 = ContinuousClock.now
        for n in 1...3 { table.take(Self.offer(n), from: Self.peer(1), now: t0, wallNow: Self.wall0) }
        table.take(Self.offer(9), from: Self.peer(2), now: t0, wallNow: Self.wall0)
        #expect(table.offers(codeID: 7, now: t0) == [Self.offer(9), Self.offer(3), Self.offer(2)], "newest first; peer 1's first offer replaced")
        table.take(Self.offer(2), from: Self.peer(1), now: t0, wallNow: Self.wall0)
        #expect(table.entries.count == 3, "the same offer again is one entry")
        #expect(table.offers(codeID: 7, now: t0).first == Self.offer(2), "and now the newest")
        table.take(Self.offer(9), from: Self.peer(3), now: t0, wallNow: Self.wall0)
        #expect(table.entries.count == 4 && table.offers(codeID: 7, now: t0).filter { $0 == Self.offer(9) }.count == 1,
                "two peers' copies of one offer are found once")
        #expect(table.offers(codeID: 8, now: t0).isEmpty, "another code ID finds nothing")
    }

    @Test func atMostThirtyTwoInAllTheOldestDropped() {
        var table = ReceivedLinkOffers()
        let t0 = ContinuousClock.now
        for n in 0..<40 {
            table.take(Self.offer(n), from: Self.peer(UInt8(n)), now: t0 + .milliseconds(n), wallNow: Self.wall0)
        }
        #expect(table.entries.count == ReceivedLinkOffers.capacity && ReceivedLinkOffers.capacity == 32)
        #expect(table.entries.map(\.offer) == (8..<40).map { Self.offer($0) }, "the 8 oldest dropped")
    }

    @Test func anOfferIsDroppedAtItsExpiryOrTenMinutesAfterArrivalWhicheverFirst() {
        var table = ReceivedLinkOffers()
        let t0 = ContinuousClock.now
        let soon = Self.offer(1, expires: Self.wall0 + 60_000)            // a minute
        let far = Self.offer(2, expires: Self.wall0 + 24 * 3_600_000)     // a day: clamped to ten minutes
        let over = Self.offer(3, expires: Self.wall0)                     // over on arrival
        for (n, offer) in [soon, far, over].enumerated() { table.take(offer, from: Self.peer(UInt8(n)), now: t0, wallNow: Self.wall0) }
        #expect(table.entries.map(\.until) == [t0 + .seconds(60), t0 + .seconds(600)], "one past its expiry is not kept")
        #expect(table.offers(codeID: 7, now: t0 + .seconds(59)) == [far, soon])
        #expect(table.offers(codeID: 7, now: t0 + .seconds(60)) == [far])
        #expect(table.offers(codeID: 7, now: t0 + .seconds(600)).isEmpty)
        table.expire(now: t0 + .seconds(600))
        #expect(table.entries.isEmpty)
    }

    @Test func aWithdrawalDropsThatPeersOffersOnly() {
        var table = ReceivedLinkOffers()
        let t0 = ContinuousClock.now
        table.take(Self.offer(1), from: Self.peer(1), now: t0, wallNow: Self.wall0)
        table.take(Self.offer(2), from: Self.peer(1), now: t0, wallNow: Self.wall0)
        table.take(Self.offer(3), from: Self.peer(2), now: t0, wallNow: Self.wall0)
        table.withdraw(from: Self.peer(1))
        #expect(table.offers(codeID: 7, now: t0) == [Self.offer(3)])
    }

    // MARK: Over fake links

    final class FakeLink: LinkOfferLink {
        let serial: Int
        var closing = false
        var linkUp = true
        var peerKey: SigningPublicKey?
        var linkOffers = MessageGate(tag: SyncMessage.linkTag, burst: 4, period: .seconds(30))
        var linkOffersTimer: DispatchWorkItem?
        var received: [[UInt8]] = []
        init(serial: Int) { self.serial = serial; peerKey = LinkOffersTests.peer(UInt8(serial + 1)) }
        func receive(_ bytes: [UInt8]) { received.append(bytes) }
    }

    final class FakeShell: LinkOfferShell {
        var links: [FakeLink] = []
        var isStopped = false
        var scheduled: [ScheduledWork] = []
        var sent: [(link: Int, bytes: [UInt8])] = []
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func send(_ bytes: [UInt8], on link: FakeLink) { sent.append((link.serial, bytes)) }
        func sent(to link: Int) -> [SyncMessage] { sent.filter { $0.link == link }.map { try! SyncMessage.decode($0.bytes) } }
    }

    final class Harness: @unchecked Sendable {
        let shell = FakeShell()
        let clock = ManualClock()
        let wall = Wall()
        let offers: LinkOffers<FakeShell>

        final class Wall: @unchecked Sendable { var ms = LinkOffersTests.wall0 }

        init(links count: Int = 1) {
            let clock = clock, wall = wall
            offers = LinkOffers(clock: { clock.now }, now: { wall.ms })
            offers.shell = shell
            shell.links = (0..<count).map { FakeLink(serial: $0) }
        }

        func advance(_ d: Duration) {
            clock.advance(d)
            wall.ms += UInt64(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
        }
    }

    @Test func ourOfferGoesToEveryLinkUpAndEachNewLinkUntilItIsOver() {
        let h = Harness(links: 3)
        h.shell.links[1].linkUp = false
        h.shell.links[2].closing = true
        let offer = Self.offer(1, expires: Self.wall0 + 120_000)
        h.offers.offer(offer)
        #expect(h.shell.sent.map(\.link) == [0], "neither a link still in its handshake nor a closing one")
        #expect(h.shell.sent(to: 0) == [.link(offer.encoded)])
        h.shell.links[1].linkUp = true
        h.offers.linkEstablished(h.shell.links[1])
        #expect(h.shell.sent(to: 1) == [.link(offer.encoded)], "a link that comes up gets it after its hello")
        h.advance(.seconds(120))
        #expect(h.offers.current == nil)
        h.offers.linkEstablished(h.shell.links[1])
        #expect(h.shell.sent.count == 2, "over: no longer sent")
        h.offers.offer(nil)
        #expect(h.shell.sent.count == 2, "nothing to withdraw: the peers dropped it themselves")
    }

    @Test func ourOfferLastsAtMostTenMinutesWhateverItsExpiry() {
        let h = Harness()
        h.offers.offer(Self.offer(1, expires: Self.wall0 + 3_600_000))
        h.advance(.seconds(599))
        #expect(h.offers.current == Self.offer(1, expires: Self.wall0 + 3_600_000))
        h.advance(.seconds(1))
        #expect(h.offers.current == nil)
    }

    @Test func aNewOfferGoesAfterTheWithdrawalOfTheOldAndNilWithdraws() {
        let h = Harness(links: 2)
        h.offers.offer(Self.offer(1))
        h.offers.offer(Self.offer(2))
        h.offers.offer(nil)
        for link in 0..<2 {
            #expect(h.shell.sent(to: link) == [.link(Self.offer(1).encoded), .link([]), .link(Self.offer(2).encoded), .link([])])
        }
        h.offers.linkEstablished(h.shell.links[0])
        #expect(h.shell.sent.count == 8, "withdrawn: a new link gets nothing")
        h.shell.isStopped = true
        h.offers.offer(Self.offer(3))
        #expect(h.shell.sent.count == 8, "nothing once the shell stopped")
    }

    @Test func aPeersOfferIsKeptItsWithdrawalDropsItAndAMalformedOneIsItsFault() {
        let h = Harness(links: 2)
        let a = h.shell.links[0], b = h.shell.links[1]
        #expect(h.offers.received(Self.offer(1).encoded, from: a) == nil)
        #expect(h.offers.received(Self.offer(2).encoded, from: b) == nil)
        #expect(h.offers.offers(codeID: 7) == [Self.offer(2), Self.offer(1)])
        #expect(h.offers.received([], from: a) == nil)
        #expect(h.offers.offers(codeID: 7) == [Self.offer(2)], "a's withdrawal drops a's only")
        var bad = Self.offer(3).encoded
        bad[34] = 0   // an empty label
        #expect(h.offers.received(bad, from: a) == "malformed link offer: a link offer with a 0-byte label is 95 bytes; this one is 103")
        #expect(h.offers.heldCount == 1, "nothing kept of it")
        h.advance(.seconds(300))
        #expect(h.offers.offers(codeID: 7).isEmpty, "its expiry passed")
    }

    @Test func offersOutliveTheirLinkUntilTheyExpire() {
        let h = Harness(links: 1)
        let link = h.shell.links[0]
        #expect(h.offers.received(Self.offer(1).encoded, from: link) == nil)
        link.closing = true
        h.shell.links = []
        #expect(h.offers.offers(codeID: 7) == [Self.offer(1)], "a link that drops and comes back does not lose it")
        let again = FakeLink(serial: 0)   // the same peer node, a new link
        #expect(h.offers.received(Self.offer(1).encoded, from: again) == nil)
        #expect(h.offers.heldCount == 1, "sent again: one copy")
    }

    @Test func aLinkOverTheRateIsKeptTheNewestAndTakenAtRefill() {
        let h = Harness()
        let link = h.shell.links[0]
        let here = SyncMessage.here([]).encoded
        for n in 0..<4 { #expect(h.offers.admit(SyncMessage.link(Self.offer(n).encoded).encoded, from: link), "the burst passes") }
        #expect(h.offers.admit(here, from: link), "other messages pass")
        #expect(!h.offers.admit(SyncMessage.link(Self.offer(4).encoded).encoded, from: link))
        #expect(!h.offers.admit(SyncMessage.link([]).encoded, from: link))
        #expect(h.shell.scheduled.count == 1 && h.shell.scheduled[0].at == h.clock.now + .milliseconds(7_500), "one timer: 30 s / 4")
        guard let timer = takeTheOnlyTimer(&h.shell.scheduled, clock: h.clock) else { return }
        timer.perform()
        #expect(link.received == [SyncMessage.link([]).encoded], "the newest, handed to the session: no offence")
        #expect(link.linkOffersTimer == nil && h.shell.scheduled.isEmpty)

        // A link that closes before its refill gets nothing.
        for n in 0..<6 { _ = h.offers.admit(SyncMessage.link(Self.offer(n).encoded).encoded, from: link) }
        link.closing = true
        takeTheOnlyTimer(&h.shell.scheduled, clock: h.clock)?.perform()
        #expect(link.received.count == 1)
    }

    // MARK: Over a session pair

    /// One side of a link: a driver whose host hands `link` to its `LinkOffers`, a fake shell
    /// whose one link's wire goes to the other side.
    final class Side: SyncHost {
        let shell = FakeShell()
        let clock = ManualClock()
        var offers: LinkOffers<FakeShell>!
        var driver: SyncDriver!
        var wire: [[UInt8]] = []
        var ended: [(reason: String, blame: Bool)] = []

        init(node: UInt8) {
            let clock = clock
            offers = LinkOffers(clock: { clock.now }, now: { LinkOffersTests.wall0 })
            offers.shell = shell
            let link = FakeLink(serial: 0)
            link.peerKey = LinkOffersTests.peer(node)
            shell.links = [link]
            driver = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), host: self)
        }

        /// What went out: the session's messages and the shell's, in order.
        func drain() -> [[UInt8]] {
            defer { wire = []; shell.sent = [] }
            return wire + shell.sent.map(\.bytes)
        }

        var isOpen: Bool { ended.isEmpty }
        var now: ContinuousClock.Instant { clock.now }
        func send(_ message: SyncMessage) { wire.append(message.encoded) }
        func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]] { [] }
        func records(ids: [[UInt8]]) throws -> [[UInt8]] { [] }
        func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?) { ([], nil) }
        func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T { try body(MemoryReconTree([[UInt8]]())) }
        func contiguousSeq(of author: PublicKey) -> UInt64 { 0 }
        func apply(_ batch: [[UInt8]]) {}
        func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) {}
        func progress(sent: Int, received: Int) {}
        func peerAccounts(_ accounts: [PublicKey]) {}
        func serveBlob(hash: [UInt8]) -> String? { nil }
        func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String? { nil }
        func finished(_ reason: String, blame: Bool) { ended.append((reason, blame)) }
        func linkOffer(_ offer: [UInt8]) -> String? { offers.received(offer, from: shell.links[0]) }
    }

    /// Delivers what each side sent to the other until both are quiet (hello first: the
    /// shell's messages go out after its session's).
    static func exchange(_ a: Side, _ b: Side) {
        while true {
            let ab = a.drain(), ba = b.drain()
            if ab.isEmpty && ba.isEmpty { return }
            for bytes in ab where b.offers.admit(bytes, from: b.shell.links[0]) { b.driver.receive(bytes: bytes) }
            for bytes in ba where a.offers.admit(bytes, from: a.shell.links[0]) { a.driver.receive(bytes: bytes) }
        }
    }

    @Test func anOfferSetOnTheNewMachineIsFoundByCodeOnTheOtherOverASyncSession() throws {
        // The new machine (node 1) is linked to the approver (node 2): each side's link names the other.
        let newMachine = Side(node: 2), approver = Side(node: 1)
        for side in [newMachine, approver] {
            side.driver.start(salt: SecureRandom.bytes(16), held: 0)
            side.offers.linkEstablished(side.shell.links[0])
        }
        let code = LinkCode.generate()
        let device = PublicKey(bytes: SigningKeyPair.generate().publicKey.bytes)!
        let offer = try LinkOffer.make(code: code, device: device, label: "laptop", expires: Self.wall0 + 600_000)
        newMachine.offers.offer(offer)
        Self.exchange(newMachine, approver)
        #expect(newMachine.ended.isEmpty && approver.ended.isEmpty)
        let found = approver.offers.offers(codeID: code.codeID)
        #expect(found == [offer])
        #expect(try found.first?.matches(code) == true, "the approver's code recognises it")
        #expect(newMachine.offers.offers(codeID: code.codeID).isEmpty, "offers are not echoed back")

        newMachine.offers.offer(nil)
        Self.exchange(newMachine, approver)
        #expect(approver.offers.offers(codeID: code.codeID).isEmpty, "withdrawn")

        // A malformed offer ends the session with blame on the sender.
        newMachine.shell.send(SyncMessage.link([1, 2, 3]).encoded, on: newMachine.shell.links[0])
        Self.exchange(newMachine, approver)
        #expect(approver.ended.count == 1 && approver.ended[0].blame)
        #expect(approver.ended.first?.reason.hasPrefix("protocol violation: malformed link offer: truncated while reading link offer device key") == true,
                "\(approver.ended)")
    }
}
