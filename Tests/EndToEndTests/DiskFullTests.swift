import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 7, item 7: A's state directory is a small tmpfs. When it is full, Ana's writes fail
    /// with an error that names the problem (client exit 1), the log says so, nothing
    /// unacknowledged is stored, and records B pushes meanwhile are not lost: once space returns
    /// Ana writes again and A catches up with B. Restarted on a read-only state directory (Linux
    /// does not remount a file system read-only under open files), A refuses to start and says
    /// why; made writable again it starts and catches up. `integrity_check` passes at the end.
    @Test func aFullOrReadOnlyStateDirectoryRefusesWritesAndRecovers() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let mountPoint = e2e.path("small")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mounted = try e2e.tool(["/bin/mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint])
        guard mounted.status.exitCode == 0 else { throw E2EError("mounting a tmpfs failed: \(mounted.output)") }
        defer { _ = try? e2e.tool(["/bin/umount", "-l", mountPoint]) }

        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock")
        let a = try e2e.startDaemon(stateDir: mountPoint + "/state", socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["profile", "set", "--bio", "before"], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue)

        func digest(_ socket: String) throws -> String {
            try RPCClient(path: socket, timeout: .seconds(10)).call("replica.digest")["digest"]?.stringValue ?? "?"
        }
        func bio(_ socket: String, _ id: String? = nil) throws -> String? {
            try mmJSON(e2e, ["profile", "show"] + (id.map { [String($0.prefix(12))] } ?? []), socket)["bio"]?.stringValue
        }

        do {
            let fault = "full"
            _ = try poll(timeout: .seconds(20), { try [digest(socketA), digest(socketB)] }, until: { $0[0] == $0[1] })
            // Make A unable to write.
            let filler = mountPoint + "/filler"
            let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            let block = [UInt8](repeating: 0, count: 64 * 1024)
            while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
            close(fd)
            let refused = try e2e.run(["profile", "set", "--bio", "while \(fault)"], socket: socketA)
            #expect(refused.exitCode == 1 && refused.stderr.contains("could not be written") && refused.stderr.contains("nothing was stored"),
                    "a write to a \(fault) replica should fail and say so: \(refused)")
            let chatless = try e2e.run(["like", String(benID.prefix(12))], socket: socketA)
            #expect(chatless.exitCode == 1, "a like on a \(fault) replica should fail: \(chatless)")
            #expect(a.log.contains("storage error"), "A's log should report the storage error (\(fault))")
            // B keeps writing; A cannot store it yet.
            try e2e.mm(["profile", "set", "--bio", "Ben during \(fault)"], socket: socketB)
            #expect(try bio(socketA) == "before", "the refused write must not show on A")

            // Space returns: A writes and catches up with B.
            unlink(filler)
            let after = "after full"
            let retried = try poll(timeout: .seconds(10), { try e2e.run(["profile", "set", "--bio", after], socket: socketA) }, until: { $0.exitCode == 0 })
            #expect(retried.exitCode == 0, "A should accept writes again after the \(fault) fault: \(retried)")
            #expect(try bio(socketA) == after)
            let benOnA = try poll(timeout: .seconds(40), { try bio(socketA, benID) }, until: { $0 == "Ben during \(fault)" })
            #expect(benOnA == "Ben during \(fault)", "A should catch up with what B wrote during the \(fault) fault\nlog A:\n\(a.log)")
            let both = try poll(timeout: .seconds(20), { try [digest(socketA), digest(socketB)] }, until: { $0[0] == $0[1] })
            #expect(both[0] == both[1], "A and B should converge after the \(fault) fault")
        }
        #expect(try e2e.run(["like", String(benID.prefix(12))], socket: socketA).exitCode == 0)

        // Read-only: A stops, its file system goes read-only, B writes on.
        _ = a.terminate()
        let ro = try e2e.tool(["/bin/mount", "-o", "remount,ro", mountPoint])
        #expect(ro.status.exitCode == 0, "remount read-only: \(ro.output)")
        try e2e.mm(["profile", "set", "--bio", "Ben while A was read-only"], socket: socketB)
        let refusedStart = try e2e.spawnDaemon(stateDir: mountPoint + "/state", socket: socketA)
        let status = refusedStart.process.wait(timeout: .seconds(20))
        let said = refusedStart.log + e2e.read(refusedStart.logPath + ".out")
        #expect(status?.exitCode == 1 && said.contains("Read-only file system") && said.contains("remount it read-write"),
                "on a read-only state directory the daemon should refuse to start and say why: \(String(describing: status)) \(said)")
        let rw = try e2e.tool(["/bin/mount", "-o", "remount,rw", mountPoint])
        #expect(rw.status.exitCode == 0, "remount read-write: \(rw.output)")
        let again = try e2e.startDaemon(stateDir: mountPoint + "/state", socket: socketA, listen: "127.0.0.1:\(portA)")
        defer { again.kill() }
        let caughtUp = try poll(timeout: .seconds(40), { try bio(socketA, benID) }, until: { $0 == "Ben while A was read-only" })
        #expect(caughtUp == "Ben while A was read-only", "A should catch up after restarting writable\nlog:\n\(again.log)")
        _ = again.terminate()
        let check = try e2e.tool(["/usr/bin/sqlite3", mountPoint + "/state/replica.db", "PRAGMA integrity_check;"])
        #expect(check.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "integrity_check: \(check.output)")
    }
}
