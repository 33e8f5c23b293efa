import MentorCore

/// Decides which photos to fetch, from which link and when (PROTOCOL.md §13.3 "Photos" and
/// §13.4): the photos current cards name and the replica lacks are wanted — within the node's
/// photo budget and each author's storage budget, smallest first — and each is asked of one
/// link at a time, at most one per link. A link that says it lacks a photo is asked again after
/// `retry`, doubling with each "not held" up to `maxRetry` (a relay may fetch it meanwhile).
/// While links are catching up the node waits (at most `deferral` after a card named a photo),
/// so a backlog of card edits fetches only the photo current at its end.
///
/// A value type with the clock passed in (like `SyncSession`'s `now:`): links are named by the
/// shell's serial numbers, the replica's answers come in as arguments, and the shell does the
/// I/O — the SQL, `wantBlob`, assembling and storing what arrives, the timers.
struct BlobFetcher: Sendable {
    struct Settings: Sendable {
        /// First delay before asking a link again for a photo it said it lacks.
        var retry: Duration = .milliseconds(500)
        var maxRetry: Duration = .seconds(60)
        /// How long photo fetching waits at most for links catching up.
        var deferral: Duration = .seconds(10)
        /// Bytes all photos may take, and one author's records and photos (`authorUsage`).
        var photoBudget: Int64 = 2 << 30
        var authorBudget: Int64 = 64 << 20
        /// Photos wanted at once, and photos whose skipping is remembered (to log it once).
        var capacity = 4096
    }

    /// A photo to fetch: its size (from the card), whose card names it (nil: an account of
    /// this node, exempt from the author budget), the link fetching it, the links that said
    /// they lack it (until their retry), and how many times one did.
    struct Wanted: Sendable, Equatable {
        var size: Int
        var ref: PhotoRef
        var author: PublicKey?
        var fetching: UInt64?
        var lacking: Set<UInt64> = []
        var misses = 0

        init(ref: PhotoRef, author: PublicKey?) {
            self.ref = ref
            self.size = Int(ref.size)
            self.author = author
        }
    }

    /// A photo not fetched for a budget (reported once per photo).
    struct Skip: Sendable, Equatable {
        var ref: PhotoRef
        var author: PublicKey
        var reason: String
    }

    /// Ask `link` for the photo `hash` of `size` bytes (`wantBlob`).
    struct Request: Sendable, Equatable {
        var link: UInt64
        var hash: [UInt8]
        var size: Int
    }

    let settings: Settings
    private(set) var wanted: [[UInt8]: Wanted] = [:]
    /// Since when photo fetching waits for links catching up (nil: it does not wait).
    private(set) var waitingSince: ContinuousClock.Instant?
    private var skipped: Set<[UInt8]> = []

    init(settings: Settings = Settings()) { self.settings = settings }

    /// Whether to look for missing photos now. While a link is catching up: wait, until the
    /// returned instant at the latest; nil: look now (nothing catches up, or the wait is over).
    mutating func wait(catchingUp: Bool, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if catchingUp {
            let since = waitingSince ?? now
            waitingSince = since
            if now - since < settings.deferral { return since + settings.deferral }
        }
        waitingSince = nil
        return nil
    }

    /// Takes the replica's list of photos current cards name and it lacks (`missing`, with the
    /// bytes photos take now, `blobBytes`): photos no longer named are forgotten (one being
    /// fetched finishes, and is not stored), new ones are wanted smallest first as long as the
    /// node's photo budget allows. Photos of `local` accounts are always wanted. The author's
    /// budget is checked when a photo is about to be fetched (`assign`): a listing names up to
    /// 1,024 photos, a link fetches one at a time. Returns the photos skipped for the first time.
    mutating func update(missing: [(ref: PhotoRef, author: PublicKey)], blobBytes: Int64, local: Set<PublicKey>) -> [Skip] {
        let current = Set(missing.map(\.ref.hash))
        wanted = wanted.filter { current.contains($0.key) || $0.value.fetching != nil }
        var used = blobBytes + Int64(wanted.values.reduce(0) { $0 + $1.size })
        var skips: [Skip] = []
        let bySize = missing.enumerated().sorted { ($0.element.ref.size, $0.offset) < ($1.element.ref.size, $1.offset) }.map(\.element)
        for (ref, author) in bySize where wanted[ref.hash] == nil && wanted.count < settings.capacity {
            let size = Int64(ref.size)
            let isLocal = local.contains(author)
            guard isLocal || used + size <= settings.photoBudget else {
                skip(ref, author, "all photos would take more than the node's photo budget (\(settings.photoBudget >> 20) MiB)", &skips)
                continue
            }
            used += size
            wanted[ref.hash] = Wanted(ref: ref, author: isLocal ? nil : author)
        }
        return skips
    }

