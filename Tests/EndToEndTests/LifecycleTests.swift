import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// One daemon per state directory and per socket; SIGTERM stops cleanly with a sound
    /// replica; after kill -9 the stale socket is replaced and acknowledged writes are there
    /// (SPEC §7).
    @Test func oneDaemonPerStateDirAndSocketCleanStopAndAcknowledgedWritesSurviveKill9() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let sqlite3 = try #require(["/usr/bin/sqlite3", "/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "the sqlite3 command-line program is needed (apt-get install sqlite3)")
        func integrity() throws -> String {
            try e2e.tool([sqlite3, e2e.stateDir + "/replica.db", "pragma integrity_check"]).output
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }

        let first = try e2e.startDaemon()
        defer { first.kill() }
        try e2e.mm(["signup", "--email", "lee@uni.edu", "--name", "Lee", "--role", "tutor"])
        try e2e.mm(["profile", "set", "--bio", "written before the restarts", "--courses", "CS 490"])
        let node = try #require(try e2e.mmJSON(["status"])["node"]?.stringValue)

        // A second daemon on the same state directory (another socket) refuses, naming it.
        let otherSocket = e2e.path("other.sock")
        let twin = try e2e.spawnDaemon(socket: otherSocket)
        defer { twin.kill() }
        let twinEnd = twin.process.wait(timeout: .seconds(15))
        #expect(twinEnd != nil && twinEnd?.exitCode != 0, "a second daemon on \(e2e.stateDir) must refuse: \(twinEnd.map(\.description) ?? "still running"); log:\n\(twin.log)")
        #expect(twin.log.contains(e2e.stateDir) && twin.log.contains("pid \(first.pid)"),
                "the refusal should name the state directory and the daemon holding it: \(twin.log)")
        #expect(!FileManager.default.fileExists(atPath: otherSocket), "the refused daemon must not have made a socket")

        // A daemon on another state directory but the same live socket refuses too, and the
        // first daemon's socket keeps working.
        let intruder = try e2e.spawnDaemon(stateDir: e2e.path("state-2"))
        defer { intruder.kill() }
        let intruderEnd = intruder.process.wait(timeout: .seconds(15))
        #expect(intruderEnd != nil && intruderEnd?.exitCode != 0, "a daemon on the live socket must refuse: \(intruderEnd.map(\.description) ?? "still running"); log:\n\(intruder.log)")
        #expect(intruder.log.contains(e2e.socket) && intruder.log.contains("another mentormated"), "\(intruder.log)")
        #expect(try e2e.mmJSON(["status"])["node"]?.stringValue == node, "the first daemon must still serve its socket")

        // SIGTERM: exit status 0 within a few seconds, even with an idle subscriber and a
        // half-sent request open; the socket file removed, the replica sound.
        let subscriber = try RawConnection(e2e.socket)
        #expect(subscriber.call("subscribe", ["events": ["message"]])?["result"] != nil)
        let idle = try RawConnection(e2e.socket)
        idle.send(#"{"jsonrpc":"2.0","id":1,"method":"sta"#)
        let stopped = first.terminate(timeout: .seconds(5))
        #expect(stopped?.exitCode == 0, "SIGTERM: \(stopped.map(\.description) ?? "still running after 5 s"); log:\n\(first.log)")
        #expect(subscriber.waitForClose(timeout: .seconds(1)) && idle.waitForClose(timeout: .seconds(1)),
                "a stopping daemon closes its connections")
        #expect(!FileManager.default.fileExists(atPath: e2e.socket), "a clean stop removes the socket file")
        #expect(try integrity() == "ok")

        // Again on the same state directory: the same node; an acknowledged write, then kill -9.
        let second = try e2e.startDaemon()
        defer { second.kill() }
        #expect(try e2e.mmJSON(["status"])["node"]?.stringValue == node, "the node key must be kept")
        #expect(try e2e.mmJSON(["profile", "show"])["bio"] == "written before the restarts")
        try e2e.mm(["profile", "set", "--bio", "acknowledged just before kill -9"])
        let killed = second.kill()
        #expect(killed.signal == SIGKILL, "\(killed)")
        var st = stat()
        #expect(lstat(e2e.socket, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK, "kill -9 leaves the socket file behind")
        let stale = try e2e.run(["status"])
        #expect(stale.exitCode == 3 && stale.stderr.contains("no mentormated is listening"), "\(stale)")

        // The next start replaces the stale socket and has the acknowledged write.
        let third = try e2e.startDaemon()
        defer { third.kill() }
        let card = try e2e.mmJSON(["profile", "show"])
        #expect(card["bio"] == "acknowledged just before kill -9" && card["courses"]?.strings == ["CS 490"], "\(card)")
        #expect(try e2e.mmJSON(["whoami"])["unlocked"] == true)
        try e2e.mm(["profile", "set", "--wage", "30"])
        let end = third.terminate(timeout: .seconds(5))
        #expect(end?.exitCode == 0, "SIGTERM: \(end.map(\.description) ?? "still running after 5 s"); log:\n\(third.log)")
        #expect(try integrity() == "ok")
    }
}
