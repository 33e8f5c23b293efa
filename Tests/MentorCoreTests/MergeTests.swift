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
    /// A message at `place` (§8.6) naming the match of `mine` (the sender's like) and `answers`
    /// (the recipient's).
    func chat(_ who: PublicKey, _ seq: UInt64, place: UInt64, answers: [UInt8]?, mine: [UInt8]?, _ text: String, ts: UInt64 = 0) -> PairEntry {
        e(who, seq, .chat(peerSeq: place, answers: answers, mine: mine, text: text), ts: ts)
    }
    func unmatch(_ who: PublicKey, _ seq: UInt64, answers: [UInt8]?, mine: [UInt8]?) -> PairEntry {
        e(who, seq, .unmatch(peerSeq: 0, answers: answers, mine: mine))
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

    @Test func messagesNamingTheMatchAreShownInPlaceOrderOthersRejected() {
        let entries = [
            like(ana, 1),
            chat(ana, 2, place: 1, answers: nil, mine: id(ana, 1), "too early"),            // no like of Ben's to name
            like(ben, 1),
            chat(ana, 3, place: 1, answers: id(ben, 1), mine: id(ana, 1), "hi Ben", ts: 500),
            chat(ben, 2, place: 2, answers: id(ana, 1), mine: id(ben, 1), "hi Ana", ts: 100),    // clock skew: the place orders
            chat(ben, 3, place: 2, answers: id(ana, 1), mine: id(ben, 1), "concurrent", ts: 50),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.matched && v.rejectedMessages == 1)
            #expect(v.messages.map(\.text) == ["hi Ben", "concurrent", "hi Ana"])
        }
    }

    /// Attack 1 of issue 11: Ana liked Ben (seq 5) and withdrew (seq 6). Ben likes her and writes
    /// naming her withdrawn like, or no like, or the withdrawal, or his own like twice. None is
    /// shown: the withdrawn like no longer stands.
    @Test func messagesNamingAWithdrawnLikeAreNotShown() {
        let entries = [
            like(ana, 5), withdraw(ana, 6, peer: 3),
            like(ben, 10),
            chat(ben, 11, place: 1, answers: id(ana, 5), mine: id(ben, 10), "cites the withdrawn like"),
            chat(ben, 12, place: 2, answers: nil, mine: id(ben, 10), "names no like of Ana's"),
            chat(ben, 13, place: 3, answers: id(ana, 6), mine: id(ben, 10), "cites the withdrawal itself"),
            chat(ben, 14, place: 4, answers: id(ben, 10), mine: id(ben, 10), "cites his own like twice"),
        ]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(!v.matched)
            #expect(v.messages.isEmpty, "shown: \(v.messages.map(\.text))")
            #expect(v.rejectedMessages == 4)
        }
    }

    /// Attack 2 of issue 11: Ben writes before Ana ever liked him. He cannot name her like — its
    /// record ID does not exist yet — so whatever he names, nothing appears when she likes him.
    @Test func messagesWrittenBeforeTheRecipientLikedNeverAppear() {
        let before = [
            like(ben, 1),
            chat(ben, 2, place: 1_000_000, answers: [UInt8](repeating: 9, count: 32), mine: id(ben, 1), "made-up like ID"),
            chat(ben, 3, place: .max, answers: nil, mine: id(ben, 1), "no like ID"),
        ]
        #expect(view(ana, before).messages.isEmpty)
        let after = before + [like(ana, 1)]
        for me in [ana, ben] {
            let v = view(me, after)
            #expect(v.matched)
            #expect(v.messages.isEmpty, "shown: \(v.messages.map(\.text))")
            #expect(v.rejectedMessages == 2)
        }
        // Once matched, Ben's real message (naming both likes) shows.
        let honest = after + [chat(ben, 5, place: 1, answers: id(ana, 1), mine: id(ben, 1), "hello")]
        #expect(view(ana, honest).messages.map(\.text) == ["hello"])
    }

    /// The conversation belongs to its match: when a like of it is withdrawn the match ends and
    /// its messages are no longer shown; liking again makes a new match, whose conversation
    /// starts empty — a message naming the old like does not come back.
    @Test func aNewMatchAfterAWithdrawalStartsAnEmptyConversation() {
        let first = [
            like(ana, 1), like(ben, 1),
            chat(ben, 2, place: 1, answers: id(ana, 1), mine: id(ben, 1), "first match"),
        ]
        let withdrawn = first + [withdraw(ana, 2, peer: 2)]
        for me in [ana, ben] {
            let v = view(me, withdrawn)
            #expect(!v.matched && v.messages.isEmpty)
        }
        let again = withdrawn + [like(ana, 3), chat(ben, 3, place: 2, answers: id(ana, 3), mine: id(ben, 1), "second match")]
        for me in [ana, ben] {
            let v = view(me, again)
            #expect(v.matched)
            #expect(v.messages.map(\.text) == ["second match"])
        }
        #expect(PairView.currentLike(of: ana, in: again)?.recordID == id(ana, 3))
        #expect(PairView.currentLike(of: ana, in: again + [withdraw(ana, 4, peer: 3)]) == nil)
    }

    /// Likes from two devices of one account: a register over the devices' clocks. Concurrent
    /// likes both stand (a message naming either shows); a later withdrawal that saw both ends
    /// the match; one that saw only one leaves the other standing.
    @Test func likesFromTwoDevicesAreOneRegisterOverTheirClocks() {
        let laptop = PublicKey(bytes: [UInt8](repeating: 0x51, count: 32))!, lab = PublicKey(bytes: [UInt8](repeating: 0x52, count: 32))!
        func deviceLike(_ device: PublicKey, _ seq: UInt64, _ liked: Bool, saw: [(PublicKey, UInt64)] = []) -> PairEntry {
            PairEntry(author: ana, seq: seq, timestamp: seq * 10, recordID: [UInt8](repeating: UInt8(seq), count: 31) + device.bytes.prefix(1),
                      kind: .like(liked, peerSeq: 0), clock: VectorClock([(device, seq)] + saw))
        }
        let a1 = deviceLike(laptop, 1, true), a2 = deviceLike(lab, 2, true)
        let entries = [a1, a2, like(ben, 1),
                       chat(ben, 2, place: 1, answers: a1.recordID, mine: id(ben, 1), "to the laptop's like"),
                       chat(ben, 3, place: 2, answers: a2.recordID, mine: id(ben, 1), "to the lab's like")]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.matched && v.messages.map(\.text) == ["to the laptop's like", "to the lab's like"])
        }
        let partial = entries + [deviceLike(laptop, 3, false, saw: [])]          // saw its own like only
        #expect(view(ana, partial).matched)
        #expect(view(ana, partial).messages.map(\.text) == ["to the lab's like"])
        let both = entries + [deviceLike(laptop, 3, false, saw: [(lab, 2)])]      // saw both
        #expect(!view(ana, both).matched && view(ana, both).messages.isEmpty)
        #expect(PairView.likeClock(of: ana, in: entries) == VectorClock([(laptop, 1), (lab, 2)]))
    }

    @Test func anUnmatchEndsThatMatchOnlyAndTheTwoMayMatchAgain() {
        let entries = [like(ana, 1), like(ben, 1), chat(ana, 2, place: 1, answers: id(ben, 1), mine: id(ana, 1), "hello"),
                       unmatch(ben, 2, answers: id(ana, 1), mine: id(ben, 1)),
                       chat(ana, 3, place: 2, answers: id(ben, 1), mine: id(ana, 1), "still there?")]
        for me in [ana, ben] {
            let v = view(me, entries)
            #expect(v.unmatchedBy == ben && !v.matched)
            #expect(v.messages.isEmpty && v.rejectedMessages == 0)
        }
        // Ben's unmatch ended his like too: Ana liking again does not match them by itself.
        let anaAgain = entries + [like(ana, 5)]
        #expect(!view(ana, anaAgain).matched && !view(ben, anaAgain).iLike && view(ben, anaAgain).theyLike)
        // New likes on both sides: a new match, an empty conversation; the old one stays ended.
        let again = anaAgain + [like(ben, 4), chat(ben, 5, place: 3, answers: id(ana, 5), mine: id(ben, 4), "hi again")]
        for me in [ana, ben] {
            let v = view(me, again)
            #expect(v.matched && v.unmatchedBy == nil)
            #expect(v.messages.map(\.text) == ["hi again"])
        }
    }

    @Test func anUnmatchNamingNoMatchIsFinalForThePair() {
        let entries = [like(ana, 1), like(ben, 1), chat(ana, 2, place: 1, answers: id(ben, 1), mine: id(ana, 1), "hello"),
                       e(ben, 2, .unmatch(peerSeq: 2)), like(ana, 3)]
        let forAna = PairView.build(me: ana, other: ben, entries: entries)
        let forBen = PairView.build(me: ben, other: ana, entries: entries.reversed())
        #expect(forAna.unmatchedBy == ben && forBen.unmatchedBy == ben)
        #expect(!forAna.matched && !forBen.matched)
        #expect(forAna.messages.isEmpty && forBen.messages.isEmpty)
    }
}
