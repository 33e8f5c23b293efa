/// Campus membership (issue 19 item 5; docs/API.md "Campus membership", PROTOCOL.md §6.8).

/// A card's current membership of the node's campus.
public struct CardMember: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case domain, expires }
    /// The mail domain the person proved an address at (never the address).
    public var domain: String
    /// When the certificate stops counting, ms since the epoch.
    public var expires: Int64
    public init(domain: String, expires: Int64) { (self.domain, self.expires) = (domain, expires) }
}

/// `status.campus`: the campus CA this node trusts and what it does with it.
public struct StatusCampus: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case caKey, ca, requireMembership, members, declinedRecords }
    /// `campus_ca_key` ("mmca1…").
    public var caKey: String
    /// `campus_ca`: where `mentormate member request` reaches the CA (host:port); null when not set.
    public var ca: String?
    public var requireMembership: Bool
    /// Accounts this node holds a current certificate of the campus for.
    public var members: Int64
    /// Records of non-members not stored since the daemon started (`require_membership`).
    public var declinedRecords: Int64
    public init(caKey: String, ca: String?, requireMembership: Bool, members: Int64, declinedRecords: Int64) {
        (self.caKey, self.ca, self.requireMembership, self.members, self.declinedRecords) = (caKey, ca, requireMembership, members, declinedRecords)
    }
}

/// `membership.set`: publishes a membership certificate (as `mentormate-ca` gives it, hex) in
/// the caller's card (field 18). The answer is the caller's card.
public struct MembershipSetRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case certificate }
    public var certificate: String
    public init(certificate: String) { self.certificate = certificate }
}
