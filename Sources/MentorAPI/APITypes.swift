/// The request and result types of the API's methods (docs/API.md). Each struct's coding keys
/// are the JSON names on the wire: nowhere else spells them.

// MARK: - Requests

/// The params of a method that takes none.
public struct NoParams: APIRequest, Equatable {
    public enum CodingKeys: CodingKey, CaseIterable {}
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: CodingKeys.self) }
}

public struct SignupRequest: APIRequest, Equatable {
    public var email: String
    public var name: String
    /// "student" or "tutor" (the daemon says so when it is neither).
    public var role: String
    public var passphrase: String?
    /// YYYY-MM-DD, kept private on the node; required where the node sets `min_age`.
    public var birthdate: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case email, name, role, passphrase, birthdate }

    public init(email: String, name: String, role: String, passphrase: String? = nil, birthdate: String? = nil) {
        (self.email, self.name, self.role, self.passphrase, self.birthdate) = (email, name, role, passphrase, birthdate)
    }
}

public struct LoginRequest: APIRequest, Equatable {
    public var passphrase: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case passphrase }
    public init(passphrase: String? = nil) { self.passphrase = passphrase }
}

public struct ProfileShowRequest: APIRequest, Equatable {
    /// Default: the caller.
    public var id: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public init(id: String? = nil) { self.id = id }
}

public struct ProfileSetRequest: APIRequest, Equatable {
    /// `photo`: absent changes nothing, null removes every photo, a hash makes it the only one.
    public enum Photo: Codable, Sendable, Equatable, DecodesExplicitNull {
        case remove
        case set(hash: String)

        public init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            self = c.decodeNil() ? .remove : .set(hash: try c.decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .remove: try c.encodeNil()
            case .set(let hash): try c.encode(hash)
            }
        }
    }

    /// Fields that are nil (absent or null) change nothing.
    public var name: String?
    public var bio: String?
    public var courses: [String]?
    public var wage: Int64?
    public var budget: Int64?
    public var availability: String?
    public var photo: Photo?
    /// Weekly slots as people type them ("Mon 14-17, Wed 9:30-12"); "" clears them.
    public var slots: String?
    /// "" clears the gender.
    public var gender: String?
    /// [] clears them.
    public var languages: [String]?
    /// "" clears the area.
    public var area: String?
    /// YYYY-MM-DD, kept private on the node (the card publishes the age); "" forgets it.
    public var birthdate: String?
    /// The whole preferences register: {} clears every preference.
    public var preferences: CardPreferences?
    /// Sealed to each current match, never on the card (≤ 200 bytes; "" clears it).
    public var contact: String?
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case name, bio, courses, wage, budget, availability, photo
        case slots, gender, languages, area, birthdate, preferences
        case contact
    }

    public init(name: String? = nil, bio: String? = nil, courses: [String]? = nil, wage: Int64? = nil, budget: Int64? = nil,
                availability: String? = nil, photo: Photo? = nil) {
        (self.name, self.bio, self.courses, self.wage, self.budget, self.availability, self.photo)
            = (name, bio, courses, wage, budget, availability, photo)
    }

    /// Whether the request changes anything (profile.set with no field is refused).
    public var isEmpty: Bool { changesNoCardField && contact == nil }

    /// Whether the request changes no field of the card (it may change the contact).
    public var changesNoCardField: Bool {
        name == nil && bio == nil && courses == nil && wage == nil && budget == nil && availability == nil && photo == nil
            && slots == nil && gender == nil && languages == nil && area == nil && birthdate == nil && preferences == nil
    }
}

public struct BlobPutRequest: APIRequest, Equatable {
    /// Base64 (at most 512 KiB decoded).
    public var chunk: String
    /// The token the first chunk's answer gave; nil for the first chunk.
    public var upload: String?
    public var done: Bool
    public enum CodingKeys: String, CodingKey, CaseIterable { case chunk, upload, done }

    public init(chunk: String, upload: String? = nil, done: Bool) {
        (self.chunk, self.upload, self.done) = (chunk, upload, done)
    }
}

