import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// MARK: Blocks (PROTOCOL.md §7.6)

extension Node {
    /// Blocks `id`: a note sealed to the account itself (so its other devices learn it and
    /// nobody else does), then — if the two are matched — an ordinary unmatch, and a standing
    /// like of theirs is withdrawn (so no new match can form). The other side learns what an
    /// unmatch (or an undone like) tells it, nothing more.
    func block(_ request: AccountRequest, _ caller: Requester) throws -> AccountResult {
        let (me, other) = try target(request.id, caller)
        guard try !replica.blockedAccounts(of: me).contains(other) else {
            throw RPCError(.notAllowed, "you already block \(other.shortID)…; `mentormate blocked` lists whom you block")
        }
        try noteBlock(caller, me: me, other: other, blocked: true)
        let view = try replica.pairView(account: me, other: other)
        if view.matched {
            try endMatch(caller.uid, me: me, other: other)
        } else if view.iLike {
            try withdrawLike(caller.uid, me: me, other: other)
        }
        logger.info("blocked", ["uid": "\(caller.uid)", "other": other.shortID])
        return AccountResult(id: other.id)
    }

    /// Ends a block: the person may appear in the feed again. Nothing is re-matched.
    func unblock(_ request: AccountRequest, _ caller: Requester) throws -> AccountResult {
        let (me, other) = try target(request.id, caller)
        guard try replica.blockedAccounts(of: me).contains(other) else {
            throw RPCError(.notAllowed, "you do not block \(other.shortID)…; `mentormate blocked` lists whom you block")
        }
        try noteBlock(caller, me: me, other: other, blocked: false)
        return AccountResult(id: other.id)
    }

    func blockedList(_ caller: Requester) throws -> BlockedResult {
        let me = try me(caller)
        return BlockedResult(blocked: try replica.blocks(of: me).map { b in
            BlockedResult.Entry(id: b.target.id, name: names[b.target], since: Int64(clamping: b.at))
        })
    }

    /// A block is a note: it needs the account's encryption key (every account made since
    /// devices exist has one).
    func noteBlock(_ caller: Requester, me: PublicKey, other: PublicKey, blocked: Bool) throws {
        guard replica.sealingKey(for: me) != nil else {
            throw RPCError(.notAllowed, "blocking needs your account's encryption key, which this node has not received yet; wait for it to sync, then try again")
        }
        try write(caller.uid, as: .sealing) { w, now throws(RecordError) in
            try w.note(NotePayload(target: other, blocked: blocked), at: now)
        }
    }

    /// Whether `other` is blocked by `account` (false when it cannot be read: a failed read
    /// must not hide an unrelated person).
    func isBlocked(_ other: PublicKey, by account: PublicKey) -> Bool {
        (try? replica.blockedAccounts(of: account).contains(other)) ?? false
    }

    /// Writes the unmatch of the match of the two likes that stand (PROTOCOL.md §8.7).
    func endMatch(_ uid: UInt32, me: PublicKey, other: PublicKey) throws {
        let seen = try replica.contiguousSeq(of: other)
        let key = try sealTo(other)
        let entries = try replica.pairEntries(account: me, other: other)
        let theirs = PairView.currentLike(of: other, in: entries)?.recordID, mine = PairView.currentLike(of: me, in: entries)?.recordID
        try write(uid, as: .sealing) { w, now throws(RecordError) in
            try w.unmatch(other, peerSeq: seen, answers: theirs, mine: mine, to: key, at: now)
        }
    }

    /// Withdraws this account's standing like of `other` (as `undo` does).
    func withdrawLike(_ uid: UInt32, me: PublicKey, other: PublicKey) throws {
        let seen = try replica.contiguousSeq(of: other)
        let key = try sealTo(other)
        let clock = PairView.likeClock(of: me, in: try replica.pairEntries(account: me, other: other))
        try write(uid, as: .sealing) { w, now throws(RecordError) in
            try w.like(other, liked: false, peerSeq: seen, to: key, clock: clock, at: now)
        }
    }
}
