/// Ranking the feed (pure): tutors for students, students for tutors, by shared courses,
/// then nearby-now, then recency.
public enum Feed {
    public struct Candidate: Sendable, Equatable {
        public var key: PublicKey
        public var role: ProfileCard.Role?
        public var courses: [String]
        public var updatedAt: UInt64
        public var nearby: Bool

        public init(key: PublicKey, role: ProfileCard.Role?, courses: [String], updatedAt: UInt64, nearby: Bool) {
            self.key = key; self.role = role; self.courses = courses; self.updatedAt = updatedAt; self.nearby = nearby
        }
    }

    public struct Item: Sendable, Equatable {
        public var key: PublicKey
        public var sharedCourses: [String]
        public var nearby: Bool
    }

    /// - Parameters:
    ///   - role: the viewer's role; the feed shows the other role.
    ///   - courses: the viewer's courses (canonical form).
    ///   - excluded: the viewer itself and everyone liked, passed, matched or unmatched.
    ///   - course: keep only candidates listing this course (canonical form).
    public static func rank(role: ProfileCard.Role, courses: [String], excluded: Set<PublicKey>,
                            candidates: some Sequence<Candidate>, course: String?, limit: Int) -> [Item] {
        let wanted: ProfileCard.Role = role == .student ? .tutor : .student
        let mine = Set(courses)
        var scored: [(item: Item, count: Int, updated: UInt64)] = []
        for c in candidates where c.role == wanted && !excluded.contains(c.key) {
            if let course, !c.courses.contains(course) { continue }
            let shared = c.courses.filter { mine.contains($0) }
            scored.append((Item(key: c.key, sharedCourses: shared, nearby: c.nearby), shared.count, c.updatedAt))
        }
        scored.sort { a, b in
            if a.count != b.count { return a.count > b.count }
            if a.item.nearby != b.item.nearby { return a.item.nearby }
            if a.updated != b.updated { return a.updated > b.updated }
            return a.item.key < b.item.key
        }
        return scored.prefix(max(0, limit)).map(\.item)
    }
}
