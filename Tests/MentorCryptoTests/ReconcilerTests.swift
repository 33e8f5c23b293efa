import Testing
import MentorCore
@testable import MentorCrypto

/// Two `SyncSession`s reconciling two `MemoryReconTree`s through the real v2 messages (encoded
/// and decoded) and the real salted hashes. A "record" here is the smallest encoding whose
/// position can be read (magic, version, type, then the ID standing in as author, seq 1): its
/// ID is what it carries, so a side applies one by inserting that ID.
struct ReconPair {
    var trees: [MemoryReconTree]
    var sessions: [SyncSession]
    var wire: [[[UInt8]]] = [[], []]        // frames sent by side i, oldest first
    var reconMessages = 0, reconBytes = 0, recordsMoved = 0
    /// Recon messages in the order sent, by side (a round trip is a change of direction).
    var reconSenders: [Int] = []
    /// Recon messages up to the last one with items (after it only the empty ones that end the round).
    var lastWithItems = 0
    /// The last ID of each page handed out, by token.
    var cursorIDs: [[UInt8]] = []

    init(_ a: MemoryReconTree, _ b: MemoryReconTree, settings: SyncSettings = SyncSettings()) {
        trees = [a, b]
        sessions = [SyncSession(role: .initiator, settings: settings, hashing: ReconHash.hashing),
                    SyncSession(role: .responder, settings: settings, hashing: ReconHash.hashing)]
    }

    static func record(_ id: [UInt8]) -> [UInt8] { Array("MMR".utf8) + [1, 1] + id + [0, 0, 0, 0, 0, 0, 0, 1] }
    static func id(of record: [UInt8]) -> [UInt8] { Array(record[5..<37]) }

    mutating func run(_ side: Int, _ directives: [SyncDirective]) throws {
        var pending = directives[...]
        while let d = pending.popFirst() {
            switch d {
            case .send(let m):
                let bytes = m.encoded
                if case .recon(let items) = m {
                    reconMessages += 1; reconBytes += bytes.count; reconSenders.append(side)
                    if !items.isEmpty { lastWithItems = reconMessages }
                }
                wire[side].append(bytes)
            case .reconcile:
                let tree = trees[side]
                pending = try sessions[side].reconcile(in: tree)[...] + pending
            case .fetchIDs(let ids):
                pending = sessions[side].fetched(ids.filter(trees[side].contains).map(Self.record))[...] + pending
            case .fetchSubtree(let depth, let prefix, let after, let limit):
                let all = trees[side].ids(depth: depth, prefix: prefix)
                let rest = after.map { c in all.filter { cursorIDs[Int(c.token)].lexicographicallyPrecedes($0) } } ?? all
                let page = Array(rest.prefix(limit))
                var next: FetchCursor?
                if rest.count > limit, let last = page.last {
                    cursorIDs.append(last)
                    next = FetchCursor(token: UInt64(cursorIDs.count - 1))
                }
                pending = sessions[side].fetched(page.map(Self.record), next: next)[...] + pending
            case .apply(let batch):
                for r in batch { trees[side].insert(Self.id(of: r)) }
                recordsMoved += batch.count
                pending = sessions[side].applied(stored: batch.count)[...] + pending
            case .close(let why), .end(let why):
                Issue.record("side \(side) closed: \(why)")
                return
            case .fetch, .progress, .serveBlob, .peerAccounts, .blobPart, .tree, .linkOffer:
                break
            }
        }
    }

    /// Starts both sides and delivers frames (alternating directions) until nothing is left.
    mutating func settle() throws {
        try run(0, sessions[0].start(salt: [UInt8](repeating: 1, count: 16), held: UInt64(trees[0].count)))
        try run(1, sessions[1].start(salt: [UInt8](repeating: 2, count: 16), held: UInt64(trees[1].count)))
        var steps = 0
        while !(wire[0].isEmpty && wire[1].isEmpty) {
            steps += 1
            guard steps < 1_000_000 else { Issue.record("no end in sight"); return }
            for side in 0..<2 where !wire[side].isEmpty {
                let frame = wire[side].removeFirst()
                try run(1 - side, sessions[1 - side].receive(bytes: frame))
            }
        }
    }

    /// Round trips of the reconciliation (recon messages alternate, so messages halved).
    var roundTrips: Double { Double(reconMessages) / 2 }
    var roundTripsToLastItem: Double { Double(lastWithItems) / 2 }
}

