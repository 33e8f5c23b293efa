import MentorCrypto
import MentorCore

/// A meetup as this replica reads it (PROTOCOL.md §6.7).
public struct MeetupSummary: Equatable, Sendable {
    public var id: [UInt8]
    public var host: PublicKey
    public var created: UInt64
    public var title: String
    public var topic: Meetup.Topic
    public var start: UInt64
    public var ends: UInt64
    public var place: String
    public var seats: Int
    /// nil: no age limit.
    public var ages: (min: Int, max: Int)?
    public var about: String
    public var cancelled: Bool
    public var taken: Int

    public static func == (a: MeetupSummary, b: MeetupSummary) -> Bool {
        a.id == b.id && a.host == b.host && a.created == b.created && a.title == b.title && a.topic == b.topic && a.start == b.start
            && a.ends == b.ends && a.place == b.place && a.seats == b.seats && a.ages?.min == b.ages?.min && a.ages?.max == b.ages?.max
            && a.about == b.about && a.cancelled == b.cancelled && a.taken == b.taken
    }
}

/// Someone who joined a meetup (their newest join record stands) and where they are.
public struct MeetupAttendee: Equatable, Sendable {
    public enum Place: Equatable, Sendable {
        /// 1 … seats, in roster order.
        case seat(Int)
        /// 1 … : the place in the queue, in roster order.
        case waitlist(Int)
        /// Not on the host's roster yet.
        case pending
    }
    public var account: PublicKey
    public var join: [UInt8]
    public var joined: UInt64
    public var place: Place
}

/// What `meetups` lists.
public struct MeetupFilter: Sendable {
    /// Left out: cancelled, ended (`ends` ≤ now), full — unless `all`.
    public var now: UInt64
    public var all = false
    /// Hosted or joined (a standing join) by these accounts.
    public var involving: PublicKey?
    public var search: String?
    public var topic: Meetup.Topic?
    /// Starting in [from, to).
    public var startRange: Range<UInt64>?
    public var hosts: Set<PublicKey>?
    public var excludedHosts: Set<PublicKey> = []
    public var limit = 50
    public init(now: UInt64) { self.now = now }
}

enum MeetupQueries {
    static let columns = "id, host, created, title, topic_kind, topic, start, ends, place, seats, min_age, max_age, about, cancelled, taken"

    static func summary(_ row: Row) -> MeetupSummary? {
        guard let id = row.blob(0), let host = row.blob(1).flatMap(PublicKey.init(bytes:)), let created = row.int64(2),
              let title = row.text(3), let kind = row.int64(4).flatMap({ Meetup.TopicKind(rawValue: UInt8(clamping: $0)) }),
              let topic = row.text(5), let start = row.int64(6), let ends = row.int64(7), let place = row.text(8),
              let seats = row.int64(9), let minAge = row.int64(10), let maxAge = row.int64(11), let about = row.text(12),
              let cancelled = row.int64(13), let taken = row.int64(14) else { return nil }
        return MeetupSummary(id: id, host: host, created: UInt64(max(created, 0)), title: title, topic: Meetup.Topic(kind: kind, name: topic),
                             start: UInt64(max(start, 0)), ends: UInt64(max(ends, 0)), place: place, seats: Int(seats),
                             ages: minAge == 0 ? nil : (Int(minAge), Int(maxAge)), about: about, cancelled: cancelled == 1, taken: Int(taken))
    }

    /// The current join of each account (its newest record, by timestamp then record ID).
    static let currentJoins = """
        SELECT j.account, j.record_id, j.timestamp, j.joining FROM meetup_joins j
        WHERE j.meetup = ?1 AND NOT EXISTS (
            SELECT 1 FROM meetup_joins k WHERE k.meetup = j.meetup AND k.account = j.account
              AND (k.timestamp > j.timestamp OR (k.timestamp = j.timestamp AND k.record_id > j.record_id)))
        """

    /// The host's newest roster's joins that still stand (each its account's current join, a
    /// join, not a leave), in roster order.
    static func standingRoster(_ db: Database, meetup: [UInt8], host: [UInt8]) throws(StoreError) -> [(account: PublicKey, join: [UInt8])] {
        guard let raw = try db.cachedStatement("""
                SELECT joins FROM meetup_rosters WHERE meetup = ? AND account = ? ORDER BY timestamp DESC, record_id DESC LIMIT 1
                """).queryOne([.blob(meetup), .blob(host)])?.blob(0) else { return [] }
        var current: [[UInt8]: PublicKey] = [:]
        for row in try db.cachedStatement(currentJoins).query([.blob(meetup)]) where row.int64(3) == 1 {
            if let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let id = row.blob(1) { current[id] = a }
        }
        return stride(from: 0, to: raw.count - raw.count % 32, by: 32).compactMap { i in
            let id = Array(raw[i..<i + 32])
            return current[id].map { ($0, id) }
        }
    }
}

