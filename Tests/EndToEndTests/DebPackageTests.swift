import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 19 item 1: the Debian package. `make deb` is run once for the whole suite (the release
/// build with the Swift runtime linked statically, `scripts/build-release`, takes minutes when
/// cold, seconds when its scratch path `.build/static` is warm — and the README's `scripts/run`
/// then reuses it, `ReadmeTests`); the tests then read the package with the real dpkg-deb,
/// lintian and dpkg, and install, upgrade, remove and purge it in a throwaway root
/// (`dpkg --root=DIR --force-script-chrootless`: the maintainer scripts run on this machine with
/// `DPKG_ROOT=DIR`, as in a bootstrap, and systemd does not run there).
@Suite(.serialized, .tags(.multiProcess, .root)) struct DebPackageTests {
    /// What one `make deb` made: the package and its build's output.
    struct Built: Sendable {
        let deb: String
        let version: String
        let architecture: String
        let output: String
    }

    /// Where the suite's package goes (kept between runs, under the ignored .build).
    static let outputDirectory = EndToEndTests.packageRoot + "/.build/deb-test"

    /// The one `make deb` of the suite, or why it failed (every test then fails with it).
    static let built: Result<Built, E2EError> = {
        do {
            let make = try EndToEndTests.program("make", package: "make")
            let dpkg = try EndToEndTests.program("dpkg", package: "dpkg")
            let architecture = try capture([dpkg, "--print-architecture"]).trimmingCharacters(in: .whitespacesAndNewlines)
            try? FileManager.default.removeItem(atPath: outputDirectory)
            try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
            let started = ContinuousClock.now
            let output = try capture([make, "-C", EndToEndTests.packageRoot, "deb", "DEB_OUT=\(outputDirectory)",
                                      "DEB_STAGE=\(outputDirectory)/stage"], timeout: .seconds(45 * 60))
            print("make deb: \(ContinuousClock.now - started)")
            let version = MentorMateVersion.string
            let deb = outputDirectory + "/mentormate_\(version)_\(architecture).deb"
            guard FileManager.default.fileExists(atPath: deb) else {
                throw E2EError("make deb succeeded but \(deb) is missing; it said:\n\(output)")
            }
            return .success(Built(deb: deb, version: version, architecture: architecture, output: output))
        } catch let error as E2EError {
            return .failure(error)
        } catch {
            return .failure(E2EError("\(error)"))
        }
    }()

    /// The suite's package; throws (the test fails, saying why) without root or when it cannot be built.
    func package() throws -> Built {
        guard geteuid() == 0 else {
            throw E2EError("DebPackageTests need root: dpkg --root installs root-owned files and its maintainer scripts make and delete the mentormate user in the throwaway root (systemd-sysusers --root, userdel --root); run the tests as root")
        }
        return try Self.built.get()
    }

    /// Runs a program to its end and returns its stdout and stderr together; throws unless it
    /// exits with status 0.
    static func capture(_ argv: [String], environment: [String: String] = [:], timeout: Duration = .seconds(300)) throws -> String {
        let out = "/tmp/mm-deb-\(UUID().uuidString).out"
        defer { unlink(out) }
        var env = ChildProcess.baseEnvironment
        for (k, v) in environment { env[k] = v }
        let process = try ChildProcess(argv, environment: env, stdout: .file(out), stderr: .file(out))
        let status = process.wait(timeout: timeout)
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        guard let status else {
            process.kill()
            throw E2EError("\(argv.joined(separator: " ")) did not end within \(timeout):\n\(text)")
        }
        guard status.exitCode == 0 else { throw E2EError("\(argv.joined(separator: " ")) failed (\(status)):\n\(text)") }
        return text
    }

    /// Mode (permission bits), owner and group of a path, not following a symlink.
    static func attributes(_ path: String) -> (mode: mode_t, uid: uid_t, gid: gid_t)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (st.st_mode & 0o7777, st.st_uid, st.st_gid)
    }

    /// The package's fields, maintainer scripts and conffiles, extracted with dpkg-deb.
    struct Control {
        let fields: String
        let scripts: [String: String]
        let conffiles: [String]

        init(_ deb: String, into dir: String) throws {
            let dpkgDeb = try EndToEndTests.program("dpkg-deb", package: "dpkg")
            fields = try DebPackageTests.capture([dpkgDeb, "--field", deb])
            _ = try DebPackageTests.capture([dpkgDeb, "--control", deb, dir])
            var scripts: [String: String] = [:]
            for name in ["preinst", "postinst", "prerm", "postrm"] {
                if let text = try? String(contentsOfFile: dir + "/" + name, encoding: .utf8) { scripts[name] = text }
            }
            self.scripts = scripts
            conffiles = ((try? String(contentsOfFile: dir + "/conffiles", encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }

        func field(_ name: String) -> String? {
            fields.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
        }
    }

    // MARK: The package

    /// `make deb` names the package after the one version the programs print, for this machine's
    /// architecture; it depends on the Debian libraries the programs link (versions from
    /// dpkg-shlibdeps) and recommends Avahi; the programs carry the Swift runtime (no library of
    /// the toolchain is needed) and run.
    @Test func thePackageIsSelfContainedAndDependsOnTheDebianLibrariesItLinks() throws {
        let built = try package()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let control = try Control(built.deb, into: e2e.path("control"))
        #expect(control.field("Package") == "mentormate")
        #expect(control.field("Version") == built.version)
        #expect(control.field("Architecture") == built.architecture)
        let depends = try #require(control.field("Depends"), "no Depends in:\n\(control.fields)")
        let names = depends.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? "" }
        for library in ["libc6", "libsodium23", "libsqlite3-0", "libavahi-compat-libdnssd1", "libstdc++6", "libgcc-s1"] {
            #expect(names.contains(library), "Depends lacks \(library): \(depends)")
        }
        // What the maintainer scripts and the unit run: systemd-sysusers, deb-systemd-helper, /bin/kill.
        #expect(depends.contains("systemd | systemd-standalone-sysusers") && names.contains("init-system-helpers")
                && names.contains("procps"), "\(depends)")
        #expect(depends.contains("libc6 (>="), "versions come from dpkg-shlibdeps: \(depends)")
        #expect(control.field("Recommends")?.contains("avahi-daemon") == true, "\(control.fields)")
        #expect(!names.contains { $0.hasPrefix("swift") }, "\(depends)")

        // The programs as shipped: no library of the Swift toolchain, and they run.
        let dpkgDeb = try EndToEndTests.program("dpkg-deb", package: "dpkg")
        let tree = e2e.path("tree")
        _ = try Self.capture([dpkgDeb, "--extract", built.deb, tree])
        for program in ["mentormated", "mentormate", "mentormate-ca"] {
            let path = tree + "/usr/bin/" + program
            let linked = try Self.capture(["/usr/bin/ldd", path])
            #expect(!linked.contains("swift") && !linked.contains("libFoundation") && !linked.contains("libdispatch")
                    && !linked.contains("not found"), "\(program) links:\n\(linked)")
            // Run with an environment that could not find the toolchain's libraries.
            let version = try Self.capture(["/usr/bin/env", "-i", path, "--version"])
            #expect(version.hasPrefix("\(program) \(built.version)"), "\(program) --version: \(version)")
        }
        // The packaged daemon serves, the packaged client talks to it, and it stops cleanly.
        let socket = e2e.path("packaged.sock"), log = e2e.path("packaged.log")
        let clean = ["/usr/bin/env", "-i", "PATH=/usr/bin:/bin"]
        let process = try ChildProcess(clean + [tree + "/usr/bin/mentormated", "--state-dir", e2e.path("packaged-state"), "--socket", socket,
                                                "--listen", "127.0.0.1:0", "--no-mdns"] + E2E.networkFlags,
                                       stdout: .file(log), stderr: .file(log))
        let daemon = Daemon(process: process, stateDir: e2e.path("packaged-state"), socket: socket, logPath: log)
        defer { daemon.kill() }
        try daemon.waitUntilServing()
        let status = try Self.capture(clean + [tree + "/usr/bin/mentormate", "--socket", socket, "status"])
        #expect(status.contains("mm1") && status.contains(socket), "mentormate status (packaged):\n\(status)")
        let end = daemon.terminate(timeout: .seconds(15))
        #expect(end?.exitCode == 0, "the packaged daemon at SIGTERM: \(end.map(\.description) ?? "still running"); log:\n\(daemon.log)")
        // The manual pages name the same version (they are written by hand).
        for page in ["man/man1/mentormate.1", "man/man8/mentormated.8", "man/man8/mentormate-ca.8"] {
            let text = e2e.read(EndToEndTests.packageRoot + "/" + page)
            #expect(text.split(separator: "\n").first?.contains("MentorMate \(built.version)") == true,
                    "\(page)'s .TH line names another version than Version.swift (\(built.version))")
        }
    }

    /// lintian finds no error. Every warning it gives is listed (as "- `W: TAG`"), with the reason
    /// it stays, in docs/OPERATIONS.md ("Installing from the Debian package").
    @Test func lintianReportsNoErrorsAndEveryWarningIsExplained() throws {
        let built = try package()
        let lintian = try EndToEndTests.program("lintian", package: "lintian")
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let result = try EndToEndTests.run(e2e, [lintian, "--fail-on", "error", "--display-level", ">=warning", built.deb],
                                           timeout: .seconds(600))
        print("lintian \(built.deb):\n\(result.output)")
        let tags = result.output.split(separator: "\n").filter { $0.hasPrefix("E: ") || $0.hasPrefix("W: ") }
        #expect(result.status.exitCode == 0 && !tags.contains { $0.hasPrefix("E: ") }, "lintian: \(result.status)\n\(result.output)")
        let operations = e2e.read(EndToEndTests.packageRoot + "/docs/OPERATIONS.md")
        for line in tags where line.hasPrefix("W: ") {
            // "W: mentormate: TAG [context]"
            let parts = line.split(separator: " ")
            guard parts.count >= 3 else { continue }
            let tag = String(parts[2])
            #expect(operations.contains("- `W: \(tag)`"), "lintian warns \(tag), which docs/OPERATIONS.md does not explain (as \"- `W: \(tag)`\" and why): \(line)")
        }
    }

    /// The maintainer scripts are debhelper's, in its order: postinst makes the user
    /// (systemd-sysusers), then the directories (systemd-tmpfiles), enables both units with
    /// deb-systemd-helper and starts them on install, restarts them on upgrade (only when systemd
    /// runs); prerm stops them at remove only (an upgrade restarts instead); postrm forgets the
    /// enablement at purge and then removes the state and the user. The config is a conffile.
    @Test func theMaintainerScriptsEnableStartStopAndPurgeInDebhelpersShape() throws {
        let built = try package()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let control = try Control(built.deb, into: e2e.path("control"))
        #expect(control.conffiles == ["/etc/mentormate/mentormated.conf"], "conffiles: \(control.conffiles)")

        let postinst = try #require(control.scripts["postinst"], "no postinst")
        let prerm = try #require(control.scripts["prerm"], "no prerm")
        let postrm = try #require(control.scripts["postrm"], "no postrm")
        for (name, script) in control.scripts {
            #expect(script.hasPrefix("#!/bin/sh\n") && script.contains("\nset -e\n"), "\(name) must be a /bin/sh script with set -e")
            let syntax = try EndToEndTests.run(e2e, ["/bin/sh", "-n", e2e.path("control/" + name)])
            #expect(syntax.status.exitCode == 0, "sh -n \(name): \(syntax.output)")
        }

        /// The offset of `needle` in `text`, or nil.
        func at(_ needle: String, in text: String) -> String.Index? { text.range(of: needle)?.lowerBound }
        let sysusers = at("systemd-sysusers ${DPKG_ROOT:+--root=\"$DPKG_ROOT\"} mentormate.conf", in: postinst)
        let tmpfiles = at("systemd-tmpfiles ${DPKG_ROOT:+--root=\"$DPKG_ROOT\"} --create mentormate.conf", in: postinst)
        let enableService = at("deb-systemd-helper enable 'mentormated.service'", in: postinst)
        let enableSocket = at("deb-systemd-helper enable 'mentormated.socket'", in: postinst)
        let start = at("deb-systemd-invoke $_dh_action 'mentormated.service' 'mentormated.socket'", in: postinst)
        #expect(sysusers != nil && tmpfiles != nil && enableService != nil && enableSocket != nil && start != nil,
                "postinst lacks a debhelper snippet:\n\(postinst)")
        if let sysusers, let tmpfiles, let enableService, let enableSocket, let start {
            #expect(sysusers < tmpfiles && tmpfiles < enableService && tmpfiles < enableSocket && enableService < start && enableSocket < start,
                    "postinst must make the user, then its directories, then enable, then start:\n\(postinst)")
        }
        // Start on install ($2 empty), restart on upgrade ($2 = the old version), both only when
        // systemd runs; enabling is by deb-systemd-helper, which works without it.
        #expect(postinst.contains("if [ -n \"$2\" ]; then\n\t\t\t_dh_action=restart\n\t\telse\n\t\t\t_dh_action=start"), "\(postinst)")
        #expect(postinst.contains("if [ -d /run/systemd/system ]; then\n\t\tsystemctl --system daemon-reload"), "\(postinst)")
        #expect(postinst.contains("deb-systemd-helper --quiet was-enabled 'mentormated.service'"), "an admin's disable survives upgrades")
        // The user units are shipped, never enabled or started for everyone.
        // (`--no-enable`: each `--user enable` only re-creates links of a unit a user enabled before.)
        let userEnables = postinst.components(separatedBy: "deb-systemd-helper --user enable ").count - 1
        let userGuards = postinst.components(separatedBy: "deb-systemd-helper --user debian-installed ").count - 1
        #expect(userEnables == userGuards, "a user unit is enabled for everyone (\(userEnables) enables, \(userGuards) guards):\n\(postinst)")
        #expect(!postinst.contains("deb-systemd-invoke --user"), "\(postinst)")

        #expect(prerm.contains("[ \"$1\" = remove ] && [ -d /run/systemd/system ]")
                && prerm.contains("deb-systemd-invoke stop 'mentormated.service' 'mentormated.socket'"), "prerm stops at remove:\n\(prerm)")

        let forget = at("deb-systemd-helper purge 'mentormated.service' 'mentormated.socket'", in: postrm)
        let removeState = at("rm -rf \"${DPKG_ROOT:-}/var/lib/mentormate\"", in: postrm)
        let removeUser = at("for step in userdel groupdel; do", in: postrm)
        #expect(postrm.contains("said=$($step ${DPKG_ROOT:+--root \"$DPKG_ROOT\"} mentormate 2>&1) || status=$?"), "\(postrm)")
        #expect(forget != nil && removeState != nil && removeUser != nil, "postrm:\n\(postrm)")
        if let forget, let removeState { #expect(forget < removeState, "the units are forgotten before the state goes") }
        // The state and the user go only at purge: no `fi` closes the purge branch before them.
        if let removeState, let removeUser {
            let branch = try #require(postrm[..<removeState].range(of: "if [ \"$1\" = \"purge\" ]; then", options: .backwards),
                                      "rm -rf of the state must be inside a purge branch:\n\(postrm)")
            #expect(!postrm[branch.upperBound..<removeUser].contains("\nfi\n"), "the state and the user go only at purge:\n\(postrm)")
        }
    }

    // MARK: Install, upgrade, remove, purge

    /// An empty root for dpkg: its database, an /etc, and Debian's policy-rc.d that forbids
    /// starting services — deb-systemd-invoke asks it (under DPKG_ROOT) before it would start or
    /// restart a unit, so nothing is started on this machine even where systemd runs here.
    static func makeRoot(_ root: String) throws {
        let fm = FileManager.default
        for dir in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc", "run", "usr/sbin"] {
            try fm.createDirectory(atPath: root + "/" + dir, withIntermediateDirectories: true)
        }
        for file in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
            guard fm.createFile(atPath: root + "/" + file, contents: Data()) else { throw E2EError("cannot create \(root)/\(file)") }
        }
        guard fm.createFile(atPath: root + "/usr/sbin/policy-rc.d", contents: Data("#!/bin/sh\nexit 101\n".utf8),
                            attributes: [.posixPermissions: 0o755]) else { throw E2EError("cannot create \(root)/usr/sbin/policy-rc.d") }
    }

    /// dpkg on the throwaway root: scripts run here with DPKG_ROOT=root; the libraries the package
    /// depends on are this machine's, not the root's, hence --force-depends.
    static func dpkg(_ e2e: E2E, root: String, _ arguments: [String]) throws -> String {
        let dpkg = try EndToEndTests.program("dpkg", package: "dpkg")
        let result = try EndToEndTests.run(e2e, [dpkg, "--root=\(root)", "--force-script-chrootless", "--force-depends",
                                                 "--log=\(root)/dpkg.log"] + arguments)
        guard result.status.exitCode == 0 else {
            throw E2EError("dpkg \(arguments.joined(separator: " ")) in \(root) failed (\(result.status)):\n\(result.output)")
        }
        return result.output
    }

    /// The package with another version in its control file, rebuilt uncompressed.
    static func repack(_ e2e: E2E, _ deb: String, version: String) throws -> String {
        let dpkgDeb = try EndToEndTests.program("dpkg-deb", package: "dpkg")
        let tree = e2e.path("repack-" + version)
        _ = try capture([dpkgDeb, "--raw-extract", deb, tree])
        let controlFile = tree + "/DEBIAN/control"
        let control = try String(contentsOfFile: controlFile, encoding: .utf8)
        let lines = control.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("Version: ") ? "Version: \(version)" : String($0) }
        try lines.joined(separator: "\n").write(toFile: controlFile, atomically: true, encoding: .utf8)
        let out = e2e.path("mentormate_\(version).deb")
        _ = try capture([dpkgDeb, "--root-owner-group", "-Znone", "--build", tree, out])
        return out
    }

    /// `name`'s line in the root's /etc/passwd or /etc/group, if any.
    static func entry(_ name: String, in file: String) -> [Substring]? {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix(name + ":") }.map { $0.split(separator: ":", omittingEmptySubsequences: false) }
    }

    /// Installed into a throwaway root: every file with its mode and owner, the system user and its
    /// state directory, the units enabled (deb-systemd-helper's links); upgraded to a higher
    /// version keeping an edited config, the state, the user's ID and the enablement; removed: the
    /// programs and units go, the config, the state and the user stay; purged: all of it goes.
    @Test func installUpgradeRemoveAndPurgeInAThrowawayRoot() throws {
        let built = try package()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let root = e2e.path("root")
        try Self.makeRoot(root)

        _ = try Self.dpkg(e2e, root: root, ["--install", built.deb])

        // The files, as dpkg recorded them, with their modes and owners.
        let listed = try Self.capture([try EndToEndTests.program("dpkg-query", package: "dpkg"), "--admindir=\(root)/var/lib/dpkg",
                                       "--listfiles", "mentormate"])
        let files = Set(listed.split(separator: "\n").map(String.init).filter { path in
            var st = stat()
            return lstat(root + path, &st) == 0 && st.st_mode & S_IFMT != S_IFDIR
        })
        let expected: Set<String> = [
            "/usr/bin/mentormated", "/usr/bin/mentormate", "/usr/bin/mentormate-ca",
            "/lib/systemd/system/mentormated.service", "/lib/systemd/system/mentormated.socket",
            "/lib/systemd/system/mentormate-ca.service",
            "/usr/lib/systemd/user/mentormated.service", "/usr/lib/systemd/user/mentormated.socket",
            "/usr/lib/systemd/user/mentormate-notify.service",
            "/usr/lib/sysusers.d/mentormate.conf", "/usr/lib/tmpfiles.d/mentormate.conf",
            "/etc/mentormate/mentormated.conf",
            "/usr/share/man/man1/mentormate.1.gz", "/usr/share/man/man8/mentormated.8.gz",
            "/usr/share/man/man8/mentormate-ca.8.gz",
            "/usr/share/bash-completion/completions/mentormate", "/usr/share/bash-completion/completions/mentormated",
            "/usr/share/bash-completion/completions/mentormate-ca",
            "/usr/share/doc/mentormate/copyright", "/usr/share/doc/mentormate/changelog.gz",
            "/usr/share/doc/mentormate/OPERATIONS.md.gz", "/usr/share/doc/mentormate/API.md.gz",
            "/usr/share/doc/mentormate/mentormated.conf.example",
        ]
        #expect(files == expected, "missing: \(expected.subtracting(files).sorted()); unexpected: \(files.subtracting(expected).sorted())")
        for file in files {
            let want: mode_t = file.hasPrefix("/usr/bin/") ? 0o755 : 0o644
            let got = Self.attributes(root + file)
            #expect(got?.mode == want && got?.uid == 0 && got?.gid == 0,
                    "\(file): \(got.map { "mode \(String($0.mode, radix: 8)) owner \($0.uid):\($0.gid)" } ?? "missing"); expected \(String(want, radix: 8)) root:root")
        }
        let unit = e2e.read(root + "/lib/systemd/system/mentormated.service")
        #expect(unit.contains("\nExecStart=/usr/bin/mentormated --config /etc/mentormate/mentormated.conf\n"), "\(unit)")
        #expect(e2e.read(root + "/usr/lib/systemd/user/mentormate-notify.service").contains("\nExecStart=/usr/bin/mentormate notify\n"))
        #expect(e2e.read(root + "/etc/mentormate/mentormated.conf") == e2e.read(EndToEndTests.packageRoot + "/config/mentormated.conf"),
                "the config is the commented default")

        // postinst: the user (systemd-sysusers), its state directory (systemd-tmpfiles), the units
        // enabled (systemd is not running here, so nothing was started).
        let user = try #require(Self.entry("mentormate", in: root + "/etc/passwd"), "no mentormate user in the root's /etc/passwd")
        let uid = try #require(UInt32(user[2])), gid = try #require(UInt32(user[3]))
        #expect(uid > 0 && uid < 1000 && user[5] == "/var/lib/mentormate" && user[6] == "/usr/sbin/nologin", "\(user)")
        #expect(Self.entry("mentormate", in: root + "/etc/group") != nil, "no mentormate group")
        let state = Self.attributes(root + "/var/lib/mentormate")
        #expect(state?.mode == 0o700 && state?.uid == uid && state?.gid == gid, "/var/lib/mentormate: \(String(describing: state))")
        #expect(Self.attributes(root + "/run/mentormate")?.mode == 0o755)
        let links = [
            "/etc/systemd/system/multi-user.target.wants/mentormated.service": "/lib/systemd/system/mentormated.service",
            "/etc/systemd/system/sockets.target.wants/mentormated.socket": "/lib/systemd/system/mentormated.socket",
        ]
        for (link, target) in links {
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: root + link)) == target, "\(link) → \(target) (enabled)")
        }
        #expect(Self.attributes(root + "/etc/systemd/system/multi-user.target.wants/mentormate-ca.service") == nil,
                "mentormate-ca.service is shipped, not enabled (a campus runs one CA, set up by hand)")
        #expect(e2e.read(root + "/lib/systemd/system/mentormate-ca.service").contains("\nExecStart=/usr/bin/mentormate-ca serve --dir /var/lib/mentormate-ca\n"))
        for userLink in ["/etc/systemd/user/default.target.wants/mentormated.service",
                         "/etc/systemd/user/default.target.wants/mentormate-notify.service"] {
            #expect(Self.attributes(root + userLink) == nil, "\(userLink): user units are not enabled for everyone")
        }

        // The node's state, and an edited config.
        let nodeKey = root + "/var/lib/mentormate/node.key"
        #expect(FileManager.default.createFile(atPath: nodeKey, contents: Data(repeating: 7, count: 64)))
        chown(nodeKey, uid, gid)
        let edited = e2e.read(root + "/etc/mentormate/mentormated.conf") + "listen = 0.0.0.0:4711\n"
        try edited.write(toFile: root + "/etc/mentormate/mentormated.conf", atomically: true, encoding: .utf8)

        // An upgrade: the package repacked as a higher version (uncompressed, for speed), so
        // dpkg runs the old prerm with `upgrade` and the new postinst with `configure OLD`.
        let upgrade = try Self.repack(e2e, built.deb, version: built.version + "+upgrade1")
        _ = try Self.dpkg(e2e, root: root, ["--install", upgrade])
        let upgraded = try Self.capture([try EndToEndTests.program("dpkg-query", package: "dpkg"), "--admindir=\(root)/var/lib/dpkg",
                                         "--show", "--showformat=${Version} ${Status}", "mentormate"])
        #expect(upgraded == built.version + "+upgrade1 install ok installed", "\(upgraded)")
        #expect(e2e.read(root + "/etc/mentormate/mentormated.conf") == edited, "an upgrade keeps the edited config")
        #expect(FileManager.default.fileExists(atPath: nodeKey), "an upgrade keeps the state")
        #expect(Self.entry("mentormate", in: root + "/etc/passwd")?[2] == user[2], "an upgrade keeps the user's ID")
        for (link, _) in links { #expect(Self.attributes(root + link) != nil, "\(link) survives an upgrade") }

        // Remove: programs and units go; the config, the state and the user stay.
        _ = try Self.dpkg(e2e, root: root, ["--remove", "mentormate"])
        for file in ["/usr/bin/mentormated", "/usr/bin/mentormate", "/lib/systemd/system/mentormated.service",
                     "/lib/systemd/system/mentormated.socket", "/usr/lib/sysusers.d/mentormate.conf"] {
            #expect(!FileManager.default.fileExists(atPath: root + file), "\(file) is left after remove")
        }
        #expect(e2e.read(root + "/etc/mentormate/mentormated.conf") == edited, "remove keeps the config (a conffile)")
        #expect(FileManager.default.fileExists(atPath: nodeKey), "remove keeps the state")
        #expect(Self.entry("mentormate", in: root + "/etc/passwd") != nil, "remove keeps the user")
        // debhelper's remove leaves the enablement (links to unit files that are gone, which
        // systemd ignores), so that a reinstall comes back enabled; purge forgets it.
        for (link, _) in links { #expect(Self.attributes(root + link) != nil, "\(link) is kept until purge") }
        let status = try Self.capture([try EndToEndTests.program("dpkg-query", package: "dpkg"), "--admindir=\(root)/var/lib/dpkg",
                                       "--show", "--showformat=${Status}", "mentormate"])
        #expect(status == "deinstall ok config-files", "\(status)")

        // Purge: the config, the state, the user and group, the enablement go.
        _ = try Self.dpkg(e2e, root: root, ["--purge", "mentormate"])
        for path in ["/etc/mentormate", "/var/lib/mentormate", "/run/mentormate"] + links.keys.sorted() {
            #expect(Self.attributes(root + path) == nil, "\(path) is left after purge")
        }
        #expect(Self.entry("mentormate", in: root + "/etc/passwd") == nil, "purge removes the user")
        #expect(Self.entry("mentormate", in: root + "/etc/group") == nil, "purge removes the group")
        let leftovers = EndToEndTests.files(under: root + "/var/lib/systemd")
        #expect(leftovers.isEmpty, "deb-systemd-helper state left after purge: \(leftovers.sorted())")
        let gone = try EndToEndTests.run(e2e, [try EndToEndTests.program("dpkg-query", package: "dpkg"), "--admindir=\(root)/var/lib/dpkg",
                                               "--show", "mentormate"])
        #expect(gone.status.exitCode != 0, "dpkg still knows mentormate after purge: \(gone.output)")
    }
}
