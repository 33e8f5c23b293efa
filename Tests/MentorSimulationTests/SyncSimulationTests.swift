import Foundation
import Synchronization
import Testing
@testable import MentorCore
import MentorCrypto

// Deterministic simulation of the sync protocol v2 (docs/PROTOCOL.md §13.3, §13.7; issue 7 item 3,
// issue 13 items 7 and 8): reconciliation rounds over each node's tree of record IDs
// (`MemoryReconTree`'s hashes), pushes to every link but the one a record came over — in full on
// the links a node's `PushTree` keeps eager, as IDs (`ihave`) on the lazy ones, with `prune` and
// `graft` — forks, and a hostile node.
//
// Every side of every live link is the daemon's own `SyncDriver` (the one interpreter of a
// session's directives, with its `recon`/`want` rates and, set to the daemon's figures, the
// `ihave`/`prune`/`graft` rate) over a simulation `SyncHost` (`SimHost`): frames go into an
// in-memory network, reads come from the simulated replica, an apply completes when the scheduler
// says, timers are the driver's (the clock is the step count). Each node has one `PushTree` over
// its links, glued as the daemon's `PushRelay` does (`signal`, its `held` read of the replica,
// `scheduleGraft`, `duplicates`). One seeded scheduler drives everything. Two kinds of seed:
//
// **Five nodes under faults** (most seeds). Lazy push on in two seeds of three. What the scheduler
// may do, step by step:
//
// - deliver the next frame of any direction of any live link (each direction is in order, as on
//   TCP; directions and links interleave arbitrarily, so any frame may wait any number of steps);
// - apply a received batch (in order per link, at any later step), with the ack held back for a
//   while (the rate limit of §13.4) or sent at once; release held acks;
// - pass newly held records to the node's links now or at a later step (the daemon does it
//   asynchronously), create records on any honest node that is up; fork an author: a node that
//   is not the author's writes another variant of one of its seqs (the same account used on two
//   nodes; the node's initiators start a round when a variant is applied, as the daemon does);
// - fire a link's round timer early (its minute), a deferral retry or a graft that is due;
// - faults: cut a link (frames in flight are lost, both sessions end), reconnect it, partition
//   the nodes in two and heal, restart a node (its links end, its push tree is forgotten; what
//   it applied survives, batches received but not applied yet and pending announcements do not;
//   it comes back later), and drop, duplicate, reorder or alter one frame on a link. Frames carry
//   their counter as the real ones do (§13.2): the receiver notices a frame that is not the next
//   one and the connection ends there, as a frame failing to open does; a dropped frame is
//   noticed at the next frame (a keep-alive follows it).
// - clock skew (a per-seed character): one author's clock may run fast, so its records are not
//   due on the other nodes until some time after they were written. A node receiving one early
//   either holds it until due (kept across restarts, applied when due) or cannot take it now
//   (PROTOCOL.md §10.1: dropped quietly, reported to the driver as deferred, asked for again
//   with `want` after the session's back-off). Time is the step count (100 ms a step); while
//   settling, a network with nothing else to do jumps to the next due record, retry or graft.
// - a hostile node (a per-seed character, one seed in four): a member of the network (it runs
//   the honest stack, so its traffic is protocol-valid) that also sends `ihave`s for IDs it never
//   serves, `graft`s and `prune`s for IDs nobody holds, batches padded with duplicate bodies,
//   floods of `ihave`/`want`/`recon` within and beyond the rates, and records with a bad
//   signature (the one encoding here that verification refuses). It writes nothing of its own.
//   Only its links may close, and only with blame on it; the honest nodes never dial it again
//   after that (the daemon's penalty).
//
// Then faults and writes stop, partitions heal, every node comes up, a random connected set of
// links comes up (connected among the honest nodes alone), and everything is delivered until
// nothing is left to do.
//
// **Twenty-node meshes with lazy push** (one seed in `meshEvery`, 200): a full mesh (one in four) or
// a random connected mesh of mean degree ~5; every link is up and drained with the clock stopped
// (a step is 100 µs: frames travel far faster than the graft timeout, as on a LAN); a few records
// are written one at a time (their duplicates prune the redundant links: the eager links become a
// spanning tree), then the measured records, one to three at once. In half of these seeds, while
// a record's bodies are on the wire, an eager link (a tree edge) carrying frames is cut; the
// nodes below it see only `ihave`s and graft after the timeout. Then the links are redialled and
// rounds run as above. Bodies received per node per measured record: at most 1.2 on the
// fault-free seeds (asserted per seed), printed for the others.
//
// Invariants:
//
// - no honest link ever closes (no protocol violation between honest nodes, no read failure);
//   a link to the hostile node closes only with blame on the hostile node;
// - no receiver ever holds more than `window` unacknowledged batches, and no sender has more than
//   `window` in flight (both counted by the network from the frames, independently of the
//   sessions);
// - a connection never carries a record back to the honest node that sent it over that
//   connection (no echo);
// - no replica holds a record no node created, or a different encoding of one (a forgery is
//   refused at the first honest node and closes that link);
// - after settling (faults stop, then rounds run until one moves nothing): every honest replica
//   holds exactly every record written, every fork variant included (none missing, no gap left,
//   no duplicates), no push tree waits for a body, and every session between honest nodes is
//   established, caught up and idle (nothing in flight, unacknowledged, held, buffered, queued or
//   waiting to be fetched, no round open, nothing deferred).
//
// `MM_SIM_SEED=N` runs only seed N and prints its trace; `MM_SIM_SEEDS` (count) and
// `MM_SIM_FIRST_SEED` choose another range, `MM_SIM_MESH_EVERY` the share of 20-node seeds.
// A failure prints its seed and the replay command.

private func simKey(_ n: Int) -> PublicKey { PublicKey(bytes: [UInt8](repeating: UInt8(n), count: 32))! }

enum SimulationConfig {
    static let smallNodes = 5
    static let meshNodes = 20
    /// Authors 1...maxAuthor: node i's account is i + 1; one node may hold a second (nodes + 1).
    static let maxAuthor = meshNodes + 1
    static let maxSeq = 400
}

private func simEncoding(_ a: Int, _ s: Int, _ name: String) -> [UInt8] {
    Record.signedBytes(type: .profile, author: simKey(a), seq: UInt64(s), timestamp: 1_700_000_000_000 + UInt64(s),
                       clock: VectorClock(), body: ProfileCard(name: name).body) + [UInt8](repeating: UInt8(a), count: 64)
}

/// Record encodings by author and seq, built once (sessions read only author and seq; replicas
/// compare whole encodings). Placeholder signatures: the only encoding verification refuses
/// here is a forgery (`simForgeries`).
private let simRecords: [[[UInt8]]] = (0...SimulationConfig.maxAuthor).map { a in
    a == 0 ? [] : (0...SimulationConfig.maxSeq).map { s in s == 0 ? [] : simEncoding(a, s, "a\(a)s\(s)") }
}

/// A second variant of each (author, seq): what a fork writes.
private let simForks: [[[UInt8]]] = (0...SimulationConfig.maxAuthor).map { a in
    a == 0 ? [] : (0...SimulationConfig.maxSeq).map { s in s == 0 ? [] : simEncoding(a, s, "fork a\(a)s\(s)") }
}

/// A record with its signature altered (what the hostile node sends): refused by verification.
private func simForgery(_ a: Int, _ s: Int) -> [UInt8] {
    var bytes = simRecords[a][s]
    bytes[bytes.count - 1] ^= 0xff
    return bytes
}

/// A replica as sync sees it: per author and seq the variants held, contiguous from seq 1 or
/// held back until the gap fills (both in the reconciled set, as the real `records` and
/// `pending` tables are), duplicates ignored. All of it survives a restart (it is the
/// database); what was not applied yet does not.
private struct SimReplica {
    /// By author number (the key's first byte): variants by seq, and how far from seq 1 every
    /// seq has one.
    var variants = [[UInt64: [[UInt8]]]](repeating: [:], count: SimulationConfig.maxAuthor + 1)
    var contiguousSeq = [UInt64](repeating: 0, count: SimulationConfig.maxAuthor + 1)
    /// Records dated ahead of this node's clock, kept until due (simulated time), by author.
    var heldUntilDue = [[UInt64: (due: Int, bytes: [UInt8])]](repeating: [:], count: SimulationConfig.maxAuthor + 1)
    /// The earliest due of those (kept on every change: the scheduler reads it each step).
    var earliestDue: Int?
    mutating func refreshEarliestDue() {
        var earliest: Int?
        for held in heldUntilDue { for h in held.values where earliest == nil || h.due < earliest! { earliest = h.due } }
        earliestDue = earliest
    }
    var duplicates = 0
    var tree = SimTree()
    var byID: [[UInt8]: [UInt8]] = [:]

    func contiguous(_ author: PublicKey) -> UInt64 { contiguousSeq[Int(author.bytes[0])] }

