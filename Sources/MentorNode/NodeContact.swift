import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// MARK: The contact, sealed to each current match (PROTOCOL.md §7.7)

extension Node {
    /// `profile.show`, with the contact where the caller may read it: their own (the setting
    /// `contact`), or a current match's (sealed to them). Never for anyone else.
    func profileShowWithContact(_ request: ProfileShowRequest, _ caller: Requester) throws -> Card {
        var card = try profileShow(request, caller)
        guard let me = try replica.nodeAccount(uid: caller.uid)?.account,
              case .exact(let key)? = try? AccountID.parse(card.id) else { return card }
        if key == me {
            card.contact = try replica.accountSettings(of: me)[Self.contactKey]
        } else if !isBlocked(key, by: me) {
            card.contact = try replica.pairView(account: me, other: key).contact
        }
        return card
    }

    /// `profile.set`: `contact` is the setting `contact` (checked, stored, and sealed to every
    /// current match by its hook; "" unsets it); the other fields make a card edit as always.
    /// The contact is checked before the card is written: a refused one changes nothing.
    func profileSetWithContact(_ request: ProfileSetRequest, _ caller: Requester) throws -> Card {
        guard let contact = request.contact else { return try profileSet(request, caller) }
        let value: SettingValue
        if contact.trimmingCharacters(in: .whitespaces).isEmpty {
            value = .unset
        } else {
            value = .set(try settingsRegistry.named(Self.contactKey).validate(contact))
        }
        _ = try unlockedAccount(caller)
        var rest = request
        rest.contact = nil
        let card = rest.changesNoCardField ? nil : try profileSet(rest, caller)
        let info = try settingsSet(SettingsSetRequest(key: Self.contactKey, value: value), caller)
        guard var card else { return try profileShowWithContact(ProfileShowRequest(), caller) }
        card.contact = info.value
        return card
    }

    static let contactKey = "contact"

    /// Seals the account's contact text to each current match that lacks it (its newest
    /// contact to them in the standing match says otherwise), blocked ones left out. Run after
    /// `--contact`, when a match forms, and at unlock.
    func sendContact(_ uid: UInt32, me: PublicKey, only: PublicKey? = nil) throws {
        guard writers[uid] != nil else { return }
        // Unset: "" (cleared) for the matches that have one, nothing for the others.
        let text = try replica.accountSettings(of: me)[Self.contactKey] ?? ""
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
