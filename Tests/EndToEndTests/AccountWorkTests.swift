import Foundation
import MentorAPI
import Testing

extension EndToEndTests {
    /// Issue 13, item 4: "at the default difficulty, a record without enough work is refused".
    /// Two daemons on the built-in network at its default difficulty (no `--network-work-bits`),
    /// B linked to A. Ana signs up on A (the client and daemon make the real work: seconds). A
    /// hostile peer then sends A a first card without work, and one with a near miss (4 bits
    /// short at most): each is refused as `insufficient-work`, the link is closed and the address
    /// refused (an offence), nothing is stored. A first card with enough work from the same tool
    /// is kept and relayed to B: A and B end up with the same records.
    @Test func atTheDefaultDifficultyAFirstRecordWithoutEnoughWorkIsRefused() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA, builtInDifficulty: true)
        defer { a.kill() }
        let statusA = try mmJSON(e2e, ["status"], socketA)
        let bits = Int(try #require(statusA["networkWorkBits"]?.intValue))
        #expect(bits == 23, "the built-in network's documented difficulty (AccountWork.defaultBits): \(statusA)")
        #expect((statusA["signupWorkMillis"]?.intValue ?? 0) > 0, "status estimates what a signup's work takes here: \(statusA)")
        let portA = Int(try #require(statusA["listen"]?["port"]?.intValue))
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"],
                                    builtInDifficulty: true)
        defer { b.kill() }

        let signup = try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        #expect(signup.stdout.contains("Signed up."), "\(signup)")
        #expect(signup.stderr.contains("Making this account's proof of work (about"), "the client says why signup takes seconds: \(signup)")

        func digest(_ socket: String) throws -> (digest: String, records: Int64) {
            let r = try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")
            guard let d = r["digest"]?.stringValue, let n = r["records"]?.intValue else { throw E2EError("replica.digest: \(r)") }
            return (d, n)
        }
        let start = try poll(timeout: .seconds(20), { (try digest(socketA), try digest(socketB)) },
                             until: { $0.0 == $0.1 && $0.0.records == 2 }).0
        #expect(start.records == 2, "Ana's card and her machine's device certificate reach B")

        for (attack, address) in [("no-work", "127.0.0.61"), ("weak-work", "127.0.0.62")] {
            let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", attack, "--from", address, "--wait", "5",
                                                 "--network-work-bits", "\(bits)"], timeout: .seconds(60))
            #expect(status.exitCode == 0, "mentormate-hostile-peer \(attack): \(output)")
            #expect(output.contains("result \(attack) closed=true"), "A closes a peer that sends a card without enough work: \(output)")
            let named = try poll({ a.log.split(separator: "\n").filter { $0.contains(address + ":") } },
                                 until: { $0.contains { $0.contains("peer refused for a while") } })
            #expect(named.contains { $0.contains("insufficient-work") } && named.contains { $0.contains("peer refused for a while") },
                    "A's log names \(address), the refusal code and the penalty: \(named)")
            #expect(try digest(socketA) == start, "nothing of \(attack) is stored")
        }

        let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "valid", "--from", "127.0.0.63", "--wait", "3",
                                             "--network-work-bits", "\(bits)"], timeout: .seconds(180))
        #expect(status.exitCode == 0 && output.contains("result valid closed=false"), "a card with enough work is kept: \(output)")
        let end = try poll(timeout: .seconds(20), { (try digest(socketA), try digest(socketB)) },
                           until: { $0.0 == $0.1 && $0.0.records == 3 })
        #expect(end.0.records == 3 && end.0 == end.1, "the valid card is stored on A and relayed to B: \(end)\nlog A:\n\(a.log)")
    }
}
