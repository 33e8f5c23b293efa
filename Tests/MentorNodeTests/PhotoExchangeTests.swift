import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import Testing
@testable import MentorNode

/// The photo exchange of a shell's links (`PhotoExchange`, PROTOCOL.md §13.3 "Photos", §13.4,
/// §13.6), over a fake shell, fake links and a stand-in replica (no sockets, a manual clock,
/// timers run by the test): a missing photo a card names is asked of one link and not asked
/// again while the request is out; a request left unanswered ends its link (no offence) and
/// the photo goes to another; a link that lacks it is asked again only after the retry delay;
/// an author over its budget is skipped and reported once; a blob that does not match its hash
/// is refused and not stored; a peer's `wantBlob` is answered in parts, or "not held"; photos
/// wait for links catching up, at most the deferral.
@Suite struct PhotoExchangeTests {
    /// A link: up, its session established and caught up unless the test says otherwise.
    final class FakeLink: PhotoLink {
        let serial: UInt64
        var closing = false
        var linkUp = true
        var sessionIsEstablished = true
        var sessionIsCaughtUp = true
        var blobIn: BlobAssembly?
        var blobPartAt: ContinuousClock.Instant = .now
        var blobTimer: DispatchWorkItem?
        init(serial: UInt64) { self.serial = serial }
    }

    /// The shell: its links, the timers asked of it (run by the test), what was sent on which
    /// link, and the links ended for an unanswered request.
    final class FakeShell: PhotoShell {
        var links: [FakeLink] = []
        var isStopped = false
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var sent: [(link: UInt64, message: SyncMessage)] = []
        var overdue: [(link: UInt64, reason: String)] = []

        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func send(_ message: SyncMessage, on link: FakeLink) { sent.append((link.serial, message)) }
        func blobAnswerOverdue(_ link: FakeLink, reason: String) { overdue.append((link.serial, reason)) }

        /// The `wantBlob`s sent, as (link, hash).
        var wants: [(link: UInt64, hash: [UInt8])] {
            sent.compactMap { if case .wantBlob(let hash) = $0.message { ($0.link, hash) } else { nil } }
        }
    }

    /// The replica, standing in: the photos current cards name (with their authors), the blobs
    /// held, each author's usage, the node's accounts, and what was stored.
    final class FakeReplica {
        var cards: [(ref: PhotoRef, author: PublicKey)] = []
        var held: [[UInt8]: [UInt8]] = [:]
        var usage: [PublicKey: Int64] = [:]
        var local: [PublicKey] = []
        var stored: [[UInt8]] = []
        var failReads = false

        var store: PhotoStore {
            PhotoStore(
                missingPhotos: { (limit) throws(StoreError) in
                    Array(self.cards.filter { self.held[$0.ref.hash] == nil }.sorted { $0.ref.size < $1.ref.size }.prefix(limit))
                },
                blobBytes: { () throws(StoreError) in Int64(self.held.values.reduce(0) { $0 + $1.count }) },
                authorUsage: { (author) throws(StoreError) in self.usage[author] ?? 0 },
                localAccounts: { self.local },
                isNamedPhoto: { (hash) throws(StoreError) in self.cards.contains { $0.ref.hash == hash } },
                putBlob: { (data) throws(BlobError) in
                    self.stored.append(data)
                    self.held[BLAKE2b.hash(data, outputLength: 32)] = data
                },
                blob: { (hash) throws(StoreError) in
                    if self.failReads { throw StoreError(.error, "disk I/O error") }
                    return self.held[hash]
                })
        }
    }

    static let alice = PublicKey(bytes: [UInt8](repeating: 0xa1, count: 32))!
    static let bob = PublicKey(bytes: [UInt8](repeating: 0xb0, count: 32))!

    /// `size` bytes of a photo (any bytes: the stand-in replica does not sniff) and its reference.
    static func photo(_ seed: UInt8, size: Int) -> (data: [UInt8], ref: PhotoRef) {
        let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        return (data, PhotoRef(hash: BLAKE2b.hash(data, outputLength: 32), size: UInt32(size), format: .jpeg))
    }

    /// An exchange over the fakes, with the daemon's default timings unless told otherwise.
    final class Harness {
        let shell = FakeShell()
        let replica = FakeReplica()
        let logger = CaptureLogger()
        let clock = ManualClock()
        let exchange: PhotoExchange<FakeShell>

