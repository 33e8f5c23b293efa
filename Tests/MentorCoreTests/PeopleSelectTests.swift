import Foundation
import Testing
@testable import MentorCore

/// `people`'s selection: the filters, newest first, the bounded buffer against a full sort.
@Suite struct PeopleSelectTests {
    /// A key as uniformly spread as real ones (`PublicKey` hashes its first 8 bytes), the same
    /// for the same `i`.
    func key(_ i: Int) -> PublicKey {
        var rng = SeededRandom(seed: UInt64(i))
        return PublicKey(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })!
    }

    func candidate(_ i: Int, role: ProfileCard.Role = .student, courses: [Int32] = [], at: UInt64, paused: Bool = false) -> Feed.Candidate {
        var c = Feed.Candidate(key: key(i), role: role, courses: courses, updatedAt: at, nearby: false)
        c.paused = paused
        return c
    }

    @Test func filtersAndOrder() {
        let courseNames = ["CS 490", "MATH 101", "Études"]
        let names = [key(1): "Ana Lima", key(2): "Ben", key(3): "Cy", key(4): "Dee", key(5): "Eve"]
        let all = [candidate(1, courses: [0], at: 10), candidate(2, role: .tutor, courses: [0, 1], at: 30),
                   candidate(3, role: .tutor, courses: [2], at: 20), candidate(4, at: 40, paused: true), candidate(5, role: .tutor, at: 30)]
        func run(_ f: People.Filter = People.Filter(), excluded: Set<PublicKey> = [], limit: Int = 10) -> ([String], Bool) {
            let r = People.select(all, filter: f, excluded: excluded, limit: limit, courseNames: courseNames, name: { names[$0] })
            return (r.people.map { names[$0.key] ?? "?" }, r.more)
        }
        // Newest first; Ben and Eve share a time: the smaller key first. Dee paused: never.
        let tie = key(2) < key(5) ? ["Ben", "Eve"] : ["Eve", "Ben"]
        #expect(run().0 == tie + ["Cy", "Ana Lima"])
        #expect(run(excluded: [key(2)]).0 == ["Eve", "Cy", "Ana Lima"])
        #expect(run(People.Filter(role: .student)).0 == ["Ana Lima"])
        #expect(run(People.Filter(courses: [0])).0 == ["Ben", "Ana Lima"])
        #expect(run(People.Filter(courses: [])).0 == [], "a course nobody lists matches nobody")
        #expect(run(People.Filter(search: "LIMA")).0 == ["Ana Lima"])
        #expect(run(People.Filter(search: "etudes")).0 == ["Cy"], "a course, accents not counting")
        #expect(run(People.Filter(search: " ")).0.count == 4, "an empty search filters nothing")
        #expect(run(People.Filter(role: .tutor, courses: [1], search: "math")).0 == ["Ben"])
        #expect(run(limit: 2) == (tie, true))
        #expect(run(limit: 4) == (tie + ["Cy", "Ana Lima"], false))
    }

    /// The bounded buffer gives what a full sort would, over 100,000 cards (and times it).
    @Test func aHundredThousandCardsGiveWhatASortWould() {
        var rng = SeededRandom(seed: 7)
        let cards = (0..<100_000).map { i in
            candidate(i, role: rng.next() % 2 == 0 ? .student : .tutor, courses: [Int32(rng.next() % 50)],
                      at: 1_700_000_000_000 + rng.next() % 5_000, paused: rng.next() % 20 == 0)
        }
        let courseNames = (0..<50).map { "COURSE \($0)" }
        let names = Dictionary(uniqueKeysWithValues: cards.map { ($0.key, "Person \($0.updatedAt % 1000)") })
        for (filter, limit) in [(People.Filter(), 50), (People.Filter(role: .tutor), 200), (People.Filter(courses: [3, 4]), 1),
                                (People.Filter(search: "person 12"), 50)] {
            let start = ContinuousClock.now
            let got = People.select(cards, filter: filter, excluded: [], limit: limit, courseNames: courseNames, name: { names[$0] })
            let elapsed = ContinuousClock.now - start
            let passing = cards.filter { c in
                !c.paused && (filter.role == nil || c.role == filter.role)
                    && (filter.courses.map { s in c.courses.contains(where: s.contains) } ?? true)
                    && (filter.search.map { (names[c.key] ?? "").lowercased().contains($0) } ?? true)
            }.sorted(by: People.precedes)
            #expect(got.people == Array(passing.prefix(limit)), "\(filter)")
            #expect(got.more == (passing.count > limit))
            print("people.select over 100,000 cards, \(filter), limit \(limit): \(passing.count) pass, \(elapsed)")
        }
    }
}
