import MentorCore
import MentorStore

/// Names interned as small integers (courses, genders), so the feed compares integers.
struct Interner {
    private var ids: [String: Int32] = [:]
    private(set) var names: [String] = []

    mutating func id(_ name: String) -> Int32 {
        if let id = ids[name] { return id }
        let id = Int32(names.count)
        ids[name] = id
        names.append(name)
        return id
    }

    /// The ID of a name seen before; nil for one no card lists.
    func lookup(_ name: String) -> Int32? { ids[name] }

    func name(_ id: Int32) -> String { names.indices.contains(Int(id)) ? names[Int(id)] : "?" }
}

/// The feed's state, on the node's queue: a summary of every card (`Feed.Candidate`), its
/// author's name, and for each local account that asked for a feed its `Feed.Ranking`, kept up
/// to date card by card — so a feed request walks from the best candidate and stops after its
/// limit, instead of scoring 100,000 cards each time (docs/ARCHITECTURE.md, "The feed").
struct FeedIndex {
    private(set) var candidates: [PublicKey: Feed.Candidate] = [:]
    private(set) var names: [PublicKey: String] = [:]
    /// Rankings by viewer, built on a viewer's first feed request.
    private var rankings: [PublicKey: Feed.Ranking] = [:]
    var courses = Interner()
    var genders = Interner()

    mutating func removeAll() {
        candidates = [:]
        names = [:]
        rankings = [:]
    }

    /// The summary of a merged card.
    mutating func candidate(_ state: CardState, nearby: Bool) -> Feed.Candidate {
        let card = state.card
        var c = Feed.Candidate(key: state.author, role: card.role, courses: (card.courses ?? []).map { courses.id($0) },
                               updatedAt: state.updatedAt, nearby: nearby)
        c.slots = card.slots ?? .none
        c.wage = card.wage
        c.budget = card.budget
        c.gender = card.gender.flatMap { $0.isEmpty ? nil : genders.id($0) }
        c.age = card.age ?? nil
        c.sign = card.sign ?? nil
        if let p = card.preferences {
            c.preferredGenders = p.genders.map { genders.id($0) }
            c.minOverlapHours = p.minOverlapHours
            c.maxWage = p.maxWage
            c.minBudget = p.minBudget
        }
        c.paused = card.paused ?? false
        return c
    }

    /// A card was read (again): its summary replaced, every ranking told.
    mutating func index(_ state: CardState, nearby: Bool) {
        let c = candidate(state, nearby: nearby)
        let old = candidates.updateValue(c, forKey: c.key)
        names[c.key] = state.card.name
        guard old != c else { return }
        // A viewer's own card changed: its scores all change with it; ranked again when asked.
        rankings[c.key] = nil
        for viewer in rankings.keys { rankings[viewer]?.update(c) }
    }

    mutating func setNearby(_ key: PublicKey, _ nearby: Bool) {
        guard var c = candidates[key], c.nearby != nearby else { return }
        c.nearby = nearby
        candidates[key] = c
        for viewer in rankings.keys where viewer != key { rankings[viewer]?.update(c) }
    }

    /// The viewer's ranking, built now if it was not kept.
    mutating func ranking(of viewer: PublicKey) -> Feed.Ranking? {
        if let r = rankings[viewer] { return r }
        guard let me = candidates[viewer], me.role != nil else { return nil }
        let r = Feed.Ranking(viewer: me, candidates: candidates.values)
        rankings[viewer] = r
        return r
    }
}
