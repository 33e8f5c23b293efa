import Foundation
import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

/// `meetup.*` and `meetups` on one node: the host's node seats joins in the order it sees them.
@Suite struct NodeMeetupTests {
    let host: UInt32 = 1001, ana: UInt32 = 1002, ben: UInt32 = 1003, cy: UInt32 = 1004, dee: UInt32 = 1005, eve: UInt32 = 1006

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String, birthdate: String? = nil) throws {
        var params: [String: JSON] = ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": "student"]
        if let birthdate { params["birthdate"] = .string(birthdate) }
        try t.call(uid, "account.signup", params)
    }

    func places(_ m: JSON) -> [String] { (m["attendees"]?.arrayValue ?? []).map { "\($0["name"]?.stringValue ?? "?") \($0["place"]?.stringValue ?? "?")" } }

    @Test func joinsFillTheSeatsThenTheWaitlistAndALeavePromotes() throws {
        let t = try TestNode()
        for (uid, name) in [(host, "Host"), (ana, "Ana"), (ben, "Ben"), (cy, "Cy")] { try signup(t, uid, name) }
        let start = Int64(t.wall.tick() + 86_400_000)
        let m = try t.call(host, "meetup.create", ["title": "Catan night", "game": "Catan", "start": .int(start), "place": "Library room 2",
                                                    "seats": 2, "about": "Bring snacks"])
        let id = try #require(m["id"]?.stringValue)
        #expect(m["status"] == "open" && m["you"] == "host" && m["left"] == 2 && m["ends"] == .int(start + 120 * 60_000))
        for uid in [ana, ben, cy] { try t.call(uid, "meetup.join", ["id": .string(id)]) }
        let full = try t.call(ana, "meetup.show", ["id": .string(id)])
        #expect(places(full) == ["Ana seat 1", "Ben seat 2", "Cy waitlist 1"], "\(full)")
        #expect(full["status"] == "full" && full["taken"] == 2 && full["left"] == 0 && full["you"] == "seat 1")
        #expect((try t.call(ana, "meetups")["meetups"]?.arrayValue ?? []).isEmpty, "full: not listed as open")
        #expect((try t.call(ana, "meetups", ["all": true])["meetups"]?.arrayValue ?? []).count == 1)
        #expect((try t.call(cy, "meetups", ["mine": true, "all": true])["meetups"]?.arrayValue ?? []).count == 1)

        try t.call(ben, "meetup.leave", ["id": .string(id)])
        let after = try t.call(cy, "meetup.show", ["id": .string(id)])
        #expect(places(after) == ["Ana seat 1", "Cy seat 2"] && after["you"] == "seat 2", "\(after)")

        // Mistakes write nothing.
        let before = try t.node.replica.counts()
        let mistakes: [(UInt32, String, [String: JSON], String)] = [
            (ana, "meetup.edit", ["id": .string(id), "title": "Mine now"], "only the meetup's host"),
            (ana, "meetup.cancel", ["id": .string(id)], "only the meetup's host"),
            (ana, "meetup.join", ["id": .string(id)], "joined this meetup already"),
            (ben, "meetup.leave", ["id": .string(id)], "have not joined"),
            (host, "meetup.join", ["id": .string(id)], "you host this meetup"),
            (ana, "meetup.create", ["title": "Past", "game": "Go", "start": 5, "place": "x", "seats": 2], "over already"),
            (ana, "meetup.create", ["title": "Both", "game": "Go", "course": "CS 490", "start": .int(start), "place": "x", "seats": 2], "not both"),
            (ana, "meetup.create", ["title": "Zero", "game": "Go", "start": .int(start), "place": "x", "seats": 0], "seats"),
            (ana, "meetup.show", ["id": "zz"], "not a meetup ID"),
        ]
        for (uid, method, params, reason) in mistakes {
            let e = t.error(uid, method, params)
            #expect(e?.message.contains(reason) == true, "\(method) \(params): \(String(describing: e))")
        }
        #expect(try t.node.replica.counts() == before, "no record written by a refused call")

        let edited = try t.call(host, "meetup.edit", ["id": .string(id), "title": "Catan & Carcassonne", "seats": 3])
        #expect(edited["title"] == "Catan & Carcassonne" && edited["left"] == 1 && edited["status"] == "open")
        let cancelled = try t.call(host, "meetup.cancel", ["id": .string(id)])
        #expect(cancelled["status"] == "cancelled")
        #expect(t.error(ben, "meetup.join", ["id": .string(id)])?.message.contains("cancelled") == true)
    }

    /// `event.meetup`: a seat (when seated, and when a leave moves one up), a reminder when it
    /// starts within 30 minutes, and the host's cancellation — each once, to the joiners only.
    @Test func joinersHearOfTheirSeatAReminderAndACancellation() throws {
        let t = try TestNode()
        for (uid, name) in [(host, "Host"), (ana, "Ana"), (ben, "Ben"), (cy, "Cy")] { try signup(t, uid, name) }
        for (uid, connection) in [(host, 1), (ana, 2), (ben, 3), (cy, 4)] as [(UInt32, UInt64)] {
            try t.call(uid, "subscribe", ["events": ["meetup"]], connection: connection)
        }
        func heard(_ connection: UInt64) -> [String] {
            t.node.queue.sync {}
            return t.events.all.filter { $0.0 == connection && $0.1.method == "event.meetup" }.compactMap {
                guard let title = $0.1.params["title"]?.stringValue, let what = $0.1.params["what"]?.stringValue else { return nil }
                return "\(title) \(what)"
            }
        }
        let now = Int64(t.wall.tick())
        let soon = try #require(try t.call(host, "meetup.create", ["title": "Go", "game": "Go", "start": .int(now + 20 * 60_000),
                                                                    "place": "Hall", "seats": 1])["id"]?.stringValue)
        let later = try #require(try t.call(host, "meetup.create", ["title": "Chess", "game": "Chess", "start": .int(now + 86_400_000),
                                                                     "place": "Hall", "seats": 2])["id"]?.stringValue)
        try t.call(ana, "meetup.join", ["id": .string(soon)])
        try t.call(cy, "meetup.join", ["id": .string(soon)])                 // the waitlist: nothing yet
        try t.call(ben, "meetup.join", ["id": .string(later)])
        #expect(heard(2) == ["Go seat", "Go reminder"], "Ana is seated, and it starts within 30 minutes")
        #expect(heard(3) == ["Chess seat"], "Ben is seated; his meetup is tomorrow")
        #expect(heard(4).isEmpty, "Cy waits")
        try t.call(ana, "meetup.leave", ["id": .string(soon)])
        #expect(heard(4) == ["Go seat", "Go reminder"], "Ana's leave seats Cy")
        try t.call(host, "meetup.cancel", ["id": .string(later)])
        #expect(heard(3) == ["Chess seat", "Chess cancelled"])
        #expect(heard(1).isEmpty && heard(2) == ["Go seat", "Go reminder"], "the host and Ana hear nothing more")
    }

    /// What a node told an account of its meetups is remembered across a restart: a standing
    /// seat is not announced again when the account unlocks on the restarted node, and a change
    /// after the restart (the host's cancellation) is.
    @Test func aRestartedNodeDoesNotTellASeatAgain() throws {
        let t = try TestNode()
        try signup(t, host, "Host")
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "correct horse"])
        let id = try #require(try t.call(host, "meetup.create", ["title": "Go", "game": "Go", "start": .int(Int64(t.wall.tick()) + 86_400_000),
                                                                  "place": "Hall", "seats": 2])["id"]?.stringValue)
        try t.call(ana, "subscribe", ["events": ["meetup"]], connection: 2)
        try t.call(ana, "meetup.join", ["id": .string(id)])
        t.node.queue.sync {}
        #expect(t.events.all.filter { $0.1.method == "event.meetup" }.compactMap { $0.1.params["what"]?.stringValue } == ["seat"])

        let restarted = try TestNode(reopening: t)
        func heard() -> [String] {
            restarted.node.queue.sync {}
            return restarted.events.all.filter { $0.1.method == "event.meetup" }.compactMap { $0.1.params["what"]?.stringValue }
        }
        #expect(restarted.error(ana, "meetup.comment", ["id": .string(id), "text": "hi"])?.code == -32002, "Ana's key is locked after the restart")
        try restarted.call(ana, "subscribe", ["events": ["meetup"]], connection: 2)
        try restarted.call(ana, "account.login", ["passphrase": "correct horse"], connection: 2)
        #expect(heard().isEmpty, "her seat was told before the restart")
        try restarted.call(host, "meetup.cancel", ["id": .string(id)])
        #expect(heard() == ["cancelled"])
    }

    @Test func ageLimitsAreEnforcedFromTheCardsAge() throws {
        let t = try TestNode()
        try signup(t, host, "Host", birthdate: "1990-01-01")
        try signup(t, dee, "Dee")                                // no birth date: no age on the card
        try signup(t, eve, "Eve", birthdate: "2012-06-01")       // 14 (the test clock is in January 2027)
        try signup(t, ana, "Ana", birthdate: "2000-03-04")
        let start = Int64(t.wall.tick() + 3_600_000)
        let id = try #require(try t.call(host, "meetup.create", ["title": "Poker", "game": "Poker", "start": .int(start), "place": "Hall",
                                                                  "seats": 4, "min_age": 18, "max_age": 120])["id"]?.stringValue)
        #expect(t.error(dee, "meetup.join", ["id": .string(id)])?.message.contains("your card shows no age") == true)
        #expect(t.error(eve, "meetup.join", ["id": .string(id)])?.message.contains("for ages 18-120; your card says 14") == true)
        let joined = try t.call(ana, "meetup.join", ["id": .string(id)])
        #expect(joined["you"] == "seat 1" && joined["min_age"] == 18)
    }

    @Test func theOpenListIsSoonestFirstAndFiltered() throws {
        let t = try TestNode()
        try signup(t, host, "Host"); try signup(t, ana, "Ana")
        let now = Int64(t.wall.tick())
        for (title, topic, offset) in [("Later", ["course": JSON.string("CS 490")], 7_200_000), ("Soon", ["game": "Go"], 600_000),
                                       ("Under way", ["game": "Chess"], -1_800_000)] as [(String, [String: JSON], Int64)] {
            var params: [String: JSON] = ["title": .string(title), "start": .int(now + offset), "place": "Hall", "seats": 4, "duration": 60]
            for (k, v) in topic { params[k] = v }
            // "Under way" started half an hour ago: allowed, as it is not over yet.
            try t.call(host, "meetup.create", params)
        }
        // A game named as in the catalogue takes its spelling, and `game.show` lists the meetup.
        try t.call(host, "meetup.create", ["title": "Settlers", "game": "  catan ", "start": .int(now + 1_800_000), "place": "Hall", "seats": 4])
        let catan = try t.call(ana, "game.show", ["name": "Catan"])
        #expect((catan["meetups"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue } == ["Settlers"], "\(catan)")
        #expect((try t.call(ana, "meetups", ["game": "CATAN"])["meetups"]?.arrayValue ?? []).first?["topic"] == "Catan")
        let titles = (try t.call(ana, "meetups")["meetups"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue }
            .filter { $0 != "Settlers" }
        #expect(titles == ["Under way", "Soon", "Later"], "\(titles)")
        #expect((try t.call(ana, "meetups", ["course": "cs 490"])["meetups"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue } == ["Later"])
        #expect((try t.call(ana, "meetups", ["search": "soon"])["meetups"]?.arrayValue ?? []).count == 1)
        #expect((try t.call(ana, "meetups", ["from": .int(now + 3_600_000), "to": .int(now + 86_400_000)])["meetups"]?.arrayValue ?? []).count == 1)
        let underway = (try t.call(ana, "meetups")["meetups"]?.arrayValue ?? []).first
        #expect(underway?["status"] == "under way")
    }
}
