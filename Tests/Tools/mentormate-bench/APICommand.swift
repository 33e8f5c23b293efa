import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate-bench api`: the local API under load. Fills a replica with N tutor cards,
/// starts the real `mentormated` on it, signs up a student, then measures `status` and `feed`
/// with 1 and 8 concurrent clients, and the idle daemon's CPU and memory.
struct APICommand {
    static let name = "api"
    static let help = """
        USAGE: mentormate-bench api [--cards N] [--posts P] [--requests R] [--idle-seconds S]

        Builds a replica holding N profile cards (default 10000, tutors with random courses),
        starts the mentormated next to this binary on it (--no-mdns, loopback), signs up a
        student (with courses, slots, a budget and preferences, so every part of the
        compatibility score is computed), and measures over the Unix socket, for `status` and
        for `feed` (limit 20; plain, with four filters, and with a filter few cards pass):
        requests/s and p50/p99/max latency with 1 client and with 8 concurrent clients, each
        client sending R requests (default 2000) one at a time. Then the daemon sits idle for S
        seconds (default 5): its CPU use (from /proc/PID/stat) and resident memory (VmRSS).
        A fresh daemon with an empty replica is measured for memory too.

        With --posts P (e.g. 100000) the replica also holds P posts (PROTOCOL.md §6.6) written by
        the first 1,000 tutors, captions and tags drawn from a list of minerals and words, and
        `posts --search` (FTS5; bm25 over the newest 1,000 matches, PostSearch.swift) is measured
        for a common word (in about a third of the posts), two words, a prefix and a rare word.
        The fill applies the records as signed, without checking each signature again.

        Targets (printed PASS/MISS): each feed's p99 < 5 ms with one client; each `posts --search`
        p99 < 10 ms with one client; idle CPU < 1%; idle RSS < 30 MB.
        """

    var cards = 10_000
    var posts = 0
    var requests = 2000
    var idleSeconds = 5

    enum Parsed { case help, run(APICommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = APICommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _): return .help
            case .option("--cards", let v): command.cards = try reader.integer(for: "--cards", inline: v)
            case .option("--posts", let v): command.posts = try reader.integer(for: "--posts", inline: v)
            case .option("--requests", let v): command.requests = try reader.integer(for: "--requests", inline: v)
            case .option("--idle-seconds", let v): command.idleSeconds = try reader.integer(for: "--idle-seconds", inline: v)
            case .option(let n, _): throw UsageError("unknown option '\(n)' for api")
            case .argument(let a): throw UsageError("unexpected argument '\(a)' for api")
            }
        }
        guard command.cards >= 1, command.posts >= 0, command.requests >= 10, command.idleSeconds >= 1 else {
            throw UsageError("--cards must be ≥ 1, --requests ≥ 10, --idle-seconds ≥ 1")
        }
        return .run(command)
    }

    func run() -> Bool {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let daemonPath = bin + "/mentormated"
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            printError("error: \(daemonPath) not found; build it first: swift build -c release")
            return false
        }
        let dir = NSTemporaryDirectory() + "mm-bench-api-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            // A fresh daemon: memory of an empty node.
            let fresh = try Daemon(path: daemonPath, stateDir: dir + "/fresh", socket: dir + "/fresh.sock")
            usleep(500_000)
            let freshRSS = fresh.rssKB()
            fresh.stop()

            print("mentormate-bench api: \(cards) cards, \(posts) posts, \(requests) requests per client")
            let started = ContinuousClock.now
            try fillReplica(at: dir + "/state/replica.db")
            print("replica filled in \(ContinuousClock.now - started) (not measured)")
            if posts > 0 { try compareSearchForms(at: dir + "/state/replica.db") }
            let daemon = try Daemon(path: daemonPath, stateDir: dir + "/state", socket: dir + "/api.sock")
            defer { daemon.stop() }
            if let hold = ProcessInfo.processInfo.environment["MM_BENCH_PAUSE"] { FileHandle.standardError.write(Data("daemon pid \(daemon.pid)\n".utf8)); sleep(UInt32(hold) ?? 0) }
            let client = try RPCClient(path: dir + "/api.sock", timeout: .seconds(30))
            _ = try client.call("account.signup", ["email": "bench@uni.edu", "name": "Bench", "role": "student"])
            _ = try client.call("profile.set", ["courses": ["CS 490", "MATH 221"], "budget": 30, "slots": "Mon 14-17, Wed 9-12",
                                                "preferences": ["genders": ["woman"], "overlapHours": 2, "maxWage": 35]])
            // Every feed entry carries its score and parts.
            let entries = try client.call("feed")["cards"]?.arrayValue ?? []
            guard entries.count == 20, entries.allSatisfy({ $0["score"]?.intValue != nil && ($0["compatibility"]?.arrayValue?.count ?? 0) >= 5 }) else {
                printError("error: feed returned \(entries.count) cards, expected 20 with a score and its parts each"); return false
            }
            client.close()

            // The feed as people ask for it: plain (ranked by score), with the common filters,
            // and with a filter few cards pass (the walk down the ranking goes far).
            let cases: [(label: String, method: String, params: [String: JSON])] = [
                ("status", "status", [:]),
                ("feed", "feed", [:]),
                ("feed, 4 filters", "feed", ["available": "Mon-15", "maxWage": 30, "minAge": 19, "minScore": 30]),
                ("feed, rare filter", "feed", ["gender": "agender", "available": "Sat"]),
            ] + (posts > 0 ? [
                ("posts --search common", "posts", ["search": "quartz"]),
                ("posts --search 2 words", "posts", ["search": "banded agate"]),
                ("posts --search prefix", "posts", ["search": "pyr"]),
                ("posts --search rare", "posts", ["search": "rhodochrosite"]),
            ] : [])
            print("\n                      clients   requests/s      p50       p99       max")
            var feedP99One: [String: Double] = [:]
            var searchP99One: [String: Double] = [:]
            for c in cases {
                for clients in [1, 8] {
                    let r = try measure(method: c.method, params: c.params, clients: clients, socket: dir + "/api.sock")
                    print(String(format: "%-22@ %7d %12.0f %8.2f ms %7.2f ms %7.2f ms", c.label as NSString, clients, r.rate, r.p50, r.p99, r.max))
                    if c.method == "feed" && clients == 1 { feedP99One[c.label] = r.p99 }
                    if c.method == "posts" && clients == 1 { searchP99One[c.label] = r.p99 }
                }
            }
            let rssLoaded = daemon.rssKB()
            let cpuBefore = daemon.cpuTicks()
            let idleStart = ContinuousClock.now
            sleep(UInt32(idleSeconds))
            let idleElapsed = ContinuousClock.now - idleStart
            let cpuTicks = daemon.cpuTicks() - cpuBefore
            let idleCPU = Double(cpuTicks) / Double(sysconf(Int32(_SC_CLK_TCK))) / seconds(idleElapsed) * 100
            let rssIdle = daemon.rssKB()

            print("")
            for (label, p99) in feedP99One.sorted(by: { $0.key < $1.key }) {
                print(String(format: "%-18@ p99, 1 client  %.2f ms   target < 5 ms   %@", label as NSString, p99, p99 < 5 ? "PASS" : "MISS"))
            }
            for (label, p99) in searchP99One.sorted(by: { $0.key < $1.key }) {
                print(String(format: "%-24@ p99, 1 client  %.2f ms   target < 10 ms   %@", label as NSString, p99, p99 < 10 ? "PASS" : "MISS"))
            }
            print(String(format: "idle CPU over %d s        %.2f %%   target < 1%%     %@", idleSeconds, idleCPU, idleCPU < 1 ? "PASS" : "MISS"))
            print(String(format: "idle RSS, empty replica  %.1f MB   target < 30 MB  %@", Double(freshRSS) / 1024, Double(freshRSS) / 1024 < 30 ? "PASS" : "MISS"))
            print(String(format: "idle RSS, %d cards    %.1f MB   (after the load: %.1f MB)", cards, Double(rssIdle) / 1024, Double(rssLoaded) / 1024))
            return true
        } catch {
            printError("error: \(error)")
            return false
        }
    }

    /// Writes `cards` tutor cards (one author each) straight into the replica before the daemon opens it.
    func fillReplica(at path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let replica = try Replica(path: path, settings: Workload.replicaSettings)
        let catalogue = ["CS 101", "CS 490", "MATH 221", "PHYS 150", "BIO 110", "ART 100", "ECON 201", "HIST 120"]
        var rng = SeededRandom(seed: 7)
        // Records are applied as signed (`apply(verified:)`): the writer's output needs no second
        // signature check, which was most of the fill's time at 100,000 posts.
        var batch: [VerifiedRecord] = []
        var posters: [RecordWriter] = []
        for i in 0..<cards {
            var w = RecordWriter(keys: try SigningKeyPair(seed: rng.bytes(32)), accountWork: Workload.accountWork)
            let courses = Array(catalogue.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)))
            var card = ProfileCard(name: "Tutor \(i)", role: .tutor, bio: "I can help with \(courses.joined(separator: " and ")).",
                                   courses: courses, wage: UInt64.random(in: 10...40, using: &rng), availability: "weekdays")
            // The new fields as a campus fills them: most give slots, many a gender and an age.
            let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
            let day = days[Int.random(in: 0..<days.count, using: &rng)], from = Int.random(in: 8...18, using: &rng)
            card.slots = try WeeklySlots.parse("\(day) \(from)-\(from + Int.random(in: 1...4, using: &rng))")
            card.gender = ["woman", "man", "non binary", "woman", "man"][Int.random(in: 0..<5, using: &rng)]
            card.age = .some(UInt8.random(in: 18...35, using: &rng))
            if i % 1000 == 0 { card.gender = "agender" }
            batch.append(try w.profile(card, at: 1_764_000_000_000 + UInt64(i)))
            if posters.count < 1000 { posters.append(w) }
            if batch.count == 5000 { _ = try replica.apply(verified: batch.map { .success($0) }); batch.removeAll() }
        }
        if !batch.isEmpty { _ = try replica.apply(verified: batch.map { .success($0) }) }
        batch.removeAll()
        // Posts: captions of four to twelve words, two to five tags; one post in 10,000 names
        // the rare mineral.
        let minerals = ["quartz", "pyrite", "agate", "calcite", "feldspar", "mica", "garnet", "hematite", "magnetite", "galena",
                        "fluorite", "gypsum", "halite", "obsidian", "basalt", "granite", "marble", "jasper", "malachite", "azurite"]
        let words = ["banded", "found", "near", "the", "river", "cubic", "crystal", "shiny", "streak", "hardness", "luster", "metallic",
                     "glassy", "cleavage", "field", "trip", "quarry", "sample", "specimen", "layered", "red", "green", "black", "white"]
        for i in 0..<posts where !posters.isEmpty {
            let n = Int.random(in: 4...12, using: &rng)
            var caption = (0..<n).map { _ in Bool.random(using: &rng) ? minerals.randomElement(using: &rng)! : words.randomElement(using: &rng)! }
            if i % 10_000 == 0 { caption.append("rhodochrosite") }
            let tags = Array(Set((0..<Int.random(in: 2...5, using: &rng)).map { _ in minerals.randomElement(using: &rng)! }))
            let photo = PhotoRef(hash: BLAKE2b.hash(rng.bytes(8), outputLength: 32), size: 50_000, format: .jpeg)
            batch.append(try posters[i % posters.count].post(.create(photos: [photo], caption: caption.joined(separator: " "), tags: tags),
                                                             at: 1_764_100_000_000 + UInt64(i)))
            if batch.count == 5000 { _ = try replica.apply(verified: batch.map { .success($0) }); batch.removeAll() }
        }
        if !batch.isEmpty { _ = try replica.apply(verified: batch.map { .success($0) }) }
        try replica.close()
    }

    /// The FTS5 query of a search as shipped (whole words, the last read as the whole words it
    /// starts: PostSearch.lastWord, its lookup timed too) against every word a prefix query
    /// (before): the ranked window alone, straight on the replica file, interleaved in one run.
    func compareSearchForms(at path: String) throws {
        let db = try Database(path: path, options: .init(readOnly: true))
        defer { try? db.close() }
        let sql = """
            SELECT rowid FROM (SELECT rowid, bm25(post_search) AS rank FROM post_search WHERE post_search MATCH ?
                               ORDER BY rowid DESC LIMIT 1000) ORDER BY rank, rowid DESC LIMIT 20
            """
        print("\nthe ranked window alone (1,000 newest matches, bm25, top 20), 300 runs each, interleaved:")
        print("                          every word a prefix (before)     shipped: whole words        ratio p50")
        for (label, text) in [("common", "quartz"), ("2 words", "banded agate"), ("prefix", "pyr"), ("rare", "rhodochrosite")] {
            let words = text.split(separator: " ")
            var before: [Double] = [], after: [Double] = []
            var counts = (0, 0)
            for _ in 0..<300 {
                var t0 = ContinuousClock.now
                counts.0 = try db.query(sql, [.text(words.map { "\"\($0)\"*" }.joined(separator: " "))]).count
                before.append(seconds(ContinuousClock.now - t0) * 1000)
                t0 = ContinuousClock.now
                let match = try (words.dropLast().map { "\"\($0)\"" } + [PostSearch.lastWord(words[words.count - 1], db)]).joined(separator: " ")
                counts.1 = try db.query(sql, [.text(match)]).count
                after.append(seconds(ContinuousClock.now - t0) * 1000)
            }
            before.sort(); after.sort()
            print(String(format: "  %-10@ p50 %6.2f ms  p99 %6.2f ms    p50 %6.2f ms  p99 %6.2f ms   %.2f%@",
                         label as NSString, percentile(before, 0.5), percentile(before, 0.99), percentile(after, 0.5),
                         percentile(after, 0.99), percentile(after, 0.5) / percentile(before, 0.5), counts.0 == counts.1 ? "" : "  (rows differ: \(counts.0) vs \(counts.1))"))
        }
    }

    struct Result { var rate: Double; var p50: Double; var p99: Double; var max: Double }

    func measure(method: String, params: [String: JSON] = [:], clients: Int, socket: String) throws -> Result {
        let latencies = Latencies()
        let failures = Latencies()
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: clients) { _ in
            guard let client = try? RPCClient(path: socket, timeout: .seconds(30)) else { failures.add(0); return }
            defer { client.close() }
            var mine: [Double] = []
            mine.reserveCapacity(requests)
            for _ in 0..<requests {
                let t0 = ContinuousClock.now
                guard (try? client.call(method, params)) != nil else { failures.add(0); return }
                mine.append(seconds(ContinuousClock.now - t0) * 1000)
            }
            latencies.add(contentsOf: mine)
        }
        let elapsed = seconds(ContinuousClock.now - start)
        if failures.count > 0 { throw UsageError("\(failures.count) clients failed during the \(method) run") }
        let sorted = latencies.values.sorted()
        return Result(rate: Double(sorted.count) / elapsed, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.last ?? 0)
    }
}

/// The value at fraction `p` (0.5 the median, 0.99 the 99th percentile) of ascending `sorted`
/// (not empty): the one every benchmark prints.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

final class Latencies: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Double] = []
    func add(_ v: Double) { lock.lock(); items.append(v); lock.unlock() }
    func add(contentsOf v: [Double]) { lock.lock(); items += v; lock.unlock() }
    var values: [Double] { lock.lock(); defer { lock.unlock() }; return items }
    var count: Int { values.count }
}

/// A mentormated child process, ended by PID.
final class Daemon {
    let pid: pid_t

    init(path: String, stateDir: String, socket: String) throws {
        var pid: pid_t = 0
        let args = [path, "--state-dir", stateDir, "--socket", socket, "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "warning"] + Workload.daemonFlags
        var cArgs = args.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let rc = posix_spawn(&pid, path, nil, nil, &cArgs, environ)
        guard rc == 0 else { throw UsageError("cannot start \(path): \(String(cString: strerror(rc)))") }
        self.pid = pid
        // Wait until the socket answers.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let c = try? RPCClient(path: socket, timeout: .seconds(2)), (try? c.call("status")) != nil { c.close(); return }
            usleep(50_000)
        }
        stop()
        throw UsageError("mentormated did not answer on \(socket) within 20 s")
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    func rssKB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    /// utime + stime in clock ticks.
    func cpuTicks() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 13 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }
}
