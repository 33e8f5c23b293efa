import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `bash scripts/demo` (issue 12): the demo campus plays its story in the lab with the real
/// daemons and client, no --peer, and `bash scripts/demo down` leaves nothing behind.
extension EndToEndTests {
    /// The text between the narration line that starts with `title` and the next one.
    static func demoSection(_ output: String, _ title: String) -> String {
        let parts = output.components(separatedBy: "\n==> ")
        return parts.first { $0.hasPrefix(title) } ?? ""
    }

    @Test func theDemoCampusPlaysTheStoryOverMDNSAndDemoDownLeavesNothing() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "dmo")
        // A safety net only: the test's own teardown is `demo down`, checked below.
        defer { try? lab.down() }
        try lab.lab(["down"])
        let linkDir = e2e.path("bin")
        var env = lab.environment
        env["MENTORMATE_DEMO_BIN"] = URL(fileURLWithPath: e2e.binaries.client).deletingLastPathComponent().path
        env["MENTORMATE_RUN_BIN_DIR"] = linkDir
        let script = LabHosts.repository + "/scripts/demo"

        let started = ContinuousClock.now
        let out = e2e.path("demo.out")
        let demo = try ChildProcess(["/bin/bash", script], environment: env, stdout: .file(out), stderr: .file(out + ".err"))
        let status = demo.wait(timeout: .seconds(180))
        let elapsed = ContinuousClock.now - started
        let output = e2e.read(out)
        let errors = e2e.read(out + ".err")
        #expect(status?.exitCode == 0, "scripts/demo: \(status.map(\.description) ?? "did not end in 180 s")\n\(output)\n\(errors)")
        if status == nil { demo.kill() }
        print("demo: the story took \(elapsed) (output \(output.count) bytes)")
        #expect(elapsed < .seconds(60), "the demo should be quick; it took \(elapsed)")

        // Each step's result, from the real client's output.
        let peers = Self.demoSection(output, "They find each other over mDNS")
        #expect(peers.components(separatedBy: "  mdns  ").count - 1 == 2, "host 1 links to both others over mDNS:\n\(peers)")
        #expect(!output.contains("--peer 1") && !output.contains("--peer 169"), "no --peer anywhere")
        let anaFeed = Self.demoSection(output, "Ana's feed on host 1")
        let rows = anaFeed.split(separator: "\n").filter { $0.hasPrefix("mm1") }.map(String.init)
        let benRow = rows.first { $0.contains(" Ben ") } ?? "", cyRow = rows.first { $0.contains(" Cy ") } ?? ""
        #expect(benRow.contains("shares CS 490") && cyRow.contains("nearby now") && !cyRow.contains("shares"),
                "Ana's feed gives the reasons:\n\(anaFeed)")
        #expect(rows.count == 2 && rows[0] == benRow && rows[1] == cyRow, "Ben ranks above Cy in Ana's feed:\n\(anaFeed)")
        let why = Self.demoSection(output, "Why Ben scores what he does")
        #expect(why.contains("83/100") && why.contains("courses 17.5/35: 1 shared course: CS 490")
                && why.contains("availability 20/20: free at the same time 3 h a week"), "Ben's score, part by part:\n\(why)")
        let filtered = why.split(separator: "\n").filter { $0.hasPrefix("mm1") }
        #expect(filtered.count == 1 && filtered[0].contains(" Ben "), "only Ben is free on Monday at 15:00 for at most 30:\n\(why)")
        let benFeed = Self.demoSection(output, "Ben's feed on host 2")
        let benRows = benFeed.split(separator: "\n").filter { $0.hasPrefix("mm1") }
        #expect(benRows.count == 1 && benRows[0].contains(" Ana ") && benRows[0].contains("shares CS 490"),
                "Ben's feed shows Ana (not Cy, another tutor):\n\(benFeed)")
        #expect(Self.demoSection(output, "Ana likes Ben").contains("You liked"), "\(output)")
        let match = Self.demoSection(output, "Ben likes Ana back")
        #expect(match.contains("it's a match!"), "Ben's like makes the match at once:\n\(match)")
        #expect(match.contains(" Ben ") && match.contains("MESSAGES"), "Ana's matches list Ben:\n\(match)")
        let chat = Self.demoSection(output, "They chat both ways")
        #expect(chat.contains("you  Hi Ben! Could you help me with Dijkstra") && chat.contains("Ben  Sure: library, Tuesday 5pm?"),
                "Ana's conversation has her message and Ben's reply:\n\(chat)")
        let away = Self.demoSection(output, "Ben's laptop leaves the network")
        #expect(away.contains("Ana  Hi Ben!") && !away.contains("Ana  Tuesday works"), "while away Ben's node lacks the new message:\n\(away)")
        let back = Self.demoSection(output, "Ben's laptop comes back")
        #expect(back.contains("Ana  Tuesday works. See you there!"), "back on the network it catches up:\n\(back)")
        #expect(back.contains("all three replicas hold"), "\(back)")
        let post = Self.demoSection(output, "Cy posts a photo of a find")
        #expect(post.contains("You follow") && post.contains("Banded agate from the river bed") && post.contains("Likes: 1")
                 && post.contains("Comments: 1") && post.contains("Ana: Nice banding! Try the streak test"),
                "Cy's post, with Ana's like and comment, on Cy's host:\n\(post)")
        let quiz = Self.demoSection(output, "Ana and Ben play the quiz")
        #expect(quiz.contains("Score ") && quiz.contains("— 2 players") && quiz.contains("Ana") && quiz.contains("Ben"),
                "host 3 ranks both players:\n\(quiz)")
        let meetup = Self.demoSection(output, "Cy hosts a one-seat study session")
        #expect(meetup.contains("Dijkstra study session") && meetup.contains("seat 1  Ana") && meetup.contains("waitlist 1  Ben")
                && meetup.contains("Comments:") && meetup.contains("Ben: Can we go over problem 3?"), "one seat, one waitlist place, a comment:\n\(meetup)")
        let done = Self.demoSection(output, "Done in")
        #expect(done.contains("scripts/lab exec 2 mentormate feed") && done.contains("bash scripts/demo down"), "\(done)")

        // The printed command works: on host 2 the client finds host 2's daemon and acts as Ben.
        var shell = env
        shell["PATH"] = linkDir + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        let whoami = try ChildProcess(["/bin/bash", LabHosts.repository + "/scripts/lab", "exec", "2", "mentormate", "whoami"],
                                      environment: shell, stdout: .file(e2e.path("whoami.out")), stderr: .file(e2e.path("whoami.err")))
        #expect(whoami.wait(timeout: .seconds(30))?.exitCode == 0, "\(e2e.read(e2e.path("whoami.err")))")
        #expect(e2e.read(e2e.path("whoami.out")).hasPrefix("Ben (tutor)"), "\(e2e.read(e2e.path("whoami.out")))")
        let feed = try ChildProcess(["/bin/bash", LabHosts.repository + "/scripts/lab", "exec", "3", "mentormate", "feed"],
                                    environment: shell, stdout: .file(e2e.path("feed.out")), stderr: .file(e2e.path("feed.err")))
        #expect(feed.wait(timeout: .seconds(30))?.exitCode == 0, "\(e2e.read(e2e.path("feed.err")))")
        #expect(e2e.read(e2e.path("feed.out")).contains(" Ana "), "host 3 is Cy's (a tutor): Ana is in the feed:\n\(e2e.read(e2e.path("feed.out")))")

        // `demo down`: no process, namespace or bridge of this prefix is left.
        let pids = try lab.lab(["pids"]).split(separator: "\n").compactMap { Int32($0.split(separator: " ").first ?? "") }
        #expect(pids.count >= 12, "three hosts' holder, D-Bus, Avahi, sleeper and daemon: \(pids)")
        let down = try ChildProcess(["/bin/bash", script, "down"], environment: env,
                                    stdout: .file(e2e.path("down.out")), stderr: .file(e2e.path("down.err")))
        #expect(down.wait(timeout: .seconds(60))?.exitCode == 0, "\(e2e.read(e2e.path("down.err")))")
        for pid in pids {
            // Gone, or a zombie nobody has reaped yet (it runs no more).
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            let state = stat.range(of: ") ").map { stat[$0.upperBound...].prefix(1) } ?? ""
            #expect(stat.isEmpty || state == "Z" || state == "X", "pid \(pid) still runs after demo down: \(stat)")
        }
        let namespaces = try e2e.tool(["/usr/sbin/ip", "netns", "list"]).output
        #expect(!namespaces.contains(lab.prefix), "namespaces left: \(namespaces)")
        let links = try e2e.tool(["/usr/sbin/ip", "-o", "link", "show"]).output
        #expect(!links.contains(lab.prefix + "br0") && !links.contains(lab.prefix + "v"), "links left: \(links)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/mmlab-\(lab.prefix)"), "the lab's state directory is left")
    }
}
