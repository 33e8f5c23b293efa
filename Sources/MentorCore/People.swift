/// `people`'s selection (pure): the cards' summaries the feed keeps (`Feed.Candidate`) through
/// the filters, newest card first (`updatedAt`, then the key), the first `limit` of them kept in
/// one pass — a bounded, sorted buffer instead of sorting every card that passed (100,000 on a
/// big campus).
public enum People {
    public struct Filter: Sendable, Equatable {
        public var role: ProfileCard.Role?
        /// Course IDs a card must list one of; nil: no course filter (an empty set: nobody).
        public var courses: Set<Int32>?
        /// Text the name or a course must hold, compared folded (`GameCatalogue.fold`: case,
        /// accents and punctuation do not count); nil or empty once folded: no search.
        public var search: String?

        public init(role: ProfileCard.Role? = nil, courses: Set<Int32>? = nil, search: String? = nil) {
            (self.role, self.courses, self.search) = (role, courses, search)
        }
    }

    /// Whether `a` comes before `b`: the newer card first, then the smaller key.
    static func precedes(_ a: Feed.Candidate, _ b: Feed.Candidate) -> Bool {
        a.updatedAt != b.updatedAt ? a.updatedAt > b.updatedAt : a.key < b.key
    }

    /// The first `limit` candidates that pass, in order, and whether more passed. Left out
    /// always: those who paused and those in `excluded`. `courseNames` are the course names by
    /// ID (the interner's list); `name` gives a card's name.
    public static func select(_ candidates: some Sequence<Feed.Candidate>, filter: Filter, excluded: Set<PublicKey>, limit: Int,
                              courseNames: [String], name: (PublicKey) -> String?) -> (people: [Feed.Candidate], more: Bool) {
        let needle = filter.search.map(GameCatalogue.foldedBytes).flatMap { $0.isEmpty ? nil : $0 }
        // The courses the search finds, folded once per request rather than once per card.
        let searchedCourses: Set<Int32> = needle.map { n in
            Set(courseNames.indices.filter { GameCatalogue.contains(GameCatalogue.foldedBytes(courseNames[$0]), n) }.map { Int32($0) })
        } ?? []
        var top: [Feed.Candidate] = []
        top.reserveCapacity(limit + 1)
        var passed = 0
        for c in candidates {
            if c.paused || excluded.contains(c.key) { continue }
            if let role = filter.role, c.role != role { continue }
            if let courses = filter.courses, !c.courses.contains(where: courses.contains) { continue }
            if let needle, !c.courses.contains(where: searchedCourses.contains),
               !(name(c.key).map { GameCatalogue.contains(GameCatalogue.foldedBytes($0), needle) } ?? false) { continue }
            passed += 1
            if top.count == limit, let last = top.last, !precedes(c, last) { continue }
            // Binary search for its place in the buffer, then drop the one pushed past the limit.
            var lo = 0, hi = top.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if precedes(top[mid], c) { lo = mid + 1 } else { hi = mid }
            }
            top.insert(c, at: lo)
            if top.count > limit { top.removeLast() }
        }
        return (top, passed > limit)
    }
}
