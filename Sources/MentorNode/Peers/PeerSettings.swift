import Foundation
import MentorCore
import MentorNet

extension PeerManager {
    /// What the peer manager and its pieces are configured with: the links and the listener,
    /// the session's settings, dialling and redial backoff, the penalties, the per-link rates
    /// (records, `recon`, `want`, `here`, `link`, lazy push), photos and the storage budgets, and the
    /// wall clock and randomness injected for tests. The daemon fills it from its own settings
    /// (`Daemon/Mentormated.swift`); `driver` (in `LinkHost.swift`) derives each link's.
    public struct Settings: Sendable {
        public var link = PeerLink.Settings()
        public var listener = PeerListener.Settings()
        public var sync = SyncSettings()
        public var dialTimeout: Duration = .seconds(5)
        /// First redial delay; doubles per failed attempt up to `maxBackoff`.
        public var initialBackoff: Duration = .milliseconds(250)
        public var maxBackoff: Duration = .seconds(30)
        /// How misbehaving hosts are refused.
        public var penalties = PenaltyBox.Settings()
        /// Records per second one peer may make us apply (sustained), and the burst above it.
        public var recordsPerSecond = 20_000
        public var recordsBurst = 20_000
        /// First delay before asking a link again for a photo it said it lacks.
        public var blobRetry: Duration = .milliseconds(500)
        /// A `wantBlob` with no part of its answer for this long ends the link — no offence (a
        /// busy link proves nothing), it is redialled — so the photo is asked of another peer
        /// instead of waiting forever on one that ignores requests (PROTOCOL.md §13.6).
        public var blobAnswerTimeout: Duration = .seconds(30)
        /// The initiator of a link starts a reconciliation round this often while it is up (and
        /// after applying a fork variant); equal sets cost one short message each way.
        public var reconInterval: Duration = .seconds(60)
        /// Received records applied in one transaction at most: the batches waiting their turn
        /// (verified) are applied together up to this many — a whole window of one link (4 ×
        /// 256). Measured (`mentormate-bench reconcile --only c`, 79,119 records from 10,000
        /// authors): B's CPU 12.1 s at 256, 11.6 s at 512, 11.0 s at 768, 10.6 s at 1,024.
        public var recordsPerApply = 1024
        /// Bytes one author's records and photos may take on this node (`author_storage_mb`):
        /// past it, further records of the author are dropped (not stored, no offence) and its
        /// photo is not fetched. Accounts of this node are exempt.
        public var authorBudget: Int64 = 64 << 20
        /// The node-wide storage budget (`foreign_accounts_max`, `foreign_storage_mb`; the policy
        /// is `StorageBudget`'s): foreign accounts held, and the bytes of their records. Past it
        /// the node degrades — records of new strangers (past the bytes: of every stranger) are
        /// declined, no offence — and never stops syncing.
        public var foreignAccountsMax = 1_000_000
        public var foreignBytesMax: Int64 = 2 << 30
        /// Bytes all photos together may take (`photo_storage_mb`): a photo that would go over it
        /// is not fetched (smallest photos are fetched first).
        public var photoBudget: Int64 = 2 << 30
        /// `recon` messages a peer may send: a burst of this many, refilled at that rate per
        /// `reconPeriod`; past it the session ends as an offence (each one makes us read the
        /// tree). An honest round takes a handful of messages, one round a minute.
        public var reconBurst = 128
        public var reconPeriod: Duration = .seconds(30)
        /// `want` messages a peer may send, likewise (an honest session sends at most
        /// `SyncSession.wantsPerPeriod` per `SyncSession.wantPeriod`: half of this).
        public var wantBurst = 256
        public var wantPeriod: Duration = .seconds(30)
        /// `here` messages taken from a peer: `hereBurst` at once, refilled at that rate per
        /// `herePeriod`. An honest node sends one after hello and one when an account signs up
        /// on it; one over the rate is no offence: the newest is kept (one per link) and taken
        /// when the bucket has refilled, so a flood costs one decode and one nearby update per
        /// refill, however fast it comes.
        public var hereBurst = 8
        public var herePeriod: Duration = .seconds(30)
        /// `link` messages (device offers, PROTOCOL.md §13.8) taken from a peer, likewise: an
        /// honest node sends one per link and per `device link` (two when it replaces an offer:
        /// the withdrawal, then the new one); one over the rate is no offence, the newest is kept
        /// and taken when the bucket has refilled.
        public var linkOfferBurst = 4
        public var linkOfferPeriod: Duration = .seconds(30)
        /// Lazy push (PROTOCOL.md §13.7): `ihave`, `prune` and `graft` messages a peer may send
        /// together, a burst of `treeBurst` refilled at that rate per `treePeriod`; past it the
        /// session ends as an offence. An honest node sends at most 128 `ihave`s and 128
        /// `graft`s per 30 s per link (`SyncSession.treeMessagesPerPeriod`) and a prune at most
        /// once per link between grafts.
        public var treeBurst = 512
        public var treePeriod: Duration = .seconds(30)
        /// How long an ID announced in `ihave` waits for its body before it is grafted.
        public var graftTimeout: Duration = .seconds(1)
        /// false: every link stays eager and no `prune` is sent (for benchmarks of the
        /// difference; peers' `ihave`/`graft` are still answered).
        public var lazyPush = true
        /// Photos are looked for once the links catching up have caught up (so a backlog of card
        /// edits fetches only the photo that is current at its end), but never later than this
        /// after a card named one.
        public var photoDeferral: Duration = .seconds(10)
        /// Batches naming photos look for missing photos at most this often: each look lists
        /// every missing photo in size order, so once per batch of a catch-up from many authors
        /// it was a pass over all their cards per batch.
        public var photoLookupInterval: Duration = .seconds(1)
        /// Hubs (PROTOCOL.md §13.5): whether this node is one (`--hub`), and how many ordinary
        /// instances an ordinary node stays linked to while a hub is linked.
        public var hub = false
        public var maxDirectWithHub = 2
        /// Hubs an ordinary node links to at most (local ones first).
        public var maxHubs = 2
        /// The bounds of the table of mDNS instances (size, and how long one may stay silent).
        public var discovery = DiscoveredTable.Settings()
        /// `event.sync` per peer at most this often (plus one when it caught up).
        public var syncEventInterval: Duration = .milliseconds(250)
        /// Wall clock in Unix milliseconds (for `since`).
        public var now: @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970 * 1000) }
        /// The monotonic clock every timer, rate and refusal of the manager and its pieces is
        /// measured on (injected for tests; the links' own is `link.now`).
        public var clock: @Sendable () -> ContinuousClock.Instant = { .now }
        /// The jitter of each backoff (injected so tests can replay it).
        public var random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
        public init() {}
    }
}