public struct BlobGetRequest: APIRequest, Equatable {
    public var hash: String
    public var offset: Int64?
    public var length: Int64?
    public enum CodingKeys: String, CodingKey, CaseIterable { case hash, offset, length }

    public init(hash: String, offset: Int64? = nil, length: Int64? = nil) {
        (self.hash, self.offset, self.length) = (hash, offset, length)
    }
}

public struct FeedRequest: APIRequest, Equatable {
    public var course: String?
    /// 1…100, default 20.
    public var limit: Int64?
    /// `DAY` or `DAY-HH[:MM]`: a slot on that day (covering that time).
    public var available: String?
    public var maxWage: Int64?
    public var minBudget: Int64?
    /// true: only accounts on nodes linked to this one now.
    public var nearby: Bool?
    public var gender: String?
    public var minAge: Int64?
    public var maxAge: Int64?
    public var minScore: Int64?
    /// true: the account's default filters (settings `feed.*`) are not applied.
    public var noDefaults: Bool?
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case course, limit, available, maxWage, minBudget, nearby, gender, minAge, maxAge, minScore, noDefaults
    }

    public init(course: String? = nil, limit: Int64? = nil) {
        (self.course, self.limit) = (course, limit)
    }
}

/// The params of `like`, `pass`, `undo` and `unmatch`: the other account.
public struct AccountRequest: APIRequest, Equatable {
    public var id: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public init(id: String) { self.id = id }
}

public struct ChatSendRequest: APIRequest, Equatable {
    public var id: String
    public var text: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case id, text }
    public init(id: String, text: String) { (self.id, self.text) = (id, text) }
}

public struct ChatHistoryRequest: APIRequest, Equatable {
    public var id: String
    /// The latest `limit` messages, default 50.
    public var limit: Int64?
    public enum CodingKeys: String, CodingKey, CaseIterable { case id, limit }
    public init(id: String, limit: Int64? = nil) { (self.id, self.limit) = (id, limit) }
}

public struct SubscribeRequest: APIRequest, Equatable {
    /// Default: all of `SubscribeRequest.allEvents`.
    public var events: [String]?
    public enum CodingKeys: String, CodingKey, CaseIterable { case events }
    public init(events: [String]? = nil) { self.events = events }

    public static let allEvents = Set(APIEvent.allCases.map(\.rawValue))
}

// MARK: - Results

/// A result object: Codable, with its coding keys public, so the client can read an answer field
/// by field (`Fields`) with the names the type itself encodes.
public protocol APIObject: Codable, Sendable {
    associatedtype CodingKeys: CodingKey
}

/// A result object as the daemon sent it, read with its type's keys. Lenient as the client always
/// was: a field that is missing reads as nil (a daemon of another version, a test's fake).
public struct Fields<Object: APIObject>: Sendable {
    public let json: JSON

    public init(_ json: JSON) {
        self.json = json
    }

    public subscript(_ key: Object.CodingKeys) -> JSON? { json[key.stringValue] }

    /// A nested object field, read with its own type's keys; nil unless it is an object.
    public func object<T: APIObject>(_ key: Object.CodingKeys, as type: T.Type) -> Fields<T>? {
        guard case .object? = json[key.stringValue] else { return nil }
        return Fields<T>(json[key.stringValue] ?? .null)
    }

    /// A list of objects, each read with its type's keys (elements that are not objects are skipped).
    public func objects<T: APIObject>(_ key: Object.CodingKeys, as type: T.Type) -> [Fields<T>] {
        (json[key.stringValue]?.arrayValue ?? []).compactMap { if case .object = $0 { Fields<T>($0) } else { nil } }
    }

    /// The same object read as another type that shares its fields (a feed entry as a card).
    public func viewed<T: APIObject>(as type: T.Type) -> Fields<T> { Fields<T>(json) }

    /// The whole answer as its type (strict: every field must be there).
    public func decoded() throws -> Object { try JSONValueDecoder().decode(Object.self, from: json) }
}

