import MentorCore
import Testing
@testable import MentorNode

/// The rules of photo fetching (PROTOCOL.md §13.3 "Photos", §13.4 photo and author budgets),
/// on an injected clock, with links named by serial number.
@Suite struct BlobFetcherTests {
    let t0 = ContinuousClock.now
    let alice = PublicKey(bytes: [UInt8](repeating: 0xa1, count: 32))!
    let bob = PublicKey(bytes: [UInt8](repeating: 0xb0, count: 32))!

    private func ref(_ byte: UInt8, size: UInt32) -> PhotoRef {
        PhotoRef(hash: [UInt8](repeating: byte, count: 32), size: size, format: .jpeg)
    }

    private func fetcher(photoBudget: Int64 = 2 << 30, authorBudget: Int64 = 64 << 20) -> BlobFetcher {
        BlobFetcher(settings: .init(photoBudget: photoBudget, authorBudget: authorBudget))
    }

    @Test func eachLinkFetchesOnePhotoAtATimeAndEachPhotoComesFromOneLink() {
        var f = fetcher()
        _ = f.update(missing: [(ref(1, size: 10), alice), (ref(2, size: 20), bob)], blobBytes: 0, local: [])
        let first = f.assign(idle: [7, 8, 9]) { _ in 0 }.requests
        #expect(first == [.init(link: 7, hash: ref(1, size: 10).hash, size: 10), .init(link: 8, hash: ref(2, size: 20).hash, size: 20)],
                "two photos, two links; the third link idles")
        #expect(f.assign(idle: [9]) { _ in 0 }.requests.isEmpty, "no photo is asked of a second link while one fetches it")
        _ = f.update(missing: [(ref(1, size: 10), alice), (ref(2, size: 20), bob), (ref(3, size: 30), bob)], blobBytes: 0, local: [])
        #expect(f.assign(idle: [7, 7]) { _ in 0 }.requests.isEmpty, "a link fetching one photo is not asked for a second")
        #expect(f.assign(idle: [9, 9]) { _ in 0 }.requests.map(\.link) == [9], "nor twice at once")
        f.answered(ref(1, size: 10).hash)
        f.arrived(ref(1, size: 10).hash)
        #expect(f.wanted.count == 2 && f.assign(idle: [9]) { _ in 0 }.requests.isEmpty)
    }

    @Test func photosAreFetchedAndAdmittedSmallestFirst() {
        var f = fetcher(photoBudget: 300)
        let big = ref(1, size: 250), small = ref(2, size: 100), middle = ref(3, size: 150)
        // Listed biggest first: the budget still goes to the two small ones.
        let skipped = f.update(missing: [(big, alice), (middle, bob), (small, bob)], blobBytes: 0, local: [])
        #expect(skipped.map(\.ref) == [big] && skipped[0].reason.contains("photo budget"))
        #expect(f.assign(idle: [1, 2]) { _ in 0 }.requests.map(\.size) == [100, 150])
    }

    @Test func theBudgetsCountWhatIsStoredAndWantedButSpareLocalAccounts() {
        var f = fetcher(photoBudget: 1_000, authorBudget: 500)
        // 900 bytes of photos held: one of 200 would go over the node's budget.
        var skipped = f.update(missing: [(ref(1, size: 200), alice)], blobBytes: 900, local: [])
        #expect(skipped.count == 1 && f.wanted.isEmpty)
        // A local account's photo is always wanted.
        skipped = f.update(missing: [(ref(1, size: 200), alice)], blobBytes: 900, local: [alice])
        #expect(skipped.isEmpty && f.wanted.count == 1)
        // Bob has 400 bytes of records: photos of 40 and 50 bytes fit his 500, one of 200 then
        // does not. The author's budget is read when a photo is about to be fetched, once per
        // author and call, and what the call gives him counts.
        var g = fetcher(photoBudget: 1_000, authorBudget: 500)
        skipped = g.update(missing: [(ref(2, size: 40), bob), (ref(3, size: 50), bob), (ref(4, size: 200), bob)], blobBytes: 0, local: [])
        #expect(skipped.isEmpty && g.wanted.count == 3, "listing reads no author's usage")
        var asked = 0
        let (requests, skips) = g.assign(idle: [1, 2, 3]) { _ in
            asked += 1
            return 400
        }
        #expect(requests.map(\.size) == [40, 50], "the third link gets nothing: the 200-byte photo would take Bob over")
        #expect(skips.map(\.ref.size) == [200] && skips[0].reason.contains("author") && g.wanted.count == 2)
        #expect(asked == 1, "an author's usage is read once per call, then counted")
        // An account of this node is exempt: its usage is not even read.
        var h = fetcher(photoBudget: 1_000, authorBudget: 10)
        _ = h.update(missing: [(ref(5, size: 300), alice)], blobBytes: 0, local: [alice])
        let local = h.assign(idle: [1]) { _ in
            Issue.record("a local account's usage is not read")
            return 1_000
        }
        #expect(local.requests.map(\.size) == [300] && local.skips.isEmpty)
    }

    @Test func aSkippedPhotoIsReportedOnce() {
        var f = fetcher(photoBudget: 10)
        #expect(f.update(missing: [(ref(1, size: 20), alice)], blobBytes: 0, local: []).count == 1)
        #expect(f.update(missing: [(ref(1, size: 20), alice)], blobBytes: 0, local: []).isEmpty)
    }

    @Test func aPhotoNoLongerNamedIsForgottenUnlessBeingFetched() {
        var f = fetcher()
        let a = ref(1, size: 10), b = ref(2, size: 20)
        _ = f.update(missing: [(a, alice), (b, bob)], blobBytes: 0, local: [])
        _ = f.assign(idle: [5]) { _ in 0 }.requests   // a, the smaller
        _ = f.update(missing: [], blobBytes: 0, local: [])
        #expect(Set(f.wanted.keys) == [a.hash], "b superseded; a finishes (and is not stored)")
    }

    @Test func aLinkThatLacksAPhotoIsAskedAgainAfterHalfASecondDoublingToAMinute() {
        var f = fetcher()
        let a = ref(1, size: 10)
        _ = f.update(missing: [(a, alice)], blobBytes: 0, local: [])
        var delays: [Duration] = []
        for _ in 0..<10 {
            #expect(f.assign(idle: [3]) { _ in 0 }.requests.count == 1)
            f.answered(a.hash)
            delays.append(f.notHeld(a.hash, by: 3)!)
            #expect(f.assign(idle: [3]) { _ in 0 }.requests.isEmpty, "not asked again before its retry")
            f.retry(a.hash, by: 3)
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(32),
                           .seconds(60), .seconds(60), .seconds(60)])
    }

    @Test func anotherLinkIsAskedAtOnceWhenOneLacksThePhoto() {
        var f = fetcher()
        let a = ref(1, size: 10)
        _ = f.update(missing: [(a, alice)], blobBytes: 0, local: [])
        #expect(f.assign(idle: [1, 2]) { _ in 0 }.requests.map(\.link) == [1])
        f.answered(a.hash)
        _ = f.notHeld(a.hash, by: 1)
        #expect(f.assign(idle: [1, 2]) { _ in 0 }.requests.map(\.link) == [2])
        #expect(f.notHeld(ref(9, size: 1).hash, by: 2) == nil, "a photo not wanted: nothing to retry")
    }

    @Test func aClosedLinksPhotoGoesToAnother() {
        var f = fetcher()
        let a = ref(1, size: 10)
        _ = f.update(missing: [(a, alice)], blobBytes: 0, local: [])
        _ = f.assign(idle: [1]) { _ in 0 }.requests
        let otherClosed = f.linkClosed(2), fetcherClosed = f.linkClosed(1)
        #expect(!otherClosed && fetcherClosed)
        #expect(f.assign(idle: [2]) { _ in 0 }.requests.map(\.link) == [2])
    }

    @Test func fetchingWaitsForLinksCatchingUpAtMostTenSeconds() {
        var f = fetcher()
        #expect(f.wait(catchingUp: false, now: t0) == nil)
        #expect(f.wait(catchingUp: true, now: t0) == t0 + .seconds(10))
        #expect(f.wait(catchingUp: true, now: t0 + .seconds(4)) == t0 + .seconds(10), "the wait runs from the first card, not the last")
        #expect(f.waitingSince == t0)
        #expect(f.wait(catchingUp: true, now: t0 + .seconds(10)) == nil, "never more than 10 s")
        #expect(f.waitingSince == nil)
        #expect(f.wait(catchingUp: true, now: t0 + .seconds(11)) == t0 + .seconds(21))
        #expect(f.wait(catchingUp: false, now: t0 + .seconds(12)) == nil, "caught up: look now")
    }

    @Test func aPeerThatAsksWhileOurAnswersWaitUnsentIsAtFault() {
        #expect(!BlobFetcher.asksFasterThanItReads(unsentBytes: 2 * Limits.maxPhotoBytes))
        #expect(BlobFetcher.asksFasterThanItReads(unsentBytes: 2 * Limits.maxPhotoBytes + 1))
    }
}
