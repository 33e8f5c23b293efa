import Foundation
import MentorAPI
import MentorCore
import MentorStore
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate-bench reconcile`: issue 13's table — what reconciliation costs between real
/// daemons over loopback, whatever the sync protocol is. It only starts daemons, fills their
/// replicas before they start, counts bytes through `peers`' relay and reads `status`.
struct ReconcileCommand {
    static let name = "reconcile"
    static let all = ["a", "b", "c", "d", "e", "f", "g"]
    static let help = """
        USAGE: mentormate-bench reconcile [--only a,b,...] [--authors A] [--records R] [--differ D]
                                          [--backlog N] [--wide R:A,...] [--nodes N] [--mesh-records K]
                                          [--writes W] [--accounts K] [--seed S] [--timeout SECONDS]
                                          [--daemon PATH] [--keep]

        Starts the mentormated next to this binary (or --daemon PATH) over loopback, each with its
        own state directory (--no-mdns); replicas are filled with the `merge` workload (signed
        with RecordWriter) before their daemon starts. Pairs of nodes talk through a TCP relay
        in this process that counts the bytes each way (as in `peers`); for (a) and (b) the relay
        lets the link through only once both daemons serve and their CPU was sampled.

          (a) equal replicas: A and B hold the same R records of A authors (default 1,000,000 /
              100,000); B connects: bytes both ways until the link is quiet for 500 ms, and the
              CPU each daemon used meanwhile (/proc/PID/stat, in 10 ms ticks), measured once
              both daemons have been idle for 1 s after their start.
          (b) as (a) with D records differing (default 1,000): the last record of D authors, half
              only on A and half only on B; time until both hold all, bytes ÷ the differing
              records' bytes.
          (c) cold sync: B starts empty and takes the records A holds of the R written (fewer:
              superseded card edits are compacted, PROTOCOL.md §9.3); sync rate (from the link
              opening) ÷ the local merge rate (Replica.importBatches of the same records, A's, in
              (author, seq, ID) order into an empty replica, measured in the same run). (a), (b)
              likewise wait for the records the replicas hold, not the R written.
          (d) as (c) for a backlog of N records (default 15,000) from 100 authors (`peers`' case).
          (e) cold sync of R records from A authors for each --wide R:A (default
              15000:10000,100000:50000), against the same count from 100 authors: time ratio,
              and time per record held ratio (compaction leaves 100 authors' 150 records each
              far fewer records than one or two each, so the same count written is not the
              same count sent), and that per-held ratio against each run's local merge of the
              records it carried (what is left once the records' own cost is taken out: the
              100 authors' held records are mostly likes and chats, the 10,000's mostly first
              cards, which cost more to apply anywhere).
          (f) mesh: N daemons (default 20), node i listening on 127.0.0.(i+2) and dialling every
              earlier one (a full mesh; each dials from its own address, so no listener meets
              its per-address link limit); K records (default 10: a sign-up and card edits)
              written on node 0, one at a time once all hold the last; then the bodies
              received by all nodes (status `sync.bodiesReceived`, duplicates included) ÷ (N−1)
              ÷ K: bodies received per node per record, likewise IDs (`sync.idsAnnounced`),
              and the push payload (bodies × their bytes + IDs × 32). The first record settles
              the push tree (lazy push, PROTOCOL.md §13.7): the figures are given for it and
              for the rest. --eager runs the same with lazy push off (MENTORMATE_EAGER_PUSH=1:
              every body on every link), for the before/after.
          (g) size: W writes (default 1,000,000) by K accounts (default 10,000), half of them card
              edits, imported into a replica twice — every record kept (as before compaction) and
              compacted (PROTOCOL.md §9.3) — and each file size ÷ the live state's bytes. The live
              state is, per account, the latest record of each card field and of each like
              register (liker, target), plus every chat message — what a replica must keep.

        OPTIONS:
          --only LIST        workloads to run, comma-separated (default all: a,b,c,d,e,f,g)
          --authors A        authors for (a), (b), (c) (default 100000; 'k' suffix allowed)
          --records R        records for (a), (b), (c) (default 1000000)
          --differ D         differing records for (b) (default 1000; at most A)
          --backlog N        records for (d) (default 15000)
          --wide LIST        R:A pairs for (e) (default 15000:10000,100000:50000)
          --nodes N          daemons in (f)'s mesh (default 20)
          --mesh-records K   records written in (f) (default 10)
          --eager            (f) also with lazy push off, for comparison
          --writes W         writes for (g) (default 1000000)
          --accounts K       accounts writing them in (g) (default 10000)
          --seed S           seed of the workloads (default \(MergeCommand.defaultSeed))
          --timeout SECONDS  how long one sync may take before the run fails (default 600)
          --daemon PATH      the mentormated to run
          --keep             keep the temporary directory (daemon logs) and print its path
          -h, --help         show this help

        Targets (printed PASS/MISS): (a) < 4 KB on the wire and < 50 ms CPU each side; (b) < 3x the
        differing records' bytes and < 1 s; (c), (d) >= 0.85x the local merge rate; (e) <= 1.2x the
        time from 100 authors; (f) <= 1.2 bodies per node per record; (g) <= 2x the live state.
        Exit status: 0 measured (targets may still say MISS), 1 a run failed, 2 usage error.
        """

    var only = Set(all)
    var authors = 100_000
    var records = 1_000_000
    var differ = 1000
    var backlog = 15_000
    var wide: [(records: Int, authors: Int)] = [(15_000, 10_000), (100_000, 50_000)]
    var nodes = 20
    var meshRecords = 10
    var eager = false
    var writes = 1_000_000
    var accounts = 10_000
    var seed = MergeCommand.defaultSeed
    var timeout = 600
    var daemonPath: String?
    var keep = false

    enum Parsed { case help, run(ReconcileCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var c = ReconcileCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _): return .help
            case .option("--only", let v):
                let list = try reader.value(for: "--only", inline: v).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                guard !list.isEmpty, list.allSatisfy(all.contains) else {
                    throw UsageError("\(name): --only takes workloads among \(all.joined(separator: ",")), e.g. --only a,b")
                }
                c.only = Set(list)
            case .option("--authors", let v): c.authors = try reader.integer(for: "--authors", inline: v)
            case .option("--records", let v): c.records = try reader.integer(for: "--records", inline: v)
            case .option("--differ", let v): c.differ = try reader.integer(for: "--differ", inline: v)
            case .option("--backlog", let v): c.backlog = try reader.integer(for: "--backlog", inline: v)
            case .option("--wide", let v):
                let text = try reader.value(for: "--wide", inline: v)
                var pairs: [(Int, Int)] = []
                for item in text.split(separator: ",") {
                    let parts = item.split(separator: ":")
                    guard parts.count == 2, let r = Int(parts[0].replacingOccurrences(of: "k", with: "000")),
                          let a = Int(parts[1].replacingOccurrences(of: "k", with: "000")), a >= 2, r >= a else {
                        throw UsageError("\(name): --wide takes RECORDS:AUTHORS pairs with RECORDS >= AUTHORS >= 2, e.g. 15000:10000,100k:50k; got '\(item)'")
                    }
                    pairs.append((r, a))
                }
                guard !pairs.isEmpty else { throw UsageError("\(name): --wide needs at least one RECORDS:AUTHORS pair") }
                c.wide = pairs.map { (records: $0.0, authors: $0.1) }
            case .option("--nodes", let v): c.nodes = try reader.integer(for: "--nodes", inline: v)
            case .option("--mesh-records", let v): c.meshRecords = try reader.integer(for: "--mesh-records", inline: v)
            case .option("--eager", _): c.eager = true
            case .option("--writes", let v): c.writes = try reader.integer(for: "--writes", inline: v)
            case .option("--accounts", let v): c.accounts = try reader.integer(for: "--accounts", inline: v)
            case .option("--seed", let v): c.seed = UInt64(try reader.integer(for: "--seed", inline: v))
            case .option("--timeout", let v): c.timeout = try reader.integer(for: "--timeout", inline: v)
            case .option("--daemon", let v): c.daemonPath = try reader.value(for: "--daemon", inline: v)
            case .option("--keep", nil): c.keep = true
            case .option(let n, _): throw UsageError("\(name): unknown option '\(n)' (or a value given to a flag)")
            case .argument(let a): throw UsageError("\(name): unexpected argument '\(a)'")
            }
        }
        guard c.authors >= 2, c.records >= c.authors else { throw UsageError("\(name): --authors must be ≥ 2 and ≤ --records") }
        guard c.differ >= 2, c.differ <= c.authors else { throw UsageError("\(name): --differ must be between 2 and --authors (one record of each of D authors differs)") }
        guard c.backlog >= 100 else { throw UsageError("\(name): --backlog must be ≥ 100 (it is written by 100 authors)") }
        guard c.nodes >= 2, c.nodes <= 64 else { throw UsageError("\(name): --nodes must be between 2 and 64") }
        guard c.meshRecords >= 2 else { throw UsageError("\(name): --mesh-records must be ≥ 2 (a sign-up and at least one edit)") }
        guard c.accounts >= 2, c.writes >= c.accounts else { throw UsageError("\(name): --accounts must be ≥ 2 and ≤ --writes") }
        guard c.timeout >= 10 else { throw UsageError("\(name): --timeout must be ≥ 10 seconds") }
        return .run(c)
    }

    func run() -> Bool {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let daemon = daemonPath ?? bin + "/mentormated"
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            printError("error: \(daemon) not found; build it first (swift build -c release) or pass --daemon PATH")
            return false
        }
        let dir = NSTemporaryDirectory() + "mm-bench-reconcile-" + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            printError("error: cannot create \(dir): \(error)")
            return false
        }
        // The relay writes to sockets a daemon may have closed: an EPIPE, not a silent death.
        signal(SIGPIPE, SIG_IGN)
        let run = ReconcileRun(command: self, daemonPath: daemon, dir: dir)
        var failed = false
        print("mentormate-bench reconcile: workloads \(Self.all.filter(only.contains).joined(separator: ","))")
        for workload in Self.all where only.contains(workload) {
            do {
                try run.workload(workload)
            } catch {
                printError("error in (\(workload)): \(error)")
                for node in run.nodes { printError("--- last lines of \(node.name)'s log (\(node.logPath)):\n\(node.logTail())") }
                failed = true
            }
            run.stopAll()
        }
        print("")
        print("summary (workload, figure, target, verdict):")
        for line in run.summary { print("  " + line) }
        if keep || failed && ProcessInfo.processInfo.environment["MM_BENCH_KEEP"] != nil {
            print("kept \(dir)")
        } else {
            try? FileManager.default.removeItem(atPath: dir)
        }
        return !failed
    }
}

/// One run: the daemons of the workload under way (stopped by PID after each workload, also
/// after an error) and the summary lines so far.
private final class ReconcileRun {
    let command: ReconcileCommand
    let daemonPath: String
    let dir: String
    var nodes: [BenchNode] = []
    var relays: [CountingRelay] = []
    var summary: [String] = []
    private var serial = 0

    init(command: ReconcileCommand, daemonPath: String, dir: String) {
        self.command = command
        self.daemonPath = daemonPath
        self.dir = dir
    }

    func stopAll() {
        for relay in relays { relay.close() }
        for node in nodes { node.stop() }
        relays = []
        nodes = []
    }

    func workload(_ name: String) throws {
        print("")
        switch name {
        case "a": try equalReplicas()
        case "b": try differingReplicas()
        case "c": try coldSync(records: command.records, authors: command.authors, label: "(c)")
        case "d": try coldSync(records: command.backlog, authors: 100, label: "(d)")
        case "e": try wideAuthors()
        case "f":
            try mesh(lazy: true)
            if command.eager { stopAll(); try mesh(lazy: false) }
        case "g": try replicaSize()
        default: break
        }
        fflush(nil)
    }

    // MARK: (a), (b): reconnecting replicas

    private func equalReplicas() throws {
        let c = command
        print("(a) equal replicas: \(Format.grouped(c.records)) records from \(Format.grouped(c.authors)) authors on A and on B")
        let (a, b) = try pairDirs()
        let file = try generate(records: c.records, authors: c.authors, seed: c.seed)
        _ = try importFile(file, into: a)
        try? FileManager.default.removeItem(atPath: file)
        try copyReplica(from: a, to: b)
        // Compaction (PROTOCOL.md §9.3) keeps fewer records than were written: wait for what A holds.
        let r = try reconnect(a: a, b: b, expected: try heldRecords(a))
        let kb = Double(r.wire.total) / 1024
        let cpuMax = max(r.cpuA, r.cpuB)
        print("    wire: \(Format.grouped(r.wire.aToB)) bytes A→B + \(Format.grouped(r.wire.bToA)) B→A = \(Format.fixed(kb, 2)) KB"
              + "   target < 4 KB   \(kb < 4 ? "PASS" : "MISS")")
        print("    cpu until quiet: A \(Format.fixed(r.cpuA * 1000, 1)) ms, B \(Format.fixed(r.cpuB * 1000, 1)) ms"
              + " (link opened at \(Format.millis(r.linkOpened)), quiet from \(Format.millis(r.lastByte)))"
              + "   target < 50 ms each   \(cpuMax < 0.05 ? "PASS" : "MISS")")
        summary.append("(a) equal replicas \(Format.grouped(c.authors))/\(Format.grouped(c.records)): \(Format.fixed(kb, 2)) KB, "
                       + "cpu A \(Format.fixed(r.cpuA * 1000, 1)) ms B \(Format.fixed(r.cpuB * 1000, 1)) ms"
                       + "   < 4 KB, < 50 ms   \(kb < 4 && cpuMax < 0.05 ? "PASS" : "MISS")")
    }

    private func differingReplicas() throws {
        let c = command
        print("(b) \(Format.grouped(c.records)) records from \(Format.grouped(c.authors)) authors, \(Format.grouped(c.differ)) differing "
              + "(the last record of \(Format.grouped(c.differ)) authors: half only on A, half only on B)")
        let (a, b) = try pairDirs()
        let file = try generate(records: c.records, authors: c.authors, seed: c.seed)
        // Every author's last record, by author; D of them (in the file's author order) differ.
        var last: [PublicKey: (seq: UInt64, bytes: [UInt8])] = [:]
        var order: [PublicKey] = []
        for batch in try RecordFileReader(path: file, batchSize: 4096) {
            for bytes in batch {
                let p = try RecordPosition.peek(bytes)
                if last[p.author] == nil { order.append(p.author) }
                if p.seq >= last[p.author]?.seq ?? 0 { last[p.author] = (p.seq, bytes) }
            }
        }
        let differing = order.prefix(c.differ).compactMap { last[$0]?.bytes }
        let onlyA = stride(from: 0, to: differing.count, by: 2).map { differing[$0] }
        let onlyB = stride(from: 1, to: differing.count, by: 2).map { differing[$0] }
        let excluded = Set(differing)
        let common = dir + "/common-\(serial).records"
        let writer = try RecordFileWriter(path: common)
        for batch in try RecordFileReader(path: file, batchSize: 4096) {
            for bytes in batch where !excluded.contains(bytes) {
                var w = ByteWriter(capacity: 4 + bytes.count)
                w.u32(UInt32(bytes.count))
                w.raw(bytes)
                try writer.write(w.bytes[...])
            }
        }
        try writer.close()
        // What both hold once reconciled: the whole workload, compacted (PROTOCOL.md §9.3).
        let whole = dir + "/\(serial)-whole"
        try FileManager.default.createDirectory(atPath: whole, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = try importFile(file, into: whole)
        let expected = try heldRecords(whole)
        try? FileManager.default.removeItem(atPath: whole)
        try? FileManager.default.removeItem(atPath: file)
        _ = try importFile(common, into: a)
        try? FileManager.default.removeItem(atPath: common)
        try copyReplica(from: a, to: b)
        for (state, extra) in [(a, onlyA), (b, onlyB)] {
            let replica = try Replica(path: state + "/replica.db")
            let outcomes = try replica.apply(batch: extra)
            try replica.close()
            guard outcomes.allSatisfy({ $0 == .applied }) else { throw BenchFailure("the differing records were not all applied: \(outcomes)") }
        }
        let differingBytes = differing.reduce(0) { $0 + $1.count }
        let r = try reconnect(a: a, b: b, expected: expected)
        let ratio = Double(r.wire.total) / Double(max(1, differingBytes))
        print("    both hold all \(Format.grouped(expected)) at \(Format.millis(r.done)) after the link opened "
              + "(\(Format.millis(r.linkOpened)) after the relay let it through)   target < 1 s   \(r.done < .seconds(1) ? "PASS" : "MISS")")
        print("    wire: \(Format.grouped(r.wire.aToB)) bytes A→B + \(Format.grouped(r.wire.bToA)) B→A = \(Format.grouped(r.wire.total)); "
              + "differing records \(Format.grouped(differingBytes)) bytes: \(Format.ratio(ratio))   target < 3x   \(ratio < 3 ? "PASS" : "MISS")")
        print("    cpu until quiet: A \(Format.fixed(r.cpuA * 1000, 1)) ms, B \(Format.fixed(r.cpuB * 1000, 1)) ms")
        summary.append("(b) \(Format.grouped(c.differ)) differing of \(Format.grouped(c.records)): \(Format.ratio(ratio)) their bytes, "
                       + "\(Format.millis(r.done))   < 3x, < 1 s   \(ratio < 3 && r.done < .seconds(1) ? "PASS" : "MISS")")
    }

    struct Reconnect {
        var wire: CountingRelay.Snapshot
        var cpuA: Double, cpuB: Double
        /// From letting the link through: to its first byte, to both holding everything, to the last byte.
        var linkOpened: Duration, done: Duration, lastByte: Duration
    }

    /// Starts A and B (B dials A through a relay that holds the link back), samples their CPU
    /// once both serve, lets the link through, and waits until both hold `expected` records and
    /// the link is quiet for 500 ms.
    private func reconnect(a: String, b: String, expected: Int) throws -> Reconnect {
        let nodeA = try start("A", a)
        let relay = try CountingRelay(targetPort: try listenPort(nodeA.socket), gated: true)
        relays.append(relay)
        let nodeB = try start("B", b, extra: ["--peer", "127.0.0.1:\(relay.port)"])
        try settle(nodeA, nodeB)   // both done with their start-up work
        let cpuA0 = nodeA.cpuSeconds(), cpuB0 = nodeB.cpuSeconds()
        let opened = ContinuousClock.now
        relay.letThrough()
        let deadline = opened + .seconds(command.timeout)
        let clientA = try RPCClient(path: nodeA.socket, timeout: .seconds(30)), clientB = try RPCClient(path: nodeB.socket, timeout: .seconds(30))
        defer { clientA.close(); clientB.close() }
        while try records(clientA) < expected || records(clientB) < expected {
            guard ContinuousClock.now < deadline else {
                throw BenchFailure("A holds \(try records(clientA)), B \(try records(clientB)) of \(expected) records \(command.timeout) s after the link opened; relay: \(relay.snapshot())")
            }
            usleep(10_000)   // every 10 ms (a `status` each 5 ms was itself a load on the daemon measured)
        }
        let done = ContinuousClock.now
        guard relay.snapshot().connections > 0 else { throw BenchFailure("B never dialled A through the relay") }
        _ = relay.waitForQuiet(.milliseconds(500), atMost: .seconds(10))
        let wire = relay.snapshot()
        let cpuA = nodeA.cpuSeconds() - cpuA0, cpuB = nodeB.cpuSeconds() - cpuB0
        return Reconnect(wire: wire, cpuA: cpuA, cpuB: cpuB, linkOpened: (wire.firstConnection ?? opened) - opened,
                         done: done - (wire.firstConnection ?? opened), lastByte: (wire.lastByte ?? opened) - opened)
    }

    // MARK: (c), (d), (e): cold sync

    struct ColdSync {
        var mergeRate: Double, syncRate: Double
        /// Records A held (what B took): fewer than written, compaction.
        var held: Int
        var fromLink: Duration
        var wire: Int, recordBytes: Int
        var cpuA: Double, cpuB: Double
    }

    @discardableResult
    private func coldSync(records n: Int, authors: Int, label: String, quiet: Bool = false) throws -> ColdSync {
        if !quiet { print("\(label) cold sync: \(Format.grouped(n)) records from \(Format.grouped(authors)) authors, A → an empty B") }
        let (a, b) = try pairDirs()
        let file = try generate(records: n, authors: authors, seed: command.seed)
        let written = try importFile(file, into: a)
        try? FileManager.default.removeItem(atPath: file)
        // Compaction keeps fewer records than were written (PROTOCOL.md §9.3); B gets what A
        // holds. The local merge rate is that of the same records: A's, imported (in the order
        // a sync reads them) into an empty replica.
        let held = try heldRecords(a)
        let heldFile = dir + "/held-\(serial).records"
        _ = try exportHeld(a, to: heldFile)
        let scratch = dir + "/\(serial)-merge"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let mergeCPU0 = CPUSample.now().own
        let imported = try importFile(heldFile, into: scratch)
        let mergeCPU = CPUSample.now().own - mergeCPU0
        try? FileManager.default.removeItem(atPath: heldFile)
        try? FileManager.default.removeItem(atPath: scratch)
        let mergeRate = Double(held) / imported.seconds
        let recordBytes = try replicaBytes(a)
        let nodeA = try start("A", a)
        let relay = try CountingRelay(targetPort: try listenPort(nodeA.socket))
        relays.append(relay)
        let cpuA0 = nodeA.cpuSeconds()
        let startB = ContinuousClock.now
        let nodeB = try start("B", b, extra: ["--peer", "127.0.0.1:\(relay.port)"])
        let client = try RPCClient(path: nodeB.socket, timeout: .seconds(30))
        defer { client.close() }
        let deadline = startB + .seconds(command.timeout)
        while try records(client) < held {
            guard ContinuousClock.now < deadline else {
                throw BenchFailure("B holds \(try records(client)) of \(held) records \(command.timeout) s after it started; relay: \(relay.snapshot())")
            }
            usleep(10_000)   // every 10 ms (a `status` each 5 ms was itself a load on the daemon measured)
        }
        let done = ContinuousClock.now
        let cpuA = nodeA.cpuSeconds() - cpuA0, cpuB = nodeB.cpuSeconds()
        let wire = relay.snapshot()
        let fromLink = done - (wire.firstConnection ?? startB)
        let syncRate = Double(held) / fromLink.seconds
        let result = ColdSync(mergeRate: mergeRate, syncRate: syncRate, held: held, fromLink: fromLink, wire: wire.total,
                              recordBytes: recordBytes, cpuA: cpuA, cpuB: cpuB)
        stopAll()
        if !quiet {
            let ratio = syncRate / mergeRate
            print("    A holds \(Format.grouped(held)) of the \(Format.grouped(n)) written (compaction; imported in \(Format.seconds(written)))")
            print("    local merge (A's \(Format.grouped(held)) records imported into an empty replica): \(Format.grouped(Int(mergeRate))) records/s "
                  + "(\(Format.seconds(imported)), cpu \(Format.fixed(mergeCPU, 2)) s)")
            print("    sync: all held \(Format.seconds(fromLink)) after the link opened (\(Format.seconds(done - startB)) after B started): "
                  + "\(Format.grouped(Int(syncRate))) records/s; cpu A \(Format.fixed(cpuA, 2)) s, B \(Format.fixed(cpuB, 2)) s; "
                  + "wire \(Format.ratio(Double(wire.total) / Double(max(1, recordBytes)))) the records' bytes; "
                  + "cpu B ÷ merge cpu \(Format.ratio(cpuB / max(0.001, mergeCPU)))")
            print("    sync ÷ local merge \(Format.ratio(ratio))   target >= 0.85x   \(ratio >= 0.85 ? "PASS" : "MISS")")
            summary.append("\(label) cold sync \(Format.grouped(n)) from \(Format.grouped(authors)) authors: \(Format.ratio(ratio)) the local merge rate"
                           + " (\(Format.grouped(Int(syncRate))) vs \(Format.grouped(Int(mergeRate))) records/s)   >= 0.85x   \(ratio >= 0.85 ? "PASS" : "MISS")")
        }
        return result
    }

    private func wideAuthors() throws {
        print("(e) cold sync from many authors against the same count from 100")
        for (n, authors) in command.wide {
            let narrow = try coldSync(records: n, authors: 100, label: "(e)", quiet: true)
            let wide = try coldSync(records: n, authors: authors, label: "(e)", quiet: true)
            let ratio = wide.fromLink.seconds / narrow.fromLink.seconds
            // Compaction leaves more of the written records from many authors (fewer edits each):
            // the time per record held, too.
            let perHeld = (wide.fromLink.seconds / Double(max(1, wide.held))) / (narrow.fromLink.seconds / Double(max(1, narrow.held)))
            print("    \(Format.grouped(n)) written, held \(Format.grouped(narrow.held)) from 100 authors, \(Format.grouped(wide.held)) from "
                  + "\(Format.grouped(authors)); per record held \(Format.ratio(perHeld)); sync rate ÷ merge: 100 authors "
                  + "\(Format.ratio(narrow.syncRate / narrow.mergeRate)), \(Format.grouped(authors)) \(Format.ratio(wide.syncRate / wide.mergeRate))")
            print("    \(Format.grouped(n)) records: from 100 authors \(Format.seconds(narrow.fromLink)), from \(Format.grouped(authors)) "
                  + "\(Format.seconds(wide.fromLink)) (wire \(Format.ratio(Double(wide.wire) / Double(max(1, wide.recordBytes)))), "
                  + "cpu B \(Format.fixed(wide.cpuB, 2)) s): \(Format.ratio(ratio))   target <= 1.2x   \(ratio <= 1.2 ? "PASS" : "MISS")")
            print("    per record held: \(Format.ratio(perHeld))   target <= 1.2x   \(perHeld <= 1.2 ? "PASS" : "MISS")")
            // The two runs hold different records: compaction leaves 100 authors mostly likes and
            // chats (their card edits supersede each other), 10,000 authors mostly first cards,
            // which cost more to apply locally too. Each sync against the local merge of the
            // very records it carried isolates what the number of authors costs the sync.
            let perMerge = (narrow.syncRate / narrow.mergeRate) / (wide.syncRate / wide.mergeRate)
            print("    time per record held ÷ the local merge's, \(Format.grouped(authors)) authors against 100: \(Format.ratio(perMerge))"
                  + "   (1.0: the sync adds nothing per author; local merge \(Format.grouped(Int(wide.mergeRate))) vs "
                  + "\(Format.grouped(Int(narrow.mergeRate))) records/s)")
            summary.append("(e) \(Format.grouped(n)) records from \(Format.grouped(authors)) authors: \(Format.ratio(ratio)) the time from 100"
                           + " (\(Format.seconds(wide.fromLink)) vs \(Format.seconds(narrow.fromLink)); held \(Format.grouped(wide.held)) vs "
                           + "\(Format.grouped(narrow.held)))   <= 1.2x   \(ratio <= 1.2 ? "PASS" : "MISS")")
            summary.append("(e) \(Format.grouped(n)) from \(Format.grouped(authors)) authors, per record held: \(Format.ratio(perHeld)) the time from 100"
                           + "   <= 1.2x   \(perHeld <= 1.2 ? "PASS" : "MISS")")
            summary.append("(e) \(Format.grouped(n)) from \(Format.grouped(authors)) authors, per record held against each run's local merge: "
                           + "\(Format.ratio(perMerge)) the 100 authors' (for reading, no target)")
        }
    }

    // MARK: (f): a mesh

    private func mesh(lazy: Bool) throws {
        let n = command.nodes, k = command.meshRecords
        let label = lazy ? "lazy push" : "eager push (MENTORMATE_EAGER_PUSH=1)"
        print("(f) mesh of \(n) daemons on 127.0.0.2 ... 127.0.0.\(n + 1) (each dials every earlier one), \(k) records written on node 0, \(label)")
        var ports: [Int] = []
        var clients: [RPCClient] = []
        defer { clients.forEach { $0.close() } }
        func host(_ i: Int) -> String { "127.0.0.\(i + 2)" }
        // One node at a time, each linked to all before it before the next starts: 190 handshakes
        // at once on a small machine run past the handshake timeout (and earn penalties).
        let linked = ContinuousClock.now + .seconds(command.timeout)
        for i in 0..<n {
            serial += 1
            let state = dir + "/mesh-\(serial)-\(i)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let node = try BenchNode(name: "N\(i)", path: daemonPath, stateDir: state, socket: state + ".sock", logPath: state + ".log",
                                     listen: "\(host(i)):0", extra: ports.indices.flatMap { ["--peer", "\(host($0)):\(ports[$0])"] },
                                     environment: lazy ? [:] : ["MENTORMATE_EAGER_PUSH": "1"])
            nodes.append(node)
            try node.waitUntilServing()
            ports.append(try listenPort(node.socket))
            let client = try RPCClient(path: node.socket, timeout: .seconds(30))
            clients.append(client)
            while try client.call("status")["peers"]?.intValue ?? 0 < Int64(i) {
                if let full = nodes.first(where: { $0.logTail(lines: 200).contains("limit reached") }) {
                    throw BenchFailure("\(full.name) refused links over its per-address limit: this daemon does not dial from its listen address")
                }
                guard ContinuousClock.now < linked else {
                    let counts = try clients.map { try $0.call("status")["peers"]?.intValue ?? 0 }
                    throw BenchFailure("the mesh did not link up: peers per node \(counts)")
                }
                usleep(20_000)
            }
        }
        while try clients.contains(where: { try $0.call("status")["peers"]?.intValue ?? 0 < Int64(n - 1) }) {
            guard ContinuousClock.now < linked else {
                let counts = try clients.map { try $0.call("status")["peers"]?.intValue ?? 0 }
                throw BenchFailure("the mesh did not link up: peers per node \(counts)")
            }
            usleep(50_000)
        }
        print("    linked: every node has \(n - 1) peers")
        struct Totals { var bodies = 0, ids = 0 }
        func totals() throws -> Totals {
            var t = Totals()
            for client in clients.dropFirst() {
                let s = try client.call("status")
                guard let b = s["sync"]?["bodiesReceived"]?.intValue, let i = s["sync"]?["idsAnnounced"]?.intValue else {
                    throw BenchFailure("`status` has no sync.bodiesReceived / sync.idsAnnounced: this daemon does not count them")
                }
                t.bodies += Int(b); t.ids += Int(i)
            }
            return t
        }
        let deadline = ContinuousClock.now + .seconds(command.timeout)
        /// Until all hold `total` and no counter moves for 500 ms.
        func settle(_ total: Int) throws -> Totals {
            while try clients.contains(where: { try records($0) < total }) {
                guard ContinuousClock.now < deadline else { throw BenchFailure("not every node holds \(total) records after \(command.timeout) s") }
                usleep(20_000)
            }
            var last = try totals(), stableSince = ContinuousClock.now
            while ContinuousClock.now - stableSince < .milliseconds(500), ContinuousClock.now < deadline {
                usleep(100_000)
                let now = try totals()
                if now.bodies != last.bodies || now.ids != last.ids { last = now; stableSince = .now }
            }
            return last
        }
        let writer = clients[0]
        let start = try totals()
        var total = try records(writer)
        _ = try writer.call("account.signup", ["email": "mesh@uni.edu", "name": "Mesh Writer", "role": "student"])
        total += 1
        let first = try settle(total)
        for i in 1..<k {
            _ = try writer.call("profile.set", ["bio": .string("mesh edit \(i)")])
            // An edit supersedes the one before it (compaction drops it, PROTOCOL.md §9.3): every
            // node must hold what the writer holds, not one more record each time.
            total = try records(writer)
            _ = try settle(total)
        }
        let end = try totals()
        let others = Double(n - 1)
        // The mean record's bytes, from node 0's replica (read-only beside the running daemon).
        let meanRecord = ((try? replicaBytes(dir + "/mesh-\(serial - n + 1)-0")) ?? 250 * total) / max(1, total)
        func report(_ what: String, _ from: Totals, _ to: Totals, records: Int) -> (bodies: Double, ids: Double) {
            let b = Double(to.bodies - from.bodies) / others / Double(records)
            let i = Double(to.ids - from.ids) / others / Double(records)
            // Push payload per node per record: the record encodings and 32 bytes per ID
            // (message headers, framing and encryption aside).
            let bytes = b * Double(meanRecord) + i * 32
            print("    \(what): bodies per node per record \(Format.fixed(b, 2)), IDs per node per record \(Format.fixed(i, 2)), "
                  + "push payload \(Format.grouped(Int(bytes))) bytes per node per record (\(meanRecord)-byte records)")
            return (b, i)
        }
        _ = report("first record (the tree forms)", start, first, records: 1)
        let settled = report("records 2 ... \(k) (the tree formed)", first, end, records: k - 1)
        let all = report("all \(k) records", start, end, records: k)
        let pass = settled.bodies <= 1.2
        print("    bodies per node per record once the tree formed \(Format.fixed(settled.bodies, 2))   target <= 1.2   \(pass ? "PASS" : "MISS")")
        summary.append("(f) \(n)-node mesh, \(label): \(Format.fixed(settled.bodies, 2)) bodies/node/record once the tree formed "
                       + "(\(Format.fixed(all.bodies, 2)) over all \(k)), \(Format.fixed(settled.ids, 2)) IDs/node/record   <= 1.2   \(lazy ? (pass ? "PASS" : "MISS") : "(baseline)")")
    }

    // MARK: (g): replica size

    private func replicaSize() throws {
        let c = command
        print("(g) replica size: \(Format.grouped(c.writes)) writes by \(Format.grouped(c.accounts)) accounts, half card edits")
        let file = dir + "/size-\(serial + 1).records"
        let stats = try Workload(records: c.writes, authors: c.accounts, seed: c.seed, cardShare: 50).write(to: file)
        defer { try? FileManager.default.removeItem(atPath: file) }
        print("    written \(Format.grouped(stats.records)) records (\(stats.profiles) card, \(stats.likes) likes, \(stats.chats) chats), "
              + "\(Format.megabytes(stats.bytes)); live state: \(Format.grouped(stats.liveRecords)) records, \(Format.megabytes(stats.liveBytes))")
        // Before: every record kept (what a replica did before compaction, PROTOCOL.md §9.3);
        // after: superseded card records dropped as they are superseded.
        var ratios: [(String, Double, Int)] = []
        for (label, compaction) in [("history kept (before)", false), ("compacted (after)", true)] {
            serial += 1
            let state = dir + "/size-\(serial)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var settings = Replica.Settings()
            settings.compaction = compaction
            let took = try importFile(file, into: state, settings: settings)
            // Through a daemon start, as a node would be: whatever it maintains at start runs too.
            let node = try start("G\(serial)", state)
            let client = try RPCClient(path: node.socket, timeout: .seconds(30))
            let held = try records(client)
            client.close()
            stopAll()
            let size = try fileSize(state + "/replica.db") + ((try? fileSize(state + "/replica.db-wal")) ?? 0)
            let ratio = Double(size) / Double(max(1, stats.liveBytes))
            print("    \(label): the replica holds \(Format.grouped(held)) records, files \(Format.megabytes(size)): "
                  + "\(Format.ratio(ratio)) the live state (import \(Format.seconds(took)))")
            ratios.append((label, ratio, size))
            try? FileManager.default.removeItem(atPath: state)
        }
        guard let before = ratios.first, let after = ratios.last else { return }
        print("    compaction: \(Format.ratio(after.1)) vs \(Format.ratio(before.1)) before   target <= 2x   \(after.1 <= 2 ? "PASS" : "MISS")")
        summary.append("(g) \(Format.grouped(c.writes)) writes by \(Format.grouped(c.accounts)): replica \(Format.ratio(after.1)) the live state"
                       + " (\(Format.megabytes(after.2)) vs \(Format.megabytes(stats.liveBytes)); \(Format.ratio(before.1)) without compaction)"
                       + "   <= 2x   \(after.1 <= 2 ? "PASS" : "MISS")")
    }

    // MARK: Helpers

    private func pairDirs() throws -> (String, String) {
        serial += 1
        let a = dir + "/\(serial)-a", b = dir + "/\(serial)-b"
        for d in [a, b] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        return (a, b)
    }

    private func generate(records: Int, authors: Int, seed: UInt64) throws -> String {
        serial += 1
        let file = dir + "/workload-\(serial).records"
        let started = ContinuousClock.now
        _ = try Workload(records: records, authors: authors, seed: seed).write(to: file)
        print("    generated \(Format.grouped(records)) records from \(Format.grouped(authors)) authors in \(Format.seconds(ContinuousClock.now - started)) (not measured)")
        fflush(nil)   // progress shows as it goes, also into a file
        return file
    }

    /// Imports a workload file into the replica of a state directory; the time it took.
    private func importFile(_ file: String, into state: String, settings: Replica.Settings = Replica.Settings()) throws -> Duration {
        let replica = try Replica(path: state + "/replica.db", settings: settings)
        let started = ContinuousClock.now
        let summary = try replica.importBatches(try RecordFileReader(path: file, batchSize: 1000))
        let elapsed = ContinuousClock.now - started
        try replica.close()
        guard summary.refused == 0 else { throw BenchFailure("importing the workload refused records: \(summary)") }
        return elapsed
    }

    private func copyReplica(from a: String, to b: String) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: a + "/replica.db" + suffix) {
            try FileManager.default.copyItem(atPath: a + "/replica.db" + suffix, toPath: b + "/replica.db" + suffix)
        }
    }

    /// The records a state directory's replica holds (fewer than were imported: compaction).
    private func heldRecords(_ state: String) throws -> Int {
        let db = try Database(path: state + "/replica.db", options: .init(readOnly: true))
        defer { try? db.close() }
        return Int(try db.queryOne("SELECT count(*) FROM records")?.int64(0) ?? 0)
    }

    /// Writes the records a replica holds to a record file, in the order a sync reads them
    /// (author, seq, ID); how many.
    private func exportHeld(_ state: String, to file: String) throws -> Int {
        let db = try Database(path: state + "/replica.db", options: .init(readOnly: true))
        defer { try? db.close() }
        let writer = try RecordFileWriter(path: file)
        var count = 0
        for row in try db.query("SELECT bytes FROM records ORDER BY author, seq, id") {
            guard let bytes = row.blob(0) else { continue }
            var w = ByteWriter(capacity: 4 + bytes.count)
            w.u32(UInt32(bytes.count))
            w.raw(bytes)
            try writer.write(w.bytes[...])
            count += 1
        }
        try writer.close()
        return count
    }

    private func replicaBytes(_ state: String) throws -> Int {
        let db = try Database(path: state + "/replica.db", options: .init(readOnly: true))
        defer { try? db.close() }
        return Int(try db.queryOne("SELECT coalesce(sum(length(bytes)), 0) FROM records")?.int64(0) ?? 0)
    }

    private func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }

    private func start(_ name: String, _ state: String, extra: [String] = []) throws -> BenchNode {
        let node = try BenchNode(name: name, path: daemonPath, stateDir: state, socket: state + ".sock", logPath: state + ".log", extra: extra)
        nodes.append(node)
        try node.waitUntilServing()
        return node
    }

    /// Waits until none of `nodes` has used CPU for 1 s (their start-up work — opening the
    /// replica, checking its tree, the first photo look-up — is over), so that what is
    /// measured next is the reconnect alone. At most 60 s.
    private func settle(_ nodes: BenchNode...) throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var last = nodes.map { $0.cpuTicks() }, quietSince = ContinuousClock.now
        while ContinuousClock.now - quietSince < .seconds(1) {
            guard ContinuousClock.now < deadline else { throw BenchFailure("the daemons kept using CPU for 60 s after their start") }
            usleep(100_000)
            let now = nodes.map { $0.cpuTicks() }
            if now != last { last = now; quietSince = .now }
        }
    }

    private func records(_ client: RPCClient) throws -> Int {
        Int(try client.call("status")["records"]?.intValue ?? 0)
    }

    private func listenPort(_ socket: String) throws -> Int {
        let client = try RPCClient(path: socket, timeout: .seconds(30))
        defer { client.close() }
        let status = try client.call("status")
        guard let port = status["listen"]?["port"]?.intValue, port > 0 else { throw BenchFailure("no listen port in \(status)") }
        return Int(port)
    }
}

extension BenchNode {
    /// CPU time the process has used, in seconds (utime + stime, exited threads included).
    func cpuSeconds() -> Double {
        Double(cpuTicks()) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
