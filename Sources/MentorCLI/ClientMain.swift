import MentorAPI
import MentorArguments
/// The top of `mentormate`: global options, choosing the command, help, and turning failures
/// into one stderr line, a hint and an exit status.

extension MentormateCLI {
    /// Accepted before or after the command (but not after `--`).
    public static let globalOptions: [OptionSpec] = [
        OptionSpec("--socket", valueName: "PATH",
                   help: "The daemon's socket (default: $MENTORMATE_SOCKET, else yours, else the system one)."),
        OptionSpec("--json", help: "Print the daemon's JSON result (pretty, sorted keys) for scripts."),
        OptionSpec("--help", short: "-h", help: "Show help (for the command, when one is given)."),
        OptionSpec("--version", help: "Print the version."),
    ]

    /// Every command, in the order `--help` lists them, under a heading.
    static var sections: [(String, [any ClientCommand.Type])] {
        [("ACCOUNT", [Signup.self, Login.self, Logout.self, Whoami.self, Account.Export.self]),
         ("DEVICES", [Device.List.self, Device.Link.self, Device.Approve.self, Device.Revoke.self]),
         ("PROFILE", [Profile.Show.self, Profile.Set.self, Profile.PhotoAdd.self, Profile.PhotoRemove.self, Profile.PhotoOrder.self]),
         ("FINDING PEOPLE", [Feed.self, Swipe.self, Like.self, Pass.self, Undo.self, Matches.self, Unmatch.self, People.self]),
         ("BLOCKING", [Block.self, Unblock.self, Blocked.self]),
         ("FOLLOWING", [Follow.self, Unfollow.self, Followers.self, Following.self]),
         ("CHAT", [Chat.self]),
         ("MINERALS", [Identify.self, QuizCommand.self, LeaderboardCommand.self]),
         ("GAMES", [Games.self, Game.Show.self]),
         ("POSTS", [Post.Create.self, Post.Show.self, Post.Edit.self, Post.Delete.self, Post.Like.self, Post.Unlike.self, Post.Hide.self,
                    Comment.Add.self, Comment.Delete.self, Comment.Hide.self, Posts.self, Explore.self]),
         ("MEETUPS", [Meetup.Create.self, Meetup.Edit.self, Meetup.Cancel.self, Meetup.Show.self, Meetup.Join.self, Meetup.Leave.self, Meetup.Comment.self,
                      Meetups.self]),
         ("CAMPUS", [Member.Show.self, Member.Request.self, Member.Verify.self, Member.Set.self]),
         ("SETTINGS", [Settings.Show.self, Settings.Set.self, Notify.self]),
         ("NODE", [Peers.self, Status.self, Doctor.self])]
    }

    public static var commands: [any ClientCommand.Type] { sections.flatMap(\.1) }

    /// Words that start a command path; `profile` only groups subcommands.
    static var groups: [String: [any ClientCommand.Type]] {
        Dictionary(grouping: commands.filter { $0.configuration.path.count > 1 }, by: { $0.configuration.path[0] })
    }

    /// What the command line asks for.
    public enum Invocation {
        /// Text for stdout, exit 0 (`--help`, `help`, `--version`).
        case print(String)
        /// No command at all: the overview goes to stderr with the usage status.
        case usageOverview(String)
        case run(any ClientCommand, json: Bool, socket: String?)
    }

