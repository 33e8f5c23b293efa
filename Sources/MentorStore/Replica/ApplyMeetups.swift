import MentorCrypto
import MentorCore

/// Meetups, joins and rosters (record types 14-16, PROTOCOL.md §6.7; migration 21). Every
/// record is kept as an entry; what it means is decided when the meetup's row is refreshed:
/// only the host's account's edits, cancellation and rosters count, in (timestamp, record ID)
/// order, so every arrival order ends in the same state.
extension ApplyBatch {
    mutating func applyMeetupRecord(_ v: VerifiedRecord) throws(StoreError) {
        let r = v.record
        let at = Int64(clamping: r.timestamp)
        let account = SQLValue.blob(r.account.bytes)
        var meetup: [UInt8]
        switch r.type {
        case .meetup:
            guard let m = try? Meetup(body: r.body) else { return }
            switch m.action {
            case .create:
                meetup = v.id
                try statement("""
                    INSERT OR IGNORE INTO meetups(id, host, created, create_body, title, topic_kind, topic, start, ends, place, seats,
                                                  min_age, max_age, about)
                    VALUES (?, ?, ?, ?, '', 0, '', 0, 0, '', 0, 0, 0, '')
                    """).run([.blob(v.id), account, .integer(at), .blob(r.body)])
                if db.changes > 0 { try judgeCommentHides(meetup: v.id, host: r.account.bytes) }
            case .edit(let target, _), .cancel(let target):
                meetup = target
                try statement("INSERT OR IGNORE INTO meetup_edits(meetup, account, record_id, timestamp, body) VALUES (?, ?, ?, ?, ?)")
                    .run([.blob(target), account, .blob(v.id), .integer(at), .blob(r.body)])
            }
        case .meetupJoin:
            guard let j = try? MeetupJoin(body: r.body) else { return }
            meetup = j.meetup
            try statement("INSERT OR IGNORE INTO meetup_joins(meetup, account, record_id, timestamp, joining, arrived) VALUES (?, ?, ?, ?, ?, ?)")
                .run([.blob(j.meetup), account, .blob(v.id), .integer(at), .integer(j.joining ? 1 : 0), .integer(Int64(clamping: now))])
        case .meetupRoster:
            guard let roster = try? MeetupRoster(body: r.body) else { return }
            meetup = roster.meetup
            try statement("INSERT OR IGNORE INTO meetup_rosters(meetup, account, record_id, timestamp, joins) VALUES (?, ?, ?, ?, ?)")
                .run([.blob(roster.meetup), account, .blob(v.id), .integer(at), .blob(roster.joins.flatMap { $0 })])
        default: return
        }
        try refreshMeetup(meetup)
    }

    /// How long after its end a meetup is collected from the replica (PROTOCOL.md §6.7).
    static let meetupRetention: UInt64 = 7 * 86_400_000

    /// Whether `v` belongs to a meetup this replica collected, or creates one that ended more
    /// than a week before this node's clock: then it is not stored (no one's fault).
    func meetupGone(_ v: VerifiedRecord) throws(StoreError) -> Bool {
        let target: [UInt8]
        switch v.record.type {
        case .meetup:
            guard let m = try? Meetup(body: v.record.body) else { return false }
            switch m.action {
            case .create(let f):
                let ends = (f.start ?? 0) &+ UInt64(f.duration ?? 0) * 60_000
                if ends &+ Self.meetupRetention < now { return true }
                target = v.id
            case .edit(let t, _), .cancel(let t): target = t
            }
        case .meetupJoin: guard let j = try? MeetupJoin(body: v.record.body) else { return false }; target = j.meetup
        case .meetupRoster: guard let r = try? MeetupRoster(body: v.record.body) else { return false }; target = r.meetup
        default: return false
        }
        return try statement("SELECT 1 FROM meetups_gone WHERE id = ?").queryOne([.blob(target)]) != nil
    }