extension Replica {
    /// Collects the meetups that ended more than a week before `now` (PROTOCOL.md §6.7): their
    /// records leave this replica and are not stored again. Returns how many went.
    @discardableResult
    public func collectMeetups(now: UInt64) throws(StoreError) -> Int {
        let cutoff = now > ApplyBatch.meetupRetention ? now - ApplyBatch.meetupRetention : 0
        let due = try read { db throws(StoreError) in
            try db.queryOne("SELECT 1 FROM meetups WHERE ends < ? LIMIT 1", [.integer(Int64(clamping: cutoff))]) != nil
        }
        guard due else { return 0 }
        return try write { db throws(StoreError) in
            var batch = ApplyBatch(db: db, settings: settings, openers: [:], now: now)
            let n = try batch.collectMeetups(endedBefore: cutoff)
            try batch.finish(recon: &reconInTransaction)
            countChanges = batch.countChanges
            return n
        }
    }

    /// A meetup's state (nil while its create record is not held).
    public func meetup(_ id: [UInt8]) throws(StoreError) -> MeetupSummary? {
        try read { db throws(StoreError) in
            try db.cachedStatement("SELECT \(MeetupQueries.columns) FROM meetups WHERE id = ?").queryOne([.blob(id)]).flatMap(MeetupQueries.summary)
        }
    }

    /// Who joined `meetup` (their newest join record stands) and their place: seats, then the
    /// waitlist, in the host's roster order; then the joins not on it (pending), earliest first.
    public func meetupAttendees(_ meetup: MeetupSummary) throws(StoreError) -> [MeetupAttendee] {
        try read { db throws(StoreError) in
            let roster = try MeetupQueries.standingRoster(db, meetup: meetup.id, host: meetup.host.bytes)
            var at: [[UInt8]: UInt64] = [:]
            var pending: [MeetupAttendee] = []
            let onRoster = Set(roster.map(\.join))
            for row in try db.cachedStatement(MeetupQueries.currentJoins).query([.blob(meetup.id)]) where row.int64(3) == 1 {
                guard let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let id = row.blob(1), let t = row.int64(2) else { continue }
                at[id] = UInt64(max(t, 0))
                if !onRoster.contains(id) { pending.append(MeetupAttendee(account: a, join: id, joined: UInt64(max(t, 0)), place: .pending)) }
            }
            var out: [MeetupAttendee] = []
            for (i, e) in roster.enumerated() {
                out.append(MeetupAttendee(account: e.account, join: e.join, joined: at[e.join] ?? 0,
                                          place: i < meetup.seats ? .seat(i + 1) : .waitlist(i - meetup.seats + 1)))
            }
            return out + pending.sorted { $0.joined != $1.joined ? $0.joined < $1.joined : $0.join.lexicographicallyPrecedes($1.join) }
        }
    }

