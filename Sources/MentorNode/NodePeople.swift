import MentorAPI
import MentorCore

// MARK: People (docs/API.md "People")

extension Node {
    /// The accounts whose cards this node holds, newest card first (ties by ID). Anyone may
    /// ask, as anyone may read a card; for a caller with an account here, its own card and the
    /// people it blocks are left out. People who paused ("pause me", PROTOCOL.md §6.3 field 17)
    /// are left out for everyone: they asked to be hidden from those looking for people, and
    /// `matches` still shows them to those they are matched with. Nothing is written.
    ///
    /// One pass over the card summaries the feed keeps in memory (`FeedIndex`), no replica
    /// read but the caller's blocks.
    func people(_ request: PeopleRequest, _ caller: Requester) throws -> PeopleResult {
        let limit = Int(request.limit ?? 50)
        guard (1...200).contains(limit) else { throw RPCError(.invalidParams, "people: limit must be from 1 to 200") }
        var role: ProfileCard.Role?
        if let r = request.role {
            guard let parsed = ProfileCard.Role(rawValue: r.lowercased()) else {
                throw RPCError(.invalidParams, "people: role must be student or tutor, not \"\(r)\"")
            }
            role = parsed
        }
        let index = feedIndex
        // A course compares as `feed --course` does, without regard to case; one nobody lists
        // matches nobody.
        var courseIDs: Set<Int32>?
        if let c = request.course {
            let wanted = ProfileCard.normalizeCourse(c).lowercased()
            guard !wanted.isEmpty else { throw RPCError(.invalidParams, "people: course is empty") }
            courseIDs = Set(index.courses.names.indices.filter { index.courses.names[$0].lowercased() == wanted }.map { Int32($0) })
        }
        let needle = request.search.map(GameCatalogue.fold).flatMap { $0.isEmpty ? nil : $0 }
        var excluded = Set<PublicKey>()
        if let me = try replica.nodeAccount(uid: caller.uid)?.account {
            excluded.insert(me)
            excluded.formUnion(try replica.blockedAccounts(of: me))
        }
        let found = index.candidates.values.filter { c in
            if c.paused || excluded.contains(c.key) { return false }
            if let role, c.role != role { return false }
            if let courseIDs, !c.courses.contains(where: courseIDs.contains) { return false }
            if let needle {
                let inName = index.names[c.key].map { GameCatalogue.fold($0).contains(needle) } ?? false
                if !inName, !c.courses.contains(where: { GameCatalogue.fold(index.courses.name($0)).contains(needle) }) { return false }
            }
            return true
        }.sorted { a, b in a.updatedAt != b.updatedAt ? a.updatedAt > b.updatedAt : a.key < b.key }
        return PeopleResult(people: found.prefix(limit).map { c in
            PeopleResult.Person(id: c.key.id, name: index.names[c.key], role: c.role?.rawValue,
                                courses: c.courses.map(index.courses.name), updatedAt: Int64(clamping: c.updatedAt))
        }, more: found.count > limit)
    }
}
