import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The errors a newcomer meets first (issue 12), each with its fix in one line, from the real
/// programs: no daemon, Avahi missing, the client run as another Unix user than the account's,
/// a second daemon on one state directory, a replica from a newer version; and `doctor` on a
/// daemon started with --no-mdns passing the checks that do not apply.
extension EndToEndTests {
    @Test func noDaemonSaysWhichCommandStartsOne() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let run = try e2e.run(["status"], socket: e2e.path("nobody.sock"))
        #expect(run.status.exitCode == 3)
        #expect(run.stderr == "mentormate: mentormated is not running: there is no socket at \(e2e.path("nobody.sock"))\n"
                + "hint: start your own daemon: `mentormated` (in a clone of MentorMate: `bash scripts/run`); "
                + "to use the system service instead: --socket /run/mentormate/api.sock (or MENTORMATE_SOCKET)\n", "\(run)")
    }

    @Test func anotherUnixUserThanTheAccountsIsToldWhoseAccountItIs() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"])
        let other = try e2e.makeUser("other")
        let run = try e2e.run(["whoami"], as: other)
        #expect(run.status.exitCode == 1)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].hasPrefix("hint: "), "the fix is one line: \(run.stderr)")
        #expect(run.stderr.contains("an account belongs to the Unix user who signed up (you are \(other.name) (uid \(other.uid))), "
                                    + "so run mentormate as that user to use theirs"), "\(run)")
    }

    @Test func aSecondDaemonOnTheSameStateDirectoryNamesTheFirstAndTheFix() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let first = try e2e.startDaemon()
        defer { first.kill() }
        let second = try e2e.spawnDaemon(socket: e2e.path("second.sock"))
        let status = second.process.wait(timeout: .seconds(20))
        #expect(status?.exitCode == 1, "\(String(describing: status))")
        #expect(second.log == "mentormated: another mentormated (pid \(first.pid)) is already using the state directory \(e2e.stateDir)\n"
                + "hint: it is serving already — use it (`mentormate status`), stop it first (kill \(first.pid)), or give this one its own --state-dir\n",
                "\(second.log)")
    }

    @Test func aReplicaFromANewerVersionIsRefusedUntouchedWithTheFix() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let first = try e2e.startDaemon()
        #expect(first.terminate()?.exitCode == 0)
        let db = e2e.stateDir + "/replica.db"
        let set = try e2e.tool(["/usr/bin/sqlite3", db, "PRAGMA user_version = 999;"])
        #expect(set.status.exitCode == 0, "\(set.output)")
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let again = try e2e.spawnDaemon()
        let status = again.process.wait(timeout: .seconds(20))
        #expect(status?.exitCode == 1, "\(String(describing: status))")
        let lines = again.log.split(separator: "\n")
        #expect(lines.count == 2, "one line of what, one of the fix: \(again.log)")
        #expect(lines.first?.hasPrefix("mentormated: the replica in \(e2e.stateDir) was written by a newer MentorMate than this one") == true
                && again.log.contains("schema version 999"), "\(again.log)")
        #expect(lines.last == "hint: run the newer mentormated on it again, or start this one with its own empty --state-dir; the replica was not changed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before, "the replica is left as it was")
    }

    @Test func doctorOnADaemonWithoutMDNSPassesTheChecksThatDoNotApply() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let daemon = try e2e.startDaemon()  // --no-mdns
        defer { daemon.kill() }
        let run = try e2e.run(["doctor"])
        #expect(run.status.exitCode == 0, "\(run)")
        for name in ["D-Bus system bus", "avahi-daemon"] {
            let line = run.stdout.split(separator: "\n").first { $0.contains(name) }.map(String.init) ?? ""
            #expect(line.hasPrefix("ok") && line.contains("not needed: mDNS discovery is off (--no-mdns)"), "\(name): \(run.stdout)")
        }
        let mdns = run.stdout.split(separator: "\n").first { $0.contains("mDNS discovery") }.map(String.init) ?? ""
        #expect(mdns.hasPrefix("ok") && mdns.contains("not needed"), "\(run.stdout)")
    }

    /// A daemon with mDNS on where no Avahi runs (a private /run/dbus and /run/avahi-daemon):
    /// it serves anyway and its log says once what is missing and the fix.
    @Test func avahiMissingIsLoggedOnceWithTheFix() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let log = e2e.path("nomdns.log")
        let script = """
            mount -t tmpfs tmpfs /run/dbus && mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && \
            exec "$0" --state-dir "$1" --socket "$2" --listen 127.0.0.1:0
            """
        let process = try ChildProcess(["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script,
                                        e2e.binaries.daemon, e2e.stateDir, e2e.socket], stderr: .file(log))
        defer { _ = process.kill() }
        let daemon = Daemon(process: process, stateDir: e2e.stateDir, socket: e2e.socket, logPath: log)
        try daemon.waitUntilServing()
        let (lines, _, found) = try labPoll(timeout: .seconds(10), { logLines(daemon, level: "notice", containing: ["mDNS discovery unavailable"]) },
                                            until: { !$0.isEmpty })
        #expect(found, "\(daemon.log)")
        #expect(lines.count == 1 && lines[0].contains("fix=\"start Avahi (it needs D-Bus): systemctl start dbus avahi-daemon"),
                "\(lines)")
        let status = try e2e.mmJSON(["status"])
        #expect(status["discovery"]?.stringValue?.hasPrefix("unavailable") == true, "\(status)")
    }
}
