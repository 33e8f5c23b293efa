import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Meetups (record types 14-16, PROTOCOL.md §6.7): the host's edits and roster decide, in any
/// order of arrival; seats are never overbooked; a leave promotes the first on the waitlist.
@Suite struct MeetupReplicaTests {
    static let host = keyPair(190), ana = keyPair(191), ben = keyPair(192), cy = keyPair(193), dee = keyPair(194)
    static let start: UInt64 = 1_800_000_000_000

    static func cards() throws -> (records: [VerifiedRecord], writers: [RecordWriter]) {
        var out: [VerifiedRecord] = [], writers: [RecordWriter] = []
        for (keys, name) in [(host, "Host"), (ana, "Ana"), (ben, "Ben"), (cy, "Cy"), (dee, "Dee")] {
            var w = RecordWriter(keys: keys)
            out.append(try w.profile(ProfileCard(name: name, role: .student), at: 1))
            writers.append(w)
        }
        return (out, writers)
    }

    static let fields = Meetup.Fields(title: "Catan night", topic: Meetup.Topic(kind: .game, name: "Catan"), start: start,
                                      duration: 120, place: "Library room 2", seats: 2)

    @Test func theHostsRosterSeatsJoinsAndEveryOrderAgrees() throws {
        var (cards, w) = try Self.cards()
        let create = try w[0].meetup(.create(Self.fields), at: 100)
        let m = create.id
        let anaJoin = try w[1].meetupJoin(m, at: 200), benJoin = try w[2].meetupJoin(m, at: 210), cyJoin = try w[3].meetupJoin(m, at: 190)
        // The host's node saw Ana, then Ben, then Cy (Cy's clock claims earlier: it does not matter).
        let roster = try w[0].meetupRoster(m, joins: [anaJoin.id, benJoin.id, cyJoin.id], at: 300)
        let edit = try w[0].meetup(.edit(meetup: m, Meetup.Fields(title: "Catan & Carcassonne", place: "Library room 3")), at: 400)
        let forgedEdit = try w[4].meetup(.edit(meetup: m, Meetup.Fields(title: "Cancelled! (not)")), at: 500)
        let forgedRoster = try w[4].meetupRoster(m, joins: [cyJoin.id], at: 600)
        let deeJoin = try w[4].meetupJoin(m, at: 610)
        let all = [create, anaJoin, benJoin, cyJoin, roster, edit, forgedEdit, forgedRoster, deeJoin]
        var rng = SeededRandom(seed: 14)
        for order in [all, all.reversed(), all.shuffled(using: &rng), all.shuffled(using: &rng)] {
            let r = try memoryReplica()
            for v in cards + order { #expect(try r.applyOne(v) == .applied) }
            let s = try #require(try r.meetup(m))
            #expect(s.title == "Catan & Carcassonne" && s.place == "Library room 3", "only the host's edit counts")
            #expect(s.seats == 2 && s.taken == 2 && !s.cancelled)
            let people = try r.meetupAttendees(s)
            #expect(people.map(\.account) == [Self.ana, Self.ben, Self.cy, Self.dee].map { $0.publicKey.key })
            #expect(people.map(\.place) == [.seat(1), .seat(2), .waitlist(1), .pending], "the host's roster, not Dee's")
            #expect(try r.meetups(MeetupFilter(now: Self.start)).isEmpty, "full: not open")
            var all = MeetupFilter(now: Self.start); all.all = true
            #expect(try r.meetups(all).map(\.id) == [m])
        }
        // Ben leaves: Cy moves up at once, everywhere, before any new roster.
        let r = try memoryReplica()
        for v in cards + all { _ = try r.applyOne(v) }
        _ = try r.applyOne(try w[2].meetupJoin(m, joining: false, at: 700))
        let s = try #require(try r.meetup(m))
        #expect(try r.meetupAttendees(s).map(\.place) == [.seat(1), .seat(2), .pending] && s.taken == 2)
        // Ben joins again: a new join, pending until the host's node puts it on a roster.
        let rejoin = try w[2].meetupJoin(m, at: 800)
        _ = try r.applyOne(rejoin)
        let again = try r.meetupAttendees(try #require(try r.meetup(m)))
        #expect(again.first { $0.account == Self.ben.publicKey.key }?.place == .pending)
        // The host cancels: not open, shown as cancelled; a forged cancel would not have counted.
        _ = try r.applyOne(try w[0].meetup(.cancel(meetup: m), at: 900))
        #expect(try r.meetup(m)?.cancelled == true)
    }

    @Test func openMeetupsAreExcludedExactlyAtTheirBoundaries() throws {
        var (cards, w) = try Self.cards()
        var early = Self.fields; early.start = Self.start - 60 * 60_000; early.duration = 60       // ends exactly at `start`
        var now = Self.fields; now.start = Self.start; now.title = "Starts now"                   // starts at the current minute
        var later = Self.fields; later.start = Self.start + 86_400_000; later.topic = Meetup.Topic(kind: .course, name: "CS 490")
        let records = [try w[0].meetup(.create(early), at: 10), try w[0].meetup(.create(now), at: 11), try w[0].meetup(.create(later), at: 12)]
        let r = try memoryReplica()
        for v in cards + records { _ = try r.applyOne(v) }
        let open = try r.meetups(MeetupFilter(now: Self.start))
        #expect(open.map(\.title) == ["Starts now", "Catan night"], "ended one left out; soonest first")
        var course = MeetupFilter(now: Self.start); course.topic = Meetup.Topic(kind: .course, name: "cs 490")
        #expect(try r.meetups(course).map(\.start) == [later.start!])
        var search = MeetupFilter(now: Self.start); search.search = "now"
        #expect(try r.meetups(search).map(\.title) == ["Starts now"])
        var day = MeetupFilter(now: Self.start); day.startRange = (Self.start + 86_400_000)..<(Self.start + 2 * 86_400_000)
        #expect(try r.meetups(day).count == 1)
        var mine = MeetupFilter(now: Self.start); mine.involving = Self.ana.publicKey.key
        #expect(try r.meetups(mine).isEmpty)
        _ = try r.applyOne(try w[1].meetupJoin(records[1].id, at: 20))
        #expect(try r.meetups(mine).map(\.title) == ["Starts now"])
    }

    /// A week after a meetup ends its records leave the replica (the tables, the records, the
    /// digest) and copies offered again are not stored; a meetup not yet a week over stays.
    @Test func meetupsAreCollectedAWeekAfterTheyEnd() throws {
        var (cards, w) = try Self.cards()
        let m = try w[0].meetup(.create(Self.fields), at: 100)          // ends at start + 2 h
        var later = Self.fields; later.start = Self.start + 30 * 86_400_000
        let keep = try w[0].meetup(.create(later), at: 101)
        let join = try w[1].meetupJoin(m.id, at: 200)
        let roster = try w[0].meetupRoster(m.id, joins: [join.id], at: 300)
        let r = try memoryReplica()
        for v in cards + [m, keep, join, roster] { #expect(try r.applyOne(v) == .applied) }
        let ends = Self.start + 120 * 60_000
        #expect(try r.collectMeetups(now: ends + 7 * 86_400_000 - 1) == 0, "not yet a week")
        let before = try r.counts().records
        #expect(try r.collectMeetups(now: ends + 7 * 86_400_000 + 1) == 1)
        #expect(try r.meetup(m.id) == nil && r.meetup(keep.id) != nil)
        #expect(try r.counts().records == before - 3, "the create, the join and the roster")
        // The same records again, and a late join: none is stored.
        for v in [m, join, roster] { #expect(try r.applyOne(v) != .applied) }
        #expect(try r.applyOne(try w[2].meetupJoin(m.id, at: 400)) != .applied)
        #expect(try r.counts().records == before - 3 && r.meetup(m.id) == nil)
        // A replica that never held it drops it on arrival once it ended a week ago.
        var settings = testSettings(); settings.now = { ends + 8 * 86_400_000 }
        let fresh = try memoryReplica(settings: settings)
        for v in cards { _ = try fresh.applyOne(v) }
        #expect(try fresh.applyOne(m) != .applied && fresh.meetup(m.id) == nil)
    }

    /// Comments on a meetup (record type 10 naming it, PROTOCOL.md §6.6): everyone comments,
    /// the host hides, a writer deletes — in every order of arrival, a hide by someone not the
    /// host counts nowhere (refused once the meetup is held, dropped when it arrives later) —
    /// and a week after the meetup ends they leave the replica with it.
    @Test func commentsOnAMeetupAreTheHostsToHideInEveryOrderAndGoWithIt() throws {
        var (cards, w) = try Self.cards()
        let create = try w[0].meetup(.create(Self.fields), at: 100)
        let m = create.id
        let snacks = try w[1].comment(on: m, .create(text: "I'll bring snacks"), at: 200)
        let spam = try w[2].comment(on: m, .create(text: "cheap dice here"), at: 210)
        let hide = try w[0].comment(on: m, .hide(comment: spam.id), at: 220)
        let forgedHide = try w[4].comment(on: m, .hide(comment: snacks.id), at: 230)
        let typo = try w[3].comment(on: m, .create(text: "se you"), at: 240)
        let typoDeleted = try w[3].comment(on: m, .delete(comment: typo.id), at: 250)
        let all = [create, snacks, spam, hide, forgedHide, typo, typoDeleted]
        var rng = SeededRandom(seed: 10)
        for order in [all, all.reversed(), all.shuffled(using: &rng), all.shuffled(using: &rng)] {
            let r = try memoryReplica()
            for v in cards + order { _ = try r.applyOne(v) }
            #expect(try r.comments(of: m, viewer: nil).map(\.text) == ["I'll bring snacks"], "hidden and deleted ones left out")
            #expect(try r.comments(of: m, viewer: Self.ben.publicKey.key).map(\.text) == ["I'll bring snacks", "cheap dice here"],
                    "its writer still sees the hidden one")
            #expect(try r.comment(snacks.id)?.hidden == false, "Dee is not the host: her hide does not count")
            #expect(try r.comment(typo.id) == nil, "deleted by its writer")
            // Stored: the cards, the meetup, two comments, the host's hide and the deletion.
            #expect(try r.counts().records == cards.count + 5, "the forged hide and the deleted comment are not kept")
        }
        let r = try memoryReplica()
        for v in cards + all { _ = try r.applyOne(v) }
        #expect(try r.collectMeetups(now: Self.start + 120 * 60_000 + 7 * 86_400_000 + 1) == 1)
        #expect(try r.comments(of: m, viewer: Self.ben.publicKey.key).isEmpty && r.comment(snacks.id) == nil)
        #expect(try r.counts().records == cards.count, "its comments, the hide and the deletion went with it")
        #expect(try r.applyOne(snacks) != .applied && r.applyOne(try w[4].comment(on: m, .create(text: "late"), at: 300)) != .applied,
                "nothing naming a collected meetup is stored again")
    }

    @Test func malformedMeetupBodiesAreRefused() throws {
        func code(_ body: [UInt8]) -> RecordError.Code? {
            do { _ = try Meetup(body: body); return nil } catch { return error.code }
        }
        let good = Meetup(.create(Self.fields)).body
        #expect(code(good) == nil)
        var f = Self.fields; f.seats = 0
        #expect(code(Meetup(.create(f)).body) == .invalidBody)
        f = Self.fields; f.duration = 5
        #expect(code(Meetup(.create(f)).body) == .invalidBody)
        f = Self.fields; f.ages = (17, 16)
        #expect(code(Meetup(.create(f)).body) == .invalidBody)
        f = Self.fields; f.place = nil
        #expect(code(Meetup(.create(f)).body) == .invalidBody)
        #expect(code(Meetup(.edit(meetup: [UInt8](repeating: 1, count: 32), Meetup.Fields())).body) == .invalidBody)
        #expect(code(Meetup(.edit(meetup: [UInt8](repeating: 1, count: 32), Meetup.Fields(ages: (0, 0)))).body) == nil)
        #expect(code(Meetup(.cancel(meetup: [UInt8](repeating: 1, count: 32))).body + [11, 0, 0]) == .malformed)
        #expect(throws: RecordError.self) { try MeetupRoster(body: MeetupRoster(meetup: [UInt8](repeating: 1, count: 32),
                                                                               joins: [[UInt8](repeating: 2, count: 32), [UInt8](repeating: 2, count: 32)]).body) }
        #expect(throws: RecordError.self) { try MeetupJoin(body: [1, 0, 32] + [UInt8](repeating: 1, count: 32) + [2, 0, 1, 2]) }
        let m = try Meetup(body: good)
        #expect(m == Meetup(.create(Self.fields)))
    }
}
