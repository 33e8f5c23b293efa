import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Several photos per card, through the real client on two daemons: Ana on A adds three
    /// photos (JPEG, PNG of three `blob` parts, WebP); B fetches all three, and `profile show
    /// --save-photos` on B writes 1.jpg, 2.png, 3.webp byte for byte (and refuses to write over
    /// them). A new order on A is seen on B; a photo removed on A is deleted on both nodes once
    /// the card moves on, while the two it keeps stay.
    @Test func threePhotosAddedOnOneNodeReachTheOtherInOrderAndARemovedOneIsCollectedOnBoth() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        daemons.append(a)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketA))"])
        daemons.append(b)
        func logs() -> String { "log A:\n\(a.log)\nlog B:\n\(b.log)" }

        var rng = SystemRandomNumberGenerator()
        func noise(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + noise(20_000)
        var png = Self.onePixelPNG
        png += noise(700_000 - png.count)   // three blob parts
        let webp: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8) + noise(5_000)
        let originals = [jpeg, png, webp]
        let files = [try e2e.write("one.jpg", jpeg), try e2e.write("two.png", png), try e2e.write("three.webp", webp)]

        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        // Ben on B: `profile show ID` is asked by an account of the node (its score is for him).
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        for file in files { try e2e.mm(["profile", "photo", "add", file], socket: socketA) }
        let anaID = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
        func photoHashes(_ card: JSON?) -> [String] { (card?["photos"]?.arrayValue ?? []).compactMap { $0["hash"]?.stringValue } }
        let onA = try mmJSON(e2e, ["profile", "show"], socketA)
        let h = photoHashes(onA)
        #expect(h.count == 3 && onA["photo"]?["hash"]?.stringValue == h.first, "A's card: \(onA)")
        #expect((onA["photos"]?.arrayValue ?? []).map { $0["type"]?.stringValue ?? "" } == ["image/jpeg", "image/png", "image/webp"])

        /// Whether `socket`'s node holds the blob `hash` (blob.get answers, or -32004).
        func holds(_ socket: String, _ hash: String) throws -> Bool {
            let client = try RPCClient(path: socket, timeout: .seconds(10))
            do { _ = try client.call("blob.get", ["hash": .string(hash), "length": 1]) } catch {
                if case .server(let e) = error, e.code == -32004 { return false }
                throw error
            }
            return true
        }
        func showOnB() -> JSON? {
            let run = try? e2e.run(["profile", "show", anaID, "--json"], socket: socketB)
            return run?.ok == true ? run?.json : nil
        }

        // B gets the card and then every photo of it, not only the main one.
        let cardOnB = try poll(timeout: .seconds(30), { showOnB() }, until: { photoHashes($0) == h })
        #expect(photoHashes(cardOnB) == h, "B shows Ana's three photos in order: \(String(describing: cardOnB))\n\(logs())")
        let fetched = try poll(timeout: .seconds(30), { try h.map { try holds(socketB, $0) } }, until: { $0.allSatisfy { $0 } })
        #expect(fetched == [true, true, true], "B fetched every photo\n\(logs())")

        // --save-photos on B: the three files, named by content, identical to what Ana added.
        let dir = e2e.path("saved/ana")
        let saved = try e2e.mm(["profile", "show", anaID, "--save-photos", dir], socket: socketB)
        #expect(saved.stdout.contains("Saved 3 photos"), "\(saved)")
        for (name, original) in zip(["1.jpg", "2.png", "3.webp"], originals) {
            let bytes = FileManager.default.contents(atPath: dir + "/" + name).map { Array($0) }
            let same = bytes == original   // (not compared inside #expect: it would print 700 KB)
            #expect(same, "\(name) on B is the photo Ana added (\(bytes?.count ?? 0) of \(original.count) bytes)")
        }
        let again = try e2e.run(["profile", "show", anaID, "--save-photos", dir], socket: socketB)
        #expect(again.exitCode == 1 && again.stderr.contains("exists already; nothing was written"), "\(again)")
        let noDesktop = try e2e.run(["profile", "show", anaID, "--open"], socket: socketB)
        #expect(noDesktop.exitCode == 1 && noDesktop.stderr.contains("needs a desktop session"), "\(noDesktop)")

        // A new order on A is seen on B; the main photo follows.
        try e2e.mm(["profile", "photo", "order", "3,1,2"], socket: socketA)
        let reordered = try poll(timeout: .seconds(30), { showOnB() }, until: { photoHashes($0) == [h[2], h[0], h[1]] })
        #expect(photoHashes(reordered) == [h[2], h[0], h[1]] && reordered?["photo"]?["hash"]?.stringValue == h[2],
                "B shows the new order: \(String(describing: reordered))\n\(logs())")
        let badOrder = try e2e.run(["profile", "photo", "order", "1,2"], socket: socketA)
        #expect(badOrder.exitCode == 1 && badOrder.stderr.contains("must list each of 1 to 3 once"), "\(badOrder)")

        // Photo 2 (the JPEG now) is removed on A: its blob goes on A at once, on B once B's
        // replica holds the card that moved on; the two other photos stay on both.
        try e2e.mm(["profile", "photo", "remove", "2"], socket: socketA)
        #expect(photoHashes(try mmJSON(e2e, ["profile", "show"], socketA)) == [h[2], h[1]])
        #expect(try !holds(socketA, h[0]), "A collected the removed photo\n\(logs())")
        let movedOn = try poll(timeout: .seconds(30), { showOnB() }, until: { photoHashes($0) == [h[2], h[1]] })
        #expect(photoHashes(movedOn) == [h[2], h[1]], "B shows the photo removed: \(String(describing: movedOn))")
        let collected = try poll(timeout: .seconds(10), { try holds(socketB, h[0]) }, until: { !$0 })
        #expect(!collected, "B collected the removed photo\n\(logs())")
        for socket in [socketA, socketB] {
            #expect(try holds(socket, h[1]) && holds(socket, h[2]), "the photos the card keeps stay")
        }
    }
}
