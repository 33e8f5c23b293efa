import Testing
import MentorCore
@testable import MentorCrypto

/// The quiz of a day (PROTOCOL.md §15): deterministic per date, four distinct choices, the
/// answer among them, the traits deciding.
@Suite struct QuizGeneratorTests {
    @Test func theSameDayGivesTheSameQuestionsAndAnotherDayOthers() throws {
        let a = try #require(QuizSeed.questions(day: "2026-12-04"))
        let again = try #require(QuizSeed.questions(day: "2026-12-04"))
        let b = try #require(QuizSeed.questions(day: "2026-12-05"))
        #expect(a == again)
        #expect(a != b)
        #expect(a.count == 10 && b.count == 10)
    }

    @Test func everyQuestionHasFourDistinctChoicesWithTheAnswer() throws {
        for day in ["2026-01-01", "2026-02-28", "2028-02-29", "2026-12-04", "2027-07-15"] {
            let qs = try #require(QuizSeed.questions(day: day))
            #expect(qs.count == Quiz.questionCount)
            #expect(Set(qs.map(\.entry.name)).count == qs.count, "\(day): no mineral asked twice")
            for q in qs {
                #expect(q.choices.count == 4 && Set(q.choices).count == 4, "\(day) \(q.choices)")
                #expect((0..<4).contains(q.answer) && q.choices[q.answer] == q.entry.name)
                for c in q.choices where c != q.entry.name {
                    let other = try #require(Catalogue.standard.entry(named: c))
                    #expect(Quiz.distinguishable(other, from: q.entry), "\(day): \(c) vs \(q.entry.name)")
                }
            }
            let right: [Int?] = qs.map(\.answer)
            #expect(Quiz.score(right, qs) == 10)
            let wrong: [Int?] = qs.map { ($0.answer + 1) % 4 }
            #expect(Quiz.score(wrong, qs) == 0)
            #expect(Quiz.score([nil] + right.dropFirst(), qs) == 9)
        }
    }

    @Test func theSeedIsBLAKE2bOfTheDomainAndTheDay() throws {
        let digest = BLAKE2b.hash(Array("mentormate quiz v1 2026-12-04".utf8), outputLength: 32)
        var expected: UInt64 = 0
        for (i, b) in digest.prefix(8).enumerated() { expected |= UInt64(b) << (8 * UInt64(i)) }
        #expect(QuizSeed.seed(day: "2026-12-04") == expected)
        for bad in ["2026-13-01", "2026-02-29", "26-12-04", "2026-1-04", "2026-12-04 ", "", "１９９９-01-01", "1999-12-31"] {
            #expect(QuizSeed.seed(day: bad) == nil, "\(bad)")
        }
        #expect(QuizSeed.seed(day: "2028-02-29") != nil)
    }

    /// The worked example of PROTOCOL.md §15.3 (the answers of 2026-01-01, in order).
    @Test func theDocumentedExampleHolds() throws {
        let qs = try #require(QuizSeed.questions(day: "2026-01-01"))
        let seed = try #require(QuizSeed.seed(day: "2026-01-01"))
        let lines = qs.map { q in "\(q.entry.name): " + q.choices.joined(separator: ", ") + " → \(["a", "b", "c", "d"][q.answer])" }
        #expect(seed == 0x96be_1d35_c2ac_a628)
        #expect(lines == Self.documented)
    }

    static let documented = [
        "corundum: corundum, olivine, slate, beryl → a",
        "ilmenite: ilmenite, gabbro, anhydrite, sphalerite → a",
        "schist: pumice, cinnabar, schist, azurite → c",
        "galena: quartz, sphalerite, galena, muscovite → c",
        "topaz: hornblende, microcline, topaz, fluorite → c",
        "siderite: schist, kaolinite, gabbro, siderite → d",
        "apatite: topaz, goethite, apatite, granite → c",
        "conglomerate: chlorite, epidote, conglomerate, zircon → c",
        "dolomite: pyrite, bornite, dolomite, basalt → c",
        "gypsum: epidote, pyrite, chalcopyrite, gypsum → d",
    ]
}
