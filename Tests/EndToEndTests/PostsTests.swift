import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 17's posts through the real client on three daemons (B and C link A). Ana on A posts
    /// two photos with a caption and tags; Ben (B) and Cy (C) like and comment; Ana hides Cy's
    /// comment; a non-author's edit, delete and hide are refused and change nothing; likes,
    /// comments and FTS search agree on every node. Ana deletes the post: on every node it is
    /// gone from the listings and search, its photos are deleted, and its caption and comments
    /// are in no replica's database file or WAL.
    @Test func aPostWithPhotosLikesAndCommentsConvergesAndItsDeletionLeavesNoTrace() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let sockets = ["a", "b", "c"].map { e2e.path("\($0).sock") }
        let states = ["a", "b", "c"].map { e2e.path("state-\($0)") }
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }
        daemons.append(try e2e.startDaemon(stateDir: states[0], socket: sockets[0]))
        let portA = try listenPort(e2e, sockets[0])
        for i in 1...2 {
            daemons.append(try e2e.startDaemon(stateDir: states[i], socket: sockets[i], extra: ["--peer", "127.0.0.1:\(portA)"]))
        }
        func logs() -> String { zip(["A", "B", "C"], daemons).map { "\nlog \($0):\n\($1.log)" }.joined() }
        let timeout: Duration = .seconds(30)
        let caption = "Banded agate from the riverbed", secretComment = "streak-test-scratch-4471"

        var rng = SystemRandomNumberGenerator()
        func noise(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let files = [try e2e.write("agate.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + noise(30_000)),
                     try e2e.write("agate.png", Self.onePixelPNG + noise(9_000))]

        try step("three people sign up on three nodes; Ana posts two photos") {
            for (i, (email, name)) in [("ana@uni.edu", "Ana"), ("ben@uni.edu", "Ben"), ("cy@uni.edu", "Cy")].enumerated() {
                try e2e.mm(["signup", "--email", email, "--name", name, "--role", i == 0 ? "tutor" : "student"], socket: sockets[i])
            }
            try e2e.mm(["post", "create", "--photo", files[0], "--photo", files[1], "--caption", caption, "--tag", "Agate", "--tag", "banded"], socket: sockets[0])
        }
        let post = try mmJSON(e2e, ["posts"], sockets[0])["posts"]?.arrayValue?.first
        let id = try #require(post?["id"]?.stringValue)
        let hashes = (post?["photos"]?.arrayValue ?? []).compactMap { $0["hash"]?.stringValue }
        #expect(hashes.count == 2 && post?["tags"] == ["agate", "banded"])
        func show(_ node: Int) -> JSON? {
            let run = try? e2e.run(["post", "show", id, "--json"], socket: sockets[node])
            return run?.ok == true ? run?.json : nil
        }
        func holds(_ node: Int, _ hash: String) throws -> Bool {
            let client = try RPCClient(path: sockets[node], timeout: .seconds(10))
            do { _ = try client.call("blob.get", ["hash": .string(hash), "length": 1]) } catch {
                if case .server(let e) = error, e.code == -32004 { return false }
                throw error
            }
            return true
        }

        try step("the post and its photos reach B and C; Ben and Cy like and comment") {
            for node in 1...2 {
                let seen = try poll(timeout: timeout, { show(node) }, until: { $0 != nil })
                #expect(seen?["caption"]?.stringValue == caption, "node \(node)\(logs())")
                let fetched = try poll(timeout: timeout, { try hashes.allSatisfy { try holds(node, $0) } }, until: { $0 })
                #expect(fetched, "node \(node) fetched the post's photos\(logs())")
            }
            let saved = try e2e.mm(["post", "show", id, "--save-photos", e2e.path("saved")], socket: sockets[1])
            #expect(saved.stdout.contains("Saved:"), "\(saved)")
            try e2e.mm(["post", "like", id], socket: sockets[1])
            try e2e.mm(["post", "like", String(id.prefix(6))], socket: sockets[2])
            try e2e.mm(["comment", id, "Lovely bands"], socket: sockets[1])
            try e2e.mm(["comment", id, secretComment], socket: sockets[2])
        }
        try step("Ana hides Cy's comment; non-authors are refused and nothing changes") {
            let onA = try poll(timeout: timeout, { show(0) }, until: { ($0?["comment_list"]?.arrayValue?.count ?? 0) == 2 })
            let cyComment = onA?["comment_list"]?.arrayValue?.first { $0["text"]?.stringValue == secretComment }
            let cid = try #require(cyComment?["id"]?.stringValue, "A has both comments\(logs())")
            let benComment = try #require(onA?["comment_list"]?.arrayValue?.first { $0["text"]?.stringValue == "Lovely bands" }?["id"]?.stringValue)
            try e2e.mm(["comment", "hide", cid], socket: sockets[0])
            let edit = try e2e.run(["post", "edit", id, "--caption", "mine now"], socket: sockets[1])
            #expect(edit.exitCode == 1 && edit.stderr.contains("only its author"), "\(edit)")
            let delete = try e2e.run(["post", "delete", id], socket: sockets[2])
            #expect(delete.exitCode == 1 && delete.stderr.contains("only its author"), "\(delete)")
            let hide = try e2e.run(["comment", "hide", benComment], socket: sockets[2])
            #expect(hide.exitCode == 1 && hide.stderr.contains("only the post's author"), "\(hide)")
            let foreignDelete = try e2e.run(["comment", "delete", benComment], socket: sockets[2])
            #expect(foreignDelete.exitCode == 1 && foreignDelete.stderr.contains("only its writer"), "\(foreignDelete)")
        }
        try step("likes, comments and search agree on every node") {
            for node in 0...2 {
                let p = try poll(timeout: timeout, { show(node) }, until: { $0?["likes"] == 2 && $0?["comments"] == 1 })
                #expect(p?["likes"] == 2 && p?["comments"] == 1 && p?["caption"]?.stringValue == caption, "node \(node): \(String(describing: p))\(logs())")
                let texts = (p?["comment_list"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
                #expect(node == 2 ? texts.contains(secretComment) : texts == ["Lovely bands"], "node \(node): \(texts)")
                let found = try mmJSON(e2e, ["posts", "--search", "riverbed agat"], sockets[node])["posts"]?.arrayValue ?? []
                #expect(found.first?["id"]?.stringValue == id, "node \(node) finds the post")
                #expect(try mmJSON(e2e, ["posts", "--tag", "AGATE"], sockets[node])["posts"]?.arrayValue?.count == 1)
            }
        }
        try step("Ana deletes the post: gone everywhere, photos and words included") {
            try e2e.mm(["post", "delete", id], socket: sockets[0])
            for node in 0...2 {
                let gone = try poll(timeout: timeout, { show(node) }, until: { $0 == nil })
                #expect(gone == nil, "node \(node) still shows the post\(logs())")
                #expect(try mmJSON(e2e, ["posts", "--search", "riverbed"], sockets[node])["posts"]?.arrayValue?.isEmpty == true)
                let photosGone = try poll(timeout: timeout, { try hashes.allSatisfy { try !holds(node, $0) } }, until: { $0 })
                #expect(photosGone, "node \(node) deleted the post's photos\(logs())")
            }
            for node in 0...2 {
                var bytes: [UInt8] = []
                let read = try poll(timeout: timeout, {
                    bytes = []
                    for file in [states[node] + "/replica.db", states[node] + "/replica.db-wal"] {
                        if let data = FileManager.default.contents(atPath: file) { bytes += Array(data) }
                    }
                    return !bytes.containsBytes(Array("riverbed".utf8)) && !bytes.containsBytes(Array(secretComment.utf8))
                }, until: { $0 })
                #expect(bytes.containsBytes(Array("Ana".utf8)), "node \(node)'s replica holds Ana's card (else this read proves nothing)")
                #expect(read, "node \(node)'s replica files still hold the deleted post's words")
            }
        }
    }
}
