import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The README followed literally from a fresh clone, as a new user (and CI) would: `git clone`
/// of this repository into a temporary directory, then its commands in order — `bash
/// scripts/run` (as root: the system paths; Avahi installed but not running, so the script starts
/// it), every line of "Using it on one machine" in a second shell, Ctrl-C, and `bash
/// scripts/test` — each step's output checked.
///
/// The clone lives in /var/tmp/mentormate-readme-test/clone. Every tracked file the clone holds
/// byte for byte as this repository does gets this repository's modification time (a file that
/// differs keeps the clone's), so a build sees exactly the files that changed and no others.
/// Its `.build` is kept between runs (moved aside, the clone made afresh, moved back): the release
/// build of `bash scripts/run` is cold only on a machine's first run (as in CI).
///
/// `bash scripts/test` (the debug build of everything, then `swift test`) does not start cold:
/// it runs in a private mount namespace where the clone is bind-mounted at this repository's
/// path and its `.build` is an overlay whose lower layer is the `.build` these tests were built
/// in (its writes go to a throwaway upper layer; SwiftPM's lock is a file of its own, in a
/// private /tmp; the suite's own build is never touched). The
/// command is still the README's, typed in the clone: SwiftPM there compares the clone's files
/// with what the suite's build was made from, recompiles what differs (nothing, when the clone
/// is of the tested commit — in CI the suite itself was built from a fresh clone by this same
/// command), relinks and runs the tests. When the suite was built elsewhere (another
/// `--scratch-path`), the clone builds on its own, cold. `bash scripts/test` runs with
/// `--filter Bech32Tests` (the README says its arguments go to `swift test`): the whole suite
/// from inside the suite would run this test again.
///
/// `bash scripts/run` runs in a private mount and network namespace: tmpfs on /run/dbus,
/// /run/avahi-daemon, /run/mentormate, /var/lib/mentormate and /usr/local/bin (so the D-Bus,
/// Avahi, daemon state and client link it makes are its own), a veth pair for Avahi's multicast.
extension EndToEndTests {
    static let readmeBase = "/var/tmp/mentormate-readme-test"