public struct AccountInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey {
        case id, name, email, role, `protected`, unlocked, device, deviceLabel = "device_label", deviceState = "device_state", accountKey = "account_key"
    }
    public var id: String
    public var name: String?
    public var email: String
    public var role: String?
    public var `protected`: Bool
    public var unlocked: Bool
    /// This machine's device (its ID, label and state: "current", "revoked", "expired" or
    /// "unconfirmed" while its certificate has not arrived); nil for an account made before
    /// devices existed, or while locked.
    public var device: String?
    public var deviceLabel: String?
    public var deviceState: String?
    /// Whether this node holds the account key (it can link and revoke devices, and export).
    public var accountKey: Bool

    public init(id: String, name: String?, email: String, role: String?, protected: Bool, unlocked: Bool,
                device: String? = nil, deviceLabel: String? = nil, deviceState: String? = nil, accountKey: Bool = false) {
        (self.id, self.name, self.email, self.role, self.protected, self.unlocked) = (id, name, email, role, protected, unlocked)
        (self.device, self.deviceLabel, self.deviceState, self.accountKey) = (device, deviceLabel, deviceState, accountKey)
    }
}

public struct LogoutRequest: APIRequest, Equatable {
    /// Also revoke this device and delete its key from the node (a shared lab machine).
    public var forget: Bool?
    public enum CodingKeys: String, CodingKey, CaseIterable { case forget }
    public init(forget: Bool? = nil) { self.forget = forget }
}

/// One device key of the caller's account.
public struct DeviceInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, label, created, expires, state, lastSeen = "last_seen", this }
    /// The device key's fingerprint: 16 hex digits (any unique prefix of 4 or more is accepted).
    public var id: String
    public var label: String
    /// ms since the Unix epoch.
    public var created: Int64
    public var expires: Int64?
    /// "current", "revoked" or "expired".
    public var state: String
    /// The newest of its records this node holds (ms); nil: none yet.
    public var lastSeen: Int64?
    /// The device of the node answering.
    public var this: Bool

    public init(id: String, label: String, created: Int64, expires: Int64?, state: String, lastSeen: Int64?, this: Bool) {
        (self.id, self.label, self.created, self.expires, self.state, self.lastSeen, self.this) = (id, label, created, expires, state, lastSeen, this)
    }
}

public struct DevicesResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case devices, accountKey = "account_key" }
    public var devices: [DeviceInfo]
    /// Whether this node holds the account key (it can approve and revoke).
    public var accountKey: Bool
    public init(devices: [DeviceInfo], accountKey: Bool) { (self.devices, self.accountKey) = (devices, accountKey) }
}

public struct DeviceRequest: APIRequest, Equatable {
    public var id: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public init(id: String) { self.id = id }
}

public struct LinkRequest: APIRequest, Equatable {
    /// What to call this machine (default: its host name).
    public var label: String?
    /// The certificate expires this many seconds after approval (a shared lab machine).
    public var expires: Int64?
    /// Protects this machine's device key on disk.
    public var passphrase: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case label, expires, passphrase }
    public init(label: String? = nil, expires: Int64? = nil, passphrase: String? = nil) {
        (self.label, self.expires, self.passphrase) = (label, expires, passphrase)
    }
}

public struct LinkStart: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case code, device, label, until }
    /// The one-time code to type on a machine that has the account (`device approve CODE`).
    public var code: String
    /// This machine's new device key's fingerprint (the approver is shown it).
    public var device: String
    public var label: String
    /// When the code stops working (ms).
    public var until: Int64
    public init(code: String, device: String, label: String, until: Int64) {
        (self.code, self.device, self.label, self.until) = (code, device, label, until)
    }
}

public struct LinkStatus: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case state, account, device }
    /// "none", "waiting", "linked" or "expired".
    public var state: String
    public var account: String?
    public var device: String?
    public init(state: String, account: String? = nil, device: String? = nil) { (self.state, self.account, self.device) = (state, account, device) }
}

public struct ApproveRequest: APIRequest, Equatable {
    public var code: String
    /// false or absent: only show what the code names; true: certify it.
    public var confirm: Bool?
    public enum CodingKeys: String, CodingKey, CaseIterable { case code, confirm }
    public init(code: String, confirm: Bool? = nil) { (self.code, self.confirm) = (code, confirm) }
}

