/// Meetups (record types 14, 15, 16; PROTOCOL.md §6.7): a study session or a game night.
///
/// A meetup is public. Its host's account creates it, edits it (one newest-wins register per
/// field) and cancels it (final). Anyone joins or leaves (one register per (account, meetup)).
/// Seats are decided by the host's node, not by anyone's clock: it publishes the meetup's
/// roster — the join records it has admitted, in the order it saw them — and the first `seats`
/// joins of the roster that still stand hold the seats, the rest wait in roster order. A join
/// not on the roster yet is pending. Who may edit, cancel or publish a roster is decided when
/// the meetup's state is read (the record's account must be the host's), never by the body.

/// Type 14: a meetup, an edit of one, or its cancellation.
///
/// | tag | field | |
/// |---|---|---|
/// | 1 | title | text, 1 … 100 scalars |
/// | 2 | topic | kind u8 (1 game, 2 course) ‖ UTF-8 name, 1 … 64 bytes |
/// | 3 | start | u64 BE, ms since the Unix epoch (UTC) |
/// | 4 | duration | u16 BE, minutes, 15 … 1440 |
/// | 5 | place | text, 1 … 200 scalars |
/// | 6 | seats | u16 BE, 1 … 500 |
/// | 7 | ages | min u8 ‖ max u8, 13 ≤ min ≤ max ≤ 120; `00 00` in an edit: no limit |
/// | 8 | about | text, ≤ 2,000 scalars |
/// | 9 | meetup | 32 bytes: the record ID of the meetup edited or cancelled |
/// | 10 | cancelled | one byte `01` |
///
/// A new meetup has fields 1–6 (7 and 8 optional) and neither 9 nor 10; an edit has 9 and at
/// least one of 1–8; a cancellation has exactly 9 and 10.
public struct Meetup: RecordSchema, Equatable {
    public static let type = RecordType.meetup
    public static let name = "meetup"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.meetups
    public static let maxTitle = 100, maxPlace = 200, maxTopicBytes = 64, maxSeats = 500
    public static let durations: ClosedRange<Int> = 15...1440
    public enum Tag: UInt8, CaseIterable {
        case title = 1, topic = 2, start = 3, duration = 4, place = 5, seats = 6, ages = 7, about = 8, meetup = 9, cancelled = 10
    }

    public enum TopicKind: UInt8, Sendable, CaseIterable { case game = 1, course = 2 }
    public struct Topic: Equatable, Sendable {
        public var kind: TopicKind
        public var name: String
        public init(kind: TopicKind, name: String) { self.kind = kind; self.name = name }
    }

    /// The fields a record sets; every one optional in an edit.
    public struct Fields: Equatable, Sendable {
        public var title: String?
        public var topic: Topic?
        public var start: UInt64?
        public var duration: Int?
        public var place: String?
        public var seats: Int?
        /// (min, max); (0, 0) in an edit removes the limit.
        public var ages: (min: Int, max: Int)?
        public var about: String?
        public init(title: String? = nil, topic: Topic? = nil, start: UInt64? = nil, duration: Int? = nil, place: String? = nil,
                    seats: Int? = nil, ages: (min: Int, max: Int)? = nil, about: String? = nil) {
            (self.title, self.topic, self.start, self.duration, self.place, self.seats, self.ages, self.about) =
                (title, topic, start, duration, place, seats, ages, about)
        }
        public static func == (a: Fields, b: Fields) -> Bool {
            a.title == b.title && a.topic == b.topic && a.start == b.start && a.duration == b.duration && a.place == b.place
                && a.seats == b.seats && a.ages?.min == b.ages?.min && a.ages?.max == b.ages?.max && a.about == b.about
        }
        var isEmpty: Bool { self == Fields() }
    }

    public enum Action: Equatable, Sendable {
        case create(Fields)
        case edit(meetup: [UInt8], Fields)
        case cancel(meetup: [UInt8])
    }
    public var action: Action

    public init(_ action: Action) { self.action = action }

