import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// The rules of photo sync beside `BlobFetcher` (PROTOCOL.md §13.3 "Photos", §13.6), on an
/// injected clock: when missing photos are listed, when a `wantBlob` is overdue, how a photo is
/// served and checked.
@Suite struct PhotoSyncRulesTests {
    let t0 = ContinuousClock.now

    private func sync() -> PhotoSync { PhotoSync(settings: .init(lookupInterval: .seconds(1), answerTimeout: .seconds(30))) }

    @Test func batchesNamingPhotosListAtMostOncePerInterval() {
        var p = sync()
        #expect(p.nextListing(now: t0) == nil, "never listed: list now")
        p.listing(now: t0)
        #expect(p.listings == 1)
        #expect(p.nextListing(now: t0 + .milliseconds(300)) == t0 + .seconds(1), "too soon: at the end of the interval")
        #expect(p.nextListing(now: t0 + .seconds(1)) == nil)
    }

    @Test func aNewLinkListsAfreshOnlyWhenTheLastListingIsStale() {
        var p = sync()
        #expect(p.newLinkNeedsListing(waiting: false), "never listed")
        p.listing(now: t0)
        #expect(!p.newLinkNeedsListing(waiting: false), "nothing applied since: the link gets its share of the last listing")
        #expect(p.newLinkNeedsListing(waiting: true), "the wait for links catching up is on")
        p.recordsApplied()
        #expect(p.newLinkNeedsListing(waiting: false))
        p.listing(now: t0)
        p.listingFailed()
        #expect(p.newLinkNeedsListing(waiting: false), "a failed listing is made again")
    }

    @Test func aRequestIsOverdueOnlyAfterTheTimeoutSinceItsLastPart() {
        let p = sync()
        #expect(p.answerDue(lastPart: t0, now: t0 + .seconds(29)) == t0 + .seconds(30))
        #expect(p.answerDue(lastPart: t0 + .seconds(20), now: t0 + .seconds(30)) == t0 + .seconds(50), "a part came: waited for again")
        #expect(p.answerDue(lastPart: t0, now: t0 + .seconds(30)) == nil)
    }

    @Test func aPhotoIsServedInPartsThatReassembleAndWhatIsNoPhotoIsNotHeld() throws {
        let data = (0..<(SyncLimits.maxBlobPart * 2 + 5)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let hash = BLAKE2b.hash(data, outputLength: 32)
        let parts = PhotoSync.answer(hash: hash, blob: data)
        #expect(parts.count == 3)
        var assembly = BlobAssembly(hash: hash, size: data.count)
        var progress = BlobAssembly.Progress.incomplete
        for part in parts {
            guard case .blob(let h, let total, let offset, let bytes) = part else { Issue.record("not a blob part: \(part)"); return }
            #expect(bytes.count <= SyncLimits.maxBlobPart)
            progress = try assembly.add(hash: h, total: total, offset: offset, bytes: bytes)
        }
        #expect(progress == .complete(data))
        #expect(PhotoSync.mismatch(data, hash: hash) == nil)
        #expect(PhotoSync.mismatch(data + [0], hash: hash)?.contains("does not match its hash") == true)

        let notHeld = SyncMessage.blob(hash: hash, total: 0, offset: 0, bytes: [])
        #expect(PhotoSync.answer(hash: hash, blob: nil) == [notHeld])
        #expect(PhotoSync.answer(hash: hash, blob: []) == [notHeld])
        #expect(PhotoSync.answer(hash: hash, blob: [UInt8](repeating: 1, count: Limits.maxPhotoBytes + 1)) == [notHeld],
                "over the photo limit: not served")
    }

    @Test func onlyCardsThatSetAPhotoCallForALook() throws {
        var ada = RecordWriter(keys: try SigningKeyPair(seed: [UInt8](repeating: 5, count: 32)))
        let photo = PhotoRef(hash: [UInt8](repeating: 7, count: 32), size: 100, format: .jpeg)
        #expect(PhotoSync.setsAPhoto(try ada.profile(ProfileCard(name: "Ada", photos: [photo]), at: 1).encoded))
        #expect(!PhotoSync.setsAPhoto(try ada.profile(ProfileCard(name: "Ada"), at: 2).encoded), "a card without a photo")
        #expect(!PhotoSync.setsAPhoto(try ada.profile(ProfileCard(photos: []), at: 3).encoded), "a card removing its photo")
        let second = PhotoRef(hash: [UInt8](repeating: 8, count: 32), size: 100, format: .png)
        #expect(PhotoSync.setsAPhoto(try ada.profile(ProfileCard(photos: [photo, second]), at: 4).encoded), "a card naming several")
        #expect(!PhotoSync.setsAPhoto([1, 2, 3]), "not a record")
    }
}
