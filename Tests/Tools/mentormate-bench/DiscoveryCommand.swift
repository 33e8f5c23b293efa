import Foundation
import MentorAPI
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate-bench discovery`: issue 5's benchmark, in the multi-host lab of `scripts/lab`.
/// Host 1 runs an observer daemon; each of the `--starts` measurements starts a daemon on a
/// fresh host (one that never ran a daemon, its avahi-daemon already up), with a state
/// directory prepared beforehand (a node key and one account's card, made with --no-mdns outside
/// the lab), and times, from the moment the daemon is spawned, (a) until it is listed in the
/// observer's `peers` and (b) until its account's card is readable on the observer
/// (`profile.show ID`). The observer is polled over one socket connection every 10 ms. Also
/// (c): when `avahi-browse -r` on host 1 resolves the new instance, i.e. when it was
/// announced, the part the RFC 6762 floor bounds (the first link may come sooner: the new node finds
/// the observer in its own Avahi's cache and dials it, and says which). The
/// daemon is then stopped (SIGTERM: its goodbye and its link's end reach the observer) and the
/// next host's start waits until the observer lists no peer.
struct DiscoveryCommand {
    static let name = "discovery"
    static let help = """
        USAGE: mentormate-bench discovery [--starts N] [--daemon PATH] [--lab PATH] [--keep]

        Needs root (it builds the lab: network namespaces, each with its own D-Bus and
        avahi-daemon). Builds N+1 lab hosts under MM_LAB_PREFIX=mmbdPID, runs an observer daemon
        on host 1, and N times starts the mentormated next to this binary (or --daemon PATH) on a
        fresh host (2, 3, ...), measuring from its spawn:
          (a) until the observer's `peers` lists its node;
          (b) until its account's profile card is readable on the observer (`profile.show ID`);
          (c) until `avahi-browse -r` on host 1 resolves its instance (it was announced).
        Each start also says which side dialled the first link: the new node (it found the
        observer in its host's Avahi cache, which is why (a) can beat the floor) or the observer.
        Prints every start's figures, then median and max of each next to the RFC 6762 floor (a
        new service can be announced 0.75-1 s after it is registered) and the targets. The lab is
        torn down at the end (also after an error); if the run is killed, tear it down with
        `MM_LAB_PREFIX=mmbdPID bash scripts/lab down`.

        OPTIONS:
          --starts N     daemon starts to measure, 1 to 49 (default 20)
          --daemon PATH  the mentormated to run
          --lab PATH     scripts/lab (default: the one in the checkout this was built from)
          --keep         keep the temporary directory (daemon logs) and print its path
          -h, --help     show this help

        Targets (printed PASS/MISS, for the median and for the max): (a) < 1.5 s; (b) < 2 s.
        Exit status: 0 measured (targets may still say MISS), 1 the run failed, 2 usage error.
        """

    var starts = 20
    var daemonPath: String?
    var labPath: String?
    var keep = false

    enum Parsed { case help, run(DiscoveryCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = DiscoveryCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _): return .help
            case .option("--starts", let v): command.starts = try reader.integer(for: "--starts", inline: v)
            case .option("--daemon", let v): command.daemonPath = try reader.value(for: "--daemon", inline: v)
            case .option("--lab", let v): command.labPath = try reader.value(for: "--lab", inline: v)
            case .option("--keep", nil): command.keep = true
            case .option(let n, _): throw UsageError("unknown option '\(n)' for discovery (or a value given to a flag)")
            case .argument(let a): throw UsageError("unexpected argument '\(a)' for discovery")
            }
        }
        guard (1...49).contains(command.starts) else { throw UsageError("--starts must be from 1 to 49 (the lab has at most 50 hosts)") }
        return .run(command)
    }

    /// scripts/lab of the checkout this file was compiled from.
    static let defaultLab = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path + "/scripts/lab"

    func run() -> Bool {
        guard geteuid() == 0 else {
            printError("error: the discovery benchmark builds the multi-host lab and needs root (network and mount namespaces, veth links)")
            return false
        }
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let daemon = daemonPath ?? bin + "/mentormated"
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            printError("error: \(daemon) not found; build it first (swift build -c release) or pass --daemon PATH")
            return false
        }
        let lab = labPath ?? Self.defaultLab
        guard FileManager.default.fileExists(atPath: lab) else {
            printError("error: \(lab) not found; pass --lab PATH (the repository's scripts/lab)")
            return false
        }
        let dir = "/tmp/mm-bench-discovery-" + UUID().uuidString.prefix(8)
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            printError("error: cannot create \(dir): \(error)")
            return false
        }
        var run = DiscoveryRun(command: self, daemonPath: daemon, labScript: lab, dir: dir)
        let ok: Bool
        do {
            try run.measure()
            ok = true
        } catch {
            printError("error: \(error)")
            for child in run.daemons { printError("--- last lines of \(child.name)'s log (\(child.logPath)):\n\(child.logTail())") }
            ok = false
        }
        let torn = run.tearDown()
        if keep || !ok && ProcessInfo.processInfo.environment["MM_BENCH_KEEP"] != nil {
            print("kept \(dir)")
        } else {
            try? FileManager.default.removeItem(atPath: dir)
        }
        return ok && torn
    }
}

/// A child process started with posix_spawn (stdout and stderr to a log file), ended by its PID.
final class SpawnedChild {
    let name: String
    let pid: pid_t
    let logPath: String
    private(set) var exitStatus: Int32?

    init(name: String, argv: [String], environment: [String: String], logPath: String) throws {
        self.name = name
        self.logPath = logPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cEnv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv)
        guard rc == 0 else { throw BenchFailure("cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    deinit { stop() }

    /// Whether it ended (reaping it).
    var ended: Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status; return true }
        return false
    }

    /// Waits up to `timeout` for it to end; its exit code, or nil if it still runs or was killed.
    func wait(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while !ended {
            guard ContinuousClock.now < deadline else { return nil }
            usleep(10_000)
        }
        guard let status = exitStatus, status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }

    /// SIGTERM, then SIGKILL after `grace`; reaps it.
    func stop(grace: Duration = .seconds(10)) {
        guard !ended else { return }
        kill(pid, SIGTERM)
        if wait(timeout: grace) == nil && !ended {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            exitStatus = status
        }
    }

    func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// A program on a lab host whose stdout lines are read on a thread of their own and kept with
/// the instant each arrived (here: `avahi-browse` on the observer's host, to see when its Avahi
/// learns of a new instance: the announcement itself, apart from who dials whom).
final class LineWatcher: @unchecked Sendable {
    let pid: pid_t
    private let fd: Int32
    private let lock = NSLock()
    private var seen: [(at: ContinuousClock.Instant, line: String)] = []
    private var reaped = false

    init(argv: [String], environment: [String: String], errorPath: String) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw BenchFailure("pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cEnv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv)
        close(ends[1])
        guard rc == 0 else { close(ends[0]); throw BenchFailure("cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
        self.fd = ends[0]
        Thread.detachNewThread { [self] in readLines() }
    }

    deinit { stop() }

    private func readLines() {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            let now = ContinuousClock.now
            pending += chunk[..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                lock.withLock { seen.append((now, line)) }
            }
        }
        close(fd)
    }

    /// The first line that arrived at or after `since` and satisfies `match`, with its instant.
    func first(since: ContinuousClock.Instant, where match: (String) -> Bool) -> (at: ContinuousClock.Instant, line: String)? {
        lock.withLock { seen.first { $0.at >= since && match($0.line) } }
    }

    func stop() {
        guard !reaped else { return }
        reaped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}

private enum Discovery {
    static let type = "_mentormate._tcp"
}

private struct DiscoveryRun {
    let command: DiscoveryCommand
    let daemonPath: String
    let labScript: String
    let dir: String
    let prefix = "mmbd" + String(getpid() % 10_000)
    var daemons: [SpawnedChild] = []
    var watcher: LineWatcher?
    var labUp = false

    init(command: DiscoveryCommand, daemonPath: String, labScript: String, dir: String) {
        self.command = command
        self.daemonPath = daemonPath
        self.labScript = labScript
        self.dir = dir
    }

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["MENTORMATE_SOCKET", "LISTEN_FDS", "LISTEN_PID", "NOTIFY_SOCKET", "JOURNAL_STREAM"] { env[key] = nil }
        env["MM_LAB_PREFIX"] = prefix
        return env
    }

    /// Runs `scripts/lab ARGS` to its end.
    func lab(_ arguments: [String], timeout: Duration = .seconds(180)) throws {
        let log = dir + "/lab-\(arguments.first ?? "").log"
        let child = try SpawnedChild(name: "scripts/lab", argv: ["/bin/bash", labScript] + arguments, environment: environment, logPath: log)
        guard let code = child.wait(timeout: timeout) else {
            child.stop()
            throw BenchFailure("scripts/lab \(arguments.joined(separator: " ")) did not finish within \(timeout): \(child.logTail())")
        }
        guard code == 0 else { throw BenchFailure("scripts/lab \(arguments.joined(separator: " ")) failed (exit \(code)): \(child.logTail())") }
    }

    /// A daemon: on lab host `host`, or (host nil) outside the lab with --no-mdns on loopback.
    mutating func startDaemon(_ name: String, host: Int?, stateDir: String, socket: String) throws -> SpawnedChild {
        let args = [daemonPath, "--state-dir", stateDir, "--socket", socket, "--log-level", "info"] + Workload.daemonFlags
            + (host == nil ? ["--listen", "127.0.0.1:0", "--no-mdns"] : ["--listen", "0.0.0.0:7000"])
        let argv = host.map { ["/bin/bash", labScript, "exec", "\($0)"] + args } ?? args
        let child = try SpawnedChild(name: name, argv: argv, environment: environment, logPath: dir + "/\(name).log")
        daemons.append(child)
        return child
    }

    func waitUntilServing(_ child: SpawnedChild, socket: String, timeout: Duration = .seconds(30)) throws -> RPCClient {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if child.ended { throw BenchFailure("\(child.name) exited before serving \(socket): \(child.logTail())") }
            if let client = try? RPCClient(path: socket, timeout: .seconds(10)) {
                if (try? client.call("status")) != nil { return client }
                client.close()
            }
            usleep(5_000)
        }
        throw BenchFailure("\(child.name) did not answer on \(socket) within \(timeout)")
    }

    mutating func measure() throws {
        let n = command.starts
        print("mentormate-bench discovery: \(n) daemon starts, each on a fresh lab host, observed from host 1 (lab prefix \(prefix))")

        // State directories with a node key and one account's card, made outside the lab.
        var accounts: [(node: String, account: String)] = []
        let prepared = ContinuousClock.now
        for i in 1...n {
            let state = dir + "/state\(i)", socket = dir + "/n\(i).sock"
            let child = try startDaemon("prepare\(i)", host: nil, stateDir: state, socket: socket)
            let client = try waitUntilServing(child, socket: socket)
            let node = try client.call("status")["node"]?.stringValue ?? ""
            let account = try client.call("account.signup", ["email": .string("tutor\(i)@uni.edu"), "name": .string("Tutor \(i)"), "role": "tutor"])
            _ = try client.call("profile.set", ["courses": ["CS 490"], "bio": .string("Fresh host \(i + 1)")])
            client.close()
            child.stop()
            guard let id = account["id"]?.stringValue, node.hasPrefix("mm1") else { throw BenchFailure("sign-up on \(state) answered \(account)") }
            accounts.append((node, id))
        }
        print("prepared \(n) state directories (node key + one tutor's card) in \(Format.seconds(ContinuousClock.now - prepared)) (not measured)")

        let built = ContinuousClock.now
        try lab(["down"])
        labUp = true
        try lab(["up", "\(n + 1)"])
        print("lab of \(n + 1) hosts up in \(Format.seconds(ContinuousClock.now - built)) (not measured)")

        let observerSocket = dir + "/observer.sock"
        let observerChild = try startDaemon("observer", host: 1, stateDir: dir + "/observer", socket: observerSocket)
        let observer = try waitUntilServing(observerChild, socket: observerSocket)
        defer { observer.close() }
        _ = try observer.call("account.signup", ["email": "observer@uni.edu", "name": "Observer", "role": "student"])
        try waitFor("the observer's discovery to be on", timeout: .seconds(30)) {
            try observer.call("status")["discovery"]?.stringValue == "on"
        }
        let observerName = try observer.call("status")["mdnsName"]?.stringValue ?? ""
        // avahi-browse -r on host 1: when its Avahi has resolved each new instance, i.e. heard
        // its announcement (SRV, TXT). A "+" line (the PTR alone) comes sooner, while the new
        // host still probes; only "=" (resolved) counts. -p escapes a space as \032.
        let watcher = try LineWatcher(argv: ["/bin/bash", labScript, "exec", "1", "stdbuf", "-oL", "avahi-browse", "-p", "-k", "-r", Discovery.type],
                                      environment: environment, errorPath: dir + "/avahi-browse.err")
        self.watcher = watcher
        let escapedObserver = observerName.replacingOccurrences(of: " ", with: "\\032")
        func announced(_ line: String) -> Bool {
            let f = line.split(separator: ";", omittingEmptySubsequences: false)
            return f.count >= 10 && f[0] == "=" && f[2] == "IPv4" && f[3] != escapedObserver && f[4] == Discovery.type
        }
        try waitFor("avahi-browse on host 1 to list the observer's own instance", timeout: .seconds(15)) {
            watcher.first(since: built) { $0.hasPrefix("=;") && $0.contains(escapedObserver) } != nil
        }

        /// The observer's peer entry for `node`, if it lists it.
        func listed(_ node: String) throws -> JSON? {
            try observer.call("peers")["peers"]?.arrayValue?.first { $0["node"]?.stringValue == node }
        }

        var peersAfter: [Duration] = [], cardAfter: [Duration] = [], heardAfter: [Duration] = []
        var observerDialled = 0
        let cpu0 = CPUSample.now()
        print("")
        print("start  host  (a) in peers  (b) card readable  first link        (c) resolvable on host 1")
        for i in 1...n {
            let host = i + 1
            let (node, account) = accounts[i - 1]
            let socket = dir + "/n\(i).sock"
            let t0 = ContinuousClock.now
            let child = try startDaemon("host\(host)", host: host, stateDir: dir + "/state\(i)", socket: socket)
            var a: Duration?, b: Duration?
            var firstLink = ""
            let deadline = t0 + .seconds(30)
            while a == nil || b == nil {
                if a == nil, let entry = try listed(node) {
                    a = ContinuousClock.now - t0
                    // Port 7000: the observer dialled the new node (it found its announcement);
                    // another port: the new node dialled in (it found the observer first).
                    let dialled = entry["address"]?.stringValue?.hasSuffix(":7000") == true
                    if dialled { observerDialled += 1 }
                    firstLink = dialled ? "observer dialled" : "new node dialled"
                }
                if b == nil, (try? observer.call("profile.show", ["id": .string(account)]))?["id"]?.stringValue == account {
                    b = ContinuousClock.now - t0
                }
                if child.ended { throw BenchFailure("the daemon on host \(host) exited: \(child.logTail())") }
                guard ContinuousClock.now < deadline else {
                    throw BenchFailure("start \(i) (host \(host)): after 30 s, in peers: \(a.map(Format.seconds) ?? "no"), card: \(b.map(Format.seconds) ?? "no")")
                }
                usleep(10_000)
            }
            peersAfter.append(a!)
            cardAfter.append(b!)
            // The announcement: Avahi on host 1 reports the instance (wait for it if it is later).
            var heard: Duration?
            try? waitFor("host 1's Avahi to hear of host \(host)'s instance", timeout: .seconds(10)) {
                watcher.first(since: t0, where: announced) != nil
            }
            if let seen = watcher.first(since: t0, where: announced) {
                heard = seen.at - t0
                heardAfter.append(seen.at - t0)
            }
            print(Format.pad("\(i)", 5, left: true) + Format.pad("\(host)", 6, left: true)
                  + Format.pad(Format.millis(a!), 14, left: true) + Format.pad(Format.millis(b!), 19, left: true)
                  + "  " + Format.pad(firstLink, 16) + Format.pad(heard.map(Format.millis) ?? "not heard in 10 s", 20, left: true))
            child.stop()
            // The next start begins with the observer linked to nobody.
            try waitFor("the observer to drop host \(host)", timeout: .seconds(30)) { try listed(node) == nil }
        }
        let cpu1 = CPUSample.now()

        func median(_ values: [Duration]) -> Duration {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        func verdict(_ value: Duration, _ target: Duration) -> String { value < target ? "PASS" : "MISS" }
        print("")
        print("RFC 6762 floor: a new service is announced 0.75-1 s after it is registered (probing 3 x 250 ms, then the first announcement)")
        for (label, values, target) in [("(a) start -> listed in peers on another host ", peersAfter, Duration.milliseconds(1500)),
                                        ("(b) start -> its card readable there        ", cardAfter, Duration.seconds(2))] {
            let med = median(values), max = values.max()!
            print("\(label) median \(Format.seconds(med)) \(verdict(med, target))   max \(Format.seconds(max)) \(verdict(max, target))"
                  + "   min \(Format.seconds(values.min()!))   target < \(Format.seconds(target))")
        }
        if !heardAfter.isEmpty {
            print("(c) start -> resolvable by host 1's Avahi (announced)  median \(Format.seconds(median(heardAfter)))   max \(Format.seconds(heardAfter.max()!))"
                  + "   min \(Format.seconds(heardAfter.min()!))   (\(heardAfter.count) of \(n); the floor applies here)")
        }
        print("    first link: the observer dialled the new node (after hearing its announcement) in \(observerDialled) of \(n) starts;"
              + " the new node dialled the observer (found in its own host's Avahi) in \(n - observerDialled)")
        print("    \(cpu1.usage(since: cpu0)) (over the \(n) starts)")
    }

    /// Stops every daemon by PID, then tears the lab down. False if the lab could not be removed.
    mutating func tearDown() -> Bool {
        watcher?.stop()
        watcher = nil
        for child in daemons { child.stop() }
        daemons = []
        guard labUp else { return true }
        do {
            try lab(["down"])
            return true
        } catch {
            printError("error: tearing the lab down failed: \(error); run: MM_LAB_PREFIX=\(prefix) bash \(labScript) down")
            return false
        }
    }

    func waitFor(_ what: String, timeout: Duration, _ done: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !done() {
            guard ContinuousClock.now < deadline else { throw BenchFailure("timed out after \(timeout) waiting for \(what)") }
            usleep(10_000)
        }
    }
}