    /// The meetup a record names: nil when it creates one (its own record ID is the meetup's).
    public var target: [UInt8]? {
        switch action {
        case .create: nil
        case .edit(let m, _), .cancel(let m): m
        }
    }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "meetup"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        var fields = Fields()
        fields.title = try Self.text(f, .title, "title", max: Self.maxTitle, allowEmpty: false)
        if let v = f[Tag.topic.rawValue] {
            guard v.count >= 2, v.count <= 1 + Self.maxTopicBytes, let kind = TopicKind(rawValue: v[0]) else {
                throw RecordError(.invalidBody, "meetup topic is a kind (1 game, 2 course) and a name of 1 to \(Self.maxTopicBytes) bytes")
            }
            guard let name = String(validating: v.dropFirst(), as: UTF8.self), !name.unicodeScalars.contains(where: ProfileCard.isControl),
                  name == name.trimmingSpaces, !name.isEmpty else {
                throw RecordError(.invalidBody, "meetup topic name must be UTF-8 text without control characters or outer spaces")
            }
            fields.topic = Topic(kind: kind, name: name)
        }
        fields.start = try f.u64(Tag.start.rawValue, "start", what: what)
        if let v = try f.bytes(Tag.duration.rawValue, "duration", length: 2, what: what) {
            let d = Int(v[0]) << 8 | Int(v[1])
            guard Self.durations.contains(d) else { throw RecordError(.invalidBody, "meetup duration is \(d) minutes; 15 to 1440 allowed") }
            fields.duration = d
        }
        fields.place = try Self.text(f, .place, "place", max: Self.maxPlace, allowEmpty: false)
        if let v = try f.bytes(Tag.seats.rawValue, "seats", length: 2, what: what) {
            let n = Int(v[0]) << 8 | Int(v[1])
            guard (1...Self.maxSeats).contains(n) else { throw RecordError(.invalidBody, "meetup seats is \(n); 1 to \(Self.maxSeats) allowed") }
            fields.seats = n
        }
        if let v = try f.bytes(Tag.ages.rawValue, "ages", length: 2, what: what) {
            fields.ages = (Int(v[0]), Int(v[1]))
        }
        fields.about = try Self.text(f, .about, "about", max: PostText.maxScalars, allowEmpty: true)
        let meetup = try f.bytes(Tag.meetup.rawValue, "meetup", length: 32, what: what)
        let cancelled = try f.bytes(Tag.cancelled.rawValue, "cancelled", length: 1, what: what)
        if let cancelled, cancelled != [1] { throw RecordError(.malformed, "meetup cancelled flag must be 01") }
        switch (meetup, cancelled) {
        case (nil, nil):
            guard fields.title != nil, fields.topic != nil, fields.start != nil, fields.duration != nil, fields.place != nil,
                  fields.seats != nil else {
                throw RecordError(.invalidBody, "a new meetup has a title, topic, start, duration, place and seats")
            }
            if let a = fields.ages { try Self.checkAges(a, edit: false) }
            action = .create(fields)
        case (let m?, nil):
            guard !fields.isEmpty else { throw RecordError(.invalidBody, "a meetup edit changes nothing") }
            if let a = fields.ages { try Self.checkAges(a, edit: true) }
            action = .edit(meetup: m, fields)
        case (let m?, _?):
            guard fields.isEmpty else { throw RecordError(.invalidBody, "a meetup's cancellation carries nothing else") }
            action = .cancel(meetup: m)
        case (nil, _?):
            throw RecordError(.invalidBody, "a cancellation names the meetup it cancels")
        }
    }

    static func checkAges(_ a: (min: Int, max: Int), edit: Bool) throws(RecordError) {
        if edit, a.min == 0, a.max == 0 { return }
        guard a.min >= 13, a.min <= a.max, a.max <= 120 else {
            throw RecordError(.invalidBody, "meetup ages \(a.min)-\(a.max): the limits are 13 ≤ min ≤ max ≤ 120")
        }
    }

    private static func text(_ f: FieldList, _ tag: Tag, _ name: String, max: Int, allowEmpty: Bool) throws(RecordError) -> String? {
        guard let s = try f.text(tag.rawValue, name, maxBytes: 4 * max, what: "meetup") else { return nil }
        let n = s.unicodeScalars.count
        guard n <= max else { throw RecordError(.invalidBody, "meetup \(name) is \(n) characters; at most \(max) allowed") }
        guard allowEmpty || !s.isEmpty else { throw RecordError(.invalidBody, "meetup \(name) is empty") }
        return s
    }

    public var body: [UInt8] {
        var f = FieldList()
        func put(_ fields: Fields) {
            if let t = fields.title { f.set(Tag.title.rawValue, text: t) }
            if let t = fields.topic { f.set(Tag.topic.rawValue, [t.kind.rawValue] + Array(t.name.utf8)) }
            if let s = fields.start { f.set(Tag.start.rawValue, u64: s) }
            if let d = fields.duration { f.set(Tag.duration.rawValue, [UInt8(truncatingIfNeeded: d >> 8), UInt8(truncatingIfNeeded: d)]) }
            if let p = fields.place { f.set(Tag.place.rawValue, text: p) }
            if let n = fields.seats { f.set(Tag.seats.rawValue, [UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]) }
            if let a = fields.ages { f.set(Tag.ages.rawValue, [UInt8(clamping: a.min), UInt8(clamping: a.max)]) }
            if let a = fields.about { f.set(Tag.about.rawValue, text: a) }
        }
        switch action {
        case .create(let fields): put(fields)
        case .edit(let m, let fields): put(fields); f.set(Tag.meetup.rawValue, m)
        case .cancel(let m): f.set(Tag.meetup.rawValue, m); f.set(Tag.cancelled.rawValue, [1])
        }
        return f.encoded
    }
}

