import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

// `mentormate`'s lexer, command parsing, usage errors, photo checks and output, and whole runs
// of commands against a fake daemon (the method calls and params they send).

/// Every suite of this file is nested here, so `--filter CommandLineTests` selects them all.
@Suite enum CommandLineTests {}

// MARK: Fakes

/// A daemon that answers from a script and records every call.
final class CLIFakeDaemon: APITransport {
    var calls: [(method: String, params: [String: JSON])] = []
    var answer: (String, [String: JSON]) throws -> JSON
    var notifications: [RPCNotification] = []

    init(answer: @escaping (String, [String: JSON]) throws -> JSON = { _, _ in .object([:]) }) {
        self.answer = answer
    }

    func call(_ method: String, _ params: [String: JSON]) throws -> JSON {
        calls.append((method, params))
        return try answer(method, params)
    }

    func nextNotification() throws -> RPCNotification? {
        notifications.isEmpty ? nil : notifications.removeFirst()
    }

    var methods: [String] { calls.map(\.method) }
}

/// A terminal, file system and socket that tests control.
final class CLIFakeHost: ClientHost {
    var out: [String] = []
    var err: [String] = []
    let transport: CLIFakeDaemon
    var connectError: (any Error)?
    var connects = 0
    var connectedTo: String?
    var files: [String: Result<[UInt8], FileReadFailure>] = [:]
    var secretsFromTerminal = true
    var secrets: [String?] = []
    var prompts: [String] = []
    var interruptArmed = false
    var timeZone = TimeZone(identifier: "UTC")!

    init(_ transport: CLIFakeDaemon = CLIFakeDaemon()) { self.transport = transport }

    func output(_ text: String) { out.append(text) }
    func error(_ text: String) { err.append(text) }
    func socketPath(flag: String?) -> String { flag ?? "/run/test/api.sock" }

    func connect(to socketPath: String) throws -> any APITransport {
        connects += 1
        connectedTo = socketPath
        if let connectError { throw connectError }
        return transport
    }

    func readFile(_ path: String, limit: Int) throws(FileReadFailure) -> [UInt8] {
        guard let result = files[path] else { throw .missing }
        switch result {
        case .success(let bytes):
            if bytes.count > limit { throw .tooLarge(size: bytes.count) }
            return bytes
        case .failure(let f): throw f
        }
    }

    func readSecret(prompt: String) throws(ClientError) -> String? {
        prompts.append(prompt)
        return secrets.isEmpty ? nil : secrets.removeFirst()
    }

    func interruptEndsCleanly() { interruptArmed = true }

    /// `swipe`: a full-screen terminal when set, else the line prompt reading `inputLines`.
    var terminal: (any InteractiveTerminal)?
    var inputLines: [String] = []
    func openTerminal() -> (any InteractiveTerminal)? { terminal }
    func readInputLine() -> String? { inputLines.isEmpty ? nil : inputLines.removeFirst() }

    /// `notify`: the environment, the programs on PATH (name → path), each argv run and the
    /// exit status the runs give.
    var environmentValues: [String: String] = [:]
    var programs: [String: String] = [:]
    var ran: [[String]] = []
    var programStatus: Int32 = 0
    func environment(_ name: String) -> String? { environmentValues[name] }
    func findProgram(_ name: String) -> String? { programs[name] }
    func runProgram(_ argv: [String]) throws(ClientError) -> Int32 { ran.append(argv); return programStatus }

    /// `member request|verify`: the CA a test stands up, and the addresses asked for.
    var fakeCA: (any CampusCA)?
    var campusCAAddresses: [String] = []
    func campusCA(at address: String) throws(ClientError) -> any CampusCA {
        campusCAAddresses.append(address)
        guard let fakeCA else { throw ClientError("no campus CA in this test") }
        return fakeCA
    }

    var stdout: String { out.joined(separator: "\n") }
    var stderr: String { err.joined(separator: "\n") }

    /// `--save-photos` and `--open` (PhotoCommandTests): files written, directories made.
    var written: [String: [UInt8]] = [:]
    var directories: [String] = []
    func writeNewFile(_ path: String, _ bytes: [UInt8]) throws(ClientError) {
        guard written[path] == nil, files[path] == nil else { throw ClientError("cannot create \(path): File exists") }
        written[path] = bytes
    }
    func fileExists(_ path: String) -> Bool { written[path] != nil || files[path] != nil }
    func makeDirectory(_ path: String) throws(ClientError) { directories.append(path) }
    func writeTemporaryFile(_ name: String, _ bytes: [UInt8]) throws(ClientError) -> String {
        let path = "/tmp/mentormate-photo-TEST/" + name
        written[path] = bytes
        return path
    }
}

/// Runs `mentormate argv` against `host`.
@discardableResult
func runCLI(_ argv: [String], _ host: CLIFakeHost) -> ClientExitStatus {
    MentormateCLI.main(argv, host: host)
}

/// The usage error `argv` gives (nil if it parses).
func cliUsageError(_ argv: [String]) -> UsageError? {
    do {
        _ = try MentormateCLI.parse(argv)
        return nil
    } catch {
        return error
    }
}

/// The command `argv` parses to, as type `C`.
func cliParsed<C: ClientCommand>(_ argv: [String], as type: C.Type) throws -> (C, json: Bool, socket: String?) {
    guard case .run(let command, let json, let socket) = try MentormateCLI.parse(argv) else {
        throw UsageError("not a command run")
    }
    guard let c = command as? C else { throw UsageError("parsed to \(Swift.type(of: command)), not \(C.self)") }
    return (c, json, socket)
}

let cliAna = "mm1qy352euf40x77qfrg4ncn27daufrg4ncn27daufrg4ncn27dauqxqkc3xy"
let cliBen = "mm1zg69v7yszg69v7yszg69v7yszg69v7yszg69v7yszg69v7ysqfwzcxjxyz"

let cliAnaInfo: JSON = ["id": .string(cliAna), "name": "Ana", "email": "ana@uni.edu", "role": "student",
                     "protected": false, "unlocked": true]

// MARK: Lexer

extension CommandLineTests {
    @Suite struct ArgumentLexerTests {
        @Test func longOptionsWithSpaceOrEqualsAndShortOptions() {
            #expect(ArgumentLexer.lex(["--name", "Ana", "--bio=hi there", "-h", "--courses="]) == [
                .option(name: "--name", value: nil), .argument("Ana"),
                .option(name: "--bio", value: "hi there"), .option(name: "-h", value: nil),
                .option(name: "--courses", value: ""),
            ])
        }

        @Test func onlyTheFirstEqualsSplitsTheValue() {
            #expect(ArgumentLexer.lex(["--bio=a=b"]) == [.option(name: "--bio", value: "a=b")])
        }

        @Test func doubleDashEndsOptions() {
            #expect(ArgumentLexer.lex(["chat", "--", "--json", "-h", "--"]) == [
                .argument("chat"), .argument("--json"), .argument("-h"), .argument("--"),
            ])
        }

        @Test func dashAndNegativeNumbersAreArguments() {
            #expect(ArgumentLexer.lex(["-", "-5", "-0.5", "-x"]) == [
                .argument("-"), .argument("-5"), .argument("-0.5"), .option(name: "-x", value: nil),
            ])
        }
    }
}

