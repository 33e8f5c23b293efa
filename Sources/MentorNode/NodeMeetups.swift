import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorStore

// MARK: Meetups (record types 14-16, PROTOCOL.md §6.7; docs/API.md "Meetups")

extension Node {
    static let meetupIDDigits = 12
    static func shortMeetupID(_ id: [UInt8]) -> String { String(Hex.encode(id).prefix(meetupIDDigits)) }

    func meetupCreate(_ request: MeetupCreateRequest, _ caller: Requester) throws -> MeetupInfo {
        let me = try me(caller)
        let now = config.now()
        var fields = Meetup.Fields(title: request.title.trimmingCharacters(in: .whitespacesAndNewlines), topic: try topic(game: request.game, course: request.course),
                                   start: UInt64(clamping: request.start), duration: Int(request.duration ?? 120),
                                   place: request.place.trimmingCharacters(in: .whitespacesAndNewlines), seats: Int(clamping: request.seats),
                                   about: request.about ?? "")
        fields.ages = try ages(min: request.minAge, max: request.maxAge, edit: false)
        guard request.start >= 0, UInt64(request.start) + UInt64(max(request.duration ?? 120, 0)) * 60_000 > now else {
            throw RPCError(.invalidValue, "that meetup would be over already; give a start in the future")
        }
        let record = try write(caller.uid) { w, at throws(RecordError) in try w.meetup(.create(fields), at: at) }
        logger.info("meetup created", ["uid": "\(caller.uid)", "meetup": Self.shortMeetupID(record.id)])
        return try meetupInfo(record.id, viewer: me, attendees: true)
    }

    func meetupEdit(_ request: MeetupEditRequest, _ caller: Requester) throws -> MeetupInfo {
        let me = try me(caller)
        let m = try hostedMeetup(request.id, me, "edit")
        var fields = Meetup.Fields(title: request.title?.trimmingCharacters(in: .whitespacesAndNewlines), start: request.start.map { UInt64(clamping: $0) },
                                   duration: request.duration.map { Int(clamping: $0) }, place: request.place?.trimmingCharacters(in: .whitespacesAndNewlines),
                                   seats: request.seats.map { Int(clamping: $0) }, about: request.about)
        if request.game != nil || request.course != nil { fields.topic = try topic(game: request.game, course: request.course) }
        if request.noAgeLimit == true {
            guard request.minAge == nil, request.maxAge == nil else { throw RPCError(.invalidParams, "give an age range or no_age_limit, not both") }
            fields.ages = (0, 0)
        } else if request.minAge != nil || request.maxAge != nil {
            fields.ages = try ages(min: request.minAge ?? Int64(m.ages?.min ?? 13), max: request.maxAge ?? Int64(m.ages?.max ?? 120), edit: true)
        }
        if let s = fields.seats, s < m.taken {
            // Fewer seats than taken: the last seated move to the waitlist, in roster order.
            logger.info("meetup seats reduced below those taken", ["meetup": Self.shortMeetupID(m.id), "seats": "\(s)", "taken": "\(m.taken)"])
        }
        try write(caller.uid) { w, at throws(RecordError) in try w.meetup(.edit(meetup: m.id, fields), at: at) }
        return try meetupInfo(m.id, viewer: me, attendees: true)
    }

    func meetupCancel(_ request: MeetupRequest, _ caller: Requester) throws -> MeetupInfo {
        let me = try me(caller)
        let m = try hostedMeetup(request.id, me, "cancel")
        try write(caller.uid) { w, at throws(RecordError) in try w.meetup(.cancel(meetup: m.id), at: at) }
        return try meetupInfo(m.id, viewer: me, attendees: true)
    }

    func meetupShow(_ request: MeetupRequest, _ caller: Requester) throws -> MeetupInfo {
        let me = try me(caller)
        return try meetupInfo(try meetupID(request.id), viewer: me, attendees: true)
    }

    /// Comments on a meetup: a public comment record (type 10) naming it (PROTOCOL.md §6.6); its
    /// writer deletes it and the host hides it with `comment.delete` / `comment.hide`.
    func meetupComment(_ request: MeetupCommentRequest, _ caller: Requester) throws -> CommentInfo {
        _ = try me(caller)
        return try writeComment(on: try meetupID(request.id), request.text, caller, onMeetup: true)
    }

