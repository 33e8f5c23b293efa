import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

/// Campus membership through the API (issue 19 item 5; docs/API.md "Campus membership"):
/// `membership.set`, the `member` of cards, `status.campus`, and what is left out of lists.
extension Node {
    /// A card as the API shows it, with its current membership of this node's campus.
    func shownCard(_ state: CardState) -> Card {
        var card = apiCard(state)
        card.member = campus.member(state.author).map { CardMember(domain: $0.domain, expires: Int64(clamping: $0.expires)) }
        return card
    }

    /// The accounts left out of what `me` is shown: those it blocks and, with
    /// `require_membership`, the non-members this node holds (never `me`).
    func hiddenAccounts(of me: PublicKey) throws -> Set<PublicKey> {
        try replica.blockedAccounts(of: me).union(campusHidden(viewer: me))
    }

    /// With `require_membership`, the non-members to leave out of what `viewer` (nil: a user
    /// without an account here) is shown. On `queue`.
    func campusHidden(viewer: PublicKey?) -> Set<PublicKey> {
        campus.hiddenAccounts(viewer: viewer, locals: localKeys)
    }

    /// `membership.set`: checks the certificate — its form, the CA's signature, that it names the
    /// caller's account, that it is current, and (when this node trusts a campus CA) that this
    /// CA signed it — and publishes it in the caller's card (field 18).
    func membershipSet(_ request: MembershipSetRequest, _ caller: Requester) throws -> Card {
        let me = try me(caller)
        let text = request.certificate.filter { !$0.isWhitespace }
        guard let bytes = Hex.decode(text), !bytes.isEmpty else {
            throw RPCError(.invalidValue, "the certificate is not hex; give it as `mentormate-ca` printed it")
        }
        let certificate: MembershipCertificate
        do { certificate = try MembershipCertificate(encoded: bytes) } catch {
            throw RPCError(.invalidValue, "this is not a membership certificate: \(error.message)")
        }
        guard certificate.hasValidSignature else {
            throw RPCError(.invalidValue, "the certificate's signature does not verify: it was altered or is not from a CA; ask the campus CA again")
        }
        guard certificate.account == me else {
            throw RPCError(.notAllowed, "the certificate is for \(certificate.account.shortID)…, not your account \(me.shortID)…; ask for one with your own account")
        }
        let now = config.now()
        guard certificate.isCurrent(at: now) else {
            throw RPCError(.invalidValue, certificate.expires <= now
                ? "the certificate expired; ask the campus CA for a new one (`mentormate member request ADDRESS`)"
                : "the certificate is dated in the future (this machine's clock may be behind); check the clock")
        }
        if let ca = campus.settings.caKey, certificate.ca != ca {
            throw RPCError(.notAllowed, "the certificate is from the CA \(MembershipCertificate.printKey(certificate.ca).prefix(20))…, but this node trusts \(MembershipCertificate.printKey(ca).prefix(20))… (campus_ca_key); ask this campus's CA")
        }
        var card = ProfileCard()
        card.membership = certificate
        let seen = try replica.cardClock(of: me)
        try write(caller.uid) { w, now throws(RecordError) in try w.profile(card, clock: seen, at: now) }
        logger.info("membership certificate published", ["uid": "\(caller.uid)", "domain": certificate.domain])
        guard let state = try replica.card(of: me) else { throw RPCError(.internalError, "card missing after write") }
        return shownCard(state)
    }

    /// `status.campus`, when this node trusts a campus CA.
    func statusCampus() -> StatusCampus? {
        guard let key = campus.settings.caKey else { return nil }
        let counts = campus.counts
        return StatusCampus(caKey: MembershipCertificate.printKey(key), ca: campus.settings.caAddress,
                            requireMembership: campus.settings.requireMembership,
                            members: Int64(counts.members), declinedRecords: Int64(counts.declinedRecords))
    }
}
