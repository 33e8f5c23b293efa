import Foundation
import MentorAPI
import MentorArguments

// MARK: Quiz and leaderboard (docs/API.md: quiz.questions, quiz.submit, leaderboard)

extension MentormateCLI {
    public struct QuizCommand: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["quiz"],
                abstract: "Play the quiz of the day: ten minerals and rocks to name from their traits.",
                discussion: """
                    Each question shows a specimen's colors, luster, streak, hardness and cleavage; pick which of
                    four it is. The questions are the same for everyone on the same day (UTC), and one result a
                    day counts. Your answers are published as a signed record; every node computes the score
                    from them, so `mentormate leaderboard` agrees everywhere. Interactive: answer a, b, c or d
                    on each line (- or an empty line skips, q quits without submitting). For scripts:
                    --answers with ten letters. With --json and no --answers it prints the questions.
                    """)
        }
        public var answers: String?
        public static var options: [CommandOption<Self>] {
            [.string("--answers", value: "A,B,…", \.answers,
                     help: "All ten answers at once, in order: a, b, c or d, - to skip (e.g. a,c,-,d,b,b,a,c,d,a).")]
        }
        public init() {}

        /// The answers given with --answers, once `validate()` passed.
        var parsedAnswers: [String]? {
            answers.map { $0.split(separator: ",", omittingEmptySubsequences: false).map { a in
                let t = String(a).cliTrimmed.lowercased()
                return t.isEmpty ? "-" : t
            } }
        }

        public func validate() throws(UsageError) {
            guard let parsed = parsedAnswers, let answers else { return }
            guard parsed.count == 10 else {
                throw UsageError("--answers has \(parsed.count) answer\(parsed.count == 1 ? "" : "s"); give all ten, in order",
                                 hint: "for example --answers a,c,-,d,b,b,a,c,d,a (- skips a question)")
            }
            if let bad = parsed.firstIndex(where: { !["a", "b", "c", "d", "-"].contains($0) }) {
                throw UsageError("--answers '\(ClientFormat.sanitize(answers))': answer \(bad + 1) is '\(ClientFormat.sanitize(parsed[bad]))'",
                                 hint: "each answer is a, b, c or d, or - to skip")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let quiz = try context.call(API.quizQuestions, NoParams())
            let day = quiz[.day]?.stringValue ?? ""
            if let played = quiz[.played], played != .null {
                if answers != nil {
                    throw ClientError("you played the quiz of \(day) already; one result a day counts",
                                      hint: "`mentormate leaderboard` shows today's board; a new quiz starts at midnight UTC")
                }
                if context.json { return context.printJSON(played) }
                return context.print("You played the quiz of \(day) already.\n\n" + ClientFormat.quizOutcome(played))
            }
            if context.json, answers == nil { return context.printJSON(quiz.json) }
            let chosen: [String]
            if let parsedAnswers {
                chosen = parsedAnswers
            } else {
                chosen = try ask(quiz.json, day: day, context)
            }
            let outcome = try context.call(API.quizSubmit, QuizSubmitRequest(day: day, answers: chosen))
            if context.json { return context.printJSON(outcome.json) }
            context.print(ClientFormat.quizOutcome(outcome.json))
        }

        /// Asks each question on a line; returns the ten answers, or throws when the player quits
        /// or the input ends (nothing is submitted then).
        private func ask(_ json: JSON, day: String, _ context: CommandContext) throws(ClientError) -> [String] {
            let questions = Fields<QuizQuestions>(json).objects(.questions, as: QuizQuestionInfo.self)
            context.print("The quiz of \(day) (UTC): \(questions.count) questions. Answer a, b, c or d; - or an empty line skips; q quits without submitting.")
            var chosen: [String] = []
            for q in questions {
                context.print("\n" + ClientFormat.quizQuestion(q))
                while true {
                    guard let line = context.host.readInputLine() else {
                        throw ClientError("the input ended at question \(chosen.count + 1); nothing was submitted",
                                          hint: "run `mentormate quiz` in a terminal, or give --answers a,b,…")
                    }
                    let a = line.cliTrimmed.lowercased()
                    if a == "q" { throw ClientError("quiz left at question \(chosen.count + 1); nothing was submitted", hint: "run `mentormate quiz` again to play") }
                    if a.isEmpty || a == "-" { chosen.append("-"); break }
                    if ["a", "b", "c", "d"].contains(a) { chosen.append(a); break }
                    context.print("'\(ClientFormat.sanitize(a))' is not an answer: type a, b, c or d (- skips, q quits).")
                }
            }
            return chosen
        }
    }

    public struct LeaderboardCommand: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["leaderboard"],
                abstract: "Rank the quiz's players: today's, another day's, or all time.",
                discussion: """
                    Scores are computed by this node from each player's published answers. A day's board ranks by
                    score, then who answered first; --all-time sums every day played (fewer days first on a tie).
                    Equal scores share a rank. People you blocked are left out.
                    """)
        }
        public var day: String?
        public var allTime = false
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.string("--day", value: "YYYY-MM-DD", \.day, help: "The board of that day (UTC; default today)."),
             .flag("--all-time", \.allTime, help: "Every day's scores summed."),
             .integer("--limit", \.limit, range: 1...100, help: "How many rows (default 20).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if day != nil, allTime { throw UsageError("--day and --all-time exclude each other", hint: "give one of them, or neither for today's board") }
            if let day, day.cliTrimmed.isEmpty { throw UsageError("--day is empty", hint: "for example --day 2026-12-04") }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let board = try context.call(API.leaderboard, LeaderboardRequest(day: day?.cliTrimmed, allTime: allTime ? true : nil, limit: limit))
            if context.json { return context.printJSON(board.json) }
            context.print(ClientFormat.leaderboard(board.json))
        }
    }
}

