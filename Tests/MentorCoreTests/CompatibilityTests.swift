import Testing
@testable import MentorCore

/// The compatibility score: each part, the total, and the feed's ranking and filters over it.
@Suite struct CompatibilityTests {
    static func key(_ i: Int) -> PublicKey { PublicKey(bytes: [UInt8(i >> 8), UInt8(i & 0xFF)] + [UInt8](repeating: 0x5A, count: 30))! }

    static func person(_ i: Int, _ role: ProfileCard.Role, courses: [Int32] = [], slots: String = "", wage: UInt64? = nil,
                       budget: UInt64? = nil, gender: Int32? = nil, age: UInt8? = nil, nearby: Bool = false, updatedAt: UInt64 = 0) -> Feed.Candidate {
        var c = Feed.Candidate(key: key(i), role: role, courses: courses, updatedAt: updatedAt, nearby: nearby)
        c.slots = (try? WeeklySlots.parse(slots)) ?? .none
        (c.wage, c.budget, c.gender, c.age) = (wage, budget, gender, age)
        return c
    }

    /// A student looking for a tutor: every part earned in full but the courses (2 of 3).
    @Test func eachPartEarnsItsWeightTimesItsFraction() {
        var ana = Self.person(1, .student, courses: [1, 2, 3], slots: "Mon 14-17", budget: 30)
        ana.preferredGenders = [7]; ana.minOverlapHours = 2; ana.maxWage = 25
        let ben = Self.person(2, .tutor, courses: [1, 2, 9], slots: "Mon 15-18", wage: 20, gender: 7, nearby: true)
        let parts = Compatibility.parts(viewer: ana, candidate: ben, course: { "C\($0)" }, gender: { "g\($0)" })
        let byKind = Dictionary(uniqueKeysWithValues: parts.map { ($0.kind, $0) })
        #expect(parts.map(\.kind) == [.courses, .availability, .money, .preferences, .nearby], "no sign part: neither published one")
        #expect(abs((byKind[.courses]?.points ?? 0) - 35.0 * 2 / 3) < 1e-9 && byKind[.courses]?.reason == "2 shared courses: C1, C2")
        #expect(byKind[.availability]?.fraction == 1 && byKind[.availability]?.reason == "free at the same time 2 h a week")
        #expect(byKind[.money]?.fraction == 1 && byKind[.money]?.reason == "wage 20 within budget 30")
        #expect(byKind[.preferences]?.fraction == 1 && byKind[.preferences]?.reason == "gender met, overlap met, max wage met")
        #expect(byKind[.nearby]?.reason == "nearby now")
        #expect(Compatibility.score(viewer: ana, candidate: ben) == 88, "round(23.33 + 20 + 15 + 20 + 10)")
    }

    @Test func missingOrFailingValuesEarnNothingAndSaySo() {
        let tutor = Self.person(1, .tutor, courses: [1], slots: "Tue 9-10", wage: 40)
        var student = Self.person(2, .student, courses: [5], slots: "Tue 9:30-12", budget: 30)
        student.minOverlapHours = 1
        student.maxWage = 35
        let parts = Dictionary(uniqueKeysWithValues: Compatibility.parts(viewer: tutor, candidate: student, course: { "C\($0)" }, gender: { "g\($0)" }).map { ($0.kind, $0) })
        #expect(parts[.courses]?.fraction == 0 && parts[.courses]?.reason == "no shared course")
        #expect(parts[.availability]?.fraction == 0.25 && parts[.availability]?.reason == "free at the same time 0.5 h a week")
        #expect(parts[.money]?.fraction == 0 && parts[.money]?.reason == "wage 40 over budget 30", "the tutor's wage against the student's budget")
        #expect(parts[.preferences]?.fraction == 1 && parts[.preferences]?.reason == "you state no preferences", "the viewer's preferences, not the candidate's")
        #expect(Compatibility.score(viewer: tutor, candidate: student) == 25, "round(0 + 5 + 0 + 20 + 0)")
        // The student's view: max wage 35 not met by 40, overlap 0.5 h of the 1 h needed.
        let back = Dictionary(uniqueKeysWithValues: Compatibility.parts(viewer: student, candidate: tutor, course: { "C\($0)" }, gender: { "g\($0)" }).map { ($0.kind, $0) })
        #expect(back[.preferences]?.fraction == 0 && back[.preferences]?.reason == "overlap not met, max wage not met")
        #expect(back[.availability]?.fraction == 0.5)
        let blank = Self.person(3, .tutor)
        let none = Dictionary(uniqueKeysWithValues: Compatibility.parts(viewer: Self.person(4, .student), candidate: blank, course: { "\($0)" }, gender: { "\($0)" }).map { ($0.kind, $0) })
        #expect(none[.courses]?.reason == "you list no courses" && none[.availability]?.reason == "you give no availability slots" && none[.money]?.reason == "no wage given")
    }

    @Test func theSignCountsOnlyWhenBothPublishOne() {
        var a = Self.person(1, .student, courses: [1], budget: 10)
        var b = Self.person(2, .tutor, courses: [1], wage: 10)
        #expect(Compatibility.score(viewer: a, candidate: b) == 70, "35 + 0 + 15 + 20 + 0 of 100")
        a.sign = .aries
        #expect(Compatibility.score(viewer: a, candidate: b) == 70, "one sign alone changes nothing")
        b.sign = .cancer
        let parts = Compatibility.parts(viewer: a, candidate: b, course: { "\($0)" }, gender: { "\($0)" })
        #expect(parts.last?.kind == .sign && parts.last?.reason == "Aries and Cancer: both cardinal, fire against water")
        #expect(Compatibility.score(viewer: a, candidate: b) == 66, "round((70 + 3) / 110 × 100)")
        b.sign = .leo
        #expect(Compatibility.score(viewer: a, candidate: b) == 73, "round((70 + 10) / 110 × 100)")
    }
}

