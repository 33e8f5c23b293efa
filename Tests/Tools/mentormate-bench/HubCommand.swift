import Foundation
import MentorAPI
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate-bench hub`: one hub and N client daemons over loopback (issue 19's benchmark).
/// For each N: the hub's memory and CPU per client (linked and idle), and the time for a record
/// written on one client to reach every other (p50/p99), then ratios between the sizes and a
/// linear extrapolation to 2,000 clients with its formula.
struct HubCommand {
    static let name = "hub"
    static let help = """
        USAGE: mentormate-bench hub [--clients N,N,...] [--writes W] [--idle S] [--daemon PATH] [--keep]

        For each N (default 50,200,500): starts the mentormated next to this binary (or --daemon
        PATH) once as a hub (`--hub --listen 127.0.0.1:0 --no-mdns`) and N times as a client
        (`--peer` the hub, each listening on its own loopback address 127.1.X.Y, so each dials
        from its own address as nodes of a building do), every one with its own state directory
        and socket in a temporary directory. Then:

          link:  the time until the hub's `status` counts N peers; the hub's CPU over it.
          memory: the hub's VmRSS before any client and once all are linked and 3 s quiet;
                  (linked - empty) / N = memory per client (per link). Then each client's
                  person signs up (2 records each, relayed to every client; not measured) and
                  the hub's VmRSS holding them is shown too.
          idle:  the hub's CPU over S seconds (default 10) with nothing written (keep-alives,
                 reconciliation rounds): per client per second.
          push:  every client but the writer subscribes to `event.sync` on its own socket; the writer then writes W records (default 5,
                 `profile.set`, one a second). For each record, each client's first `event.sync`
                 with more records received after the write began is its arrival: p50 and p99 over
                 all (client, record) pairs, and the time until the last client had it. The
                 hub's CPU over the W writes, per record per client. Afterwards every client's
                 `replica.digest` must equal the writer's.

        Then ratios between the sizes and, for each figure, a least-squares line through the
        runs (figure = a + b x N) evaluated at N = 2,000, the formula printed.

        OPTIONS:
          --clients LIST  client counts, comma-separated (default 50,200,500; at most 2,000 each)
          --writes W      records written per size for the push figures (default 5)
          --idle S        seconds of the idle CPU window (default 10)
          --daemon PATH   the mentormated to run
          --keep          keep the temporary directory (daemon logs) and print its path
          -h, --help      show this help

        Needs about 15 MB of memory and 3 file descriptors per client daemon, and this process
        raises its own open-files limit. Exit status: 0 measured, 1 the run failed (a client not
        linked, a record not arriving, digests differing), 2 usage error.
        """

    var clients = [50, 200, 500]
    var writes = 5
    var idleSeconds = 10
    var daemonPath: String?
    var keep = false

    enum Parsed { case help, run(HubCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = HubCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _): return .help
            case .option("--clients", let v):
                command.clients = try reader.counts(for: "--clients", inline: v, range: 2...2000)
            case .option("--writes", let v): command.writes = try reader.integer(for: "--writes", inline: v)
            case .option("--idle", let v): command.idleSeconds = try reader.integer(for: "--idle", inline: v)
            case .option("--keep", nil): command.keep = true
            case .option("--daemon", let v): command.daemonPath = try reader.value(for: "--daemon", inline: v)
            case .option(let n, _): throw UsageError("unknown option '\(n)' for hub (or a value given to a flag)")
            case .argument(let a): throw UsageError("unexpected argument '\(a)' for hub")
            }
        }
        guard (1...100).contains(command.writes), (1...600).contains(command.idleSeconds) else {
            throw UsageError("hub: --writes must be 1 to 100, --idle 1 to 600")
        }
        return .run(command)
    }

    /// One size's figures.
    struct Figures {
        var clients: Int
        var linkSeconds: Double
        var linkCPUPerClient: Double          // CPU seconds of the hub per client linked
        var emptyKiB: Int, linkedKiB: Int, loadedKiB: Int
        var idleCPUPerClientSecond: Double    // CPU seconds of the hub per client per second, idle
        var p50: Double, p99: Double, toAll: Double  // seconds
        var pushCPUPerRecordClient: Double    // CPU seconds of the hub per record per client
        var kiBPerClient: Double { Double(linkedKiB - emptyKiB) / Double(clients) }
    }

    func run() -> Bool {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let daemon = daemonPath ?? bin + "/mentormated"
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            printError("error: \(daemon) not found; build it first (swift build -c release) or pass --daemon PATH")
            return false
        }
        // One API connection per client, plus the spawn's pipes: take every descriptor allowed.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        signal(SIGPIPE, SIG_IGN)
        print("mentormate-bench hub: one hub, \(clients.map(String.init).joined(separator: ", ")) client daemons over loopback; "
              + "\(writes) records pushed per size; \(ProcessInfo.processInfo.activeProcessorCount) cores")
        var all: [Figures] = []
        for n in clients {
            let dir = NSTemporaryDirectory() + "mm-bench-hub-\(n)-" + UUID().uuidString
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                printError("error: cannot create \(dir): \(error)")
                return false
            }
            var run = HubRun(command: self, daemonPath: daemon, dir: dir, clients: n)
            var ok = true
            do {
                all.append(try run.measure())
            } catch {
                printError("error: \(error)")
                if let hub = run.hub { printError("--- last lines of the hub's log (\(hub.logPath)):\n\(hub.logTail())") }
                ok = false
            }
            run.stopAll()
            if keep || !ok && ProcessInfo.processInfo.environment["MM_BENCH_KEEP"] != nil {
                print("kept \(dir)")
            } else {
                try? FileManager.default.removeItem(atPath: dir)
            }
            guard ok else { return false }
        }
        summarize(all)
        return true
    }

    /// Ratios between the sizes and the extrapolation to 2,000 clients.
    func summarize(_ all: [Figures]) {
        guard let first = all.first else { return }
        print("")
        print("summary (per client; the ratio column is each size against the first, \(first.clients) clients):")
        print("  clients  hub MB  loaded MB  MB/client  link CPU ms/client  idle CPU µs/client/s  push CPU µs/record/client  p50 ms  p99 ms  to all ms  ratio p99")
        for f in all {
            print("  " + Format.pad("\(f.clients)", 7, left: true)
                  + Format.pad(Format.fixed(Double(f.linkedKiB) / 1024, 1), 8, left: true)
                  + Format.pad(Format.fixed(Double(f.loadedKiB) / 1024, 1), 11, left: true)
                  + Format.pad(Format.fixed(f.kiBPerClient / 1024, 3), 11, left: true)
                  + Format.pad(Format.fixed(f.linkCPUPerClient * 1000, 2), 20, left: true)
                  + Format.pad(Format.fixed(f.idleCPUPerClientSecond * 1e6, 1), 22, left: true)
                  + Format.pad(Format.fixed(f.pushCPUPerRecordClient * 1e6, 1), 27, left: true)
                  + Format.pad(Format.fixed(f.p50 * 1000, 1), 8, left: true)
                  + Format.pad(Format.fixed(f.p99 * 1000, 1), 8, left: true)
                  + Format.pad(Format.fixed(f.toAll * 1000, 1), 11, left: true)
                  + Format.pad(Format.ratio(f.p99 / max(first.p99, 1e-9)), 11, left: true))
        }
        let ns = all.map { Double($0.clients) }
        func line(_ label: String, _ ys: [Double], unit: String, scale: Double) {
            let (a, b) = Self.fit(ns, ys.map { $0 * scale })
            let at2000 = a + b * 2000
            print("  \(label): \(Format.fixed(a, 3)) + \(Format.fixed(b, 5)) x N \(unit)  ->  N = 2000: \(Format.fixed(at2000, 1)) \(unit)")
        }
        print("")
        print("extrapolation to 2,000 clients (least squares over the runs, figure = a + b x N\(all.count < 2 ? "; one run: b = figure / N" : "")):")
        line("hub memory (VmRSS), linked", all.map { Double($0.linkedKiB) / 1024 }, unit: "MB", scale: 1)
        line("hub memory (VmRSS), holding N accounts", all.map { Double($0.loadedKiB) / 1024 }, unit: "MB", scale: 1)
        line("hub CPU while idle", all.map { $0.idleCPUPerClientSecond * Double($0.clients) }, unit: "% of a core", scale: 100)
        line("hub CPU per record pushed to all", all.map { $0.pushCPUPerRecordClient * Double($0.clients) }, unit: "ms", scale: 1000)
        line("push p50", all.map(\.p50), unit: "ms", scale: 1000)
        line("push p99", all.map(\.p99), unit: "ms", scale: 1000)
        line("push to the last client", all.map(\.toAll), unit: "ms", scale: 1000)
        line("time to link all clients", all.map(\.linkSeconds), unit: "s", scale: 1)
    }

    /// Least squares y = a + b·x; with one point, the line through the origin's slope.
    static func fit(_ xs: [Double], _ ys: [Double]) -> (a: Double, b: Double) {
        guard xs.count >= 2 else { return (0, (ys.first ?? 0) / max(xs.first ?? 1, 1)) }
        let n = Double(xs.count), mx = xs.reduce(0, +) / n, my = ys.reduce(0, +) / n
        let sxx = zip(xs, xs).map { ($0 - mx) * ($1 - mx) }.reduce(0, +)
        let sxy = zip(xs, ys).map { ($0 - mx) * ($1 - my) }.reduce(0, +)
        let b = sxx > 0 ? sxy / sxx : 0
        return (my - b * mx, b)
    }
}

/// One size's run: the hub and the clients (stopped by PID at the end, also after an error).
private struct HubRun {
    let command: HubCommand
    let daemonPath: String
    let dir: String
    let clients: Int
    var hub: BenchNode?
    var nodes: [BenchNode] = []

    init(command: HubCommand, daemonPath: String, dir: String, clients: Int) {
        (self.command, self.daemonPath, self.dir, self.clients) = (command, daemonPath, dir, clients)
    }

    mutating func stopAll() {
        // SIGTERM to every one first, then reap: stopping 500 one by one would take minutes.
        for node in nodes { node.signal(SIGTERM) }
        for node in nodes { node.stop() }
        hub?.stop()
        nodes = []
    }

    static func residentKiB(_ pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }

    static var hz: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }

    func status(_ socket: String) throws -> JSON {
        let client = try RPCClient(path: socket, timeout: .seconds(30))
        defer { client.close() }
        return try client.call("status")
    }

    mutating func measure() throws -> HubCommand.Figures {
        let n = clients
        print("")
        print("== \(n) clients")
        let config = dir + "/hub.conf"
        try "max_peer_links = \(max(2500, n + 100))\n".write(toFile: config, atomically: true, encoding: .utf8)
        let hub = try BenchNode(name: "hub", path: daemonPath, stateDir: dir + "/hub", socket: dir + "/hub.sock", logPath: dir + "/hub.log",
                                extra: ["--hub", "--config", config])
        self.hub = hub
        try hub.waitUntilServing()
        let hubStatus = try status(hub.socket)
        guard hubStatus["hub"]?["isHub"]?.boolValue == true, let port = hubStatus["listen"]?["port"]?.intValue else {
            throw BenchFailure("the hub's status does not say it is a hub with a port: \(hubStatus)")
        }
        usleep(500_000)
        let emptyKiB = Self.residentKiB(hub.pid)

        // The clients, each on its own loopback address.
        let ticks0 = hub.cpuTicks()
        let started = ContinuousClock.now
        for i in 0..<n {
            let address = "127.1.\(i / 250).\(i % 250 + 1)"
            nodes.append(try BenchNode(name: "client \(i)", path: daemonPath, stateDir: dir + "/c\(i)", socket: dir + "/c\(i).sock",
                                       logPath: dir + "/c\(i).log", listen: "\(address):0",
                                       extra: ["--peer", "127.0.0.1:\(port)"]))
        }
        var linked: Int64 = 0
        while true {
            linked = (try? status(hub.socket))?["peers"]?.intValue ?? linked
            if linked >= Int64(n) { break }
            guard ContinuousClock.now - started < .seconds(60 + n / 2) else {
                throw BenchFailure("the hub has \(linked) of \(n) clients linked \(60 + n / 2) s after they started")
            }
            usleep(100_000)
        }
        let linkTime = ContinuousClock.now - started
        let ticks1 = hub.cpuTicks()
        print("link:   all \(n) clients linked to the hub \(Format.seconds(linkTime)) after the first started; "
              + "hub CPU \(Format.fixed(Double(ticks1 - ticks0) / Self.hz, 2)) s (\(Format.fixed(Double(ticks1 - ticks0) / Self.hz / Double(n) * 1000, 2)) ms per client)")
        // Every client is serving (their sockets answer).
        for node in nodes { try node.waitUntilServing(timeout: .seconds(60)) }
        sleep(3)
        let linkedKiB = Self.residentKiB(hub.pid)
        print("memory: hub VmRSS \(Format.kilobytes(emptyKiB)) with no client, \(Format.kilobytes(linkedKiB)) with \(n) linked "
              + "-> \(Format.fixed(Double(linkedKiB - emptyKiB) / Double(n), 1)) KiB per client")

        // Each client's person signs up (a card and a device record each, relayed through the
        // hub to every other client; not measured): subscribing to events needs an account.
        let setup = ContinuousClock.now
        for (i, node) in nodes.enumerated() {
            let client = try RPCClient(path: node.socket, timeout: .seconds(60))
            defer { client.close() }
            _ = try client.call("account.signup", ["email": .string("p\(i)@uni.edu"), "name": .string("Person \(i)"), "role": "student"])
        }
        let expected = Int64(2 * n)
        var behind: [Int] = Array(nodes.indices)
        while !behind.isEmpty {
            guard ContinuousClock.now - setup < .seconds(120 + n) else {
                throw BenchFailure("\(behind.count) clients hold fewer than the \(expected) records of the sign-ups \(120 + n) s after they began")
            }
            behind = try behind.filter { (try status(nodes[$0].socket))["records"]?.intValue ?? 0 < expected }
            if !behind.isEmpty { usleep(200_000) }
        }
        print("setup:  \(n) sign-ups (\(expected) records) on every client in \(Format.seconds(ContinuousClock.now - setup)) (not measured)")
        sleep(3)
        let loadedKiB = Self.residentKiB(hub.pid)
        print("memory: hub VmRSS \(Format.kilobytes(loadedKiB)) holding the \(n) accounts' records")
        let writer = try RPCClient(path: nodes[0].socket, timeout: .seconds(30))
        defer { writer.close() }

        // Idle CPU.
        let idle0 = hub.cpuTicks(), idleStart = ContinuousClock.now
        sleep(UInt32(command.idleSeconds))
        let idleTicks = hub.cpuTicks() - idle0, idleWall = (ContinuousClock.now - idleStart).seconds
        let idleCPU = Double(idleTicks) / Self.hz
        print("idle:   hub CPU \(Format.fixed(idleCPU, 3)) s over \(Format.fixed(idleWall, 1)) s "
              + "(\(Format.fixed(idleCPU / idleWall * 100, 2)) % of a core; \(Format.fixed(idleCPU / idleWall / Double(n) * 1e6, 1)) µs per client per second)")

        // Push: every other client listens for event.sync.
        let listeners = try (1..<n).map { i in try SyncListener(socket: nodes[i].socket) }
        defer { listeners.forEach { $0.stop() } }
        usleep(500_000)
        var latencies: [Double] = []
        var toAll: [Double] = []
        let push0 = hub.cpuTicks()
        for k in 1...command.writes {
            for l in listeners { l.arm() }
            let t0 = ContinuousClock.now
            _ = try writer.call("profile.set", ["bio": .string("bench write \(k)")])
            var arrivals: [ContinuousClock.Instant] = []
            for (i, l) in listeners.enumerated() {
                guard let at = l.wait(until: t0 + .seconds(60)) else {
                    throw BenchFailure("record \(k) did not reach client \(i + 1) within 60 s" + (l.problem.map { ": \($0)" } ?? ""))
                }
                arrivals.append(at)
            }
            latencies += arrivals.map { ($0 - t0).seconds }
            toAll.append(((arrivals.max() ?? t0) - t0).seconds)
            sleep(1)
        }
        let pushCPU = Double(hub.cpuTicks() - push0) / Self.hz
        latencies.sort()
        let p50 = percentile(latencies, 0.5), p99 = percentile(latencies, 0.99)
        let last = toAll.sorted()[toAll.count / 2]
        print("push:   \(command.writes) records from client 0 to \(n - 1) others through the hub: p50 \(Format.fixed(p50 * 1000, 1)) ms, "
              + "p99 \(Format.fixed(p99 * 1000, 1)) ms, to the last client \(Format.fixed(last * 1000, 1)) ms (median of \(command.writes)); "
              + "hub CPU \(Format.fixed(pushCPU, 3)) s over the writes (\(command.writes) s of pauses included)")

        // Every client holds what the writer holds.
        let expectedDigest = try writer.call("replica.digest")["digest"]?.stringValue
        for (i, node) in nodes.enumerated() {
            let client = try RPCClient(path: node.socket, timeout: .seconds(30))
            defer { client.close() }
            let digest = try client.call("replica.digest")["digest"]?.stringValue
            guard digest == expectedDigest else { throw BenchFailure("client \(i)'s replica.digest differs from the writer's") }
        }
        print("check:  every client's replica.digest equals the writer's")
        return HubCommand.Figures(clients: n, linkSeconds: linkTime.seconds, linkCPUPerClient: Double(ticks1 - ticks0) / Self.hz / Double(n),
                                  emptyKiB: emptyKiB, linkedKiB: linkedKiB, loadedKiB: loadedKiB,
                                  idleCPUPerClientSecond: idleCPU / idleWall / Double(n), p50: p50, p99: p99, toAll: last,
                                  pushCPUPerRecordClient: pushCPU / Double(command.writes) / Double(n))
    }
}

/// A connection to one client's socket subscribed to `event.sync`, read on a thread of its
/// own: after `arm()`, the first notification that reports more records received than before
/// is the arrival.
private final class SyncListener: @unchecked Sendable {
    private let lock = NSLock()
    private let client: RPCClient
    private var received: Int64 = 0
    private var armed = false
    private var arrival: ContinuousClock.Instant?
    private var stopped = false
    private var _problem: String?
    private let signal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    var problem: String? { lock.withLock { _problem } }

    init(socket: String) throws {
        client = try RPCClient(path: socket, timeout: .seconds(30))
        _ = try client.call("subscribe", ["events": ["sync"]])
        nonisolated(unsafe) let client = client  // read by the thread only from now on
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            while !lock.withLock({ stopped }) {
                let event: RPCNotification?
                do { event = try client.nextNotification(timeout: .milliseconds(500)) } catch {
                    lock.withLock { if !stopped { _problem = "the subscription failed: \(error)" } }
                    signal.signal()
                    return
                }
                let now = ContinuousClock.now
                guard let event, event.method == "event.sync", let count = event.params["received"]?.intValue else { continue }
                let arrived = lock.withLock { () -> Bool in
                    defer { received = max(received, count) }
                    guard armed, arrival == nil, count > received else { return false }
                    arrival = now
                    return true
                }
                if arrived { signal.signal() }
            }
        }
    }

    /// The next record counts from now.
    func arm() { lock.withLock { armed = true; arrival = nil } }

    /// When the armed record arrived, waiting until `deadline`.
    func wait(until deadline: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        while true {
            if let at = lock.withLock({ arrival }) {
                lock.withLock { armed = false }
                return at
            }
            if problem != nil { return nil }
            let left = deadline - .now
            guard left > .zero else { return nil }
            _ = signal.wait(timeout: .now() + .milliseconds(50))
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        finished.wait()
        client.close()
    }
}
