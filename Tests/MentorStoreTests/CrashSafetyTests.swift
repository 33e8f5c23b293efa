import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Kills a writer with SIGKILL at random moments and checks what survives in its database.
///
/// The writer is `mentormate-crashchild` (Tests/Tools), a separate process so that the kill is
/// real: it applies batches of 50 signed records to a file replica (WAL, synchronous NORMAL), one
/// transaction each, and prints `committed <seq per author>` after each batch has committed.
/// After each kill the test opens the database and checks that every reported batch is there,
/// that no batch is there in part, and that the file is sound; then it starts the next child on
/// the same file, which must resume where the committed state is.
@Suite(.tags(.multiProcess)) struct CrashSafetyTests {
    static let rounds = 60
    /// Records per batch in the child; the replica must always hold a multiple of it.
    static let batchSize: UInt64 = 50

    @Test func everyBatchReportedCommittedSurvivesSIGKILLAndNoBatchIsStoredInPart() throws {
        let executable = try #require(CrashChild.findExecutable(), """
            mentormate-crashchild was not found next to the test binary (\(CommandLine.arguments[0])); \
            run `swift build --build-tests` first (with the same --scratch-path) so the child program is built
            """)
        let seed = ProcessInfo.processInfo.environment["MENTORMATE_CRASH_SEED"].flatMap { UInt64($0) }
            ?? UInt64(Date().timeIntervalSince1970 * 1000)
        let replay = "seed \(seed); replay with MENTORMATE_CRASH_SEED=\(seed)"
        print("crash safety: \(Self.rounds) rounds, \(replay), child \(executable)")

        let dir = try TempDir()
        let database = dir.file("replica.sqlite")
        let started = ContinuousClock.now
        var random = SeededRandom(seed: seed)
        var authors: [PublicKey]?
        /// The version vector (by author column) the test found after the previous kill.
        var durable: [UInt64] = [0, 0, 0, 0]
        var roundsWithCommits = 0, startupKills = 0, batchesReported = 0
        var firstCommitted: UInt64?
        var slowestStart = Duration.zero

        for round in 0..<Self.rounds {
            // One round in eight kills the child while it starts (opening the file, creating the
            // schema in round 0, unlocking its account); the others after it has resumed, at any
            // point of its batches.
            let duringStartup = random.next() % 8 == 0
            let delay = Duration.milliseconds(duringStartup ? Int(random.next() % 60) : 20 + Int(random.next() % 231))
            let childSeed = random.next()
            let context = "round \(round), child seed \(childSeed), kill \(milliseconds(delay))\(duringStartup ? " after spawn" : " after resume"); \(replay)"

            let stderrPath = dir.file("child-stderr.txt")
            let child = try CrashChild(executable: executable, arguments: [database, String(childSeed)], stderrPath: stderrPath)
            defer { child.stop() }
            var output = CrashChild.Output()
            if duringStartup {
                try child.collect(into: &output, until: .now + delay)
            } else {
                let spawned = ContinuousClock.now
                try child.collect(into: &output, until: .now + .seconds(20), stopWhen: { $0.resumed != nil })
                slowestStart = max(slowestStart, .now - spawned)
                guard output.resumed != nil else {
                    let status = child.stop()
                    Issue.record("""
                        the child did not resume within 20 s (\(status)); stdout: \(output.unexpected); \
                        stderr: \(child.errorOutput); \(context)
                        """)
                    return
                }
                try child.collect(into: &output, until: .now + delay)
            }
            let status = child.stop()
            // Lines already in the pipe were printed after their commit, so they count too.
            try child.collect(into: &output, until: .now + .seconds(10))
            #expect(status.killedBy == SIGKILL,
                    "the child ended by itself (\(status)) before it was killed; stderr: \(child.errorOutput); \(context)")
            #expect(output.unexpected.isEmpty, "the child printed lines this test does not understand: \(output.unexpected); \(context)")
            if let keys = output.authors {
                if let known = authors {
                    #expect(keys == known, "the child's authors changed between runs; \(context)")
                }
                authors = keys
            }
            if let resumed = output.resumed {
                #expect(resumed == durable,
                        "the child resumed at \(resumed) but the replica held \(durable) when it started; \(context)")
            }
            if let committed = output.committed {
                roundsWithCommits += 1
                batchesReported += output.committedLines
                let total = committed.reduce(0, +)
                firstCommitted = firstCommitted ?? total
                #expect(total >= durable.reduce(0, +) + Self.batchSize,
                        "the child reported \(committed), not a batch beyond the \(durable) it started from; \(context)")
            }
            if duringStartup { startupKills += 1 }

            // What survived. On odd rounds the test inspects a copy of the files, so the WAL the
            // killed child left behind stays in place and the next child must recover it itself
            // (opening the original here would checkpoint and remove it on close).
            var inspected = database
            if round % 2 == 1 {
                inspected = dir.file("inspect-\(round).db")
                for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: database + suffix) {
                    try FileManager.default.copyItem(atPath: database + suffix, toPath: inspected + suffix)
                }
            }
            let replica = try Replica(path: inspected, settings: testSettings())
            let vector = try replica.versionVector()
            let counts = try replica.counts()
            #expect(try replica.integrityCheck() == ["ok"], "\(context)")
            #expect(counts.pending == 0, "records held back after a crash: \(counts.pending); \(context)")
            if let authors {
                #expect(Set(vector.keys).isSubset(of: authors), "the replica holds authors the child never wrote; \(context)")
                let held = authors.map { vector[$0] ?? 0 }
                // Every batch reported committed is there (and nothing from earlier rounds was lost).
                let reported = output.committed ?? durable
                for (column, (seq, floor)) in zip(held, reported).enumerated() {
                    #expect(seq >= floor, "author \(column) has seq \(seq) but \(floor) was reported committed; \(context)")
                }
                // All or nothing: the replica holds whole batches, and at most one beyond the last
                // reported (committed, then killed before the line went out).
                let total = held.reduce(0, +), reportedTotal = reported.reduce(0, +)
                #expect(total == reportedTotal || total == reportedTotal + Self.batchSize,
                        "the replica holds \(total) records (\(held)) but the child reported \(reportedTotal) (\(reported)); \(context)")
                // Each record is stored or, superseded by a later edit, remembered as such.
                let superseded = try replica.read { db throws(StoreError) in try db.queryOne("SELECT count(*) FROM superseded")?.int(0) ?? 0 }
                #expect(counts.records + superseded == Int(total),
                        "\(counts.records) records stored and \(superseded) superseded, version vector says \(total); \(context)")
                try expectPairViewsMatchTheirEntries(replica, account: authors[0], others: authors.dropFirst(), context)
                durable = held
            } else {
                // Killed before it even named its authors: nothing can have been written.
                #expect(counts.records == 0 && vector.isEmpty, "records stored before the child started writing; \(context)")
            }
            try replica.close()
            if inspected != database {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: inspected + suffix) }
            }
        }

        let elapsed = ContinuousClock.now - started
        let total = durable.reduce(0, +)
        print("""
            crash safety: \(Self.rounds) rounds in \(milliseconds(elapsed)), \(roundsWithCommits) with ≥1 batch committed before the kill \
            (\(startupKills) killed during start-up; slowest start-up \(milliseconds(slowestStart))), \(batchesReported) batches reported, \(total) records at the end \
            (per author \(durable)); \(replay)
            """)
        // Not vacuous: most rounds committed something before they were killed, and the run grew.
        #expect(roundsWithCommits >= (Self.rounds - startupKills) * 3 / 4,
                "only \(roundsWithCommits) of \(Self.rounds) rounds committed a batch before the kill; \(replay)")
        #expect(total > firstCommitted ?? 0 && durable.allSatisfy { $0 > 0 },
                "the committed seqs did not grow over the run: first \(firstCommitted.map(String.init) ?? "none"), last \(durable); \(replay)")
    }

    private func milliseconds(_ d: Duration) -> String {
        "\(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000) ms"
    }

    /// The materialized `pairs` rows of the hosted account were committed with the entries they
    /// are computed from.
    private func expectPairViewsMatchTheirEntries(_ replica: Replica, account: PublicKey, others: ArraySlice<PublicKey>,
                                                  _ context: String) throws {
        for other in others {
            let view = try replica.pairView(account: account, other: other)
            let stored = try replica.read { db throws(StoreError) in
                try db.queryOne("SELECT i_like, they_like, matched, messages FROM pairs WHERE account = ? AND other = ?",
                                [.blob(account.bytes), .blob(other.bytes)])
            }
            guard let stored else {
                #expect(!view.iLike && !view.theyLike && view.messages.isEmpty,
                        "no pairs row for \(other.shortID)… though its entries give \(view); \(context)")
                continue
            }
            #expect(stored.int64(0) == (view.iLike ? 1 : 0) && stored.int64(1) == (view.theyLike ? 1 : 0)
                        && stored.int64(2) == (view.matched ? 1 : 0) && stored.int64(3) == Int64(view.messages.count),
                    "pairs row for \(other.shortID)… disagrees with its entries; \(context)")
        }
    }
}

/// One run of `mentormate-crashchild`: started with posix_spawn, its stdout on a pipe read line
/// by line as the lines arrive, its stderr in a file. `stop()` kills it with SIGKILL (by PID) and
/// reaps it; it runs from a `defer` in the test and from `deinit`, so a failing test never leaves
/// a child running.
final class CrashChild {
    /// What the child printed so far.
    struct Output {
        var authors: [PublicKey]?
        var resumed: [UInt64]?
        /// The last `committed` line.
        var committed: [UInt64]?
        var committedLines = 0
        var unexpected: [String] = []

        mutating func take(_ line: String) {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "authors":
                let keys = words.dropFirst().compactMap { Hex.decode($0).flatMap(PublicKey.init(bytes:)) }
                if keys.count == 4 { authors = keys } else { unexpected.append(line) }
            case "resumed", "committed":
                let seqs = words.dropFirst().compactMap { UInt64($0) }
                guard seqs.count == 4 else { unexpected.append(line); return }
                if words[0] == "resumed" { resumed = seqs } else { committed = seqs; committedLines += 1 }
            default:
                unexpected.append(line)
            }
        }
    }

    /// How the child ended, from waitpid's status.
    struct Status: CustomStringConvertible {
        let raw: Int32
        /// The signal that ended it, if one did (WTERMSIG).
        var killedBy: Int32? { raw & 0x7f == 0 || raw & 0x7f == 0x7f ? nil : raw & 0x7f }
        var description: String { killedBy.map { "killed by signal \($0)" } ?? "exit status \((raw >> 8) & 0xff)" }
    }

    let pid: pid_t
    /// The file the child's stderr goes to.
    let errorPath: String
    /// Read end of the child's stdout; -1 once it reached end of file.
    private var outputFD: Int32
    private var pending: [UInt8] = []
    private var status: Status?

    init(executable: String, arguments: [String], stderrPath: String) throws {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw CrashChildError("pipe: \(String(cString: strerror(errno)))") }
        // Close-on-exec, so no other process this test runner spawns holds the write end open
        // (which would keep the pipe from reaching end of file). pipe2 is not visible to Swift;
        // the gap before fcntl only matters to a raw fork in another test at that instant.
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // The test runner may ignore SIGPIPE; the child should die of it if we go away.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), mask = sigset_t()
        sigemptyset(&defaults); sigaddset(&defaults, SIGPIPE); sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(pipeEnds[1])
        guard result == 0 else {
            close(pipeEnds[0])
            throw CrashChildError("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.outputFD = pipeEnds[0]
        self.errorPath = stderrPath
    }

    deinit {
        stop()
        if outputFD >= 0 { close(outputFD) }
    }

    /// Kills the child with SIGKILL and waits for it to end; later calls return the same status.
    @discardableResult
    func stop() -> Status {
        if let status { return status }
        kill(pid, SIGKILL)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = Status(raw: raw)
        self.status = status
        return status
    }

    /// Reads the child's lines into `output` as they arrive, until `deadline`, end of file, or
    /// `stopWhen` holds after a line.
    func collect(into output: inout Output, until deadline: ContinuousClock.Instant,
              stopWhen: (Output) -> Bool = { _ in false }) throws {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while outputFD >= 0 {
            let left = deadline - .now
            guard left > .zero else { return }
            var poller = pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)
            let (seconds, attoseconds) = left.components
            let ready = poll(&poller, 1, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw CrashChildError("poll: \(String(cString: strerror(errno)))") }
            if ready == 0 { continue }
            let count = read(outputFD, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw CrashChildError("read: \(String(cString: strerror(errno)))") }
            if count == 0 {
                close(outputFD)
                outputFD = -1
                // The child writes each line whole, so even a kill cannot leave half of one.
                if !pending.isEmpty { output.unexpected.append("a torn line: " + String(decoding: pending, as: UTF8.self)) }
                return
            }
            pending += chunk[..<count]
            // Only complete lines: a partial one waits for the rest.
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                output.take(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
                if stopWhen(output) { return }
            }
        }
    }

    /// What the child wrote to its stderr file, for failure messages.
    var errorOutput: String {
        let text = ((try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "(empty)" : text
    }

    /// The child program, built by the same build as the tests: next to the test binary, or in a
    /// folder above it when the tests are a bundle. Deliberately not the package's .build/debug:
    /// a build with another --scratch-path would find a stale child there.
    static func findExecutable() -> String? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("mentormate-crashchild").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        return nil
    }
}

struct CrashChildError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