    /// Applies one encoding; returns the records that became applied (contiguous): the
    /// record itself when it extends or forks the contiguous log, and those it released.
    mutating func apply(_ bytes: [UInt8], at p: RecordPosition) -> [(author: PublicKey, seq: UInt64, bytes: [UInt8])] {
        let a = Int(p.author.bytes[0])
        let id = VerifiedRecord.id(of: bytes)
        if byID[id] != nil { duplicates += 1; return [] }
        byID[id] = bytes
        tree.insert(id)
        orderCache = OrderCache()
        variants[a][p.seq, default: []].append(bytes)
        var added: [(author: PublicKey, seq: UInt64, bytes: [UInt8])] = []
        var c = contiguousSeq[a]
        if p.seq <= c { return [(p.author, p.seq, bytes)] }   // a fork variant of a seq held
        while let next = variants[a][c + 1] {
            c += 1
            for v in next { added.append((p.author, c, v)) }
        }
        contiguousSeq[a] = c
        return added
    }

    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) -> [[UInt8]] {
        let v = variants[Int(author.bytes[0])]
        return seqs.prefix { v[$0] != nil }.flatMap { v[$0]!.sorted { $0.lexicographicallyPrecedes($1) } }
    }

    /// Every record by (author, seq, id), as the real replica reads them (cached until a change),
    /// and the last record of each page handed out, by token (the replica's cursors).
    private final class OrderCache { var all: [(bytes: [UInt8], cursor: SimCursor)]? }
    private var orderCache = OrderCache()
    private final class Cursors { var byToken: [SimCursor] = [] }
    private var cursors = Cursors()

    /// A page of the records under a node after `after`, and where it stopped.
    func page(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) -> ([[UInt8]], FetchCursor?) {
        let all = orderCache.all ?? ordered(Array(byID.keys))
        orderCache.all = all
        var start = 0
        if let after {
            let c = cursors.byToken[Int(after.token)]
            start = all.firstIndex { !$0.cursor.precedesOrIs(c) } ?? all.count
        }
        var out: [(bytes: [UInt8], cursor: SimCursor)] = []
        var i = start
        while i < all.count, out.count <= limit {
            if ReconTree.prefix(of: all[i].cursor.id, depth: depth) == prefix { out.append(all[i]) }
            i += 1
        }
        let pageRecords = Array(out.prefix(limit))
        guard out.count > limit, let last = pageRecords.last else { return (pageRecords.map(\.bytes), nil) }
        cursors.byToken.append(last.cursor)
        return (pageRecords.map(\.bytes), FetchCursor(token: UInt64(cursors.byToken.count - 1)))
    }

    /// By (author, seq, id), as the real replica reads them.
    func ordered(_ ids: [[UInt8]]) -> [(bytes: [UInt8], cursor: SimCursor)] {
        ids.compactMap { id in
            byID[id].flatMap { b in (try? RecordPosition.peek(b)).map { (b, SimCursor(author: $0.author, seq: $0.seq, id: id)) } }
        }.sorted { $0.cursor.precedes($1.cursor) }
    }
}

/// A record's place in the order of reads.
private struct SimCursor: Equatable {
    let author: PublicKey, seq: UInt64, id: [UInt8]
    func precedes(_ o: SimCursor) -> Bool {
        (author, seq) < (o.author, o.seq) || ((author, seq) == (o.author, o.seq) && id.lexicographicallyPrecedes(o.id))
    }
    func precedesOrIs(_ o: SimCursor) -> Bool { self == o || precedes(o) }
}

/// The reconciliation tree of a replica, sparse: the same hashes as `MemoryReconTree` (checked
/// in `theSimulationTreeHashesLikeTheReferenceTree`), but a change recomputes only its path, so
/// the simulation can afford a round after every few records.
struct SimTree: ReconView {
    private var leaves: [UInt16: [[UInt8]]] = [:]
    /// Non-empty nodes by depth 0...4: prefix → IDs under it.
    private var counts = [[UInt16: UInt32]](repeating: [:], count: 5)
    private final class Hashes { var byNode: [UInt32: [UInt8]] = [:] }
    private var hashes = Hashes()

    var count: Int { Int(counts[0][0] ?? 0) }

    mutating func insert(_ id: [UInt8]) {
        let leaf = ReconTree.prefix(of: id, depth: 4)
        var list = leaves[leaf] ?? []
        guard !list.contains(id) else { return }
        list.append(id)
        list.sort { $0.lexicographicallyPrecedes($1) }
        leaves[leaf] = list
        if !isKnownUniquelyReferenced(&hashes) { let copy = Hashes(); copy.byNode = hashes.byNode; hashes = copy }
        for d in 0...4 {
            let p = ReconTree.prefix(of: id, depth: d)
            counts[d][p, default: 0] += 1
            hashes.byNode[UInt32(d) << 16 | UInt32(p)] = nil
        }
    }

    func node(depth: Int, prefix: UInt16) -> ReconNode? {
        guard let count = counts[depth][prefix] else { return nil }
        let key = UInt32(depth) << 16 | UInt32(prefix)
        if let h = hashes.byNode[key] { return ReconNode(count: count, hash: h) }
        let hash = depth == 4 ? ReconHash.leaf(leaves[prefix] ?? [])
            : ReconHash.node(count: count, children: children(depth: depth, prefix: prefix).map { ($0.nibble, $0.node.hash) })
        hashes.byNode[key] = hash
        return ReconNode(count: count, hash: hash)
    }

    func children(depth: Int, prefix: UInt16) -> [(nibble: UInt8, node: ReconNode)] {
        // A plain loop: a debug build spends most of a generic `compactMap` on metadata.
        var out: [(nibble: UInt8, node: ReconNode)] = []
        for n in 0..<16 {
            if let child = node(depth: depth + 1, prefix: ReconTree.child(depth: depth, prefix: prefix, nibble: UInt8(n))) { out.append((UInt8(n), child)) }
        }
        return out
    }

    func ids(depth: Int, prefix: UInt16) -> [[UInt8]] {
        guard counts[depth][prefix] != nil else { return [] }
        if depth == 4 { return leaves[prefix] ?? [] }
        return leaves.keys.filter { ReconTree.prefix(of: [UInt8($0 >> 8), UInt8($0 & 0xff)], depth: depth) == prefix }.sorted()
            .flatMap { leaves[$0]! }
    }
}

/// One frame on the wire: its counter (never sent, implied by the nonce — here explicit so the
/// receiver can tell what the real opener tells), the sync message, or nil for a keep-alive.
private struct SimFrame {
    var counter: UInt64
    var bytes: [UInt8]?
    var altered = false
}

/// What the hostile node does to its next batch on a link.
private enum SimMangle { case duplicates, forgery }

/// The links with something to do, in the order they got it.
private final class SimBusyLinks { var list: [SimConnection] = [] }

/// A live connection between nodes `a` < `b`. Index 0 is a's side, 1 is b's.
private final class SimConnection {
    let nodes: [Int]
    /// The link's name in the nodes' push trees (the daemon's link serial).
    let serial: UInt64
    var drivers: [SyncDriver] = []
    var wire: [[SimFrame]] = [[], []]          // frames sent by side i, oldest first
    var sent: [UInt64] = [0, 0]                 // next frame counter per sending side
    var expected: [UInt64] = [0, 0]             // next frame counter per receiving side
    var toApply: [[[[UInt8]]]] = [[], []]       // batches side i received and has not applied
    var batchesIn = [0, 0], acksOut = [0, 0]    // per side: batches received, batches acked
    var batchesOut = [0, 0], acksIn = [0, 0]    // per side: batches sent, acks received
    var heldAcks = [0, 0]                       // per side: the session's held acks (mirrored)
    /// Whether the receiving ends acknowledge a batch when they queue it (`SyncDriver.accepted`,
    /// as the daemon does while its budget allows), and per side the acceptances still owed:
    /// each comes at a later step, or just before its batch is applied (the daemon's order).
    var earlyAcks = false
    var accepts = [0, 0]
    var received: [Set<[UInt8]>] = [[], []]     // per side: record encodings it got here
    var mangles: [SimMangle] = []               // the hostile side's plans for its next batches
    /// Frames on the wire, batches to apply and held acks, both sides: 0 when there is nothing
    /// to do on the link. A link with something is listed in `busy` (the scheduler looks at
    /// those alone, which in a 190-link mesh saves most of its time).
    var pending = 0 {
        didSet { if pending > 0, !listed { listed = true; busy.list.append(self) } }
    }
    var listed = false
    unowned let busy: SimBusyLinks
    var alive = true

    init(_ a: Int, _ b: Int, serial: UInt64, busy: SimBusyLinks) {
        nodes = [a, b]
        self.serial = serial
        self.busy = busy
    }

    func side(of node: Int) -> Int { nodes[0] == node ? 0 : 1 }
    var idle: Bool { wire[0].isEmpty && wire[1].isEmpty }
    /// The counters agree with the queues (checked at the end of each seed).
    var pendingIsRight: Bool { pending == wire[0].count + wire[1].count + toApply[0].count + toApply[1].count + heldAcks[0] + heldAcks[1] }
}

/// A link end's host: the simulation's network, replica, scheduler and clock, as `PeerManager`'s
/// `LinkHost` is the daemon's. Failures it sees are noted on the simulation and thrown after the
/// driver call returns.
private final class SimHost: SyncHost {
    unowned let sim: Simulation
    unowned let connection: SimConnection
    let side: Int
    init(sim: Simulation, connection: SimConnection, side: Int) { self.sim = sim; self.connection = connection; self.side = side }

