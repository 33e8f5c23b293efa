import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Three daemons in a line A–B–C (B dials A, C dials B): each writes 2,000 records while
    /// connected and all public digests become equal; then B stops, A and C write 200 more
    /// each, B restarts on the same state and port, and all three converge again.
    @Test func threeNodesInALineConvergeAndRecoverFromAPartition() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let stateB = e2e.path("state-b")
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }

        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        daemons.append(a)
        let portA = try listenPort(e2e, socketA)
        var b = try e2e.startDaemon(stateDir: stateB, socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        daemons.append(b)
        let portB = try listenPort(e2e, socketB)
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: socketC, extra: ["--peer", "127.0.0.1:\(portB)"])
        daemons.append(c)
        func logs() -> String { "log A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }

        // One account per node (root on each): one card record each.
        for (socket, name) in [(socketA, "Ana"), (socketB, "Ben"), (socketC, "Cat")] {
            try e2e.mm(["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", "student"], socket: socket)
        }
        let sockets = [socketA, socketB, socketC]

        // Each node writes `count` profile records over one raw connection per node; the three
        // nodes' requests go out together, then the three answers are read.
        func writeRecords(_ count: Int, on targets: [String], tag: String) throws {
            let connections = try targets.map { try RawConnection($0) }
            defer { for c in connections { c.close() } }
            for i in 0..<count {
                for (n, conn) in connections.enumerated() {
                    let request: JSON = ["jsonrpc": "2.0", "id": .int(Int64(i + 1)), "method": "profile.set",
                                         "params": ["bio": .string("\(tag) node \(n) bio \(i)")]]
                    guard conn.send(request.description + "\n") == 0 else { throw E2EError("send to \(targets[n]) failed at \(i)") }
                }
                for (n, conn) in connections.enumerated() {
                    guard let response = conn.readJSON(timeout: .seconds(10)) else {
                        throw E2EError("no answer from \(targets[n]) to profile.set #\(i)\n\(logs())")
                    }
                    guard response["id"] == .int(Int64(i + 1)), response["result"] != nil else {
                        throw E2EError("profile.set #\(i) on \(targets[n]) answered \(response)")
                    }
                }
            }
        }

        struct Digest: Equatable { let digest: String; let records: Int64 }
        func digests(_ targets: [String]) throws -> [Digest] {
            try targets.map { socket in
                let client = try RPCClient(path: socket, timeout: .seconds(10))
                let r = try client.call("replica.digest")
                guard let d = r["digest"]?.stringValue, let n = r["records"]?.intValue else {
                    throw E2EError("replica.digest on \(socket) answered \(r)")
                }
                return Digest(digest: d, records: n)
            }
        }
        func converged(_ ds: [Digest], records: Int64) -> Bool {
            ds.allSatisfy { $0 == ds[0] } && ds[0].records == records
        }
        let expected1: Int64 = 3 * 3   // the signup card, its device certificate and its last bio edit, per account

        let phase1 = try step("connected: 2,000 records on each node, all digests equal") {
            let started = ContinuousClock.now
            try writeRecords(2000, on: sockets, tag: "connected")
            let wrote = ContinuousClock.now - started
            // Per account: the signup card and its last bio edit; the 1,999 edits before it are
            // superseded and dropped (PROTOCOL.md §9.3). The digest still covers every card's value.
            let first = try poll(timeout: .seconds(30), { try digests(sockets) }, until: { converged($0, records: expected1) })
            let converge1 = ContinuousClock.now - started
            print("three-node convergence: wrote 3 × 2,000 records in \(wrote); all digests equal \(converge1) after the writes began (\(converge1 - wrote) after they ended)")
            #expect(converged(first, records: expected1), "digests after 3 × 2,000 records: \(first)\n\(logs())")
            return converged(first, records: expected1)
        }
        guard phase1 else { return }

        try step("partition: B stopped, A and C write 200 records each and differ") {
            let stopped = b.terminate()
            #expect(stopped != nil, "B did not stop on SIGTERM")
            if stopped == nil { b.kill() }
            try writeRecords(200, on: [socketA, socketC], tag: "partitioned")
            let split = try digests([socketA, socketC])
            #expect(split[0].records == expected1 && split[1].records == expected1 && split[0] != split[1],
                    "A and C should each hold only their own new records while B is down: \(split)")
        }

        try step("healed: B restarts on the same state and port, all three converge again") {
            let started = ContinuousClock.now
            b = try e2e.startDaemon(stateDir: stateB, socket: socketB, listen: "127.0.0.1:\(portB)",
                                    extra: ["--peer", "127.0.0.1:\(portA)"])
            daemons.append(b)
            #expect(try listenPort(e2e, socketB) == portB)
            let expected2 = expected1   // still one card edit per account, now the partition's last
            let second = try poll(timeout: .seconds(30), { try digests(sockets) }, until: { converged($0, records: expected2) })
            let converge2 = ContinuousClock.now - started
            print("three-node convergence: after the partition (200 records on A, 200 on C), all digests equal \(converge2) after B restarted")
            #expect(converged(second, records: expected2), "digests after the partition healed: \(second)\n\(logs())")
        }
    }
}
