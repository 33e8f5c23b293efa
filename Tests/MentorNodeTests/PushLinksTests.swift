import MentorCore
import Testing
@testable import MentorNode

private func id(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 32) }

/// The node's lazy-push bookkeeping (PROTOCOL.md §13.7) over its links, with the clock passed in
/// and the replica stood in for by a set of held IDs (links named by serial).
@Suite struct PushLinksTests {
    let t0 = ContinuousClock.now

    private func links(_ serials: [UInt64], lazyPush: Bool = true) -> PushLinks {
        var p = PushLinks(lazyPush: lazyPush, tree: .init(graftTimeout: .seconds(1)))
        for s in serials { p.linkUp(s) }
        return p
    }

    @Test func bodiesGoOnEveryLinkUntilADuplicatePrunesOneButNeverTheLast() {
        var p = links([1, 2])
        #expect(p.carriesBodies(1) && p.carriesBodies(2))
        let none = p.duplicates(0, from: 2)
        #expect(!none, "no duplicate, no prune")
        let pruned = p.duplicates(3, from: 2)
        #expect(pruned, "a duplicate over a redundant link prunes it")
        #expect(!p.carriesBodies(2) && p.carriesBodies(1))
        let last = p.duplicates(5, from: 1)
        #expect(!last, "the last link carrying bodies is kept")
        #expect(p.counts == .init(duplicates: 8, announced: 0))
        #expect(!p.carriesBodies(9), "an unknown link gets nothing in full")
    }

    @Test func withLazyPushOffEveryLinkCarriesBodiesAndNothingIsPruned() {
        var p = links([1, 2], lazyPush: false)
        let pruned = p.duplicates(3, from: 2)
        #expect(!pruned, "duplicates are counted but never prune")
        #expect(p.carriesBodies(1) && p.carriesBodies(2) && p.counts.duplicates == 3)
        // A peer's prune turns the tree's link lazy, but bodies still go.
        _ = p.signal(.pruned, from: 1, now: t0) { _ in [] }
        #expect(p.carriesBodies(1))
    }

    @Test func pruneAndGraftFromThePeerSwitchTheLink() {
        var p = links([1, 2])
        let a = p.signal(.pruned, from: 1, now: t0) { _ in [] }
        #expect(!a && !p.carriesBodies(1))
        let b = p.signal(.grafted, from: 1, now: t0) { _ in [] }
        #expect(!b)
        #expect(p.carriesBodies(1))
    }

    @Test func announcedIDsAreCountedAndOnlyThoseNotHeldWaitForTheirBodies() {
        var p = links([1, 2])
        p.applied([id(1)])
        var asked: [[[UInt8]]] = []
        let waiting = p.signal(.announced([id(1), id(2), id(3)]), from: 2, now: t0) { ids in
            asked.append(ids)
            return [id(3)]   // the replica holds 3 (held back for a gap, say)
        }
        #expect(waiting && p.counts.announced == 3)
        #expect(asked == [[id(2), id(3)]], "an ID applied here needs no look-up")
        #expect(p.tree.isMissing(id(2)) && !p.tree.isMissing(id(3)))
        #expect(p.nextGraft == t0 + .seconds(1))
        // Announced again: all known now, so no look-up and nothing new waits.
        asked = []
        let again = p.signal(.announced([id(1), id(3)]), from: 1, now: t0) { ids in asked.append(ids); return [] }
        #expect(!again && asked.isEmpty && p.counts.announced == 5)
    }

    @Test func aDueGraftAsksTheReplicaAgainAndSkipsClosedLinks() {
        var p = links([1, 2, 3])
        _ = p.signal(.announced([id(5), id(6)]), from: 2, now: t0) { _ in [] }
        _ = p.signal(.announced([id(7)]), from: 3, now: t0) { _ in [] }
        let early = p.dueGrafts(now: t0 + .milliseconds(999), isOpen: { _ in true }) { _ in [] }
        #expect(early.isEmpty, "not due yet")
        var looked: [[[UInt8]]] = []
        let grafts = p.dueGrafts(now: t0 + .seconds(1), isOpen: { $0 != 3 }) { ids in
            looked.append(ids)
            return [id(6)]   // came meanwhile by another way
        }
        #expect(grafts.count == 1 && grafts[0].link == 2 && grafts[0].ids == [id(5)])
        #expect(looked == [[id(5), id(6)]], "a closed link's IDs are not looked up")
        #expect(p.carriesBodies(2), "a link grafted turns eager")
        #expect(!p.tree.isMissing(id(6)), "what the replica held waits no more")
    }

    @Test func aLinkThatEndsIsForgottenAndItsIDsAreAskedOfTheNextAnnouncer() {
        var p = links([1, 2, 3])
        _ = p.signal(.announced([id(5)]), from: 2, now: t0) { _ in [] }
        _ = p.signal(.announced([id(5)]), from: 3, now: t0) { _ in [] }
        p.linkDown(2)
        #expect(!p.carriesBodies(2))
        let grafts = p.dueGrafts(now: t0 + .seconds(1), isOpen: { _ in true }) { _ in [] }
        #expect(grafts.map(\.link) == [3] && grafts[0].ids == [id(5)])
    }
}
