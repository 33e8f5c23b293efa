import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 7, item 1: three daemons syncing (B dials A, C dials A and B) while clients write —
    /// Ana on A and Ben on B chat and edit their cards, Cy on C edits hers — and one daemon at a
    /// time is killed with SIGKILL at a random moment (often with a request in flight) and
    /// restarted on the same state and port, `MM_CRASH_KILLS` times (default 600; the issue asks for at least 200). Then every
    /// operation a client saw acknowledged is on every node: each acknowledged message is in both
    /// people's histories, each card shows at least the last acknowledged wage, the match
    /// stands; the public digests are equal and `integrity_check` is ok on all three replicas.
    @Test func threeDaemonsKilledAtRandomLoseNothingAcknowledgedAndConverge() throws {
        try E2E.requireRoot()
        let kills = Int(ProcessInfo.processInfo.environment["MM_CRASH_KILLS"] ?? "") ?? 600
        let seed = UInt64(ProcessInfo.processInfo.environment["MM_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("crash loop: \(kills) kills, seed \(seed) (MM_CRASH_SEED=\(seed) replays the choices)")
        var rng = SplitMix(seed: seed)
        let e2e = try E2E()
        defer { e2e.cleanup() }

        let names = ["a", "b", "c"]
        let sockets = names.map { e2e.path("\($0).sock") }
        let states = names.map { e2e.path("state-\($0)") }
        var daemons: [Daemon?] = [nil, nil, nil]
        defer { for d in daemons { d?.kill() } }
        var ports: [Int] = [0, 0, 0]

        daemons[0] = try e2e.startDaemon(stateDir: states[0], socket: sockets[0])
        ports[0] = try listenPort(e2e, sockets[0])
        daemons[1] = try e2e.startDaemon(stateDir: states[1], socket: sockets[1], extra: ["--peer", "127.0.0.1:\(ports[0])"])
        ports[1] = try listenPort(e2e, sockets[1])
        daemons[2] = try e2e.startDaemon(stateDir: states[2], socket: sockets[2],
                                         extra: ["--peer", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[1])"])
        ports[2] = try listenPort(e2e, sockets[2])
        func extra(_ i: Int) -> [String] {
            switch i {
            case 1: ["--peer", "127.0.0.1:\(ports[0])"]
            case 2: ["--peer", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[1])"]
            default: []
            }
        }
        func logs() -> String { zip(names, daemons).map { "log \($0):\n\($1?.log ?? "")" }.joined(separator: "\n") }

        for (i, (name, role)) in [("Ana", "student"), ("Ben", "tutor"), ("Cy", "tutor")].enumerated() {
            try e2e.mm(["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", role], socket: sockets[i])
            try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: sockets[i])
        }
        let ids = try sockets.map { try #require(try mmJSON(e2e, ["whoami"], $0)["id"]?.stringValue) }
        // Ana and Ben match once each sees the other's card.
        _ = try poll(timeout: .seconds(20), { try mmJSON(e2e, ["feed"], sockets[0])["cards"]?.arrayValue?.count ?? 0 }, until: { $0 == 2 })
        _ = try poll(timeout: .seconds(20), { try mmJSON(e2e, ["feed"], sockets[1])["cards"]?.arrayValue?.count ?? 0 }, until: { $0 == 1 })
        try e2e.mm(["like", String(ids[1].prefix(12))], socket: sockets[0])
        try e2e.mm(["like", String(ids[0].prefix(12))], socket: sockets[1])
        _ = try poll(timeout: .seconds(20), { try mmJSON(e2e, ["matches"], sockets[1])["matches"]?.arrayValue?.count ?? 0 }, until: { $0 == 1 })

        /// What clients saw acknowledged.
        var sentBy: [[String]] = [[], []]           // messages acknowledged from Ana (0) and Ben (1)
        var wage: [Int] = [0, 0, 0]                 // the last acknowledged wage per node's account
        var nextWage = 1
        var attempted = 0, acknowledged = 0
        var killed = 0
        var midRequest = (answered: 0, lost: 0)   // kills with a request in flight: answered before dying, or not
        let started = ContinuousClock.now

        /// One operation on node `i` over a fresh connection; when `killAfter` is set, the node
        /// is killed that many microseconds after the request went out (before reading the answer).
        func operate(_ i: Int, killAfter: UInt32?) throws {
            attempted += 1
            let isChat = i < 2 && rng.next() % 2 == 0
            let text = "m\(attempted) from \(names[i])"
            let value = nextWage
            nextWage += 1
            let (method, params): (String, JSON) = isChat
                ? ("chat.send", ["id": .string(ids[1 - i]), "text": .string(text)])
                : ("profile.set", ["wage": .int(Int64(value))])
            guard let connection = try? RawConnection(sockets[i]) else { return }   // down: nothing acknowledged
            defer { connection.close() }
            let request: JSON = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
            guard connection.send(request.description + "\n") == 0 else { return }
            if let delay = killAfter {
                usleep(delay)
                try restart(i)
            }
            let answer = connection.readJSON(timeout: .seconds(10))
            if killAfter != nil {
                if answer == nil { midRequest.lost += 1 } else { midRequest.answered += 1 }
            }
            guard let answer, answer["result"] != nil else { return }
            acknowledged += 1
            if isChat { sentBy[i].append(text) } else { wage[i] = value }
        }

        func restart(_ i: Int) throws {
            _ = daemons[i]?.kill()
            killed += 1
            daemons[i] = try e2e.startDaemon(stateDir: states[i], socket: sockets[i], listen: "127.0.0.1:\(ports[i])", extra: extra(i))
        }

        while killed < kills {
            let i = Int(rng.next() % 3)
            // Most operations run undisturbed; about one in three kills its node mid-request,
            // after 0 to 3 ms (before, during or after the commit).
            let kill = rng.next() % 3 == 0
            try operate(i, killAfter: kill ? UInt32(rng.next() % 3000) : nil)
        }
        let loopTime = ContinuousClock.now - started
        print("crash loop: \(killed) SIGKILLs (\(midRequest.lost + midRequest.answered) with a request in flight: \(midRequest.lost) died before answering, \(midRequest.answered) after), \(attempted) operations attempted, \(acknowledged) acknowledged, in \(loopTime)")

        // Everything converges.
        func digest(_ socket: String) throws -> String {
            try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")["digest"]?.stringValue ?? "?"
        }
        let digests: [String]
        do {
            digests = try poll(timeout: .seconds(60), { try sockets.map(digest) }, until: { Set($0).count == 1 })
        } catch {
            throw E2EError("after the crash loop (seed \(seed)): \(error)\n\(logs())")
        }
        #expect(Set(digests).count == 1, "digests differ after the crash loop: \(digests)\n\(logs())")

        // Every acknowledged message is in both histories, once.
        func history(_ i: Int) throws -> [String] {
            let r = try RPCClient(path: sockets[i], timeout: .seconds(10)).call("chat.history", ["id": .string(ids[1 - i]), "limit": 100_000])
            return r["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        }
        let ana = try history(0), ben = try history(1)
        #expect(ana == ben, "Ana and Ben see different conversations (\(ana.count) vs \(ben.count) messages)")
        for who in 0..<2 {
            let missing = sentBy[who].filter { !ana.contains($0) || !ben.contains($0) }
            #expect(missing.isEmpty, "\(missing.count) acknowledged messages from \(names[who]) are missing, e.g. \(missing.prefix(3))")
        }
        #expect(Set(ana).count == ana.count, "a message appears twice")
        // Every card shows at least the last acknowledged wage, the same on all nodes.
        for (i, id) in ids.enumerated() {
            let shown = try sockets.map { try mmJSON(e2e, ["profile", "show", String(id.prefix(12))], $0)["wage"]?.intValue ?? -1 }
            #expect(Set(shown).count == 1 && (shown.first ?? -1) >= Int64(wage[i]),
                    "\(names[i])'s wage: acknowledged \(wage[i]), shown \(shown)")
        }
        #expect(try mmJSON(e2e, ["matches"], sockets[0])["matches"]?.arrayValue?.count == 1, "the match should stand")

        // The replicas are intact.
        for i in 0..<3 {
            _ = daemons[i]?.terminate()
            let check = try e2e.tool(["/usr/bin/sqlite3", states[i] + "/replica.db", "PRAGMA integrity_check;"])
            #expect(check.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "integrity_check of \(names[i]): \(check.output)")
        }
        print("crash loop: \(ana.count) messages in the conversation, \(sentBy[0].count + sentBy[1].count) acknowledged; digests equal")
    }
}

/// A small seeded generator (SplitMix64), so a failing run replays with MM_CRASH_SEED.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