public struct ApproveResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case device, label, expires, approved }
    public var device: String
    public var label: String
    /// How long the certificate lasts, in seconds (nil: no expiry).
    public var expires: Int64?
    public var approved: Bool
    public init(device: String, label: String, expires: Int64?, approved: Bool) {
        (self.device, self.label, self.expires, self.approved) = (device, label, expires, approved)
    }
}

public struct AccountKeyExport: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, key }
    public var id: String
    /// The account key's 32-byte seed, base64: the client writes it to a passphrase-protected
    /// file and never shows it.
    public var key: String
    public init(id: String, key: String) { (self.id, self.key) = (id, key) }
}

public struct ImportRequest: APIRequest, Equatable {
    /// The account key's 32-byte seed, base64 (read by the client from an export file).
    public var key: String
    public var email: String
    public var passphrase: String?
    public var label: String?
    public enum CodingKeys: String, CodingKey, CaseIterable { case key, email, passphrase, label }
    public init(key: String, email: String, passphrase: String? = nil, label: String? = nil) {
        (self.key, self.email, self.passphrase, self.label) = (key, email, passphrase, label)
    }
}

public struct PhotoInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case hash, size, type }
    public var hash: String
    public var size: Int64
    public var type: String
    public init(hash: String, size: Int64, type: String) { (self.hash, self.size, self.type) = (hash, size, type) }
}

/// A profile as this node sees it; absent fields are null, `courses` is always a list.
public struct Card: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey {
        case id, name, role, bio, courses, wage, budget, availability, photo, conflicts, forked, updatedAt
        case slots, gender, languages, area, age, sign, preferences, paused
        case score, compatibility, matches, pendingLikes
        case followers, following, posts
        case hosted, attended
        case photos
        case contact
        case member
    }
    public var id: String
    public var name: String?
    public var role: String?
    public var bio: String?
    public var courses: [String]
    public var wage: Int64?
    public var budget: Int64?
    public var availability: String?
    /// The main photo (the first of `photos`), kept for clients that know one photo.
    public var photo: PhotoInfo?
    /// Every photo of the card, main one first (0 to 6); null from a daemon before lists.
    public var photos: [PhotoInfo]?
    /// Per field, the values of concurrent edits that lost the tie-break, in the field's type.
    public var conflicts: [String: [JSON]]
    public var forked: Bool
    public var updatedAt: Int64
    /// Canonical weekly slots ("Mon 14-17, Wed 9:30-12"); null when none.
    public var slots: String?
    public var gender: String?
    public var languages: [String]?
    public var area: String?
    public var age: Int64?
    /// Published only by those who opted in ("Aries" … "Pisces").
    public var sign: String?
    public var preferences: CardPreferences?
    public var paused: Bool?
    /// Another's card: the compatibility score for the caller (0–100) and its parts.
    public var score: Int64?
    public var compatibility: [CompatibilityPart]?
    /// The caller's own card: current matches, and likes received not (yet) answered — a count.
    public var matches: Int64?
    public var pendingLikes: Int64?
    /// How many follow this account, and how many it follows (the same on every node once synced).
    public var followers: Int64?
    public var following: Int64?
    /// How many posts the account has (live ones this node holds).
    public var posts: Int64?
    /// `profile.show`: the meetups the account hosts and those where it holds a seat, latest
    /// first (a node keeps meetups until a week after they end); null elsewhere.
    public var hosted: [MeetupInfo]?
    public var attended: [MeetupInfo]?
    /// Your own contact, or a current match's (sealed to you); null otherwise.
    public var contact: String?
    /// A current membership of this node's campus (`campus_ca_key`), from the certificate the
    /// card carries; null when there is none, it expired, or the node trusts no campus CA.
    public var member: CardMember?

    public init(id: String, name: String? = nil, role: String? = nil, bio: String? = nil, courses: [String] = [],
                wage: Int64? = nil, budget: Int64? = nil, availability: String? = nil, photo: PhotoInfo? = nil,
                conflicts: [String: [JSON]] = [:], forked: Bool = false, updatedAt: Int64) {
        (self.id, self.name, self.role, self.bio, self.courses) = (id, name, role, bio, courses)
        (self.wage, self.budget, self.availability, self.photo) = (wage, budget, availability, photo)
        (self.conflicts, self.forked, self.updatedAt) = (conflicts, forked, updatedAt)
    }
}

