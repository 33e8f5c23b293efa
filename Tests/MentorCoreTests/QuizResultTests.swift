import Testing
@testable import MentorCore

/// The quiz-result body (type 13, PROTOCOL.md §15.4) and the day arithmetic it relies on.
@Suite struct QuizResultTests {
    @Test func aResultRoundTripsAndEveryMalformedBodyIsRefusedWithItsCode() throws {
        let answers: [Int?] = [0, 1, 2, 3, nil, 0, 1, 2, 3, nil]
        let r = try QuizResult(day: "2026-02-28", answers: answers).validated()
        #expect(try QuizResult(body: r.body) == r)
        #expect(r.body == [1, 0, 10] + Array("2026-02-28".utf8) + [2, 0, 10, 0, 1, 2, 3, 0xFF, 0, 1, 2, 3, 0xFF])
        func code(_ body: [UInt8]) -> RecordError.Code? {
            do { _ = try QuizResult(body: body); return nil } catch { return error.code }
        }
        let day = [UInt8](Array("2026-02-28".utf8))
        let ten = [UInt8](repeating: 0, count: 10)
        #expect(code([1, 0, 10] + day + [2, 0, 10] + ten) == nil)
        #expect(code([1, 0, 10] + day + [2, 0, 10] + ten + [3, 0, 1, 10]) == .malformed, "a claimed score is an unknown field")
        #expect(code([1, 0, 10] + day) == .malformed, "no answers")
        #expect(code([2, 0, 10] + ten) == .malformed, "no day")
        #expect(code([1, 0, 10] + day + [2, 0, 9] + ten.prefix(9)) == .malformed, "nine answers")
        #expect(code([1, 0, 10] + day + [2, 0, 10] + [4] + ten.prefix(9)) == .invalidBody, "answer 4")
        #expect(code([1, 0, 10] + Array("2026-02-29".utf8) + [2, 0, 10] + ten) == .invalidBody, "not a day of 2026")
        #expect(code([1, 0, 10] + Array("1999-12-31".utf8) + [2, 0, 10] + ten) == .invalidBody, "before 2000")
        #expect(code([2, 0, 10] + ten + [1, 0, 10] + day) == .malformed, "fields out of order")
        #expect(throws: RecordError.self) { try QuizResult(day: "2026-01-01", answers: [0, 1]).validated() }
        #expect(throws: RecordError.self) { try QuizResult(day: "2026-01-01", answers: Array(repeating: 5, count: 10)).validated() }
    }

    @Test func daysAndTheirStartsAgree() {
        for day in ["2000-01-01", "2024-02-29", "2026-01-01", "2026-12-31", "2100-03-01", "2999-12-31"] {
            guard let start = Quiz.start(of: day) else { Issue.record("\(day) has no start"); continue }
            #expect(Quiz.day(millis: start) == day)
            #expect(Quiz.day(millis: start + 86_399_999) == day)
            #expect(Quiz.day(millis: start + 86_400_000) != day)
        }
        #expect(Quiz.start(of: "2026-01-01") == 1_767_225_600_000)
        for bad in ["2026-1-01", "2026-13-01", "2023-02-29", "１２３４-01-01", "2026/01/01", ""] { #expect(!Quiz.isDay(bad), "\(bad)") }
    }
}
