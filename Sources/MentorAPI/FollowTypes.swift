/// `follow`, `unfollow`, `followers`, `following` (docs/API.md "Follows").

/// The params of `followers` and `following`: whose (default: the caller's).
public struct FollowListRequest: APIRequest, Equatable {
    public var id: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public init(id: String? = nil) { self.id = id }
}

/// `follow`/`unfollow`: the account and whether the caller follows it now.
public struct FollowResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, following }
    public var id: String
    public var following: Bool
    public init(id: String, following: Bool) { (self.id, self.following) = (id, following) }
}

/// `followers`/`following`: the account asked about and the accounts, newest first.
public struct FollowListResult: APIObject, Equatable {
    public struct Entry: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case id, name, since }
        public var id: String
        public var name: String?
        /// When the follow was written (ms since the Unix epoch).
        public var since: Int64
        public init(id: String, name: String?, since: Int64) { (self.id, self.name, self.since) = (id, name, since) }
    }
    public enum CodingKeys: String, CodingKey { case id, accounts, count }
    public var id: String
    public var accounts: [Entry]
    public var count: Int64
    public init(id: String, accounts: [Entry]) { (self.id, self.accounts, self.count) = (id, accounts, Int64(accounts.count)) }
}