    private mutating func skip(_ ref: PhotoRef, _ author: PublicKey, _ reason: String, _ skips: inout [Skip]) {
        guard skipped.count < settings.capacity, skipped.insert(ref.hash).inserted else { return }
        skips.append(Skip(ref: ref, author: author, reason: reason))
    }

    /// Gives each idle link (in the order given) the smallest wanted photo that no link fetches
    /// and that it has not said it lacks. A link fetching one already gets no second. A photo
    /// whose author's records and photos (`authorUsage`, read at most once per author and call)
    /// would go over the author's budget is not fetched: it leaves the wanted photos and is
    /// reported in `skips` (once per photo), and the link gets the next one.
    ///
    /// One pass over the wanted photos per idle link (a handful), no sort: this runs after
    /// every applied batch while a sync names photos, with up to `capacity` wanted.
    mutating func assign(idle links: [UInt64], authorUsage: (PublicKey) -> Int64) -> (requests: [Request], skips: [Skip]) {
        guard !wanted.isEmpty, !links.isEmpty else { return ([], []) }
        var busy: Set<UInt64> = []
        for entry in wanted.values { if let link = entry.fetching { busy.insert(link) } }
        var requests: [Request] = [], skips: [Skip] = []
        var authorUse: [PublicKey: Int64] = [:]
        for link in links where busy.insert(link).inserted {
            while let best = smallestFree(for: link) {
                if let author = best.author {
                    let use = authorUse[author] ?? authorUsage(author)
                    guard use + Int64(best.size) <= settings.authorBudget else {
                        authorUse[author] = use
                        wanted[best.ref.hash] = nil
                        skip(best.ref, author, "its author's records and photos would take more than \(settings.authorBudget >> 20) MiB", &skips)
                        continue
                    }
                    authorUse[author] = use + Int64(best.size)
                }
                wanted[best.ref.hash]?.fetching = link
                requests.append(Request(link: link, hash: best.ref.hash, size: best.size))
                break
            }
        }
        return (requests, skips)
    }

    /// The smallest wanted photo (ties: the lowest hash) nobody fetches and `link` does not lack.
    private func smallestFree(for link: UInt64) -> Wanted? {
        var best: Wanted?
        for entry in wanted.values where entry.fetching == nil && !entry.lacking.contains(link) {
            if let b = best, b.size < entry.size || (b.size == entry.size && b.ref.hash.lexicographicallyPrecedes(entry.ref.hash)) { continue }
            best = entry
        }
        return best
    }

    /// The answer to a request came to its end (the photo, or "not held"): nobody fetches it now.
    mutating func answered(_ hash: [UInt8]) { wanted[hash]?.fetching = nil }

    /// The photo arrived whole and matched its hash: no longer wanted (stored or dropped).
    mutating func arrived(_ hash: [UInt8]) { wanted[hash] = nil }

    /// `link` said it lacks the photo: how long until it may be asked again (nil: not wanted).
    mutating func notHeld(_ hash: [UInt8], by link: UInt64) -> Duration? {
        guard var entry = wanted[hash] else { return nil }
        entry.lacking.insert(link)
        entry.misses += 1
        wanted[hash] = entry
        return min(settings.retry * (1 << min(entry.misses - 1, 10)), settings.maxRetry)
    }

    /// The retry delay `notHeld` gave is over: `link` may be asked again.
    mutating func retry(_ hash: [UInt8], by link: UInt64) { wanted[hash]?.lacking.remove(link) }

    /// A link closed: what it was fetching is free for another. Whether there was something.
    @discardableResult
    mutating func linkClosed(_ link: UInt64) -> Bool {
        guard let hash = wanted.first(where: { $0.value.fetching == link })?.key else { return false }
        wanted[hash]?.fetching = nil
        return true
    }

    /// Whether a peer asks for blobs while our answers to it still wait unsent beyond two
    /// photos' worth (an honest peer asks one at a time, after reading the last): an offence,
    /// since it would make us buffer without bound.
    static func asksFasterThanItReads(unsentBytes: Int) -> Bool { unsentBytes > 2 * Limits.maxPhotoBytes }
}
