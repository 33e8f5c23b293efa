import MentorCore
import MentorCrypto
@testable import MentorStore
import Testing

/// Two real replicas synced by two `SyncSession`s over an in-memory link, with a shell that does
/// what `PeerManager` does: fetch from and apply to the replica, compare digests, resend.
private final class ReplicaLink {
    let replicas: [Replica]
    var sessions: [SyncSession] = [SyncSession(), SyncSession()]
    var wire: [[[UInt8]]] = [[], []]          // wire[i]: messages sent by side i
    var resends = 0
    var closed: [String] = []

    init(_ a: Replica, _ b: Replica) { replicas = [a, b] }

    func start() throws {
        for i in 0..<2 {
            let summary = try replicas[i].versionSummary()
            try run(i, sessions[i].start(localVector: summary.mapValues(\.seq), digests: summary.mapValues(\.digest)))
        }
    }

    func summarize(_ i: Int) throws {
        let summary = try replicas[i].versionSummary()
        try run(i, sessions[i].summary(localVector: summary.mapValues(\.seq), digests: summary.mapValues(\.digest)))
    }

    func run(_ i: Int, _ directives: [SyncDirective]) throws {
        var pending = directives[...]
        while let d = pending.popFirst() {
            switch d {
            case .send(let m): wire[i].append(m.encoded)
            case .fetch(let author, let seqs):
                pending = sessions[i].fetched(try replicas[i].records(of: author, seqs: seqs))[...] + pending
            case .apply(let batch):
                let outcomes = try replicas[i].apply(batch: batch)
                let refused = outcomes.filter { if case .refused = $0 { true } else { false } }.count
                pending = sessions[i].applied(stored: outcomes.count - refused, refused: refused)[...] + pending
            case .compare(let entries):
                let local = try replicas[i].versionSummary(of: entries.map(\.author))
                let differ = entries.filter { e in local[e.author].map { $0.seq == e.seq && $0.digest != e.digest } ?? false }
                if !differ.isEmpty {
                    resends += 1
                    pending = sessions[i].resend(differ.map(\.author))[...] + pending
                }
            case .close(let reason): closed.append(reason)
            case .progress, .serveBlob, .blobPart, .peerAccounts: break
            }
        }
    }

    /// Delivers until both wires are empty.
    func settle() throws {
        var steps = 0
        while !(wire[0].isEmpty && wire[1].isEmpty), steps < 100_000 {
            for i in 0..<2 where !wire[i].isEmpty {
                let bytes = wire[i].removeFirst()
                try run(1 - i, sessions[1 - i].receive(bytes: bytes))
            }
            steps += 1
        }
    }
}

@Suite struct ForkSyncTests {
    let ana = keyPair(41)

    func card(_ seq: UInt64, _ bio: String) throws -> [UInt8] {
        try signed(ana, type: 1, seq: seq, body: ProfileCard(bio: bio).body, timestamp: seq)
    }

    @Test func theDigestFollowsTheStoredRecordsWhateverTheOrderAndDropsAReplacedVariant() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let records = try (1...5).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: records)
        _ = try y.apply(batch: records.reversed())
        let sx = try x.versionSummary()[ana.publicKey.key], sy = try y.versionSummary()[ana.publicKey.key]
        #expect(sx == sy && sx?.seq == 5 && sx?.digest != 0)
        // A variant at seq 3 changes the digest; the digest equals one computed from scratch.
        _ = try x.apply(try card(3, "other 3"))
        let forked = try x.versionSummary()[ana.publicKey.key]
        #expect(forked?.seq == 5 && forked?.digest != sx?.digest)
        try x.write { db throws(StoreError) in try db.execute("UPDATE authors SET digest = NULL") }
        try x.write { db throws(StoreError) in try Replica.computeMissingDigests(db) }
        #expect(try x.versionSummary()[ana.publicKey.key] == forked, "the incremental digest matches a recomputation")
    }

    /// Ana's key signed different records for seq 5 on two machines, each of which only ever saw
    /// its own: equal contiguous seqs, so hello alone would exchange nothing. The digests differ,
    /// both sides resend the author, and both end with both variants and equal digests.
    @Test func aForkAtTheSameSeqIsFoundByTheHelloDigestsAndExchanged() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let common = try (1...4).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: common + [try card(5, "laptop")])
        _ = try y.apply(batch: common + [try card(5, "lab machine")])
        #expect(try x.digest() != y.digest())
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        #expect(link.closed.isEmpty, "\(link.closed)")
        #expect(link.resends == 2, "both sides should find the difference")
        #expect(try x.digest() == y.digest())
        #expect(try x.counts().records == 6 && x.card(of: ana.publicKey.key)?.forked == true)
    }

    /// The fork lies below where the two sides stood at hello (y is behind), so hello digests
    /// cannot compare it; after catching up the summary does.
    @Test func aForkBelowTheHelloIsFoundByTheSummaryAfterCatchingUp() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let common = try (1...4).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: common + [try card(5, "laptop"), try card(6, "later")])
        _ = try y.apply(batch: common + [try card(5, "lab machine")])
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        #expect(try y.versionSummary()[ana.publicKey.key]?.seq == 6, "y caught up to seq 6")
        #expect(try x.digest() != y.digest(), "the fork at seq 5 is still hidden")
        try link.summarize(0)
        try link.summarize(1)
        try link.settle()
        #expect(link.closed.isEmpty, "\(link.closed)")
        #expect(try x.digest() == y.digest(), "the summaries exchanged the hidden variants")
        #expect(try x.counts().records == 7)
    }

    @Test func equalReplicasExchangeNothingAfterHelloOrSummary() throws {
        let x = try memoryReplica(), y = try memoryReplica()
        let records = try (1...20).map { try card($0, "edit \($0)") }
        _ = try x.apply(batch: records)
        _ = try y.apply(batch: records)
        let link = ReplicaLink(x, y)
        try link.start()
        try link.settle()
        try link.summarize(0)
        try link.summarize(1)
        try link.settle()
        #expect(link.resends == 0 && link.sessions[0].recordsSent == 0 && link.sessions[1].recordsSent == 0)
    }
}
