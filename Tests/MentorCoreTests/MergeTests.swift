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

    func id(_ who: PublicKey, _ seq: UInt64) -> [UInt8] { who.bytes.prefix(1) + [UInt8(seq)] }

    func e(_ who: PublicKey, _ seq: UInt64, _ kind: PairEntry.Kind, ts: UInt64 = 0) -> PairEntry {
        PairEntry(author: who, seq: seq, timestamp: ts == 0 ? seq * 10 : ts, recordID: id(who, seq), kind: kind)
    }

    func like(_ who: PublicKey, _ seq: UInt64, peer: UInt64 = 0) -> PairEntry { e(who, seq, .like(true, peerSeq: peer)) }
    func withdraw(_ who: PublicKey, _ seq: UInt64, peer: UInt64) -> PairEntry { e(who, seq, .like(false, peerSeq: peer)) }
    func chat(_ who: PublicKey, _ seq: UInt64, peer: UInt64, answers: [UInt8]?, _ text: String, ts: UInt64 = 0) -> PairEntry {
        e(who, seq, .chat(peerSeq: peer, answers: answers, text: text), ts: ts)
    }

    /// The view for `me`, built from the entries in 40 shuffled orders with duplicates; every
    /// order must give the same view (the view is a function of the set of entries).
    func view(_ me: PublicKey, _ entries: [PairEntry], sourceLocation: SourceLocation = #_sourceLocation) -> PairView {
        let other = me == ana ? ben : ana
        let reference = PairView.build(me: me, other: other, entries: entries)
        var rng = SeededRandom(seed: 7)
        for _ in 0..<40 {
            let shuffled = (entries + entries.prefix(3)).shuffled(using: &rng)
            #expect(PairView.build(me: me, other: other, entries: shuffled) == reference, sourceLocation: sourceLocation)
        }
        return reference
    }

    @Test func mutualLikesMatchAndOneSidedDoesNot() {
        let oneSided = PairView.build(me: ana, other: ben, entries: [like(ana, 1)])
        #expect(oneSided.iLike && !oneSided.theyLike && !oneSided.matched)
        let both = PairView.build(me: ana, other: ben, entries: [like(ana, 1), like(ben, 1)])
        #expect(both.matched)
        let undone = PairView.build(me: ana, other: ben, entries: [like(ana, 1), withdraw(ana, 2, peer: 1), like(ben, 1)])
        #expect(!undone.matched && !undone.iLike)
    }

    @Test func chatBeforeTheMatchIsRejectedAndAfterItIsShownInCausalOrder() {
        let entries = [
            like(ana, 1),
            chat(ana, 2, peer: 0, answers: nil, "too early"),                      // Ben's like not seen yet
            like(ben, 1, peer: 2),
            chat(ana, 3, peer: 1, answers: id(ben, 1), "hi Ben", ts: 500),
            chat(ben, 2, peer: 3, answers: id(ana, 1), "hi Ana", ts: 100),    // clock skew: earlier stamp, later causally
            chat(ben, 3, peer: 1, answers: id(ana, 1), "concurrent", ts: 50),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.matched && v.rejectedMessages == 1)
            #expect(v.messages.map(\.text) == ["hi Ben", "hi Ana", "concurrent"])
        }
    }

    /// Attack 1 of issue 11: Ana liked Ben (seq 5) and withdrew (seq 6, having seen Ben's records
    /// up to his seq 3). Ben likes her and writes against her withdrawn like, with a peer seq
    /// that points before the withdrawal. Neither side shows the messages, in any order.
    @Test func messagesWrittenAgainstAWithdrawnLikeAreNotShown() {
        let entries = [
            like(ana, 5, peer: 3), withdraw(ana, 6, peer: 3),
            like(ben, 10, peer: 6),
            chat(ben, 11, peer: 5, answers: id(ana, 5), "cites the withdrawn like"),
            chat(ben, 12, peer: 5, answers: nil, "names no like at all (the old payload)"),
            chat(ben, 13, peer: 6, answers: id(ana, 6), "cites the withdrawal itself"),
            chat(ben, 14, peer: 6, answers: id(ben, 10), "cites his own like"),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(!v.matched)
            #expect(v.messages.isEmpty, "shown: \(v.messages.map(\.text))")
            #expect(v.rejectedMessages == 4)
        }
    }

    /// Attack 2 of issue 11: Ben writes before Ana ever liked him, with a huge peer seq. Whatever
    /// like ID he names — a made-up one, none, or (had he guessed it) her later like's with a
    /// peer seq below it — nothing appears when Ana likes him, and the match itself still works.
    @Test func messagesWrittenBeforeTheRecipientLikedNeverAppear() {
        let before = [
            like(ben, 1),
            chat(ben, 2, peer: 1_000_000, answers: [UInt8](repeating: 9, count: 32), "made-up like ID"),
            chat(ben, 3, peer: .max, answers: nil, "no like ID"),
            chat(ben, 4, peer: 0, answers: id(ana, 1), "Ana's future like, not applied"),
        ]
        #expect(view(ana, before).messages.isEmpty)
        let after = before + [like(ana, 1, peer: 4)]
        for me in [ana, ben] {
            let v = view(me, after)
            #expect(v.matched)
            #expect(v.messages.isEmpty, "shown: \(v.messages.map(\.text))")
            #expect(v.rejectedMessages == 3)
        }
        // Once matched, Ben's real message (answering Ana's like, having applied it) shows.
        let honest = after + [chat(ben, 5, peer: 1, answers: id(ana, 1), "hello")]
        #expect(view(ana, honest).messages.map(\.text) == ["hello"])
    }

    /// "The conversation stays visible" after a withdrawal: what Ana had seen when she withdrew
    /// stays, on both sides; a message Ben wrote that she had not seen does not appear.
    @Test func withdrawingKeepsTheMessagesSeenAndHidesThoseNotSeen() {
        let entries = [
            like(ana, 1), like(ben, 1, peer: 1),
            chat(ben, 2, peer: 1, answers: id(ana, 1), "seen by Ana"),
            chat(ana, 2, peer: 2, answers: id(ben, 1), "Ana's answer"),
            withdraw(ana, 3, peer: 2),
            chat(ben, 3, peer: 2, answers: id(ana, 1), "written while Ana withdrew, unseen"),
            chat(ana, 4, peer: 3, answers: id(ben, 1), "Ana after withdrawing"),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(!v.matched)
            #expect(v.messages.map(\.text) == ["seen by Ana", "Ana's answer"])
            #expect(v.rejectedMessages == 2)
        }
    }

    /// A like given again after a withdrawal restores the match: messages answering the new like
    /// are shown, one answering the withdrawn like (written after the withdrawal) is not.
    @Test func likingAgainAfterAWithdrawalRestoresTheConversation() {
        let entries = [
            like(ana, 1), withdraw(ana, 2, peer: 0), like(ana, 3, peer: 1),
            like(ben, 1, peer: 1),
            chat(ben, 2, peer: 3, answers: id(ana, 3), "answers the new like"),
            chat(ben, 3, peer: 1, answers: id(ana, 1), "answers the withdrawn like"),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.matched)
            #expect(v.messages.map(\.text) == ["answers the new like"])
            #expect(v.rejectedMessages == 1)
        }
        #expect(PairView.currentLike(of: ana, in: entries)?.recordID == id(ana, 3))
        #expect(PairView.currentLike(of: ana, in: entries + [withdraw(ana, 4, peer: 3)]) == nil)
    }

    /// Honest concurrency: Ben writes while Ana withdraws, neither having seen the other's
    /// record. Ana had withdrawn, so the message is hidden — on both sides alike.
    @Test func aMessageConcurrentWithAWithdrawalIsHiddenOnBothSides() {
        let entries = [
            like(ana, 1), like(ben, 1, peer: 1),
            chat(ben, 2, peer: 1, answers: id(ana, 1), "concurrent with the withdrawal"),
            withdraw(ana, 2, peer: 1),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.messages.isEmpty && v.rejectedMessages == 1)
        }
        // Had Ana applied it before withdrawing (peer seq 2), it would stay.
        let seen = Array(entries.dropLast()) + [withdraw(ana, 2, peer: 2)]
        #expect(view(ben, seen).messages.map(\.text) == ["concurrent with the withdrawal"])
    }

    @Test func unmatchIsFinalAndEndsTheConversationForBoth() {
        let entries = [like(ana, 1), like(ben, 1), chat(ana, 2, peer: 1, answers: id(ben, 1), "hello"),
                       e(ben, 2, .unmatch(peerSeq: 2)), chat(ana, 3, peer: 2, answers: id(ben, 1), "still there?")]
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