    /// Parses argv (without the program name). Nothing here touches the daemon.
    public static func parse(_ argv: [String]) throws(UsageError) -> Invocation {
        let scan = try GlobalOptionScan(ArgumentLexer.lex(argv), options: globalOptions)
        if scan.value("--socket")?.isEmpty == true {
            throw UsageError("--socket needs a path, not the empty string", hint: "for example --socket /run/mentormate/api.sock")
        }
        var rest = scan.remaining[...]

        if case .argument("help")? = rest.first {
            rest.removeFirst()
            let target = try resolve(&rest, forHelp: true)
            if let extra = rest.first {
                throw UsageError("unexpected argument '\(extra)' for `help`", hint: "usage: mentormate help [COMMAND]")
            }
            return .print(help(for: target))
        }
        if scan.has("--help") {
            return .print(help(for: try resolve(&rest, forHelp: true)))
        }
        if scan.has("--version") {
            return .print("mentormate \(MentorMateVersion.string)")
        }
        switch try resolve(&rest, forHelp: false) {
        case .command(let type):
            let command = try type.parse(rest)
            return .run(command, json: scan.has("--json"), socket: scan.value("--socket"))
        case .group, .root:
            return .usageOverview(overview)
        }
    }

    enum Target {
        case root
        case group(String, [any ClientCommand.Type])
        case command(any ClientCommand.Type)
    }

    /// Takes the command's words off the front of the tokens.
    static func resolve(_ rest: inout ArraySlice<ArgumentToken>, forHelp: Bool) throws(UsageError) -> Target {
        guard let first = rest.first else { return .root }
        guard case .argument(let word) = first else {
            guard case .option(let name, _) = first else { return .root }
            throw misplacedOption(name, words: rest.compactMap { if case .argument(let w) = $0 { w } else { nil } })
        }
        let groups = self.groups
        if var members = groups[word] {
            rest.removeFirst()
            // A group may hold a group (`profile photo add`): one word per level.
            var path = [word]
            while true {
                let group = path.joined(separator: " ")
                let level = path.count
                let names = members.map { $0.configuration.path[level] }.cliUniqued()
                // A word that is a command and a group (`comment ID TEXT`, `comment delete CID`):
                // anything but a subcommand's name goes to the command.
                if level == 1, let single = commands.first(where: { $0.configuration.path == [word] }) {
                    let sub: String? = if case .argument(let w)? = rest.first { w } else { nil }
                    if sub.map({ s in !members.contains { $0.configuration.path[1] == s } }) ?? !forHelp { return .command(single) }
                }
                guard case .argument(let sub)? = rest.first else {
                    if forHelp { return .group(group, members) }
                    throw UsageError("`\(group)` needs a subcommand: \(names.joined(separator: " or "))",
                                     hint: "for example `mentormate \(group) \(names[0])`; `mentormate \(group) --help` says more")
                }
                let matching = members.filter { $0.configuration.path[level] == sub }
                guard !matching.isEmpty else {
                    var message = "unknown subcommand `\(ClientFormat.sanitize(sub))` for `\(group)`"
                    if let guess = Suggestion.closest(to: sub, among: names) { message += "; did you mean `\(group) \(guess)`?" }
                    throw UsageError(message, hint: "`\(group)` has: \(names.joined(separator: ", "))")
                }
                rest.removeFirst()
                if let type = matching.first(where: { $0.configuration.path.count == level + 1 }) { return .command(type) }
                path.append(sub)
                members = matching
            }
        }
        guard let type = commands.first(where: { $0.configuration.path == [word] }) else {
            let words = commands.map { $0.configuration.path[0] }.cliUniqued() + ["help"]
            var message = "unknown command `\(ClientFormat.sanitize(word))`"
            if let guess = Suggestion.closest(to: word, among: words) { message += "; did you mean `\(guess)`?" }
            throw UsageError(message, hint: "`mentormate --help` lists the commands")
        }
        rest.removeFirst()
        return .command(type)
    }

