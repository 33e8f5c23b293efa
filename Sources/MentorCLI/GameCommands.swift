import Foundation
import MentorAPI
import MentorArguments

// MARK: Games and people (docs/API.md: games, game.show, people)

extension MentormateCLI {
    static let gamesSource = "BoardGameGeek's entries, from the figures on the publishers' boxes (checked against BGG's data of 2017 and 2021)"

    public struct Games: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["games"],
                abstract: "List the board games of the catalogue, or those that fit your group and your time.",
                discussion: """
                    The catalogue ships with MentorMate: over a hundred well-known board games, each
                    with the year it was first published, its players, playing time and minimum age
                    (source: \(gamesSource)). Filters combine: --players 4 --time 45 lists
                    the games four can play whose longest playing time is 45 minutes or less.
                    `mentormate game show NAME` shows one.
                    """)
        }
        public var search: String?
        public var players: Int64?
        public var time: Int64?
        public static var options: [CommandOption<Self>] {
            [.string("--search", value: "TEXT", \.search, help: "Games whose name or description holds TEXT (case does not count)."),
             .integer("--players", \.players, range: 1...100, help: "Games N people can play (1-100)."),
             .integer("--time", value: "MIN", \.time, range: 1...1440,
                      help: "Games that fit in MIN minutes: the longest playing time on the box (1-1440).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if let search, search.trimmingCharacters(in: .whitespaces).isEmpty {
                throw UsageError("--search needs a word", hint: "for example --search trains")
            }
        }

        public var request: GamesRequest { GamesRequest(search: search, players: players, time: time) }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.games, request)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.games(result.json))
        }
    }

    public enum Game {
        static let abstract = "One board game of the catalogue (`mentormate games` lists them)."
        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["game", "show"],
                    abstract: "Show a game of the catalogue: its year, players, playing time, minimum age and what it is.",
                    discussion: """
                        NAME is the game's name or the start of it (case, accents and punctuation do
                        not count: "ticket to ride europe", "tigris and euphrates" and "catan" all
                        work). A start that several games share lists them; a name not in the
                        catalogue lists the nearest ones.
                        """,
                    extraArgumentHint: "quote a name of several words: mentormate game show \"ticket to ride\"")
            }
            public var name = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("NAME", \.name, help: "The game's name, or the start of it (quoted if it has spaces).")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if name.trimmingCharacters(in: .whitespaces).isEmpty {
                    throw UsageError("the game's name is empty", hint: "`mentormate games` lists the games")
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let game = try context.call(API.gameShow, GameShowRequest(name: name))
                if context.json { return context.printJSON(game.json) }
                context.print(ClientFormat.game(game.json, in: context.host.timeZone))
            }
        }
    }

    public struct People: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["people"],
                abstract: "List the people whose cards this node holds, newest card first.",
                discussion: """
                    Everyone this node has a card of: ID, name, role, when the card last changed
                    and courses (give the ID, or its start, to `profile show`, `follow` or `like`).
                    Left out: you, the people you block, and the people who paused ("pause me":
                    they asked to be hidden from people looking; matched people still see each
                    other in `matches`).
                    """)
        }
        public var role: String?
        public var search: String?
        public var course: String?
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.choice("--role", ["student", "tutor"], \.role, help: "Only students, or only tutors."),
             .string("--search", value: "TEXT", \.search, help: "People whose name or a course holds TEXT (case does not count)."),
             .string("--course", value: "C", \.course, help: "People whose card lists course C."),
             .integer("--limit", \.limit, range: 1...200, help: "At most N people (1-200; default 50).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if let search, search.trimmingCharacters(in: .whitespaces).isEmpty {
                throw UsageError("--search needs some text", hint: "for example --search ana")
            }
            if let course, course.trimmingCharacters(in: .whitespaces).isEmpty {
                throw UsageError("--course needs a course", hint: "for example --course \"CS 490\"")
            }
        }

        public var request: PeopleRequest { PeopleRequest(role: role, search: search, course: course, limit: limit) }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.people, request)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.people(result.json, in: context.host.timeZone))
        }
    }
}

extension ClientFormat {
    /// "2–5" or "2" (from the two ends of a range).
    static func span(_ low: Int64?, _ high: Int64?) -> String {
        guard let low, let high else { return "?" }
        return low == high ? "\(low)" : "\(low)–\(high)"
    }

    /// `games`: one row per game, then the count.
    public static func games(_ json: JSON) -> String {
        let games = Fields<GamesResult>(json).objects(.games, as: GameInfo.self)
        if games.isEmpty { return "No game of the catalogue matches." }
        let rows: [[String]] = games.map { g in
            [cell(g[.name]?.stringValue ?? "?", width: 36), g[.year]?.intValue.map(String.init) ?? "",
             span(g[.playersMin]?.intValue, g[.playersMax]?.intValue), span(g[.timeMin]?.intValue, g[.timeMax]?.intValue),
             g[.minAge]?.intValue.map { "\($0)+" } ?? ""]
        }
        return table(["NAME", "YEAR", "PLAYERS", "MINUTES", "AGE"], rows, right: [1, 2, 3, 4])
            + "\n\(games.count) game\(games.count == 1 ? "" : "s"). `mentormate game show NAME` for one."
    }

    /// `game show`: the name, then its facts.
    public static func game(_ json: JSON, in zone: TimeZone = TimeZone(identifier: "UTC")!) -> String {
        let g = Fields<GameInfo>(json)
        let name = sanitize(g[.name]?.stringValue ?? "?")
        let meetups = g.objects(.meetups, as: MeetupInfo.self)
        let open = meetups.isEmpty ? "" : "\nOpen meetups:\n" + meetups.map { m in
            "  \(sanitize(m[.id]?.stringValue ?? "?"))  \(m[.start]?.intValue.map { time($0, in: zone) } ?? "")  "
                + "\(sanitize(m[.title]?.stringValue ?? ""))  \(m[.left]?.intValue ?? 0) of \(m[.seats]?.intValue ?? 0) seats left"
        }.joined(separator: "\n")
        return name + "\n" + block([
            ("year", g[.year]?.intValue.map(String.init) ?? "?"),
            ("players", span(g[.playersMin]?.intValue, g[.playersMax]?.intValue)),
            ("time", span(g[.timeMin]?.intValue, g[.timeMax]?.intValue) + " minutes"),
            ("age", g[.minAge]?.intValue.map { "\($0) and over" } ?? "?"),
            ("about", sanitize(g[.description]?.stringValue ?? "")),
            ("source", MentormateCLI.gamesSource),
        ]) + open
    }

    /// `people`: one row per person, newest card first (UPDATED: when the card last changed);
    /// a last line when the limit cut the list.
    public static func people(_ json: JSON, in zone: TimeZone) -> String {
        let fields = Fields<PeopleResult>(json)
        let people = fields.objects(.people, as: PeopleResult.Person.self)
        if people.isEmpty { return "Nobody matches (this node holds the cards of the people it has synced with)." }
        let rows: [[String]] = people.map { p in
            [shortID(p[.id]?.stringValue ?? "?"), cell(p[.name]?.stringValue ?? "", width: 24), sanitize(p[.role]?.stringValue ?? ""),
             p[.updatedAt]?.intValue.map { time($0, in: zone) } ?? "",
             cell((p[.courses]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", "), width: 40)]
        }
        var text = table(["ID", "NAME", "ROLE", "UPDATED", "COURSES"], rows)
        if fields[.more]?.boolValue == true { text += "\nMore people match: narrow the filters, or raise --limit (at most 200)." }
        return text
    }
}
