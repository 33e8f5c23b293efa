import Foundation
import MentorCore
import MentorCrypto
import MentorStore

/// `mentormate-bench merge`: how fast an empty file replica takes a full sync, next to the two
/// limits that bound it (signature verification on one core, raw SQLite inserts).
struct MergeCommand {
    static let name = "merge"

    static let help = """
        USAGE: mentormate-bench merge [--records N] [--authors M] [--batch B] [--seed S] [--breakdown]
                                      [--devices D [--rounds R]]

        Generates N signed records from M authors with RecordWriter (about 60% profile edits, 25%
        likes, 15% chats; keys, contents and order follow from the seed, only the sealed boxes'
        nonces are random), in each author's seq order but interleaved across authors as a sync
        delivers them, and writes them to a temporary file. Generation is not measured.
        Then, streaming that file, measures:
          1. verify, 1 core: decode + Ed25519 verify of every record in a plain loop
          2. raw insert: the same rows into a bare table shaped like `records`, 1000 per transaction
          3. merge: Replica.importBatches into an empty file replica (verify on all cores,
             pipelined with apply + commit of the previous batch)
          1'. verify, 1 core, again on the first 20000 records right after the merge
        (run in the order 2, 1, 3, 1') and prints records/s, the ratios (merge against the mean of
        1 and 1', which cancels a drift of the machine's speed during the run), peak RSS per
        phase, the replica's counts and its integrity check. A last calibration verifies 20000
        records on all cores with nothing else running: how far the cores scale on this machine
        now, which bounds the merge.

        OPTIONS:
          --records N   records to generate (default 100000; 'k' suffix allowed: 20k)
          --authors M   authors writing them, at least 2 (default 100)
          --batch B     records per merge batch / transaction (default 2000)
          --seed S      seed of the workload (default \(defaultSeed))
          --breakdown   also run verify and apply one after the other (not pipelined), each
                        timed alone, into a second replica: where the merge's time goes
          --devices D   then the same records signed by D device keys per account (1...32;
                        issue 15): C, each account writes its first card with the account key,
                        certifies D devices, and the devices sign the rest round-robin, each card
                        edit's clock naming all the account's earlier edits. Merged next to the
                        history above (A) and to a control (B: A plus the certificates, the
                        account key signing everything), in turn, --rounds times; prints the
                        medians' records/s, us/record (also per content record, the same in all
                        three), wall and CPU time, the ratio C/A, and what certificates (B - A)
                        and device-signed records with their certificate checks (C - B) cost;
                        with --breakdown, also each stage alone. Checks that B and C end with
                        A's cards, no conflicts, and A's records plus the certificates.
          --rounds R    merges of each history with --devices (default 3, at most 25)
          -h, --help    show this help

        Targets (printed PASS/MISS): merge >= 1.5 x verify-1-core; peak RSS of the merge < 100 MB;
        with --devices, device-signed records with their certificate checks (C - B) cost <= 10%
        of A's merge, in CPU time (this process, all threads; on a shared machine one merge's wall
        time swings by tens of percent, its CPU time less): C - B is taken within each round, PASS
        if every round's is within the target, MISS if none is, else UNDECIDED (more --rounds, or
        a quieter machine, or count instructions with valgrind --tool=callgrind).
        Exit status: 0 measured, 1 run failed or the replica is wrong, 2 usage error.
        """

    static let defaultSeed: UInt64 = 20_250_615

    var records = 100_000
    var authors = 100
    var batchSize = 2000
    var seed = defaultSeed
    var breakdown = false
    var devices = 0
    var rounds = 3

