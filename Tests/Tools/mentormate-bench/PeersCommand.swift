import Foundation
import MentorAPI
import MentorStore
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate-bench peers`: two real daemons over loopback (issue 4's benchmark). B dials a
/// counting TCP relay in this process that forwards to A, so every byte between the two nodes
/// (handshake, hellos, records, acks, keep-alives) is counted in both directions.
///   (a) backlog: N records on A while B is not running; then B starts, and the clock runs
///       until B holds them all (its `replica.digest` is then checked against A's);
///   (b) wire overhead: bytes through the relay during (a) ÷ the sum of the records' encodings
///       (read from A's replica, `records.bytes`);
///   (c) push latency: Ana on A and Ben on B match; Ben's connection on B subscribes to
///       `message`; Ana sends K messages one at a time; each is timed from just before the
///       `chat.send` call on A to the `event.message` notification arriving on B.
struct PeersCommand {
    static let name = "peers"
    static let help = """
        USAGE: mentormate-bench peers [--records N] [--authors M] [--messages K] [--seed S]
                                      [--via-api] [--daemon PATH] [--keep]

        Starts the mentormated next to this binary (or --daemon PATH) twice over loopback, each
        with its own state directory and socket in a temporary directory (--no-mdns). Node B is
        given `--peer` the address of a TCP relay in this process that forwards to node A and
        counts the bytes in each direction.

          (a) backlog: A holds N records (default 15000) while B is not running. By default they
              are the `merge` benchmark's workload (M authors, default 100: about 60% card edits,
              25% likes, 15% chats, signed with RecordWriter), imported into A's replica before A
              starts — the same way `api` fills its replica. With --via-api they are written
              through A's socket instead: a sign-up and N-1 `profile.set` calls by one account (Ana, who chats in (c)).
              Then B starts, and the time from starting B (and from its link to A opening) until
              B holds all N records is measured; B's replica.digest must then equal A's.
          (b) wire overhead: bytes through the relay (both directions, handshake included) from
              B's start until the backlog is done and the link is quiet, ÷ the sum of the
              record encodings in A's replica (SELECT sum(length(bytes)) FROM records).
          (c) push latency: Ana (student) signs up on A, Ben (tutor) on B, they like each other;
              a second connection of Ben's on B subscribes to `message`; Ana sends K messages
              (default 1000), one at a time, each after the previous one's notification arrived.
              Latency = from just before `chat.send` on A to `event.message` read on B.

        Also prints the CPU used by each daemon, this process and everything else on the machine
        during (a) and (c).

        OPTIONS:
          --records N    backlog records (default 15000; 'k' suffix allowed)
          --authors M    authors of the generated backlog, at least 2 (default 100)
          --messages K   chat messages for (c) (default 1000)
          --seed S       seed of the generated backlog (default \(MergeCommand.defaultSeed))
          --via-api      write the backlog through A's API (one author) instead
          --daemon PATH  the mentormated to run
          --keep         keep the temporary directory (daemon logs) and print its path
          -h, --help     show this help

        Targets (printed PASS/MISS): backlog < 1.5 s; wire overhead <= 1.15 x; push p50 < 20 ms.
        Exit status: 0 measured (targets may still say MISS), 1 the run failed, 2 usage error.
        """

    var records = 15_000
    var authors = 100
    var messages = 1000
    var seed = MergeCommand.defaultSeed
    var viaAPI = false
    var daemonPath: String?
    var keep = false

    enum Parsed { case help, run(PeersCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = PeersCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _): return .help
            case .option("--records", let v): command.records = try reader.integer(for: "--records", inline: v)
            case .option("--authors", let v): command.authors = try reader.integer(for: "--authors", inline: v)
            case .option("--messages", let v): command.messages = try reader.integer(for: "--messages", inline: v)
            case .option("--seed", let v): command.seed = UInt64(try reader.integer(for: "--seed", inline: v))
            case .option("--via-api", nil): command.viaAPI = true
            case .option("--keep", nil): command.keep = true
            case .option("--daemon", let v): command.daemonPath = try reader.value(for: "--daemon", inline: v)
            case .option(let n, _): throw UsageError("unknown option '\(n)' for peers (or a value given to a flag)")
            case .argument(let a): throw UsageError("unexpected argument '\(a)' for peers")
            }
        }
        guard command.records >= 10, command.authors >= 2, command.authors <= command.records, command.messages >= 10 else {
            throw UsageError("--records must be ≥ 10, --authors between 2 and --records, --messages ≥ 10")
        }
        return .run(command)
    }

    // MARK: Running

    func run() -> Bool {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let daemon = daemonPath ?? bin + "/mentormated"
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            printError("error: \(daemon) not found; build it first (swift build -c release) or pass --daemon PATH")
            return false
        }
        let dir = NSTemporaryDirectory() + "mm-bench-peers-" + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            printError("error: cannot create \(dir): \(error)")
            return false
        }
        // The relay writes to sockets a daemon may have closed: an EPIPE, not a silent death.
        signal(SIGPIPE, SIG_IGN)
        var run = PeersRun(command: self, daemonPath: daemon, dir: dir)
        let ok: Bool
        do {
            try run.measure()
            ok = true
        } catch {
            printError("error: \(error)")
            for node in run.nodes { printError("--- last lines of \(node.name)'s log (\(node.logPath)):\n\(node.logTail())") }
            ok = false
        }
        run.stopAll()
        if keep || !ok && ProcessInfo.processInfo.environment["MM_BENCH_KEEP"] != nil {
            print("kept \(dir)")
        } else {
            try? FileManager.default.removeItem(atPath: dir)
        }
        return ok
    }
}

/// One run's state: the nodes started (stopped by PID at the end, also after an error).
private struct PeersRun {
    let command: PeersCommand
    let daemonPath: String
    let dir: String
    var nodes: [BenchNode] = []
    var relay: CountingRelay?

    init(command: PeersCommand, daemonPath: String, dir: String) {
        self.command = command
        self.daemonPath = daemonPath
        self.dir = dir
    }

    mutating func stopAll() {
        relay?.close()
        for node in nodes { node.stop() }
    }

    mutating func measure() throws {
        let n = command.records
        print("mentormate-bench peers: backlog of \(Format.grouped(n)) records "
              + (command.viaAPI ? "written through A's API by one account" : "from \(command.authors) authors (the merge workload, imported into A's replica)")
              + ", \(Format.grouped(command.messages)) chat messages")

        // (a) The backlog on A, B not running.
        let stateA = dir + "/a", stateB = dir + "/b"
        let prepared = ContinuousClock.now
        if !command.viaAPI {
            let file = dir + "/backlog.records"
            let stats = try Workload(records: n, authors: command.authors, seed: command.seed).write(to: file)
            try FileManager.default.createDirectory(atPath: stateA, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let replica = try Replica(path: stateA + "/replica.db", settings: Workload.replicaSettings)
            let summary = try replica.importBatches(try RecordFileReader(path: file, batchSize: 1000))
            try replica.close()
            try? FileManager.default.removeItem(atPath: file)
            guard summary.applied == n else { throw BenchFailure("importing the backlog applied \(summary.applied) of \(n) records: \(summary)") }
            print("backlog: \(stats.profiles) card records, \(stats.likes) likes, \(stats.chats) chats")
        }
        let a = try BenchNode(name: "A", path: daemonPath, stateDir: stateA, socket: dir + "/a.sock", logPath: dir + "/a.log")
        nodes.append(a)
        try a.waitUntilServing()
        if command.viaAPI {
            let client = try RPCClient(path: a.socket, timeout: .seconds(30))
            defer { client.close() }
            // The writer is Ana, who chats in (c).
            _ = try client.call("account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
            for i in 1..<n {
                _ = try client.call("profile.set", ["bio": .string("Backlog edit \(i): happy to help with calculus, proofs and linear algebra.")])
            }
        }
        let onA = try replicaRecords(stateA + "/replica.db")
        guard onA.count == n else { throw BenchFailure("A's replica holds \(onA.count) records, expected \(n)") }
        let digestA = try digest(a.socket)
        guard digestA.records == n else { throw BenchFailure("A's replica.digest counts \(digestA.records) records, expected \(n)") }
        print("backlog ready on A in \(Format.seconds(ContinuousClock.now - prepared)) (not measured): "
              + "\(Format.grouped(onA.bytes)) bytes of record encodings, mean \(onA.bytes / max(1, onA.count)) bytes a record")

        let portA = try listenPort(a.socket)
        let relay = try CountingRelay(targetPort: portA)
        self.relay = relay

        // B starts; the clock runs until B holds every record.
        let cpu0 = CPUSample.now()
        let ticksA0 = a.cpuTicks()
        let startB = ContinuousClock.now
        let b = try BenchNode(name: "B", path: daemonPath, stateDir: stateB, socket: dir + "/b.sock", logPath: dir + "/b.log",
                              extra: ["--peer", "127.0.0.1:\(relay.port)"])
        nodes.append(b)
        try b.waitUntilServing()
        let serving = ContinuousClock.now
        let probe = try RPCClient(path: b.socket, timeout: .seconds(30))
        defer { probe.close() }
        var held: Int64 = 0
        let deadline = startB + .seconds(120)
        while true {
            held = try probe.call("status")["records"]?.intValue ?? 0
            if held >= Int64(n) { break }
            guard ContinuousClock.now < deadline else {
                throw BenchFailure("B holds \(held) of \(n) records 120 s after it started; relay: \(relay.snapshot())")
            }
            usleep(5_000)
        }
        let done = ContinuousClock.now
        let cpu1 = CPUSample.now()
        let ticksA1 = a.cpuTicks(), ticksB1 = b.cpuTicks()
        let digestB = try digest(b.socket)
        guard digestB == digestA else { throw BenchFailure("B holds \(held) records but its digest \(digestB) differs from A's \(digestA)") }
        let linkOpened = relay.snapshot().firstConnection ?? serving
        // Let the last acks (and nothing else) pass: the link is quiet for 300 ms, at most 3 s.
        let quiet = relay.waitForQuiet(.milliseconds(300), atMost: .seconds(3))
        let wire = relay.snapshot()

        let backlog = done - startB
        print("")
        print("(a) B started at 0; serving its socket at \(Format.millis(serving - startB)); link to A opened at "
              + "\(Format.millis(linkOpened - startB)); all \(Format.grouped(n)) records held at \(Format.millis(backlog)); digests equal")
        print("    \(cpuLine(cpu0, cpu1, daemons: [("A", ticksA1 - ticksA0), ("B", ticksB1)]))")
        print("    backlog replicated in \(Format.seconds(backlog)) from B's start (\(Format.seconds(done - linkOpened)) from the link opening)"
              + "   target < 1.5 s   \(backlog < .milliseconds(1500) ? "PASS" : "MISS")")
        let ratio = Double(wire.total) / Double(onA.bytes)
        print("(b) wire: \(Format.grouped(wire.aToB)) bytes A→B + \(Format.grouped(wire.bToA)) bytes B→A = \(Format.grouped(wire.total)) over "
              + "\(wire.connections) connection(s)\(quiet ? "" : " (the link was not quiet after 3 s)"); records \(Format.grouped(onA.bytes)) bytes")
        print("    wire overhead \(Format.ratio(ratio))   target <= 1.15x   \(ratio <= 1.15 ? "PASS" : "MISS")")

        // (c) Push latency.
        try pushLatency(a: a, b: b, relay: relay)
    }

    mutating func pushLatency(a: BenchNode, b: BenchNode, relay: CountingRelay) throws {
        let ana = try RPCClient(path: a.socket, timeout: .seconds(30)), ben = try RPCClient(path: b.socket, timeout: .seconds(30))
        defer { ana.close(); ben.close() }
        // With --via-api, Ana wrote the backlog and has her account already.
        let anaAccount = command.viaAPI ? try ana.call("account.whoami")
            : try ana.call("account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        guard let anaID = anaAccount["id"]?.stringValue,
              let benID = try ben.call("account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor"])["id"]?.stringValue
        else { throw BenchFailure("sign-up answered without an id") }
        _ = try ana.call("profile.set", ["courses": ["CS 490"]])
        _ = try ben.call("profile.set", ["courses": ["CS 490"]])
        // Ben's card reaches A; Ana's like reaches B; Ben's like matches; the match reaches A.
        try waitFor("Ben's card on A") { (try? ana.call("profile.show", ["id": .string(benID)])) != nil }
        _ = try ana.call("like", ["id": .string(benID)])
        try waitFor("Ana's like on B") { try digest(a.socket) == digest(b.socket) }
        guard try ben.call("like", ["id": .string(anaID)])["matched"]?.boolValue == true else {
            throw BenchFailure("Ben's like on B did not complete the match although B holds Ana's like")
        }
        try waitFor("the match on A") { try ana.call("chat.history", ["id": .string(benID)])["matched"]?.boolValue == true }

        let listener = try RPCClient(path: b.socket, timeout: .seconds(30))
        _ = try listener.call("subscribe", ["events": ["message"]])
        let arrivals = Arrivals(count: command.messages, from: anaID)
        arrivals.listen(listener)
        defer { arrivals.stop() }

        var push: [Double] = [], sendCall: [Double] = []
        push.reserveCapacity(command.messages)
        let cpu0 = CPUSample.now()
        let ticksA0 = a.cpuTicks(), ticksB0 = b.cpuTicks()
        let started = ContinuousClock.now
        for i in 0..<command.messages {
            let t0 = ContinuousClock.now
            _ = try ana.call("chat.send", ["id": .string(benID), "text": .string("bench message \(i): see you at the library at noon?")])
            sendCall.append((ContinuousClock.now - t0).seconds * 1000)
            guard let arrived = arrivals.wait(for: i, timeout: .seconds(15)) else {
                throw BenchFailure("message \(i) sent on A did not reach B's subscriber within 15 s (\(arrivals.problem ?? "no notification"))")
            }
            push.append((arrived - t0).seconds * 1000)
        }
        let elapsed = ContinuousClock.now - started
        let cpu1 = CPUSample.now()
        let ticksA1 = a.cpuTicks(), ticksB1 = b.cpuTicks()
        if let problem = arrivals.problem { throw BenchFailure(problem) }

        let sorted = push.sorted(), sends = sendCall.sorted()
        let p50 = percentile(sorted, 0.5)
        print("(c) \(Format.grouped(command.messages)) messages A→B in \(Format.seconds(elapsed)); chat.send call on A: p50 "
              + "\(Format.fixed(percentile(sends, 0.5), 2)) ms, p99 \(Format.fixed(percentile(sends, 0.99), 2)) ms")
        print("    \(cpuLine(cpu0, cpu1, daemons: [("A", ticksA1 - ticksA0), ("B", ticksB1 - ticksB0)]))")
        print("    push latency (send on A → event.message on B): p50 \(Format.fixed(p50, 2)) ms   p99 \(Format.fixed(percentile(sorted, 0.99), 2)) ms"
              + "   max \(Format.fixed(sorted.last ?? 0, 2)) ms   target p50 < 20 ms   \(p50 < 20 ? "PASS" : "MISS")")
        let slowest = push.indices.max { push[$0] < push[$1] } ?? 0
        print("    slowest: message #\(slowest); \(push.filter { $0 >= 20 }.count) of \(push.count) took 20 ms or more"
              + " (the first: \(Format.fixed(push.first ?? 0, 2)) ms, of which its chat.send call \(Format.fixed(sendCall.first ?? 0, 2)) ms)")
    }

    // MARK: Helpers

    /// "cpu: A 0.80 cores, B 0.95 cores, this process 0.10 cores, other processes 0.02 cores".
    func cpuLine(_ start: CPUSample, _ end: CPUSample, daemons: [(String, Int)]) -> String {
        let wall = (end.at - start.at).seconds
        guard wall > 0 else { return "cpu: (no time passed)" }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let daemonCores = daemons.map { Double($0.1) / hz / wall }
        let own = (end.own - start.own) / wall
        let machine = (end.machineBusy - start.machineBusy) / wall
        let others = max(0, machine - own - daemonCores.reduce(0, +))
        let stolen = (end.steal - start.steal) / wall
        return "cpu: " + zip(daemons, daemonCores).map { "\($0.0.0) \(Format.fixed($0.1, 2))" }.joined(separator: ", ")
            + ", this process \(Format.fixed(own, 2)), other processes \(Format.fixed(others, 2)) cores"
            + (stolen >= 0.01 ? ", stolen by the hypervisor \(Format.fixed(stolen, 2))" : "")
            + " (of \(ProcessInfo.processInfo.activeProcessorCount); daemons' figures at \(Int(hz)) ticks/s)"
    }

    func listenPort(_ socket: String) throws -> Int {
        let client = try RPCClient(path: socket, timeout: .seconds(30))
        defer { client.close() }
        let status = try client.call("status")
        guard let port = status["listen"]?["port"]?.intValue, port > 0 else { throw BenchFailure("no listen port in \(status)") }
        return Int(port)
    }

    struct Digest: Equatable, CustomStringConvertible {
        let digest: String, records: Int64
        var description: String { "\(digest.prefix(16))… (\(records) records)" }
    }

    func digest(_ socket: String) throws -> Digest {
        let client = try RPCClient(path: socket, timeout: .seconds(30))
        defer { client.close() }
        let r = try client.call("replica.digest")
        guard let d = r["digest"]?.stringValue, let n = r["records"]?.intValue else { throw BenchFailure("replica.digest answered \(r)") }
        return Digest(digest: d, records: n)
    }

    /// Count and total size of the encodings in `records`, read-only beside the running daemon.
    func replicaRecords(_ path: String) throws -> (count: Int, bytes: Int) {
        let db = try Database(path: path, options: .init(readOnly: true))
        defer { try? db.close() }
        guard let row = try db.queryOne("SELECT count(*), coalesce(sum(length(bytes)), 0) FROM records"),
              let count = row.int64(0), let bytes = row.int64(1) else { throw BenchFailure("cannot read \(path)") }
        return (Int(count), Int(bytes))
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(30), _ done: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !done() {
            guard ContinuousClock.now < deadline else { throw BenchFailure("timed out after \(timeout) waiting for \(what)") }
            usleep(10_000)
        }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Arrival times of `event.message` notifications "bench message I: …" from `from`, read on a
/// thread of their own as they come.
private final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [ContinuousClock.Instant?]
    private var stopped = false
    private(set) var problem: String? {
        get { lock.withLock { _problem } }
        set { lock.withLock { _problem = newValue } }
    }
    private var _problem: String?
    private let signal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let from: String

    init(count: Int, from: String) {
        times = Array(repeating: nil, count: count)
        self.from = from
    }

    func listen(_ client: RPCClient) {
        nonisolated(unsafe) let client = client  // used by this thread only from now on
        Thread.detachNewThread { [self] in
            defer { client.close(); finished.signal() }
            while !lock.withLock({ stopped }) {
                let event: RPCNotification?
                do { event = try client.nextNotification(timeout: .milliseconds(200)) } catch {
                    if !lock.withLock({ stopped }) { problem = "B's subscriber connection failed: \(error)" }
                    signal.signal()
                    return
                }
                let now = ContinuousClock.now
                guard let event else { continue }
                if event.method == "event.overflow" { problem = "B dropped notifications: \(event.params)" }
                guard event.method == "event.message", let message = event.params["message"],
                      message["from"]?.stringValue == from, let text = message["text"]?.stringValue,
                      text.hasPrefix("bench message "),
                      let i = Int(text.dropFirst("bench message ".count).prefix { $0.isNumber }) else { continue }
                let fresh = lock.withLock { () -> Bool in
                    guard i < times.count, times[i] == nil else { return false }
                    times[i] = now
                    return true
                }
                if fresh { signal.signal() } else { problem = "message \(i) was notified twice (or is out of range)" }
            }
        }
    }

    /// When message `i` arrived, waiting up to `timeout`.
    func wait(for i: Int, timeout: Duration) -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let t = lock.withLock({ times[i] }) { return t }
            if problem != nil { return nil }
            let left = deadline - .now
            guard left > .zero else { return nil }
            _ = signal.wait(timeout: .now() + .nanoseconds(Int(left.seconds * 1e9)))
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        finished.wait()
    }
}

/// A mentormated child (stderr to a log file), ended by its PID: SIGTERM, then SIGKILL after 10 s.
final class BenchNode {
    let name: String
    let pid: pid_t
    let socket: String
    let logPath: String
    private var reaped = false

    init(name: String, path: String, stateDir: String, socket: String, logPath: String, listen: String = "127.0.0.1:0",
         extra: [String] = [], environment: [String: String] = [:]) throws {
        self.name = name
        self.socket = socket
        self.logPath = logPath
        let args = [path, "--state-dir", stateDir, "--socket", socket, "--listen", listen, "--no-mdns", "--log-level", "info"] + Workload.daemonFlags + extra
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // No descriptor of this process (the relay's sockets) may live on in a daemon.
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        let cArgs = args.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var pid: pid_t = 0
        let rc: Int32
        if environment.isEmpty {
            rc = posix_spawn(&pid, path, &actions, nil, cArgs, environ)
        } else {
            let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { env.forEach { free($0) } }
            rc = posix_spawn(&pid, path, &actions, nil, cArgs, env)
        }
        guard rc == 0 else { throw BenchFailure("cannot start \(path): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    deinit { stop() }

    /// Waits until `status` answers on the socket.
    func waitUntilServing(timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                reaped = true
                throw BenchFailure("mentormated \(name) exited (status \(status)) before serving \(socket)")
            }
            if let c = try? RPCClient(path: socket, timeout: .seconds(2)) {
                defer { c.close() }
                if (try? c.call("status")) != nil { return }
            }
            usleep(2_000)
        }
        throw BenchFailure("mentormated \(name) did not answer on \(socket) within \(timeout)")
    }

    /// Sends `sig` to the daemon unless it was reaped (its PID may be another process's by now).
    func signal(_ sig: Int32) {
        guard !reaped else { return }
        kill(pid, sig)
    }

    func stop() {
        guard !reaped else { return }
        reaped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<1000 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// utime + stime in clock ticks (/proc/PID/stat).
    func cpuTicks() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// A TCP relay on 127.0.0.1 (ephemeral port) forwarding every accepted connection to
/// 127.0.0.1:`targetPort`, counting bytes per direction. Blocking sockets, two threads a
/// connection; TCP_NODELAY both ways so the relay adds no batching delay of its own.
final class CountingRelay: @unchecked Sendable {
    struct Snapshot: CustomStringConvertible {
        var aToB = 0, bToA = 0, connections = 0
        var firstConnection: ContinuousClock.Instant?
        var lastByte: ContinuousClock.Instant?
        var total: Int { aToB + bToA }
        var description: String { "\(connections) connection(s), \(aToB) bytes A→B, \(bToA) bytes B→A" }
    }

    let port: Int
    private let targetPort: Int
    private let listenFD: Int32
    private let lock = NSLock()
    private var state = Snapshot()
    private var open: [Int32] = []
    private var closed = false

    /// Accepting waits for `letThrough()` (connections queue in the listen backlog meanwhile).
    private let gate = DispatchSemaphore(value: 0)

    /// A `gated` relay accepts nothing until `letThrough()`: a dialler's connection waits in the
    /// listen backlog, so a benchmark can sample both daemons before their link starts.
    init(targetPort: Int, gated: Bool = false) throws {
        self.targetPort = targetPort
        if !gated { gate.signal() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("relay socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw BenchFailure("relay bind/listen: \(why)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return a
    }

    /// Lets connections through (a gated relay).
    func letThrough() { gate.signal() }

    private func acceptLoop() {
        gate.wait()
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // closed
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var target = Self.loopback(port: targetPort)
            let connected = upstream >= 0 && withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            guard connected else {
                if upstream >= 0 { Glibc.close(upstream) }
                Glibc.close(client)
                continue
            }
            var one: Int32 = 1
            for fd in [client, upstream] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
            let accepted = lock.withLock { () -> Bool in
                guard !closed else { return false }
                open += [client, upstream]
                state.connections += 1
                if state.firstConnection == nil { state.firstConnection = .now }
                return true
            }
            guard accepted else { Glibc.close(client); Glibc.close(upstream); return }
            // B (the dialer) → A, and A → B.
            Thread.detachNewThread { [self] in pump(from: client, to: upstream, towardA: true) }
            Thread.detachNewThread { [self] in pump(from: upstream, to: client, towardA: false) }
        }
    }

    private func pump(from: Int32, to: Int32, towardA: Bool) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        loop: while true {
            let n = read(from, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            lock.withLock {
                if towardA { state.bToA += n } else { state.aToB += n }
                state.lastByte = .now
            }
            var sent = 0
            while sent < n {
                let w = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, n - sent) }
                if w < 0 && errno == EINTR { continue }
                if w <= 0 { break loop }
                sent += w
            }
        }
        // One side ended: end both (the other pump then sees end of file or an error).
        shutdown(to, Int32(SHUT_RDWR))
        shutdown(from, Int32(SHUT_RDWR))
    }

    func snapshot() -> Snapshot { lock.withLock { state } }

    /// Waits until no byte passed for `gap` (true), or `atMost` passed (false).
    func waitForQuiet(_ gap: Duration, atMost: Duration) -> Bool {
        let deadline = ContinuousClock.now + atMost
        while ContinuousClock.now < deadline {
            let last = snapshot().lastByte ?? .now
            if ContinuousClock.now - last >= gap { return true }
            usleep(20_000)
        }
        return false
    }

    /// Stops accepting and cuts every relayed connection (descriptors are left to the process
    /// end: a pump thread may still be reading one).
    func close() {
        let fds = lock.withLock { () -> [Int32] in
            closed = true
            return open
        }
        shutdown(listenFD, Int32(SHUT_RDWR))
        gate.signal()   // a gated relay never let through: its accept loop ends too
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
