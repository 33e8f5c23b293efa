import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
@testable import MentorNode

/// Work a catch-up costs the receiving peer manager, counted (not timed): over two peer
/// managers linked on loopback, B takes the cards of many authors from A, one small batch after
/// another, as a campus of many accounts with few records each arrives.
@Suite(.serialized) struct PeerManagerWorkTests {
    /// A node with a peer manager on 127.0.0.1 (a free port), dialling `peers`.
    final class LinkedNode {
        let node: TestNode
        let peers: PeerManager

        init(dialing others: [PeerManager.StaticPeer] = [], settings: PeerManager.Settings) throws {
            node = try TestNode()
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            peers = PeerManager(node: node.node, listener: listener, staticPeers: others, settings: settings)
            peers.start()
        }

        var port: UInt16 { peers.listenAddress.port }
        deinit { peers.stop() }
    }

    /// Cards of `authors` authors, each naming a photo no node holds (so every batch of them
    /// is a batch "naming a photo the replica lacks").
    static func cards(authors: Int) throws -> [[UInt8]] {
        try (0..<authors).flatMap { n -> [[UInt8]] in
            var w = RecordWriter(keys: try SigningKeyPair(seed: [UInt8(n >> 8), UInt8(n & 0xFF)] + [UInt8](repeating: 5, count: 30)))
            let photo = PhotoRef(hash: [UInt8](repeating: UInt8(n & 0xFF), count: 31) + [UInt8(n >> 8)], size: 1000, format: .png)
            return [try w.profile(ProfileCard(name: "Author \(n)", role: .student, photos: [photo]), at: 1000 + UInt64(n)).encoded,
                    try w.profile(ProfileCard(bio: "bio of \(n)"), at: 2000 + UInt64(n)).encoded]
        }
    }

    /// The records `Node.changes` published, collected across threads.
    final class AppliedLog: @unchecked Sendable {   // `records` only under `lock`
        private let lock = NSLock()
        private var records: [AppliedRecord] = []
        func append(_ more: [AppliedRecord]) { lock.withLock { records += more } }
        var all: [AppliedRecord] { lock.withLock { records } }
    }

    /// Batches from two links applied in one transaction (`Node.applyRemote(batches:)`, what the
    /// peer manager does with the batches waiting their turn) still get each its own outcomes,
    /// in its order, and each stored record is pushed on naming the link it came from.
    @Test func batchesAppliedTogetherKeepTheirOwnOutcomesAndOrigins() throws {
        let n = try TestNode()
        let log = AppliedLog()
        n.node.changes.subscribe { if case .applied(let records) = $0 { log.append(records) } }
        let r = try Self.cards(authors: 2)   // [a1, a2, b1, b2]
        let first = n.node.replica.verify([r[0], r[1], [0xFF, 0x00]])
        let second = n.node.replica.verify([r[2], r[0]])
        let outcomes = try n.node.applyRemote(batches: [(first, 7), (second, 9)])
        #expect(outcomes.count == 2 && outcomes[0].count == 3 && outcomes[1].count == 2)
        #expect(Array(outcomes[0].prefix(2)) == [.applied, .applied])
        if case .refused = outcomes[0][2] {} else { Issue.record("the malformed record is refused: \(outcomes[0][2])") }
        #expect(outcomes[1] == [.applied, .duplicate], "the second batch's own outcomes: \(outcomes[1])")
        let origins = Dictionary(log.all.map { ($0.bytes, $0.origin) }, uniquingKeysWith: { a, _ in a })
        #expect(origins.count == 3)
        #expect(origins[r[0]] == .some(7) && origins[r[1]] == .some(7) && origins[r[2]] == .some(9),
                "each record is not pushed back to the link it came from: \(origins.values.map { $0 ?? 0 })")
    }

    @Test func aCatchUpFromManyAuthorsLooksForMissingPhotosOncePerIntervalNotOncePerBatch() throws {
        var settings = PeerManager.Settings()
        settings.photoDeferral = .zero            // no waiting for the catch-up: every batch may look
        settings.photoLookupInterval = .seconds(3600)
        let a = try LinkedNode(settings: settings)
        let records = try Self.cards(authors: 300)
        #expect(try a.node.node.replica.apply(batch: records).allSatisfy { $0 == .applied })
        let b = try LinkedNode(dialing: [.init(host: "127.0.0.1", port: a.port)], settings: settings)
        let deadline = ContinuousClock.now + .seconds(60)
        while try b.node.node.replica.counts().records < records.count, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(try b.node.node.replica.counts().records == records.count)
        #expect(b.peers.recordsReceived >= records.count, "every record B took came over the link")
        // One look when the link came up, one for the first batch naming photos; the hundreds
        // of batches after it wait for the interval (before: one look, a pass over every
        // missing photo, per batch).
        #expect(b.peers.photoLookupCount <= 3, "looked for missing photos \(b.peers.photoLookupCount) times")
    }
    /// A reconnect with nothing applied since the last listing of missing photos reuses that
    /// listing (the new link is only given its share of it); one after new records lists again.
    /// Before: every link that came up listed them (a scan of the cards' photo entries and a
    /// budget look-up per missing photo: ~130 ms of CPU at 10,000 accounts, both sides).
    @Test func aReconnectWithNothingNewReusesTheListingOfMissingPhotos() throws {
        var settings = PeerManager.Settings()
        settings.photoDeferral = .zero
        settings.photoLookupInterval = .zero
        let a = try LinkedNode(settings: settings)
        let records = try Self.cards(authors: 20)
        #expect(try a.node.node.replica.apply(batch: records).allSatisfy { $0 == .applied })
        func link() throws -> LinkedNode {
            let b = try LinkedNode(dialing: [.init(host: "127.0.0.1", port: a.port)], settings: settings)
            #expect(try b.node.node.replica.apply(batch: records).allSatisfy { $0 == .applied || $0 == .duplicate })
            let deadline = ContinuousClock.now + .seconds(30)
            while a.peers.peers.count == 0, ContinuousClock.now < deadline { usleep(10_000) }
            #expect(a.peers.peers.count == 1, "B linked to A")
            usleep(200_000)
            return b
        }
        var b = try link()
        let first = a.peers.photoLookupCount
        #expect(first >= 1, "the first link listed the missing photos")
        b.peers.stop()
        var deadline = ContinuousClock.now + .seconds(30)
        while a.peers.peers.count > 0, ContinuousClock.now < deadline { usleep(10_000) }
        b = try link()
        #expect(a.peers.photoLookupCount == first, "nothing was applied on A: its listing holds (\(a.peers.photoLookupCount) vs \(first))")
        b.peers.stop()
        deadline = ContinuousClock.now + .seconds(30)
        while a.peers.peers.count > 0, ContinuousClock.now < deadline { usleep(10_000) }
        var w = RecordWriter(keys: try SigningKeyPair(seed: [UInt8](repeating: 9, count: 32)))
        let more = try w.profile(ProfileCard(name: "Newcomer", role: .student), at: 5000).encoded
        _ = try a.node.node.applyRemote([more])
        b = try link()
        #expect(a.peers.photoLookupCount > first, "a record was applied since: the next link lists again")
        _ = b
    }
}