        init(authorBudget: Int64 = 64 << 20, photoBudget: Int64 = 2 << 30) {
            let clock = self.clock
            exchange = PhotoExchange(fetcher: .init(retry: .milliseconds(500), deferral: .seconds(10),
                                                    photoBudget: photoBudget, authorBudget: authorBudget),
                                     rules: .init(lookupInterval: .seconds(1), answerTimeout: .seconds(30)),
                                     store: replica.store, logger: logger, clock: { clock.now })
            exchange.shell = shell
        }

        /// A link the shell keeps from now on (not yet handed over: see `establish`).
        @discardableResult
        func link(_ serial: UInt64) -> FakeLink {
            let link = FakeLink(serial: serial)
            shell.links.append(link)
            return link
        }

        /// A link comes up, as the shell hands it over.
        @discardableResult
        func establish(_ serial: UInt64) -> FakeLink {
            let link = link(serial)
            exchange.linkEstablished()
            return link
        }

        /// The shell closes a link and hands its close over.
        func close(_ link: FakeLink) {
            link.closing = true
            link.blobTimer?.cancel()
            shell.links.removeAll { $0 === link }
            exchange.linkClosed(link.serial)
        }

        /// Advances the clock and runs every timer due by then, in order of their instants.
        func advance(_ d: Duration) {
            clock.advance(d)
            while let next = shell.scheduled.indices.filter({ shell.scheduled[$0].at <= clock.now })
                .min(by: { shell.scheduled[$0].at < shell.scheduled[$1].at }) {
                let work = shell.scheduled.remove(at: next).work
                if !work.isCancelled { work.perform() }
            }
        }

        /// The peer on `link` sends the photo in parts (as `PhotoSync.answer` serves it); the
        /// problems the exchange found with each part.
        func deliver(_ data: [UInt8], hash: [UInt8], on link: FakeLink) -> [String?] {
            PhotoSync.answer(hash: hash, blob: data).map { part in
                guard case .blob(let h, let total, let offset, let bytes) = part else { return "not a part" }
                return exchange.blobPart(hash: h, total: total, offset: offset, bytes: bytes, on: link)
            }
        }

        func notHeld(_ hash: [UInt8], on link: FakeLink) -> String? {
            exchange.blobPart(hash: hash, total: 0, offset: 0, bytes: [], on: link)
        }
    }

    // MARK: Fetching

    @Test func aMissingPhotoIsAskedOfOneLinkAndNotAskedAgainWhileItsRequestIsOut() {
        let h = Harness()
        let (data, ref) = Self.photo(1, size: 1_000)
        h.replica.cards = [(ref, Self.bob)]
        let a = h.establish(1)
        #expect(h.shell.wants.map(\.link) == [1] && h.shell.wants.first?.hash == ref.hash, "the photo the card names is asked of the link")
        #expect(a.blobIn?.hash == ref.hash)
        // Another link comes, records are applied and batches name photos: listed again, the
        // photo is not asked again — of the second link nor of the first.
        h.establish(2)
        h.exchange.recordsApplied()
        h.establish(3)
        h.advance(.seconds(2))
        h.exchange.lookSoon()
        #expect(h.exchange.listings == 3, "listed at the first link, after records were applied, for a batch naming photos")
        #expect(h.shell.wants.count == 1, "asked once while the request is out: \(h.shell.wants.map(\.link))")
        // The link that has it answers: stored, once, and not asked for again.
        #expect(h.deliver(data, hash: ref.hash, on: a) == [nil])
        #expect(h.replica.stored == [data] && h.exchange.blobsFetched == 1)
        #expect(a.blobIn == nil)
        h.exchange.recordsApplied()
        h.establish(4)
        #expect(h.shell.wants.count == 1)
    }

    @Test func aRequestLeftUnansweredEndsItsLinkWithoutBlameAndThePhotoIsAskedOfAnother() {
        let h = Harness()
        let (data, ref) = Self.photo(2, size: SyncLimits.maxBlobPart + 100)   // two parts
        h.replica.cards = [(ref, Self.bob)]
        let a = h.establish(1)
        h.establish(2)
        #expect(h.shell.wants.map(\.link) == [1])
        // A part at 20 s: the answer is waited for until 30 s after it, not after the request.
        h.advance(.seconds(20))
        let first = PhotoSync.answer(hash: ref.hash, blob: data)[0]
        guard case .blob(_, let total, let offset, let bytes) = first else { Issue.record("not a part"); return }
        #expect(h.exchange.blobPart(hash: ref.hash, total: total, offset: offset, bytes: bytes, on: a) == nil)
        h.advance(.seconds(15))
        #expect(h.shell.overdue.isEmpty, "a part came 15 s ago: the link stays")
        h.advance(.seconds(14))
        #expect(h.shell.overdue.isEmpty)
        h.advance(.seconds(1))
        #expect(h.shell.overdue.map(\.link) == [1], "30 s without a part: the link ends")
        let reason = h.shell.overdue.first?.reason ?? ""
        #expect(reason.contains("no answer to a photo request (wantBlob) for 30.0 seconds") && reason.contains("(no offence)"))
        // The shell closes it: the photo is asked of the other link at once.
        h.close(a)
        #expect(h.shell.wants.map(\.link) == [1, 2])
        #expect(h.shell.overdue.count == 1)
    }