@Suite struct FeedRankingTests {
    static let me = CompatibilityTests.person(0, .student, courses: [1, 2], slots: "Mon 9-12", budget: 30)

    @Test func theOrderIsScoreThenNearbyThenNewestThenKey() {
        let cands = [
            CompatibilityTests.person(1, .tutor, courses: [1], updatedAt: 5),
            CompatibilityTests.person(2, .tutor, courses: [1], updatedAt: 9),
            CompatibilityTests.person(3, .tutor, courses: [1, 2], updatedAt: 1),
            CompatibilityTests.person(4, .tutor, courses: [], nearby: true, updatedAt: 1),
            CompatibilityTests.person(5, .student, courses: [1, 2], updatedAt: 99),   // same role: never shown
        ]
        let r = Feed.Ranking(viewer: Self.me, candidates: cands)
        let top = r.top(limit: 10, filter: .init(), excluded: [], lookup: { k in cands.first { $0.key == k } })
        #expect(top.map(\.key) == [3, 2, 1, 4].map(CompatibilityTests.key))
        #expect(top.first?.sharedCourses == [1, 2] && top.first?.score == 55)
    }

    @Test func filtersLeaveOutWhatDoesNotPassAndWhatIsNotGiven() {
        let cands = [
            CompatibilityTests.person(1, .tutor, courses: [1], slots: "Mon 14-17", wage: 20, gender: 3, age: 20, nearby: true),
            CompatibilityTests.person(2, .tutor, courses: [2], slots: "Tue 9-10", wage: 50, gender: 4, age: 30),
            CompatibilityTests.person(3, .tutor),
        ]
        let r = Feed.Ranking(viewer: Self.me, candidates: cands)
        func keys(_ f: Feed.Filter) -> Set<PublicKey> {
            Set(r.top(limit: 10, filter: f, excluded: [], lookup: { k in cands.first { $0.key == k } }).map(\.key))
        }
        let k = CompatibilityTests.key
        var f = Feed.Filter(); f.available = (.mon, 14 * 60)
        #expect(keys(f) == [k(1)])
        f = Feed.Filter(); f.available = (.mon, 17 * 60)
        #expect(keys(f).isEmpty, "the slot ends at 17:00")
        f = Feed.Filter(); f.maxWage = 20
        #expect(keys(f) == [k(1)], "20 passes at most 20; no wage does not pass")
        f = Feed.Filter(); f.minBudget = 0
        #expect(keys(f).isEmpty, "tutors give no budget")
        f = Feed.Filter(); f.nearby = true
        #expect(keys(f) == [k(1)])
        f = Feed.Filter(); f.gender = 4
        #expect(keys(f) == [k(2)])
        f = Feed.Filter(); f.minAge = 21; f.maxAge = 30
        #expect(keys(f) == [k(2)])
        f = Feed.Filter(); f.maxAge = 20
        #expect(keys(f) == [k(1)], "no age does not pass an age filter")
        f = Feed.Filter(); f.course = 2
        #expect(keys(f) == [k(2)])
        f = Feed.Filter(); f.minScore = 38
        #expect(keys(f) == [k(1), k(2)] && keys(Feed.Filter()).count == 3, "scores 63, 38 and 20")
        #expect(Set(r.top(limit: 10, filter: .init(), excluded: [k(1)], lookup: { k in cands.first { $0.key == k } }).map(\.key)) == [k(2), k(3)])
    }

    /// Updating a ranking card by card gives exactly the ranking built from scratch.
    @Test func incrementalUpdatesEqualARebuild() {
        var rng = SeededRandom(seed: 7)
        var cards: [PublicKey: Feed.Candidate] = [:]
        func random(_ i: Int) -> Feed.Candidate {
            var c = CompatibilityTests.person(i, rng.next() % 4 == 0 ? .student : .tutor,
                                              courses: (0..<Int(rng.next() % 3)).map { _ in Int32(rng.next() % 4) },
                                              slots: ["", "Mon 9-10", "Mon 9-12", "Tue 8-9"][Int(rng.next() % 4)],
                                              wage: rng.next() % 2 == 0 ? rng.next() % 50 : nil, nearby: rng.next() % 3 == 0,
                                              updatedAt: rng.next() % 20)
            c.paused = rng.next() % 7 == 0
            c.courses = Array(Set(c.courses)).sorted()
            return c
        }
        for i in 1...300 { cards[CompatibilityTests.key(i)] = random(i) }
        var r = Feed.Ranking(viewer: Self.me, candidates: cards.values)
        for _ in 0..<600 {
            let i = Int(rng.next() % 320) + 1
            let c = random(i)
            cards[c.key] = c
            r.update(c)
        }
        let fresh = Feed.Ranking(viewer: Self.me, candidates: cards.values)
        let lookup = { (k: PublicKey) in cards[k] }
        let a = r.top(limit: 400, filter: .init(), excluded: [], lookup: lookup)
        let b = fresh.top(limit: 400, filter: .init(), excluded: [], lookup: lookup)
        #expect(a == b && r.count == fresh.count && a.count == fresh.count)
        #expect(a.allSatisfy { cards[$0.key]?.paused == false && cards[$0.key]?.role == .tutor })
    }
}