/// What a person looks for in the other side; absent parts are not stated.
public struct CardPreferences: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case genders, overlapHours, maxWage, minBudget }
    public var genders: [String]?
    public var overlapHours: Int64?
    public var maxWage: Int64?
    public var minBudget: Int64?
    public init(genders: [String]? = nil, overlapHours: Int64? = nil, maxWage: Int64? = nil, minBudget: Int64? = nil) {
        (self.genders, self.overlapHours, self.maxWage, self.minBudget) = (genders, overlapHours, maxWage, minBudget)
    }
}

/// One part of a compatibility score: `points` of at most `max`, and why.
public struct CompatibilityPart: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case part, points, max, reason }
    /// courses, availability, money, preferences, nearby, sign
    public var part: String
    public var points: Double
    public var max: Int64
    public var reason: String
    public init(part: String, points: Double, max: Int64, reason: String) {
        (self.part, self.points, self.max, self.reason) = (part, points, max, reason)
    }
}

/// A feed entry: the card's fields and, in the same object, why it is shown.
public struct FeedCard: APIObject, Equatable {
    public var card: Card
    public var sharedCourses: [String]
    public var nearby: Bool
    public enum CodingKeys: String, CodingKey { case sharedCourses, nearby }

    public init(card: Card, sharedCourses: [String], nearby: Bool) {
        (self.card, self.sharedCourses, self.nearby) = (card, sharedCourses, nearby)
    }

    public init(from decoder: any Decoder) throws {
        card = try Card(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sharedCourses = try c.decode([String].self, forKey: .sharedCourses)
        nearby = try c.decode(Bool.self, forKey: .nearby)
    }

    public func encode(to encoder: any Encoder) throws {
        try card.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sharedCourses, forKey: .sharedCourses)
        try c.encode(nearby, forKey: .nearby)
    }
}

public struct FeedResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case cards }
    public var cards: [FeedCard]
    public init(cards: [FeedCard]) { self.cards = cards }
}

/// `blob.put`'s answer: the upload token while chunks follow, the blob once `done`.
public enum BlobPutResult: APIObject, Equatable {
    case more(upload: String)
    case stored(PhotoInfo)
    public enum CodingKeys: String, CodingKey { case upload }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let upload = try c.decodeIfPresent(String.self, forKey: .upload) { self = .more(upload: upload) }
        else { self = .stored(try PhotoInfo(from: decoder)) }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .more(let upload):
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(upload, forKey: .upload)
        case .stored(let blob): try blob.encode(to: encoder)
        }
    }
}

public struct BlobGetResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case data, size, type }
    /// Base64 of the slice asked for.
    public var data: String
    /// The whole blob's size.
    public var size: Int64
    public var type: String
    public init(data: String, size: Int64, type: String) { (self.data, self.size, self.type) = (data, size, type) }
}

public struct LikeResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, matched }
    public var id: String
    public var matched: Bool
    public init(id: String, matched: Bool) { (self.id, self.matched) = (id, matched) }
}

/// The result of `pass` and `unmatch`: the other account's full ID.
public struct AccountResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id }
    public var id: String
    public init(id: String) { self.id = id }
}

public struct UndoResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, undone }
    public enum Undone: String, Codable, Sendable { case like, pass }
    public var id: String
    public var undone: Undone
    public init(id: String, undone: Undone) { (self.id, self.undone) = (id, undone) }
}

public struct Message: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, from, text, sentAt, mine }
    public var id: String
    public var from: String
    public var text: String
    public var sentAt: Int64
    public var mine: Bool
    public init(id: String, from: String, text: String, sentAt: Int64, mine: Bool) {
        (self.id, self.from, self.text, self.sentAt, self.mine) = (id, from, text, sentAt, mine)
    }
}

public struct MatchSummary: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, name, messages, lastMessage }
    public var id: String
    public var name: String?
    public var messages: Int64
    public var lastMessage: Message?
    public init(id: String, name: String?, messages: Int64, lastMessage: Message?) {
        (self.id, self.name, self.messages, self.lastMessage) = (id, name, messages, lastMessage)
    }
}

