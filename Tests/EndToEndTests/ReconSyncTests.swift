import Foundation
import MentorAPI
import Testing

/// Sync protocol v2 through real daemons over loopback (issue 13): forks v1 could not see or
/// spread, and a v1 peer.
extension EndToEndTests {
    static func toolField(_ output: String, _ key: String) -> String? {
        output.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    static func card(_ socket: String, _ author: String) -> JSON? {
        try? RPCClient(path: socket, timeout: .seconds(10)).call("profile.show", ["id": .string(author)])
    }

    /// The hidden-fork attack (issue 13): one account's 70 card edits, two chains that differ at
    /// some seqs (the last among them: "bio A 70" against "bio B 70") with equal v1 digests
    /// (chosen by Gaussian elimination over GF(2), `HiddenFork.swift` in the hostile-peer tool),
    /// one chain given to A and the other to B. v1 compared hello digests, found them equal and
    /// never exchanged anything; v2's round finds the differing IDs, and both end holding both
    /// chains with the author flagged as forked.
    @Test func aForkHiddenFromV1DigestsIsFoundAndBothNodesHoldBothChains() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let tool = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        var b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB)
        defer { b.kill() }
        let portB = try listenPort(e2e, socketB)
        let seed = String(repeating: "6b", count: 32)
        func feed(_ mode: String, _ port: Int, _ from: String) throws -> String {
            let (status, output) = try e2e.tool([tool, "127.0.0.1", "\(port)", mode, "--author-seed", seed, "--from", from, "--wait", "1"])
            #expect(status.exitCode == 0, "\(mode): \(output)")
            return output
        }
        let fedA = try feed("fork-hidden-a", portA, "127.0.0.45"), fedB = try feed("fork-hidden-b", portB, "127.0.0.46")
        let author = try #require(Self.toolField(fedA, "author")), differ = try #require(Self.toolField(fedA, "differ"))
        let variants = differ.split(separator: ",").count
        print("hidden fork: chains differ at seqs \(differ) (\(variants) of 70); v1 digests \(Self.toolField(fedA, "digest-a") ?? "?") and \(Self.toolField(fedA, "digest-b") ?? "?")")
        #expect(Self.toolField(fedA, "digest-a") == Self.toolField(fedA, "digest-b") && fedB.contains("differ=\(differ) "),
                "the two chains have equal v1 digests: \(fedA)\n\(fedB)")
        #expect(differ.hasSuffix(",70"))
        // Every edit writes all its card's fields, so a chain compacts to its seq 1 (the proof
        // of work) and its seq 70; seqs 2...69 are superseded and dropped (PROTOCOL.md §9.3).
        #expect(try poll { try Self.digest(socketA).records } until: { $0 == 2 } == 2, "A holds chain a:\n\(a.log)")
        #expect(try poll { try Self.digest(socketB).records } until: { $0 == 2 } == 2, "B holds chain b:\n\(b.log)")
        #expect(Self.card(socketA, author)?["bio"]?.stringValue == "bio A 70")
        #expect(Self.card(socketB, author)?["bio"]?.stringValue == "bio B 70")

        // B, restarted with A as its peer, links to A: one round and both hold both chains.
        #expect(b.terminate() != nil)
        b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, listen: "127.0.0.1:\(portB)",
                                extra: ["--peer", "127.0.0.1:\(portA)"])
        // Both: seq 1 (both variants if they differ there), both seq 70s (concurrent writes).
        let both = 3 + (differ.split(separator: ",").first == "1" ? 1 : 0)
        let converged = try poll(timeout: .seconds(20), { (try Self.digest(socketA), try Self.digest(socketB)) },
                                 until: { $0.0 == $0.1 && $0.0.records == Int64(both) })
        #expect(converged.0 == converged.1 && converged.0.records == Int64(both),
                "A and B should both hold both chains (\(both) records): \(converged)\nlog A:\n\(a.log)\nlog B:\n\(b.log)")
        #expect(Self.card(socketA, author)?["forked"]?.boolValue == true, "A flags the author as forked")
        #expect(Self.card(socketB, author)?["forked"]?.boolValue == true, "B flags the author as forked")
    }

    /// X–Z–Y in a line (only X–Z and Z–Y links, via --peer), links up throughout: the same
    /// account writes its seqs differently on X and on Y (the hidden-fork chains, so seq 70 shows
    /// "bio A 70" on one and "bio B 70" on the other). v1 never pushed a variant of a seq the
    /// peer held, so Z stored both and Y never got X's until a reconnect. v2 pushes every
    /// applied record to every link but its origin: all three end with both chains, no link
    /// having closed.
    @Test func aForkWrittenAtBothEndsOfALineReachesEveryNodeWithoutAReconnect() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let tool = try Binaries.tool("mentormate-hostile-peer")
        let sockets = ["x", "z", "y"].map { e2e.path("\($0).sock") }
        let z = try e2e.startDaemon(stateDir: e2e.path("state-z"), socket: sockets[1])
        defer { z.kill() }
        let portZ = try listenPort(e2e, sockets[1])
        let x = try e2e.startDaemon(stateDir: e2e.path("state-x"), socket: sockets[0], extra: ["--peer", "127.0.0.1:\(portZ)"])
        defer { x.kill() }
        let y = try e2e.startDaemon(stateDir: e2e.path("state-y"), socket: sockets[2], extra: ["--peer", "127.0.0.1:\(portZ)"])
        defer { y.kill() }
        let portX = try listenPort(e2e, sockets[0]), portY = try listenPort(e2e, sockets[2])
        let linked = try poll { try mmJSON(e2e, ["status"], sockets[1])["peers"]?.intValue ?? 0 } until: { $0 == 2 }
        #expect(linked == 2, "Z links to X and Y:\n\(z.log)")
        let seed = String(repeating: "7c", count: 32)
        let fedX = try e2e.tool([tool, "127.0.0.1", "\(portX)", "fork-hidden-a", "--author-seed", seed, "--from", "127.0.0.47", "--wait", "1"])
        let fedY = try e2e.tool([tool, "127.0.0.1", "\(portY)", "fork-hidden-b", "--author-seed", seed, "--from", "127.0.0.48", "--wait", "1"])
        #expect(fedX.status.exitCode == 0 && fedY.status.exitCode == 0, "\(fedX.output)\n\(fedY.output)")
        let author = try #require(Self.toolField(fedX.output, "author"))
        let differX = try #require(Self.toolField(fedX.output, "differ")).split(separator: ",")
        // Compacted: seq 1 (both variants if they differ there) and both seq 70s (PROTOCOL.md §9.3).
        let both = Int64(3 + (differX.first == "1" ? 1 : 0))
        let held = try poll(timeout: .seconds(20), { try sockets.map { try Self.digest($0) } },
                            until: { $0.allSatisfy { $0.records == both } && Set($0.map(\.digest)).count == 1 })
        #expect(held.allSatisfy { $0.records == both } && Set(held.map(\.digest)).count == 1,
                "X, Z and Y should all hold both chains (\(both) records): \(held)\nlog X:\n\(x.log)\nlog Z:\n\(z.log)\nlog Y:\n\(y.log)")
        for (name, socket) in zip(["X", "Z", "Y"], sockets) {
            #expect(Self.card(socket, author)?["forked"]?.boolValue == true, "\(name) flags the author as forked")
        }
        // The feeding tools' own links (from .47 and .48) end, as they should; no other does.
        let reconnects = (x.log + z.log + y.log).split(separator: "\n").filter {
            ($0.contains("peer disconnected") || $0.contains("sync with a peer ended") || $0.contains("peer connected"))
                && !$0.contains("127.0.0.47") && !$0.contains("127.0.0.48")
        }
        #expect(reconnects.count == 4, "the two links came up once each (logged at both ends) and none closed:\n\(reconnects.joined(separator: "\n"))")
    }

    /// A peer speaking sync protocol v1 gets one clear log line, is not refused (no offence),
    /// and the daemon keeps serving.
    @Test func aV1PeerIsToldToUpgradeInOneLogLineWithoutBlame() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let tool = try Binaries.tool("mentormate-hostile-peer")
        let socket = e2e.path("a.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socket)
        defer { a.kill() }
        let port = try listenPort(e2e, socket)
        for _ in 0..<2 {
            let (status, output) = try e2e.tool([tool, "127.0.0.1", "\(port)", "v1-hello", "--from", "127.0.0.49", "--wait", "3"])
            #expect(status.exitCode == 0 && Self.toolField(output, "closed") == "true", "the daemon ends the session: \(output)\n\(a.log)")
        }
        let lines = try poll({ a.log.split(separator: "\n").filter { $0.contains("sync protocol v1") } }, until: { $0.count == 2 })
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("the peer speaks sync protocol v1; this build speaks v5 — upgrade it") },
                "one line per attempt, saying what to do:\n\(a.log)")
        #expect(!a.log.contains("peer refused for a while"), "a v1 peer is no offence: the second attempt got as far as the first\n\(a.log)")
        #expect(try mmJSON(e2e, ["status"], socket)["peers"]?.intValue == 0)
    }
}