// MARK: The machinery on its own (as the daemon uses it: one command, no subcommands)

struct CLIDaemonLikeCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(program: "mentormated", path: [], abstract: "The MentorMate daemon.")
    }
    var stateDir: String?
    var peers: [String] = []
    var noMDNS = false
    static var options: [CommandOption<Self>] {
        [.string("--state-dir", value: "DIR", \.stateDir, help: "Where keys and the replica live."),
         .appending("--peer", value: "HOST:PORT", \.peers, help: "A peer to connect to (repeatable)."),
         .flag("--no-mdns", \.noMDNS, help: "Do not use mDNS.")]
    }
}

extension CommandLineTests {
    @Suite struct ParsableCommandTests {
        @Test func repeatableOptionsCollectEveryValue() throws {
            let c = try CLIDaemonLikeCommand.parse(ArgumentLexer.lex(["--peer", "a:1", "--no-mdns", "--peer=b:2", "--state-dir", "/s"]))
            #expect(c.peers == ["a:1", "b:2"])
            #expect(c.noMDNS)
            #expect(c.stateDir == "/s")
        }

        @Test func errorsNameTheProgramWhenThereIsNoSubcommand() {
            #expect(throws: UsageError("unknown option --peers for `mentormated`; did you mean --peer?",
                                       hint: "`mentormated --help` lists its options")) {
                try CLIDaemonLikeCommand.parse(ArgumentLexer.lex(["--peers", "x"]))
            }
            #expect(throws: UsageError("unexpected argument 'x' for `mentormated`, which takes no arguments",
                                       hint: "usage: mentormated [--state-dir DIR] [--peer HOST:PORT] [--no-mdns]")) {
                try CLIDaemonLikeCommand.parse(ArgumentLexer.lex(["x"]))
            }
        }

        @Test func helpListsOptionsNextToTheirHelp() {
            #expect(CLIDaemonLikeCommand.helpText() == """
                The MentorMate daemon.

                USAGE: mentormated [--state-dir DIR] [--peer HOST:PORT] [--no-mdns]

                OPTIONS:
                  --state-dir DIR   Where keys and the replica live.
                  --peer HOST:PORT  A peer to connect to (repeatable).
                  --no-mdns         Do not use mDNS.

                """)
        }
    }
}

// MARK: Parsing each command

extension CommandLineTests {
    @Suite struct CommandParsingTests {
        @Test func signupTakesEmailNameRoleAndPassphraseFlag() throws {
            let (c, _, _) = try cliParsed(["signup", "--email", "ana@uni.edu", "--name=Ana Lima", "--role", "Tutor", "--passphrase"],
                                       as: MentormateCLI.Signup.self)
            #expect(c.email == "ana@uni.edu")
            #expect(c.name == "Ana Lima")
            #expect(c.role == "tutor")
            #expect(c.passphrase)
            let (plain, _, _) = try cliParsed(["signup", "--role", "student", "--name", "B", "--email", "b@u.edu"], as: MentormateCLI.Signup.self)
            #expect(!plain.passphrase)
        }

        @Test func accountCommandsTakeNothing() throws {
            _ = try cliParsed(["login"], as: MentormateCLI.Login.self)
            _ = try cliParsed(["logout"], as: MentormateCLI.Logout.self)
            _ = try cliParsed(["whoami"], as: MentormateCLI.Whoami.self)
            _ = try cliParsed(["matches"], as: MentormateCLI.Matches.self)
            _ = try cliParsed(["peers"], as: MentormateCLI.Peers.self)
            _ = try cliParsed(["status"], as: MentormateCLI.Status.self)
            _ = try cliParsed(["doctor"], as: MentormateCLI.Doctor.self)
        }

        @Test func profileShowTakesAnOptionalID() throws {
            #expect(try cliParsed(["profile", "show"], as: MentormateCLI.Profile.Show.self).0.id == nil)
            #expect(try cliParsed(["profile", "show", "mm1zg69v7y"], as: MentormateCLI.Profile.Show.self).0.id == "mm1zg69v7y")
            #expect(try cliParsed(["profile", "show", "zg69v7ys"], as: MentormateCLI.Profile.Show.self).0.id == "zg69v7ys")
        }

        @Test func profileSetFillsEveryField() throws {
            let (c, _, _) = try cliParsed(["profile", "set", "--name", "Ben", "--bio", "PhD student", "--courses", "cs 490, math 221,",
                                        "--wage", "25", "--budget=0", "--availability", "Mon-Wed", "--photo", "me.jpg"],
                                       as: MentormateCLI.Profile.Set.self)
            #expect(c.name == "Ben")
            #expect(c.bio == "PhD student")
            #expect(c.courses == ["cs 490", "math 221"])
            #expect(c.wage == 25)
            #expect(c.budget == 0)
            #expect(c.availability == "Mon-Wed")
            #expect(c.photo == "me.jpg")
            #expect(c.params == ["name": "Ben", "bio": "PhD student", "courses": ["cs 490", "math 221"], "wage": 25,
                                 "budget": 0, "availability": "Mon-Wed"])
        }

        @Test func emptyCoursesClearTheList() throws {
            let (c, _, _) = try cliParsed(["profile", "set", "--courses", ""], as: MentormateCLI.Profile.Set.self)
            #expect(c.params == ["courses": []])
        }

        @Test func feedTakesCourseAndLimit() throws {
            let (c, _, _) = try cliParsed(["feed", "--course", "CS 490", "--limit", "5"], as: MentormateCLI.Feed.self)
            #expect(c.course == "CS 490")
            #expect(c.limit == 5)
            let (d, _, _) = try cliParsed(["feed"], as: MentormateCLI.Feed.self)
            #expect(d.course == nil && d.limit == nil)
        }

        @Test func likePassUndoUnmatchTakeAnID() throws {
            #expect(try cliParsed(["like", cliBen], as: MentormateCLI.Like.self).0.id == cliBen)
            #expect(try cliParsed(["pass", "mm1zg69v7"], as: MentormateCLI.Pass.self).0.id == "mm1zg69v7")
            #expect(try cliParsed(["undo", "zg69v7"], as: MentormateCLI.Undo.self).0.id == "zg69v7")
            #expect(try cliParsed(["unmatch", cliBen], as: MentormateCLI.Unmatch.self).0.id == cliBen)
        }

        @Test func chatSendsShowsOrFollows() throws {
            let send = try cliParsed(["chat", "mm1zg69v7y", "see you at noon"], as: MentormateCLI.Chat.self).0
            #expect(send.id == "mm1zg69v7y" && send.message == "see you at noon" && !send.follow)
            let show = try cliParsed(["chat", "mm1zg69v7y"], as: MentormateCLI.Chat.self).0
            #expect(show.message == nil && !show.follow)
            let follow = try cliParsed(["chat", "mm1zg69v7y", "--follow"], as: MentormateCLI.Chat.self).0
            #expect(follow.follow && follow.message == nil)
            let dashed = try cliParsed(["chat", "mm1zg69v7y", "--", "-_- --json"], as: MentormateCLI.Chat.self)
            #expect(dashed.0.message == "-_- --json")
            #expect(!dashed.json)
        }

        @Test func globalOptionsGoBeforeOrAfterTheCommand() throws {
            let before = try cliParsed(["--json", "--socket", "/tmp/a.sock", "feed", "--limit", "3"], as: MentormateCLI.Feed.self)
            #expect(before.json && before.socket == "/tmp/a.sock" && before.0.limit == 3)
            let after = try cliParsed(["feed", "--limit", "3", "--socket=/tmp/b.sock", "--json"], as: MentormateCLI.Feed.self)
            #expect(after.json && after.socket == "/tmp/b.sock" && after.0.limit == 3)
            let between = try cliParsed(["profile", "--json", "set", "--name", "A"], as: MentormateCLI.Profile.Set.self)
            #expect(between.json && between.0.name == "A")
            let none = try cliParsed(["whoami"], as: MentormateCLI.Whoami.self)
            #expect(!none.json && none.socket == nil)
        }

        @Test func helpAndVersion() throws {
            guard case .print(let top) = try MentormateCLI.parse(["--help"]) else { Issue.record("no help"); return }
            #expect(top.contains("USAGE: mentormate [--socket PATH] [--json] COMMAND"))
            for type in MentormateCLI.commands {
                #expect(top.contains(type.configuration.abstract))
            }
            guard case .print(let set) = try MentormateCLI.parse(["profile", "set", "-h"]) else { Issue.record("no help"); return }
            #expect(set.contains("--courses C1,C2 ") && set.contains("  Your courses, comma-separated"))
            #expect(set.contains("--available SLOTS") && set.contains("--prefer-max-wage N|none"))
            #expect(set.contains("GLOBAL OPTIONS:"))
            guard case .print(let viaHelp) = try MentormateCLI.parse(["help", "profile", "set"]) else { Issue.record("no help"); return }
            #expect(viaHelp == set)
            guard case .print(let group) = try MentormateCLI.parse(["profile", "--help"]) else { Issue.record("no help"); return }
            #expect(group.contains("mentormate profile show [--save-photos DIR] [--open] [ID]") && group.contains("SUBCOMMANDS:"))
            guard case .print(let version) = try MentormateCLI.parse(["--version"]) else { Issue.record("no version"); return }
            #expect(version == "mentormate \(MentorMateVersion.string)")
            // --help wins over mistakes in the rest of the line.
            guard case .print = try MentormateCLI.parse(["like", "--help", "--bogus"]) else { Issue.record("no help"); return }
        }

        @Test func everyCommandsHelpListsEachOptionWithItsHelp() {
            for type in MentormateCLI.commands {
                let help = type.helpText(global: MentormateCLI.globalOptions)
                #expect(help.hasPrefix(type.configuration.abstract))
                #expect(help.contains("USAGE: mentormate \(type.configuration.path.joined(separator: " "))"))
                #expect(help.contains("--socket PATH"))
            }
            let signup = MentormateCLI.Signup.helpText()
            for line in ["--email ADDR", "--name NAME", "--role student|tutor", "--passphrase"] {
                #expect(signup.contains(line))
            }
            #expect(MentormateCLI.Signup.usage == "mentormate signup --email ADDR [--name NAME] [--role student|tutor] [--passphrase] [--import FILE] [--label NAME] [--birthdate YYYY-MM-DD]")
            #expect(MentormateCLI.Chat.usage == "mentormate chat [--follow] ID [MESSAGE]")
            #expect(MentormateCLI.Feed.usage == "mentormate feed [--course C] [--limit N] [--available DAY[-TIME]] [--max-wage N] [--min-budget N] [--nearby] [--gender G] [--min-age YEARS] [--max-age YEARS] [--min-score N] [--no-defaults]")
        }

        @Test func noCommandShowsTheOverviewAsAUsageError() {
            let host = CLIFakeHost()
            #expect(runCLI([], host) == .usage)
            #expect(host.stderr.contains("USAGE: mentormate"))
            #expect(host.out.isEmpty)
            #expect(runCLI(["--json"], host) == .usage)
        }
    }
}

// MARK: Usage errors

extension CommandLineTests {
    @Suite struct UsageErrorTests {
        func expectError(_ argv: [String], _ message: String, hint: String? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) {
            let e = cliUsageError(argv)
            #expect(e?.message == message, sourceLocation: sourceLocation)
            if let hint { #expect(e?.hint == hint, sourceLocation: sourceLocation) }
        }

        @Test func unknownCommandSuggestsTheNearestOne() {
            expectError(["stauts"], "unknown command `stauts`; did you mean `status`?", hint: "`mentormate --help` lists the commands")
            expectError(["profiel", "show"], "unknown command `profiel`; did you mean `profile`?")
            expectError(["xyzzy"], "unknown command `xyzzy`")
            expectError(["help", "fede"], "unknown command `fede`; did you mean `feed`?")
        }

        @Test func unknownOptionSuggestsTheNearestOne() {
            expectError(["profile", "set", "--nmae", "Ana"], "unknown option --nmae for `profile set`; did you mean --name?",
                        hint: "`mentormate profile set --help` lists its options")
            expectError(["feed", "--cours", "x"], "unknown option --cours for `feed`; did you mean --course?")
            expectError(["profile", "set", "--cour", "x"], "unknown option --cour for `profile set`; did you mean --courses?")
            expectError(["whoami", "--verbose"], "unknown option --verbose for `whoami`")
            expectError(["chat", "mm1zg69v7y", "--folow"], "unknown option --folow for `chat`; did you mean --follow?")
        }

        @Test func subcommandsAreCheckedToo() {
            expectError(["profile"], "`profile` needs a subcommand: show or set or photo")
            expectError(["profile", "shwo"], "unknown subcommand `shwo` for `profile`; did you mean `profile show`?",
                        hint: "`profile` has: show, set, photo")
        }

        @Test func optionsOfACommandBeforeItAreNamedAsMisplaced() {
            expectError(["--name", "A", "profile", "set"], "--name goes after the command (it is an option of `signup`, `profile set`)",
                        hint: "for example: mentormate profile set --name N")
            expectError(["--jsn", "whoami"], "unknown option --jsn; did you mean --json?")
        }

        @Test func missingValues() {
            expectError(["profile", "set", "--name"], "--name needs a value (--name N)",
                        hint: "for a value that starts with -, write --name=VALUE")
            expectError(["profile", "set", "--bio", "--wage", "3"], "--bio needs a value (--bio TEXT)")
            expectError(["whoami", "--socket"], "--socket needs a value (--socket PATH)")
            expectError(["whoami", "--socket="], "--socket needs a path, not the empty string")
        }

        @Test func numbersAreChecked() {
            expectError(["profile", "set", "--wage", "abc"], "--wage needs a whole number, not 'abc'", hint: "for example --wage 25")
            expectError(["profile", "set", "--wage", "25.5"], "--wage needs a whole number, not '25.5'")
            expectError(["profile", "set", "--budget", "-5"], "--budget must be 0 or more, not -5")
            expectError(["profile", "set", "--wage", "99999999999999999999"], "--wage is too large: 99999999999999999999")
            expectError(["feed", "--limit", "500"], "--limit must be between 1 and 100, not 500")
            expectError(["feed", "--limit", "0"], "--limit must be between 1 and 100, not 0")
            expectError(["feed", "--limit="], "--limit needs a whole number, not ''")
        }

        @Test func extraAndMissingArguments() {
            expectError(["whoami", "me"], "unexpected argument 'me' for `whoami`, which takes no arguments",
                        hint: "usage: mentormate whoami")
            expectError(["like", cliBen, "twice"], "unexpected argument 'twice' for `like`, which takes one argument, ID")
            expectError(["chat", cliBen, "see", "you"], "unexpected argument 'you' for `chat`, which takes ID and MESSAGE",
                        hint: "quote a message with spaces: mentormate chat ID \"see you at noon\"")
            expectError(["like"], "`like` needs ID", hint: "usage: mentormate like ID")
            expectError(["chat", "--follow"], "`chat` needs ID")
            expectError(["help", "like", "extra"], "unexpected argument 'extra' for `help`")
        }

        @Test func idsAreCheckedForLength() {
            expectError(["like", "mm1abc"], "'mm1abc' is too short for an ID: give at least 6 characters after mm1")
            expectError(["profile", "show", "zg69"], "'zg69' is too short for an ID: give at least 6 characters after mm1")
            expectError(["pass", cliBen + "q"], "'\(cliBen)q' is longer than an ID (61 characters)")
        }

        @Test func signupNeedsItsFieldsAndARole() {
            expectError(["signup", "--name", "A", "--role", "tutor"], "`signup` needs --email ADDR")
            expectError(["signup", "--email", "a@u.edu", "--name", "A"], "missing --role")
            expectError(["signup", "--email", "a@u.edu", "--role", "tutor"], "missing --name")
            expectError(["signup", "--email", "a@u.edu", "--import", "f", "--name", "A"],
                        "--name and --role do not go with --import: the account has its card already")
            expectError(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor", "--label", "x"], "--label goes with --import")
            expectError(["device", "link", "--expires", "8"], "--expires '8' is not a duration of 1 minute to 365 days")
            expectError(["device", "link", "--expires", "30s"], "--expires '30s' is not a duration of 1 minute to 365 days")
            expectError(["device", "revoke"], "`device revoke` needs ID")
            expectError(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutr"],
                        "--role must be student or tutor, not 'tutr'; did you mean tutor?")
            expectError(["signup", "--email", "ana", "--name", "A", "--role", "tutor"], "--email needs an e-mail address, not 'ana'")
            expectError(["signup", "--email", "a@u.edu", "--name", " ", "--role", "tutor"], "--name is empty")
        }

        @Test func flagsTakeNoValueAndOptionsAreGivenOnce() {
            expectError(["chat", cliBen, "--follow=yes"], "--follow takes no value", hint: "write just --follow")
            expectError(["whoami", "--json=1"], "--json takes no value")
            expectError(["profile", "set", "--name", "a", "--name", "b"], "--name is given twice for `profile set`")
            expectError(["--socket", "a", "whoami", "--socket", "b"], "--socket is given twice")
        }

        @Test func crossOptionRulesAreCheckedInValidate() {
            expectError(["profile", "set"], "`profile set` needs at least one field to change")
            expectError(["profile", "set", "--photo", "a.jpg", "--no-photo"], "--photo and --no-photo contradict each other")
            expectError(["chat", cliBen, "hi", "--follow"],
                        "--follow streams the conversation and sends nothing; a MESSAGE cannot go with it")
            expectError(["chat", cliBen, "  "], "the message is empty")
            expectError(["chat", cliBen, String(repeating: "é", count: 2001)], "the message is 4002 bytes; a message may be at most 4000")
            expectError(["feed", "--course", ""], "--course is empty")
        }

        @Test func usageErrorsExitWith2AndNeverContactTheDaemon() {
            let host = CLIFakeHost()
            #expect(runCLI(["profile", "set", "--nmae", "Ana"], host) == .usage)
            #expect(host.connects == 0)
            #expect(host.stderr == "mentormate: unknown option --nmae for `profile set`; did you mean --name?\n"
                    + "hint: `mentormate profile set --help` lists its options")
            #expect(host.out.isEmpty)
        }

        @Test func suggestionDistanceCountsASwapAsOneEdit() {
            #expect(Suggestion.distance(Array("nmae"), Array("name")) == 1)
            #expect(Suggestion.distance(Array("kitten"), Array("sitting")) == 3)
            #expect(Suggestion.distance([], Array("abc")) == 3)
            #expect(Suggestion.closest(to: "--zzz", among: ["--name", "--bio"]) == nil)
        }
    }
}

// MARK: Photos

extension CommandLineTests {
    @Suite struct PhotoTests {
        static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 100)
        static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 1, count: 10)
        static let webp: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8)

        @Test func typeIsSniffedFromContent() {
            #expect(PhotoUpload.sniffType(Self.jpeg) == "image/jpeg")
            #expect(PhotoUpload.sniffType(Self.png) == "image/png")
            #expect(PhotoUpload.sniffType(Self.webp) == "image/webp")
            #expect(PhotoUpload.sniffType(Array("GIF89a".utf8) + [0, 0]) == nil)
            #expect(PhotoUpload.sniffType(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8)) == nil)
            #expect(PhotoUpload.sniffType(Array("RIFF".utf8)) == nil)
            #expect(PhotoUpload.sniffType([0xFF, 0xD8]) == nil)
        }

        @Test func emptyOversizedAndWrongTypeAreRefusedWithTheFileNamed() {
            #expect(throws: ClientError("me.jpg is empty", hint: "give a JPEG, PNG or WebP image of at most 4 MiB")) {
                try PhotoUpload.check([], path: "me.jpg")
            }
            let big = Self.jpeg + [UInt8](repeating: 0, count: PhotoUpload.maxBytes)
            #expect { try PhotoUpload.check(big, path: "big.jpg") } throws: { e in
                (e as? ClientError)?.message == "big.jpg is 4.0 MiB; a photo may be at most 4 MiB"
            }
            #expect { try PhotoUpload.check(Array("GIF89a".utf8), path: "cat.jpg") } throws: { e in
                (e as? ClientError)?.message == "cat.jpg is not a JPEG, PNG or WebP image (its content says so, whatever its name)"
            }
            // Exactly 4 MiB is allowed.
            #expect((try? PhotoUpload.check(Self.jpeg + [UInt8](repeating: 0, count: PhotoUpload.maxBytes - Self.jpeg.count),
                                            path: "ok.jpg")) == "image/jpeg")
        }

        @Test func chunksAreAtMost512KiBAndReassembleTheFile() {
            let k = PhotoUpload.chunkBytes
            #expect(PhotoUpload.chunks([]).isEmpty)
            #expect(PhotoUpload.chunks([1]).count == 1)
            #expect(PhotoUpload.chunks([UInt8](repeating: 3, count: k)).count == 1)
            let bytes = (0..<(2 * k + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let chunks = PhotoUpload.chunks(bytes)
            #expect(chunks.count == 3)
            let decoded = chunks.map { [UInt8](Data(base64Encoded: $0)!) }
            #expect(decoded.map(\.count) == [k, k, 17])
            #expect(decoded.flatMap { $0 } == bytes)
        }

        @Test func fileProblemsAreReportedBeforeTheDaemonIsContacted() {
            let cases: [(FileReadFailure?, String)] = [
                (nil, "mentormate: no file nope.jpg\nhint: check the path to the photo"),
                (.isDirectory, "mentormate: nope.jpg is a directory, not a photo\nhint: give the path of an image file inside it"),
                (.permissionDenied, "mentormate: cannot read nope.jpg: permission denied\nhint: check the file's permissions (ls -l nope.jpg)"),
                (.tooLarge(size: 5 << 20), "mentormate: nope.jpg is 5.0 MiB; a photo may be at most 4 MiB\n"
                    + "hint: shrink it, for example: convert nope.jpg -resize 1024x1024 photo.jpg"),
            ]
            for (failure, report) in cases {
                let host = CLIFakeHost()
                if let failure { host.files["nope.jpg"] = .failure(failure) }
                #expect(runCLI(["profile", "set", "--photo", "nope.jpg", "--name", "A"], host) == .failure)
                #expect(host.stderr == report)
                #expect(host.connects == 0)
            }
        }

        @Test func aLargePhotoIsUploadedInChunksThenSetWithTheOtherFields() throws {
            let bytes = Self.png + [UInt8](repeating: 9, count: PhotoUpload.chunkBytes * 2)
            let transport = CLIFakeDaemon { method, params in
                switch method {
                case "blob.put" where params["done"] == true: return ["hash": "ab12", "size": .int(Int64(bytes.count)), "type": "image/png"]
                case "blob.put": return ["upload": "tok-1"]
                default: return ["id": .string(cliAna), "name": "Ana", "role": "student", "courses": []]
                }
            }
            let host = CLIFakeHost(transport)
            host.files["me.png"] = .success(bytes)
            #expect(runCLI(["profile", "set", "--photo", "me.png", "--name", "Ana"], host) == .success)
            #expect(transport.methods == ["blob.put", "blob.put", "blob.put", "profile.set"])
            let puts = transport.calls.prefix(3).map(\.params)
            #expect(puts[0]["upload"] == nil && puts[0]["done"] == false)
            #expect(puts[1]["upload"] == "tok-1" && puts[1]["done"] == false)
            #expect(puts[2]["upload"] == "tok-1" && puts[2]["done"] == true)
            let sent = puts.flatMap { [UInt8](Data(base64Encoded: $0["chunk"]!.stringValue!)!) }
            #expect(sent == bytes)
            #expect(transport.calls[3].params == ["photo": "ab12", "name": "Ana"])
        }

        @Test func aSmallPhotoIsOneFinalPut() {
            let transport = CLIFakeDaemon { method, _ in
                method == "blob.put" ? ["hash": "cd34", "size": 104, "type": "image/jpeg"] : ["id": .string(cliAna)]
            }
            let host = CLIFakeHost(transport)
            host.files["me.jpg"] = .success(Self.jpeg)
            #expect(runCLI(["profile", "set", "--photo=me.jpg"], host) == .success)
            #expect(transport.methods == ["blob.put", "profile.set"])
            #expect(transport.calls[0].params == ["chunk": .string(Data(Self.jpeg).base64EncodedString()), "done": true])
            #expect(transport.calls[1].params == ["photo": "cd34"])
        }
    }
}

// MARK: Runs against a fake daemon

extension CommandLineTests {
    @Suite struct CommandRunTests {
        @Test func profileSetSendsCoursesAsAListAndWageAsAnInteger() {
            let transport = CLIFakeDaemon { _, _ in ["id": .string(cliAna), "name": "Ana", "role": "tutor", "courses": ["CS 490", "MATH 221"], "wage": 25] }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["profile", "set", "--courses", "cs 490, math 221", "--wage", "25"], host) == .success)
            #expect(transport.methods == ["profile.set"])
            #expect(transport.calls[0].params == ["courses": ["cs 490", "math 221"], "wage": 25])
            #expect(host.stdout.contains("\n  courses  CS 490, MATH 221\n"))
        }

        @Test func noPhotoSendsNull() {
            let transport = CLIFakeDaemon()
            #expect(runCLI(["profile", "set", "--no-photo"], CLIFakeHost(transport)) == .success)
            #expect(transport.calls[0].params == ["photo": .null])
        }

        @Test func eachCommandCallsItsMethod() {
            let cases: [([String], String, [String: JSON])] = [
                (["whoami"], "account.whoami", [:]),
                (["logout"], "account.logout", [:]),
                (["profile", "show"], "profile.show", [:]),
                (["profile", "show", "zg69v7ys"], "profile.show", ["id": "zg69v7ys"]),
                (["feed", "--course", "CS 490", "--limit", "5"], "feed", ["course": "CS 490", "limit": 5]),
                (["feed"], "feed", [:]),
                (["like", cliBen], "like", ["id": .string(cliBen)]),
                (["pass", "mm1zg69v7"], "pass", ["id": "mm1zg69v7"]),
                (["undo", "mm1zg69v7"], "undo", ["id": "mm1zg69v7"]),
                (["matches"], "matches", [:]),
                (["unmatch", cliBen], "unmatch", ["id": .string(cliBen)]),
                (["chat", "mm1zg69v7", "see you at noon"], "chat.send", ["id": "mm1zg69v7", "text": "see you at noon"]),
                (["peers"], "peers", [:]),
                (["status"], "status", [:]),
                (["doctor"], "doctor", [:]),
                (["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], "account.signup",
                 ["email": "ana@uni.edu", "name": "Ana", "role": "student"]),
            ]
            for (argv, method, params) in cases {
                let transport = CLIFakeDaemon()
                let host = CLIFakeHost(transport)
                #expect(runCLI(argv, host) == .success, "\(argv): \(host.stderr)")
                // signup asks `status` first for the estimate of its proof of work.
                let expected = method == "account.signup" ? ["status", method] : [method]
                #expect(transport.methods == expected, "\(argv)")
                #expect(transport.calls.last?.params == params, "\(argv)")
            }
        }

        @Test func theSocketOptionPicksTheSocket() {
            let host = CLIFakeHost()
            runCLI(["whoami", "--socket", "/tmp/other.sock"], host)
            #expect(host.connectedTo == "/tmp/other.sock")
            runCLI(["--socket=/tmp/x.sock", "status"], host)
            #expect(host.connectedTo == "/tmp/x.sock")
        }

        @Test func jsonPrintsTheResultPrettyWithSortedKeys() {
            let transport = CLIFakeDaemon { _, _ in cliAnaInfo }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["whoami", "--json"], host) == .success)
            #expect(host.stdout == """
                {
                  "email" : "ana@uni.edu",
                  "id" : "\(cliAna)",
                  "name" : "Ana",
                  "protected" : false,
                  "role" : "student",
                  "unlocked" : true
                }
                """)
        }

        @Test func signupWithPassphraseAsksTwiceAtATerminal() {
            let transport = CLIFakeDaemon { method, _ in
                if method == "account.whoami" { throw RPCError(.noAccount, "you have no account on this node") }
                return cliAnaInfo
            }
            let host = CLIFakeHost(transport)
            host.secrets = ["s3cret words", "s3cret words"]
            #expect(runCLI(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student", "--passphrase"], host) == .success)
            #expect(host.prompts == ["Passphrase: ", "Passphrase again: "])
            #expect(transport.methods == ["account.whoami", "status", "account.signup"])
            #expect(transport.calls[2].params == ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "s3cret words"])
        }

        @Test func differentPassphrasesSignUpNothing() {
            let transport = CLIFakeDaemon { method, _ in
                if method == "account.whoami" { throw RPCError(.noAccount, "no account") }
                return cliAnaInfo
            }
            let host = CLIFakeHost(transport)
            host.secrets = ["one", "two"]
            #expect(runCLI(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor", "--passphrase"], host) == .failure)
            #expect(transport.methods == ["account.whoami"])
            #expect(host.stderr == "mentormate: the two passphrases differ; nothing was changed\n"
                    + "hint: run the command again and type the same passphrase twice")
        }

        @Test func aPipedPassphraseIsReadOnce() {
            let transport = CLIFakeDaemon { method, _ in
                if method == "account.whoami" { throw RPCError(.noAccount, "no account") }
                return cliAnaInfo
            }
            let host = CLIFakeHost(transport)
            host.secretsFromTerminal = false
            host.secrets = ["from a pipe"]
            #expect(runCLI(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor", "--passphrase"], host) == .success)
            #expect(host.prompts == [""])
            #expect(transport.calls.last?.params["passphrase"] == "from a pipe")
        }

        /// At a real network's difficulty the client says that signup takes seconds, and why,
        /// with the daemon's estimate; at a cheap one (or when `status` fails) it says nothing.
        @Test func signupAnnouncesTheProofOfWorkWhenItTakesSeconds() {
            for (millis, line) in [(2300, "Making this account's proof of work (about 3 s on this computer)…"), (3, "")] {
                let transport = CLIFakeDaemon { method, _ in
                    method == "status" ? ["signupWorkMillis": .int(Int64(millis))] : cliAnaInfo
                }
                let host = CLIFakeHost(transport)
                #expect(runCLI(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor"], host) == .success)
                #expect(host.stderr == line, "\(millis) ms")
                #expect(host.stdout.hasPrefix("Signed up."))
            }
            let failing = CLIFakeDaemon { method, _ in
                if method == "status" { throw RPCError(.internalError, "status is broken") }
                return cliAnaInfo
            }
            let host = CLIFakeHost(failing)
            #expect(runCLI(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor"], host) == .success)
            #expect(failing.methods == ["status", "account.signup"])
        }

        @Test func signupWithPassphraseStopsEarlyWhenTheAccountExists() {
            let transport = CLIFakeDaemon { _, _ in cliAnaInfo }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["signup", "--email", "a@u.edu", "--name", "A", "--role", "tutor", "--passphrase"], host) == .failure)
            #expect(host.prompts.isEmpty)
            #expect(transport.methods == ["account.whoami"])
            #expect(host.stderr.hasPrefix("mentormate: you already have an account on this node: \(cliAna)"))
        }

        @Test func loginAsksForAPassphraseOnlyForALockedProtectedAccount() {
            func login(protected: Bool, unlocked: Bool, secrets: [String?] = []) -> (CLIFakeDaemon, CLIFakeHost, ClientExitStatus) {
                let transport = CLIFakeDaemon { method, _ in
                    var info = cliAnaInfo.objectValue!
                    info["protected"] = .bool(protected)
                    info["unlocked"] = .bool(unlocked || method == "account.login")
                    return .object(info)
                }
                let host = CLIFakeHost(transport)
                host.secrets = secrets
                return (transport, host, runCLI(["login"], host))
            }
            let locked = login(protected: true, unlocked: false, secrets: ["pw"])
            #expect(locked.2 == .success)
            #expect(locked.0.methods == ["account.whoami", "account.login"])
            #expect(locked.0.calls[1].params == ["passphrase": "pw"])
            #expect(locked.1.prompts == ["Passphrase: "])

            let plain = login(protected: false, unlocked: false)
            #expect(plain.0.methods == ["account.whoami", "account.login"])
            #expect(plain.0.calls[1].params == [:])
            #expect(plain.1.prompts.isEmpty)

            let already = login(protected: true, unlocked: true)
            #expect(already.0.methods == ["account.whoami"])
            #expect(already.1.prompts.isEmpty)
            #expect(already.1.stdout.hasPrefix("Already logged in."))
        }

        @Test func chatWithoutMessageShowsTheConversationWithTheirName() {
            let transport = CLIFakeDaemon { method, params in
                switch method {
                case "profile.show": return ["id": .string(cliBen), "name": "Ben", "role": "tutor", "courses": []]
                case "chat.history":
                    return ["matched": true, "unmatchedBy": .null, "messages": [
                        ["id": "m1", "from": .string(cliBen), "text": "Hi!", "sentAt": 1764400000000, "mine": false],
                        ["id": "m2", "from": .string(cliAna), "text": "See you\nat noon", "sentAt": 1764400060000, "mine": true],
                    ]]
                default: return .null
                }
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["chat", "zg69v7ys"], host) == .success)
            #expect(transport.methods == ["profile.show", "chat.history"])
            #expect(transport.calls[0].params == ["id": "zg69v7ys"])
            #expect(transport.calls[1].params == ["id": .string(cliBen)])
            #expect(host.stdout == """
                Conversation with Ben (mm1zg69v7ysz)
                2025-11-29 07:06  Ben  Hi!
                2025-11-29 07:07  you  See you
                                       at noon
                """)
        }

        @Test func chatFollowSubscribesStreamsOnceEachAndEndsAtTheUnmatch() {
            let carl = "mm1carlcarlcarlcarlcarlcarlcarlcarlcarlcarlcarlcarlcarlcarl"
            let m1: JSON = ["id": "m1", "from": .string(cliBen), "text": "Hi!", "sentAt": 1764400000000, "mine": false]
            let m2: JSON = ["id": "m2", "from": .string(cliBen), "text": "Still there?", "sentAt": 1764400120000, "mine": false]
            let transport = CLIFakeDaemon { method, _ in
                switch method {
                case "profile.show": return ["id": .string(cliBen), "name": "Ben", "role": "tutor", "courses": []]
                case "subscribe": return ["events": ["message", "unmatch"]]
                case "chat.history": return ["matched": true, "unmatchedBy": .null, "messages": [m1]]
                default: return .null
                }
            }
            transport.notifications = [
                RPCNotification(method: "event.message", params: ["with": .string(cliBen), "message": m1]),  // already in the history
                RPCNotification(method: "event.message", params: ["with": .string(carl), "message": ["id": "x", "text": "not this one"]]),
                RPCNotification(method: "event.message", params: ["with": .string(cliBen), "message": m2]),
                RPCNotification(method: "event.unmatch", params: ["id": .string(cliBen), "by": .string(cliBen)]),
                RPCNotification(method: "event.message", params: ["with": .string(cliBen), "message": ["id": "m3", "text": "after"]]),
            ]
            let host = CLIFakeHost(transport)
            #expect(runCLI(["chat", "zg69v7ys", "--follow"], host) == .success)
            #expect(transport.methods == ["profile.show", "subscribe", "chat.history"])
            #expect(transport.calls[1].params == ["events": ["message", "unmatch"]])
            #expect(host.interruptArmed)
            #expect(host.out == [
                "Conversation with Ben (mm1zg69v7ysz)\n2025-11-29 07:06  Ben  Hi!",
                "2025-11-29 07:08  Ben  Still there?",
                "Ben ended the match; the conversation is closed.",
            ])
            #expect(transport.notifications.count == 1)
        }

        @Test func chatFollowReportsAClosedConnection() {
            let transport = CLIFakeDaemon { method, _ in
                method == "chat.history" ? ["matched": true, "unmatchedBy": .null, "messages": []] : ["id": .string(cliBen), "name": "Ben"]
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["chat", cliBen, "--follow"], host) == .unreachable)
            #expect(host.err.last?.hasPrefix("mentormate: lost the connection to mentormated at /run/test/api.sock") == true)
        }

        @Test func doctorExitsWith1WhenACheckFails() {
            let transport = CLIFakeDaemon { _, _ in
                ["checks": [["name": "avahi", "ok": true, "detail": "avahi-daemon answers"],
                            ["name": "multicast", "ok": false, "detail": "no route to 224.0.0.251", "fix": "ip route add 224.0.0.0/4 dev eth0"]]]
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["doctor"], host) == .failure)
            #expect(host.stdout == """
                ok    avahi      avahi-daemon answers
                FAIL  multicast  no route to 224.0.0.251
                                 fix: ip route add 224.0.0.0/4 dev eth0
                """)
            #expect(host.stderr.hasPrefix("mentormate: 1 of 2 checks failed"))
        }
    }
}

// MARK: Errors from the daemon and the socket

extension CommandLineTests {
    @Suite struct ClientErrorTests {
        func failing(_ error: any Error, _ argv: [String] = ["feed"]) -> (ClientExitStatus, String) {
            let host = CLIFakeHost(CLIFakeDaemon { _, _ in throw error })
            let status = runCLI(argv, host)
            return (status, host.stderr)
        }

        @Test func noAccountSaysHowToSignUp() {
            let (status, err) = failing(RPCError(.noAccount, "you have no account on this node"))
            #expect(status == .failure)
            #expect(err == "mentormate: you have no account on this node\n"
                    + "hint: create your account first: mentormate signup --email ADDR --name NAME --role student|tutor"
                    + "; an account belongs to the Unix user who signed up (you are \(ClientError.currentUser)), so run mentormate as that user to use theirs")
            #expect(ClientError.currentUser.hasSuffix("(uid \(getuid()))"))
        }

        @Test func lockedSaysToLogIn() {
            let (status, err) = failing(RPCClientError.server(RPCError(.locked, "your account is locked")), ["like", cliBen])
            #expect(status == .failure)
            #expect(err == "mentormate: your account is locked\nhint: run `mentormate login` to unlock your account")
        }

        @Test func ambiguousListsTheMatches() {
            let e = RPCError(.ambiguous, "'mm1zg69v7' matches 2 accounts", data: ["matches": [.string(cliBen), .string(cliAna)]])
            let (status, err) = failing(e, ["like", "mm1zg69v7"])
            #expect(status == .failure)
            #expect(err == "mentormate: 'mm1zg69v7' matches 2 accounts\nhint: give more characters of one of these IDs:\n  \(cliBen)\n  \(cliAna)")
        }

        @Test func chatWithoutAMatchPointsToMatches() {
            let (_, err) = failing(RPCError(.notAllowed, "you are not matched with Ben"), ["chat", cliBen, "hi"])
            #expect(err.hasSuffix("hint: you can chat once you both liked each other; `mentormate matches` lists your matches"))
        }

        @Test func aMissingDaemonExitsWith3AndNamesTheSocket() {
            let host = CLIFakeHost()
            host.connectError = RPCClientError.connection(RPCConnectionError(.socketMissing, "no socket", errno: 2))
            #expect(runCLI(["whoami", "--socket", "/tmp/mm.sock"], host) == .unreachable)
            #expect(host.stderr == "mentormate: mentormated is not running: there is no socket at /tmp/mm.sock\n"
                    + "hint: start your own daemon: `mentormated` (in a clone of MentorMate: `bash scripts/run`); "
                    + "to use the system service instead: --socket /run/mentormate/api.sock (or MENTORMATE_SOCKET)")
        }

        @Test func noDaemonOnTheSystemSocketSaysHowToStartTheService() {
            let e = ClientError.connection(RPCConnectionError(.socketMissing, "no socket", errno: 2), socket: SocketPath.systemPath)
            #expect(e.report == "mentormate: mentormated is not running: there is no socket at /run/mentormate/api.sock\n"
                    + "hint: start the system daemon: `sudo systemctl start mentormated` (in a clone of MentorMate: `sudo bash scripts/run`); "
                    + "a daemon of your own would be reached with --socket PATH or MENTORMATE_SOCKET")
        }

        @Test func connectionFailuresAreWordedByKind() {
            let socket = "/s.sock"
            #expect(ClientError.connection(RPCConnectionError(.permissionDenied, ""), socket: socket).message
                    == "permission denied on mentormated's socket /s.sock")
            #expect(ClientError.connection(RPCConnectionError(.staleSocket, ""), socket: socket).message
                    == "no mentormated is listening at /s.sock (the socket file was left by a daemon that stopped)")
            #expect(ClientError.connection(RPCConnectionError(.closed, ""), socket: socket).message
                    == "lost the connection to mentormated at /s.sock: the daemon closed it")
            for code in [RPCConnectionError.Code.permissionDenied, .staleSocket, .timedOut, .closed, .io, .badResponse, .connectFailed] {
                #expect(ClientError.connection(RPCConnectionError(code, "x"), socket: socket).status == .unreachable)
            }
        }

        @Test func aConnectionLostMidCallExitsWith3() {
            let (status, err) = failing(RPCClientError.connection(RPCConnectionError(.closed, "closed")))
            #expect(status == .unreachable)
            #expect(err.hasPrefix("mentormate: lost the connection to mentormated at /run/test/api.sock"))
        }
    }
}

// MARK: Output

extension CommandLineTests {
    @Suite struct ClientFormatTests {
        let utc = TimeZone(identifier: "UTC")!

        @Test func tablesAlignColumnsWithoutTrailingSpaces() {
            #expect(ClientFormat.table(["ID", "NAME", "N"], [["a", "Ben", "5"], ["bbb", "Al", "12"]], right: [2]) == """
                ID   NAME   N
                a    Ben    5
                bbb  Al    12
                """)
        }

        @Test func textFromTheNetworkCannotDriveTheTerminal() {
            #expect(ClientFormat.sanitize("Ben\u{1B}[2J\u{7}") == "Ben?[2J?")
            #expect(ClientFormat.sanitize("a\u{202E}b") == "a?b")
            #expect(ClientFormat.sanitize("line1\nline2", keepNewlines: true) == "line1\nline2")
            #expect(ClientFormat.cell("line1\nline2") == "line1 line2")
            #expect(ClientFormat.cell(String(repeating: "x", count: 50), width: 10) == "xxxxxxxxx…")
        }

        @Test func timesSizesAndDurations() {
            #expect(ClientFormat.time(1764400000000, in: utc) == "2025-11-29 07:06")
            #expect(ClientFormat.size(812) == "812 B")
            #expect(ClientFormat.size(48213) == "47.1 KiB")
            #expect(ClientFormat.size(4 << 20) == "4.0 MiB")
            #expect(ClientFormat.duration(42) == "42s")
            #expect(ClientFormat.duration(303) == "5m 3s")
            #expect(ClientFormat.duration(7980) == "2h 13m")
            #expect(ClientFormat.duration(273600) == "3d 4h")
        }

        @Test func aCardShowsTheFullIDAndItsConflicts() {
            let card: JSON = ["id": .string(cliBen), "name": "Ben", "role": "tutor", "bio": "PhD student", "courses": ["CS 490"],
                              "wage": 25, "budget": .null, "availability": "Mon-Wed afternoons",
                              "photo": ["hash": "5f1e", "size": 48213, "type": "image/jpeg"],
                              "conflicts": ["bio": ["an older concurrent bio"]], "forked": false, "updatedAt": 1764400000000]
            #expect(ClientFormat.card(card, in: utc) == """
                Ben (tutor)
                  id            \(cliBen)
                  bio           PhD student
                  courses       CS 490
                  wage          25
                  availability  Mon-Wed afternoons
                  photo         5f1e (47.1 KiB, image/jpeg)
                  updated       2025-11-29 07:06
                  conflicts     bio: an older concurrent bio

                Conflicts are concurrent edits that lost the tie-break; they stay until the next change of the field.
                """)
        }

        @Test func theFeedShowsShortIDsAndMarksSharedCourses() {
            let feed: JSON = ["cards": [
                ["id": .string(cliBen), "name": "Ben", "role": "tutor", "courses": ["MATH 221", "CS 490"], "wage": 25,
                 "sharedCourses": ["CS 490"], "nearby": true, "score": 72],
                ["id": .string(cliAna), "name": "Ana Lima", "role": "tutor", "courses": [], "wage": .null,
                 "sharedCourses": [], "nearby": false],
            ]]
            let lines = ClientFormat.feed(feed).split(separator: "\n").map(String.init)
            #expect(lines[0] == "ID            NAME      SCORE  ROLE   PAY  COURSES            WHY")
            #expect(lines[1] == "mm1zg69v7ysz  Ben          72  tutor   25  CS 490*, MATH 221  shares CS 490, nearby now")
            #expect(lines[2] == "mm1qy352euf4  Ana Lima      -  tutor    -                     newest first")
        }

        @Test func matchesShowTheLastMessage() {
            let result: JSON = ["matches": [
                ["id": .string(cliBen), "name": "Ben", "messages": 3,
                 "lastMessage": ["id": "m", "from": .string(cliBen), "text": "See you", "sentAt": 1764400000000, "mine": false]],
                ["id": .string(cliAna), "name": "Ana", "messages": 0, "lastMessage": .null],
            ]]
            #expect(ClientFormat.matches(result, in: utc) == """
                ID            NAME  MESSAGES  LAST
                mm1zg69v7ysz  Ben          3  2025-11-29 07:06 them: See you
                mm1qy352euf4  Ana          0
                """)
        }

        @Test func statusIsABlock() {
            let s: JSON = ["node": .string(cliBen), "version": "0.1.0", "listen": ["host": "0.0.0.0", "port": 4711],
                           "socket": "/run/mentormate/api.sock", "stateDir": "/var/lib/mentormate", "records": 120,
                           "authors": 7, "pending": 0, "accounts": 2, "peers": 3, "discovery": "on", "uptime": 7980,
                           "health": "degraded", "problems": ["Avahi is unreachable"]]
            let text = ClientFormat.status(s)
            #expect(text.contains("listen     0.0.0.0:4711"))
            #expect(text.contains("records    120 from 7 authors, 0 pending"))
            #expect(text.contains("uptime     2h 13m"))
            #expect(text.hasSuffix("problems:\n  - Avahi is unreachable"))
        }

        @Test func statusShowsTheNetworkAndWhenItChanged() {
            let s: JSON = ["node": .string(cliBen), "version": "0.1.0", "listen": ["host": "::", "port": 4711],
                           "network": ["interfaces": [["name": "eth0", "addresses": ["169.254.78.3", "fe80::1%eth0"]],
                                                      ["name": "wlan0", "addresses": ["fd00:78::3"]]],
                                       "changedAt": 1_764_400_000_000, "changes": 2]]
            let text = ClientFormat.status(s, in: TimeZone(identifier: "UTC")!, now: 1_764_400_007_000)
            #expect(text.contains("listen           [::]:4711"), "\(text)")
            #expect(text.contains("network          eth0 169.254.78.3 fe80::1%eth0\n                 wlan0 fd00:78::3"), "\(text)")
            #expect(text.contains("network changed  at 2025-11-29 07:06 (7s ago; 2 changes since start)"), "\(text)")
            let offline: JSON = ["node": .string(cliBen), "network": ["interfaces": [], "changedAt": nil, "changes": 0]]
            let quiet = ClientFormat.status(offline)
            #expect(quiet.contains("network    no usable interface (offline)") && !quiet.contains("network changed"), "\(quiet)")
        }
    }
}
