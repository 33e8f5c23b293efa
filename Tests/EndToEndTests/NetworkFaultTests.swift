import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 7, item 2, in the multi-host lab (three hosts finding each other over mDNS): with
    /// 20 % packet loss on every link in both directions (nftables `numgen random` drops, so TCP
    /// retransmits and segments arrive out of order) and queueing delay (a 2 Mbit/s `tc tbf` on
    /// both ends of each link) — this kernel has no `sch_netem`, so `tc netem` cannot be used —
    /// the three write cards and Ana and Ben match and chat; host 2's link goes down in the middle
    /// of a 300-record burst from host 1 and comes back; host 3's daemon is paused with SIGSTOP
    /// past the peers' 15 s silence timeout while the others write, then resumed. Once the faults
    /// stop, all three converge (equal digests), every message is in the conversation exactly
    /// once, the paused node has caught up, and every replica passes `integrity_check`.
    @Test func lossDelayReorderingALinkDownMidBatchAndAPausedNodeAllConverge() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "nf")
        defer { try? lab.down() }
        try lab.up(3)
        var daemons: [Daemon] = []
        for host in 1...3 { daemons.append(try lab.startDaemon(on: host)) }
        func logs() -> String { daemons.enumerated().map { "log h\($0 + 1):\n\($1.log.suffix(4000))" }.joined(separator: "\n") }
        let sockets = (1...3).map(lab.socket)

        for (i, (name, role)) in [("Ana", "student"), ("Ben", "tutor"), ("Cy", "tutor")].enumerated() {
            try e2e.mm(["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", role], socket: sockets[i])
            try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: sockets[i])
        }
        let ids = try sockets.map { try #require(try mmJSON(e2e, ["whoami"], $0)["id"]?.stringValue) }
        for socket in sockets {
            let linked = labPoll(timeout: .seconds(30), { (try? mmJSON(e2e, ["status"], socket)["peers"]?.intValue) ?? 0 }, until: { $0 == 2 })
            #expect(linked.ok, "the three hosts should find each other before the faults\n\(logs())")
        }

        // Loss (and so retransmission and out-of-order segments) and delay on every link, both ways.
        func faults(_ on: Bool) throws {
            for host in 1...3 {
                let ns = ["/sbin/ip", "netns", "exec", "\(lab.prefix)\(host)"]
                let tbf = ["tbf", "rate", "2mbit", "burst", "16kb", "latency", "300ms"]
                let commands: [[String]] = on ? [
                    ["/sbin/tc", "qdisc", "add", "dev", "\(lab.prefix)v\(host)", "root"] + tbf,
                    ns + ["/sbin/tc", "qdisc", "add", "dev", "eth0", "root"] + tbf,
                    ns + ["/usr/sbin/nft", "add table inet mmfault; "
                          + "add chain inet mmfault in { type filter hook input priority 0; }; "
                          + "add chain inet mmfault out { type filter hook output priority 0; }; "
                          + "add rule inet mmfault in iifname eth0 numgen random mod 100 < 20 counter drop; "
                          + "add rule inet mmfault out oifname eth0 numgen random mod 100 < 20 counter drop"],
                ] : [
                    ["/sbin/tc", "qdisc", "del", "dev", "\(lab.prefix)v\(host)", "root"],
                    ns + ["/sbin/tc", "qdisc", "del", "dev", "eth0", "root"],
                    ns + ["/usr/sbin/nft", "delete table inet mmfault"],
                ]
                for argv in commands {
                    let run = try e2e.tool(argv)
                    guard run.status.exitCode == 0 else { throw E2EError("\(argv.joined(separator: " ")) failed: \(run.output)") }
                }
            }
        }
        try faults(true)
        let shown = try e2e.tool(["/sbin/ip", "netns", "exec", "\(lab.prefix)1", "/usr/sbin/nft", "list", "ruleset"]).output
        #expect(shown.contains("numgen random mod 100 < 20 counter"), "the loss rule should be on host 1: \(shown)")

        /// `count` card edits by the account of host `host`, over one connection; returns how
        /// many the daemon acknowledged. `during` runs after each edit with its number.
        @discardableResult
        func edits(on host: Int, _ count: Int, during: (Int) throws -> Void = { _ in }) throws -> Int {
            let connection = try RawConnection(sockets[host - 1])
            defer { connection.close() }
            var acknowledged = 0
            for n in 1...count {
                if connection.call("profile.set", ["availability": .string("h\(host) edit \(n)")])?["result"] != nil { acknowledged += 1 }
                try during(n)
            }
            return acknowledged
        }
        for host in 1...3 { #expect(try edits(on: host, 100) == 100) }
        try e2e.mm(["like", String(ids[1].prefix(12))], socket: sockets[0])
        let benSeesAna = labPoll(timeout: .seconds(60), { (try? mmJSON(e2e, ["feed"], sockets[1])["cards"]?.arrayValue?.count) ?? 0 }, until: { $0 >= 1 })
        #expect(benSeesAna.ok)
        try e2e.mm(["like", String(ids[0].prefix(12))], socket: sockets[1])
        let matched = labPoll(timeout: .seconds(60), { (try? mmJSON(e2e, ["matches"], sockets[0])["matches"]?.arrayValue?.count) ?? 0 }, until: { $0 == 1 })
        #expect(matched.ok, "Ana should see the match through the lossy links\n\(logs())")
        let matchedB = labPoll(timeout: .seconds(60), { (try? mmJSON(e2e, ["matches"], sockets[1])["matches"]?.arrayValue?.count) ?? 0 }, until: { $0 == 1 })
        #expect(matchedB.ok, "Ben should see the match through the lossy links\n\(logs())")
        var sent: [String] = []
        for n in 1...10 {
            for (from, to) in [(0, 1), (1, 0)] {
                let text = "lossy \(n) from \(from == 0 ? "Ana" : "Ben")"
                if (try? e2e.run(["chat", String(ids[to].prefix(12)), text], socket: sockets[from]).exitCode) == 0 { sent.append(text) }
            }
        }
        #expect(sent.count == 20, "every chat.send should be acknowledged locally: \(sent.count)")

        // Host 2's link goes down in the middle of a burst from host 1, and comes back.
        try edits(on: 1, 300) { n in
            if n == 60 { try lab.lab(["link-down", "2"]) }
            if n == 240 { try lab.lab(["link-up", "2"]) }
        }

        // Host 3 is paused past the silence timeout while hosts 1 and 2 write.
        daemons[2].process.send(SIGSTOP)
        try edits(on: 1, 50)
        try edits(on: 2, 50)
        let dropped = labPoll(timeout: .seconds(40), { (try? mmJSON(e2e, ["peers"], sockets[0])["peers"]?.arrayValue?.count) ?? 0 }, until: { $0 == 1 })
        #expect(dropped.ok, "host 1 should drop the paused host 3 after the silence timeout")
        daemons[2].process.send(SIGCONT)

        // The faults stop; everything converges.
        // How many packets the faults dropped (the rules count them).
        var droppedPackets = 0
        for host in 1...3 {
            let rules = try e2e.tool(["/sbin/ip", "netns", "exec", "\(lab.prefix)\(host)", "/usr/sbin/nft", "list", "table", "inet", "mmfault"]).output
            for match in rules.split(separator: "\n") where match.contains("counter packets") {
                if let n = match.split(separator: " ").drop(while: { $0 != "packets" }).dropFirst().first.flatMap({ Int($0) }) { droppedPackets += n }
            }
        }
        print("network faults: \(droppedPackets) packets dropped on the three hosts' links")
        #expect(droppedPackets > 100, "the loss rules dropped only \(droppedPackets) packets: the faults did not bite")
        try faults(false)
        func digest(_ socket: String) -> String? {
            try? RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")["digest"]?.stringValue
        }
        let converged = labPoll(timeout: .seconds(120), { sockets.map(digest) }, until: { Set($0).count == 1 && $0[0] != nil })
        #expect(converged.ok, "the three hosts should converge after the faults: \(converged.value)\n\(logs())")
        print("network faults: converged \(converged.after) after the faults stopped")
        let records = sockets.map { try? RPCClient(path: $0, timeout: .seconds(10)).call("replica.digest")["records"]?.intValue }
        #expect(Set(records).count == 1, "record counts differ: \(records)")
        // Written: 3 signups + 3 course edits; edits: host 1 100 + 300 + 50, host 2 100 + 50,
        // host 3 100; 2 likes; 20 messages. Held once compacted (PROTOCOL §9.3): each account's
        // first card and its machine's device certificate, its last course edit and its last
        // other edit (the earlier edits are superseded), the 2 likes and the 20 messages.
        let expected: Int64 = 3 * 2 + 3 * 2 + 2 + 20
        #expect(records.first == expected, "records: \(records) (nothing lost, nothing duplicated)")
        for (mine, other) in [(0, 1), (1, 0)] {
            let history = try RPCClient(path: sockets[mine], timeout: .seconds(10)).call("chat.history", ["id": .string(ids[other]), "limit": 1000])
            let texts = history["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
            #expect(texts.sorted() == sent.sorted(), "\(mine == 0 ? "Ana" : "Ben")'s conversation: \(texts.count) messages, \(Set(texts).count) distinct")
        }
        let card3 = try mmJSON(e2e, ["profile", "show", String(ids[0].prefix(12))], sockets[2])
        #expect(card3["availability"]?.stringValue == "h1 edit 50", "the paused host caught up with host 1's last edit: \(card3)")

        for (i, daemon) in daemons.enumerated() {
            daemon.process.send(SIGTERM)
            _ = daemon.process.wait(timeout: .seconds(15))
            let check = try e2e.tool(["/usr/bin/sqlite3", lab.stateDir(i + 1) + "/replica.db", "PRAGMA integrity_check;"])
            #expect(check.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "integrity_check on host \(i + 1): \(check.output)")
        }
    }
}