    /// Joins (or leaves) a meetup: one public record. A join of a full meetup goes to the
    /// waitlist once the host's node has seen it; until then it is pending.
    func meetupJoin(_ request: MeetupRequest, _ caller: Requester, joining: Bool) throws -> MeetupInfo {
        let me = try me(caller)
        let id = try meetupID(request.id)
        guard let m = try replica.meetup(id) else { throw RPCError(.notFound, "no meetup \(request.id) on this node") }
        let standing = try replica.meetupAttendees(m).contains { $0.account == me }
        if joining {
            guard m.host != me else { throw RPCError(.notAllowed, "you host this meetup; your place is yours") }
            guard !m.cancelled else { throw RPCError(.notAllowed, "this meetup was cancelled by its host") }
            guard m.ends > config.now() else { throw RPCError(.notAllowed, "this meetup is over") }
            guard !standing else { throw RPCError(.notAllowed, "you joined this meetup already; `mentormate meetup show \(Self.shortMeetupID(id))` shows your place") }
            if let limits = m.ages {
                guard let age = cardAge(me) else {
                    throw RPCError(.notAllowed, "this meetup is for ages \(limits.min)-\(limits.max), and your card shows no age: set your birth date with `mentormate profile set --birthdate YYYY-MM-DD`")
                }
                guard (limits.min...limits.max).contains(age) else {
                    throw RPCError(.notAllowed, "this meetup is for ages \(limits.min)-\(limits.max); your card says \(age)")
                }
            }
        } else {
            guard standing else { throw RPCError(.notAllowed, "you have not joined this meetup") }
        }
        try write(caller.uid) { w, at throws(RecordError) in try w.meetupJoin(id, joining: joining, at: at) }
        return try meetupInfo(id, viewer: me, attendees: true)
    }

    func meetupsList(_ request: MeetupsRequest, _ caller: Requester) throws -> MeetupsResult {
        let me = try me(caller)
        collectMeetupsHourly()
        let limit = Int(request.limit ?? 20)
        guard (1...200).contains(limit) else { throw RPCError(.invalidValue, "limit must be 1 to 200") }
        var filter = MeetupFilter(now: config.now())
        filter.limit = limit
        filter.all = request.all == true
        if request.mine == true { filter.involving = me }
        if let s = request.search?.trimmingCharacters(in: .whitespacesAndNewlines) {
            guard !s.isEmpty else { throw RPCError(.invalidValue, "search is empty") }
            filter.search = s
        }
        if request.game != nil || request.course != nil { filter.topic = try topic(game: request.game, course: request.course) }
        if request.from != nil || request.to != nil {
            let from = UInt64(clamping: request.from ?? 0), to = UInt64(clamping: request.to ?? Int64.max)
            guard from < to else { throw RPCError(.invalidValue, "from must be before to") }
            filter.startRange = from..<to
        }
        if request.nearby == true { filter.hosts = nearbyAccounts }
        filter.excludedHosts = try hiddenAccounts(of: me)
        return MeetupsResult(meetups: try replica.meetups(filter).map { try meetupInfo($0, viewer: me, attendees: false) })
    }

    // MARK: Events: cancelled, seat, reminder

    /// How long before a meetup starts its joiners are reminded.
    static let meetupReminderLead: UInt64 = 30 * 60_000

    /// Tells each local account (unlocked, subscribed to `meetup`) what changed in the meetups it
    /// joined: a cancellation, a seat it now holds, a start within 30 minutes — each once, also
    /// across restarts (the replica's `meetup_told`) — and sets the timer for the next reminder.
    func meetupEvents() {
        let now = config.now()
        var nextReminder: UInt64?
        for (uid, writer) in writers {
            let me = writer.account
            var filter = MeetupFilter(now: now)
            filter.all = true
            filter.involving = me
            filter.limit = 200
            guard let mine = try? replica.meetups(filter), let notes = try? replica.meetupTold(me) else { continue }
            for m in mine where m.host != me && m.ends > now {
                guard let place = (try? replica.meetupAttendees(m))?.first(where: { $0.account == me })?.place else { continue }
                var told = notes[m.id] ?? []
                func tell(_ what: String) {
                    guard told.insert(what).inserted else { return }
                    publish(uid, .meetup, MeetupEvent(id: Self.shortMeetupID(m.id), title: m.title, what: what,
                                                      start: Int64(clamping: m.start), place: m.place))
                }
                if m.cancelled {
                    tell("cancelled")
                } else if case .seat = place {
                    tell("seat")
                    if m.start > now, m.start <= now + Self.meetupReminderLead {
                        tell("reminder")
                    } else if m.start > now + Self.meetupReminderLead {
                        let at = m.start - Self.meetupReminderLead
                        nextReminder = min(nextReminder ?? at, at)
                    }
                } else {
                    told.remove("seat")
                }
                if told != notes[m.id] ?? [] {
                    do { try replica.setMeetupTold(me, meetup: m.id, told) } catch {
                        logger.info("remembering a meetup event failed", ["uid": "\(uid)", "error": "\(error)"])
                    }
                }
            }
        }
        meetupReminderTimer?.cancel()
        meetupReminderTimer = nil
        if let at = nextReminder {
            let item = DispatchWorkItem { [weak self] in self?.meetupEvents() }
            meetupReminderTimer = item
            queue.asyncAfter(deadline: .now() + .milliseconds(Int(min(at - min(at, now), 86_400_000))), execute: item)
        }
    }