/// Type 15: joining a meetup, or leaving it — one register per (account, meetup), the newest by
/// (timestamp, record ID) deciding. Each join is its own record, so a rejoin waits for the host's
/// node again.
public struct MeetupJoin: RecordSchema, Equatable {
    public static let type = RecordType.meetupJoin
    public static let name = "meetup-join"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.meetups
    public enum Tag: UInt8, CaseIterable { case meetup = 1, joining = 2 }
    public var meetup: [UInt8]
    public var joining: Bool

    public init(meetup: [UInt8], joining: Bool) { self.meetup = meetup; self.joining = joining }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "meetup join"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        meetup = try f.require(f.bytes(Tag.meetup.rawValue, "meetup", length: 32, what: what), "meetup", what: what)
        let flag = try f.require(f.bytes(Tag.joining.rawValue, "joining", length: 1, what: what), "joining", what: what)
        guard flag[0] <= 1 else { throw RecordError(.malformed, "meetup join flag must be 0 or 1, is \(flag[0])") }
        joining = flag[0] == 1
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.meetup.rawValue, meetup)
        f.set(Tag.joining.rawValue, [joining ? 1 : 0])
        return f.encoded
    }
}

/// Type 16: the host's roster of a meetup — the join records its node admitted, in the order
/// it saw them (at most 500, no repeats). The newest roster of the host's account (by
/// timestamp, then record ID) is the one read.
public struct MeetupRoster: RecordSchema, Equatable {
    public static let type = RecordType.meetupRoster
    public static let name = "meetup-roster"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.meetups
    public static let maxEntries = 500
    public enum Tag: UInt8, CaseIterable { case meetup = 1, joins = 2 }
    public var meetup: [UInt8]
    public var joins: [[UInt8]]

    public init(meetup: [UInt8], joins: [[UInt8]]) { self.meetup = meetup; self.joins = joins }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "meetup roster"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        meetup = try f.require(f.bytes(Tag.meetup.rawValue, "meetup", length: 32, what: what), "meetup", what: what)
        let raw = f[Tag.joins.rawValue] ?? []
        guard raw.count % 32 == 0 else { throw RecordError(.malformed, "meetup roster joins must be whole 32-byte record IDs") }
        let joins = stride(from: 0, to: raw.count, by: 32).map { Array(raw[$0..<$0 + 32]) }
        guard joins.count <= Self.maxEntries else {
            throw RecordError(.invalidBody, "meetup roster has \(joins.count) joins; at most \(Self.maxEntries) allowed")
        }
        guard Set(joins).count == joins.count else { throw RecordError(.invalidBody, "meetup roster names a join twice") }
        self.joins = joins
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.meetup.rawValue, meetup)
        if !joins.isEmpty { f.set(Tag.joins.rawValue, joins.flatMap { $0 }) }
        return f.encoded
    }
}

extension String {
    /// Without leading and trailing spaces (U+0020) — the canonical form of short names.
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
