import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import MentorSystem

/// The photo exchange of every link of a shell (PROTOCOL.md §13.3 "Photos", §13.4, §13.6):
/// which photos the replica lacks, when to list them (`PhotoSync`), which link is asked for
/// which (`BlobFetcher`), the `wantBlob` sent and its answer timeout, the parts received,
/// checked and stored, and the `wantBlob`s of peers answered. Owned by the shell, which hands
/// over the events (a link up or closed, caught up, records applied, a part received, a
/// request) and carries out the sends, the timers and the closes through `PhotoShell`.
///
/// - Photos are looked for once the links catching up have caught up (at most
///   `BlobFetcher.Settings.deferral` after a card named one), and at most once per
///   `PhotoSync.Settings.lookupInterval` while batches naming photos keep coming.
/// - Each idle link (up, session established, no blob asked of it) is given the smallest
///   wanted photo no link fetches and it has not said it lacks; a "not held" makes it free for
///   another link at once and for this one after the fetcher's retry delay; a request with no
///   part of its answer for `answerTimeout` ends its link (no offence), which frees the photo.
/// - A blob received whole is checked against its hash (a mismatch closes the link, nothing is
///   stored), then stored only if a current card still names it.
///
/// Confinement: everything here and every link are on the shell's queue; the store, the
/// logger and the clock are injected. `@unchecked Sendable` for that reason (its timers
/// capture it weakly and run on that queue).
final class PhotoExchange<Shell: PhotoShell>: @unchecked Sendable {
    typealias Link = Shell.Link

    /// Set once by the shell that owns this exchange (weak: the shell owns the exchange).
    weak var shell: Shell?
    private let store: PhotoStore
    private let logger: any Logger
    private let clock: @Sendable () -> ContinuousClock.Instant

    // Confined to the shell's queue:
    /// Which photos to fetch, from which link, when (links named by serial).
    private(set) var fetcher: BlobFetcher
    /// When to list the photos the replica lacks, and the answer timeout.
    private(set) var rules: PhotoSync
    /// Blobs received and stored since start (for tests and metrics).
    private(set) var blobsFetched = 0
    /// The timer that ends the wait for links catching up, and the one of the next listing.
    private var waitTimer: DispatchWorkItem?
    private var lookupTimer: DispatchWorkItem?

    init(fetcher: BlobFetcher.Settings, rules: PhotoSync.Settings, store: PhotoStore, logger: any Logger,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.fetcher = BlobFetcher(settings: fetcher)
        self.rules = PhotoSync(settings: rules)
        self.store = store
        self.logger = logger
        self.clock = clock
    }

    /// Times the replica was asked for the photos it lacks (for tests: work, not time).
    var listings: Int { rules.listings }

    /// The shell stops: the wait and the listing timers are cancelled (each link's blob timer
    /// goes with the link).
    func cancelTimers() {
        waitTimer?.cancel()
        waitTimer = nil
        lookupTimer?.cancel()
        lookupTimer = nil
    }

    // MARK: What the shell hands over

    /// A link was established: list afresh if records were applied since the last listing (or
    /// the wait for links catching up is on), else give it its share of the last listing.
    func linkEstablished() {
        if rules.newLinkNeedsListing(waiting: waitTimer != nil) { findMissingPhotos() } else { assignBlobs() }
    }

    /// A link closed (the shell no longer keeps it): the wait may be over, and what it was
    /// fetching goes to another link.
    func linkClosed(_ serial: UInt64) {
        if fetcher.waitingSince != nil { findMissingPhotos() }
        if fetcher.linkClosed(serial) { assignBlobs() }
    }

    /// A link caught up: if photos wait for links catching up, look now (the wait may be over).
    func linkCaughtUp() {
        if fetcher.waitingSince != nil { findMissingPhotos() }
    }

    /// Records were applied: the next new link lists afresh.
    func recordsApplied() { rules.recordsApplied() }

    /// Applied records set a photo: `findMissingPhotos` now, or — if it ran less than
    /// `lookupInterval` ago — once when the interval is over (one timer for any number of
    /// batches meanwhile).
    func lookSoon() {
        let now = clock()
        guard let at = rules.nextListing(now: now) else { return findMissingPhotos() }
        guard lookupTimer == nil, let shell else { return }
        let timer = DispatchWorkItem { [weak self] in
            guard let self, let shell = self.shell, !shell.isStopped else { return }
            self.lookupTimer = nil
            self.findMissingPhotos()
        }
        lookupTimer = timer
        shell.schedule(timer, at: at)
    }

