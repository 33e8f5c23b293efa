/// Ranking the feed (pure): tutors for students, students for tutors, by compatibility score,
/// then nearby-now, then recency, then key. Courses and genders are small integer IDs (the
/// caller interns the names).
///
/// A viewer's `Ranking` keeps every candidate of the other role sorted by that order and is
/// kept up to date card by card, so a feed request walks from the top and stops after `limit`
/// candidates pass the filters — not a pass over every card (100,000 on a big campus).
public enum Feed {
    /// What the feed and the score need of one card.
    public struct Candidate: Sendable, Equatable {
        public var key: PublicKey
        public var role: ProfileCard.Role?
        public var courses: [Int32]
        public var updatedAt: UInt64
        public var nearby: Bool
        public var slots: WeeklySlots = .none
        public var wage: UInt64?
        public var budget: UInt64?
        public var gender: Int32?
        public var age: UInt8?
        public var sign: SunSign?
        public var preferredGenders: [Int32] = []
        public var minOverlapHours: UInt64?
        public var maxWage: UInt64?
        public var minBudget: UInt64?
        public var paused: Bool = false

        public init(key: PublicKey, role: ProfileCard.Role?, courses: [Int32], updatedAt: UInt64, nearby: Bool) {
            self.key = key; self.role = role; self.courses = courses; self.updatedAt = updatedAt; self.nearby = nearby
        }
    }

    /// The feed's filters (`mentormate feed --available … --min-score …`); nil: not filtered.
    public struct Filter: Sendable, Equatable {
        public var course: Int32?
        public var available: (day: WeeklySlots.Day, minute: UInt16?)?
        public var maxWage: UInt64?
        public var minBudget: UInt64?
        public var nearby: Bool = false
        public var gender: Int32?
        public var minAge: UInt8?
        public var maxAge: UInt8?
        public var minScore: UInt8?

        public init() {}

        public static func == (a: Filter, b: Filter) -> Bool {
            a.course == b.course && a.available?.day == b.available?.day && a.available?.minute == b.available?.minute
                && a.maxWage == b.maxWage && a.minBudget == b.minBudget && a.nearby == b.nearby && a.gender == b.gender
                && a.minAge == b.minAge && a.maxAge == b.maxAge && a.minScore == b.minScore
        }

        /// Whether a ranking entry passes the filters it holds the values for (all but the
        /// course and the time of day): the walk down a ranking checks these first, in place.
        func quickAdmits(_ e: Ranking.Entry) -> Bool {
            if let min = minScore, e.score < min { return false }
            if nearby, !e.nearby { return false }
            if let gender, e.gender != gender { return false }
            if let available, e.days & (1 << available.day.rawValue) == 0 { return false }
            if let maxWage, e.wage == .max || e.wage > maxWage { return false }
            if let minBudget, e.budget == .max || e.budget < minBudget { return false }
            if let minAge, e.age == 0 || e.age < minAge { return false }
            if let maxAge, e.age == 0 || e.age > maxAge { return false }
            return true
        }

        /// Whether the filters need the candidate's summary beyond its ranking entry.
        var needsCandidate: Bool { course != nil || available?.minute != nil }

        /// Whether `c` passes every filter but the score. A filter on a value the card does not
        /// give (no wage, no age) leaves the card out: nothing says it would pass.
        public func admits(_ c: Candidate) -> Bool {
            if let course, !c.courses.contains(course) { return false }
            if let available, !c.slots.covers(available.day, minute: available.minute) { return false }
            if let maxWage { guard let w = c.wage, w <= maxWage else { return false } }
            if let minBudget { guard let b = c.budget, b >= minBudget else { return false } }
            if nearby, !c.nearby { return false }
            if let gender, c.gender != gender { return false }
            if let minAge { guard let a = c.age, a >= minAge else { return false } }
            if let maxAge { guard let a = c.age, a <= maxAge else { return false } }
            return true
        }
    }

    public struct Item: Sendable, Equatable {
        public var key: PublicKey
        public var score: UInt8
        public var sharedCourses: [Int32]
        public var nearby: Bool
    }

    /// One viewer's candidates (the other role, not paused), best first.
    public struct Ranking: Sendable {
        /// The order's values and the filters' (inline, so the walk reads no dictionary):
        /// `age` 0, `wage`/`budget` `.max` and `gender` -1 mean not given; `days` has bit d set
        /// when the card has a slot on day d.
        struct Entry: Sendable {
            var score: UInt8
            var nearby: Bool
            var age: UInt8
            var days: UInt8
            var gender: Int32
            var wage: UInt64
            var budget: UInt64
            var updatedAt: UInt64
            var key: PublicKey
            /// Whether `self` comes before `other` in the feed.
            func precedes(_ o: Entry) -> Bool {
                if score != o.score { return score > o.score }
                if nearby != o.nearby { return nearby }
                if updatedAt != o.updatedAt { return updatedAt > o.updatedAt }
                return key < o.key
            }
        }

        public private(set) var viewer: Candidate
        private var entries: [Entry] = []
        private var entryOf: [PublicKey: Entry] = [:]

        /// Ranks every candidate for `viewer` (one sort; later changes are `update`/`remove`).
        public init(viewer: Candidate, candidates: some Sequence<Candidate>) {
            self.viewer = viewer
            for c in candidates where wanted(c) {
                let e = entry(c)
                entries.append(e)
                entryOf[c.key] = e
            }
            entries.sort { $0.precedes($1) }
        }

        public var count: Int { entries.count }

        func wanted(_ c: Candidate) -> Bool {
            c.key != viewer.key && !c.paused && c.role != nil && c.role != viewer.role
        }

        func entry(_ c: Candidate) -> Entry {
            Entry(score: Compatibility.score(viewer: viewer, candidate: c), nearby: c.nearby, age: c.age ?? 0,
                  days: c.slots.slots.reduce(0) { $0 | 1 << $1.day.rawValue }, gender: c.gender ?? -1,
                  wage: c.wage ?? .max, budget: c.budget ?? .max, updatedAt: c.updatedAt, key: c.key)
        }

        /// The first index whose entry does not precede `e`.
        func position(_ e: Entry) -> Int {
            var lo = 0, hi = entries.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if entries[mid].precedes(e) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }

        /// A candidate's card (or nearness) changed: its place is found again.
        public mutating func update(_ c: Candidate) {
            remove(c.key)
            guard wanted(c) else { return }
            let e = entry(c)
            entries.insert(e, at: position(e))
            entryOf[c.key] = e
        }

        public mutating func remove(_ key: PublicKey) {
            guard let old = entryOf.removeValue(forKey: key) else { return }
            let at = position(old)
            if at < entries.count, entries[at].key == key { entries.remove(at: at) }
        }

        /// The best `limit` candidates passing `filter`, not in `excluded`, best first.
        /// `lookup` gives a candidate's current summary (the ranking keeps only its order).
        public func top(limit: Int, filter: Filter, excluded: Set<PublicKey>,
                        lookup: (PublicKey) -> Candidate?) -> [Item] {
            var out: [Item] = []
            let deep = filter.needsCandidate
            for i in entries.indices {
                guard out.count < limit else { break }
                if let min = filter.minScore, entries[i].score < min { break }
                guard filter.quickAdmits(entries[i]), !excluded.contains(entries[i].key), let c = lookup(entries[i].key) else { continue }
                if deep, !filter.admits(c) { continue }
                out.append(Item(key: c.key, score: entries[i].score, sharedCourses: c.courses.filter(viewer.courses.contains), nearby: c.nearby))
            }
            return out
        }
    }
}