@Suite struct ReconcilerTests {
    static func randomID<G: RandomNumberGenerator>(_ g: inout G) -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) } }

    /// n shared IDs, d only on A and d only on B: both end with the union, both caught up.
    static func converge(n: Int, d: Int, seed: UInt64) throws -> ReconPair {
        var g = SeededGenerator(seed: seed)
        let shared = (0..<n).map { _ in randomID(&g) }
        let onlyA = (0..<d).map { _ in randomID(&g) }, onlyB = (0..<d).map { _ in randomID(&g) }
        var pair = ReconPair(MemoryReconTree(shared + onlyA), MemoryReconTree(shared + onlyB))
        try pair.settle()
        let union = MemoryReconTree(shared + onlyA + onlyB)
        #expect(pair.trees[0].count == n + 2 * d && pair.trees[1].count == n + 2 * d, "n \(n) d \(d): both hold the union")
        #expect(pair.trees[0].node(depth: 0, prefix: 0) == union.node(depth: 0, prefix: 0))
        #expect(pair.trees[1].node(depth: 0, prefix: 0) == union.node(depth: 0, prefix: 0))
        #expect(pair.sessions[0].isCaughtUp && pair.sessions[1].isCaughtUp, "n \(n) d \(d): both caught up")
        #expect(pair.sessions[0].isIdle && pair.sessions[1].isIdle, "n \(n) d \(d): nothing left over")
        #expect(pair.recordsMoved == 2 * d, "n \(n) d \(d): only the differences travel (moved \(pair.recordsMoved))")
        return pair
    }

    @Test(.tags(.slow), arguments: [(10, 0), (10, 1), (10, 5), (1_000, 0), (1_000, 1), (1_000, 30), (1_000, 500)])
    func randomSetsEndWithTheUnion(n: Int, d: Int) throws {
        for seed in 1...3 { _ = try Self.converge(n: n, d: d, seed: UInt64(n * 31 + d * 7 + seed)) }
    }

    @Test(.tags(.slow)) func oneDifferenceEachWayInAHundredThousand() throws {
        for d in [0, 1, 10] {
            let pair = try Self.converge(n: 100_000, d: d, seed: 42 + UInt64(d))
            print("reconcile n=100000 d=\(d) each way: \(pair.reconMessages) recon messages (\(pair.roundTrips) round trips; " +
                  "the differences known after \(pair.roundTripsToLastItem)), \(pair.reconBytes) bytes")
            if d == 0 { #expect(pair.reconMessages == 3 && pair.reconBytes <= 30, "equal sets: the root's fingerprint and two empty answers") }
            // Four levels to a leaf of ~1.5 IDs (a node of ≤ 16 IDs is listed, and depth-3 nodes
            // hold ~24 here), then `need`, then the two empty messages that end the round.
            if d == 1 {
                #expect(pair.roundTripsToLastItem <= 3.5 && pair.reconMessages <= 9 && pair.reconBytes <= 2048,
                        "one difference: \(pair.roundTrips) round trips, \(pair.reconBytes) bytes")
            }
        }
    }

    @Test func aSideHoldingNothingGetsEverythingInOneStep() throws {
        var g = SeededGenerator(seed: 7)
        let ids = (0..<3_000).map { _ in Self.randomID(&g) }
        for (a, b) in [(ids, [[UInt8]]()), ([], ids)] {
            var pair = ReconPair(MemoryReconTree(a), MemoryReconTree(b))
            try pair.settle()
            #expect(pair.trees[0].count == 3_000 && pair.trees[1].count == 3_000)
            #expect(pair.reconBytes < 64, "no IDs are listed when one side is empty (\(pair.reconBytes) bytes)")
        }
    }

    @Test func aForkVariantIsJustAnotherID() throws {
        // Two variants of one (author, seq) are two IDs: each side gets the other's.
        var g = SeededGenerator(seed: 9)
        let shared = (0..<500).map { _ in Self.randomID(&g) }
        let va = Self.randomID(&g), vb = Self.randomID(&g)
        var pair = ReconPair(MemoryReconTree(shared + [va]), MemoryReconTree(shared + [vb]))
        try pair.settle()
        #expect(pair.trees[0].contains(vb) && pair.trees[1].contains(va))
    }

    @Test func theSaltChangesEveryFingerprint() {
        let h1 = ReconHash.hashing(mine: [UInt8](repeating: 1, count: 16), theirs: [UInt8](repeating: 2, count: 16))
        let h2 = ReconHash.hashing(mine: [UInt8](repeating: 2, count: 16), theirs: [UInt8](repeating: 1, count: 16))
        let h3 = ReconHash.hashing(mine: [UInt8](repeating: 1, count: 16), theirs: [UInt8](repeating: 3, count: 16))
        let node = [UInt8](repeating: 0xaa, count: 32)
        #expect(h1.fingerprint(node) == h2.fingerprint(node), "both ends agree whichever salt is whose")
        #expect(h1.fingerprint(node) != h3.fingerprint(node))
        #expect(h1.shortID(node) != h3.shortID(node))
    }
}

/// SplitMix64: deterministic randomness for property tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
