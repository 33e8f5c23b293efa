/// `meetup.create|edit|cancel|show|join|leave`, `meetups` (docs/API.md "Meetups").

/// A new meetup. `game` or `course` (exactly one); `start` in ms since the Unix epoch (UTC).
public struct MeetupCreateRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case title, game, course, start, duration, place, seats, minAge = "min_age", maxAge = "max_age", about
    }
    public var title: String
    public var game: String?
    public var course: String?
    public var start: Int64
    /// Minutes, 15–1440 (default 120).
    public var duration: Int64?
    public var place: String
    public var seats: Int64
    public var minAge: Int64?
    public var maxAge: Int64?
    public var about: String?
    public init(title: String, game: String? = nil, course: String? = nil, start: Int64, duration: Int64? = nil, place: String,
                seats: Int64, minAge: Int64? = nil, maxAge: Int64? = nil, about: String? = nil) {
        (self.title, self.game, self.course, self.start, self.duration, self.place) = (title, game, course, start, duration, place)
        (self.seats, self.minAge, self.maxAge, self.about) = (seats, minAge, maxAge, about)
    }
}

/// An edit by the host: only the fields given change; `no_age_limit` removes the limit.
public struct MeetupEditRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, title, game, course, start, duration, place, seats, minAge = "min_age", maxAge = "max_age", noAgeLimit = "no_age_limit", about
    }
    public var id: String
    public var title: String?
    public var game: String?
    public var course: String?
    public var start: Int64?
    public var duration: Int64?
    public var place: String?
    public var seats: Int64?
    public var minAge: Int64?
    public var maxAge: Int64?
    public var noAgeLimit: Bool?
    public var about: String?
    public init(id: String, title: String? = nil, game: String? = nil, course: String? = nil, start: Int64? = nil, duration: Int64? = nil,
                place: String? = nil, seats: Int64? = nil, minAge: Int64? = nil, maxAge: Int64? = nil, noAgeLimit: Bool? = nil,
                about: String? = nil) {
        (self.id, self.title, self.game, self.course, self.start, self.duration) = (id, title, game, course, start, duration)
        (self.place, self.seats, self.minAge, self.maxAge, self.noAgeLimit, self.about) = (place, seats, minAge, maxAge, noAgeLimit, about)
    }
}

/// A meetup by its ID (12 hex digits as listings print them; a unique prefix of 4 or more).
public struct MeetupRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public var id: String
    public init(id: String) { self.id = id }
}

/// `meetup.comment`: a comment on a meetup (deleted and hidden with `comment.delete` and
/// `comment.hide`, like a post's).
public struct MeetupCommentRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case id, text }
    public var id: String
    public var text: String
    public init(id: String, text: String) { (self.id, self.text) = (id, text) }
}

/// One who joined, and where: `seat N`, `waitlist N`, or `pending` (not on the host's roster yet).
public struct MeetupAttendeeInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, name, place, joined }
    public var id: String
    public var name: String?
    public var place: String
    public var joined: Int64
    public init(id: String, name: String?, place: String, joined: Int64) { (self.id, self.name, self.place, self.joined) = (id, name, place, joined) }
}

public struct MeetupInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey {
        case id, host, hostName = "host_name", title, kind, topic, start, ends, place, seats, taken, left, minAge = "min_age",
             maxAge = "max_age", about, status, you, attendees, comments
    }
    public var id: String
    public var host: String
    public var hostName: String?
    public var title: String
    /// game or course.
    public var kind: String
    public var topic: String
    public var start: Int64
    public var ends: Int64
    public var place: String
    public var seats: Int64
    public var taken: Int64
    public var left: Int64
    public var minAge: Int64?
    public var maxAge: Int64?
    public var about: String
    /// open, full, under way, ended or cancelled.
    public var status: String
    /// The caller's part: host, seat N, waitlist N, pending, or nil.
    public var you: String?
    /// `meetup.show` only: who joined, seats first.
    public var attendees: [MeetupAttendeeInfo]?
    /// `meetup.show` only: its comments, oldest first (hidden ones only for their writer).
    public var comments: [CommentInfo]?
    public init(id: String, host: String, hostName: String?, title: String, kind: String, topic: String, start: Int64, ends: Int64,
                place: String, seats: Int64, taken: Int64, left: Int64, minAge: Int64?, maxAge: Int64?, about: String, status: String,
                you: String?, attendees: [MeetupAttendeeInfo]?, comments: [CommentInfo]? = nil) {
        (self.id, self.host, self.hostName, self.title, self.kind, self.topic, self.start, self.ends) =
            (id, host, hostName, title, kind, topic, start, ends)
        (self.place, self.seats, self.taken, self.left, self.minAge, self.maxAge, self.about, self.status, self.you, self.attendees) =
            (place, seats, taken, left, minAge, maxAge, about, status, you, attendees)
        self.comments = comments
    }
}

/// `meetups`: the open ones (not cancelled, not ended, seats left) soonest first; `all` adds
/// full, ended and cancelled ones; `mine` those the caller hosts or joined. `from`/`to` (ms)
/// bound the start (the client turns a local day into them).
public struct MeetupsRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case search, game, course, from, to, nearby, all, mine, limit }
    public var search: String?
    public var game: String?
    public var course: String?
    public var from: Int64?
    public var to: Int64?
    public var nearby: Bool?
    public var all: Bool?
    public var mine: Bool?
    public var limit: Int64?
    public init(search: String? = nil, game: String? = nil, course: String? = nil, from: Int64? = nil, to: Int64? = nil,
                nearby: Bool? = nil, all: Bool? = nil, mine: Bool? = nil, limit: Int64? = nil) {
        (self.search, self.game, self.course, self.from, self.to) = (search, game, course, from, to)
        (self.nearby, self.all, self.mine, self.limit) = (nearby, all, mine, limit)
    }
}

public struct MeetupsResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case meetups }
    public var meetups: [MeetupInfo]
    public init(meetups: [MeetupInfo]) { self.meetups = meetups }
}