    /// The host's newest roster of `meetup` as written (join record IDs), for the host's node
    /// to extend.
    public func meetupRoster(_ meetup: [UInt8], host: PublicKey) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in
            guard let raw = try db.cachedStatement("""
                    SELECT joins FROM meetup_rosters WHERE meetup = ? AND account = ? ORDER BY timestamp DESC, record_id DESC LIMIT 1
                    """).queryOne([.blob(meetup), .blob(host.bytes)])?.blob(0) else { return [] }
            return stride(from: 0, to: raw.count - raw.count % 32, by: 32).map { Array(raw[$0..<$0 + 32]) }
        }
    }

    /// The meetups `host` hosts, not cancelled and not ended at `now`, that have a standing join
    /// its newest roster lacks: what its node puts on their rosters.
    public func meetupsAwaitingRoster(host: PublicKey, now: UInt64) throws(StoreError) -> [[UInt8]] {
        let candidates = try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT DISTINCT m.id FROM meetups m JOIN meetup_joins j ON j.meetup = m.id
                WHERE m.host = ? AND m.cancelled = 0 AND m.ends > ? AND j.joining = 1
                """).query([.blob(host.bytes), .integer(Int64(clamping: now))]).compactMap { $0.blob(0) }
        }
        var out: [[UInt8]] = []
        for id in candidates where !(try unrosteredJoins(id, host: host)).isEmpty { out.append(id) }
        return out
    }

    /// The standing joins of `meetup` that the host's newest roster lacks, in the order this node
    /// applied them (then by record ID): the order its node seats them in.
    public func unrosteredJoins(_ meetup: [UInt8], host: PublicKey) throws(StoreError) -> [(account: PublicKey, join: [UInt8])] {
        let roster = Set(try meetupRoster(meetup, host: host))
        return try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT c.account, c.record_id FROM (\(MeetupQueries.currentJoins)) c JOIN meetup_joins j ON j.record_id = c.record_id
                WHERE c.joining = 1 ORDER BY j.arrived, c.record_id
                """).query([.blob(meetup)]).compactMap { row -> (account: PublicKey, join: [UInt8])? in
                    guard let a = row.blob(0).flatMap(PublicKey.init(bytes:)), let id = row.blob(1), !roster.contains(id) else { return nil }
                    return (a, id)
                }
        }
    }

    /// The host's newest roster's joins that still stand, in roster order.
    public func standingRoster(_ meetup: MeetupSummary) throws(StoreError) -> [[UInt8]] {
        try read { db throws(StoreError) in try MeetupQueries.standingRoster(db, meetup: meetup.id, host: meetup.host.bytes).map(\.join) }
    }

    /// Meetups by `filter`: soonest first.
    public func meetups(_ filter: MeetupFilter) throws(StoreError) -> [MeetupSummary] {
        var conditions: [String] = []
        var args: [SQLValue] = []
        if !filter.all {
            conditions.append("cancelled = 0 AND ends > ? AND taken < seats")
            args.append(.integer(Int64(clamping: filter.now)))
        }
        if let range = filter.startRange {
            conditions.append("start >= ? AND start < ?")
            args += [.integer(Int64(clamping: range.lowerBound)), .integer(Int64(clamping: range.upperBound))]
        }
        if let topic = filter.topic {
            conditions.append("topic_kind = ? AND topic = ? COLLATE NOCASE")
            args += [.integer(Int64(topic.kind.rawValue)), .text(topic.name)]
        }
        if let search = filter.search {
            let like = "%" + search.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
            conditions.append("(title LIKE ?1x ESCAPE '\\' OR topic LIKE ?1x ESCAPE '\\' OR about LIKE ?1x ESCAPE '\\' OR place LIKE ?1x ESCAPE '\\')"
                .replacingOccurrences(of: "?1x", with: "?"))
            args += [.text(like), .text(like), .text(like), .text(like)]
        }
        if let who = filter.involving {
            conditions.append("""
                (host = ? OR id IN (SELECT j.meetup FROM meetup_joins j WHERE j.account = ? AND j.joining = 1 AND NOT EXISTS (
                    SELECT 1 FROM meetup_joins k WHERE k.meetup = j.meetup AND k.account = j.account
                      AND (k.timestamp > j.timestamp OR (k.timestamp = j.timestamp AND k.record_id > j.record_id)))))
                """)
            args += [.blob(who.bytes), .blob(who.bytes)]
        }
        let where_ = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let fetch = filter.limit + min(filter.excludedHosts.count * 8, 1024)
        let sql = "SELECT \(MeetupQueries.columns) FROM meetups \(where_) ORDER BY start, id LIMIT ?"
        return try read { db throws(StoreError) in
            try db.query(sql, args + [.integer(Int64(fetch))]).compactMap(MeetupQueries.summary)
                .filter { !filter.excludedHosts.contains($0.host) && (filter.hosts?.contains($0.host) ?? true) }
                .prefix(filter.limit).map { $0 }
        }
    }

    /// An account's meetup history as this replica holds it (meetups leave a week after they
    /// end): those it hosts, and those where it holds a seat on the host's roster (not
    /// cancelled) — each latest start first, at most `limit`.
    public func meetupHistory(of account: PublicKey, limit: Int) throws(StoreError) -> (hosted: [MeetupSummary], seated: [MeetupSummary]) {
        try read { db throws(StoreError) in
            let limit = Int64(max(limit, 0))
            let hosted = try db.query("SELECT \(MeetupQueries.columns) FROM meetups WHERE host = ? ORDER BY start DESC, id DESC LIMIT ?",
                                      [.blob(account.bytes), .integer(limit)]).compactMap(MeetupQueries.summary)
            var seated: [MeetupSummary] = []
            for row in try db.query("""
                    SELECT \(MeetupQueries.columns) FROM meetups WHERE cancelled = 0 AND host != ?1
                      AND id IN (SELECT meetup FROM meetup_joins WHERE account = ?1 AND joining = 1) ORDER BY start DESC, id DESC
                    """, [.blob(account.bytes)]) where seated.count < limit {
                guard let m = MeetupQueries.summary(row) else { continue }
                let seats = try MeetupQueries.standingRoster(db, meetup: m.id, host: m.host.bytes).prefix(m.seats)
                if seats.contains(where: { $0.account == account }) { seated.append(m) }
            }
            return (hosted, seated)
        }
    }

    /// The IDs of meetups whose hex spelling starts with `prefix` (lower-case hex), at most `limit`.
    public func meetupIDs(prefix: String, limit: Int = 2) throws(StoreError) -> [[UInt8]] {
        try ids(in: "meetups", prefix: prefix, limit: limit)
    }
}