    enum Parsed { case help, run(MergeCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = MergeCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _):
                return .help
            case .option("--records", let v):
                command.records = try reader.integer(for: "--records", inline: v)
            case .option("--authors", let v):
                command.authors = try reader.integer(for: "--authors", inline: v)
            case .option("--batch", let v):
                command.batchSize = try reader.integer(for: "--batch", inline: v)
            case .option("--breakdown", let v):
                guard v == nil else { throw UsageError("\(name): --breakdown takes no value") }
                command.breakdown = true
            case .option("--devices", let v):
                command.devices = try reader.integer(for: "--devices", inline: v)
            case .option("--rounds", let v):
                command.rounds = try reader.integer(for: "--rounds", inline: v)
            case .option("--seed", let v):
                command.seed = UInt64(try reader.integer(for: "--seed", inline: v))
            case .option(let other, _):
                throw UsageError("\(name): unknown option '\(other)'")
            case .argument(let other):
                throw UsageError("\(name): unexpected argument '\(other)'")
            }
        }
        return .run(command)
    }

    func validate() throws(UsageError) {
        guard authors >= 2 else {
            throw UsageError("--authors must be at least 2 (likes and chats need someone else), got \(authors)")
        }
        guard authors <= 100_000 else { throw UsageError("--authors is at most 100000, got \(authors)") }
        guard records >= authors else {
            throw UsageError("--records (\(records)) must be at least --authors (\(authors)): every author writes a card first")
        }
        guard records <= 10_000_000 else { throw UsageError("--records is at most 10000000, got \(records)") }
        guard (1...100_000).contains(batchSize) else {
            throw UsageError("--batch must be 1...100000, got \(batchSize)")
        }
        guard (0...Limits.maxDevicesPerAccount).contains(devices) else {
            throw UsageError("--devices must be 0...\(Limits.maxDevicesPerAccount) (an account certifies at most that many), got \(devices)")
        }
        guard (1...25).contains(rounds) else { throw UsageError("--rounds must be 1...25, got \(rounds)") }
    }

    /// Runs the benchmark and prints the report. False if something failed or the replica is wrong.
    func run() -> Bool {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("mentormate-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            printError("error: cannot create a temporary directory at \(dir): \(error)")
            return false
        }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            return try measure(in: dir)
        } catch {
            printError("error: \(error)")
            return false
        }
    }

    private func measure(in dir: String) throws -> Bool {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("mentormate-bench merge: \(records) records from \(authors) authors, seed \(seed), "
              + "merge batches of \(batchSize), \(cores) cores")

        // Generation (not measured): to a file, then freed, so the phases below stream it.
        let workloadPath = dir + "/workload.records"
        let workload = Workload(records: records, authors: authors, seed: seed)
        let stats = try workload.write(to: workloadPath)
        let generationPeak = ProcessMemory.peakKB
        ProcessMemory.releaseFreedMemory()
        let peakResettable = ProcessMemory.resetPeak()
        print("generated in \(Format.seconds(stats.elapsed)) (not measured): \(stats.profiles) profile, "
              + "\(stats.likes) like, \(stats.chats) chat; \(Format.megabytes(stats.bytes)) encoded, "
              + "avg \(stats.bytes / max(stats.records, 1)) B/record, in \(stats.deliveryRuns) runs of "
              + "1-\(Workload.maxRun) records per author")
        print("workload: written to a temp file and streamed in batches by every phase (never all in memory); "
              + "generation peak RSS \(Format.kilobytes(generationPeak))"
              + (peakResettable ? ", peak reset after generation" : " (peak could not be reset: figures below include it)"))

        // The phases run in the order 2, 1, 3, 1' so that the single-core verify rate is taken
        // right before and right after the merge: on a shared host the machine's speed drifts,
        // and the ratio is only meaningful when both sides saw the same machine.

        // 2. Raw SQLite insert.
        let cpuInsert = CPUSample.now()
        let insert = try Phases.rawInsert(path: workloadPath, databasePath: dir + "/raw.sqlite", rowsPerTransaction: 1000)
        let insertPeak = ProcessMemory.peakKB
        _ = ProcessMemory.resetPeak()

        // 1. Verify on one core, every record.
        let cpuVerify = CPUSample.now()
        let verify = try Phases.verifyOneCore(path: workloadPath, batchSize: 1000)
        let verifyPeak = ProcessMemory.peakKB
        _ = ProcessMemory.resetPeak()
        guard verify.failures == 0, verify.records == records else {
            printError("error: \(verify.failures) of \(verify.records) generated records failed verification")
            return false
        }

        // 3. Full merge into an empty file replica.
        let cpuMerge = CPUSample.now()
        let merge = try Phases.merge(path: workloadPath, replicaPath: dir + "/replica.sqlite", batchSize: batchSize)
        let mergePeak = ProcessMemory.peakKB

        // 1'. The single-core rate again, on a sample, to see whether the machine's speed moved.
        let cpuRecheck = CPUSample.now()
        let recheck = try Phases.verifyOneCore(path: workloadPath, batchSize: 1000, limit: min(records, 20_000))
        let cpuEnd = CPUSample.now()
        // Calibration: verification alone on all cores, to show what the cores deliver together.
        let allCores = try Phases.verifyAllCores(path: workloadPath, batchSize: batchSize, limit: min(records, 20_000))

        let verifyRate = Double(verify.records) / verify.elapsed.seconds
        let recheckRate = Double(recheck.records) / recheck.elapsed.seconds
        let insertRate = Double(insert.rows) / insert.elapsed.seconds
        let mergeRate = Double(merge.summary.records) / merge.elapsed.seconds
        let drift = recheckRate / verifyRate - 1
        let bracketRate = (verifyRate + recheckRate) / 2
        let allCoresRate = Double(allCores.records) / allCores.elapsed.seconds
        let measuredPeak = [verifyPeak, insertPeak, mergePeak].compactMap { $0 }.max()
        let peakTargetKB = 100 * 1024

        print("")
        print("                                          records/s    records   time")
        print(Format.row("1. verify, 1 core (decode + Ed25519)", verifyRate, verify.records, verify.elapsed))
        print(Format.row("2. raw SQLite insert (WAL, 1000/txn)", insertRate, insert.rows, insert.elapsed))
        print(Format.row("3. merge: verify + apply + commit", mergeRate, merge.summary.records, merge.elapsed))
        print(Format.row("1'. verify, 1 core, after the merge", recheckRate, recheck.records, recheck.elapsed))
        print("phase 1  \(cpuMerge.usage(since: cpuVerify))")
        print("phase 2  \(cpuVerify.usage(since: cpuInsert))")
        print("phase 3  \(cpuRecheck.usage(since: cpuMerge))")
        print("phase 1' \(cpuEnd.usage(since: cpuRecheck))")
        print("")
        let speedup = mergeRate / bracketRate
        print("merge / verify-1-core = \(Format.ratio(speedup))   target >= 1.5x   \(speedup >= 1.5 ? "PASS" : "MISS")"
              + "   (against the mean of 1 and 1'; against 1 alone \(Format.ratio(mergeRate / verifyRate)))")
        let busy = [("1", cpuMerge.others(since: cpuVerify)), ("3", cpuRecheck.others(since: cpuMerge)),
                    ("1'", cpuEnd.others(since: cpuRecheck))].filter { $0.1 >= 0.1 }
        if !busy.isEmpty {
            print("  warning: other processes used CPU during phase "
                  + busy.map { "\($0.0) (\(Format.fixed($0.1, 2)) cores)" }.joined(separator: ", ")
                  + "; the ratio does not describe an idle machine")
        }
        if abs(drift) > 0.05 {
            print("  warning: the single-core rate moved \(Format.fixed(drift * 100, 1))% between before and after the merge; "
                  + "the machine's speed changed during the run, so the ratio is uncertain by about that much")
        }
        print("merge / raw-insert    = \(Format.ratio(mergeRate / insertRate))")
        print("calibration: verify alone on all \(cores) cores (Replica.verify, first \(Format.grouped(allCores.records)) records) "
              + "\(Format.grouped(Int(allCoresRate))) records/s = \(Format.ratio(allCoresRate / bracketRate)) the 1-core rate; "
              + "the merge reached \(Format.fixed(100 * mergeRate / allCoresRate, 1))% of it")
        print("peak RSS (VmHWM): verify \(Format.kilobytes(verifyPeak)), raw insert \(Format.kilobytes(insertPeak)), "
              + "merge \(Format.kilobytes(mergePeak))")
        if let mergePeak {
            print("peak RSS of the merge = \(Format.kilobytes(mergePeak))   target < 100 MB   "
                  + (mergePeak < peakTargetKB ? "PASS" : "MISS")
                  + (peakResettable ? "" : " (includes generation)"))
        } else {
            print("peak RSS of the merge: unknown (no VmHWM in /proc/self/status)   target < 100 MB   MISS")
        }
        print("peak RSS, all measured phases = \(Format.kilobytes(measuredPeak)); at exit VmHWM = "
              + "\(Format.kilobytes(ProcessMemory.peakKB)), VmRSS = \(Format.kilobytes(ProcessMemory.currentKB))")

        let s = merge.summary
        print("")
        print("pipeline (\(s.batches) batches): verify busy \(Format.seconds(s.verifyTime)) "
              + "(\(Format.millis(s.verifyTime / s.batches))/batch), apply+commit busy \(Format.seconds(s.applyTime)) "
              + "(\(Format.millis(s.applyTime / s.batches))/batch), importer waited for apply \(Format.seconds(s.waitTime))")
        print("import outcomes: applied \(s.applied), duplicate \(s.duplicate), held \(s.held), forked \(s.forked), "
              + "refused \(s.refused)" + (s.refusedByCode.isEmpty ? "" : " \(s.refusedByCode)"))
        let c = merge.counts
        print("replica counts: records \(c.records), authors \(c.authors), pending \(c.pending), "
              + "forked authors \(c.forkedAuthors), cards \(c.cards)")
        print("integrity_check: \(merge.integrity.joined(separator: "; "))")
        let rr = merge.recon, lookups = Double(max(rr.lookups, 1))
        func micros(_ d: Duration) -> String { Format.fixed(d.seconds * 1e6 / lookups, 1) + " us" }
        print("reconciliation tree reads (\(rr.lookups) random nodes): node \(micros(rr.node)), "
              + "children of a depth-3 node \(micros(rr.children)), ids of a leaf \(micros(rr.ids))")
        if let ib = rr.indexBytes, let nb = rr.nodeBytes {
            let n = Double(max(c.records + c.pending, 1))
            print("reconciliation index on disk: ID indexes \(Format.megabytes(ib)) (\(Format.fixed(Double(ib) / n, 1)) B/record), "
                  + "tree \(Format.megabytes(nb)) (\(Format.fixed(Double(nb) / n, 1)) B/record), "
                  + "together \(Format.fixed(Double(ib + nb) / n, 1)) B/record")
        }

        if breakdown {
            let b = try Phases.breakdown(path: workloadPath, replicaPath: dir + "/breakdown.sqlite", batchSize: batchSize)
            let n = max(b.batches, 1), records = Double(max(b.records, 1))
            func perRecord(_ d: Duration) -> String { Format.fixed(d.seconds * 1e6 / records, 1) + " us/record" }
            func rate(_ d: Duration) -> String { Format.grouped(Int(records / d.seconds)) + " records/s" }
            let verifyOneCore = verify.elapsed * b.records / verify.records
            print("")
            print("breakdown, not pipelined (\(b.batches) batches of \(batchSize), each stage alone):")
            print("  verify, all cores:  \(Format.millis(b.verifyTime / n))/batch  \(perRecord(b.verifyTime))  = \(rate(b.verifyTime))")
            print("  verify, 1 core:     \(Format.millis(verifyOneCore / n))/batch  \(perRecord(verifyOneCore))  = \(rate(verifyOneCore))")
            print("  apply + commit:     \(Format.millis(b.applyTime / n))/batch  \(perRecord(b.applyTime))  = \(rate(b.applyTime))")
            let cpuPerRecord = (verifyOneCore + b.applyTime).seconds / records
            print("  ceiling on \(cores) cores if both stages split perfectly: "
                  + "\(Format.grouped(Int(Double(cores) / cpuPerRecord))) records/s "
                  + "= \(Format.ratio(Double(cores) / cpuPerRecord / verifyRate)) verify-1-core")
        }

        var correct = true
        // Compaction (PROTOCOL.md §9.3) drops superseded card edits, so the replica holds fewer
        // records than were applied: every record applied, none refused, every author there.
        if c.records > records || s.applied != records || s.refused != 0 || c.pending != 0 || c.authors != authors {
            printError("error: every one of the \(records) records of \(authors) authors should be applied and none refused "
                       + "(applied \(s.applied), refused \(s.refused), held \(c.records), authors \(c.authors), pending \(c.pending))")
            correct = false
        }
        if merge.integrity != ["ok"] {
            printError("error: integrity check failed")
            correct = false
        }
        if devices > 0 {
            let comparison = DeviceComparison(records: records, authors: authors, devices: devices, batchSize: batchSize,
                                              seed: seed, rounds: rounds, breakdown: breakdown)
            if try !comparison.run(in: dir, baselinePath: workloadPath, baseline: stats) { correct = false }
        }
        print("result: \(correct ? "correct" : "WRONG")")
        return correct
    }
}