/// `blocked`: the accounts the caller blocks, oldest block first.
public struct BlockedResult: APIObject, Equatable {
    public struct Entry: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case id, name, since }
        public var id: String
        public var name: String?
        /// When the block was written (ms since the Unix epoch).
        public var since: Int64
        public init(id: String, name: String?, since: Int64) { (self.id, self.name, self.since) = (id, name, since) }
    }
    public enum CodingKeys: String, CodingKey { case blocked }
    public var blocked: [Entry]
    public init(blocked: [Entry]) { self.blocked = blocked }
}

public struct MatchesResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case matches }
    public var matches: [MatchSummary]
    public init(matches: [MatchSummary]) { self.matches = matches }
}

public struct ChatHistory: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case messages, matched, unmatchedBy }
    public var messages: [Message]
    public var matched: Bool
    public var unmatchedBy: String?
    public init(messages: [Message], matched: Bool, unmatchedBy: String?) {
        (self.messages, self.matched, self.unmatchedBy) = (messages, matched, unmatchedBy)
    }
}

public struct SubscribeResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case events }
    public var events: [String]
    public init(events: [String]) { self.events = events }
}

public struct Peer: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case node, address, via, since, hub }
    public var node: String
    public var address: String
    /// "mdns", "config" or "incoming".
    public var via: String
    public var since: Int64
    /// The peer advertises itself as a hub (PROTOCOL.md §13.5).
    public var hub: Bool
    public init(node: String, address: String, via: String, since: Int64, hub: Bool = false) {
        (self.node, self.address, self.via, self.since, self.hub) = (node, address, via, since, hub)
    }
}

public struct PeersResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case peers }
    public var peers: [Peer]
    public init(peers: [Peer]) { self.peers = peers }
}

