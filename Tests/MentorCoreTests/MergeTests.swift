import Testing
@testable import MentorCore

@Suite struct RegisterTests {
    let a = PublicKey(bytes: [UInt8](repeating: 1, count: 32))!
    let b = PublicKey(bytes: [UInt8](repeating: 2, count: 32))!

    func entry(_ clock: [(PublicKey, UInt64)], ts: UInt64, id: UInt8, _ v: String) -> RegisterEntry<String> {
        RegisterEntry(clock: VectorClock(clock), timestamp: ts, recordID: [id], value: v)
    }

    @Test func laterWriteReplacesEarlierAndDuplicatesChangeNothing() throws {
        let e1 = entry([(a, 1)], ts: 10, id: 1, "x"), e2 = entry([(a, 2)], ts: 5, id: 2, "y")
        let s1 = try #require(MVRegister.merge([], e1))
        let s2 = try #require(MVRegister.merge(s1, e2))
        #expect(s2 == [e2])                        // clock order wins over timestamps
        #expect(MVRegister.merge(s2, e1) == nil)   // old write arriving late changes nothing
        #expect(MVRegister.merge(s2, e2) == nil)   // duplicate
    }

    @Test func concurrentWritesKeepTheLoserAsConflictUntilOverwritten() throws {
        let x = entry([(a, 1)], ts: 10, id: 1, "x"), y = entry([(b, 1)], ts: 20, id: 2, "y")
        let s0 = try #require(MVRegister.merge([], x))
        let s = try #require(MVRegister.merge(s0, y))
        #expect(MVRegister.winner(s)?.value == "y")
        #expect(s.map(\.value) == ["y", "x"])       // the loser stays visible
        let z = entry([(a, 1), (b, 1)], ts: 1, id: 3, "z")
        #expect(try #require(MVRegister.merge(s, z)) == [z])
    }

    @Test func anyOrderWithDuplicatesGivesTheSameRegister() {
        var rng = SeededRandom(seed: 7)
        let writers = [a, b]
        var pool: [RegisterEntry<String>] = []
        for i in 0..<12 {
            let w = writers[i % 2]
            let clock = [(w, UInt64(i / 2 + 1)), (writers[(i + 1) % 2], UInt64.random(in: 0...UInt64(i / 2), using: &rng))]
            pool.append(entry(clock, ts: UInt64.random(in: 0...5, using: &rng), id: UInt8(i), "v\(i)"))
        }
        var reference: [RegisterEntry<String>]?
        for _ in 0..<200 {
            var state: [RegisterEntry<String>] = []
            for e in (pool + pool.prefix(4)).shuffled(using: &rng) { state = MVRegister.merge(state, e) ?? state }
            if let ref = reference { #expect(state == ref) } else { reference = state }
        }
    }
}

@Suite struct PairViewTests {
    let ana = PublicKey(bytes: [UInt8](repeating: 1, count: 32))!
    let ben = PublicKey(bytes: [UInt8](repeating: 2, count: 32))!

    func e(_ who: PublicKey, _ seq: UInt64, _ kind: PairEntry.Kind, ts: UInt64 = 0) -> PairEntry {
        PairEntry(author: who, seq: seq, timestamp: ts == 0 ? seq * 10 : ts, recordID: who.bytes.prefix(1) + [UInt8(seq)], kind: kind)
    }

    @Test func mutualLikesMatchAndOneSidedDoesNot() {
        let oneSided = PairView.build(me: ana, other: ben, entries: [e(ana, 1, .like(true))])
        #expect(oneSided.iLike && !oneSided.theyLike && !oneSided.matched)
        let both = PairView.build(me: ana, other: ben, entries: [e(ana, 1, .like(true)), e(ben, 1, .like(true))])
        #expect(both.matched)
        let undone = PairView.build(me: ana, other: ben, entries: [e(ana, 1, .like(true)), e(ana, 2, .like(false)), e(ben, 1, .like(true))])
        #expect(!undone.matched && !undone.iLike)
    }

    @Test func chatBeforeTheMatchIsRejectedAndAfterItIsShownInCausalOrder() {
        let entries = [
            e(ana, 1, .like(true)),
            e(ana, 2, .chat(peerSeq: 0, text: "too early")),           // Ben's like not seen yet
            e(ben, 1, .like(true)),
            e(ana, 3, .chat(peerSeq: 1, text: "hi Ben"), ts: 500),
            e(ben, 2, .chat(peerSeq: 3, text: "hi Ana"), ts: 100),    // clock skew: earlier stamp, later causally
            e(ben, 3, .chat(peerSeq: 1, text: "concurrent"), ts: 50),
        ]
        var rng = SeededRandom(seed: 1)
        for _ in 0..<50 {
            let view = PairView.build(me: ana, other: ben, entries: (entries + entries).shuffled(using: &rng))
            #expect(view.rejectedMessages == 1)
            #expect(view.messages.map(\.text) == ["hi Ben", "hi Ana", "concurrent"])
        }
    }

    @Test func unmatchIsFinalAndEndsTheConversationForBoth() {
        let entries = [e(ana, 1, .like(true)), e(ben, 1, .like(true)), e(ana, 2, .chat(peerSeq: 1, text: "hello")),
                       e(ben, 2, .unmatch(peerSeq: 2)), e(ana, 3, .chat(peerSeq: 2, text: "still there?"))]
        let forAna = PairView.build(me: ana, other: ben, entries: entries)
        let forBen = PairView.build(me: ben, other: ana, entries: entries.reversed())
        #expect(forAna.unmatchedBy == ben && forBen.unmatchedBy == ben)
        #expect(!forAna.matched && !forBen.matched)
        #expect(forAna.messages.isEmpty && forBen.messages.isEmpty)
    }
}

@Suite struct FeedTests {
    func key(_ n: UInt8) -> PublicKey { PublicKey(bytes: [UInt8](repeating: n, count: 32))! }

    @Test func studentsSeeTutorsRankedBySharedCoursesThenNearbyThenRecency() {
        let c = [
            Feed.Candidate(key: key(1), role: .tutor, courses: [490], updatedAt: 10, nearby: false),
            Feed.Candidate(key: key(2), role: .tutor, courses: [490, 221], updatedAt: 1, nearby: false),
            Feed.Candidate(key: key(3), role: .tutor, courses: [490], updatedAt: 5, nearby: true),
            Feed.Candidate(key: key(4), role: .student, courses: [490], updatedAt: 99, nearby: true),
            Feed.Candidate(key: key(5), role: .tutor, courses: [100], updatedAt: 50, nearby: false),
            Feed.Candidate(key: key(6), role: .tutor, courses: [490], updatedAt: 99, nearby: true),
        ]
        let feed = Feed.rank(role: .student, courses: [490, 221], excluded: [key(6)], candidates: c, course: nil, limit: 10)
        #expect(feed.map(\.key) == [key(2), key(3), key(1), key(5)])
        #expect(feed[0].sharedCourses == [490, 221])
        let filtered = Feed.rank(role: .student, courses: [], excluded: [], candidates: c, course: 221, limit: 10)
        #expect(filtered.map(\.key) == [key(2)])
        let tutorView = Feed.rank(role: .tutor, courses: [490], excluded: [], candidates: c, course: nil, limit: 1)
        #expect(tutorView.map(\.key) == [key(4)])
    }
}
