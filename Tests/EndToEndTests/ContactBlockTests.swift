import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 16 (contact, block) with three daemons and the real client. Cy's node C links Ana's
    /// node A (through a relay that records every byte) and Ben's node B. Ana's contact, given
    /// before any match, reaches Ben when they match (`profile show`), and nobody else: it is
    /// not on the wire, not in C's replica file or its WAL, and Cy does not see it. Ben unmatches;
    /// Ana's later edit is not readable by him. Ben then matches Cy and blocks him through the
    /// client: Cy sees an ordinary unmatch, Ben's feed, matches and conversation drop Cy, a like
    /// is refused until `unblock`, and bad blocks fail with a clear message.
    @Test func theContactReachesOnlyTheMatchAndABlockHidesThePerson() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let stateC = e2e.path("state-c")
        var daemons: [Daemon] = []
        var relay: CaptureRelay?
        defer {
            relay?.stop()
            for d in daemons { d.kill() }
        }
        let c = try e2e.startDaemon(stateDir: stateC, socket: socketC)
        daemons.append(c)
        let portC = try listenPort(e2e, socketC)
        let tap = try CaptureRelay(targetPort: portC)
        relay = tap
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portC)"])
        daemons.append(b)
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA, extra: ["--peer", "127.0.0.1:\(tap.port)"])
        daemons.append(a)
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }
        let timeout: Duration = .seconds(20)
        let contact = "contact-secret-5521", later = "contact-later-7788"

        let (anaID, benID, cyID) = try step("sign up Ana (A), Ben (B), Cy (C); Ana gives her contact before any match") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
            try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketB)
            try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "student"], socket: socketC)
            try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: socketC)
            let set = try e2e.mm(["profile", "set", "--contact", contact], socket: socketA)
            #expect(set.stdout.contains("contact") && set.stdout.contains(contact), "\(set)")
            return (try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue),
                    try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue),
                    try #require(try mmJSON(e2e, ["whoami"], socketC)["id"]?.stringValue))
        }
        let anaShort = String(anaID.prefix(12)), benShort = String(benID.prefix(12)), cyShort = String(cyID.prefix(12))
        func contactSeen(_ socket: String, of id: String) throws -> String? {
            try mmJSON(e2e, ["profile", "show", id], socket)["contact"]?.stringValue
        }
        func feedIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        func matchIDs(_ socket: String) throws -> [String] {
            try mmJSON(e2e, ["matches"], socket)["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        func digest(_ socket: String) throws -> String {
            let r = try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")
            return "\(r["digest"]?.stringValue ?? "?")/\(r["records"]?.intValue ?? -1)"
        }
        func settle() throws {
            let digests = try poll(timeout: timeout, { try [socketA, socketB, socketC].map(digest) }, until: { Set($0).count == 1 })
            #expect(Set(digests).count == 1, "A, B and C should hold the same records: \(digests)\(logs())")
        }

        try step("Ana and Ben match: Ben reads her contact; Cy, a relay, does not") {
            let seen = try poll(timeout: timeout, { try feedIDs(socketA) + feedIDs(socketB) }, until: { $0.contains(benID) && $0.contains(anaID) })
            try #require(seen.contains(benID) && seen.contains(anaID), "Ana and Ben should see each other through C\(logs())")
            try e2e.mm(["like", benShort], socket: socketA)
            try e2e.mm(["like", anaShort], socket: socketB)
            let got = try poll(timeout: timeout, { try contactSeen(socketB, of: anaShort) }, until: { $0 == contact })
            #expect(got == contact, "Ben should read Ana's contact once matched\(logs())")
            let shown = try e2e.mm(["profile", "show", anaShort], socket: socketB)
            #expect(shown.stdout.contains("contact") && shown.stdout.contains(contact), "\(shown)")
            try settle()
            #expect(try contactSeen(socketC, of: anaShort) == nil, "Cy is no match of Ana's")
            #expect(try contactSeen(socketA, of: anaShort) == contact, "Ana sees her own")
        }

        try step("Ben unmatches; Ana's later edit is not readable by him") {
            try e2e.mm(["unmatch", anaShort], socket: socketB)
            let none = try poll(timeout: timeout, { try contactSeen(socketB, of: anaShort) }, until: { $0 == nil })
            #expect(none == nil, "the old contact should be gone after the unmatch\(logs())")
            _ = try poll(timeout: timeout, { try matchIDs(socketA) }, until: \.isEmpty)
            try e2e.mm(["profile", "set", "--contact", later], socket: socketA)
            #expect(try contactSeen(socketA, of: anaShort) == later)
            try settle()
            #expect(try contactSeen(socketB, of: anaShort) == nil, "a later edit must not reach a former match")
        }

        try step("Ben matches Cy, then blocks him: Cy sees an unmatch, Ben no longer sees Cy") {
            _ = try poll(timeout: timeout, { try feedIDs(socketB) }, until: { $0.contains(cyID) })
            try e2e.mm(["like", cyShort], socket: socketB)
            try e2e.mm(["like", benShort], socket: socketC)
            let matched = try poll(timeout: timeout, { try matchIDs(socketC) }, until: { $0 == [benID] })
            #expect(matched == [benID], "Cy should match Ben\(logs())")
            try e2e.mm(["chat", benShort, "hello from Cy"], socket: socketC)
            _ = try poll(timeout: timeout, { try matchIDs(socketB) }, until: { $0 == [cyID] })
            let blocked = try e2e.mm(["block", cyShort], socket: socketB)
            #expect(blocked.stdout.contains("Blocked"), "\(blocked)")
            #expect(try matchIDs(socketB).isEmpty && !feedIDs(socketB).contains(cyID))
            let history = try mmJSON(e2e, ["chat", cyShort], socketB)["messages"]?.arrayValue ?? []
            #expect(history.isEmpty, "Cy's messages are never shown to Ben: \(history)")
            let list = try mmJSON(e2e, ["blocked"], socketB)["blocked"]?.arrayValue ?? []
            #expect(list.count == 1 && list.first?["id"]?.stringValue == cyID && list.first?["name"] == "Cy", "\(list)")
            #expect(try e2e.mm(["blocked"], socket: socketB).stdout.contains("Cy"))
            let like = try e2e.run(["like", cyShort], socket: socketB)
            #expect(!like.ok && like.stderr.contains("unblock"), "\(like)")
            let cyMatches = try poll(timeout: timeout, { try matchIDs(socketC) }, until: \.isEmpty)
            #expect(cyMatches.isEmpty, "Cy should see the match end\(logs())")
            let cyHistory = try mmJSON(e2e, ["chat", benShort], socketC)
            #expect(cyHistory["matched"] == false && cyHistory["unmatchedBy"]?.stringValue != nil)
            #expect(try mmJSON(e2e, ["blocked"], socketC)["blocked"]?.arrayValue?.isEmpty == true)
            try settle()
        }

        try step("bad blocks fail clearly and change nothing; unblock does not re-match") {
            let before = try digest(socketB)
            let own = try e2e.run(["block", benShort], socket: socketB)
            #expect(!own.ok && own.stderr.contains("your own account"), "\(own)")
            let unknown = try e2e.run(["block", "mm1qqqqqqqqqq"], socket: socketB)
            #expect(!unknown.ok && unknown.stderr.contains("no account"), "\(unknown)")
            let twice = try e2e.run(["block", cyShort], socket: socketB)
            #expect(!twice.ok && twice.stderr.contains("already block"), "\(twice)")
            #expect(try digest(socketB) == before)
            try e2e.mm(["unblock", cyShort], socket: socketB)
            let again = try e2e.run(["unblock", cyShort], socket: socketB)
            #expect(!again.ok && again.stderr.contains("do not block"), "\(again)")
            #expect(try matchIDs(socketB).isEmpty)
            try settle()
        }

        try step("neither contact is on the wire, nor in C's replica file or its WAL") {
            tap.stop()
            let capture = tap.captured
            #expect(tap.connectionCount >= 1 && capture.count > 1000 && !tap.truncated, "the relay should have carried A's traffic")
            #expect(!capture.containsBytes(Array(contact.utf8)) && !capture.containsBytes(Array(later.utf8)), "a contact is readable on the wire")
            var replica: [UInt8] = []
            for file in [stateC + "/replica.db", stateC + "/replica.db-wal"] {
                if let data = FileManager.default.contents(atPath: file) { replica += Array(data) }
            }
            #expect(replica.containsBytes(Array("Ana".utf8)), "C's replica should hold Ana's card (else this read proves nothing)")
            #expect(!replica.containsBytes(Array(contact.utf8)) && !replica.containsBytes(Array(later.utf8)), "a contact is readable in C's replica")
        }
    }
}
