import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11, items 1, 6 and 7 (local parts), as real other Unix users: nobody can impersonate a
/// user's daemon or catch what the client sends, state files are private whatever the umask, and
/// `doctor` tells a user only about their own account.
extension EndToEndTests {
@Suite struct LocalSecurity {
    /// A listener run as another user that records every byte it receives in `log` and closes
    /// each connection without answering.
    static let fakeServer = """
        import os, socket, sys
        path, log = sys.argv[1], sys.argv[2]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(16)
        open(log, "wb").close()
        open(log + ".ready", "w").close()
        while True:
            c, _ = s.accept()
            c.settimeout(3)
            data = b""
            try:
                while b"\\n" not in data:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            with open(log, "ab") as f:
                f.write(data)
            c.close()
        """

    /// A directory owned by `user` (mode `mode`) inside the test's directory.
    static func ownedDirectory(_ e2e: E2E, _ name: String, by user: TestUser, mode: mode_t = 0o755) throws -> String {
        let dir = e2e.path(name)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        guard chown(dir, user.uid, user.gid) == 0, chmod(dir, mode) == 0 else {
            throw E2EError("cannot hand \(dir) to \(user): \(String(cString: strerror(errno)))")
        }
        return dir
    }

    /// Starts the fake server as `user` at `socket`; returns the file its received bytes go to.
    static func plantFakeServer(_ e2e: E2E, at socket: String, as user: TestUser, logDirectory: String) throws -> String {
        let script = try e2e.write("fake-server.py", Array(fakeServer.utf8))
        let log = logDirectory + "/received"
        _ = try e2e.spawn(["/usr/bin/python3", script, socket, log], as: user)
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: log + ".ready") {
            guard ContinuousClock.now < deadline else { throw E2EError("the fake server did not start") }
            usleep(20_000)
        }
        return log
    }

    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    // MARK: Item 1: a socket nobody can impersonate

    /// Another user plants a socket where the old client looked first without XDG_RUNTIME_DIR
    /// (`/tmp/mentormate-UID/api.sock`) and, for the explicit case, the victim is pointed at it
    /// with --socket: `login`, `signup --passphrase` and `chat --follow` all refuse, naming the
    /// path and the user serving it, and the fake server receives zero bytes.
    @Test func aSocketPlantedByAnotherUserGetsNoByteFromTheClient() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let victim = try e2e.makeUser("victim")
        let thief = try e2e.makeUser("thief")
        let thiefHome = try Self.ownedDirectory(e2e, "thief-home", by: thief)
        let planted = "/tmp/mentormate-\(victim.uid)"
        try? FileManager.default.removeItem(atPath: planted)
        defer { try? FileManager.default.removeItem(atPath: planted) }
        let made = try e2e.tool(["/bin/mkdir", "-m", "0777", planted], as: thief)
        #expect(made.status.exitCode == 0, "the thief makes the old fallback directory: \(made.output)")
        let socket = planted + "/api.sock"
        let received = try Self.plantFakeServer(e2e, at: socket, as: thief, logDirectory: thiefHome)

        // The default path (no --socket, no XDG_RUNTIME_DIR, as after `su`): never /tmp.
        let byDefault = try e2e.run(["login"], as: victim, stdin: "my secret passphrase\n", timeout: .seconds(20), socketFlag: false)
        #expect(!byDefault.ok, "\(byDefault)")
        #expect(!byDefault.stderr.contains(planted), "the client must not look in /tmp: \(byDefault)")

