import MentorAPI
import MentorCore
import MentorStore

// MARK: Follows (record type 12, PROTOCOL.md §6.5)

extension Node {
    /// Follows `id` (or stops): one public record; following twice, or stopping what is not
    /// followed, is refused and writes nothing.
    func follow(_ request: AccountRequest, _ caller: Requester, following: Bool) throws -> FollowResult {
        let (me, other) = try target(request.id, caller)
        let current = try replica.follows(me, other)
        guard current != following else {
            throw RPCError(.notAllowed, following
                ? "you follow \(other.shortID)… already; `mentormate following` lists whom you follow"
                : "you do not follow \(other.shortID)…; `mentormate following` lists whom you follow")
        }
        if following, cards[other] == nil {
            throw RPCError(.notFound, "\(other.shortID)… has no card on this node yet")
        }
        try write(caller.uid) { w, now throws(RecordError) in try w.follow(other, following: following, at: now) }
        return FollowResult(id: other.id, following: following)
    }

    /// `followers` / `following` of `id` (default: the caller), newest first.
    func followList(_ request: FollowListRequest, _ caller: Requester, followers: Bool) throws -> FollowListResult {
        let key = try request.id.map(resolve) ?? me(caller)
        let list = followers ? try replica.followers(of: key) : try replica.following(of: key)
        return FollowListResult(id: key.id, accounts: list.map {
            FollowListResult.Entry(id: $0.account.id, name: names[$0.account], since: Int64(clamping: $0.since))
        })
    }

    /// The follow counts every card shows.
    func followCounts(_ key: PublicKey) throws -> (followers: Int64, following: Int64) {
        (Int64(try replica.followers(of: key).count), Int64(try replica.following(of: key).count))
    }
}
