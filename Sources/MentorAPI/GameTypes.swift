/// `games`, `game.show` (docs/API.md "Games") and `people` (docs/API.md "People").

/// The filters of `games`; none given lists the whole catalogue.
public struct GamesRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case search, players, time }
    /// A piece of the name or the description (case and accents do not count).
    public var search: String?
    /// How many people will play: games that seat exactly that many (1–100).
    public var players: Int64?
    /// Minutes there are: games whose longest playing time fits (1–1440).
    public var time: Int64?
    public init(search: String? = nil, players: Int64? = nil, time: Int64? = nil) {
        (self.search, self.players, self.time) = (search, players, time)
    }
}

/// `game.show`: a game's name, or a unique prefix of it.
public struct GameShowRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case name }
    public var name: String
    public init(name: String) { self.name = name }
}

/// One game of the catalogue, with the figures on its box.
public struct GameInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey {
        case name, year, playersMin = "players_min", playersMax = "players_max", timeMin = "time_min", timeMax = "time_max"
        case minAge = "min_age", description, meetups
    }
    public var name: String
    public var year: Int64
    public var playersMin: Int64
    public var playersMax: Int64
    /// Playing time in minutes (equal when the box gives one figure).
    public var timeMin: Int64
    public var timeMax: Int64
    public var minAge: Int64
    public var description: String
    /// `game.show` only: the open meetups for the game, soonest first (at most 20).
    public var meetups: [MeetupInfo]?
    public init(name: String, year: Int64, playersMin: Int64, playersMax: Int64, timeMin: Int64, timeMax: Int64,
                minAge: Int64, description: String, meetups: [MeetupInfo]? = nil) {
        self.meetups = meetups
        (self.name, self.year, self.playersMin, self.playersMax) = (name, year, playersMin, playersMax)
        (self.timeMin, self.timeMax, self.minAge, self.description) = (timeMin, timeMax, minAge, description)
    }
}

/// `games`: the games that pass the filters, by name.
public struct GamesResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case games, count }
    public var games: [GameInfo]
    public var count: Int64
    public init(games: [GameInfo]) { (self.games, self.count) = (games, Int64(games.count)) }
}

/// The `data` of `game.show`'s -32005 (several games start so) and -32004 (none is so named):
/// the names it could mean, to show or to complete.
public struct GameNamesData: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case names }
    public var names: [String]
    public init(names: [String]) { self.names = names }
}

/// The filters of `people`.
public struct PeopleRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case role, search, course, limit }
    /// student or tutor.
    public var role: String?
    /// A piece of the name or of a course (case and accents do not count).
    public var search: String?
    /// A course the card lists (as `feed --course` compares it).
    public var course: String?
    /// How many (1–200, default 50).
    public var limit: Int64?
    public init(role: String? = nil, search: String? = nil, course: String? = nil, limit: Int64? = nil) {
        (self.role, self.search, self.course, self.limit) = (role, search, course, limit)
    }
}

/// `people`: the accounts whose cards this node holds, newest card first.
public struct PeopleResult: APIObject, Equatable {
    public struct Person: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case id, name, role, courses, updatedAt = "updated_at" }
        /// The account's key (mm1…).
        public var id: String
        public var name: String?
        public var role: String?
        public var courses: [String]
        /// When the card last changed (ms since the Unix epoch).
        public var updatedAt: Int64
        public init(id: String, name: String?, role: String?, courses: [String], updatedAt: Int64) {
            (self.id, self.name, self.role, self.courses, self.updatedAt) = (id, name, role, courses, updatedAt)
        }
    }
    public enum CodingKeys: String, CodingKey { case people, count, more }
    public var people: [Person]
    public var count: Int64
    /// Whether more people passed the filters than the limit let through.
    public var more: Bool
    public init(people: [Person], more: Bool) { (self.people, self.count, self.more) = (people, Int64(people.count), more) }
}
