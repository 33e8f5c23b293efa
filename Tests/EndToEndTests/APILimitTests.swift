import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 4 and the login back-off of item 7: no local user can deny the API to the
/// others — by holding connections, by unfinished uploads, or by making the daemon run
/// Argon2id (256 MiB each) many times at once — and parallel logins cannot get around the
/// back-off. Through the real daemon, with other Unix users for what must be per user.
extension EndToEndTests {
    /// A user holding 300 idle connections gets 32 (the per-user limit) and a clear refusal for
    /// the rest; root and another user are still served, and the hog's own next client is told why.
    @Test func oneUserHoldingManyIdleConnectionsCannotStopOtherUsersStatus() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hog = try e2e.makeUser("hog"), other = try e2e.makeUser("other")
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }

        let holder = try e2e.backgroundProgram([try Binaries.tool("mentormate-api-hog"), e2e.socket, "300"], as: hog)
        defer { holder.kill() }
        let summary = holder.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("held=") }
        let refusal = holder.waitForLine(timeout: .seconds(5)) { $0.hasPrefix("refusal=") }
        #expect(summary == "held=32 refused=268", "the hog: \(summary ?? "no summary"); stderr: \(holder.errorOutput)")
        let refusalJSON = refusal.flatMap { JSON.parse(Array($0.dropFirst("refusal=".count).utf8)) }
        #expect(refusalJSON?.errorCode == -32010
                    && refusalJSON?["error"]?["message"]?.stringValue?.contains("limit per user (api_connections_per_user)") == true,
                "the refusal must name the per-user limit: \(refusal ?? "none")")
        print("end-to-end: API hog \(summary ?? "?"); daemon threads \(daemon.threads() ?? -1)")

        let rootStatus = try e2e.run(["status", "--json"])
        #expect(rootStatus.ok && rootStatus.json?["node"]?.stringValue?.hasPrefix("mm1") == true,
                "root must be served while another user holds its connections: \(rootStatus)")
        let otherStatus = try e2e.run(["status", "--json"], as: other)
        #expect(otherStatus.ok, "another user must be served while the hog holds its connections: \(otherStatus)")
        let hogStatus = try e2e.run(["status"], as: hog)
        #expect(!hogStatus.ok && hogStatus.stderr.contains("connections of your user"),
                "the hog's own client is refused with the reason: \(hogStatus)")

        // Once the hog lets go, it is served again.
        holder.kill()
        var again: ClientRun?
        for _ in 0..<50 {
            again = try e2e.run(["status"], as: hog)
            if again?.ok == true { break }
            usleep(100_000)
        }
        #expect(again?.ok == true, "after the hog's connections closed: \(again.map(\.description) ?? "not run")")
    }

    /// With `api_idle_timeout = 1`: a connection that sends nothing, and one that only dribbles
    /// the bytes of an unfinished line, get a -32010 line and are closed after about a second;
    /// one that keeps sending requests and a subscribed one stay open. Subscriptions are capped
    /// per user (`api_subscriptions_per_user = 2`).
    @Test func anIdleConnectionIsClosedAfterTheTimeoutWhileASubscriptionStays() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let config = try e2e.write("idle.conf", Array("api_idle_timeout = 1\napi_subscriptions_per_user = 2\n".utf8))
        let daemon = try e2e.startDaemon(extra: ["--config", config])
        defer { daemon.kill() }
        try e2e.mm(["signup", "--email", "ida@uni.edu", "--name", "Ida", "--role", "student"])

        let subscriber = try RawConnection(e2e.socket)
        #expect(subscriber.call("subscribe", ["events": ["message"]])?["result"] != nil)
        let second = try RawConnection(e2e.socket)
        #expect(second.call("subscribe", ["events": ["match"]])?["result"] != nil)
        let third = try RawConnection(e2e.socket)
        let refused = third.call("subscribe", ["events": ["match"]])
        #expect(refused?.errorCode == -32010 && refused?["error"]?["message"]?.stringValue?.contains("api_subscriptions_per_user") == true,
                "a third subscription of one user: \(refused.map(\.description) ?? "no answer")")

        let idle = try RawConnection(e2e.socket)
        let opened = ContinuousClock.now
        let dribbler = try RawConnection(e2e.socket)
        dribbler.send(#"{"jsonrpc":"2.0","id":1,"method":"#)
        let active = try RawConnection(e2e.socket)
        // 3.5 s: the active connection asks for status every 250 ms, the dribbler sends one more
        // byte of its line every 250 ms.
        var activeAnswers = 0
        while ContinuousClock.now - opened < .milliseconds(3500) {
            if active.call("status")?["result"]?["node"] != nil { activeAnswers += 1 }
            dribbler.send(" ")
            usleep(250_000)
        }
        let notice = idle.readJSON(timeout: .milliseconds(100))
        #expect(notice?.errorCode == -32010 && notice?["error"]?["message"]?.stringValue?.contains("idle for 1 s") == true,
                "an idle connection is told why it is closed: \(notice.map(\.description) ?? "nothing")")
        #expect(idle.waitForClose(timeout: .milliseconds(500)), "an idle connection must be closed after api_idle_timeout")
        #expect(dribbler.waitForClose(timeout: .milliseconds(500)),
                "bytes of an unfinished line are not activity: the dribbler must be closed too")
        #expect(activeAnswers >= 10, "the active connection was answered \(activeAnswers) times")
        #expect(active.call("status")?["result"]?["node"] != nil, "a connection in use stays open")
        #expect(subscriber.call("status")?["result"]?["node"] != nil && second.call("status")?["result"]?["node"] != nil,
                "subscribed connections stay open however long they are idle")
        #expect(daemon.log.contains("mentormated started"))
    }

    /// 40 unfinished 3.5 MiB uploads on one connection (each new one replaces the last) leave
    /// the daemon's memory where it was; another connection of the same user cannot start a
    /// second upload while one is unfinished; closing the first frees the place.
    @Test func unfinishedUploadsCannotGrowTheDaemonsMemoryAndOnlyOneIsInFlightPerUser() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }
        try e2e.mm(["signup", "--email", "una@uni.edu", "--name", "Una", "--role", "student"])

        let chunk = JSON.string(Data(Self.onePixelPNG.prefix(8) + [UInt8](repeating: 0, count: (512 << 10) - 8)).base64EncodedString())
        let upload = try RawConnection(e2e.socket)
        let rssBefore = try #require(daemon.residentKiB())
        var failures: [String] = []
        for _ in 1...40 {
            var token: JSON?
            for _ in 1...7 {
                var params: [String: JSON] = ["chunk": chunk, "done": false]
                if let token { params["upload"] = token }
                let answer = upload.call("blob.put", .object(params), timeout: .seconds(30))
                guard let next = answer?["result"]?["upload"] else {
                    failures.append(answer.map(\.description) ?? "no answer")
                    break
                }
                token = next
            }
        }
        let rssAfter = try #require(daemon.residentKiB())
        print("end-to-end: 40 unfinished 3.5 MiB uploads on one connection: daemon VmRSS \(rssBefore) KiB before, \(rssAfter) KiB after")
        #expect(failures.isEmpty, "uploads on one connection replace each other and are not refused: \(failures.prefix(2))")
        #expect(rssAfter - rssBefore < 48 * 1024, "unfinished uploads grew the daemon from \(rssBefore) KiB to \(rssAfter) KiB")

        let second = try RawConnection(e2e.socket)
        let refused = second.call("blob.put", ["chunk": chunk, "done": false])
        #expect(refused?.errorCode == -32010 && refused?["error"]?["message"]?.stringValue?.contains("unfinished upload") == true,
                "a second upload in flight for one user: \(refused.map(\.description) ?? "no answer")")
        upload.close()
        var started: JSON?
        for _ in 0..<50 {
            started = second.call("blob.put", ["chunk": chunk, "done": false])
            if started?["result"]?["upload"] != nil { break }
            usleep(100_000)
        }
        #expect(started?["result"]?["upload"] != nil, "once the first connection closed: \(started.map(\.description) ?? "no answer")")
    }

    /// Argon2id (256 MiB at the daemon's cost) runs only after the cheap checks, one run at a
    /// time node-wide, and a user's parallel logins cannot get around the back-off:
    /// six parallel passphrase signups for an account that exists are refused without a run;
    /// eight parallel wrong logins get one passphrase check; six users signing up with
    /// passphrases at once all succeed, one after another, in about one run's memory.
    @Test func passphraseChecksRunOneAtATimeAfterTheCheapChecksAndTheBackoffHoldsUnderParallelAttempts() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let users = try (1...6).map { try e2e.makeUser("argon\($0)") }
        let daemon = try e2e.startDaemon(extra: ["--log-level", "debug"])
        defer { daemon.kill() }
        try e2e.mm(["signup", "--email", "rho@uni.edu", "--name", "Rho", "--role", "student", "--passphrase"], stdin: "right horse\n")
        let mib = 1024

        // (1) Six passphrase signups at once for the account root has: refused before Argon2id.
        try daemon.resetPeakResident()
        let base1 = try #require(daemon.peakResidentKiB())
        let signups = try (0..<6).map { _ in try RawConnection(e2e.socket) }
        let signup: JSON = ["jsonrpc": "2.0", "id": 1, "method": "account.signup",
                            "params": ["email": "rho@uni.edu", "name": "Rho", "role": "student", "passphrase": "again"]]
        for c in signups { c.send(signup.description + "\n") }
        let signupAnswers = signups.map { $0.readJSON(timeout: .seconds(60)) }
        let peak1 = try #require(daemon.peakResidentKiB())
        #expect(signupAnswers.allSatisfy { $0?.errorCode == -32003 }, "\(signupAnswers.map { $0.map(\.description) ?? "none" })")
        #expect(peak1 - base1 < 64 * mib, "signups for an existing account ran Argon2id: VmHWM \(base1) → \(peak1) KiB")

        // (2) Eight wrong logins at once: one is checked, the others are refused before Argon2id.
        try e2e.mm(["logout"])
        try daemon.resetPeakResident()
        let base2 = try #require(daemon.peakResidentKiB())
        let logins = try (0..<8).map { _ in try RawConnection(e2e.socket) }
        let login: JSON = ["jsonrpc": "2.0", "id": 1, "method": "account.login", "params": ["passphrase": "wrong horse"]]
        for c in logins { c.send(login.description + "\n") }
        let loginAnswers = logins.map { $0.readJSON(timeout: .seconds(60)) }
        let peak2 = try #require(daemon.peakResidentKiB())
        let checked = loginAnswers.filter { $0?["error"]?["message"]?.stringValue == "wrong passphrase; try again" }.count
        let held = loginAnswers.filter { $0?.errorCode == -32010 || $0?["error"]?["message"]?.stringValue?.contains("try again in") == true }.count
        #expect(checked == 1 && held == 7, "8 parallel wrong logins: \(checked) checked, \(held) held back: \(loginAnswers.map { $0.map(\.description) ?? "none" })")
        let logged = daemon.log.split(separator: "\n").filter { $0.contains("passphrase checked") && $0.contains("kind=login") }.count
        #expect(logged == 1, "the debug log must show one passphrase check for the logins, not \(logged)")
        #expect(peak2 - base2 < (256 + 64) * mib, "parallel wrong logins: VmHWM \(base2) → \(peak2) KiB")
        // The first mistake is free: the right passphrase works at once.
        let unlocked = try e2e.mmJSON(["login"], stdin: "right horse\n")
        #expect(unlocked["unlocked"] == true)

        // (3) Six users sign up with passphrases at once: all succeed (queued, not refused), one
        // Argon2id run at a time.
        try daemon.resetPeakResident()
        let base3 = try #require(daemon.peakResidentKiB())
        let started = ContinuousClock.now
        let clients = try users.enumerated().map { i, user in
            try e2e.background(["signup", "--email", "u\(i)@uni.edu", "--name", "User \(i)", "--role", "tutor", "--passphrase"],
                               as: user, stdin: "secret \(i)\n")
        }
        var threads = 0
        var ends: [ChildProcess.Status?] = []
        for client in clients {
            while client.wait(timeout: .milliseconds(50)) == nil && ContinuousClock.now - started < .seconds(120) {
                threads = max(threads, daemon.threads() ?? 0)
            }
            ends.append(client.wait(timeout: .zero))
        }
        let took = ContinuousClock.now - started
        let peak3 = try #require(daemon.peakResidentKiB())
        #expect(ends.allSatisfy { $0?.exitCode == 0 }, "every queued signup succeeds: \(ends); \(clients.map(\.errorOutput))")
        let waited = daemon.log.split(separator: "\n").filter { $0.contains("passphrase checked") && $0.contains("kind=signup") }
        print("end-to-end: 6 parallel passphrase signups in \(took): daemon VmHWM \(base3) KiB before, \(peak3) KiB peak; "
              + "existing-account signups \(base1) → \(peak1) KiB; wrong logins \(base2) → \(peak2) KiB; peak threads \(threads); "
              + "checks: \(waited.map { $0.split(separator: " ").filter { $0.hasPrefix("waited_ms=") }.joined() })")
        #expect(peak3 - base3 < (256 + 96) * mib,
                "6 parallel passphrase signups: VmHWM \(base3) → \(peak3) KiB; at most one Argon2id run (256 MiB) may be resident at a time")
    }
}

extension Daemon {
    /// Threads of the daemon (from /proc/PID/status).
    func threads() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst(8).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
