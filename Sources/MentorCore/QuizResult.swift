/// A player's answers to the quiz of a day (type 13, PROTOCOL.md §15.4): public, signed, and
/// carrying no score — every node computes the score from the answers and the day's questions
/// (§15.2), so a claim of a score without the answers that give it cannot be written.
///
/// The day is the UTC date of the record's own timestamp: a result is written on the day it
/// answers. Per (account, day) the earliest result (by timestamp, then record ID) counts; later
/// ones are kept as records but change nothing, so a player cannot retry a day.
public struct QuizResult: RecordSchema, Equatable {
    public static let type = RecordType.quizResult
    public static let name = "quiz-result"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.quiz
    public enum Tag: UInt8, CaseIterable { case day = 1, answers = 2 }

    /// The byte of a question left unanswered.
    public static let skipped: UInt8 = 0xFF

    /// `YYYY-MM-DD`, the UTC date of the quiz answered.
    public var day: String
    /// One per question, in order: 0–3 for a–d, nil when not answered.
    public var answers: [Int?]

    public init(day: String, answers: [Int?]) { self.day = day; self.answers = answers }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "quiz result"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        let rawDay = try f.require(f.bytes(Tag.day.rawValue, "day", length: 10, what: what), "day", what: what)
        guard let day = String(validating: rawDay, as: UTF8.self), Quiz.isDay(day) else {
            throw RecordError(.invalidBody, "quiz result day is not a date written YYYY-MM-DD (years 2000-2999)")
        }
        let raw = try f.require(f.bytes(Tag.answers.rawValue, "answers", length: Quiz.questionCount, what: what),
                                "answers", what: what)
        var answers: [Int?] = []
        for b in raw {
            guard b < Quiz.choiceCount || b == Self.skipped else {
                throw RecordError(.invalidBody, "quiz result answer \(b) is not 0-3 or 255 (skipped)")
            }
            answers.append(b == Self.skipped ? nil : Int(b))
        }
        self.day = day
        self.answers = answers
    }

    /// The day answered is the UTC date of the record's timestamp.
    public static func validate(record: Record) throws(RecordError) {
        guard let result = try? QuizResult(body: record.body) else { return }
        let written = Quiz.day(millis: record.timestamp)
        guard result.day == written else {
            throw RecordError(.invalidBody, "a quiz result answers the quiz of the day it is written (\(written)), not \(result.day)")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.day.rawValue, text: day)
        f.set(Tag.answers.rawValue, answers.map { $0.map { UInt8(clamping: $0) } ?? Self.skipped })
        return f.encoded
    }

    /// Checks a value built in code: a real day and ten answers, each 0–3 or nil.
    public func validated() throws(RecordError) -> QuizResult {
        guard answers.count == Quiz.questionCount, answers.allSatisfy({ $0.map { (0..<Quiz.choiceCount).contains($0) } ?? true }) else {
            throw RecordError(.invalidBody, "a quiz result has \(Quiz.questionCount) answers, each a-d or skipped")
        }
        return try QuizResult(body: body)
    }
}

extension Quiz {
    /// Whether `day` is a real date written `YYYY-MM-DD`, year 2000–2999 (PROTOCOL.md §15.1).
    public static func isDay(_ day: String) -> Bool {
        let parts = day.split(separator: "-", omittingEmptySubsequences: false)
        guard day.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (2000...2999).contains(y), (1...12).contains(m) else { return false }
        return (1...BirthDate.days(inMonth: m, year: y)).contains(d)
    }

    /// The UTC date `YYYY-MM-DD` of a Unix time in milliseconds.
    public static func day(millis: UInt64) -> String {
        let c = BirthDate.civil(millis: millis)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(c.year)-\(two(c.month))-\(two(c.day))"
    }

    /// The Unix time in milliseconds at which `day` (a valid `YYYY-MM-DD`) begins, UTC.
    public static func start(of day: String) -> UInt64? {
        guard isDay(day) else { return nil }
        let p = day.split(separator: "-").compactMap { Int($0) }
        // days_from_civil (Howard Hinnant), the inverse of `BirthDate.civil`.
        let y = p[1] <= 2 ? p[0] - 1 : p[0]
        let era = y / 400
        let yoe = y - era * 400
        let mp = p[1] > 2 ? p[1] - 3 : p[1] + 9
        let doy = (153 * mp + 2) / 5 + p[2] - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return UInt64(era * 146_097 + doe - 719_468) * 86_400_000
    }
}
