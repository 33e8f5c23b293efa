import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Photos travel as content-addressed blobs: three daemons in a line A–B–C; Ben on C sets a
    /// 700 KB photo (three `blob` parts). B fetches it from C, A — connected to B only, which may
    /// not hold it yet when A first asks — fetches it from B; both then hold exactly the file's
    /// bytes under its hash. A subscriber on A sees `event.peer` when B connects and
    /// `event.sync` reporting that A caught up with B.
    @Test func aPhotoSetOnOneNodeReachesTheOthersThroughAMiddleNode() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        daemons.append(a)
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        let events = try RPCClient(path: socketA, timeout: .seconds(10))
        _ = try events.call("subscribe", ["events": ["peer", "sync"]])

        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketA))"])
        daemons.append(b)
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: socketC, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketB))"])
        daemons.append(c)
        func logs() -> String { "log A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }
        let nodeB = try #require(try mmJSON(e2e, ["status"], socketB)["node"]?.stringValue)

        // A hears that B connected, and that it caught up with B.
        var peerEvent: RPCNotification?
        var caughtUp: RPCNotification?
        let deadline = ContinuousClock.now + .seconds(20)
        while (peerEvent == nil || caughtUp == nil), ContinuousClock.now < deadline {
            guard let n = try events.nextNotification(timeout: .seconds(1)) else { continue }
            if n.method == "event.peer", n.params["state"] == "connected" { peerEvent = n }
            if n.method == "event.sync", n.params["caughtUp"] == true { caughtUp = n }
        }
        #expect(peerEvent?.params["peer"]?["node"]?.stringValue == nodeB && peerEvent?.params["peer"]?["via"] == "incoming",
                "A should announce B's link: \(String(describing: peerEvent))\n\(logs())")
        #expect(caughtUp?.params["peer"]?.stringValue == nodeB && caughtUp?.params["received"]?.intValue != nil,
                "A should announce that it caught up with B: \(String(describing: caughtUp))")

        // Ben on C: a 700 KB "PNG" (the daemon checks the magic bytes, not the pixels).
        var photo = Self.onePixelPNG
        var rng = SystemRandomNumberGenerator()
        while photo.count < 700_000 { photo.append(UInt8.random(in: 0...255, using: &rng)) }
        let file = try e2e.write("ben.png", photo)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketC)
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "25", "--photo", file], socket: socketC)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketC)["id"]?.stringValue)
        let hash = try #require(try mmJSON(e2e, ["profile", "show"], socketC)["photo"]?["hash"]?.stringValue)

        /// The whole blob from `socket`'s node, read in chunks; nil while it does not hold it.
        func blob(_ socket: String) throws -> [UInt8]? {
            let client = try RPCClient(path: socket, timeout: .seconds(10))
            var data: [UInt8] = []
            while true {
                let part: JSON
                do { part = try client.call("blob.get", ["hash": .string(hash), "offset": .int(Int64(data.count))]) } catch {
                    if case .server(let e) = error, e.code == -32004 { return nil }
                    throw error
                }
                guard let chunk = part["data"]?.stringValue.flatMap({ Data(base64Encoded: $0) }), let size = part["size"]?.intValue else {
                    throw E2EError("blob.get answered \(part)")
                }
                data += chunk
                if data.count >= size || chunk.isEmpty { return data }
            }
        }
        for (name, socket) in [("B", socketB), ("A", socketA)] {
            let held = try poll(timeout: .seconds(20), { try blob(socket) }, until: { $0 != nil })
            let same = held == photo   // (not compared inside #expect: it would print 700 KB)
            #expect(same, "\(name) should hold Ben's photo byte for byte (\(held?.count ?? 0) of \(photo.count) bytes)\n\(logs())")
        }
        // A's view of Ben's card names the same photo.
        let shown = try mmJSON(e2e, ["profile", "show", String(benID.prefix(12))], socketA)
        #expect(shown["photo"]?["hash"]?.stringValue == hash, "A shows Ben's card with the photo: \(shown)")
    }
}
