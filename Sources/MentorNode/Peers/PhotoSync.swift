import MentorCore
import MentorCrypto

/// The rules of photo sync that are not `BlobFetcher`'s (PROTOCOL.md §13.3 "Photos", §13.6):
/// when the replica is asked again for the photos it lacks, which applied records make that
/// worth doing, how long a `wantBlob` may go unanswered, how a photo is served in parts and
/// when one received is fit to store.
///
/// Listing missing photos costs a scan of the cards' photo entries and one budget look-up per
/// missing photo (~130 ms at 10,000 accounts), so it is paced:
/// - batches that name photos list at most once per `lookupInterval` (each listing has every
///   missing photo, in size order, so one per batch of a catch-up from many authors would be a
///   pass over all their cards per batch);
/// - a new link needs a new listing only if records were applied since the last one (or none
///   was made, or the wait for links catching up is on); otherwise the last listing
///   (`BlobFetcher.wanted`) still holds and the link is only given its share of it.
///
/// A value type with the clock passed in; the shell owns the timers, the replica and the links.
struct PhotoSync: Sendable {
    struct Settings: Sendable {
        /// Photos are listed at most this often for batches naming them.
        var lookupInterval: Duration = .seconds(1)
        /// A `wantBlob` with no part of its answer for this long ends the link (no offence).
        var answerTimeout: Duration = .seconds(30)
    }

    let settings: Settings
    /// When the replica was last listed for missing photos, and how many times (for tests: work,
    /// not time).
    private(set) var listedAt: ContinuousClock.Instant?
    private(set) var listings = 0
    /// Whether records were applied since the last listing (or it failed).
    private(set) var listingStale = true

    init(settings: Settings = Settings()) { self.settings = settings }

    // MARK: Listing missing photos

    /// Records were applied here: the next new link lists afresh.
    mutating func recordsApplied() { listingStale = true }

    /// A batch named a photo: when to list (nil: now; else at that instant, once, however many
    /// batches come meanwhile).
    func nextListing(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let last = listedAt, now - last < settings.lookupInterval else { return nil }
        return last + settings.lookupInterval
    }

    /// A link was established: whether it needs a new listing (else it is given its share of the
    /// last). `waiting`: the wait for links catching up is on (its timer is set).
    func newLinkNeedsListing(waiting: Bool) -> Bool { listingStale || listedAt == nil || waiting }

    /// The replica is being listed now.
    mutating func listing(now: ContinuousClock.Instant) {
        listedAt = now
        listings += 1
        listingStale = false
    }

    /// Listing failed: the next chance lists again.
    mutating func listingFailed() { listingStale = true }

    /// Whether an applied record is a profile edit that names photos (type and body read
    /// without verifying: the replica already did). The type byte follows the magic and the
    /// version (§4): most records are not cards, and this runs for every record applied, so
    /// only cards are decoded.
    static func setsAPhoto(_ bytes: [UInt8]) -> Bool {
        // A new post names photos too (PROTOCOL.md §6.6).
        if bytes.count > 4, bytes[4] == RecordType.post.rawValue, let r = try? Record.decode(bytes), r.type == .post,
           let post = try? Post(body: r.body), case .create = post.action { return true }
        guard bytes.count > 4, bytes[4] == RecordType.profile.rawValue,
              let r = try? Record.decode(bytes), r.type == .profile,
              let card = try? ProfileCard(body: r.body) else { return false }
        return card.photos?.isEmpty == false
    }

    // MARK: Fetching

    /// A request whose last part (or the request itself) came at `lastPart`: when to look again
    /// (nil: it is overdue, the link ends so another is asked).
    func answerDue(lastPart: ContinuousClock.Instant, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let due = lastPart + settings.answerTimeout
        return now < due ? due : nil
    }

    /// Why a blob received whole is not the one asked for (nil: it matches its content address).
    static func mismatch(_ data: [UInt8], hash: [UInt8]) -> String? {
        BLAKE2b.hash(data, outputLength: 32) == hash ? nil : "blob \(Hex.encode(hash).prefix(16)) does not match its hash"
    }

    // MARK: Serving

    /// The answer to a `wantBlob` for `hash`: the blob (as the replica holds it, if it does) in
    /// parts of at most `SyncLimits.maxBlobPart` bytes, or one empty `blob` saying "not held"
    /// (also for what is no photo: empty or over `Limits.maxPhotoBytes`).
    static func answer(hash: [UInt8], blob data: [UInt8]?) -> [SyncMessage] {
        guard let data, !data.isEmpty, data.count <= Limits.maxPhotoBytes else {
            return [.blob(hash: hash, total: 0, offset: 0, bytes: [])]
        }
        var parts: [SyncMessage] = []
        var offset = 0
        while offset < data.count {
            let end = min(offset + SyncLimits.maxBlobPart, data.count)
            parts.append(.blob(hash: hash, total: UInt32(data.count), offset: UInt32(offset), bytes: Array(data[offset..<end])))
            offset = end
        }
        return parts
    }
}