    /// Collects the meetups that ended before `cutoff`: their create, edits, joins, rosters and
    /// comments (with the comments' deletions and hides) leave the replica (records, the reconciled set, the digest, the tables) and are
    /// remembered so that copies offered again are not stored. Returns how many meetups went.
    mutating func collectMeetups(endedBefore cutoff: UInt64) throws(StoreError) -> Int {
        let ids = try db.query("SELECT id, ends FROM meetups WHERE ends < ? LIMIT 1000", [.integer(Int64(clamping: cutoff))])
        for row in ids {
            guard let id = row.blob(0), let ends = row.int64(1) else { continue }
            for table in ["meetup_edits", "meetup_joins", "meetup_rosters"] {
                for r in try db.query("SELECT record_id FROM \(table) WHERE meetup = ?", [.blob(id)]) {
                    if let rid = r.blob(0) { try dropRecord(rid) }
                }
                try db.execute("DELETE FROM \(table) WHERE meetup = ?", [.blob(id)])
            }
            try purgeComments(of: id)
            try dropRecord(id)
            try db.execute("DELETE FROM meetups WHERE id = ?", [.blob(id)])
            try db.execute("INSERT OR IGNORE INTO meetups_gone(id, ends) VALUES (?, ?)", [.blob(id), .integer(ends)])
        }
        return ids.count
    }

    /// A removed record (a revoked device's) leaves the meetup tables; its meetup is read again.
    mutating func dropMeetupRecord(_ id: [UInt8]) throws(StoreError) {
        var touched: [[UInt8]] = []
        for table in ["meetup_edits", "meetup_joins", "meetup_rosters"] {
            for row in try db.query("SELECT meetup FROM \(table) WHERE record_id = ?", [.blob(id)]) {
                if let m = row.blob(0) { touched.append(m) }
            }
            try db.execute("DELETE FROM \(table) WHERE record_id = ?", [.blob(id)])
        }
        try db.execute("DELETE FROM meetups WHERE id = ?", [.blob(id)])
        for m in touched { try refreshMeetup(m) }
    }

    /// Folds the host's edits into the create record's fields and counts the seats its newest
    /// roster fills; writes the result to the meetup's row (nothing while the create is missing).
    mutating func refreshMeetup(_ id: [UInt8]) throws(StoreError) {
        guard let row = try statement("SELECT host, create_body FROM meetups WHERE id = ?").queryOne([.blob(id)]),
              let host = row.blob(0), let body = row.blob(1), let created = try? Meetup(body: body),
              case .create(var fields) = created.action else { return }
        var cancelled = false
        for e in try statement("SELECT body FROM meetup_edits WHERE meetup = ? AND account = ? ORDER BY timestamp, record_id")
                .query([.blob(id), .blob(host)]) {
            guard let b = e.blob(0), let edit = try? Meetup(body: b) else { continue }
            switch edit.action {
            case .edit(_, let f):
                if let v = f.title { fields.title = v }
                if let v = f.topic { fields.topic = v }
                if let v = f.start { fields.start = v }
                if let v = f.duration { fields.duration = v }
                if let v = f.place { fields.place = v }
                if let v = f.seats { fields.seats = v }
                if let v = f.ages { fields.ages = v.min == 0 ? nil : v }
                if let v = f.about { fields.about = v }
            case .cancel: cancelled = true
            case .create: break
            }
        }
        let seats = fields.seats ?? 0
        let standing = try MeetupQueries.standingRoster(db, meetup: id, host: host)
        let start = Int64(clamping: fields.start ?? 0)
        try statement("""
            UPDATE meetups SET title = ?, topic_kind = ?, topic = ?, start = ?, ends = ?, place = ?, seats = ?, min_age = ?,
                               max_age = ?, about = ?, cancelled = ?, taken = ? WHERE id = ?
            """).run([.text(fields.title ?? ""), .integer(Int64(fields.topic?.kind.rawValue ?? 0)), .text(fields.topic?.name ?? ""),
                      .integer(start), .integer(start &+ Int64((fields.duration ?? 0) * 60_000)), .text(fields.place ?? ""),
                      .integer(Int64(seats)), .integer(Int64(fields.ages?.min ?? 0)), .integer(Int64(fields.ages?.max ?? 0)),
                      .text(fields.about ?? ""), .integer(cancelled ? 1 : 0), .integer(Int64(min(standing.count, seats))), .blob(id)])
    }
}
