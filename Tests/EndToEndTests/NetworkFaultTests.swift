import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 7, item 2, in the multi-host lab (three hosts finding each other over mDNS): with
    /// 20 % loss, 50 ± 20 ms delay and reordering on every link (`tc netem`, both directions),
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

        // Loss, delay and reordering on every link, both ways.
        func netem(_ action: String) throws {
            for host in 1...3 {
                let rule = action == "del" ? [] : ["netem", "loss", "20%", "delay", "50ms", "20ms", "reorder", "25%", "50%"]
                for argv in [["/sbin/tc", "qdisc", action, "dev", "\(lab.prefix)v\(host)", "root"] + rule,
                             ["/sbin/ip", "netns", "exec", "\(lab.prefix)\(host)", "/sbin/tc", "qdisc", action, "dev", "eth0", "root"] + rule] {
                    let run = try e2e.tool(argv)
                    guard run.status.exitCode == 0 else { throw E2EError("\(argv.joined(separator: " ")) failed: \(run.output)") }
                }
            }
        }
        try netem("add")
        let shown = try e2e.tool(["/sbin/tc", "qdisc", "show", "dev", "\(lab.prefix)v1"]).output
        #expect(shown.contains("netem") && shown.contains("loss 20%"), "netem should be on host 1's link: \(shown)")

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
        try netem("del")
        func digest(_ socket: String) -> String? {
            try? RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")["digest"]?.stringValue
        }
        let converged = labPoll(timeout: .seconds(120), { sockets.map(digest) }, until: { Set($0).count == 1 && $0[0] != nil })
        #expect(converged.ok, "the three hosts should converge after the faults: \(converged.value)\n\(logs())")
        print("network faults: converged \(converged.after) after the faults stopped")
        let records = sockets.map { try? RPCClient(path: $0, timeout: .seconds(10)).call("replica.digest")["records"]?.intValue }
        #expect(Set(records).count == 1, "record counts differ: \(records)")
        // 3 signups + 3 course edits; edits: host 1 100 + 300 + 50, host 2 100 + 50, host 3 100;
        // 2 likes; 20 messages.
        #expect(records.first == 3 + 3 + 450 + 150 + 100 + 2 + 20, "records: \(records) (nothing lost, nothing duplicated)")
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