    /// A part of the blob asked of `link`; a reason to close the link for, if the peer is at fault.
    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8], on link: Link) -> String? {
        guard var assembly = link.blobIn else {
            return "a blob part of \(Hex.encode(hash).prefix(16)) that was not asked for"
        }
        do {
            let progress = try assembly.add(hash: hash, total: total, offset: offset, bytes: bytes)
            link.blobIn = assembly
            link.blobPartAt = clock()
            if case .incomplete = progress { return nil }
            link.blobIn = nil
            fetcher.answered(hash)
            if case .complete(let data) = progress {
                if let problem = storeBlob(data, hash: hash) { return problem }
            } else if let delay = fetcher.notHeld(hash, by: link.serial), let shell {
                let serial = link.serial
                let retry = DispatchWorkItem { [weak self] in
                    guard let self, let shell = self.shell, !shell.isStopped else { return }
                    self.fetcher.retry(hash, by: serial)
                    self.assignBlobs()
                }
                shell.schedule(retry, at: clock() + delay)
            }
            assignBlobs()
            return nil
        } catch {
            return error.message
        }
    }

    /// Answers a peer's `wantBlob`: the blob in parts, or "not held".
    func answer(_ hash: [UInt8], on link: Link) {
        let data: [UInt8]?
        do { data = try store.blob(hash) } catch {
            logger.info("reading a photo failed", ["error": "\(error)"])
            data = nil
        }
        for part in PhotoSync.answer(hash: hash, blob: data) { shell?.send(part, on: link) }
    }

    // MARK: Fetching

    /// Adds the photos current cards name and the replica lacks, and asks peers for them —
    /// once the links catching up have caught up (within the deferral), so that photos named
    /// by card edits a backlog supersedes are never fetched. Photos no current card names any
    /// more are dropped from the list; one whose author is over its budget, or that would take
    /// all photos over the node's budget, is not fetched (§13.4).
    private func findMissingPhotos() {
        guard let shell else { return }
        let now = clock()
        let catchingUp = shell.links.contains { !$0.closing && $0.sessionIsEstablished && !$0.sessionIsCaughtUp }
        if let until = fetcher.wait(catchingUp: catchingUp, now: now) {
            if waitTimer == nil {
                let timer = DispatchWorkItem { [weak self] in
                    guard let self, let shell = self.shell, !shell.isStopped else { return }
                    self.waitTimer = nil
                    self.findMissingPhotos()
                }
                waitTimer = timer
                shell.schedule(timer, at: until)
            }
            return
        }
        waitTimer?.cancel()
        waitTimer = nil
        lookupTimer?.cancel()
        lookupTimer = nil
        rules.listing(now: now)
        let refs: [(ref: PhotoRef, author: PublicKey)]
        let used: Int64
        do {
            refs = try store.missingPhotos(1024)
            used = try store.blobBytes()
        } catch {
            logger.info("listing missing photos failed", ["error": "\(error)"])
            rules.listingFailed()
            return
        }
        let skipped = fetcher.update(missing: refs, blobBytes: used, local: Set(store.localAccounts()))
        logSkipped(skipped)
        assignBlobs()
    }

    /// Gives every idle link a missing photo it has not said it lacks and no other link fetches.
    private func assignBlobs() {
        guard !fetcher.wanted.isEmpty, let shell else { return }
        let idle = shell.links.sorted(by: { $0.serial < $1.serial })
            .filter { !$0.closing && $0.linkUp && $0.blobIn == nil && $0.sessionIsEstablished }
        let bySerial = Dictionary(idle.map { ($0.serial, $0) }, uniquingKeysWith: { a, _ in a })
        let store = self.store
        let (requests, skipped) = fetcher.assign(idle: idle.map(\.serial)) { author in (try? store.authorUsage(author)) ?? 0 }
        logSkipped(skipped)
        for request in requests {
            guard let link = bySerial[request.link] else { continue }
            link.blobIn = BlobAssembly(hash: request.hash, size: request.size)
            link.blobPartAt = clock()
            shell.send(.wantBlob(hash: request.hash), on: link)
            scheduleBlobCheck(link, at: link.blobPartAt + rules.settings.answerTimeout)
        }
    }

    private func logSkipped(_ skipped: [BlobFetcher.Skip]) {
        for skip in skipped {
            logger.info("a photo is not fetched", ["author": skip.author.shortID, "hash": String(Hex.encode(skip.ref.hash).prefix(16)),
                                                   "size": "\(skip.ref.size)", "reason": skip.reason])
        }
    }

    /// Ends a link whose peer sent no part of a requested blob for the answer timeout; checked
    /// again later while parts keep coming. Closing frees the request (`linkClosed`), so
    /// another link is asked at once.
    private func scheduleBlobCheck(_ link: Link, at deadline: ContinuousClock.Instant) {
        link.blobTimer?.cancel()
        let timer = DispatchWorkItem { [weak self, weak link] in
            guard let self, let link, let shell = self.shell, !shell.isStopped, !link.closing, link.blobIn != nil else { return }
            if let due = self.rules.answerDue(lastPart: link.blobPartAt, now: self.clock()) { return self.scheduleBlobCheck(link, at: due) }
            shell.blobAnswerOverdue(link, reason: "no answer to a photo request (wantBlob) for \(self.rules.settings.answerTimeout); "
                                    + "the photo is asked of another peer (no offence)")
        }
        link.blobTimer = timer
        shell?.schedule(timer, at: deadline)
    }

    /// Checks a received blob against its content address and stores it; a problem to close for.
    private func storeBlob(_ data: [UInt8], hash: [UInt8]) -> String? {
        if let mismatch = PhotoSync.mismatch(data, hash: hash) { return mismatch }
        fetcher.arrived(hash)
        // Named by a card when asked for, and superseded since: not stored.
        guard (try? store.isNamedPhoto(hash)) == true else {
            logger.debug("a fetched photo no current card names was dropped", ["hash": String(Hex.encode(hash).prefix(16))])
            return nil
        }
        do {
            try store.putBlob(data)
            blobsFetched += 1
        } catch {
            // The card's author named something that is not a photo: nothing to blame the relay for.
            logger.info("a fetched photo was not stored", ["hash": String(Hex.encode(hash).prefix(16)), "error": "\(error)"])
        }
        return nil
    }
}