    // MARK: Collection

    /// Meetups that ended more than a week ago leave the replica — checked at most once an hour,
    /// when records are applied or meetups listed (an idle node collects at its next use).
    func collectMeetupsHourly() {
        let now = config.now()
        guard now >= meetupsCollectedAt &+ 3_600_000 || now < meetupsCollectedAt else { return }
        meetupsCollectedAt = now
        do {
            let n = try replica.collectMeetups(now: now)
            if n > 0 { logger.info("meetups that ended a week ago collected", ["meetups": "\(n)"]) }
        } catch {
            logger.info("collecting past meetups failed", ["error": "\(error)"])
        }
    }

    // MARK: The host's node: rosters

    /// For each local account hosting meetups with standing joins not on their roster yet,
    /// writes the roster again: the joins still standing in their roster order, then the new
    /// ones in the order this node applied them (never by anyone's clock), leaving out joins
    /// its age limit refuses. Called after records are applied and at unlock.
    func updateRosters() {
        let now = config.now()
        for (uid, writer) in writers {
            let host = writer.account
            guard let ids = try? replica.meetupsAwaitingRoster(host: host, now: now), !ids.isEmpty else { continue }
            for id in ids {
                do {
                    guard let m = try replica.meetup(id) else { continue }
                    let kept = try replica.standingRoster(m)
                    let new = try replica.unrosteredJoins(id, host: host).filter { admissible($0.account, m) }.map(\.join)
                    guard !new.isEmpty else { continue }
                    let roster = Array((kept + new).prefix(MeetupRoster.maxEntries))
                    try write(uid) { w, at throws(RecordError) in try w.meetupRoster(id, joins: roster, at: at) }
                    logger.info("meetup roster", ["meetup": Self.shortMeetupID(id), "joins": "\(roster.count)", "seats": "\(m.seats)"])
                } catch {
                    logger.log(.warning, "a meetup's roster could not be written", ["meetup": Self.shortMeetupID(id), "error": "\(error)"])
                }
            }
        }
    }

    /// Whether `account`'s card meets the meetup's age limit (no limit: everyone).
    func admissible(_ account: PublicKey, _ m: MeetupSummary) -> Bool {
        guard let limits = m.ages else { return true }
        guard let age = cardAge(account) else { return false }
        return (limits.min...limits.max).contains(age)
    }

    func cardAge(_ account: PublicKey) -> Int? {
        guard let age = (try? replica.card(of: account))??.card.age, let a = age else { return nil }
        return Int(a)
    }

    // MARK: Helpers

    /// The open meetups for a game (its catalogue name), as `viewer` may see them.
    func openMeetups(game: String, _ caller: Requester?) -> [MeetupInfo] {
        var filter = MeetupFilter(now: config.now())
        filter.topic = Meetup.Topic(kind: .game, name: game)
        filter.limit = 20
        let viewer = account(ifAny: caller)
        filter.excludedHosts = viewer.map { (try? hiddenAccounts(of: $0)) ?? [] } ?? campusHidden(viewer: nil)
        return ((try? replica.meetups(filter)) ?? []).compactMap { try? meetupInfo($0, viewer: viewer, attendees: false) }
    }

    /// A game named as in the catalogue takes the catalogue's spelling (so `catan` is Catan, and
    /// `game show` finds it); any other name is kept as given.
    private func topic(game: String?, course: String?) throws -> Meetup.Topic {
        switch (game?.trimmingCharacters(in: .whitespacesAndNewlines), course?.trimmingCharacters(in: .whitespacesAndNewlines)) {
        case (let g?, nil):
            guard !g.isEmpty, g.utf8.count <= Meetup.maxTopicBytes else { throw RPCError(.invalidValue, "a game's name is 1 to 64 bytes") }
            if let known = GameCatalogue.standard.game(key: GameCatalogue.fold(g)), known.name.utf8.count <= Meetup.maxTopicBytes {
                return Meetup.Topic(kind: .game, name: known.name)
            }
            return Meetup.Topic(kind: .game, name: g)
        case (nil, let c?):
            guard !c.isEmpty, c.utf8.count <= Meetup.maxTopicBytes else { throw RPCError(.invalidValue, "a course is 1 to 64 bytes") }
            return Meetup.Topic(kind: .course, name: c)
        case (_?, _?): throw RPCError(.invalidParams, "a meetup is about a game or a course, not both")
        case (nil, nil): throw RPCError(.invalidParams, "say what the meetup is about: game or course")
        }
    }

