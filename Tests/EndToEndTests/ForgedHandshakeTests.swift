import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 11 item 8: an insider (it holds the network key) dials daemon A and sends a msg3
    /// claiming another node's key — first C's (an honest node not linked to A), then B's (A's
    /// honest peer, linked right now) — signed by its own key. A closes the link, logs the
    /// offence (`badSignature`) with the insider's address, stores nothing (the insider sends a
    /// hello and a valid card behind its msg3), never lists the claimed node among its peers for
    /// it, and refuses the address; B keeps syncing with A throughout.
    @Test func insiderClaimingAnotherNodesKeyInMessage3IsRefusedWhileTheHonestPeerKeepsSyncing() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        // C only lends its node key: an honest node the insider pretends to be. It links to nobody.
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: socketC)
        defer { c.kill() }
        let nodeB = try #require(try mmJSON(e2e, ["status"], socketB)["node"]?.stringValue)
        let nodeC = try #require(try mmJSON(e2e, ["status"], socketC)["node"]?.stringValue)
        c.kill()

        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "25"], socket: socketB)

        func digest(_ socket: String) throws -> (digest: String, records: Int64) {
            let r = try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")
            guard let d = r["digest"]?.stringValue, let n = r["records"]?.intValue else {
                throw E2EError("replica.digest on \(socket) answered \(r)")
            }
            return (d, n)
        }
        func peersOfA() throws -> [String] {
            (try mmJSON(e2e, ["peers"], socketA)["peers"]?.arrayValue ?? []).compactMap { $0["node"]?.stringValue }
        }
        var wage = 25
        /// Ben writes on B; A must hold it within 15 s.
        func honestWrite(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            wage += 1
            try e2e.mm(["profile", "set", "--wage", "\(wage)"], socket: socketB, sourceLocation: sourceLocation)
            let target = try digest(socketB)
            let reached = try poll(timeout: .seconds(15), { try digest(socketA) }, until: { $0 == target })
            #expect(reached == target, "Ben's write on B should reach A (\(what)): A \(reached), B \(target)\nlog A:\n\(a.log)",
                    sourceLocation: sourceLocation)
        }
        /// A's log lines naming `host` (any port) as the peer's address.
        func lines(naming host: String) -> [Substring] {
            a.log.split(separator: "\n").filter { $0.contains("peer.address=\(host):") }
        }

        let linked = try poll({ try peersOfA() }, until: { $0 == [nodeB] })
        #expect(linked == [nodeB], "A should have B as its one peer before the attack: \(linked)")
        try honestWrite("before the attack")

        var lastHost = 40
        for (who, claimed) in [("C, linked to nobody", nodeC), ("B, linked to A", nodeB)] {
            lastHost += 1
            let address = "127.0.0.\(lastHost)"
            let before = try digest(socketA)
            let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "forged-msg3", "--claim", claimed,
                                                 "--from", address, "--wait", "5"], timeout: .seconds(60))
            #expect(status.exitCode == 0, "mentormate-hostile-peer forged-msg3 failed: \(output)")
            #expect(output.contains("result forged-msg3 closed=true") && output.contains("received=0 "),
                    "A should close a msg3 claiming \(who) at once, sending nothing: \(output)\nlog A:\n\(a.log)")
            let named = try poll({ lines(naming: address) }, until: { $0.contains { $0.contains("peer refused for a while") } })
            #expect(named.contains { $0.contains("peer refused for a while") && $0.contains("badSignature") },
                    "A's log should name \(address) with badSignature and its refusal (claiming \(who)): \(named)\nlog A:\n\(a.log)")
            #expect(named.count <= 4, "A logged \(named.count) lines for one forged msg3: \(named)")
            #expect(!lines(naming: address).contains { $0.contains("peer connected") },
                    "A must never count the insider as connected (claiming \(who)): \(lines(naming: address))")
            let peers = try peersOfA()
            #expect(peers == [nodeB], "A's peers should be B alone, never the claimed node for the insider (\(who)): \(peers)")
            let after = try digest(socketA)
            #expect(after == before, "A stored something from the insider claiming \(who): \(before) -> \(after)")
            // Its address is refused now: even an honest handshake from it is closed at once.
            let again = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "valid", "--from", address], timeout: .seconds(30))
            #expect(again.status.exitCode == 1 && again.output.contains("closed the connection during the handshake"),
                    "A should refuse \(address) after its forged msg3: \(again)")
            try honestWrite("after the msg3 claiming \(who)")
        }
        #expect(try peersOfA() == [nodeB], "B should still be A's one peer after the attack")
        a.kill()
        b.kill()
    }

    /// A static peer whose handshake is an offence (its msg2 is garbage: it holds no network key,
    /// or forges) has its address refused, and the daemon does not dial it again before the
    /// refusal ends (2 s, then 4 s) — its redial backoff alone (250 ms, doubling) would dial it
    /// four or more times in 5 s.
    @Test func aStaticPeerWhoseHandshakeIsAnOffenceIsNotRedialledUntilItsRefusalEnds() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let forger = try CaptureListener()
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: e2e.path("a.sock"),
                                    extra: ["--peer", "127.0.0.1:\(forger.port)"])
        defer { a.kill() }
        // Each dial: read A's msg1 (64 bytes), answer 144 random bytes (a msg2 that does not open), close.
        guard forger.capture(64, timeout: .seconds(10), reply: HostileTCP.random(144)) != nil else {
            Issue.record("A did not dial its static peer within 10 s\nlog A:\n\(a.log)")
            return
        }
        let first = ContinuousClock.now
        var redials: [Duration] = []
        while ContinuousClock.now - first < .seconds(5) {
            let left = Duration.seconds(5) - (ContinuousClock.now - first)
            guard forger.capture(64, timeout: left, reply: HostileTCP.random(144)) != nil else { break }
            redials.append(ContinuousClock.now - first)
        }
        let refusals = a.log.split(separator: "\n").filter {
            $0.contains("peer refused for a while") && $0.contains("peer.address=127.0.0.1:\(forger.port)")
        }
        #expect(refusals.first?.contains("decryptionFailed") == true, "A should refuse its static peer for the forged msg2: \(refusals)\nlog A:\n\(a.log)")
        #expect(!redials.isEmpty && redials.count <= 2 && redials[0] >= .milliseconds(1900),
                "A should dial the refused peer again only after its 2 s refusal, not on its backoff: redials at \(redials)\nlog A:\n\(a.log)")
        a.kill()
    }
}