    @Test func aLinkThatLacksThePhotoIsAskedAgainOnlyAfterTheRetryDelayAndAnotherAtOnce() {
        let h = Harness()
        let (data, ref) = Self.photo(3, size: 500)
        h.replica.cards = [(ref, Self.bob)]
        let a = h.establish(1)
        let b = h.establish(2)
        #expect(h.shell.wants.map(\.link) == [1])
        #expect(h.notHeld(ref.hash, on: a) == nil, "not held is no fault")
        #expect(h.shell.wants.map(\.link) == [1, 2], "the next link is asked at once")
        #expect(h.notHeld(ref.hash, on: b) == nil)
        #expect(h.shell.wants.map(\.link) == [1, 2], "both said they lack it: nobody is asked")
        h.advance(.milliseconds(499))
        #expect(h.shell.wants.count == 2)
        h.advance(.milliseconds(1))
        #expect(h.shell.wants.map(\.link) == [1, 2, 1], "the first link is asked again after 0.5 s (a relay may have it now)")
        #expect(h.deliver(data, hash: ref.hash, on: a) == [nil] && h.replica.stored == [data])
    }

    @Test func aPhotoWhoseAuthorIsOverItsBudgetIsSkippedAndReportedOnce() {
        let h = Harness(authorBudget: 1_000)
        let (_, small) = Self.photo(4, size: 200)
        let (_, big) = Self.photo(5, size: 300)
        h.replica.cards = [(small, Self.bob), (big, Self.alice)]
        h.replica.usage = [Self.bob: 900, Self.alice: 0]
        h.establish(1)
        #expect(h.shell.wants.map(\.hash) == [big.hash], "Bob's smaller photo would take him over 1,000 bytes: Alice's is asked")
        let skips = h.logger.lines("a photo is not fetched")
        #expect(skips.count == 1)
        #expect(skips.first?["author"] == Self.bob.shortID && skips.first?["size"] == "200")
        #expect(skips.first?["hash"] == String(Hex.encode(small.hash).prefix(16)))
        #expect(skips.first?["reason"]?.contains("its author's records and photos would take more than") == true)
        // Listed again with another link free: not fetched, not reported again.
        h.exchange.recordsApplied()
        h.establish(2)
        #expect(!h.shell.wants.contains { $0.hash == small.hash })
        #expect(h.logger.lines("a photo is not fetched").count == 1)
    }

    @Test func aPhotoOverTheNodesPhotoBudgetIsSkippedAndReported() {
        let h = Harness(photoBudget: 1_000)
        let (held, _) = Self.photo(6, size: 900)
        let (_, ref) = Self.photo(7, size: 200)
        h.replica.held = [BLAKE2b.hash(held, outputLength: 32): held]
        h.replica.cards = [(ref, Self.bob)]
        h.establish(1)
        #expect(h.shell.wants.isEmpty)
        #expect(h.logger.lines("a photo is not fetched").first?["reason"]?.contains("photo budget") == true)
    }

    // MARK: Receiving

    @Test func aBlobThatDoesNotMatchItsHashIsRefusedAndNotStored() {
        let h = Harness()
        let (data, ref) = Self.photo(8, size: 700)
        h.replica.cards = [(ref, Self.bob)]
        let a = h.establish(1)
        var forged = data
        forged[0] ^= 0xff
        let problems = h.deliver(forged, hash: ref.hash, on: a)
        #expect(problems.count == 1 && problems[0]?.contains("does not match its hash") == true, "\(problems)")
        #expect(h.replica.stored.isEmpty && h.exchange.blobsFetched == 0)
    }