public struct Status: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case node, version, listen, socket, stateDir, records, authors, pending, heldUntilDue, evidence, accounts, peers, recordsReceived, sync, discovery, mdnsName, uptime, health, problems, storage, networkWorkBits, signupWorkMillis, network, hub, browseDomains, campus }
    public struct Listen: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case host, port }
        public var host: String
        public var port: Int64
        public init(host: String, port: Int64) { (self.host, self.port) = (host, port) }
    }

    /// Lazy push since the daemon started (PROTOCOL.md §13.7).
    public struct Sync: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case bodiesReceived, duplicateBodies, idsAnnounced }
        public var bodiesReceived: Int64
        public var duplicateBodies: Int64
        public var idsAnnounced: Int64
        public init(bodiesReceived: Int64, duplicateBodies: Int64, idsAnnounced: Int64) {
            (self.bodiesReceived, self.duplicateBodies, self.idsAnnounced) = (bodiesReceived, duplicateBodies, idsAnnounced)
        }
    }

    /// This machine's network as the daemon sees it (roaming, OPERATIONS.md): the usable
    /// interfaces (up, with carrier, not loopback) and their addresses, and when they last changed.
    public struct Network: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case interfaces, changedAt, changes }
        public var interfaces: [NetworkInterface]
        /// Milliseconds since the epoch of the last change seen; absent: none since the daemon started.
        public var changedAt: Int64?
        /// Changes seen since the daemon started.
        public var changes: Int64
        public init(interfaces: [NetworkInterface], changedAt: Int64?, changes: Int64) {
            (self.interfaces, self.changedAt, self.changes) = (interfaces, changedAt, changes)
        }
    }

    public struct NetworkInterface: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case name, addresses }
        public var name: String
        /// Numeric; IPv6 link-local ones with `%interface` (`fe80::1%eth0`).
        public var addresses: [String]
        public init(name: String, addresses: [String]) { (self.name, self.addresses) = (name, addresses) }
    }

    /// The node-wide storage budget (OPERATIONS.md).
    public struct Storage: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case accounts, bytes, maxAccounts, maxBytes, declinedAuthors, declinedRecords, degraded }
        public var accounts: Int64
        public var bytes: Int64
        public var maxAccounts: Int64
        public var maxBytes: Int64
        public var declinedAuthors: Int64
        public var declinedRecords: Int64
        public var degraded: Bool
        public init(accounts: Int64, bytes: Int64, maxAccounts: Int64, maxBytes: Int64, declinedAuthors: Int64,
                    declinedRecords: Int64, degraded: Bool) {
            (self.accounts, self.bytes, self.maxAccounts, self.maxBytes) = (accounts, bytes, maxAccounts, maxBytes)
            (self.declinedAuthors, self.declinedRecords, self.degraded) = (declinedAuthors, declinedRecords, degraded)
        }
    }

    public var node: String
    public var version: String
    public var listen: Listen?
    public var socket: String
    public var stateDir: String
    public var records: Int64
    public var authors: Int64
    public var pending: Int64
    public var heldUntilDue: Int64
    public var evidence: Int64
    public var accounts: Int64
    public var peers: Int64
    public var recordsReceived: Int64
    public var sync: Sync
    /// "on", "off", "starting" or "unavailable: why (retrying)".
    public var discovery: String
    public var mdnsName: String?
    /// Seconds.
    public var uptime: Int64
    /// "ok" or "degraded".
    public var health: String
    public var problems: [String]
    public var storage: Storage?
    public var networkWorkBits: Int64
    public var signupWorkMillis: Int64
    public var network: Network?
    /// Hubs (PROTOCOL.md §13.5): whether this node runs as one, the hubs linked, and the
    /// instances not dialled because a hub is linked. Absent from older daemons.
    public var hub: Hub?
    /// The unicast DNS domains browsed for peers besides "local." (wide-area DNS-SD); absent
    /// from older daemons.
    public var browseDomains: [String]?
    /// The campus CA this node trusts (`campus_ca_key`); absent when none is configured.
    public var campus: StatusCampus?

    public struct Hub: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case isHub, linked, held }
        public var isHub: Bool
        public var linked: Int64
        public var held: Int64
        public init(isHub: Bool, linked: Int64, held: Int64) { (self.isHub, self.linked, self.held) = (isHub, linked, held) }
    }

    public init(node: String, version: String, listen: Listen?, socket: String, stateDir: String, records: Int64,
                authors: Int64, pending: Int64, heldUntilDue: Int64, evidence: Int64, accounts: Int64, peers: Int64,
                recordsReceived: Int64, sync: Sync, discovery: String, mdnsName: String?, uptime: Int64, health: String,
                problems: [String], storage: Storage?, networkWorkBits: Int64, signupWorkMillis: Int64, network: Network? = nil, hub: Hub? = nil, browseDomains: [String]? = nil) {
        self.network = network
        self.hub = hub
        self.browseDomains = browseDomains
        (self.node, self.version, self.listen, self.socket, self.stateDir) = (node, version, listen, socket, stateDir)
        (self.records, self.authors, self.pending, self.heldUntilDue) = (records, authors, pending, heldUntilDue)
        (self.evidence, self.accounts, self.peers, self.recordsReceived) = (evidence, accounts, peers, recordsReceived)
        (self.sync, self.discovery, self.mdnsName, self.uptime) = (sync, discovery, mdnsName, uptime)
        (self.health, self.problems, self.storage) = (health, problems, storage)
        (self.networkWorkBits, self.signupWorkMillis) = (networkWorkBits, signupWorkMillis)
    }
}

/// One of `doctor`'s checks; `fix` and `warning` are left out when there is none.
public struct DoctorCheck: APIObject, Equatable {
    public var name: String
    public var ok: Bool
    public var detail: String
    public var fix: String?
    /// Not a failure, but something the operator should change (shown as "warn").
    public var warning = false
    public enum CodingKeys: String, CodingKey { case name, ok, detail, fix, warning }

    public init(name: String, ok: Bool, detail: String, fix: String?, warning: Bool = false) {
        (self.name, self.ok, self.detail, self.fix, self.warning) = (name, ok, detail, fix, warning)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        ok = try c.decode(Bool.self, forKey: .ok)
        detail = try c.decode(String.self, forKey: .detail)
        fix = try c.decodeIfPresent(String.self, forKey: .fix)
        warning = try c.decodeIfPresent(Bool.self, forKey: .warning) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(ok, forKey: .ok)
        try c.encode(detail, forKey: .detail)
        if let fix { try c.encode(fix, forKey: .fix) }
        if warning { try c.encode(true, forKey: .warning) }
    }
}

