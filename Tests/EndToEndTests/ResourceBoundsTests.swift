import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 5: a LAN host with the network key cannot fill a node's disk or memory, nor
/// keep its CPU busy (PROTOCOL.md §13.4). Each test drives a real daemon with
/// `mentormate-hostile-peer` and measures the daemon itself (its blob table, /proc/PID).
extension EndToEndTests {
    /// `sqlite3 replica.db SQL`, one line of output.
    private static func sql(_ e2e: E2E, _ stateDir: String, _ query: String) throws -> String {
        let (status, output) = try e2e.tool(["/usr/bin/sqlite3", stateDir + "/replica.db", query])
        guard status.exitCode == 0 else { throw E2EError("sqlite3 \(query): \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Blobs held, and their bytes (what a photo costs on disk).
    private static func blobs(_ e2e: E2E, _ stateDir: String) throws -> (count: Int, bytes: Int) {
        let parts = try sql(e2e, stateDir, "SELECT count(*), coalesce(sum(length(data)), 0) FROM blobs").split(separator: "|")
        return (Int(parts.first ?? "") ?? -1, Int(parts.last ?? "") ?? -1)
    }

    static func hostile(_ e2e: E2E, port: Int, _ attack: String, from: String, _ extra: [String] = [],
                                timeout: Duration = .seconds(90)) throws -> String {
        let (status, output) = try e2e.tool([try Binaries.tool("mentormate-hostile-peer"), "127.0.0.1", "\(port)", attack,
                                             "--from", from] + extra, timeout: timeout)
        #expect(status.exitCode == 0, "mentormate-hostile-peer \(attack) failed: \(output)")
        return output
    }

    /// The value of `key=` in the tool's `result` line.
    private static func field(_ output: String, _ key: String) -> String? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("result ") }) else { return nil }
        return line.split(separator: " ").first(where: { $0.hasPrefix(key + "=") }).map { String($0.dropFirst(key.count + 1)) }
    }

    /// (1) Five card edits, each naming a new 1 MiB photo, fetched one after the other: only the
    /// current photo stays in the blob store (the four it replaced are deleted). A backlog of
    /// five such edits (a hello claiming all five, then one batch each) makes the daemon ask for
    /// the last photo only. A blob no card names, left by an older build, is gone after a restart.
    @Test func onlyTheCurrentPhotoIsStoredAndABacklogFetchesOnlyItsLastPhoto() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let state = e2e.path("state-a"), socket = e2e.path("a.sock")
        var a = try e2e.startDaemon(stateDir: state, socket: socket)
        defer { a.kill() }
        let port = try listenPort(e2e, socket)