    var node: Int { connection.nodes[side] }
    var isOpen: Bool { connection.alive }
    var now: ContinuousClock.Instant { sim.instant }
    func send(_ message: SyncMessage) { sim.send(connection, side, message, fromDriver: true) }
    func records(of author: PublicKey, seqs: ClosedRange<UInt64>) throws -> [[UInt8]] { sim.replicas[node].records(of: author, seqs: seqs) }
    func records(ids: [[UInt8]]) throws -> [[UInt8]] { sim.replicas[node].ordered(ids).map(\.bytes) }
    func records(depth: Int, prefix: UInt16, after: FetchCursor?, limit: Int) throws -> (records: [[UInt8]], next: FetchCursor?) {
        let (page, next) = sim.replicas[node].page(depth: depth, prefix: prefix, after: after, limit: limit)
        return (page, next)
    }
    func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T { try body(sim.replicas[node].tree) }
    func contiguousSeq(of author: PublicKey) -> UInt64 { sim.replicas[node].contiguous(author) }
    func apply(_ batch: [[UInt8]]) {
        connection.toApply[side].append(batch)
        connection.pending += 1
        if connection.earlyAcks { connection.accepts[side] += 1 }
    }
    func schedule(_ timer: SyncTimer, at: ContinuousClock.Instant) {}   // the scheduler reads `pendingTimers`
    func progress(sent: Int, received: Int) {}
    func peerAccounts(_ accounts: [PublicKey]) {}
    func serveBlob(hash: [UInt8]) -> String? { "a blob was asked for (the simulation has none)" }
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) -> String? { "a blob part that was not asked for" }
    func finished(_ reason: String, blame: Bool) { sim.finished(connection, side, reason, blame: blame) }
    func pushSignal(_ signal: PushSignal) { sim.pushSignal(connection, side, signal) }
}

private struct SimulationFailure: Error, CustomStringConvertible {
    let description: String
}

/// Totals over every seed of a run, for the figures in docs/RELIABILITY.md.
struct SimulationStats {
    var seeds = 0, steps = 0, records = 0, frames = 0, batches = 0
    var cuts = 0, partitions = 0, restarts = 0, frameFaults = 0, detected = 0, connects = 0
    var duplicateRecords = 0, heldAcks = 0, earlyAcks = 0
    var skewedSeeds = 0, heldUntilDue = 0, deferred = 0, wants = 0
    var forks = 0, rounds = 0, reconMessages = 0
    var lazySeeds = 0, ihaves = 0, grafts = 0, prunes = 0
    var hostileSeeds = 0, hostileActs = 0, hostileClosed = 0, forgeriesRefused = 0
    var meshSeeds = 0, meshFaultFree = 0, treeCuts = 0
    /// Bodies of measured records received by the nodes that did not write them, and how many
    /// such (node, record) pairs there are, on fault-free and on tree-cut mesh seeds.
    var bodiesFaultFree = 0, pairsFaultFree = 0, bodiesCut = 0, pairsCut = 0
    var worstFaultFree = 0.0, worstCut = 0.0

    mutating func add(_ o: SimulationStats) {
        seeds += o.seeds; steps += o.steps; records += o.records; frames += o.frames; batches += o.batches
        cuts += o.cuts; partitions += o.partitions; restarts += o.restarts; frameFaults += o.frameFaults
        detected += o.detected; connects += o.connects; duplicateRecords += o.duplicateRecords; heldAcks += o.heldAcks
        earlyAcks += o.earlyAcks
        skewedSeeds += o.skewedSeeds; heldUntilDue += o.heldUntilDue; deferred += o.deferred; wants += o.wants
        forks += o.forks; rounds += o.rounds; reconMessages += o.reconMessages
        lazySeeds += o.lazySeeds; ihaves += o.ihaves; grafts += o.grafts; prunes += o.prunes
        hostileSeeds += o.hostileSeeds; hostileActs += o.hostileActs; hostileClosed += o.hostileClosed
        forgeriesRefused += o.forgeriesRefused
        meshSeeds += o.meshSeeds; meshFaultFree += o.meshFaultFree; treeCuts += o.treeCuts
        bodiesFaultFree += o.bodiesFaultFree; pairsFaultFree += o.pairsFaultFree; bodiesCut += o.bodiesCut; pairsCut += o.pairsCut
        worstFaultFree = max(worstFaultFree, o.worstFaultFree); worstCut = max(worstCut, o.worstCut)
    }
}

/// One seeded run.
private final class Simulation {
    typealias Added = [(author: PublicKey, seq: UInt64, bytes: [UInt8])]

    let seed: UInt64
    var rng: SeededRandom
    let n: Int
    /// The 20-node character (else five nodes under faults).
    let mesh: Bool
    /// Per node: the window is the same everywhere (the protocol requires it), batch sizes differ.
    let settings: [SyncSettings]
    var window: Int { settings[0].window }
    /// The daemon's figures, the lazy-push rate included (the daemon rates it in its shell).
    let driverSettings: SyncDriver.Settings
    let lazyPush: Bool
    let hostile: Int?
    /// Simulated time a step stands for.
    let stepDuration: Duration
    let tracing: Bool
    var trace: [String] = []
    var stats = SimulationStats()
    /// What a host saw go wrong inside a driver call, thrown when the call returns.
    var failure: String?

    var replicas: [SimReplica]
    var trees: [PushTree]
    /// Each tree's `nextDeadline`, kept after every change (reading it in each step would copy
    /// the tree in a debug build).
    var graftDeadline: [ContinuousClock.Instant?]
    var up: [Bool]
    /// Announcements (`localRecordsAdded`) a node has yet to pass to its links, in order, with
    /// the link they came over (not passed to that one: echo suppression by link, as the daemon
    /// does).
    var announcements: [[(records: Added, origin: UInt64?)]]
    var connections: [SimConnection?]
    var serials: UInt64 = 0
    var blocked: Set<Int> = []                     // pair indexes cut off by a partition
    var penalized: Set<Int> = []                   // links closed with blame: not dialled again
    /// Accounts living on each node; how many records each account wrote.
    var accounts: [[PublicKey]] = []
    var created = [UInt64](repeating: 0, count: SimulationConfig.maxAuthor + 1)   // by author number
    /// Seqs of each author of which a fork variant (`simForks`) was written.
    var forked = [Set<UInt64>](repeating: [], count: SimulationConfig.maxAuthor + 1)
    /// How often a node forks an author (per-seed character).
    let forkWeight: Double

    // Per-seed character: how often each kind of thing happens.
    let createWeight, faultWeight, applyWeight, announceLater, holdAckChance: Double
    var linkSpeed: [Double]
    /// Clock skew: the author whose clock runs fast, by how many steps, and how often a node
    /// that receives one of its records early holds it until due (else: defers it).
    let fastAuthor: Int, skewSteps: Int, holdUntilDueChance: Double
    /// Simulated time in steps, and when each record was written.
    var time = 0
    var writtenAt = [[Int]](repeating: [Int](repeating: 0, count: SimulationConfig.maxSeq + 1), count: SimulationConfig.maxAuthor + 1)
    static let epoch = ContinuousClock.now
    var instant: ContinuousClock.Instant { Self.epoch + stepDuration * time }
    func steps(until at: ContinuousClock.Instant) -> Int { Int(((at - Self.epoch) / stepDuration).rounded(.up)) }

    /// Mesh seeds: the records whose bodies are counted, by encoding, and who wrote each.
    var measured: [[UInt8]: Int] = [:]
    var bodies = 0

    init(seed: UInt64, tracing: Bool, mesh: Bool) {
        self.seed = seed
        self.tracing = tracing
        self.mesh = mesh
        n = mesh ? SimulationConfig.meshNodes : SimulationConfig.smallNodes
        rng = SeededRandom(seed: seed)
        var r = rng
        let window = Int(r.next() % 4) + 1
        let sameBatch = r.next() % 2 == 0
        let batch = Int(r.next() % 5) + 1
        let n = self.n
        settings = (0..<n).map { _ in SyncSettings(window: window, batchSize: sameBatch ? batch : Int(r.next() % 8) + 1) }
        createWeight = [0.5, 1.0, 2.0][Int(r.next() % 3)]
        faultWeight = [0.5, 1.0, 2.0, 4.0][Int(r.next() % 4)]
        applyWeight = [1.0, 4.0, 12.0][Int(r.next() % 3)]
        announceLater = [0.0, 0.5, 0.9][Int(r.next() % 3)]
        holdAckChance = [0.0, 0.3, 0.8][Int(r.next() % 3)]
        linkSpeed = (0..<(2 * n * n)).map { _ in [0.2, 1.0, 5.0][Int(r.next() % 3)] }
        rng = r
        // Drawn from the main stream after the other characters.
        fastAuthor = Int(rng.next() % UInt64(n)) + 1
        let skew = [0, 0, 30, 400][Int(rng.next() % 4)]
        holdUntilDueChance = [0.0, 0.5, 1.0][Int(rng.next() % 3)]
        let forks = [0.0, 0.1, 0.5][Int(rng.next() % 3)]
        accounts = (0..<n).map { [simKey($0 + 1)] }
        if rng.next() % 2 == 0 { accounts[0].append(simKey(n + 1)) }   // a node with two accounts
        let lazy = rng.next() % 3 != 0
        let hostileDraw = rng.next() % 4 == 0
        if mesh {
            skewSteps = 0
            forkWeight = 0
            lazyPush = true
            hostile = nil
            stepDuration = .microseconds(100)
        } else {
            skewSteps = skew
            forkWeight = forks
            lazyPush = lazy
            hostile = hostileDraw ? Int(rng.next() % UInt64(n - 1)) + 1 : nil   // never node 0 (two accounts)
            stepDuration = .milliseconds(100)
        }
        var d = SyncDriver.Settings()
        d.treeBurst = 512   // PeerManager.Settings.treeBurst, per 30 s
        driverSettings = d
        replicas = [SimReplica](repeating: SimReplica(), count: n)
        trees = [PushTree](repeating: PushTree(), count: n)
        graftDeadline = [ContinuousClock.Instant?](repeating: nil, count: n)
        up = [Bool](repeating: true, count: n)
        announcements = [[(records: Added, origin: UInt64?)]](repeating: [], count: n)
        connections = Array(repeating: nil, count: n * n)
        if let hostile { accounts[hostile] = [] }
    }