    /// An option before the command that is not a global one. `words` are the line's other
    /// arguments, to show the fix for the command the user typed.
    static func misplacedOption(_ name: String, words: [String]) -> UsageError {
        let owners = commands.filter { type in type.optionNames.contains(name) }
        if !owners.isEmpty {
            let list = owners.map { "`\($0.configuration.displayName)`" }.joined(separator: ", ")
            let typed = owners.first { type in
                let path = type.configuration.path
                return words.indices.contains { i in words[i...].starts(with: path) }
            } ?? owners[0]
            let synopsis = typed.optionSynopsis(name) ?? name
            return UsageError("\(name) goes after the command (it is an option of \(list))",
                              hint: "for example: \(typed.configuration.invocation) \(synopsis)")
        }
        var message = "unknown option \(name)"
        if let guess = Suggestion.closest(to: name, among: globalOptions.map(\.name)) { message += "; did you mean \(guess)?" }
        return UsageError(message, hint: "`mentormate --help` lists the commands and the global options")
    }

    static func help(for target: Target) -> String {
        switch target {
        case .root: return overview
        case .group(let word, let members):
            let abstract = ["profile": Profile.abstract, "profile photo": Profile.photoAbstract, "device": Device.abstract,
                            "account": Account.abstract, "settings": Settings.abstract, "game": Game.abstract][word] ?? ""
            let level = word.split(separator: " ").count
            var out = "\(abstract)\n\nUSAGE:"
            for (i, m) in members.enumerated() {
                out += (i == 0 ? " " : "       ") + HelpFormatter.wrap(m.usage, indent: 7 + m.configuration.invocation.count + 1, width: 100) + "\n"
            }
            out += "\nSUBCOMMANDS:\n" + HelpFormatter.rows(members.map {
                ($0.configuration.path.dropFirst(level).joined(separator: " "), $0.configuration.abstract)
            })
            out += "\n`mentormate \(word) SUBCOMMAND --help` lists a subcommand's options."
            return out
        case .command(let type):
            return type.helpText(global: globalOptions)
        }
    }

    /// `mentormate --help`.
    public static var overview: String {
        var out = """
            mentormate \(MentorMateVersion.string): find tutors and students on your campus network.
            It talks to the mentormated daemon on this computer.

            USAGE: mentormate [--socket PATH] [--json] COMMAND [OPTIONS] [ARGUMENTS]

            """
        // The longest command (`profile photo remove`) fits on its line, before its abstract.
        let width = commands.map { $0.configuration.path.joined(separator: " ").count }.max().map { max(14, $0) } ?? 14
        for (heading, types) in sections {
            out += "\n\(heading):\n" + HelpFormatter.rows(types.map { ($0.configuration.path.joined(separator: " "), $0.configuration.abstract) },
                                                           labelWidth: width)
        }
        out += "\nGLOBAL OPTIONS (before or after the command):\n"
            + HelpFormatter.rows(globalOptions.map { ($0.helpLabel, $0.help) }, labelWidth: width)
        out += "\n`mentormate help COMMAND` or `mentormate COMMAND --help` lists a command's options.\n"
        out += "IDs may be shortened to a unique prefix of at least 6 characters after mm1."
        return out
    }

    /// The whole program: parse, run, report. Returns the exit status.
    public static func main(_ argv: [String], host: any ClientHost) -> ClientExitStatus {
        let invocation: Invocation
        do {
            invocation = try parse(argv)
        } catch {
            host.error(ClientError.usage(error).report)
            return .usage
        }
        switch invocation {
        case .print(let text):
            host.output(text)
            return .success
        case .usageOverview(let text):
            host.error(text)
            return .usage
        case .run(let command, let json, let socket):
            let context = CommandContext(host: host, json: json, socketPath: host.socketPath(flag: socket))
            do {
                try command.run(context)
                return .success
            } catch {
                host.error(error.report)
                return error.status
            }
        }
    }
}

extension ParsableCommand {
    static var optionNames: [String] { options.flatMap { [$0.spec.name] + ($0.spec.short.map { [$0] } ?? []) } }
    static func optionSynopsis(_ name: String) -> String? { options.first { $0.spec.matches(name) }?.spec.synopsis }
}

extension Array where Element: Hashable {
    func cliUniqued() -> [Element] {
        var seen: Set<Element> = []
        return filter { seen.insert($0).inserted }
    }
}