        let live = try Self.hostile(e2e, port: port, "photos", from: "127.0.0.41", ["--records", "5", "--wait", "2"])
        #expect(Self.field(live, "asked") == "5", "each edit's photo is current when it arrives, so each is fetched: \(live)\n\(a.log)")
        let afterLive = try poll(timeout: .seconds(10), { try Self.blobs(e2e, state) }, until: { $0.count == 1 })
        print("photos: 5 edits of 1 MiB photos fetched one by one -> blobs stored: \(afterLive.count), \(afterLive.bytes) bytes")
        #expect(afterLive.count == 1 && afterLive.bytes == 1024 * 1024,
                "only the current photo should stay stored: \(afterLive)\n\(a.log)")

        let backlog = try Self.hostile(e2e, port: port, "backlog", from: "127.0.0.42", ["--records", "5", "--wait", "3"])
        print("photos: backlog of 5 edits -> \(backlog.split(separator: "\n").last ?? "")")
        #expect(Self.field(backlog, "asked") == "1" && Self.field(backlog, "current") == "true",
                "a backlog should fetch only its current photo: \(backlog)\n\(a.log)")
        let afterBacklog = try poll(timeout: .seconds(10), { try Self.blobs(e2e, state) }, until: { $0.count == 2 })
        #expect(afterBacklog.count == 2 && afterBacklog.bytes == 2 * 1024 * 1024,
                "one current photo per author: \(afterBacklog)")

        // An orphan an older build left behind is collected at start.
        _ = a.terminate()
        _ = try Self.sql(e2e, state, "INSERT INTO blobs(hash, format, size, data) VALUES (zeroblob(32), 1, 8, x'89504e470d0a1a0a')")
        #expect(try Self.blobs(e2e, state).count == 3)
        a = try e2e.startDaemon(stateDir: state, socket: socket)
        #expect(try Self.blobs(e2e, state).count == 2, "the blob no card names should be deleted at start")
    }

    /// (2b) Budgets on photos: with `photo_storage_mb = 1`, a second author's 1 MiB photo is not
    /// fetched once the first one fills the node's photo budget; with `author_storage_mb = 1`, an
    /// author's 1 MiB photo (over its budget with its card) is not fetched, a 512 KiB one is.
    @Test func photosOverTheNodeOrAuthorBudgetAreNotFetched() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let nodeWide = try e2e.write("photos.conf", Array("photo_storage_mb = 1\n".utf8))
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: e2e.path("a.sock"), extra: ["--config", nodeWide])
        defer { a.kill() }
        let portA = try listenPort(e2e, e2e.path("a.sock"))
        let first = try Self.hostile(e2e, port: portA, "photos", from: "127.0.0.45", ["--records", "1", "--wait", "1"])
        let second = try Self.hostile(e2e, port: portA, "photos", from: "127.0.0.46", ["--records", "1", "--wait", "2"])
        print("photo budget 1 MiB: first author asked=\(Self.field(first, "asked") ?? "?"), second asked=\(Self.field(second, "asked") ?? "?")")
        #expect(Self.field(first, "asked") == "1" && Self.field(second, "asked") == "0",
                "the second photo would take all photos over 1 MiB: \(first) \(second)\n\(a.log)")
        #expect(a.log.contains("the node's photo budget"), "logged: \(a.log)")
        #expect(try Self.blobs(e2e, e2e.path("state-a")).count == 1)

        let perAuthor = try e2e.write("author.conf", Array("author_storage_mb = 1\n".utf8))
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: e2e.path("c.sock"), extra: ["--config", perAuthor])
        defer { c.kill() }
        let portC = try listenPort(e2e, e2e.path("c.sock"))
        let big = try Self.hostile(e2e, port: portC, "photos", from: "127.0.0.47", ["--records", "1", "--wait", "2"])
        let small = try Self.hostile(e2e, port: portC, "photos", from: "127.0.0.48", ["--records", "1", "--photo-kb", "512", "--wait", "1"])
        print("author budget 1 MiB: 1 MiB photo asked=\(Self.field(big, "asked") ?? "?"), 512 KiB photo asked=\(Self.field(small, "asked") ?? "?")")
        #expect(Self.field(big, "asked") == "0" && Self.field(small, "asked") == "1", "\(big) \(small)\n\(c.log)")
        #expect(c.log.contains("its author's records and photos would take more than 1 MiB"), "logged: \(c.log)")
    }

    /// (2) Per-author budget (`author_storage_mb = 1`): a hostile author streams 12,000 cards
    /// (about 2 MiB). Records past its budget are not stored, the link is not cut (no offence:
    /// the peer broke no rule), and Ben's edits on an honest peer keep reaching A.
    @Test func anAuthorOverItsStorageBudgetIsNotStoredFurtherAndOthersKeepSyncing() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let stateA = e2e.path("state-a"), socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let config = try e2e.write("a.conf", Array("author_storage_mb = 1\n".utf8))
        let a = try e2e.startDaemon(stateDir: stateA, socket: socketA, extra: ["--config", config])
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], socket: socketA)

        let output = try Self.hostile(e2e, port: portA, "stream", from: "127.0.0.43", ["--records", "12000", "--wait", "60"])
        print("budget: \(output.split(separator: "\n").last ?? "")")
        #expect(Self.field(output, "closed") == "false" && Self.field(output, "acked") == Self.field(output, "sent"),
                "an author over budget is no offence: the link stays and every batch is acked: \(output)\n\(a.log)")
        let heaviest = try Self.sql(e2e, stateA, """
            SELECT count(*), sum(length(bytes)) FROM records GROUP BY author ORDER BY 2 DESC LIMIT 1
            """).split(separator: "|").compactMap { Int($0) }
        print("budget: the hostile author's records stored on A: \(heaviest) (count, bytes) of 12000 sent")
        #expect(heaviest.count == 2 && heaviest[1] <= 1 << 20 && heaviest[0] < 12_000 && heaviest[0] > 1_000,
                "A should store the author's records up to 1 MiB, no more: \(heaviest)")
        #expect(a.log.contains("records of an author over its storage budget are not stored"), "logged once: \(a.log)")

        // Replaying an honest author's one record as duplicates stores nothing, so it does not
        // count against that author: its next record is still stored.
        let dups = try Self.hostile(e2e, port: portA, "duplicates", from: "127.0.0.44", ["--records", "16384", "--wait", "5"])
        print("budget: \(dups.split(separator: "\n").last ?? "")")
        #expect(Self.field(dups, "closed") == "false", "\(dups)")
        // An ack means taken, not stored (PROTOCOL.md §13.3 "`ack`"): the last batches may still
        // be applied after the peer saw every ack, so the count is polled.
        let dupAuthor = try poll(timeout: .seconds(10), {
            try Self.sql(e2e, stateA, """
                SELECT count(*) FROM records
                WHERE author = (SELECT author FROM records WHERE instr(bytes, CAST('Dup One' AS BLOB)) > 0 LIMIT 1)
                """)
        }, until: { $0 == "2" })
        #expect(dupAuthor == "2", "16,384 duplicates of a 1st record must not use up the author's budget: its 2nd is stored (\(dupAuthor))")

        for wage in [31, 32] {
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "\(wage)"], socket: socketB)
            let shown = try poll(timeout: .seconds(15), { "\(try mmJSON(e2e, ["feed"], socketA))" }, until: { $0.contains("\(wage)") })
            #expect(shown.contains("\(wage)"), "Ben's wage \(wage) should reach A: \(shown)\n\(a.log)")
        }
    }


    /// (3) Four links each send the largest recon message (120,000 short IDs A lacks), and stay up: A's memory
    /// grows by a bounded amount per link (the old code held ~20 MiB per link).
    @Test func aHelloNamingAHundredThousandAuthorsCostsABoundedAmountOfMemoryPerLink() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socket = e2e.path("a.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socket)
        defer { a.kill() }
        let port = try listenPort(e2e, socket)
        let tool = try Binaries.tool("mentormate-hostile-peer")
        usleep(500_000)
        let before = processMemory(a.pid)
        var peers: [ChildProcess] = []
        defer { for p in peers { p.kill() } }
        for i in 0..<4 {
            peers.append(try ChildProcess([tool, "127.0.0.1", "\(port)", "hello100k", "--from", "127.0.0.\(51 + i)", "--wait", "20"],
                                          stdout: .pipe, stderr: .file(e2e.path("hello-\(i).err"))))
        }
        for (i, p) in peers.enumerated() {
            let sent = p.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("hello sent") }
            #expect(sent != nil, "hostile peer \(i) should send its hello: \(p.lines) \(e2e.read(e2e.path("hello-\(i).err")))")
        }
        // A has taken in every part once its links are all still up and it answers.
        usleep(3_000_000)
        _ = try mmJSON(e2e, ["status"], socket)
        let after = processMemory(a.pid)
        let perLink = Double(after.rss - before.rss) / 4 / 1024
        print("hello100k: VmRSS \(before.rss) -> \(after.rss) KiB, VmHWM \(before.hwm) -> \(after.hwm) KiB with 4 links; " +
              "\(String(format: "%.1f", perLink)) MiB per link")
        let peersUp = try mmJSON(e2e, ["status"], socket)["peers"]?.intValue ?? -1
        #expect(peersUp == 4, "the four links stay up (the hello is within the protocol): \(peersUp)\n\(a.log)")
        #expect(perLink < 6, "a 100,000-author hello should cost less than 6 MiB per link, not \(perLink) MiB\n\(a.log)")
        #expect(Double(after.hwm - before.hwm) / 1024 < 40, "peak memory grew by \((after.hwm - before.hwm) / 1024) MiB")
    }

    /// CPU time (user + system) of a process, in seconds, from /proc/PID/stat.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return -1 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return -1 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Two daemons for the flood tests: A (Ana, the target) and its honest peer B (Ben, a
    /// tutor whose card edits must keep reaching A).
    final class FloodPair {
        let e2e: E2E
        let a: Daemon, b: Daemon
        let socketA: String, socketB: String
        let portA: Int
        private var wage = 40

        init() throws {
            e2e = try E2E()
            socketA = e2e.path("a.sock")
            socketB = e2e.path("b.sock")
            a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
            portA = try listenPort(e2e, socketA)
            b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"], socket: socketA)
        }

        func close() {
            _ = a.kill()
            _ = b.kill()
            e2e.cleanup()
        }

        /// Ben edits his wage on B; it must show in A's feed.
        func honestWrite(_ what: String) throws {
            wage += 1
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "\(wage)"], socket: socketB)
            let shown = try poll(timeout: .seconds(15), { "\(try mmJSON(self.e2e, ["feed"], self.socketA))" }, until: { $0.contains("\(self.wage)") })
            #expect(shown.contains("\(wage)"), "Ben's wage \(wage) should reach A (\(what)): \(shown)\n\(a.log)")
        }

        /// Runs the hostile peer's `attack` against A from `address`; its output and A's CPU time.
        func flood(_ attack: String, from address: String, wait: Int) throws -> (output: String, cpu: Double) {
            let cpu0 = EndToEndTests.cpuSeconds(a.pid)
            let output = try EndToEndTests.hostile(e2e, port: portA, attack, from: address, ["--wait", "\(wait)"])
            usleep(300_000)
            let cpu = EndToEndTests.cpuSeconds(a.pid) - cpu0
            print("\(attack): \(output.split(separator: "\n").last ?? "") cpu=\(String(format: "%.2f", cpu)) s")
            return (output, cpu)
        }
    }

    /// (4) Floods of `recon` (400 × 8 KiB, each after the answer to the last) and `want` (4,000) messages: each flooding link is
    /// cut off as an offence after the burst the rate allows, within a bounded CPU time of A;
    /// the honest peer B keeps syncing.
    @Test func aFloodOfSummaryOrWantMessagesIsCutOffWithinBoundedCPUAndTheHonestPeerSyncs() throws {
        try E2E.requireRoot()
        let pair = try FloodPair()
        defer { pair.close() }
        try pair.honestWrite("before the floods")
        for (attack, address, reason) in [("summaries", "127.0.0.61", "recon messages in"), ("wants", "127.0.0.62", "want messages in")] {
            let (output, cpu) = try pair.flood(attack, from: address, wait: 10)
            #expect(Self.field(output, "closed") == "true", "a \(attack) flood should be cut off: \(output)\n\(pair.a.log)")
            #expect(pair.a.log.contains(reason) && pair.a.log.contains("peer.address=\(address)"), "logged with the address: \(pair.a.log)")
            #expect(cpu < 1.0, "the \(attack) flood cost A \(cpu) s of CPU")
            try pair.honestWrite("after the \(attack) flood")
        }
    }

    /// `here` (the accounts living on the peer's node) is cheap to send and costs us a decode
    /// of up to 1,024 keys and a new "nearby now" set each. Over its rate (8 per 30 s) it is no
    /// offence — an honest node with many sign-ups could send more — but only the newest one
    /// is kept and taken when the bucket refills: 20,000 of them at wire speed cost A little
    /// CPU, the link stays up and the honest peer keeps syncing.
    @Test func aFloodOfHereMessagesCostsBoundedCPUWithoutCuttingTheLink() throws {
        try E2E.requireRoot()
        let pair = try FloodPair()
        defer { pair.close() }
        try pair.honestWrite("before the flood")
        let (output, cpu) = try pair.flood("heres", from: "127.0.0.63", wait: 3)
        #expect(Self.field(output, "closed") == "false", "a here flood is no offence: \(output)\n\(pair.a.log)")
        #expect(!pair.a.log.contains("peer refused for a while"), "nobody is refused: \(pair.a.log)")
        // Before the rate: 131 s of CPU for the same flood (a nearby set rebuilt and diffed per message);
        // after: ~1.5 s on a quiet machine, nearly all of it opening 650 MB of frames, which any
        // message costs — and 5.4 s on a loaded 2-core CI runner. The bound sits between the two
        // regimes (a factor of 6 under the old cost, of 3.5 over the worst seen) so that it fails
        // when the rate breaks and not when the machine is busy.
        #expect(cpu < 20, "20,000 here messages cost A \(cpu) s of CPU")
        try pair.honestWrite("after the flood")
        let nearby = try mmJSON(pair.e2e, ["feed"], pair.socketA)["cards"]?.arrayValue?.first?["nearby"]?.boolValue
        #expect(nearby == true, "Ben is still nearby now (B's own here was taken)")
    }
}
