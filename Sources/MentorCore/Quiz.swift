/// The quiz of a day (docs/PROTOCOL.md §15): ten questions "traits → which of four", generated
/// from the catalogue by a deterministic algorithm, so every node and every implementation asks
/// the same questions on the same date. The seed comes from the date (`QuizSeed` in MentorCrypto:
/// BLAKE2b); everything after the seed is here, with no other input.
public struct QuizQuestion: Sendable, Equatable {
    /// The entry whose traits the question shows (the right answer).
    public var entry: Catalogue.Entry
    /// Four entry names; `choices[answer]` is `entry.name`.
    public var choices: [String]
    /// 0–3: a, b, c, d.
    public var answer: Int
}

public enum Quiz {
    public static let questionCount = 10
    public static let choiceCount = 4

    /// The questions for `seed` (PROTOCOL.md §15.2), in order. Empty if the catalogue is too
    /// small to draw from (fewer than 14 entries; the standard one has 70).
    public static func questions(seed: UInt64, catalogue: Catalogue = .standard) -> [QuizQuestion] {
        let entries = catalogue.entries
        let n = UInt64(entries.count)
        guard n >= UInt64(questionCount + choiceCount) else { return [] }
        var rng = SeededRandom(seed: seed)
        var asked = Set<Int>()
        var questions: [QuizQuestion] = []
        // Every draw is `next() % n`; a rejected draw is simply drawn again. The cap only
        // guards a catalogue where no acceptable distractor exists (never the standard one).
        var draws = 0
        func draw() -> Int? {
            draws += 1
            return draws > 100_000 ? nil : Int(rng.next() % n)
        }
        for _ in 0..<questionCount {
            var a: Int
            repeat { guard let d = draw() else { return [] }; a = d } while asked.contains(a)
            asked.insert(a)
            var picks = [a]
            while picks.count < choiceCount {
                guard let d = draw() else { return [] }
                if picks.contains(d) || !distinguishable(entries[d], from: entries[a]) { continue }
                picks.append(d)
            }
            // Fisher–Yates from the last position down: j = next() % (i + 1).
            for i in stride(from: choiceCount - 1, through: 1, by: -1) {
                let j = Int(rng.next() % UInt64(i + 1))
                picks.swapAt(i, j)
            }
            let answer = picks.firstIndex(of: a) ?? 0
            questions.append(QuizQuestion(entry: entries[a], choices: picks.map { entries[$0].name }, answer: answer))
        }
        return questions
    }

    /// A distractor must differ from the answer in its hardness range, its streak or its
    /// cleavage, so the traits shown decide the question.
    public static func distinguishable(_ d: Catalogue.Entry, from a: Catalogue.Entry) -> Bool {
        d.hardness != a.hardness || d.streak != a.streak || d.cleavage != a.cleavage
    }

    /// The score of `answers` (one per question, 0–3, nil = not answered): the number right.
    public static func score(_ answers: [Int?], _ questions: [QuizQuestion]) -> Int {
        zip(answers, questions).filter { $0.0 == $0.1.answer }.count
    }
}
