import Foundation
import MentorCore
import MentorStore

/// `mentormate-bench recon`: what sync v2's reconciliation tree costs to read as a replica
/// grows — each read should touch O(d · log n) rows, so the times stay flat from 10,000 to
/// 1,000,000 IDs — what building it from the rows costs (migration 8 on a full replica), and
/// its bytes per record.
struct ReconCommand {
    static let name = "recon"

    static let help = """
        USAGE: mentormate-bench recon [--items N] ...

        For each size N (default 10k, 100k and 1000k), fills a file replica's hold-back area with
        N synthetic rows (random 32-byte IDs, 1-byte bodies: the tree sees only IDs) straight in
        SQL, drops the tree and opens the replica, which rebuilds it (timed: what the first open
        after migration 8 costs at that size). Then times, over 20,000 random nodes, node(),
        children() of a depth-3 node and ids() of a leaf through Replica.withReconView, one page
        of 500 records under a depth-2 node, and prints the index's bytes per ID (SQLite dbstat).

        OPTIONS:
          --items N   a size to measure (repeatable; 'k' suffix allowed)
          -h, --help  show this help

        Exit status: 0 measured, 1 run failed, 2 usage error.
        """

    var sizes: [Int] = []

    enum Parsed { case help, run(ReconCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = ReconCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _):
                return .help
            case .option("--items", let v):
                let n = try reader.integer(for: "--items", inline: v)
                guard n >= 1, n <= 20_000_000 else { throw UsageError("\(name): --items wants 1...20000000, got \(n)") }
                command.sizes.append(n)
            case .option(let other, _):
                throw UsageError("\(name): unknown option '\(other)'")
            case .argument(let other):
                throw UsageError("\(name): unexpected argument '\(other)'")
            }
        }
        if command.sizes.isEmpty { command.sizes = [10_000, 100_000, 1_000_000] }
        return .run(command)
    }

    func run() -> Bool {
        let dir = NSTemporaryDirectory() + "mm-bench-recon-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            print("mentormate-bench recon: the reconciliation tree over synthetic IDs in the hold-back area")
            print("")
            print("      IDs   rebuild   node()  children()  ids()   page of 500   index B/ID  tree B/ID")
            for n in sizes {
                let r = try measure(n, path: dir + "/replica-\(n).sqlite")
                print(Format.pad(Format.grouped(n), 9, left: true)
                      + Format.pad(Format.seconds(r.rebuild), 10, left: true)
                      + Format.pad(Format.fixed(r.node, 1) + " us", 9, left: true)
                      + Format.pad(Format.fixed(r.children, 1) + " us", 12, left: true)
                      + Format.pad(Format.fixed(r.ids, 1) + " us", 9, left: true)
                      + Format.pad(Format.millis(r.page), 14, left: true)
                      + Format.pad(r.indexBytes.map { Format.fixed(Double($0) / Double(n), 1) } ?? "?", 13, left: true)
                      + Format.pad(r.nodeBytes.map { Format.fixed(Double($0) / Double(n), 1) } ?? "?", 11, left: true))
            }
            return true
        } catch {
            printError("error: \(error)")
            return false
        }
    }

    struct Result {
        var rebuild: Duration
        var node: Double, children: Double, ids: Double
        var page: Duration
        var indexBytes: Int?, nodeBytes: Int?
    }

    private func measure(_ n: Int, path: String) throws -> Result {
        try Replica(path: path).close()
        var rng = SeededRandom(seed: UInt64(n))
        do {
            let db = try Database(path: path)
            try db.execute("INSERT INTO authors(id, key, digest) VALUES (1, zeroblob(32), 0)")
            let insert = try db.cachedStatement("INSERT INTO pending(author, seq, id, bytes) VALUES (1, ?, ?, x'00')")
            var seq = 0
            while seq < n {
                try db.transaction { () throws(StoreError) in
                    for _ in 0..<min(100_000, n - seq) {
                        seq += 1
                        try insert.run([.integer(Int64(seq)), .blob(rng.bytes(32))])
                    }
                }
            }
            try db.execute("DELETE FROM recon_nodes")
            try db.close()
        }
        let clock = ContinuousClock()
        let start = clock.now
        let replica = try Replica(path: path)
        let rebuild = clock.now - start
        defer { try? replica.close() }
        guard try replica.reconSetSize() == n else { throw BenchFailure("the rebuilt tree does not hold \(n) IDs") }
        let lookups = 20_000
        let prefixes = (0..<lookups).map { _ in UInt16(truncatingIfNeeded: rng.next()) }
        var node = Duration.zero, children = Duration.zero, ids = Duration.zero
        try replica.withReconView { view in
            for p in prefixes {
                let depth = Int(p % 5)
                var t = clock.now
                _ = try view.node(depth: depth, prefix: depth == 0 ? 0 : p & ~(UInt16.max >> UInt16(4 * depth)))
                node += clock.now - t
                t = clock.now
                _ = try view.children(depth: 3, prefix: p & 0xfff0)
                children += clock.now - t
                t = clock.now
                _ = try view.ids(depth: 4, prefix: p)
                ids += clock.now - t
            }
        }
        let t = clock.now
        _ = try replica.reconRecords(depth: 2, prefix: prefixes[0] & 0xff00, after: nil, limit: 500)
        let page = clock.now - t
        var indexBytes: Int?, nodeBytes: Int?
        let db = try Database(path: path)
        defer { try? db.close() }
        if let rows = try? db.query("SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('pending_by_id', 'recon_nodes') GROUP BY name") {
            for row in rows {
                if row.text(0) == "pending_by_id" { indexBytes = row.int(1) } else { nodeBytes = row.int(1) }
            }
        }
        func micros(_ d: Duration) -> Double { d.seconds * 1e6 / Double(lookups) }
        return Result(rebuild: rebuild, node: micros(node), children: micros(children), ids: micros(ids), page: page,
                      indexBytes: indexBytes, nodeBytes: nodeBytes)
    }
}