    /// The lines of the ```sh blocks of the README section `heading` (up to the next "## ").
    static func readmeLines(_ readme: String, section heading: String) -> [String] {
        guard let start = readme.range(of: "\n## " + heading + "\n") else { return [] }
        var text = readme[start.upperBound...]
        if let end = text.range(of: "\n## ") { text = text[..<end.lowerBound] }
        var lines: [String] = [], inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inBlock = line == "```sh"; continue }
            if inBlock, !line.trimmingCharacters(in: .whitespaces).isEmpty { lines.append(String(line)) }
        }
        return lines
    }

    /// What each line of "Using it on one machine" must print, alone on a fresh node: the line's
    /// start, its exit status, and text its stdout or stderr must hold.
    static let readmeExpectations: [(start: String, status: Int32, output: [String])] = [
        ("mentormate signup --email ana@uni.edu", 0, ["Signed up.\nAna (student)", "Next: mentormate profile set"]),
        ("mentormate profile set --courses", 0, ["Profile updated.", "courses  CS 490, MATH 221", "budget   30",
                                                 "bio      Looking for help with algorithms"]),
        ("mentormate profile set --available", 0, ["Profile updated.", "slots    Mon 14-17, Wed 9:30-12", "prefers  wage at most 30"]),
        ("mentormate settings set feed.max_wage", 0, ["feed.max_wage = 30"]),
        ("mentormate profile show", 0, ["Ana (student)", "CS 490, MATH 221"]),
        ("mentormate feed", 0, ["Nobody new to show right now."]),
        ("mentormate swipe", 0, ["Nobody new to show right now.", "Liked 0, passed 0, 0 new matches."]),
        ("mentormate identify --luster metallic", 0, ["magnetite", "pyrite", "hematite (mineral) — 87/100"]),
        ("mentormate leaderboard", 0, ["nobody has played yet."]),
        ("mentormate meetups", 0, ["No open meetups."]),
        ("mentormate status", 0, ["socket     /run/mentormate/api.sock", "state dir  /var/lib/mentormate", "discovery  on", "accounts   1"]),
        ("mentormate doctor", 0, ["ok    mDNS discovery", "ok    service visible", "ok    D-Bus system bus"]),
        // The second block needs someone else's ID, or a photo: alone, each says what is missing.
        ("mentormate like mm1zg69v7ysz", 1, ["hint: `mentormate feed` and `mentormate matches` show the IDs you can use"]),
        ("mentormate matches", 0, ["No matches yet. `mentormate feed` shows people to like."]),
        ("mentormate chat mm1zg69v7ysz \"", 1, ["hint: `mentormate feed` and `mentormate matches` show the IDs you can use"]),
        ("mentormate chat mm1zg69v7ysz --follow", 1, ["hint: `mentormate feed` and `mentormate matches` show the IDs you can use"]),
        ("mentormate profile set --photo me.jpg", 1, ["me.jpg"]),
    ]

    @Test(.timeLimit(.minutes(60)))
    func theReadmesCommandsWorkLiterallyFromAFreshClone() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        try FileManager.default.createDirectory(atPath: Self.readmeBase, withIntermediateDirectories: true)
        // One run at a time uses the clone.
        let lock = open(Self.readmeBase + "/lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        defer { close(lock) }
        let clone = Self.readmeBase + "/clone"
        let prepare = """
            set -e
            base="$0"; repo="$1"
            if [ -d "$base/clone/.build" ]; then rm -rf "$base/build-cache"; mv "$base/clone/.build" "$base/build-cache"; fi
            rm -rf "$base/clone"
            git clone --quiet "$repo" "$base/clone"
            # Identical files keep the repository's modification times (see the doc comment).
            cd "$base/clone"
            git ls-files -z | while IFS= read -r -d '' f; do
              if [ ! -L "$f" ] && cmp -s "$f" "$repo/$f"; then touch -r "$repo/$f" "$f"; fi
            done
            if [ -d "$base/build-cache" ]; then mv "$base/build-cache" "$base/clone/.build"; fi
            git -C "$base/clone" log -1 --format=%H
            """
        let cloned = try e2e.tool(["/bin/bash", "-c", prepare, Self.readmeBase, LabHosts.repository], timeout: .seconds(120))
        #expect(cloned.status.exitCode == 0, "git clone: \(cloned.output)")
        let readme = try String(contentsOfFile: clone + "/README.md", encoding: .utf8)

        let start = Self.readmeLines(readme, section: "Start here: two commands")
        #expect(start.count == 2 && start[0].hasPrefix("bash scripts/run ") && start[1].hasPrefix("bash scripts/test "),
                "the README starts with the two commands: \(start)")
        let ci = try String(contentsOfFile: clone + "/.ci/run", encoding: .utf8)
        #expect(ci.split(separator: "\n").last == "exec bash scripts/test", "CI runs exactly the README's test command:\n\(ci)")
        let oneMachine = Self.readmeLines(readme, section: "Using it on one machine")
        #expect(oneMachine.count >= 10, "\(oneMachine)")
        #expect(!readme.contains("--show-bin-path)\n"), "no build-path dance before the client works")

        // 1. `bash scripts/run`, in its own namespaces.
        let varLib = "/var/lib/mentormate"
        let hadVarLib = FileManager.default.fileExists(atPath: varLib)
        defer { if !hadVarLib { rmdir(varLib) } }
        // Over the suite's release build when it has one (`.build/static`, made by `make deb`
        // in DebPackageTests, which runs first): the clone is seen at this repository's path with
        // its `.build` an overlay on the suite's, as for `bash scripts/test` below, so the
        // README's release build (`scripts/build-release`, the same flags and scratch path) only
        // relinks what the clone changes. Otherwise the clone's own `.build` (kept between runs).
        let suiteBuild = LabHosts.repository + "/.build"
        let sharesRelease = FileManager.default.fileExists(atPath: suiteBuild + "/static/release")
        let runOverlay = Self.readmeBase + "/overlay-run"
        defer { if sharesRelease { _ = try? e2e.tool(["/bin/rm", "-rf", runOverlay], timeout: .seconds(120)) } }
        let namespace = """
            set -e
            ip link set lo up
            ip link add mmrd0 type veth peer name mmrd1
            ip link set mmrd0 up; ip link set mmrd1 up; ip addr add 169.254.199.1/24 dev mmrd0
            for d in /run/dbus /run/avahi-daemon /run/mentormate /usr/local/bin; do
              mkdir -p "$d"; mount -t tmpfs -o mode=0755 tmpfs "$d"
            done
            mkdir -p /var/lib/mentormate; mount -t tmpfs -o mode=0700 tmpfs /var/lib/mentormate
            clone="$0"; line="$1"; repo="$2"; lower="$3"; overlay="$4"
            if [ -n "$lower" ]; then
              rm -rf "$overlay"; mkdir -p "$overlay/upper" "$overlay/work" "$overlay/tmp" "$clone/.build"
              mount -t overlay overlay -o "lowerdir=$lower,upperdir=$overlay/upper,workdir=$overlay/work" "$clone/.build"
              rm -f "$clone/.build/.lock"
              chmod 1777 "$overlay/tmp"; mount --bind "$overlay/tmp" /tmp
              mkdir -p "$repo"; mount --rbind "$clone" "$repo"
              cd "$repo"
            else
              cd "$clone"
            fi
            exec bash -c "$line"
            """
        var env = ChildProcess.baseEnvironment
        env["XDG_RUNTIME_DIR"] = nil
        env["PATH"] = "/usr/local/bin:" + (env["PATH"] ?? "/usr/bin:/bin")
        let runLog = e2e.path("run.err")
        let run = try ChildProcess(["/usr/bin/unshare", "-m", "-n", "--propagation", "private", "/bin/bash", "-c", namespace, clone, start[0],
                                    LabHosts.repository, sharesRelease ? suiteBuild : "", runOverlay],
                                   environment: env, stdout: .file(e2e.path("run.out")), stderr: .file(runLog))
        defer { if run.wait(timeout: .zero) == nil { _ = run.kill() } }
        let (log, took, served) = labPoll(timeout: .seconds(50 * 60), interval: .seconds(1), { e2e.read(runLog) },
                                          until: { $0.contains("Stop it with Ctrl-C.") || run.wait(timeout: .zero) != nil })
        let builds = log.split(separator: "\n").filter { $0.hasPrefix("Build of product") }.joined(separator: "; ")
        print("readme: `\(start[0])` served after \(took)\(sharesRelease ? " over the suite's release build" : " (the clone's own build)"): \(builds)")
        try #require(served && run.wait(timeout: .zero) == nil, "scripts/run did not get to serving:\n\(log.suffix(4000))")
        #expect(log.contains("scripts/run: mDNS: on — started avahi-daemon"), "Avahi installed but not running is started:\n\(log.suffix(3000))")
        #expect(log.contains("  mentormated is running; its socket is /run/mentormate/api.sock"), "\(log.suffix(3000))")
        #expect(log.contains("  Try next, in another terminal:  mentormate signup --email you@uni.edu"), "the client is on PATH:\n\(log.suffix(3000))")

        // 2. "Using it on one machine", line by line, in a second shell on the same machine. A
        // person opens that shell and types for longer than Avahi, started a moment ago, takes
        // to probe its host name and register our service (a few seconds here): wait for that.
        func inNamespace(_ line: String, _ name: String) throws -> (ChildProcess.Status?, String, String) {
            let out = e2e.path(name + ".out"), err = e2e.path(name + ".err")
            let client = try ChildProcess(["/usr/bin/nsenter", "-t", "\(run.pid)", "-m", "-n", "--wd=\(clone)", "--", "/bin/bash", "-c", line],
                                          environment: env, stdin: "/dev/null", stdout: .file(out), stderr: .file(err))
            let status = client.wait(timeout: .seconds(60))
            if status == nil { _ = client.kill() }
            return (status, e2e.read(out), e2e.read(err))
        }
        let (discovery, after, on) = try labPoll(timeout: .seconds(60), interval: .milliseconds(500),
                                                 { try inNamespace("mentormate --json status", "discovery").1 },
                                                 until: { $0.contains("\"discovery\" : \"on\"") })
        #expect(on, "discovery should be on once Avahi runs: \(discovery)")
        print("readme: discovery on \(after) after the daemon served")
        for line in oneMachine {
            let (status, stdout, stderr) = try inNamespace(line, "line-\(oneMachine.firstIndex(of: line) ?? 0)")
            let text = stdout + stderr
            guard let expected = Self.readmeExpectations.first(where: { line.hasPrefix($0.start) }) else {
                Issue.record("README line not checked by this test (add it to readmeExpectations): \(line)\n\(text)")
                continue
            }
            #expect(status?.exitCode == expected.status,
                    "`\(line)`: \(status.map(\.description) ?? "did not end")\n\(text)\nthe daemon's log (scripts/run):\n\(e2e.read(runLog).suffix(3000))")
            for part in expected.output { #expect(text.contains(part), "`\(line)` should print \(part):\n\(text)") }
            if expected.status != 0 {
                #expect(stderr.split(separator: "\n").count == 2, "an error is one line and its one-line fix:\n\(stderr)")
            }
        }

        // 3. Ctrl-C: the daemon stops, and so does what scripts/run started for mDNS.
        let started = log.split(separator: "\n").first { $0.contains("started avahi-daemon (pids ") }
            .flatMap { $0.components(separatedBy: "(pids ").last?.split(separator: ")").first }
            .map { $0.split(separator: " ").compactMap { Int32($0) } } ?? []
        #expect(started.count == 2, "D-Bus and Avahi were started: \(started)")
        run.send(SIGINT)
        let stopped = run.wait(timeout: .seconds(30))
        #expect(stopped?.exitCode == 0, "Ctrl-C stops it cleanly: \(String(describing: stopped))\n\(e2e.read(runLog).suffix(2000))")
        let end = e2e.read(runLog)
        #expect(end.contains("notice mentormated stopped"), "\(end.suffix(2000))")
        #expect(end.contains("scripts/run: stopped what it started for mDNS"), "\(end.suffix(2000))")
        for pid in started {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            #expect(stat.isEmpty || stat.contains(") Z "), "pid \(pid) (started for mDNS) still runs: \(stat)")
        }

        // 4. `bash scripts/test`: builds everything and runs the tests; the last line is the summary.
        // With the suite's build as the lower layer of the clone's `.build` when there is one.
        let testLine = start[1].components(separatedBy: "#")[0].trimmingCharacters(in: .whitespaces) + " --filter Bech32Tests"
        let testOut = e2e.path("test.out")
        let sharesBuild = FileManager.default.fileExists(atPath: suiteBuild)
            && URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
                .hasPrefix(URL(fileURLWithPath: suiteBuild).resolvingSymlinksInPath().path + "/")
        let overlay = Self.readmeBase + "/overlay"
        let shared = """
            set -e
            clone="$0"; repo="$1"; lower="$2"; overlay="$3"
            rm -rf "$overlay"; mkdir -p "$overlay/upper" "$overlay/work" "$clone/.build"
            mount -t overlay overlay -o "lowerdir=$lower,upperdir=$overlay/upper,workdir=$overlay/work" "$clone/.build"
            # SwiftPM locks a build directory with a file named after its path, in /tmp: the
            # running suite's `swift test` holds the one for this path. This copy-on-write view is
            # private, so it gets a lock of its own: a private /tmp (and .build/.lock) here.
            rm -f "$clone/.build/.lock"
            mkdir -p "$overlay/tmp"; chmod 1777 "$overlay/tmp"; mount --bind "$overlay/tmp" /tmp
            mkdir -p "$repo"   # when the repository is under /tmp, its path in the private /tmp
            mount --rbind "$clone" "$repo"
            cd "$repo"
            exec bash -c "$4"
            """
        let argv = sharesBuild
            ? ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/bash", "-c", shared, clone, LabHosts.repository, suiteBuild, overlay, testLine]
            : ["/bin/bash", "-c", "cd \"$0\" && " + testLine, clone]
        defer { if sharesBuild { _ = try? e2e.tool(["/bin/rm", "-rf", overlay], timeout: .seconds(120)) } }
        let tests = try ChildProcess(argv, environment: env, stdout: .file(testOut), stderr: .file(testOut + ".err"))
        let testStatus = tests.wait(timeout: .seconds(50 * 60))
        if testStatus == nil { _ = tests.kill() }
        let built = (e2e.read(testOut) + e2e.read(testOut + ".err")).split(separator: "\n").first { $0.hasPrefix("Build complete!") } ?? "?"
        print("readme: `\(testLine)` in the clone\(sharesBuild ? " over the suite's build" : " (cold: no suite build at \(suiteBuild))"): \(built)")
        let summary = e2e.read(testOut).split(separator: "\n").last.map(String.init) ?? ""
        #expect(testStatus?.exitCode == 0, "`\(testLine)`: \(String(describing: testStatus))\n\(e2e.read(testOut + ".err").suffix(3000))")
        #expect(summary.contains("Test run with") && summary.contains("passed"), "the last line is swift test's summary: \(summary)")
    }
}
