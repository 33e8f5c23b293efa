import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// SPEC §5 through the real client: signup, whoami, profile set/show with a photo, refused
    /// photos, status, logout/login; then a passphrase account across a daemon restart.
    @Test func accountProfilePhotoAndPassphraseThroughTheClient() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let pat = try e2e.makeUser("pass")  // the passphrase account; root's has none
        var daemon = try e2e.startDaemon()
        defer { daemon.kill() }

        // Sign-up and whoami.
        let signup = try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"])
        #expect(signup.stdout.contains("Signed up."), "\(signup)")
        let me = try e2e.mmJSON(["whoami"])
        let id = try #require(me["id"]?.stringValue, "whoami --json has no id: \(me)")
        #expect(id.hasPrefix("mm1") && id.count == 61, "\(id)")
        #expect(me["name"] == "Ana" && me["role"] == "student" && me["email"] == "ana@uni.edu", "\(me)")
        #expect(me["protected"] == false && me["unlocked"] == true, "\(me)")
        let whoami = try e2e.mm(["whoami"])
        #expect(whoami.stdout.contains("Ana (student)") && whoami.stdout.contains(id), "\(whoami)")
        let again = try e2e.run(["signup", "--email", "ana2@uni.edu", "--name", "Ana", "--role", "student"])
        #expect(again.exitCode == 1 && again.stderr.contains("already have an account"), "\(again)")

        // profile set: every kind of field, and a photo.
        let png = Self.onePixelPNG
        let photo = try e2e.write("me.png", png)
        let set = try e2e.mm(["profile", "set", "--name", "Ana Lima", "--bio", "Loves compilers", "--courses", "cs 490, math  221",
                              "--wage", "20", "--photo", photo])
        #expect(set.stdout.contains("Profile updated."), "\(set)")
        let card = try e2e.mmJSON(["profile", "show"])
        #expect(card["id"]?.stringValue == id, "\(card)")
        #expect(card["name"] == "Ana Lima" && card["bio"] == "Loves compilers" && card["wage"] == 20, "\(card)")
        #expect(card["courses"]?.strings == ["CS 490", "MATH 221"], "courses are normalized: \(card)")
        let hash = try #require(card["photo"]?["hash"]?.stringValue, "profile show --json has no photo hash: \(card)")
        #expect(hash.count == 64 && hash.allSatisfy(\.isHexDigit), "\(hash)")
        #expect(card["photo"]?["size"] == .int(Int64(png.count)) && card["photo"]?["type"] == "image/png", "\(card)")
        // The daemon holds exactly the file's bytes under that hash.
        let blob = try RPCClient(path: e2e.socket, timeout: .seconds(10)).call("blob.get", ["hash": .string(hash)])
        #expect(Data(base64Encoded: blob["data"]?.stringValue ?? "").map { Array($0) } == png, "blob.get: \(blob)")
        let shown = try e2e.mm(["profile", "show"])
        for text in ["Ana Lima (student)", "Loves compilers", "CS 490, MATH 221", "20", hash, "image/png"] {
            #expect(shown.stdout.contains(text), "`profile show` lacks \(text): \(shown)")
        }

        // Photos (and a name) that are refused, each with a clear error and nothing changed.
        let big = try e2e.write("big.png", Array(png.prefix(8)) + [UInt8](repeating: 0, count: 4 * 1024 * 1024 + 1 - 8))
        let tooBig = try e2e.run(["profile", "set", "--photo", big])
        #expect(tooBig.exitCode == 1 && tooBig.stderr.contains("big.png") && tooBig.stderr.contains("at most 4 MiB"), "\(tooBig)")
        let notes = try e2e.write("notes.png", Array("these are not pixels\n".utf8))
        let notImage = try e2e.run(["profile", "set", "--photo", notes])
        #expect(notImage.exitCode == 1 && notImage.stderr.contains("is not a JPEG, PNG or WebP image"), "\(notImage)")
        let missing = try e2e.run(["profile", "set", "--photo", e2e.path("nowhere.jpg")])
        #expect(missing.exitCode == 1 && missing.stderr.contains("no file"), "\(missing)")
        let blank = try e2e.run(["profile", "set", "--name", "   "])
        #expect(blank.exitCode == 1 && blank.stderr.contains("name is empty"), "a blank name is refused as at sign-up: \(blank)")
        let unchanged = try e2e.mmJSON(["profile", "show"])
        #expect(unchanged["photo"]?["hash"]?.stringValue == hash && unchanged["bio"] == "Loves compilers"
                    && unchanged["name"] == "Ana Lima", "\(unchanged)")

        // status --json: the port the daemon picked and logged.
        let status = try e2e.mmJSON(["status"])
        let port = status["listen"]?["port"]?.intValue ?? 0
        #expect(port > 0, "\(status)")
        #expect(daemon.loggedPort.map(Int64.init) == port, "status says port \(port); the log says:\n\(daemon.log)")
        #expect(status["stateDir"]?.stringValue == e2e.stateDir && status["socket"]?.stringValue == e2e.socket, "\(status)")
        #expect(status["accounts"] == 1 && status["health"] == "ok", "\(status)")

        // peers and doctor answer as well (discovery is off here).
        #expect(try e2e.mmJSON(["peers"])["peers"]?.arrayValue?.isEmpty == true)
        let doctor = try e2e.run(["doctor", "--json"])
        let checks = doctor.json?["checks"]?.arrayValue ?? []
        #expect(checks.contains { $0["name"] == "replica integrity" && $0["ok"] == true }, "\(doctor)")
        #expect(doctor.exitCode == (checks.allSatisfy { $0["ok"] == true } ? 0 : 1), "doctor exits 1 exactly when a check fails: \(doctor)")

        // logout: writes fail with the locked hint until login.
        try e2e.mm(["logout"])
        let locked = try e2e.run(["profile", "set", "--bio", "while logged out"])
        #expect(locked.exitCode == 1 && locked.stderr.contains("locked") && locked.stderr.contains("mentormate login"), "\(locked)")
        #expect(try e2e.mmJSON(["whoami"])["unlocked"] == false)
        let login = try e2e.mm(["login"])
        #expect(login.stdout.contains("Logged in."), "\(login)")
        try e2e.mm(["profile", "set", "--bio", "back again"])
        #expect(try e2e.mmJSON(["profile", "show"])["bio"] == "back again")

        // A passphrase account: the passphrase is one line on stdin when stdin is not a terminal.
        let noPassphrase = try e2e.run(["signup", "--passphrase", "--email", "pat@uni.edu", "--name", "Pat", "--role", "tutor"],
                                       as: pat, stdin: "")
        #expect(noPassphrase.exitCode == 1 && noPassphrase.stderr.contains("no passphrase"), "\(noPassphrase)")
        try e2e.mm(["signup", "--passphrase", "--email", "pat@uni.edu", "--name", "Pat", "--role", "tutor"], as: pat, stdin: "secret\n")
        let patInfo = try e2e.mmJSON(["whoami"], as: pat)
        #expect(patInfo["protected"] == true && patInfo["unlocked"] == true && patInfo["id"]?.stringValue != id, "\(patInfo)")
        try e2e.mm(["profile", "set", "--courses", "CS 490"], as: pat)

        // Restart: SIGTERM ends it with status 0; a new daemon on the same state directory.
        let stopped = daemon.terminate()
        #expect(stopped?.exitCode == 0, "SIGTERM: \(stopped.map(\.description) ?? "still running after 10 s"); log:\n\(daemon.log)")
        daemon = try e2e.startDaemon()

        // Without a passphrase the account is usable at once, and everything is still there.
        #expect(try e2e.mmJSON(["whoami"])["unlocked"] == true)
        try e2e.mm(["profile", "set", "--bio", "after restart"])
        let kept = try e2e.mmJSON(["profile", "show"])
        #expect(kept["bio"] == "after restart" && kept["courses"]?.strings == ["CS 490", "MATH 221"]
                    && kept["photo"]?["hash"]?.stringValue == hash && kept["name"] == "Ana Lima", "\(kept)")

        // With one, it is locked until `login` with the right passphrase.
        let patLocked = try e2e.mmJSON(["whoami"], as: pat)
        #expect(patLocked["protected"] == true && patLocked["unlocked"] == false, "\(patLocked)")
        let patText = try e2e.mm(["whoami"], as: pat)
        #expect(patText.stdout.contains("locked (`mentormate login` unlocks it)"), "\(patText)")
        let patWrite = try e2e.run(["profile", "set", "--bio", "locked out"], as: pat)
        #expect(patWrite.exitCode == 1 && patWrite.stderr.contains("locked"), "\(patWrite)")
        let wrong = try e2e.run(["login"], as: pat, stdin: "not the secret\n")
        #expect(wrong.exitCode == 1 && wrong.stderr.contains("wrong passphrase"), "\(wrong)")
        #expect(try e2e.mmJSON(["whoami"], as: pat)["unlocked"] == false)
        let right = try e2e.mm(["login"], as: pat, stdin: "secret\n")
        #expect(right.stdout.contains("Logged in."), "\(right)")
        #expect(try e2e.mmJSON(["whoami"], as: pat)["unlocked"] == true)
        try e2e.mm(["profile", "set", "--bio", "Pat is back"], as: pat)
        let patCard = try e2e.mmJSON(["profile", "show"], as: pat)
        #expect(patCard["bio"] == "Pat is back" && patCard["courses"]?.strings == ["CS 490"] && patCard["name"] == "Pat", "\(patCard)")
    }
}