    func log(_ text: @autoclosure () -> String) { if tracing { trace.append("[\(stats.steps) t\(time)] \(text())") } }

    func pair(_ a: Int, _ b: Int) -> Int { min(a, b) * n + max(a, b) }
    func below(_ k: Int) -> Int { Int(rng.next() % UInt64(k)) }
    func chance(_ p: Double) -> Bool { p > 0 && Double(rng.next() % 1_000_000) < p * 1_000_000 }
    func isHonest(_ node: Int) -> Bool { node != hostile }
    var honest: [Int] { (0..<n).filter(isHonest) }

    func fail(_ text: String) throws(SimulationFailure) -> Never {
        log("FAILED: \(text)")
        throw SimulationFailure(description: text)
    }

    /// Notes a failure seen inside a driver call (the first one counts).
    func note(_ text: String) {
        if failure == nil { failure = text; log("FAILED: \(text)") }
    }

    /// Throws what a host noted during the last driver calls.
    func check() throws(SimulationFailure) {
        if let failure { throw SimulationFailure(description: failure) }
    }

    /// The same connections, in the order they came up.
    var liveConnections: [SimConnection] = []
    let busy = SimBusyLinks()
    /// A link was cut since the last redial.
    var lost = false

    // MARK: Links

    func connect(_ a: Int, _ b: Int) throws(SimulationFailure) {
        serials += 1
        let c = SimConnection(min(a, b), max(a, b), serial: serials, busy: busy)
        c.earlyAcks = chance(0.5)
        let initiator = below(2)
        c.drivers = (0...1).map { side in
            SyncDriver(session: SyncSession(role: side == initiator ? .initiator : .responder, settings: settings[c.nodes[side]],
                                            hashing: ReconHash.hashing),
                       settings: driverSettings, host: SimHost(sim: self, connection: c, side: side))
        }
        connections[pair(a, b)] = c
        liveConnections.append(c)
        stats.connects += 1
        log("connect \(c.nodes[0])-\(c.nodes[1]) (link \(c.serial))")
        for node in c.nodes { trees[node].linkUp(c.serial) }
        // Each side starts when its handshake completes; the order does not matter to the peer,
        // whose frames arrive after its own start.
        let first = below(2)
        for side in [first, 1 - first] {
            let salt = (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            c.drivers[side].start(salt: salt, held: UInt64(replicas[c.nodes[side]].tree.count))
        }
        try check()
    }

    func cut(_ c: SimConnection, _ why: String) {
        guard c.alive else { return }
        c.alive = false
        lost = true
        connections[pair(c.nodes[0], c.nodes[1])] = nil
        liveConnections.removeAll { $0 === c }
        for node in c.nodes { trees[node].linkDown(c.serial) }
        log("cut \(c.nodes[0])-\(c.nodes[1]): \(why) (lost \(c.wire[0].count)+\(c.wire[1].count) frames, \(c.toApply[0].count)+\(c.toApply[1].count) unapplied batches)")
    }

    /// A driver finished its link (`SyncHost.finished`): never between honest nodes; with the
    /// hostile node only with blame on it, and the link is not dialled again (the penalty).
    func finished(_ c: SimConnection, _ side: Int, _ reason: String, blame: Bool) {
        let node = c.nodes[side], peer = c.nodes[1 - side]
        guard !isHonest(peer) || !isHonest(node) else {
            return note("node \(node)'s session with \(peer) closed\(blame ? " with blame" : ""): \(reason)")
        }
        if isHonest(node) {
            guard blame else { return note("node \(node)'s session with the hostile node \(peer) ended without blame: \(reason)") }
            stats.hostileClosed += 1
        }
        penalized.insert(pair(node, peer))
        cut(c, "\(node) closes: \(reason)")
    }

    /// A message a side sends: into the network, with the network's own checks.
    func send(_ c: SimConnection, _ side: Int, _ message: SyncMessage, fromDriver: Bool) {
        let node = c.nodes[side], peer = c.nodes[1 - side]
        var message = message
        if fromDriver, !isHonest(node), case .records(let batch) = message, let plan = c.mangles.first {
            c.mangles.removeFirst()
            message = .records(mangle(batch, plan))
        }
        c.wire[side].append(SimFrame(counter: c.sent[side], bytes: message.encoded))
        c.pending += 1
        c.sent[side] += 1
        switch message {
        case .records(let batch):
            stats.batches += 1
            c.batchesOut[side] += 1
            if isHonest(node) {
                for record in batch where c.received[side].contains(record) {
                    note("node \(node) echoed \(Self.describe(record)) back to \(peer), which sent it")
                }
            }
            if c.batchesOut[side] - c.acksIn[side] > window {
                note("node \(node) has \(c.batchesOut[side] - c.acksIn[side]) batches in flight to \(peer); window \(window)")
            }
            log("\(node)→\(peer) records \(batch.map(Self.describe))")
        case .ack(let k):
            c.acksOut[side] += Int(k)
            log("\(node)→\(peer) ack \(k)")
        case .recon(let items):
            stats.reconMessages += 1
            log("\(node)→\(peer) recon \(items.count) items")
        case .want:
            stats.wants += 1
            log("\(node)→\(peer) \(message)")
        case .ihave(let ids):
            stats.ihaves += 1
            log("\(node)→\(peer) ihave \(ids.count)")
        case .graft(let ids):
            stats.grafts += 1
            log("\(node)→\(peer) graft \(ids.count)")
        case .prune:
            stats.prunes += 1
            log("\(node)→\(peer) prune")
        default:
            log("\(node)→\(peer) \(message)")
        }
    }

    static func describe(_ bytes: [UInt8]) -> String {
        guard let p = try? RecordPosition.peek(bytes) else { return "?" }
        return "\(p.author.bytes[0]):\(p.seq)"
    }

    // MARK: Lazy push (PeerManager's glue)

    /// What a peer said about the push tree.
    func pushSignal(_ c: SimConnection, _ side: Int, _ signal: PushSignal) {
        let node = c.nodes[side]
        switch signal {
        case .pruned:
            trees[node].prunedBy(c.serial)
        case .grafted:
            trees[node].graftedBy(c.serial)
        case .announced(let ids):
            let unknown = ids.filter { !trees[node].knows($0) }
            guard !unknown.isEmpty else { return }
            let held = heldIDs(node, unknown)
            trees[node].held(Array(held))
            trees[node].announced(unknown.filter { !held.contains($0) }, by: c.serial, now: instant)
            sendDueGrafts(node)
        }
    }

    /// Which of these IDs the replica holds (applied or held back for a gap).
    func heldIDs(_ node: Int, _ ids: [[UInt8]]) -> Set<[UInt8]> { Set(ids.filter { replicas[node].byID[$0] != nil }) }

    /// Sends the grafts that are due (the daemon's `PushRelay.scheduleGraft`; its timer is the scheduler's).
    func sendDueGrafts(_ node: Int) {
        let now = instant
        defer { graftDeadline[node] = trees[node].nextDeadline }
        guard let at = trees[node].nextDeadline, at <= now else { return }
        for ask in trees[node].due(now: now) {
            guard let c = liveConnections.first(where: { $0.serial == ask.link }) else { continue }
            let held = heldIDs(node, ask.ids)
            trees[node].held(Array(held))
            let ids = ask.ids.filter { !held.contains($0) }
            guard !ids.isEmpty else { continue }
            log("\(node) grafts \(ids.count) from \(c.nodes[1 - c.side(of: node)])")
            c.drivers[c.side(of: node)].graft(ids)
        }
    }

    /// Bodies of a batch that were already held: the link is pruned if the tree says so.
    func noteDuplicates(_ count: Int, _ c: SimConnection, _ side: Int) {
        guard count > 0, lazyPush, trees[c.nodes[side]].duplicate(from: c.serial) else { return }
        c.drivers[side].prune()
    }

    // MARK: Steps

    func deliver(_ c: SimConnection, from side: Int) throws(SimulationFailure) {
        let frame = c.wire[side].removeFirst()
        c.pending -= 1
        let to = 1 - side
        guard frame.counter == c.expected[to], !frame.altered else {
            stats.detected += 1
            cut(c, "frame \(frame.counter) fails to open at \(c.nodes[to]) (expected \(c.expected[to]))")
            return
        }
        c.expected[to] += 1
        stats.frames += 1
        guard let bytes = frame.bytes else { return }
        let message: SyncMessage
        do { message = try SyncMessage.decode(bytes) } catch { try fail("node \(c.nodes[side]) sent bytes that do not decode: \(error)") }
        switch message {
        case .records(let batch):
            if c.batchesIn[to] - c.acksOut[to] >= window {
                try fail("node \(c.nodes[to]) received a batch from \(c.nodes[side]) with \(c.batchesIn[to] - c.acksOut[to]) unacknowledged; window \(window)")
            }
            c.batchesIn[to] += 1
            log("\(c.nodes[to]) receives \(batch.map(Self.describe)) from \(c.nodes[side])")
            for record in batch {
                guard (try? RecordPosition.peek(record)) != nil else { try fail("an unreadable record on the wire") }
                c.received[to].insert(record)
                if let writer = measured[record], writer != c.nodes[to] { bodies += 1 }
            }
        case .ack(let k):
            c.acksIn[to] += Int(k)
        default:
            break
        }
        c.drivers[to].receive(bytes: bytes)
        try check()
    }

    func apply(_ c: SimConnection, side: Int) throws(SimulationFailure) {
        if c.accepts[side] >= c.toApply[side].count, c.accepts[side] > 0 { try accept(c, side) }   // owed for this batch: first
        let batch = c.toApply[side].removeFirst()
        c.pending -= 1
        let node = c.nodes[side]
        var added: Added = []
        var deferred: Set<PublicKey> = []
        var refused = 0, duplicates = 0, forkApplied = false
        for record in batch {
            guard let p = try? RecordPosition.peek(record), let a = Optional(Int(p.author.bytes[0])),
                  a >= 1, a <= SimulationConfig.maxAuthor, p.author == simKey(a), p.seq >= 1, p.seq <= created[a] else {
                try fail("node \(node) received \(Self.describe(record)), which no node created")
            }
            if record == simForgery(a, Int(p.seq)) {
                // Verification refuses it: an offence of the sender.
                refused += 1
                stats.forgeriesRefused += 1
                continue
            }
            guard record == simRecords[a][Int(p.seq)] || (forked[a].contains(p.seq) && record == simForks[a][Int(p.seq)]) else {
                try fail("node \(node) received \(Self.describe(record)), which no node created")
            }
            let due = writtenAt[a][Int(p.seq)] + (a == fastAuthor ? skewSteps : 0)
            if time < due, p.seq > replicas[node].contiguous(p.author) {
                // Dated ahead of this node's clock: held until due, or not taken now.
                if chance(holdUntilDueChance) {
                    if replicas[node].heldUntilDue[a][p.seq] == nil { stats.heldUntilDue += 1 }
                    replicas[node].heldUntilDue[a][p.seq] = (due, record)
                    replicas[node].refreshEarliestDue()
                } else {
                    stats.deferred += 1
                    deferred.insert(p.author)
                }
                continue
            }
            let before = replicas[node].duplicates
            let sibling = !(replicas[node].variants[a][p.seq]?.isEmpty ?? true)
            added += replicas[node].apply(record, at: p)
            duplicates += replicas[node].duplicates - before
            if sibling, replicas[node].duplicates == before { forkApplied = true }
        }
        stats.duplicateRecords += duplicates
        let hold = refused == 0 && chance(holdAckChance)
        if hold { stats.heldAcks += 1 }
        log("\(node) applies \(batch.map(Self.describe)) from \(c.nodes[1 - side])\(hold ? ", ack held" : "")\(deferred.isEmpty ? "" : ", deferred \(deferred.map { $0.bytes[0] }.sorted())")\(refused > 0 ? ", \(refused) refused" : "")")
        // In the daemon's order: duplicates (prune), deferrals, the outcome, a fork's rounds.
        let driver = c.drivers[side]
        noteDuplicates(duplicates, c, side)
        driver.deferred(Array(deferred))
        driver.applied(stored: added.count, refused: refused, holdAck: hold)
        if c.alive {
            let held = driver.session.heldAcks
            c.pending += held - c.heldAcks[side]
            c.heldAcks[side] = held
        }
        try check()
        if forkApplied { try reconcileNow(node) }
        try announce(node, added, from: c.serial)
    }

    /// The receiving end queued a batch and acknowledges it before applying it.
    func accept(_ c: SimConnection, _ side: Int) throws(SimulationFailure) {
        c.accepts[side] -= 1
        stats.earlyAcks += c.drivers[side].accepted() ? 1 : 0
        try check()
    }

    /// A fork variant was applied: the node's initiators start a round now.
    func reconcileNow(_ node: Int) throws(SimulationFailure) {
        for c in liveConnections where c.nodes.contains(node) {
            let side = c.side(of: node)
            if c.drivers[side].session.role == .initiator { c.drivers[side].startRound() }
        }
        try check()
    }

    /// Newly held records go to every link of the node, now or later (in order).
    func announce(_ node: Int, _ added: Added, from origin: UInt64? = nil) throws(SimulationFailure) {
        guard !added.isEmpty else { return }
        if !announcements[node].isEmpty || chance(announceLater) {
            // A shell may also pass several applies of one origin on in one call.
            if let last = announcements[node].last, last.origin == origin, chance(0.5) {
                announcements[node][announcements[node].count - 1].records += added
            } else {
                announcements[node].append((added, origin))
            }
        } else {
            try passOn(node, added, from: origin)
        }
    }

    /// The daemon's `localRecordsAdded`: in full on the links the push tree keeps eager, as IDs
    /// on the lazy ones, to every link but the one they came over.
    func passOn(_ node: Int, _ added: Added, from origin: UInt64?) throws(SimulationFailure) {
        let ids = added.map { VerifiedRecord.id(of: $0.bytes) }
        trees[node].held(ids)
        for c in liveConnections where c.nodes.contains(node) && c.serial != origin {
            let side = c.side(of: node)
            if !lazyPush || trees[node].isEager(c.serial) {
                c.drivers[side].localRecordsAdded(added)
            } else {
                c.drivers[side].announce(ids)
            }
        }
        sendDueGrafts(node)
        try check()
    }

    /// A node writes another variant of a seq of an author that lives elsewhere (the account
    /// used on two machines): the seq it would write next there, or one it holds.
    func fork(at node: Int) throws(SimulationFailure) {
        let candidates = (1...n + 1).filter { a in created[a] >= 1 && !accounts[node].contains(simKey(a)) }
        guard !candidates.isEmpty else { return }
        let a = candidates[below(candidates.count)]
        let seq = min(created[a], replicas[node].contiguousSeq[a] + 1)
        guard seq >= 1, !forked[a].contains(seq) else { return }
        forked[a].insert(seq)
        stats.forks += 1
        let bytes = simForks[a][Int(seq)]
        log("\(node) forks \(a):\(seq)")
        try announce(node, replicas[node].apply(bytes, at: RecordPosition(author: simKey(a), seq: seq)))
    }

    /// The minute timer of a link's initiator (fired early: the scheduler stands for time).
    func fireRound(_ c: SimConnection) throws(SimulationFailure) {
        for side in 0...1 where c.drivers[side].pendingTimers[.round] != nil {
            stats.rounds += 1
            log("\(c.nodes[side])'s round timer with \(c.nodes[1 - side])")
            c.drivers[side].fire(.round)
        }
        try check()
    }

    @discardableResult
    func create(at node: Int) throws(SimulationFailure) -> [UInt8]? {
        guard !accounts[node].isEmpty else { return nil }
        let author = accounts[node][below(accounts[node].count)]
        let seq = replicas[node].contiguous(author) + 1
        let a = Int(author.bytes[0])
        guard seq == created[a] + 1, Int(seq) <= SimulationConfig.maxSeq else { return nil }
        created[a] = seq
        writtenAt[a][Int(seq)] = time
        stats.records += 1
        let bytes = simRecords[a][Int(seq)]
        log("\(node) writes \(Self.describe(bytes))")
        try announce(node, replicas[node].apply(bytes, at: RecordPosition(author: author, seq: seq)))
        return bytes
    }

    func restart(_ node: Int) {
        stats.restarts += 1
        log("restart \(node)")
        for c in liveConnections where c.nodes.contains(node) { cut(c, "node \(node) restarts") }
        announcements[node] = []
        trees[node] = PushTree()
        graftDeadline[node] = nil
        up[node] = false
    }

    func partition() {
        stats.partitions += 1
        var side = (0..<n).map { _ in rng.next() % 2 == 0 }
        if !side.contains(true) { side[0] = true }
        if !side.contains(false) { side[1] = false }
        blocked = []
        for a in 0..<n { for b in (a + 1)..<n where side[a] != side[b] { blocked.insert(pair(a, b)) } }
        log("partition \(side.enumerated().filter { $0.element }.map(\.offset)) | \(side.enumerated().filter { !$0.element }.map(\.offset))")
        for c in liveConnections where blocked.contains(pair(c.nodes[0], c.nodes[1])) { cut(c, "partition") }
    }

    /// One fault on a frame in flight: dropped, duplicated, swapped with the next, or altered.
    func frameFault() {
        let candidates = liveConnections.flatMap { c in (0...1).filter { !c.wire[$0].isEmpty }.map { (c, $0) } }
        guard !candidates.isEmpty else { return }
        let (c, side) = candidates[below(candidates.count)]
        let i = below(c.wire[side].count)
        stats.frameFaults += 1
        switch below(4) {
        case 0:
            log("drop frame \(c.wire[side][i].counter) \(c.nodes[side])→\(c.nodes[1 - side])")
            c.wire[side].remove(at: i)
            c.wire[side].append(SimFrame(counter: c.sent[side], bytes: nil))   // the next frame shows the gap
            c.sent[side] += 1
        case 1:
            log("duplicate frame \(c.wire[side][i].counter) \(c.nodes[side])→\(c.nodes[1 - side])")
            c.wire[side].insert(c.wire[side][i], at: i + 1 + below(c.wire[side].count - i))
            c.pending += 1
        case 2 where i + 1 < c.wire[side].count:
            log("reorder frames \(c.wire[side][i].counter), \(c.wire[side][i + 1].counter) \(c.nodes[side])→\(c.nodes[1 - side])")
            c.wire[side].swapAt(i, i + 1)
        default:
            log("alter frame \(c.wire[side][i].counter) \(c.nodes[side])→\(c.nodes[1 - side])")
            c.wire[side][i].altered = true
        }
    }

    // MARK: The hostile node

    /// A random 32-byte ID (held by nobody, in all likelihood).
    func randomID() -> [UInt8] { (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
    /// Up to `k` random IDs, distinct and ascending (as `ihave` and `graft` require).
    func randomIDs(_ k: Int) -> [[UInt8]] { Set((0..<k).map { _ in randomID() }).sorted { $0.lexicographicallyPrecedes($1) } }

    /// A batch the hostile node's session sends, as it sends it instead.
    func mangle(_ batch: [[UInt8]], _ plan: SimMangle) -> [[UInt8]] {
        switch plan {
        case .duplicates:
            // Every body twice, and some more it holds (the receiver may hold them all).
            let extra = replicas[hostile!].byID.values.sorted { $0.lexicographicallyPrecedes($1) }.prefix(8)
            return Array((batch + batch + extra).prefix(SyncLimits.maxBatchRecords))
        case .forgery:
            let authors = (1...n + 1).filter { created[$0] >= 1 }
            guard !authors.isEmpty else { return batch }
            let a = authors[below(authors.count)]
            return batch + [simForgery(a, Int(created[a]) - below(Int(created[a])))]
        }
    }

    /// One adversarial act on one of the hostile node's links: protocol-valid messages sent
    /// past its session (one-way ones, so its own session stays consistent), or a plan for its
    /// session's next batch.
    func hostileAct() throws(SimulationFailure) {
        guard let h = hostile, up[h] else { return }
        let links = liveConnections.filter { $0.nodes.contains(h) }
        guard !links.isEmpty else { return }
        let c = links[below(links.count)]
        let side = c.side(of: h)
        stats.hostileActs += 1
        func inject(_ m: SyncMessage, _ times: Int) { for _ in 0..<times { send(c, side, m, fromDriver: false) } }
        switch below(8) {
        case 0:   // ihave for IDs it never serves, within the rate
            let k = 1 + below(40)
            log("hostile \(h) announces \(k)× random IDs to \(c.nodes[1 - side])")
            for _ in 0..<k { inject(.ihave(randomIDs(1 + below(8))), 1) }
        case 1:   // grafts and prunes for IDs nobody holds
            log("hostile \(h) grafts unknown IDs from \(c.nodes[1 - side])")
            inject(.graft(randomIDs(1 + below(8))), 1 + below(4))
            if chance(0.5) { inject(.prune, 1 + below(4)) }
        case 2:   // a flood of ihave beyond the rate (512 per 30 s)
            log("hostile \(h) floods \(c.nodes[1 - side]) with ihave")
            inject(.ihave([randomID()]), 520)
        case 3:   // want floods within and beyond the rate (256 per 30 s)
            let authors = (1...n + 1).filter { created[$0] >= 1 }
            guard !authors.isEmpty else { return }
            let times = chance(0.5) ? 1 + below(20) : 300
            log("hostile \(h) sends \(times) wants to \(c.nodes[1 - side])")
            inject(.want(author: simKey(authors[below(authors.count)]), from: 1), times)
        case 4:   // recon out of turn, or a flood of it (128 per 30 s)
            log("hostile \(h) sends recon out of turn to \(c.nodes[1 - side])")
            inject(.recon([]), chance(0.5) ? 2 : 140)
        case 5, 6:
            log("hostile \(h) pads its next batch to \(c.nodes[1 - side]) with duplicates")
            c.mangles.append(.duplicates)
        default:
            log("hostile \(h) forges a record in its next batch to \(c.nodes[1 - side])")
            c.mangles.append(.forgery)
        }
        try check()
    }

    enum Work {
        case deliver(SimConnection, Int), apply(SimConnection, Int), accept(SimConnection, Int), release(SimConnection, Int), announce(Int), round(SimConnection)
        case retry(SimConnection, Int), due(Int), graft(Int)
    }

    /// The node's held records that are due now, applied as the daemon's timer does.
    func releaseDue(_ node: Int) throws(SimulationFailure) {
        var added: Added = []
        for a in 1...SimulationConfig.maxAuthor {
            for (seq, h) in replicas[node].heldUntilDue[a].sorted(by: { $0.key < $1.key }) where h.due <= time {
                replicas[node].heldUntilDue[a][seq] = nil
                added += replicas[node].apply(h.bytes, at: RecordPosition(author: simKey(a), seq: seq))
            }
        }
        replicas[node].refreshEarliestDue()
        log("\(node) applies records held until due: \(added.map { "\($0.author.bytes[0]):\($0.seq)" })")
        try announce(node, added)
    }

    /// When something waits only for time to pass (a record held until due, a deferral's retry,
    /// a graft).
    var nextTimed: Int? {
        var next: [Int] = []
        for (node, r) in replicas.enumerated() where up[node] {
            if skewSteps > 0 {
                if let d = r.earliestDue { next.append(d) }
            }
            if let at = graftDeadline[node] { next.append(steps(until: at)) }
        }
        if skewSteps > 0 {
            for c in liveConnections {
                for side in 0...1 { if let at = c.drivers[side].pendingTimers[.deferralRetry] { next.append(steps(until: at)) } }
            }
        }
        return next.min()
    }

    /// Whether links' round timers fire at random (during the faulty phase; when settling, rounds
    /// run only once everything else is done).
    var roundTimers = true

    /// Work that is not a fault: deliveries, applies, ack releases, announcements, timers. False
    /// if none.
    func progressStep() throws(SimulationFailure) -> Bool {
        var weights: [Double] = [], work: [Work] = []
        let now = instant
        // Every link while timers fire at random or deferrals may be due, else those with work.
        busy.list.removeAll { c in
            let done = !c.alive || c.pending == 0
            if done { c.listed = false }
            return done
        }
        for c in roundTimers || skewSteps > 0 ? liveConnections : busy.list {
            if roundTimers { weights.append(0.05); work.append(.round(c)) }
            for side in 0...1 {
                if !c.wire[side].isEmpty { weights.append(3 * linkSpeed[2 * pair(c.nodes[0], c.nodes[1]) + side]); work.append(.deliver(c, side)) }
                if !c.toApply[side].isEmpty { weights.append(applyWeight); work.append(.apply(c, side)) }
                if c.accepts[side] > 0 { weights.append(2); work.append(.accept(c, side)) }
                if c.heldAcks[side] > 0 { weights.append(1); work.append(.release(c, side)) }
                if skewSteps > 0, let at = c.drivers[side].pendingTimers[.deferralRetry], at <= now { weights.append(1); work.append(.retry(c, side)) }
            }
        }
        for node in announcements.indices where !announcements[node].isEmpty { weights.append(2); work.append(.announce(node)) }
        for node in 0..<n where up[node] {
            if let at = graftDeadline[node], at <= now { weights.append(1); work.append(.graft(node)) }
        }
        if skewSteps > 0 {   // only then can records be held until due
            for node in 0..<n where up[node] {
                if let due = replicas[node].earliestDue, due <= time { weights.append(1); work.append(.due(node)) }
            }
        }
        guard !work.isEmpty else { return false }
        switch work[pick(weights)] {
        case .deliver(let c, let side): try deliver(c, from: side)
        case .apply(let c, let side): try apply(c, side: side)
        case .accept(let c, let side): try accept(c, side)
        case .release(let c, let side):
            c.pending -= c.heldAcks[side]
            c.heldAcks[side] = 0
            c.drivers[side].releaseAcks()
            try check()
        case .announce(let node):
            let next = announcements[node].removeFirst()
            try passOn(node, next.records, from: next.origin)
        case .round(let c): try fireRound(c)
        case .retry(let c, let side):
            c.drivers[side].fire(.deferralRetry)
            try check()
        case .due(let node): try releaseDue(node)
        case .graft(let node):
            sendDueGrafts(node)
            try check()
        }
        return true
    }

    /// An index into `weights`, drawn in proportion to them (not generic: debug builds would
    /// instantiate metadata on every call).
    func pick(_ weights: [Double]) -> Int {
        var total = 0.0
        for w in weights { total += w }
        var x = Double(rng.next() % 1_000_000) / 1_000_000 * total
        for i in 0..<weights.count {
            if x < weights[i] { return i }
            x -= weights[i]
        }
        return weights.count - 1
    }

    // MARK: Five nodes under faults

    enum Step { case progress, create, fork, connect, boot, cut, frameFault, restart, partition, heal, hostile }

    func run(faultSteps: Int, settleLimit: Int) throws(SimulationFailure) {
        if mesh { return try runMesh(settleLimit: settleLimit) }
        // Start with a random set of links.
        for a in 0..<n { for b in (a + 1)..<n where chance(0.5) { try connect(a, b) } }

        let f = faultWeight
        let steps: [Step] = [.progress, .create, .fork, .connect, .boot, .cut, .frameFault, .restart, .partition, .heal, .hostile]
        let weights: [Double] = [20, createWeight, forkWeight, 2, 1, 0.6 * f, 0.5 * f, 0.25 * f, 0.1 * f, 0.2 * f, hostile == nil ? 0 : 1.5]
        let writers = honest
        for _ in 0..<faultSteps {
            stats.steps += 1
            time += 1
            switch steps[pick(weights)] {
            case .progress:
                _ = try progressStep()
            case .create:
                // One to three records at once, so that windows fill.
                let ups = writers.filter { up[$0] }
                if !ups.isEmpty {
                    let node = ups[below(ups.count)]
                    for _ in 0...below(3) { try create(at: node) }
                }
            case .fork:
                let ups = writers.filter { up[$0] }
                if !ups.isEmpty { try fork(at: ups[below(ups.count)]) }
            case .connect:
                let down = (0..<n).flatMap { a in ((a + 1)..<n).map { (a, $0) } }.filter { a, b in
                    up[a] && up[b] && connections[pair(a, b)] == nil && !blocked.contains(pair(a, b)) && !penalized.contains(pair(a, b))
                }
                if !down.isEmpty { let (a, b) = down[below(down.count)]; try connect(a, b) }
            case .boot:
                let down = (0..<n).filter { !up[$0] }
                if !down.isEmpty { let node = down[below(down.count)]; up[node] = true; log("\(node) is up") }
            case .cut:
                if !liveConnections.isEmpty { stats.cuts += 1; cut(liveConnections[below(liveConnections.count)], "link cut") }
            case .frameFault:
                frameFault()
            case .restart:
                restart(below(n))
            case .partition:
                partition()
            case .heal:
                if !blocked.isEmpty { blocked = []; log("heal") }
            case .hostile:
                try hostileAct()
            }
        }

        // Settle: no more faults or writes; every node up, partitions healed, a random
        // connected set of links up (a random spanning tree of the honest nodes plus some more).
        var order = honest
        for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, below(i + 1)) }
        var links: [(Int, Int)] = (1..<order.count).map { i in (order[i], order[below(i)]) }
        for a in 0..<n { for b in (a + 1)..<n where chance(0.2) { links.append((a, b)) } }
        try settle(links: links, settleLimit: settleLimit)
    }

    /// No more faults or writes: every node up, partitions healed, `links` up (redialled if a
    /// faulty frame still in flight ends one, as the daemon does), everything delivered, then
    /// rounds once all else is done, until a round of every link moves nothing.
    func settle(links: [(Int, Int)], settleLimit: Int) throws(SimulationFailure) {
        log("settle")
        roundTimers = false
        blocked = []
        for node in 0..<n where !up[node] { up[node] = true }
        let links = links.filter { !penalized.contains(pair($0.0, $0.1)) }
        func redial() throws(SimulationFailure) {
            guard lost else { return }
            lost = false
            for (a, b) in links where connections[pair(a, b)] == nil && !penalized.contains(pair(a, b)) { try connect(a, b) }
        }
        lost = true
        try redial()
        var settleSteps = 0
        var recordsAtLastRounds = -1
        let minute = Int(Duration.seconds(60) / stepDuration)
        while true {
            var busy = try progressStep()
            try redial()
            if !busy, liveConnections.allSatisfy(\.idle), let next = nextTimed {
                time = max(time + 1, next)   // nothing to do but wait: the clock moves on
                busy = true
            }
            if !busy && liveConnections.allSatisfy(\.idle) {
                let moved = replicas.reduce(0) { $0 + $1.byID.count }
                guard moved != recordsAtLastRounds else { break }
                recordsAtLastRounds = moved
                time += minute   // every initiator's timer is due
                for c in liveConnections {
                    for side in 0...1 where c.drivers[side].pendingTimers[.round].map({ $0 <= instant }) ?? false {
                        stats.rounds += 1
                        c.drivers[side].fire(.round)
                    }
                }
                try check()
                continue
            }
            time += 1
            settleSteps += 1
            stats.steps += 1
            if settleSteps > settleLimit { try fail("still busy after \(settleLimit) steps of settling (livelock)") }
        }
        try checkSettled()
    }

    func checkSettled() throws(SimulationFailure) {
        for c in liveConnections where !c.pendingIsRight { try fail("the scheduler's count of work on link \(c.nodes) is off") }
        var all: Set<[UInt8]> = []
        for a in 1...n + 1 {
            if created[a] >= 1 { for seq in 1...Int(created[a]) { all.insert(simRecords[a][seq]) } }
            for seq in forked[a] { all.insert(simForks[a][Int(seq)]) }
        }
        for node in honest {
            let replica = replicas[node]
            for a in 1...n + 1 {
                if !replica.heldUntilDue[a].isEmpty {
                    try fail("node \(node) still holds records of author \(a) until due: \(replica.heldUntilDue[a].keys.sorted())")
                }
                if replica.contiguousSeq[a] != created[a] {
                    try fail("node \(node) holds author \(a) contiguously to \(replica.contiguousSeq[a]) of the \(created[a]) written")
                }
            }
            let held = Set(replica.byID.values)
            if held != all {
                let missing = all.subtracting(held).map(Self.describe).sorted(), extra = held.subtracting(all).map(Self.describe).sorted()
                try fail("node \(node) holds \(held.count) of \(all.count) records written (missing \(missing), extra \(extra))")
            }
            if trees[node].missingCount > 0 { try fail("node \(node)'s push tree still waits for \(trees[node].missingCount) bodies") }
        }
        for c in liveConnections where isHonest(c.nodes[0]) && isHonest(c.nodes[1]) {
            for side in 0...1 {
                let s = c.drivers[side].session, node = c.nodes[side], peer = c.nodes[1 - side]
                guard s.isEstablished, s.isCaughtUp, s.isIdle, s.heldAcks == 0, s.deferredAuthors.isEmpty else {
                    try fail("node \(node)'s session with \(peer) is stuck: established \(s.isEstablished), caught up \(s.isCaughtUp), idle \(s.isIdle), in flight \(s.inFlight), unacked \(s.unackedReceived), held \(s.heldAcks), buffered \(s.bufferedRecords), deferred \(s.deferredAuthors.map { $0.bytes[0] })")
                }
            }
        }
    }

    // MARK: Twenty-node meshes

    /// Delivers everything with the clock stopped; when only timers are left (grafts), the clock
    /// jumps to the next.
    func drain(limit: Int) throws(SimulationFailure) {
        var steps = 0
        while true {
            if try progressStep() {
                steps += 1
                stats.steps += 1
                if steps > limit { try fail("still busy after \(limit) steps of draining (livelock)") }
                continue
            }
            guard let next = nextTimed else { return }
            time = max(time + 1, next)
        }
    }

    /// The nodes linked to `node` through live links.
    func reachable(from node: Int) -> Set<Int> {
        var seen: Set<Int> = [node], todo = [node]
        while let next = todo.popLast() {
            for c in liveConnections where c.nodes.contains(next) {
                let other = c.nodes[1 - c.side(of: next)]
                if seen.insert(other).inserted { todo.append(other) }
            }
        }
        return seen
    }

    func runMesh(settleLimit: Int) throws(SimulationFailure) {
        stats.meshSeeds = 1
        roundTimers = false
        let fullMesh = below(4) == 0
        let cutTree = chance(0.5)
        var links: [(Int, Int)] = []
        if fullMesh {
            for a in 0..<n { for b in (a + 1)..<n { links.append((a, b)) } }
        } else {
            var order = Array(0..<n)
            for i in stride(from: n - 1, to: 0, by: -1) { order.swapAt(i, below(i + 1)) }
            links = (1..<n).map { i in (order[i], order[below(i)]) }
            var linked = Set(links.map { pair($0.0, $0.1) })
            for a in 0..<n { for b in (a + 1)..<n where !linked.contains(pair(a, b)) && chance(3.0 / Double(n)) { links.append((a, b)); linked.insert(pair(a, b)) } }
        }
        log("mesh of \(n) nodes, \(links.count) links\(cutTree ? ", tree edges cut" : "")")
        for (a, b) in links { try connect(a, b) }
        try drain(limit: settleLimit)
        // Warm-up: the first records flood; their duplicates prune the redundant links.
        for _ in 0..<4 {
            try create(at: below(n))
            try drain(limit: settleLimit)
        }
        // Measured: one to three records at once; on some seeds a tree edge with frames on it
        // is cut while they travel (redialled at the end).
        for _ in 0..<6 {
            var written: [(bytes: [UInt8], at: Int)] = []
            for _ in 0...below(3) {
                let node = below(n)
                if let bytes = try create(at: node) { measured[bytes] = node; written.append((bytes, node)) }
            }
            if cutTree {
                for _ in 0..<below(4 * n) { _ = try progressStep() }
                let eager = liveConnections.filter { c in !c.idle && (trees[c.nodes[0]].isEager(c.serial) || trees[c.nodes[1]].isEager(c.serial)) }
                if !eager.isEmpty {
                    stats.treeCuts += 1
                    cut(eager[below(eager.count)], "a tree edge cut mid-stream")
                }
            }
            try drain(limit: settleLimit)
            // Lazy push alone (no round has run) brought each record to every node still linked
            // to its writer: over the tree, or by a graft where a tree edge was cut.
            for w in written {
                let id = VerifiedRecord.id(of: w.bytes)
                for node in reachable(from: w.at) where replicas[node].byID[id] == nil {
                    try fail("node \(node) lacks \(Self.describe(w.bytes)) after lazy push, though linked to its writer \(w.at)")
                }
            }
        }
        try settle(links: links, settleLimit: settleLimit)
        let pairs = measured.count * (n - 1)
        let ratio = Double(bodies) / Double(max(1, pairs))
        log("bodies per node per measured record: \(bodies) / \(pairs) = \(ratio)")
        if cutTree {
            stats.bodiesCut = bodies; stats.pairsCut = pairs; stats.worstCut = ratio
        } else {
            stats.meshFaultFree = 1
            stats.bodiesFaultFree = bodies; stats.pairsFaultFree = pairs; stats.worstFaultFree = ratio
            if ratio > 1.2 { try fail("\(bodies) bodies for \(measured.count) records over \(n - 1) nodes each: \(ratio) a node per record (at most 1.2)") }
        }
    }
}

@Suite struct SyncSimulationTests {
    @Test func theSimulationTreeHashesLikeTheReferenceTree() {
        var g = SeededRandom(seed: 3)
        var sim = SimTree(), ref = MemoryReconTree([[UInt8]]())
        for i in 0..<600 {
            var id = (0..<32).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            if i % 3 == 0 { id[0] = 0x12; id[1] = 0x34 }   // some full leaves and deep paths
            sim.insert(id); ref.insert(id)
            if i % 97 == 0 { #expect(sim.node(depth: 0, prefix: 0) == ref.node(depth: 0, prefix: 0)) }
        }
        for (d, p) in [(0, UInt16(0)), (1, 0x1000), (2, 0x1200), (3, 0x1230), (4, 0x1234)] {
            #expect(sim.node(depth: d, prefix: p) == ref.node(depth: d, prefix: p))
            #expect(sim.ids(depth: d, prefix: p) == ref.ids(depth: d, prefix: p))
            #expect(sim.children(depth: min(d, 3), prefix: p).map(\.node) == ref.children(depth: min(d, 3), prefix: p).map(\.node))
        }
    }

    /// Steps of the faulty phase per seed (`MM_SIM_STEPS` for longer runs). 10,000 seeds (50 of
    /// them meshes) take ~1 min of CPU in a debug build on the development machine (this target
    /// is compiled -O; the MentorCore code it drives is -Onone there: ~3 min with both -Onone).
    static let faultSteps = ProcessInfo.processInfo.environment["MM_SIM_STEPS"].flatMap { Int($0) } ?? 64
    static let settleLimit = 50_000
    static let meshSettleLimit = 2_000_000
    /// One seed in this many is a 20-node mesh (`MM_SIM_MESH_EVERY`; 0: none).
    static let meshEvery = ProcessInfo.processInfo.environment["MM_SIM_MESH_EVERY"].flatMap { UInt64($0) } ?? 200

    static func isMesh(_ seed: UInt64) -> Bool { meshEvery > 0 && seed % meshEvery == 0 }

    fileprivate static func runOne(_ seed: UInt64, tracing: Bool) -> (Simulation, String?) {
        let mesh = isMesh(seed)
        let sim = Simulation(seed: seed, tracing: tracing, mesh: mesh)
        var failure: String? = nil
        do throws(SimulationFailure) {
            try sim.run(faultSteps: Self.faultSteps, settleLimit: mesh ? Self.meshSettleLimit : Self.settleLimit)
        } catch { failure = error.description }
        sim.stats.seeds = 1
        if sim.skewSteps > 0 { sim.stats.skewedSeeds = 1 }
        if sim.lazyPush && !mesh { sim.stats.lazySeeds = 1 }
        if sim.hostile != nil { sim.stats.hostileSeeds = 1 }
        return (sim, failure)
    }

    /// Runs seeds `first ..< first + count` on `threads` threads; the result does not depend on
    /// how they are spread (each seed is its own world).
    static func runSeeds(first: UInt64, count: UInt64, threads: Int) -> (SimulationStats, [(UInt64, String)]) {
        let results = Mutex<(SimulationStats, [(UInt64, String)])>((SimulationStats(), []))
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var stats = SimulationStats()
            var failures: [(UInt64, String)] = []
            var seed = first + UInt64(t)
            while seed < first + count {
                let (sim, failure) = runOne(seed, tracing: false)
                if let failure { failures.append((seed, failure)) }
                stats.add(sim.stats)
                seed += UInt64(threads)
            }
            results.withLock { $0.0.add(stats); $0.1 += failures }
        }
        return results.withLock { ($0.0, $0.1.sorted { $0.0 < $1.0 }) }
    }

