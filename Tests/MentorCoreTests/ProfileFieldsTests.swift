import Testing
@testable import MentorCore

/// Weekly slots: what people type, the canonical encoding, overlaps.
@Suite struct WeeklySlotsTests {
    @Test func typedSlotsAreSortedMergedAndPrintedCanonically() throws {
        let s = try WeeklySlots.parse("wed 9-12, Mon 14-17,  monday 16-18 , Sat-Sun 10-13, Tue 9:30-10:45")
        #expect(s.description == "Mon 14-18, Tue 9:30-10:45, Wed 9-12, Sat 10-13, Sun 10-13")
        #expect(try WeeklySlots.parse("Mon 9-10, Mon 10-11").description == "Mon 9-11", "touching slots merge")
        #expect(try WeeklySlots.parse("Fri 22-24").slots == [.init(day: .fri, start: 1320, end: 1440)])
        #expect(try WeeklySlots.parse("").isEmpty && WeeklySlots.parse("   ").isEmpty, "empty clears")
        #expect(try WeeklySlots.parse(s.description) == s, "the printed form parses back to the same slots")
    }

    @Test func badSlotsNameWhatIsWrong() {
        func error(_ text: String) -> String {
            do { _ = try WeeklySlots.parse(text); return "" } catch { return error.description }
        }
        #expect(error("Funday 25-26").contains("\"Funday\" is not a day"))
        #expect(error("Mon 25-26").contains("25 is not an hour"))
        #expect(error("Mon 17-14").contains("ends before it starts"))
        #expect(error("Fri 22-2").contains("ends before it starts"))
        #expect(error("Mon 9:10-10").contains(":00, :15, :30 or :45"))
        #expect(error("Mon").contains("is not a slot"))
        #expect(error("Mon 9-10,,Tue 9-10").contains("empty slot"))
        #expect(error("Sun-Mon 9-10").contains("run backwards"))
        #expect(error("Mon 9:5-10").contains("no valid minutes"))
    }

    @Test func encodingRoundTripsAndOnlyTheCanonicalFormDecodes() throws {
        let s = try WeeklySlots.parse("Mon 14-17, Wed 9:30-12")
        #expect(s.encoded == [0, 0x03, 0x48, 0x03, 0xFC, 2, 0x02, 0x3A, 0x02, 0xD0])
        #expect(try WeeklySlots(encoded: s.encoded) == s)
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [2, 0x02, 0x3A, 0x02, 0xD0, 0, 0x03, 0x48, 0x03, 0xFC]) } // unsorted
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [0, 0, 0, 0, 60, 0, 0, 60, 0, 120]) }  // touching, not merged
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [7, 0, 0, 0, 60]) }                     // day 7
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [0, 0, 0, 0x05, 0xB4]) }                // ends past 24:00
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [0, 0, 10, 0, 60]) }                    // not a quarter hour
        #expect(throws: RecordError.self) { try WeeklySlots(encoded: [0, 0, 0, 0]) }                         // a partial slot
    }

    @Test func overlapCountsMinutesBothAreFree() throws {
        let a = try WeeklySlots.parse("Mon 14-17, Wed 9-12, Fri 8-9")
        let b = try WeeklySlots.parse("Mon 16-18, Wed 10-11, Wed 11:30-13, Thu 8-9")
        #expect(a.overlapMinutes(with: b) == 60 + 60 + 30)
        #expect(b.overlapMinutes(with: a) == 150)
        #expect(a.overlapMinutes(with: .none) == 0)
        #expect(a.covers(.mon, minute: 14 * 60) && !a.covers(.mon, minute: 17 * 60) && a.covers(.wed, minute: nil) && !a.covers(.tue, minute: nil))
    }

    @Test func feedMomentsAreADayWithAnOptionalHour() throws {
        #expect(try WeeklySlots.parseMoment("Mon") == (.mon, nil))
        #expect(try WeeklySlots.parseMoment("tue-14") == (.tue, 840))
        #expect(try WeeklySlots.parseMoment("Wed 9:30") == (.wed, 570))
        #expect(throws: WeeklySlots.ParseError.self) { try WeeklySlots.parseMoment("Funday-25") }
        #expect(throws: WeeklySlots.ParseError.self) { try WeeklySlots.parseMoment("Mon-24") }
    }
}

@Suite struct ProfileFieldTests {
    static func full() -> ProfileCard {
        var c = ProfileCard(name: "Ana", role: .student)
        c.slots = try? WeeklySlots.parse("Mon 14-17")
        c.gender = "woman"
        c.languages = ["english", "portuguese"]
        c.area = "Science Hall"
        c.age = .some(20)
        c.sign = .some(.leo)
        c.preferences = Preferences(genders: ["man", "non binary"], minOverlapHours: 2, maxWage: 30, minBudget: nil)
        c.paused = true
        return c
    }

    @Test func everyNewFieldRoundTrips() throws {
        let c = try Self.full().validated()
        let back = try ProfileCard(body: c.body)
        #expect(back == c)
        #expect(back.slots?.description == "Mon 14-17" && back.age == .some(20) && back.sign == .some(.leo) && back.paused == true)
        #expect(back.preferences?.genders == ["man", "non binary"] && back.preferences?.maxWage == 30 && back.preferences?.minBudget == nil)
    }

