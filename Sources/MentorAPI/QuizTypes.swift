/// `quiz.questions`, `quiz.submit`, `leaderboard` (docs/API.md "Quiz").

/// One question of the day: the traits shown and the four names to choose from (a–d).
public struct QuizQuestionInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case number, colors, luster, streak, hardness, cleavage, choices }
    /// 1–10.
    public var number: Int64
    public var colors: [String]
    public var luster: [String]
    public var streak: String
    /// "min–max" Mohs.
    public var hardness: String
    public var cleavage: String
    /// Four names: choices[0] is a, … choices[3] is d.
    public var choices: [String]
    public init(number: Int64, colors: [String], luster: [String], streak: String, hardness: String, cleavage: String, choices: [String]) {
        (self.number, self.colors, self.luster, self.streak, self.hardness, self.cleavage, self.choices) =
            (number, colors, luster, streak, hardness, cleavage, choices)
    }
}

/// A player's result of a day, as this node computed it from the answers.
public struct QuizOutcome: APIObject, Equatable {
    public struct Answer: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case number, chosen, right, name, correct }
        public var number: Int64
        /// "a"–"d", or "-" when skipped.
        public var chosen: String
        /// The right letter.
        public var right: String
        /// The right answer's name.
        public var name: String
        public var correct: Bool
        public init(number: Int64, chosen: String, right: String, name: String, correct: Bool) {
            (self.number, self.chosen, self.right, self.name, self.correct) = (number, chosen, right, name, correct)
        }
    }
    public enum CodingKeys: String, CodingKey { case day, score, of, answers, rank, players, at }
    public var day: String
    public var score: Int64
    /// The number of questions (10).
    public var of: Int64
    public var answers: [Answer]
    /// The player's place on the day's leaderboard as this node sees it (1 = best), of `players`.
    public var rank: Int64
    public var players: Int64
    /// When the result was written (ms since the Unix epoch).
    public var at: Int64
    public init(day: String, score: Int64, of: Int64, answers: [Answer], rank: Int64, players: Int64, at: Int64) {
        (self.day, self.score, self.of, self.answers, self.rank, self.players, self.at) = (day, score, of, answers, rank, players, at)
    }
}

/// `quiz.questions`: today's quiz (the UTC day), and the caller's result when it played already.
public struct QuizQuestions: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case day, questions, played }
    public var day: String
    public var questions: [QuizQuestionInfo]
    public var played: QuizOutcome?
    public init(day: String, questions: [QuizQuestionInfo], played: QuizOutcome?) {
        (self.day, self.questions, self.played) = (day, questions, played)
    }
}

/// `quiz.submit`: the day the questions were asked for (the node refuses another day's), and
/// one answer per question: "a"–"d", or "-" to skip.
public struct QuizSubmitRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case day, answers }
    public var day: String
    public var answers: [String]
    public init(day: String, answers: [String]) { (self.day, self.answers) = (day, answers) }
}

/// `leaderboard`: one day's (default today, UTC) or every day's sums.
public struct LeaderboardRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case day, allTime = "all_time", limit }
    public var day: String?
    public var allTime: Bool?
    /// 1–100, default 20.
    public var limit: Int64?
    public init(day: String? = nil, allTime: Bool? = nil, limit: Int64? = nil) { (self.day, self.allTime, self.limit) = (day, allTime, limit) }
}

public struct Leaderboard: APIObject, Equatable {
    public struct Entry: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case rank, id, name, score, days, at }
        /// Equal scores share a rank (1, 2, 2, 4).
        public var rank: Int64
        public var id: String
        public var name: String?
        public var score: Int64
        /// Days played (1 on a day's board).
        public var days: Int64
        /// A day's board: when the result was written (ms); all time: nil.
        public var at: Int64?
        public init(rank: Int64, id: String, name: String?, score: Int64, days: Int64, at: Int64?) {
            (self.rank, self.id, self.name, self.score, self.days, self.at) = (rank, id, name, score, days, at)
        }
    }
    public enum CodingKeys: String, CodingKey { case day, allTime = "all_time", players, entries, you }
    /// The day ranked; nil for all time.
    public var day: String?
    public var allTime: Bool
    /// Everyone ranked (entries holds the first `limit`).
    public var players: Int64
    public var entries: [Entry]
    /// The caller's own row, when the caller has an account and played.
    public var you: Entry?
    public init(day: String?, allTime: Bool, players: Int64, entries: [Entry], you: Entry?) {
        (self.day, self.allTime, self.players, self.entries, self.you) = (day, allTime, players, entries, you)
    }
}
