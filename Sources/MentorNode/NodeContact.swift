import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// MARK: The contact, sealed to each current match (PROTOCOL.md §7.7)

extension Node {
    /// `profile.show`, with the contact where the caller may read it: their own (kept on this
    /// node), or a current match's (sealed to them). Never for anyone else.
    func profileShowWithContact(_ request: ProfileShowRequest, _ caller: Requester) throws -> Card {
        var card = try profileShow(request, caller)
        let me = try me(caller)
        guard case .exact(let key)? = try? AccountID.parse(card.id) else { return card }
        if key == me {
            card.contact = try replica.contactText(of: me).flatMap { $0.isEmpty ? nil : $0 }
        } else if !isBlocked(key, by: me) {
            card.contact = try replica.pairView(account: me, other: key).contact
        }
        return card
    }

    /// `profile.set`: a `contact` is kept here and sealed to every current match; the other
    /// fields make a card edit as always. Only the contact given: no card edit.
    func profileSetWithContact(_ request: ProfileSetRequest, _ caller: Requester) throws -> Card {
        guard let contact = request.contact else { return try profileSet(request, caller) }
        let text = contact.trimmingCharacters(in: .whitespaces)
        guard text.utf8.count <= ContactPayload.maxTextBytes else {
            throw RPCError(.invalidValue, "the contact is \(text.utf8.count) bytes; at most \(ContactPayload.maxTextBytes) allowed")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw RPCError(.invalidValue, "the contact contains a control character; give one line of text (a phone number, a chat handle)")
        }
        let me = try me(caller)
        guard writers[caller.uid] != nil else { throw try lockedError(caller.uid) }
        var rest = request
        rest.contact = nil
        // The card edit first: a refused field leaves the contact as it was.
        let card = rest.changesNoCardField ? nil : try profileSet(rest, caller)
        try replica.setContactText(text, of: me)
        try sendContact(caller.uid, me: me)
        guard var card else { return try profileShowWithContact(ProfileShowRequest(), caller) }
        card.contact = text.isEmpty ? nil : text
        return card
    }

    /// Seals the account's contact text to each current match that lacks it (its newest
    /// contact to them in the standing match says otherwise), blocked ones left out. Run after
    /// `--contact`, when a match forms, and at unlock.
    func sendContact(_ uid: UInt32, me: PublicKey, only: PublicKey? = nil) throws {
        guard writers[uid] != nil, let text = try replica.contactText(of: me) else { return }
        let blocked = try replica.blockedAccounts(of: me)
        for pair in try replica.pairSummaries(of: me) where pair.matched && !blocked.contains(pair.other) {
            let other = pair.other
            if let only, other != only { continue }
            let entries = try replica.pairEntries(account: me, other: other)
            guard let theirs = PairView.currentLike(of: other, in: entries)?.recordID,
                  let mine = PairView.currentLike(of: me, in: entries)?.recordID else { continue }
            let current = PairView.newestContact(by: me, answers: theirs, mine: mine, in: entries)
            // Nothing sent in this match and nothing to say: no record.
            guard current != text, current != nil || !text.isEmpty else { continue }
            let key = try sealTo(other)
            try write(uid, as: .sealing) { w, now throws(RecordError) in
                try w.contact(to: other, text: text, answers: theirs, mine: mine, key: key, at: now)
            }
        }
    }

    /// `sendContact` where a failure is logged, not thrown (a match formed, an unlock).
    func sendContactLogged(_ uid: UInt32, me: PublicKey, only: PublicKey? = nil) {
        do { try sendContact(uid, me: me, only: only) } catch {
            logger.log(.error, "could not seal the contact to a match", ["uid": "\(uid)", "error": "\(error)"])
        }
    }
}
