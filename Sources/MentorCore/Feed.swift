/// Ranking the feed (pure): tutors for students, students for tutors, by shared courses,
/// then nearby-now, then recency. Courses are small integer IDs (the caller interns the
/// names): comparing integers keeps a feed over tens of thousands of cards well under a
/// millisecond.
public enum Feed {
    public struct Candidate: Sendable, Equatable {
        public var key: PublicKey
        public var role: ProfileCard.Role?
        public var courses: [Int32]
        public var updatedAt: UInt64
        public var nearby: Bool

        public init(key: PublicKey, role: ProfileCard.Role?, courses: [Int32], updatedAt: UInt64, nearby: Bool) {
            self.key = key; self.role = role; self.courses = courses; self.updatedAt = updatedAt; self.nearby = nearby
        }
    }

    struct Scored { var candidate: Candidate; var shared: Int }

    public struct Item: Sendable, Equatable {
        public var key: PublicKey
        public var sharedCourses: [Int32]
        public var nearby: Bool
    }

    /// - Parameters:
    ///   - role: the viewer's role; the feed shows the other role.
    ///   - courses: the viewer's courses (canonical form).
    ///   - excluded: the viewer itself and everyone liked, passed, matched or unmatched.
    ///   - course: keep only candidates listing this course (canonical form).
    public static func rank(role: ProfileCard.Role, courses: [Int32], excluded: Set<PublicKey>,
                            candidates: some Sequence<Candidate>, course: Int32?, limit: Int) -> [Item] {
        let wanted: ProfileCard.Role = role == .student ? .tutor : .student
        let mine = courses
        guard limit > 0 else { return [] }
        // Top-k selection: only the best `limit` are kept (sorted best first), so a feed over
        // many cards costs one pass, not a full sort.
        func better(_ a: Scored, _ b: Scored) -> Bool {
            if a.shared != b.shared { return a.shared > b.shared }
            if a.candidate.nearby != b.candidate.nearby { return a.candidate.nearby }
            if a.candidate.updatedAt != b.candidate.updatedAt { return a.candidate.updatedAt > b.candidate.updatedAt }
            return a.candidate.key < b.candidate.key
        }
        var best: [Scored] = []
        best.reserveCapacity(limit + 1)
        for c in candidates where c.role == wanted && !excluded.contains(c.key) {
            if let course, !c.courses.contains(course) { continue }
            var shared = 0
            for x in c.courses where mine.contains(x) { shared += 1 }
            let s = Scored(candidate: c, shared: shared)
            if best.count == limit, let worst = best.last, !better(s, worst) { continue }
            let at = best.firstIndex { better(s, $0) } ?? best.count
            best.insert(s, at: at)
            if best.count > limit { best.removeLast() }
        }
        return best.map { Item(key: $0.candidate.key, sharedCourses: $0.candidate.courses.filter { mine.contains($0) },
                               nearby: $0.candidate.nearby) }
    }
}