    @Test func emptyValuesClearAFieldAndDecodeAsCleared() throws {
        var c = ProfileCard()
        c.age = .some(nil); c.sign = .some(nil); c.gender = ""; c.languages = []; c.preferences = Preferences.none; c.slots = WeeklySlots.none
        let back = try ProfileCard(body: c.body)
        #expect(back.age == .some(nil) && back.sign == .some(nil) && back.gender == "" && back.languages == [] && back.preferences == Preferences.none)
        #expect(back.slots == WeeklySlots.none)
    }

    /// One meaning per byte string: values not in canonical form are refused, not repaired.
    @Test func nonCanonicalOrOutOfRangeValuesAreRefused() {
        func body(_ tag: ProfileCard.Field, _ value: [UInt8]) -> [UInt8] {
            var f = FieldList(); f.set(tag.rawValue, value); return f.encoded
        }
        let refused: [(ProfileCard.Field, [UInt8], String)] = [
            (.gender, Array("Woman".utf8), "upper case"),
            (.gender, Array(" woman".utf8), "leading space"),
            (.languages, [2] + Array("en".utf8) + [2] + Array("en".utf8), "listed twice"),
            (.languages, [2] + Array("EN".utf8), "upper case language"),
            (.languages, [0], "empty language"),
            (.area, Array("Science  Hall".utf8), "double space"),
            (.age, [12], "under 13"),
            (.age, [121], "over 120"),
            (.age, [20, 0], "two bytes"),
            (.sign, [12], "no 13th sign"),
            (.paused, [2], "paused is 0 or 1"),
            (.preferences, { var f = FieldList(); f.set(2, u64: 169); return f.encoded }(), "more hours than a week"),
            (.preferences, { var f = FieldList(); f.set(1, []); return f.encoded }(), "an empty gender list"),
            (.preferences, [9, 0, 0], "unknown preference"),
        ]
        for (tag, value, why) in refused {
            let b = body(tag, value)
            #expect(throws: RecordError.self, "\(why)") { try ProfileCard(body: b) }
        }
    }

    @Test func editsOverTheirLimitsAreRefusedBeforeEncoding() {
        var c = ProfileCard(name: "A")
        c.languages = (0..<9).map { "l\($0)" }
        #expect(throws: RecordError.self) { try c.validated() }
        c.languages = [String(repeating: "x", count: 33)]
        #expect(throws: RecordError.self) { try c.validated() }
    }

    @Test func wordsAreNormalizedOnlyInASCII() {
        #expect(ProfileCard.normalizeWord("  Non   Binary ") == "non binary")
        #expect(ProfileCard.normalizeWord("ÉCOLE") == "École", "only ASCII letters fold")
        #expect(ProfileCard.normalizeSpaces(" Science \t Hall ") == "Science Hall")
    }
}

@Suite struct SunSignAndBirthDateTests {
    @Test func signsChangeOnTheirFirstDays() {
        let cusps: [(Int, Int, SunSign, SunSign)] = [
            (1, 20, .capricorn, .aquarius), (2, 19, .aquarius, .pisces), (3, 21, .pisces, .aries), (4, 20, .aries, .taurus),
            (5, 21, .taurus, .gemini), (6, 21, .gemini, .cancer), (7, 23, .cancer, .leo), (8, 23, .leo, .virgo),
            (9, 23, .virgo, .libra), (10, 23, .libra, .scorpio), (11, 22, .scorpio, .sagittarius), (12, 22, .sagittarius, .capricorn),
        ]
        for (m, d, before, on) in cusps {
            #expect(SunSign(month: m, day: d - 1) == before && SunSign(month: m, day: d) == on, "\(m)-\(d)")
        }
        #expect(SunSign(month: 12, day: 31) == .capricorn && SunSign(month: 1, day: 1) == .capricorn)
    }

    @Test func theElementAndModalityTable() {
        #expect(SunSign.aries.element == .fire && SunSign.aries.modality == .cardinal)
        #expect(SunSign.pisces.element == .water && SunSign.pisces.modality == .mutable)
        #expect(SunSign.aries.compatibility(with: .leo) == 1, "same element")
        #expect(SunSign.aries.compatibility(with: .libra) == 0.8, "fire and air")
        #expect(SunSign.taurus.compatibility(with: .scorpio) == 0.8, "earth and water")
        #expect(SunSign.aries.compatibility(with: .cancer) == 0.3, "both cardinal, fire against water")
        #expect(SunSign.aries.compatibility(with: .taurus) == 0.5, "fire and earth, different modalities")
        for a in SunSign.allCases { for b in SunSign.allCases { #expect(a.compatibility(with: b) == b.compatibility(with: a)) } }
    }

    @Test func birthDatesParseStrictlyAndAgesCountWholeYears() throws {
        for bad in ["2023-02-29", "2004-13-01", "17/05/2004", "2004-5-17", "1899-12-31", ""] {
            #expect(throws: BirthDate.ParseError.self, "\(bad)") { try BirthDate(parsing: bad) }
        }
        let d = try BirthDate(parsing: "2004-05-17")
        #expect(d.description == "2004-05-17" && d.sign == .taurus)
        // 2026-05-16 and 2026-05-17, 12:00 UTC.
        #expect(d.age(at: 1_778_932_800_000) == 21 && d.age(at: 1_779_019_200_000) == 22)
        let leap = try BirthDate(parsing: "2008-02-29")
        #expect(leap.age(at: 1_772_280_000_000) == 17 && leap.age(at: 1_772_366_400_000) == 18, "Feb 28 then Mar 1, 2026")
        #expect(BirthDate.civil(millis: 0) == (1970, 1, 1) && BirthDate.civil(millis: 951_782_400_000) == (2000, 2, 29))
    }
}
