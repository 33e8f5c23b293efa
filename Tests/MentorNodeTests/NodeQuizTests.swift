import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
@testable import MentorNode

/// `quiz.questions`, `quiz.submit` and `leaderboard` through the node's API.
@Suite struct NodeQuizTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003
    static let letters = ["a", "b", "c", "d"]

    /// The letters of the right answers of `day`, from the generator every node runs.
    static func key(_ day: String) throws -> [String] {
        try #require(QuizSeed.questions(day: day)).map { letters[$0.answer] }
    }

    static func answers(_ json: JSON) -> [JSON] { json.arrayValue ?? [] }

    @Test func playingPublishesAScoreEveryoneComputesAndOneResultADayCounts() throws {
        let t = try TestNode()
        for (uid, name) in [(ana, "Ana"), (ben, "Ben"), (cy, "Cy")] {
            try t.call(uid, "account.signup", ["email": .string("\(name)@uni.edu"), "name": .string(name), "role": "student"])
        }
        func id(_ uid: UInt32) throws -> String { try #require(try t.call(uid, "account.whoami")["id"]?.stringValue) }
        let (anaID, benID) = (try id(ana), try id(ben))

        let quiz = try t.call(ana, "quiz.questions")
        let day = try #require(quiz["day"]?.stringValue)
        #expect(day == Quiz.day(millis: t.wall.tick()))
        let questions = quiz["questions"]?.arrayValue ?? []
        #expect(questions.count == 10 && questions.allSatisfy { $0["choices"]?.arrayValue?.count == 4 })
        #expect(quiz["played"] == nil || quiz["played"] == .null)
        let expected = try #require(QuizSeed.questions(day: day))
        #expect(questions.map { ($0["choices"]?.arrayValue ?? []).compactMap(\.stringValue) } == expected.map(\.choices))
        // The questions show traits, never the answer.
        #expect(questions.allSatisfy { $0["answer"] == nil && $0["right"] == nil })

        let key = try Self.key(day)
        func submit(_ uid: UInt32, _ answers: [String], day d: String? = nil) throws -> JSON {
            try t.call(uid, "quiz.submit", ["day": .string(d ?? day), "answers": .array(answers.map { .string($0) })])
        }
        let ana1 = try submit(ana, key)
        #expect(ana1["score"] == 10 && ana1["of"] == 10 && ana1["rank"] == 1 && ana1["players"] == 1)
        var benAnswers = key
        for i in 0..<3 { benAnswers[i] = Self.letters[(Self.letters.firstIndex(of: key[i])! + 1) % 4] }
        let ben1 = try submit(ben, benAnswers)
        #expect(ben1["score"] == 7 && ben1["rank"] == 2)
        let marks = Self.answers(ben1["answers"] ?? .null)
        #expect(marks.prefix(3).allSatisfy { $0["correct"] == false } && marks.dropFirst(3).allSatisfy { $0["correct"] == true })
        #expect(marks.first?["right"]?.stringValue == key[0] && marks.first?["name"]?.stringValue == expected[0].entry.name)
        #expect(try submit(cy, Array(repeating: "-", count: 10))["score"] == 0)

        // Mistakes are refused and write nothing.
        let before = try t.node.replica.counts()
        let mistakes: [(UInt32, [String], String?, String)] = [
            (ana, key, nil, "played the quiz of \(day) already"),
            (ana, Array(key.prefix(9)), nil, "9 answers; give exactly 10"),
            (ana, ["e"] + key.dropFirst(), nil, "answer 1 is \"e\""),
            (ana, key, "2020-01-01", "the quiz of 2020-01-01 is not today's"),
            (ana, key, "yesterday", "not a date written YYYY-MM-DD"),
        ]
        for (uid, answers, d, reason) in mistakes {
            let e = t.error(uid, "quiz.submit", ["day": .string(d ?? day), "answers": .array(answers.map { .string($0) })])
            #expect(e?.message.contains(reason) == true, "\(reason): \(String(describing: e))")
        }
        #expect(try t.call(ana, "quiz.questions")["played"]?["score"] == 10, "playing again shows the result")
        #expect(try t.node.replica.counts() == before, "no record written by a refused submit")

        let board = try t.call(ben, "leaderboard")
        let rows = board["entries"]?.arrayValue ?? []
        #expect(rows.compactMap { $0["name"]?.stringValue } == ["Ana", "Ben", "Cy"])
        #expect(rows.compactMap { $0["score"]?.intValue } == [10, 7, 0] && rows.compactMap { $0["rank"]?.intValue } == [1, 2, 3])
        #expect(board["you"]?["id"]?.stringValue == benID && board["players"] == 3 && board["day"]?.stringValue == day)
        // Blocked people leave the caller's board.
        try t.call(cy, "block", ["id": .string(anaID)])
        #expect((try t.call(cy, "leaderboard")["entries"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue } == ["Ben", "Cy"])

        // The next day: a new quiz; Ben plays it; yesterday's board stays; all time sums.
        t.wall.advance(days: 1)
        let next = try t.call(ben, "quiz.questions")
        let day2 = try #require(next["day"]?.stringValue)
        #expect(day2 != day && (next["played"] == nil || next["played"] == .null))
        #expect(try submit(ben, try Self.key(day2), day: day2)["score"] == 10)
        #expect(t.error(ana, "quiz.submit", ["day": .string(day), "answers": .array(key.map { .string($0) })])?.message.contains("not today's") == true,
                "yesterday's quiz cannot be answered today")
        let yesterday = try t.call(ana, "leaderboard", ["day": .string(day)])
        #expect((yesterday["entries"]?.arrayValue ?? []).compactMap { $0["score"]?.intValue } == [10, 7, 0])
        let allTime = try t.call(ana, "leaderboard", ["all_time": true, "limit": 2])
        let totals = allTime["entries"]?.arrayValue ?? []
        #expect(totals.compactMap { $0["name"]?.stringValue } == ["Ben", "Ana"] && totals.compactMap { $0["score"]?.intValue } == [17, 10])
        #expect(totals.compactMap { $0["days"]?.intValue } == [2, 1] && allTime["players"] == 3 && allTime["all_time"] == true)
        #expect(allTime["you"]?["rank"] == 2)

        for (params, reason) in [(["day": JSON.string("2026-13-01")], "not a date"), (["day": .string(day), "all_time": true], "not both"),
                                 (["limit": 0], "limit must be from 1 to 100")] {
            #expect(t.error(ana, "leaderboard", params)?.message.contains(reason) == true, "\(params)")
        }
    }

    /// Without an account the questions and the board are readable; playing needs one.
    @Test func questionsAndTheBoardNeedNoAccountButPlayingDoes() throws {
        let t = try TestNode()
        let quiz = try t.call(4242, "quiz.questions")
        #expect(quiz["questions"]?.arrayValue?.count == 10)
        #expect(try t.call(4242, "leaderboard")["entries"]?.arrayValue?.isEmpty == true)
        let day = try #require(quiz["day"]?.stringValue)
        let e = t.error(4242, "quiz.submit", ["day": .string(day), "answers": .array(try Self.key(day).map { .string($0) })])
        #expect(e != nil && e?.message.contains("account") == true, "\(String(describing: e))")
    }
}
