import MentorAPI
import MentorCore

// MARK: People (docs/API.md "People")

extension Node {
    /// The accounts whose cards this node holds, newest card first (ties by key). Anyone may
    /// ask, as anyone may read a card; for a caller with an account here, its own card and the
    /// people it blocks are left out. People who paused ("pause me", PROTOCOL.md §6.3 field 17)
    /// are left out for everyone: they asked to be hidden from those looking for people, and
    /// `matches` still shows them to those they are matched with. Nothing is written.
    ///
    /// One pass over the card summaries the feed keeps in memory (`FeedIndex`, through
    /// `People.select`), no replica read but the caller's blocks.
    func people(_ request: PeopleRequest, _ caller: Requester) throws -> PeopleResult {
        let limit = Int(request.limit ?? 50)
        guard (1...200).contains(limit) else { throw RPCError(.invalidParams, "people: limit must be from 1 to 200") }
        var filter = People.Filter(search: request.search)
        if let r = request.role {
            guard let role = ProfileCard.Role(rawValue: r.lowercased()) else {
                throw RPCError(.invalidParams, "people: role must be student or tutor, not \"\(r)\"")
            }
            filter.role = role
        }
        let index = feedIndex
        let courseNames = index.courses.names
        // A course compares as `feed --course` does, without regard to case; one nobody lists
        // matches nobody.
        if let c = request.course {
            let wanted = ProfileCard.normalizeCourse(c).lowercased()
            guard !wanted.isEmpty else { throw RPCError(.invalidParams, "people: course is empty") }
            filter.courses = Set(courseNames.indices.filter { courseNames[$0].lowercased() == wanted }.map { Int32($0) })
        }
        var excluded: Set<PublicKey>
        if let me = try replica.nodeAccount(uid: caller.uid)?.account {
            excluded = try hiddenAccounts(of: me)
            excluded.insert(me)
        } else {
            excluded = campusHidden(viewer: nil)
        }
        let (people, more) = People.select(index.candidates.values, filter: filter, excluded: excluded, limit: limit,
                                           courseNames: courseNames, name: { index.names[$0] })
        return PeopleResult(people: people.map { c in
            PeopleResult.Person(id: c.key.id, name: index.names[c.key], role: c.role?.rawValue,
                                courses: c.courses.map(index.courses.name), updatedAt: Int64(clamping: c.updatedAt))
        }, more: more)
    }
}
