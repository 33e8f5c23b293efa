import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import Testing
@testable import MentorCA

/// `mentormate-ca` as built by the same build as these tests (next to the test binary).
@Suite(.tags(.multiProcess)) struct CAExecutableTests {
    static func program() throws -> String {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("mentormate-ca").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        throw TestFailure("mentormate-ca was not found next to the test binary; run `swift build --build-tests` first")
    }

    struct Run { let status: Int32; let output: String; let error: String }

    static func run(_ arguments: [String]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try program())
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                   error: String(decoding: error, as: UTF8.self))
    }

    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o777 : nil
    }

    @Test func initMakesPrivateFilesKeyPrintsTheKeyAndASecondInitRefuses() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanup() }
        let dir = temp.path + "/ca"
        let made = try Self.run(["init", "--dir", dir, "--domain", "campus.edu", "--smtp", "127.0.0.1:2525", "--validity-days", "30"])
        #expect(made.status == 0, "\(made.error)")
        #expect(Self.mode(dir) == 0o700)
        for name in ["ca.key", "code.secret", "ca.conf"] { #expect(Self.mode(dir + "/" + name) == 0o600, "\(name)") }
        let config = try CADirectory(path: dir).readConfig()
        #expect(config.domain == "campus.edu" && config.smtp == "127.0.0.1:2525" && config.validityDays == 30)

        let key = try Self.run(["key", "--dir", dir])
        #expect(key.status == 0)
        let printed = key.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.hasPrefix("mmca1"))
        let parsed = try #require(MembershipCertificate.parseKey(printed))
        #expect(parsed == (try KeyFile.publicKey(at: dir + "/ca.key")).key)
        #expect(made.output.contains(printed))

        let again = try Self.run(["init", "--dir", dir, "--domain", "campus.edu"])
        #expect(again.status == 1 && again.error.contains("already exists"), "\(again.error)")
        #expect(try Self.run(["key", "--dir", dir]).output == key.output, "the key is unchanged")
    }

    @Test func issuePrintsACertificateThatVerifies() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanup() }
        let dir = temp.path + "/ca"
        #expect(try Self.run(["init", "--dir", dir, "--domain", "campus.edu"]).status == 0)
        let me = account()
        let issued = try Self.run(["issue", "--dir", dir, "--account", me.id, "--domain", "campus.edu"])
        #expect(issued.status == 0, "\(issued.error)")
        let bytes = try #require(Hex.decode(issued.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let certificate = try MembershipCertificate(encoded: bytes)
        #expect(certificate.hasValidSignature && certificate.account == me && certificate.domain == "campus.edu")
        #expect(certificate.ca == (try KeyFile.publicKey(at: dir + "/ca.key")).key)
        #expect(certificate.expires - certificate.issued == 365 * 86_400_000)

        let list = try Self.run(["list", "--dir", dir])
        #expect(list.status == 0 && list.output.contains("pending codes: 0") && list.output.contains("certified addresses: 0"))
    }

    @Test func usageMistakesExit64NamingTheFix() throws {
        let missing = try Self.run(["init", "--domain", "campus.edu"])
        #expect(missing.status == 64 && missing.error.contains("--dir"), "\(missing.error)")
        let typo = try Self.run(["isue"])
        #expect(typo.status == 64 && typo.error.contains("did you mean issue?"), "\(typo.error)")
        let badDomain = try Self.run(["init", "--dir", "/nonexistent/x", "--domain", "Campus"])
        #expect(badDomain.status == 64 && badDomain.error.contains("--domain"), "\(badDomain.error)")
        let badAccount = try Self.run(["issue", "--dir", "/nonexistent", "--account", "mm1zzzz", "--domain", "campus.edu"])
        #expect(badAccount.status == 64, "\(badAccount.error)")
        #expect(try Self.run(["serve", "--help"]).output.contains("--listen"))
        #expect(try Self.run(["--version"]).output == "mentormate-ca \(MentorMateVersion.string)\n")
    }
}

extension CAExecutableTests {
    /// `serve` answers clients, keeps `release` out while it runs, and ends cleanly on SIGTERM.
    @Test func serveAnswersUntilSIGTERMAndHoldsTheDirectory() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanup() }
        let dir = temp.path + "/ca"
        #expect(try Self.run(["init", "--dir", dir, "--domain", "campus.edu"]).status == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.program())
        process.arguments = ["serve", "--dir", dir, "--listen", "127.0.0.1:0"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        var printed = ""
        while !printed.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            printed += String(decoding: data, as: UTF8.self)
        }
        let port = try #require(printed.split(separator: ":").last.flatMap { UInt16($0.trimmingCharacters(in: .whitespacesAndNewlines)) },
                                "serve printed \(printed)")
        let info = try CAClient(host: "127.0.0.1", port: port).info()
        #expect(info.domain == "campus.edu")
        #expect(MembershipCertificate.printKey(info.key) + "\n" == (try Self.run(["key", "--dir", dir])).output)

        let release = try Self.run(["release", "--dir", dir, "ana@campus.edu"])
        #expect(release.status == 1 && release.error.contains("in use"), "\(release.error)")

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("request client=127.0.0.1 op=info result=ok"), "\(log)")
        #expect(log.contains("mentormate-ca stopped"))
        #expect(try Self.run(["release", "--dir", dir, "ana@campus.edu"]).status == 0, "the directory is free once serve ended")
    }
}

extension CAExecutableTests {
    static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// Every subcommand and option `--help` shows is in the completion and the man page.
    @Test func theCompletionAndTheManPageNameEverySubcommandAndOption() throws {
        let completion = try String(contentsOfFile: Self.packageRoot + "/completion/mentormate-ca.bash", encoding: .utf8)
        let manual = try String(contentsOfFile: Self.packageRoot + "/man/man8/mentormate-ca.8", encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        for subcommand in ["init", "key", "serve", "issue", "release", "list"] {
            #expect(completion.contains(subcommand), "completion lacks \(subcommand)")
            #expect(manual.contains(".B \(subcommand)") || manual.contains("B mentormate-ca \(subcommand)"), "the man page lacks \(subcommand)")
            let help = try Self.run([subcommand, "--help"]).output
            let options = Set(help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," || $0 == "[" || $0 == "]" })
                .filter { $0.hasPrefix("--") }.map(String.init))
            #expect(!options.isEmpty)
            for option in options {
                #expect(completion.contains(option), "completion lacks \(subcommand) \(option)")
                #expect(manual.contains(option), "the man page lacks \(subcommand) \(option)")
            }
        }
    }
}