extension ClientFormat {
    /// One question: its number, the traits shown, the four choices.
    static func quizQuestion(_ q: Fields<QuizQuestionInfo>) -> String {
        func list(_ key: QuizQuestionInfo.CodingKeys) -> String { (q[key]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }.joined(separator: ", ") }
        func text(_ key: QuizQuestionInfo.CodingKeys) -> String { sanitize(q[key]?.stringValue ?? "?") }
        let choices = (q[.choices]?.arrayValue ?? []).compactMap(\.stringValue)
        let letters = ["a", "b", "c", "d"]
        return "\(q[.number]?.intValue ?? 0). color \(list(.colors)) · luster \(list(.luster)) · streak \(text(.streak)) · hardness \(text(.hardness)) · cleavage \(text(.cleavage))\n   "
            + zip(letters, choices).map { "\($0)) \(sanitize($1))" }.joined(separator: "   ")
    }

    /// A result: the score, the rank that day, and each answer marked.
    public static func quizOutcome(_ json: JSON) -> String {
        let o = Fields<QuizOutcome>(json)
        let lines = o.objects(.answers, as: QuizOutcome.Answer.self).map { a in
            let n = a[.number]?.intValue ?? 0
            let chosen = sanitize(a[.chosen]?.stringValue ?? "-"), right = sanitize(a[.right]?.stringValue ?? "?")
            let name = sanitize(a[.name]?.stringValue ?? "?")
            return a[.correct]?.boolValue == true ? "  \(n). \(chosen) ✓ \(name)"
                : "  \(n). \(chosen == "-" ? "skipped" : chosen) ✗ — \(right) (\(name))"
        }
        return "Score \(o[.score]?.intValue ?? 0)/\(o[.of]?.intValue ?? 10) on \(sanitize(o[.day]?.stringValue ?? "?")) — rank \(o[.rank]?.intValue ?? 0) of \(o[.players]?.intValue ?? 0) so far\n"
            + lines.joined(separator: "\n")
    }

    /// A board: rank, name, score (and days played, all time), ID; the caller's own row after.
    public static func leaderboard(_ json: JSON) -> String {
        let b = Fields<Leaderboard>(json)
        let allTime = b[.allTime]?.boolValue == true
        let title = allTime ? "All time" : "Quiz of \(sanitize(b[.day]?.stringValue ?? "?"))"
        let entries = b.objects(.entries, as: Leaderboard.Entry.self)
        guard !entries.isEmpty else { return "\(title): nobody has played yet." }
        let rows: [[String]] = entries.map { e in
            var row = ["\(e[.rank]?.intValue ?? 0)", cell(e[.name]?.stringValue ?? "", width: 24), "\(e[.score]?.intValue ?? 0)"]
            if allTime { row.append("\(e[.days]?.intValue ?? 0)") }
            row.append(shortID(e[.id]?.stringValue ?? "?"))
            return row
        }
        let headers = allTime ? ["RANK", "NAME", "SCORE", "DAYS", "ID"] : ["RANK", "NAME", "SCORE", "ID"]
        var out = "\(title) — \(b[.players]?.intValue ?? 0) player\(b[.players]?.intValue == 1 ? "" : "s")\n\n"
            + table(headers, rows, right: allTime ? [0, 2, 3] : [0, 2])
        if let you = b[.you], you != .null {
            let y = Fields<Leaderboard.Entry>(you)
            out += "\n\nYou: rank \(y[.rank]?.intValue ?? 0) with \(y[.score]?.intValue ?? 0)"
        }
        return out
    }
}