    private func ages(min: Int64?, max: Int64?, edit: Bool) throws -> (min: Int, max: Int)? {
        guard min != nil || max != nil else { return nil }
        let lo = Int(clamping: min ?? 13), hi = Int(clamping: max ?? 120)
        guard lo >= 13, lo <= hi, hi <= 120 else {
            throw RPCError(.invalidValue, "ages \(lo)-\(hi): give 13 ≤ min ≤ max ≤ 120 (adults only: 18-120)")
        }
        return (lo, hi)
    }

    private func hostedMeetup(_ text: String, _ me: PublicKey, _ what: String) throws -> MeetupSummary {
        let id = try meetupID(text)
        guard let m = try replica.meetup(id) else { throw RPCError(.notFound, "no meetup \(text) on this node") }
        guard m.host == me else { throw RPCError(.notAllowed, "only the meetup's host may \(what) it") }
        guard !m.cancelled else { throw RPCError(.notAllowed, "this meetup was cancelled already") }
        return m
    }

    func meetupID(_ text: String) throws -> [UInt8] {
        let hex = text.lowercased()
        guard (4...64).contains(hex.count), hex.allSatisfy(\.isHexDigit) else {
            throw RPCError(.invalidValue, "\"\(text.prefix(70))\" is not a meetup ID: give 4 to 64 hex digits, as `mentormate meetups` prints them")
        }
        let found = try replica.meetupIDs(prefix: hex)
        switch found.count {
        case 1: return found[0]
        case 0: throw RPCError(.notFound, "no meetup \(hex) on this node (it may not have arrived yet)")
        default: throw RPCError(.ambiguous, "\(hex) names more than one meetup; give more digits")
        }
    }

    private func meetupInfo(_ id: [UInt8], viewer: PublicKey, attendees: Bool) throws -> MeetupInfo {
        guard let m = try replica.meetup(id) else { throw RPCError(.notFound, "no meetup \(Self.shortMeetupID(id)) on this node") }
        return try meetupInfo(m, viewer: viewer, attendees: attendees)
    }

    func meetupInfo(_ m: MeetupSummary, viewer: PublicKey?, attendees: Bool) throws -> MeetupInfo {
        let now = config.now()
        let people = try replica.meetupAttendees(m)
        func place(_ p: MeetupAttendee.Place) -> String {
            switch p { case .seat(let n): "seat \(n)"; case .waitlist(let n): "waitlist \(n)"; case .pending: "pending" }
        }
        let status = m.cancelled ? "cancelled" : m.ends <= now ? "ended" : m.start <= now ? "under way" : m.taken >= m.seats ? "full" : "open"
        let you = m.host == viewer ? "host" : people.first { $0.account == viewer }.map { place($0.place) }
        let blocked = attendees ? viewer.flatMap { try? hiddenAccounts(of: $0) } ?? campusHidden(viewer: nil) : []
        return MeetupInfo(
            id: Self.shortMeetupID(m.id), host: m.host.id, hostName: names[m.host], title: m.title,
            kind: m.topic.kind == .game ? "game" : "course", topic: m.topic.name, start: Int64(clamping: m.start), ends: Int64(clamping: m.ends),
            place: m.place, seats: Int64(m.seats), taken: Int64(m.taken), left: Int64(max(m.seats - m.taken, 0)),
            minAge: m.ages.map { Int64($0.min) }, maxAge: m.ages.map { Int64($0.max) }, about: m.about, status: status, you: you,
            attendees: attendees ? people.filter { !blocked.contains($0.account) }.map {
                MeetupAttendeeInfo(id: $0.account.id, name: names[$0.account], place: place($0.place), joined: Int64(clamping: $0.joined))
            } : nil,
            comments: attendees ? try replica.comments(of: m.id, viewer: viewer).filter { !blocked.contains($0.account) }
                .map { c in try commentInfo(c, onMeetup: true) } : nil)
    }
}
