import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Lazy push (PROTOCOL.md §13.7) in a full mesh of 20 daemons over loopback, each listening
    /// on its own 127.0.0.N and dialling from it (so no listener meets its limit of links per
    /// address), linked by static `--peer` lists. The first records settle the push tree (each
    /// node prunes the links its duplicates came over); once a record causes no duplicate
    /// anywhere, a fresh record reaches every node exactly once in full, plus IDs (`ihave`) from
    /// its lazy links. Then the node all trees hang from is killed while another writes: the
    /// others graft the writer's lazy links and every record still reaches every node.
    @Test func lazyPushSendsEachBodyOncePerNodeAndRepairsWhenATreeLinkFails() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let n = 20
        var daemons: [Daemon] = []
        var clients: [RPCClient] = []
        defer {
            clients.forEach { $0.close() }
            for d in daemons { d.kill() }
        }
        var ports: [Int] = []
        func host(_ i: Int) -> String { "127.0.0.\(i + 2)" }
        // One node at a time, each linked to every earlier one before the next starts (190
        // handshakes at once on a small machine would run past the handshake timeout).
        for i in 0..<n {
            let peers = (0..<i).flatMap { ["--peer", "\(host($0)):\(ports[$0])"] }
            let d = try e2e.startDaemon(stateDir: e2e.path("state-\(i)"), socket: e2e.path("\(i).sock"), listen: "\(host(i)):0", extra: peers)
            daemons.append(d)
            ports.append(try listenPort(e2e, d.socket))
            clients.append(try RPCClient(path: d.socket, timeout: .seconds(30), trusted: SocketPath.TrustedServers(uids: [geteuid()], kind: .given)))
            let linked = try poll(timeout: .seconds(30), { try clients[i].call("status")["peers"]?.intValue ?? 0 }, until: { $0 >= Int64(i) })
            try #require(linked >= Int64(i), "node \(i) linked to \(linked) of \(i) earlier nodes; its log:\n\(d.log)")
        }
        let everyone = Array(0..<n)
        func peersOf(_ nodes: [Int]) throws -> [Int64] { try nodes.map { try clients[$0].call("status")["peers"]?.intValue ?? -1 } }
        let meshed = try poll(timeout: .seconds(30), { try peersOf(everyone) }, until: { $0.allSatisfy { $0 == Int64(n - 1) } })
        try #require(meshed.allSatisfy { $0 == Int64(n - 1) }, "peers per node: \(meshed)")

        struct Counters: Equatable { var records: Int64; var bodies: Int64; var duplicates: Int64; var ids: Int64 }
        func counters(_ nodes: [Int]) throws -> [Counters] {
            try nodes.map { i in
                let s = try clients[i].call("status")
                return Counters(records: s["records"]?.intValue ?? -1, bodies: s["sync"]?["bodiesReceived"]?.intValue ?? -1,
                                duplicates: s["sync"]?["duplicateBodies"]?.intValue ?? -1, ids: s["sync"]?["idsAnnounced"]?.intValue ?? -1)
            }
        }
        /// A node's public replica digest (equal digests: equal record sets). Not the record
        /// count: a card edit supersedes the last one (compaction), so the count stays put.
        func digest(_ i: Int) throws -> String { try clients[i].call("replica.digest")["digest"]?.stringValue ?? "?" }
        /// Waits until every node of `nodes` holds what `writer` holds and no counter has moved
        /// for 500 ms.
        func settled(_ nodes: [Int], as writer: Int) throws -> [Counters] {
            // The writer's digest is read with the others each time: it may itself still be
            // taking an earlier record of someone else.
            let digests = try poll(timeout: .seconds(20), { try ([writer] + nodes).map(digest) }, until: { Set($0).count == 1 })
            #expect(Set(digests).count == 1, "replicas equal to node \(writer)'s: \(digests.map { $0 == digests[0] })")
            let all = try counters(nodes)
            var last = all, since = ContinuousClock.now
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now - since < .milliseconds(500), ContinuousClock.now < deadline {
                usleep(100_000)
                let now = try counters(nodes)
                if now != last { last = now; since = .now }
            }
            return last
        }
        func write(_ i: Int, _ bio: String) throws { _ = try clients[i].call("profile.set", ["bio": .string(bio)]) }

        // Two writers' accounts, then warm-up records on node 0 until one causes no duplicate.
        _ = try clients[0].call("account.signup", ["email": "tree@uni.edu", "name": "Tree Writer", "role": "student"])
        _ = try clients[1].call("account.signup", ["email": "repair@uni.edu", "name": "Repair Writer", "role": "student"])
        _ = try settled(everyone, as: 1)
        var before = try settled(everyone, as: 0)
        var warmUps = 0
        while warmUps < 6 {
            warmUps += 1
            try write(0, "warm-up \(warmUps)")
            let after = try settled(everyone, as: 0)
            defer { before = after }
            if zip(after, before).allSatisfy({ $0.duplicates == $1.duplicates }) { break }
        }
        print("lazy push: the tree settled after \(warmUps) warm-up record(s) (duplicates per node so far: \(before.map(\.duplicates)))")

        // A fresh record: each of the 19 others takes its body exactly once, and IDs besides.
        try write(0, "measured")
        let after = try settled(everyone, as: 0)
        let bodies = zip(after, before).map { Int($0.bodies - $1.bodies) }
        let ids = zip(after, before).map { Int($0.ids - $1.ids) }
        print("lazy push, 20-node mesh: bodies per node for one record \(bodies.dropFirst()), IDs announced per node \(ids.dropFirst())")
        #expect(bodies.dropFirst().allSatisfy { $0 == 1 }, "every node but the writer receives the body exactly once: \(bodies)")
        #expect(bodies[0] == 0, "the writer receives its own record back: \(bodies)")
        #expect(ids.dropFirst().allSatisfy { $0 >= 1 }, "every node hears of the record from its lazy links too: \(ids)")

        // Repair: node 1 writes (its records reach the others through node 0, the tree's hub);
        // node 0 is killed between its writes; the others graft and still get every record.
        let survivors = Array(1..<n)
        try write(1, "repair 1")
        _ = try settled(survivors, as: 1)
        daemons[0].kill()
        let left = try poll(timeout: .seconds(10), { try peersOf(survivors) }, until: { $0.allSatisfy { $0 == Int64(n - 2) } })
        #expect(left.allSatisfy { $0 == Int64(n - 2) }, "peers per survivor after node 0 died: \(left)")
        for k in 2...4 { try write(1, "repair \(k)") }
        let started = ContinuousClock.now
        let repaired = try poll(timeout: .seconds(20), { try survivors.map(digest) }, until: { Set($0).count == 1 })
        let target = repaired[0]
        print("lazy push: after the hub died, 3 records reached all \(survivors.count) survivors in \(ContinuousClock.now - started)")
        #expect(repaired.allSatisfy { $0 == target },
                "survivors holding node 1's records: \(repaired.map { $0 == target })\nlog of node 2:\n\(daemons[2].log)")
    }

    /// A flood of lazy-push messages (`ihave` and `graft` of 1,024 unknown IDs, `prune`s) is cut
    /// off as an offence past its rate (512 per 30 s), logged with the address; a graft for IDs
    /// not held is answered with nothing, and the honest peer keeps syncing.
    @Test func aFloodOfLazyPushMessagesIsCutOffAndTheHonestPeerSyncs() throws {
        try E2E.requireRoot()
        let pair = try FloodPair()
        defer { pair.close() }
        try pair.honestWrite("before the flood")
        let output = try EndToEndTests.hostile(pair.e2e, port: pair.portA, "grafts", from: "127.0.0.64", ["--wait", "10"])
        let result = output.split(separator: "\n").last(where: { $0.hasPrefix("result ") }) ?? ""
        #expect(result.contains("closed=true"), "a lazy-push flood should be cut off: \(output)\n\(pair.a.log)")
        #expect(pair.a.log.contains("ihave/prune/graft messages in") && pair.a.log.contains("peer.address=127.0.0.64"),
                "logged with the address: \(pair.a.log)")
        try pair.honestWrite("after the flood")
    }
}