    @Test func aPartNeverAskedForOrOfTheWrongSizeIsRefused() {
        let h = Harness()
        let (data, ref) = Self.photo(9, size: 700)
        let (_, other) = Self.photo(10, size: 700)
        let idle = h.establish(1)
        #expect(h.deliver(data, hash: ref.hash, on: idle).first??.contains("not asked for") == true, "no request is out on the link")
        h.replica.cards = [(ref, Self.bob)]
        h.exchange.recordsApplied()
        let a = h.establish(2)
        #expect(a.blobIn != nil || idle.blobIn != nil)
        let asked = a.blobIn != nil ? a : idle
        #expect(h.deliver(data, hash: other.hash, on: asked).first??.contains("not asked for") == true)
        #expect(h.exchange.blobPart(hash: ref.hash, total: 701, offset: 0, bytes: data, on: asked)?.contains("the card says 700") == true)
        #expect(h.replica.stored.isEmpty)
    }

    @Test func aPhotoNoCardNamesByTheTimeItArrivesIsDroppedNotStored() {
        let h = Harness()
        let (data, ref) = Self.photo(11, size: 400)
        h.replica.cards = [(ref, Self.bob)]
        let a = h.establish(1)
        h.replica.cards = []   // the card was edited while the photo was fetched
        #expect(h.deliver(data, hash: ref.hash, on: a) == [nil], "no fault of the relay")
        #expect(h.replica.stored.isEmpty && h.exchange.blobsFetched == 0)
        #expect(h.logger.lines("a fetched photo no current card names was dropped").count == 1)
    }

    // MARK: Serving

    @Test func aWantBlobForAHeldPhotoIsAnsweredInPartsAndOneNotHeldSaysSo() {
        let h = Harness()
        let (data, ref) = Self.photo(12, size: SyncLimits.maxBlobPart * 2 + 5)
        h.replica.held = [ref.hash: data]
        let a = h.link(1)
        h.exchange.answer(ref.hash, on: a)
        var parts: [(total: UInt32, offset: UInt32, bytes: [UInt8])] = []
        for sent in h.shell.sent {
            guard sent.link == 1, case .blob(let hash, let total, let offset, let bytes) = sent.message, hash == ref.hash else {
                Issue.record("not a part of the photo on the link: \(sent)")
                return
            }
            parts.append((total, offset, bytes))
        }
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { $0.bytes.count <= SyncLimits.maxBlobPart && !$0.bytes.isEmpty && $0.total == UInt32(data.count) })
        #expect(parts.map(\.offset) == [0, UInt32(SyncLimits.maxBlobPart), UInt32(2 * SyncLimits.maxBlobPart)])
        #expect(parts.flatMap(\.bytes) == data)

        h.shell.sent = []
        let (_, missing) = Self.photo(13, size: 100)
        h.exchange.answer(missing.hash, on: a)
        #expect(h.shell.sent.map(\.message) == [.blob(hash: missing.hash, total: 0, offset: 0, bytes: [])], "not held")
        // A replica that cannot be read answers "not held" too, and says why in the log.
        h.shell.sent = []
        h.replica.failReads = true
        h.exchange.answer(ref.hash, on: a)
        #expect(h.shell.sent.map(\.message) == [.blob(hash: ref.hash, total: 0, offset: 0, bytes: [])])
        #expect(h.logger.lines("reading a photo failed").count == 1)
    }

    // MARK: Waiting for links catching up

    @Test func photosWaitForLinksCatchingUpAtMostTheDeferral() {
        let h = Harness()
        let (_, ref) = Self.photo(14, size: 300)
        h.replica.cards = [(ref, Self.bob)]
        let a = h.link(1)
        a.sessionIsCaughtUp = false
        h.exchange.linkEstablished()
        #expect(h.exchange.listings == 0 && h.shell.wants.isEmpty, "a link catching up: the listing waits")
        h.advance(.seconds(3))
        a.sessionIsCaughtUp = true
        h.exchange.linkCaughtUp()
        #expect(h.exchange.listings == 1 && h.shell.wants.map(\.link) == [1], "caught up: listed and asked at once")

        // Still catching up after the deferral: the timer lists anyway.
        let g = Harness()
        g.replica.cards = [(ref, Self.bob)]
        let b = g.link(1)
        b.sessionIsCaughtUp = false
        g.exchange.linkEstablished()
        g.advance(.milliseconds(9_999))
        #expect(g.exchange.listings == 0)
        g.advance(.milliseconds(1))
        #expect(g.exchange.listings == 1, "10 s after the wait began it lists, links catching up or not")
    }

    @Test func nothingIsDoneByATimerOnceTheShellStopped() {
        let h = Harness()
        let (_, ref) = Self.photo(15, size: 300)
        h.replica.cards = [(ref, Self.bob)]
        h.establish(1)
        h.shell.isStopped = true
        h.advance(.seconds(31))
        #expect(h.shell.overdue.isEmpty, "a stopped shell ends no link")
    }
}