        // Pointed at it explicitly: refused after connect, before a byte is sent.
        for arguments in [["login"], ["signup", "--passphrase", "--email", "v@uni.edu", "--name", "V", "--role", "student"],
                          ["chat", "mm1qy352euf40x77qfrg4ncn27daufrg4ncn27daufrg4ncn27dauqxqkc3xy", "--follow"]] {
            let run = try e2e.run(arguments, as: victim, socket: socket, stdin: "my secret passphrase\nmy secret passphrase\n",
                                  timeout: .seconds(20))
            #expect(!run.ok, "\(run)")
            #expect(run.stderr.contains("refusing \(socket)") && run.stderr.contains("uid \(thief.uid) (\(thief.name))")
                        && run.stderr.contains("nothing was sent") && run.stderr.contains("rm \(socket)"),
                    "the error names the path, who serves it and the fix: \(run)")
        }
        usleep(200_000)
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: received))) ?? Data("unreadable".utf8)
        #expect(bytes.isEmpty, "the fake server received \(bytes.count) bytes: \(String(decoding: bytes, as: UTF8.self))")
    }

    /// A user-mode daemon refuses a socket directory another user owns (0777, as in the report),
    /// one of its own that others may write, and a symlink; it binds nothing there. A directory it
    /// makes itself is 0700 even under umask 000.
    @Test func aDaemonRefusesASocketDirectoryOthersControl() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let owner = try e2e.makeUser("owner")
        let other = try e2e.makeUser("other")
        let home = try Self.ownedDirectory(e2e, "owner-home", by: owner, mode: 0o700)
        let foreign = try Self.ownedDirectory(e2e, "foreign", by: other, mode: 0o777)
        let writable = try Self.ownedDirectory(e2e, "writable", by: owner, mode: 0o777)
        let linked = home + "/linked"
        #expect(symlink(home, linked) == 0)
        _ = lchown(linked, owner.uid, owner.gid)

        for (directory, says) in [(foreign, "belongs to uid \(other.uid) (\(other.name))"), (writable, "has mode 0777"),
                                  (linked, "is a symbolic link")] {
            let daemon = try e2e.spawnDaemon(stateDir: home + "/state", socket: directory + "/api.sock", as: owner)
            let status = daemon.process.wait(timeout: .seconds(20))
            #expect(status?.exitCode == 1, "mentormated must refuse \(directory): \(status.map(\.description) ?? "still running"); log:\n\(daemon.log)")
            #expect(daemon.log.contains(says) && daemon.log.contains("nothing was changed") && daemon.log.contains("--socket"), "\(daemon.log)")
            #expect(Self.mode(directory + "/api.sock") == nil, "no socket was bound in \(directory)")
            #expect(Self.mode(home + "/state") == nil, "a refused start creates no state directory")
        }

        let fresh = home + "/run"
        let daemon = try e2e.startDaemon(stateDir: home + "/state", socket: fresh + "/api.sock", as: owner, umask: "000")
        #expect(Self.mode(fresh) == 0o700, "a socket directory mentormated makes is 0700 whatever the umask")
        let whoami = try e2e.run(["whoami"], as: owner, socket: daemon.socket)
        #expect(whoami.stderr.isEmpty || !whoami.stderr.contains("refusing"), "the owner's own daemon is trusted: \(whoami)")
        _ = daemon.terminate()
    }

    // MARK: Item 6: file modes

    /// Under umask 000 a user's daemon still makes its state directory 0700 and every file in it
    /// 0600 (the replica and its WAL files, keys, the lock); another user cannot read replica.db.
    @Test func stateFilesArePrivateWhateverTheUmask() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let ana = try e2e.makeUser("ana")
        let eve = try e2e.makeUser("eve")
        let home = try Self.ownedDirectory(e2e, "ana-home", by: ana, mode: 0o755)
        let state = home + "/state"
        let daemon = try e2e.startDaemon(stateDir: state, socket: home + "/run/api.sock", as: ana, umask: "000")
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], as: ana, socket: daemon.socket)
        try e2e.mm(["profile", "set", "--bio", "a private bio"], as: ana, socket: daemon.socket)

        #expect(Self.mode(state) == 0o700)
        let files = try FileManager.default.subpathsOfDirectory(atPath: state)
        #expect(files.contains("replica.db") && files.contains("replica.db-wal") && files.contains("accounts/\(ana.uid).key"), "\(files)")
        for name in files {
            var st = stat()
            guard lstat(state + "/" + name, &st) == 0 else { continue }
            let mode = st.st_mode & 0o7777
            let isDirectory = st.st_mode & S_IFMT == S_IFDIR
            #expect(mode & 0o077 == 0 && (isDirectory || mode & 0o100 == 0),
                    "\(name) has mode 0\(String(mode, radix: 8)); state files must be 0600 and directories 0700")
        }
        let peek = try e2e.tool(["/bin/cat", state + "/replica.db"], as: eve)
        #expect(peek.status.exitCode != 0 && peek.output.contains("Permission denied"), "another user read replica.db: \(peek.status)")
        _ = daemon.terminate()
    }

    /// A state directory others may look into is refused at start (naming the mode and the fix,
    /// creating nothing); after the fix the daemon starts, and `doctor` reports a directory or
    /// replica file whose mode was loosened while it ran.
    @Test func aStateDirectoryOthersCanReadIsRefusedAndDoctorReportsLooseModes() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let ana = try e2e.makeUser("ana")
        let home = try Self.ownedDirectory(e2e, "ana-home", by: ana, mode: 0o755)
        let state = try Self.ownedDirectory(e2e, "ana-home/state", by: ana, mode: 0o755)
        let socket = home + "/run/api.sock"

        let refused = try e2e.spawnDaemon(stateDir: state, socket: socket, as: ana)
        let status = refused.process.wait(timeout: .seconds(20))
        #expect(status?.exitCode == 1, "a 0755 state directory must be refused: \(status.map(\.description) ?? "still running")")
        #expect(refused.log.contains("has mode 0755") && refused.log.contains("chmod 700 \(state)"), "\(refused.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).isEmpty, "nothing was created in the refused directory")

        #expect(chmod(state, 0o700) == 0)
        let daemon = try e2e.startDaemon(stateDir: state, socket: socket, as: ana)
        let healthy = try e2e.run(["doctor", "--json"], as: ana, socket: socket)
        let before = healthy.json?["checks"]?.arrayValue ?? []
        #expect(before.contains { $0["name"] == "state directory" && $0["ok"] == true }, "\(healthy)")
        #expect(before.contains { $0["name"] == "replica.db" && $0["ok"] == true }, "\(healthy)")

        #expect(chmod(state, 0o755) == 0 && chmod(state + "/replica.db", 0o644) == 0)
        let loose = try e2e.run(["doctor", "--json"], as: ana, socket: socket)
        let checks = loose.json?["checks"]?.arrayValue ?? []
        #expect(loose.exitCode == 1, "\(loose)")
        #expect(checks.contains { $0["name"] == "state directory" && $0["ok"] == false && $0["fix"]?.stringValue == "chmod 700 \(state)" }, "\(loose)")
        #expect(checks.contains { $0["name"] == "replica.db" && $0["ok"] == false && $0["fix"]?.stringValue == "chmod 600 \(state)/replica.db" }, "\(loose)")
        _ = daemon.terminate()
    }

    // MARK: Item 7: doctor, the network key, core dumps

    /// On a shared (root) daemon, `doctor` as one user checks that user's key only: nothing in
    /// its output says another uid has an account.
    @Test func doctorShowsAUserOnlyTheirOwnAccount() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let ana = try e2e.makeUser("ana")
        let ben = try e2e.makeUser("ben")
        _ = try e2e.startDaemon()
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], as: ana)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], as: ben)

        let doctor = try e2e.run(["doctor", "--json"], as: ana)
        let checks = doctor.json?["checks"]?.arrayValue ?? []
        // This machine's device key, and (signup made it here) the account key.
        #expect(checks.contains { $0["name"] == "your key" && $0["detail"]?.stringValue?.contains("/\(ana.uid).key") == true }, "\(doctor)")
        #expect(checks.contains { $0["name"] == "your account key" && $0["detail"]?.stringValue?.contains("/\(ana.uid).account.key") == true }, "\(doctor)")
        #expect(!doctor.stdout.contains("\(ben.uid).key") && !doctor.stdout.contains("uid \(ben.uid)"), "ana's doctor mentions ben's account: \(doctor)")
        let text = try e2e.run(["doctor"], as: ana)
        #expect(!text.stdout.contains("uid \(ben.uid)") && text.stdout.contains("your account key"), "\(text)")
    }

    /// A network key file others may read is refused at start (mode and fix named); at 0600 it
    /// is used, and `doctor` says a private key is in use.
    @Test func aNetworkKeyFileOthersCanReadIsRefused() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let key = try e2e.write("network.key", (0..<32).map { UInt8($0) })
        #expect(chmod(key, 0o644) == 0)
        let refused = try e2e.spawnDaemon(extra: ["--network-key", key])
        let status = refused.process.wait(timeout: .seconds(20))
        #expect(status?.exitCode == 1, "a 0644 network key must be refused: \(status.map(\.description) ?? "still running")")
        #expect(refused.log.contains("network key file \(key) has mode 0644") && refused.log.contains("chmod 600 \(key)"), "\(refused.log)")
        #expect(Self.mode(e2e.stateDir) == nil, "a refused start creates no state directory")

        #expect(chmod(key, 0o600) == 0)
        _ = try e2e.startDaemon(extra: ["--network-key", key])
        let doctor = try e2e.run(["doctor", "--json"])
        let check = (doctor.json?["checks"]?.arrayValue ?? []).first { $0["name"] == "network key" }
        #expect(check?["ok"] == true && check?["warning"] == nil && check?["detail"]?.stringValue?.contains(key) == true, "\(doctor)")
    }

    /// A system-mode daemon (root) on the built-in network key: `doctor` warns and gives the
    /// command that makes a private key; a user's own daemon on it is not warned about.
    @Test func doctorWarnsAboutTheBuiltInNetworkKeyOnASystemService() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        _ = try e2e.startDaemon()
        let doctor = try e2e.run(["doctor", "--json"])
        let check = (doctor.json?["checks"]?.arrayValue ?? []).first { $0["name"] == "network key" }
        #expect(check?["ok"] == true && check?["warning"] == true, "\(doctor)")
        #expect(check?["fix"]?.stringValue?.contains("head -c 32 /dev/urandom > /etc/mentormate/network.key") == true, "\(doctor)")
        let text = try e2e.run(["doctor"])
        #expect(text.stdout.contains("warn  network key") && text.stdout.contains("fix: (umask 077; head -c 32"), "\(text)")

        let ana = try e2e.makeUser("ana")
        let home = try Self.ownedDirectory(e2e, "ana-home", by: ana, mode: 0o700)
        let own = try e2e.startDaemon(stateDir: home + "/state", socket: home + "/run/api.sock", as: ana)
        let userDoctor = try e2e.run(["doctor", "--json"], as: ana, socket: own.socket)
        let userCheck = (userDoctor.json?["checks"]?.arrayValue ?? []).first { $0["name"] == "network key" }
        #expect(userCheck?["ok"] == true && userCheck?["warning"] == nil, "\(userDoctor)")
    }

    /// Both shipped units turn core dumps off (a watchdog abort would dump keys and chats).
    @Test func theUnitsTurnCoreDumpsOff() throws {
        #expect(try EndToEndTests.unitSetting("LimitCORE") == "0")
        #expect(try EndToEndTests.unitSetting("LimitCORE", unit: "systemd/user/mentormated.service") == "0")
    }
}
}
