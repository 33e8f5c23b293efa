import MentorCore
import MentorCrypto
import MentorStore

/// The three measurements. Each streams the workload file; only the work named is timed
/// (reading the file, and for the raw insert decoding the rows, happen outside the clock,
/// except in the merge, where reading the stream is part of importing it).
enum Phases {
    struct VerifyResult {
        var records = 0
        var failures = 0
        var elapsed: Duration = .zero
    }

    /// 1. `VerifiedRecord(bytes)` in a plain loop on the calling thread: decode, schema check,
    /// Ed25519 verify and BLAKE2b ID, exactly what `Replica.verify` does per record. Only the
    /// first `limit` records when a limit is given.
    static func verifyOneCore(path: String, batchSize: Int, limit: Int = .max) throws -> VerifyResult {
        let clock = ContinuousClock()
        let reader = try RecordFileReader(path: path, batchSize: batchSize)
        var result = VerifyResult()
        for whole in reader {
            guard result.records < limit else { break }
            let batch = whole.prefix(limit - result.records)
            let start = clock.now
            for bytes in batch {
                // Calls into libsodium cannot be optimized away, so the result can be dropped.
                do { _ = try VerifiedRecord(bytes) } catch { result.failures += 1 }
            }
            result.elapsed += clock.now - start
            result.records += batch.count
        }
        if let failure = reader.failure { throw failure }
        return result
    }

    /// `Replica.verify` (all cores) over the first `limit` records, batch by batch: how much
    /// faster than one core verification alone runs on this machine right now.
    static func verifyAllCores(path: String, batchSize: Int, limit: Int) throws -> VerifyResult {
        let clock = ContinuousClock()
        let reader = try RecordFileReader(path: path, batchSize: batchSize)
        var result = VerifyResult()
        for whole in reader {
            guard result.records < limit else { break }
            let batch = Array(whole.prefix(limit - result.records))
            let start = clock.now
            let verified = Replica.verify(batch, work: Workload.accountWork)
            result.elapsed += clock.now - start
            result.records += batch.count
            result.failures += verified.filter { if case .failure = $0 { true } else { false } }.count
        }
        if let failure = reader.failure { throw failure }
        return result
    }

    struct InsertResult {
        var rows = 0
        var elapsed: Duration = .zero
    }

    /// 2. The same rows into a bare table shaped like the replica's `records`: a fresh file
    /// database (WAL, synchronous=NORMAL), one cached prepared INSERT, `rowsPerTransaction` rows a
    /// transaction, nothing else. Rows are decoded (without verifying) before the clock starts.
    static func rawInsert(path: String, databasePath: String, rowsPerTransaction: Int) throws -> InsertResult {
        let clock = ContinuousClock()
        let db = try Database(path: databasePath, options: .init(walMode: true, synchronous: .normal))
        defer { try? db.close() }
        try db.executeScript("""
            CREATE TABLE records (
                author INTEGER NOT NULL, seq INTEGER NOT NULL, id BLOB NOT NULL, type INTEGER NOT NULL,
                timestamp INTEGER NOT NULL, bytes BLOB NOT NULL,
                PRIMARY KEY (author, seq, id)
            ) WITHOUT ROWID
            """)
        let sql = "INSERT INTO records(author, seq, id, type, timestamp, bytes) VALUES (?, ?, ?, ?, ?, ?)"
        var authorIDs: [PublicKey: Int64] = [:]
        let reader = try RecordFileReader(path: path, batchSize: rowsPerTransaction)
        var result = InsertResult()
        for batch in reader {
            // Outside the clock: the columns of each row.
            var rows: [(author: Int64, seq: Int64, id: [UInt8], type: Int64, timestamp: Int64, bytes: [UInt8])] = []
            rows.reserveCapacity(batch.count)
            for bytes in batch {
                let r = try Record.decode(bytes)
                let author: Int64
                if let known = authorIDs[r.author] { author = known } else {
                    author = Int64(authorIDs.count + 1)
                    authorIDs[r.author] = author
                }
                rows.append((author, Int64(r.seq), VerifiedRecord.id(of: bytes), Int64(r.type.rawValue),
                             Int64(clamping: r.timestamp), bytes))
            }
            let start = clock.now
            try db.transaction(.immediate) { () throws(StoreError) in
                let insert = try db.cachedStatement(sql)
                for row in rows {
                    try insert.run([.integer(row.author), .integer(row.seq), .blob(row.id), .integer(row.type),
                                    .integer(row.timestamp), .blob(row.bytes)])
                }
            }
            result.elapsed += clock.now - start
            result.rows += rows.count
        }
        if let failure = reader.failure { throw failure }
        return result
    }

