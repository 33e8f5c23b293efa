import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// MARK: Quiz and leaderboard (record type 13, PROTOCOL.md §15; docs/API.md "Quiz")

extension Node {
    static let letters = ["a", "b", "c", "d"]

    /// The UTC day of this node's clock: the quiz being played now.
    var quizDay: String { Quiz.day(millis: config.now()) }

    /// Today's ten questions, and the caller's result when it played today already. Needs no
    /// account (the questions are the same for everyone); nothing is written.
    func quizQuestions(_ caller: Requester) throws -> QuizQuestions {
        let day = quizDay
        let questions = try dayQuestions(day)
        let played = try account(ifAny: caller).flatMap { try outcome(of: $0, day: day, questions) }
        return QuizQuestions(day: day, questions: questions.enumerated().map { i, q in
            let e = q.entry
            return QuizQuestionInfo(number: Int64(i + 1), colors: e.colours, luster: e.lusters.map(\.rawValue), streak: e.streak,
                                    hardness: Catalogue.formatRange(e.hardness), cleavage: e.cleavage.rawValue, choices: q.choices)
        }, played: played)
    }

    /// Writes the caller's answers to today's quiz (one public record, no score in it) and
    /// returns the score this node computes from them, as every node will. Refused, writing
    /// nothing: another day's questions, answers that are not ten letters, a second result today.
    func quizSubmit(_ request: QuizSubmitRequest, _ caller: Requester) throws -> QuizOutcome {
        let me = try me(caller)
        let day = quizDay
        guard request.day == day else {
            throw RPCError(.invalidValue, Quiz.isDay(request.day)
                ? "the quiz of \(request.day) is not today's (today is \(day), UTC): run `mentormate quiz` again for today's questions"
                : "quiz.submit: day \"\(request.day)\" is not a date written YYYY-MM-DD")
        }
        guard request.answers.count == Quiz.questionCount else {
            throw RPCError(.invalidParams, "quiz.submit: \(request.answers.count) answers; give exactly \(Quiz.questionCount), each a, b, c, d or - (skipped)")
        }
        var answers: [Int?] = []
        for (i, a) in request.answers.enumerated() {
            let letter = a.lowercased()
            if letter == "-" { answers.append(nil); continue }
            guard let n = Self.letters.firstIndex(of: letter) else {
                throw RPCError(.invalidParams, "quiz.submit: answer \(i + 1) is \"\(a)\"; each answer is a, b, c, d or - (skipped)")
            }
            answers.append(n)
        }
        let questions = try dayQuestions(day)
        if try replica.quizStanding(of: me, day: day) != nil {
            throw RPCError(.notAllowed, "you played the quiz of \(day) already; one result a day counts — `mentormate leaderboard` shows it, a new quiz starts at midnight UTC")
        }
        let result = QuizResult(day: day, answers: answers)
        try write(caller.uid) { w, now throws(RecordError) in
            // The day is the record's own: a quiz answered across midnight is refused, not misdated.
            guard Quiz.day(millis: now) == day else {
                throw RecordError(.invalidBody, "the quiz of \(day) ended at midnight UTC while you answered; run `mentormate quiz` again for today's")
            }
            return try w.quizResult(result, at: now)
        }
        guard let outcome = try outcome(of: me, day: day, questions) else {
            throw RPCError(.internalError, "the quiz result was written but is not in the replica; see the daemon's log")
        }
        return outcome
    }

    /// A day's board (default today) or the sums over every day; the caller's blocked accounts
    /// are left out, its own row is `you`.
    func leaderboard(_ request: LeaderboardRequest, _ caller: Requester) throws -> Leaderboard {
        let limit = request.limit ?? 20
        guard (1...100).contains(limit) else { throw RPCError(.invalidParams, "leaderboard: limit must be from 1 to 100") }
        let me = account(ifAny: caller)
        let blocked: Set<PublicKey> = me.flatMap { try? replica.blockedAccounts(of: $0) }.map { Set($0) } ?? []
        var rows: [Leaderboard.Entry] = []
        let allTime = request.allTime == true
        if allTime {
            guard request.day == nil else {
                throw RPCError(.invalidParams, "leaderboard: give a day or all_time, not both")
            }
            for t in try replica.quizTotals() where !blocked.contains(t.account) {
                rows.append(Leaderboard.Entry(rank: 0, id: t.account.id, name: names[t.account], score: Int64(t.score), days: Int64(t.days), at: nil))
            }
        } else {
            let day = request.day ?? quizDay
            guard Quiz.isDay(day) else {
                throw RPCError(.invalidParams, "leaderboard: day \"\(day)\" is not a date written YYYY-MM-DD (e.g. \(quizDay))")
            }
            for s in try replica.quizStandings(day: day) where !blocked.contains(s.account) {
                rows.append(Leaderboard.Entry(rank: 0, id: s.account.id, name: names[s.account], score: Int64(s.score), days: 1,
                                              at: Int64(clamping: s.timestamp)))
            }
        }
        Self.rank(&rows)
        let you = me.flatMap { key in rows.first { $0.id == key.id } }
        return Leaderboard(day: allTime ? nil : (request.day ?? quizDay), allTime: allTime, players: Int64(rows.count),
                           entries: Array(rows.prefix(Int(limit))), you: you)
    }

    /// Competition ranking over rows already in order: equal scores share a rank (1, 2, 2, 4).
    static func rank(_ rows: inout [Leaderboard.Entry]) {
        for i in rows.indices {
            rows[i].rank = i > 0 && rows[i].score == rows[i - 1].score ? rows[i - 1].rank : Int64(i + 1)
        }
    }

    private func dayQuestions(_ day: String) throws -> [QuizQuestion] {
        guard let questions = QuizSeed.questions(day: day), questions.count == Quiz.questionCount else {
            throw RPCError(.internalError, "the quiz of \(day) cannot be made from this build's catalogue; reinstall mentormated")
        }
        return questions
    }

    /// `account`'s counting result of `day` with its answers marked, and its rank that day.
    private func outcome(of account: PublicKey, day: String, _ questions: [QuizQuestion]) throws -> QuizOutcome? {
        guard let standing = try replica.quizStanding(of: account, day: day),
              let answers = try replica.quizAnswers(recordID: standing.recordID) else { return nil }
        let board = try replica.quizStandings(day: day)
        let rank = (board.firstIndex { $0.score == standing.score }).map { $0 + 1 } ?? board.count
        return QuizOutcome(day: day, score: Int64(standing.score), of: Int64(questions.count), answers: zip(answers, questions).enumerated().map { i, p in
            QuizOutcome.Answer(number: Int64(i + 1), chosen: p.0.map { Self.letters[$0] } ?? "-", right: Self.letters[p.1.answer],
                               name: p.1.entry.name, correct: p.0 == p.1.answer)
        }, rank: Int64(rank), players: Int64(board.count), at: Int64(clamping: standing.timestamp))
    }
}