    @Test(.tags(.slow)) func nodesUnderFaultsConvergeWithoutViolations() {
        let env = ProcessInfo.processInfo.environment
        if let seed = env["MM_SIM_SEED"].flatMap({ UInt64($0) }) {
            let (sim, failure) = Self.runOne(seed, tracing: true)
            print(sim.trace.joined(separator: "\n"))
            print("seed \(seed): \(sim.n) nodes, window \(sim.window), batch sizes \(sim.settings.map(\.batchSize)), lazy push \(sim.lazyPush), hostile \(sim.hostile.map { "node \($0)" } ?? "none"): \(failure ?? "all invariants held")")
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
            return
        }
        let first = env["MM_SIM_FIRST_SEED"].flatMap { UInt64($0) } ?? 1
        let count = env["MM_SIM_SEEDS"].flatMap { UInt64($0) } ?? 10_000
        let threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        let started = ContinuousClock.now
        let (total, failures) = Self.runSeeds(first: first, count: count, threads: threads)
        let elapsed = ContinuousClock.now - started
        func ratio(_ a: Int, _ b: Int) -> String { b == 0 ? "-" : String(format: "%.3f", Double(a) / Double(b)) }
        print("""
            sync simulation: \(total.seeds) seeds (\(first)...\(first + count - 1)), \(total.seeds - total.meshSeeds) of 5 nodes, \
            \(total.meshSeeds) of 20; \(failures.count) failed, \(elapsed) on \(threads) threads; \(total.steps) steps, \
            \(total.records) records written, \(total.frames) frames delivered, \(total.batches) batches, \(total.heldAcks) acks held, \(total.earlyAcks) batches acknowledged before their apply; \
            faults: \(total.cuts) link cuts, \(total.partitions) partitions, \(total.restarts) restarts, \
            \(total.frameFaults) frame faults (\(total.detected) detected), \(total.connects) connections; \
            \(total.duplicateRecords) records received twice; clock skew in \(total.skewedSeeds) seeds: \(total.heldUntilDue) records \
            held until due, \(total.deferred) deferred, \(total.wants) wants; \(total.forks) fork variants written, \
            \(total.rounds) rounds started by timers, \(total.reconMessages) recon messages; lazy push in \(total.lazySeeds) five-node \
            seeds and every mesh: \(total.ihaves) ihave, \(total.grafts) graft, \(total.prunes) prune; hostile node in \
            \(total.hostileSeeds) seeds: \(total.hostileActs) acts, \(total.hostileClosed) of its links closed with blame, \
            \(total.forgeriesRefused) forgeries refused; meshes: \(total.meshFaultFree) fault-free, bodies per node per record \
            \(ratio(total.bodiesFaultFree, total.pairsFaultFree)) (worst seed \(String(format: "%.3f", total.worstFaultFree))), \
            \(total.meshSeeds - total.meshFaultFree) with \(total.treeCuts) tree edges cut mid-stream: \
            \(ratio(total.bodiesCut, total.pairsCut)) (worst \(String(format: "%.3f", total.worstCut)))
            """)
        for (seed, message) in failures.prefix(10) {
            Issue.record("seed \(seed): \(message)\n  replay: MM_SIM_SEED=\(seed) swift test --skip-build --filter SyncSimulationTests")
        }
        // The run exercised what it claims to (a broken glue or character shows here).
        if count >= 1000 {
            #expect(total.ihaves > 0 && total.grafts > 0 && total.prunes > 0, "lazy push's messages all flow")
            #expect(total.earlyAcks > 0, "batches are acknowledged before their apply on some links")
            #expect(total.forks > 0 && total.hostileClosed > 0 && total.forgeriesRefused > 0)
            if Self.meshEvery > 0 && count >= 10 * Self.meshEvery {
                #expect(total.meshFaultFree > 0 && total.treeCuts > 0)
            }
        }
    }
}