public struct DoctorResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case checks, ok }
    public var checks: [DoctorCheck]
    /// Every check passed (warnings do not count as failures).
    public var ok: Bool
    public init(checks: [DoctorCheck], ok: Bool) { (self.checks, self.ok) = (checks, ok) }
}

public struct ReplicaDigest: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case digest, records }
    /// Hex.
    public var digest: String
    public var records: Int64
    public init(digest: String, records: Int64) { (self.digest, self.records) = (digest, records) }
}

// MARK: - Notifications

/// The events `subscribe` takes; each arrives as the notification `event.<name>`.
public enum APIEvent: String, CaseIterable, Sendable {
    case match, message, unmatch, peer, sync, meetup

    /// The notification's method name.
    public var method: String { "event.\(rawValue)" }
}

/// `event.match`: the caller's account matched `id`.
public struct MatchEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, name }
    public var id: String
    public var name: String?
    public init(id: String, name: String?) { (self.id, self.name) = (id, name) }
}

/// `event.message`: a message in the conversation with `with`.
public struct MessageEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case with, message }
    public var with: String
    public var message: Message
    public init(with: String, message: Message) { (self.with, self.message) = (with, message) }
}

/// `event.unmatch`: the match with `id` ended, by `by`.
public struct UnmatchEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, by }
    public var id: String
    public var by: String
    public init(id: String, by: String) { (self.id, self.by) = (id, by) }
}

/// `event.meetup`: about a meetup the caller joined — `what` is `cancelled` (by its host),
/// `seat` (the caller now holds a seat: its join was seated, or someone left), or `reminder`
/// (it starts within 30 minutes).
public struct MeetupEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, title, what, start, place }
    public var id: String
    public var title: String
    public var what: String
    public var start: Int64
    public var place: String
    public init(id: String, title: String, what: String, start: Int64, place: String) {
        (self.id, self.title, self.what, self.start, self.place) = (id, title, what, start, place)
    }
}

/// `event.peer`: a link to `peer` was established (`connected`) or ended (`disconnected`).
public struct PeerEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case peer, state }
    public enum State: String, Codable, Sendable { case connected, disconnected }
    public var peer: Peer
    public var state: State
    public init(peer: Peer, state: State) { (self.peer, self.state) = (peer, state) }
}

/// `event.sync`: a session's totals with the peer node `peer` (its node ID) at `address`.
public struct SyncEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case peer, address, received, sent, caughtUp }
    public var peer: String
    public var address: String
    public var received: Int64
    public var sent: Int64
    public var caughtUp: Bool
    public init(peer: String, address: String, received: Int64, sent: Int64, caughtUp: Bool) {
        (self.peer, self.address, self.received, self.sent, self.caughtUp) = (peer, address, received, sent, caughtUp)
    }
}

/// `event.overflow`: the API server dropped `dropped` notifications of this connection because
/// its reader fell behind. Sent by the server itself to every subscriber concerned; not an event
/// one subscribes to, so not an `APIEvent`.
public struct OverflowEvent: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case dropped }
    /// The notification's method name.
    public static let method = "event.overflow"
    public var dropped: Int64
    public init(dropped: Int64) { self.dropped = dropped }
}

/// The `data` of an `ambiguous` error (-32005): the IDs the prefix given matches.
public struct AmbiguousIDData: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case matches }
    public var matches: [String]
    public init(matches: [String]) { self.matches = matches }
}

extension RPCNotification {
    /// An event's notification, its params encoded from their type.
    public init(_ event: APIEvent, _ params: some APIObject) throws {
        self.init(method: event.method, params: try JSONValueEncoder().encode(params))
    }

    /// The API server's own `event.overflow`.
    public init(_ overflow: OverflowEvent) throws {
        self.init(method: OverflowEvent.method, params: try JSONValueEncoder().encode(overflow))
    }
}