    struct MergeResult {
        var summary: ImportSummary
        var elapsed: Duration
        var counts: ReplicaCounts
        var integrity: [String]
        var recon: ReconReads
    }

    /// The reconciliation tree after the merge: what reading it costs (each read is O(d · log n)
    /// rows, so the times stay flat as the replica grows) and what it takes on disk.
    struct ReconReads {
        var lookups = 0
        var node: Duration = .zero
        var children: Duration = .zero
        var ids: Duration = .zero
        /// Bytes of the ID indexes and of `recon_nodes` (SQLite's dbstat), nil if unavailable.
        var indexBytes: Int?
        var nodeBytes: Int?
    }

    static func reconReads(_ replica: Replica, path: String) throws -> ReconReads {
        var out = ReconReads()
        var rng = SeededRandom(seed: 13)
        let clock = ContinuousClock()
        out.lookups = 2000
        let prefixes = (0..<out.lookups).map { _ in UInt16(truncatingIfNeeded: rng.next()) }
        try replica.withReconView { view in
            for p in prefixes {
                let depth = Int(p % 5)
                let node = p & ~(UInt16.max >> UInt16(4 * depth))
                var t = clock.now
                _ = try view.node(depth: depth, prefix: depth == 0 ? 0 : node)
                out.node += clock.now - t
                t = clock.now
                _ = try view.children(depth: 3, prefix: p & 0xfff0)
                out.children += clock.now - t
                t = clock.now
                _ = try view.ids(depth: 4, prefix: p)
                out.ids += clock.now - t
            }
        }
        let db = try Database(path: path)
        defer { try? db.close() }
        if let rows = try? db.query("SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('records_by_id', 'pending_by_id', 'recon_nodes') GROUP BY name") {
            var bytes: [String: Int] = [:]
            for row in rows { if let n = row.text(0), let b = row.int(1) { bytes[n] = b } }
            out.indexBytes = bytes["records_by_id", default: 0] + bytes["pending_by_id", default: 0]
            out.nodeBytes = bytes["recon_nodes"]
        }
        return out
    }

    /// 3. `Replica.importBatches` into an empty file replica, streaming the file in batches of
    /// `batchSize`. Timed from the first read to the last commit; counts and the integrity check
    /// run after the clock stops.
    static func merge(path: String, replicaPath: String, batchSize: Int) throws -> MergeResult {
        let replica = try Replica(path: replicaPath, settings: Workload.replicaSettings)
        defer { try? replica.close() }
        let run = try importFile(path, into: replica, batchSize: batchSize)
        return MergeResult(summary: run.summary, elapsed: run.elapsed, counts: try replica.counts(),
                           integrity: try replica.integrityCheck(), recon: try reconReads(replica, path: replicaPath))
    }

    struct ImportRun {
        var summary: ImportSummary
        /// Wall time from the first read to the last commit.
        var elapsed: Duration
        /// CPU seconds this process used meanwhile, all threads (verify on every core, apply):
        /// what the import cost, less swayed than wall time by other processes on the machine.
        var cpu: Double
        /// Cores' worth of CPU other processes used meanwhile.
        var others: Double
    }

    /// The workload file into `replica` with `Replica.importBatches`, pipelined or not; only the
    /// import is timed.
    static func importFile(_ path: String, into replica: Replica, batchSize: Int, pipelined: Bool = true) throws -> ImportRun {
        let clock = ContinuousClock()
        let reader = try RecordFileReader(path: path, batchSize: batchSize)
        var settings = ImportSettings()
        settings.pipelined = pipelined
        let cpu = CPUSample.now()
        let start = clock.now
        let summary = try replica.importBatches(reader, settings: settings)
        let elapsed = clock.now - start
        let end = CPUSample.now()
        if let failure = reader.failure { throw failure }
        return ImportRun(summary: summary, elapsed: elapsed, cpu: end.own - cpu.own, others: end.others(since: cpu))
    }
}

extension Phases {
    /// Diagnostic: the same import into a second empty replica, but not pipelined — each
    /// batch verified (all cores), then applied, one after the other — so the summary's
    /// `verifyTime` and `applyTime` show what each stage costs alone.
    static func breakdown(path: String, replicaPath: String, batchSize: Int) throws -> ImportSummary {
        let replica = try Replica(path: replicaPath, settings: Workload.replicaSettings)
        defer { try? replica.close() }
        return try importFile(path, into: replica, batchSize: batchSize, pipelined: false).summary
    }
}
