/// What one account sees of its relation with another: the two like registers, the match,
/// the unmatch tombstone and the conversation. Computed by a pure function from the decrypted
/// private records of the pair, so it is the same whatever order they arrived in.
public struct PairEntry: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A like (`true`) or a withdrawn like (`false`), with the highest seq of the other
        /// account's records the liker had applied when it wrote.
        case like(Bool, peerSeq: UInt64)
        /// A message, with the sender's peer seq and the record ID of the recipient's like it
        /// answers (nil in payloads written before that field existed: never valid).
        /// `peerSeq` is the message's place (§8.6), `answers` and `mine` its match (§8.5).
        case chat(peerSeq: UInt64, answers: [UInt8]?, mine: [UInt8]? = nil, text: String)
        /// The match it ends (`answers`: the other's like, `mine`: the author's); nil: every
        /// match of the pair, for good (written before unmatches named their match).
        case unmatch(peerSeq: UInt64, answers: [UInt8]? = nil, mine: [UInt8]? = nil)
        /// The author's contact text for the match of `answers` (the other's like) and `mine`
        /// (the author's); empty: cleared (§7.7).
        case contact(answers: [UInt8], mine: [UInt8], text: String)
    }
    /// The author's account (whichever of its keys signed).
    public var author: PublicKey
    public var seq: UInt64
    public var timestamp: UInt64
    public var recordID: [UInt8]
    public var kind: Kind
    /// The record's effective clock, over its account's keys; nil reads as `{author: seq}`
    /// (an account that signs with its own key alone).
    public var clock: VectorClock?

    public init(author: PublicKey, seq: UInt64, timestamp: UInt64, recordID: [UInt8], kind: Kind, clock: VectorClock? = nil) {
        self.author = author; self.seq = seq; self.timestamp = timestamp; self.recordID = recordID; self.kind = kind
        self.clock = clock
    }

    /// The clock the register rules compare.
    public var effectiveClock: VectorClock { clock ?? VectorClock([(author, seq)]) }
}

public struct PairView: Sendable, Equatable {
    public struct Message: Sendable, Equatable {
        public var author: PublicKey
        public var seq: UInt64
        public var timestamp: UInt64
        public var recordID: [UInt8]
        public var text: String

        public init(author: PublicKey, seq: UInt64, timestamp: UInt64, recordID: [UInt8], text: String) {
            self.author = author; self.seq = seq; self.timestamp = timestamp; self.recordID = recordID; self.text = text
        }
    }

    public var me: PublicKey
    public var other: PublicKey
    /// Current value of my like register for `other` (winner), and of theirs for me.
    public var iLike: Bool
    public var theyLike: Bool
    /// Both like registers currently stand at "like" and nobody unmatched (undoing a like
    /// ends the match).
    public var matched: Bool
    /// Who unmatched, if anybody did (the tombstone is final for the pair).
    public var unmatchedBy: PublicKey?
    /// Valid messages in causal order; empty once unmatched.
    public var messages: [Message]
    /// Messages that were not written while the two were matched (section 8.5 of PROTOCOL.md):
    /// kept out of the conversation, never counted as messages or notified.
    public var rejectedMessages: Int
    /// The other's contact, while matched: the newest (timestamp, record ID) of their contacts
    /// that name the match that stands; nil when there is none or it was cleared (§7.7).
    public var contact: String? = nil

    /// Builds the view from all entries of the pair, in any order, duplicates allowed
    /// (PROTOCOL.md §8.4–8.7).
    public static func build(me: PublicKey, other: PublicKey, entries: [PairEntry]) -> PairView {
        var seen = Set<[UInt8]>()
        let unique = entries.filter { seen.insert($0.recordID).inserted }
        // Unmatches: one that names its match ends that match only — and its author's like in
        // it, so that a new match needs new likes from both; one written before unmatches named
        // their match ends the pair for good.
        let unmatches = unique.filter { if case .unmatch = $0.kind { return true } else { return false } }
        let mine = LikeRegister(unique, author: me, unmatches: unmatches), theirs = LikeRegister(unique, author: other, unmatches: unmatches)
        let iLike = mine.value, theyLike = theirs.value
        var ended: Set<Match> = []
        var endedBy: [Match: PairEntry] = [:]
        var finalUnmatch: PairEntry?
        for u in unmatches {
            guard case .unmatch(_, let answers, let own) = u.kind else { continue }
            if let answers, let own {
                let match = Match(answers, own)
                ended.insert(match)
                if let e = endedBy[match], earlier(e, u) { continue }
                endedBy[match] = u
            } else if finalUnmatch.map({ earlier(u, $0) }) ?? true {
                finalUnmatch = u
            }
        }
        let live = mine.liveLikes.flatMap { a in theirs.liveLikes.map { b in Match(a, b) } }.filter { !ended.contains($0) }
        let matched = finalUnmatch == nil && !live.isEmpty
        var unmatchedBy = finalUnmatch?.author
        if unmatchedBy == nil, !matched {
            // Who ended the match the two current likes make, if one did.
            let current = mine.standingLikes.flatMap { a in theirs.standingLikes.map { b in Match(a, b) } }
            unmatchedBy = current.compactMap { endedBy[$0] }.min { earlier($0, $1) }?.author
        }

        var messages: [Message] = []
        var rejected = 0
        if finalUnmatch == nil {
            let liveSet = Set(live)
            var valid: [Chat] = []
            for e in unique {
                guard case .chat(let place, let answers, let own, let text) = e.kind, e.author == me || e.author == other else { continue }
                let c = Chat(entry: e, peerSeq: place, answers: answers, text: text)
                let fromMe = e.author == me
                // The match the message names: its sender's like and the recipient's, both
                // standing (§8.5); a message of a match that an unmatch ended is gone, not rejected.
                guard let answers, let own else { rejected += 1; continue }
                let match = Match(answers, own)
                if ended.contains(match) { continue }
                let senderLikes = fromMe ? mine : theirs, recipientLikes = fromMe ? theirs : mine
                if liveSet.contains(match), senderLikes.liveLikes.contains(own), recipientLikes.liveLikes.contains(answers) {
                    valid.append(c)
                } else {
                    rejected += 1
                }
            }
            messages = valid.sorted { x, y in
                x.peerSeq != y.peerSeq ? x.peerSeq < y.peerSeq : earlier(x.entry, y.entry)
            }.map { Message(author: $0.entry.author, seq: $0.entry.seq, timestamp: $0.entry.timestamp,
                            recordID: $0.entry.recordID, text: $0.text) }
        }
        // The other's contact in a match that stands: their like live, and mine (§7.7).
        var contact: String?
        if matched {
            let liveSet = Set(live)
            contact = newestContact(by: other, in: unique) { answers, own in
                liveSet.contains(Match(answers, own)) && theirs.liveLikes.contains(own) && mine.liveLikes.contains(answers)
            }.flatMap { $0.isEmpty ? nil : $0 }
        }
        return PairView(me: me, other: other, iLike: iLike, theyLike: theyLike, matched: matched, unmatchedBy: unmatchedBy,
                        messages: messages, rejectedMessages: rejected, contact: contact)
    }

    /// A match: the record IDs of its two likes, in no particular order.
    struct Match: Hashable {
        let lo: [UInt8], hi: [UInt8]
        init(_ a: [UInt8], _ b: [UInt8]) { (lo, hi) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a) }
    }

    /// A message of the pair, as the validity rule and the order read it.
    struct Chat {
        var entry: PairEntry
        var peerSeq: UInt64
        var answers: [UInt8]?
        var text: String
    }

    /// One account's like register for the other (§8.4): a multi-value register over the
    /// account's keys' clocks. Its value is the winner's; its live likes are the likes among
    /// its current entries (concurrent likes from two devices are both live).
    struct LikeRegister {
        var entries: [RegisterEntry<Bool>] = []
        /// The author's likes its own unmatches ended (§8.7): they stand no more.
        var ended: Set<[UInt8]> = []

        init(_ all: [PairEntry], author: PublicKey, unmatches: [PairEntry] = []) {
            for e in all where e.author == author {
                guard case .like(let liked, _) = e.kind else { continue }
                let entry = RegisterEntry(clock: e.effectiveClock, timestamp: e.timestamp, recordID: e.recordID, value: liked)
                entries = MVRegister.merge(entries, entry) ?? entries
            }
            for u in unmatches where u.author == author {
                if case .unmatch(_, _, let own?) = u.kind { ended.insert(own) }
            }
        }

        var winner: RegisterEntry<Bool>? { MVRegister.winner(entries) }
        var value: Bool { winner.map { $0.value && !ended.contains($0.recordID) } ?? false }
        var liveLikes: [[UInt8]] { entries.filter { $0.value && !ended.contains($0.recordID) }.map(\.recordID) }
        /// The likes among the current entries, the ones an unmatch ended included.
        var standingLikes: [[UInt8]] { entries.filter(\.value).map(\.recordID) }
    }

    /// The like of `author` that currently stands in `entries` (the register's winner), if the
    /// register's value is "like": the record a new message names (section 8.5).
    public static func currentLike(of author: PublicKey, in entries: [PairEntry]) -> PairEntry? {
        var seen = Set<[UInt8]>()
        let unique = entries.filter { seen.insert($0.recordID).inserted }
        let unmatches = unique.filter { if case .unmatch = $0.kind { return true } else { return false } }
        let register = LikeRegister(unique, author: author, unmatches: unmatches)
        guard register.value, let w = register.winner else { return nil }
        return unique.first { $0.recordID == w.recordID }
    }

    /// The effective clock a new like of `author` must carry to supersede every like entry of
    /// its register (the pointwise maximum of their clocks).
    public static func likeClock(of author: PublicKey, in entries: [PairEntry]) -> VectorClock {
        VectorClock(entries.filter { e in
            if case .like = e.kind { return e.author == author } else { return false }
        }.flatMap { $0.effectiveClock.entries.map { ($0.key, $0.seq) } })
    }

    /// The text of the newest contact (by timestamp, record ID) `author` wrote in the match of
    /// the likes `answers` (the other's) and `mine` (the author's); nil when none (§7.7).
    public static func newestContact(by author: PublicKey, answers: [UInt8], mine: [UInt8], in entries: [PairEntry]) -> String? {
        newestContact(by: author, in: entries) { $0 == answers && $1 == mine }
    }

    /// The newest contact of `author` among those whose match (`answers`, `mine`) `names` accepts.
    static func newestContact(by author: PublicKey, in entries: [PairEntry], names: ([UInt8], [UInt8]) -> Bool) -> String? {
        let newest = entries.filter { e in
            guard e.author == author, case .contact(let answers, let mine, _) = e.kind else { return false }
            return names(answers, mine)
        }.max { earlier($0, $1) }
        if case .contact(_, _, let text)? = newest?.kind { return text }
        return nil
    }

    /// The place of a new message (§8.6): one past the highest place among the pair's messages.
    public static func nextPlace(in entries: [PairEntry]) -> UInt64 {
        1 + (entries.compactMap { e -> UInt64? in if case .chat(let p, _, _, _) = e.kind { return p } else { return nil } }.max() ?? 0)
    }

    /// Deterministic order of two entries: earlier timestamp first, then smaller record ID.
    static func earlier(_ x: PairEntry, _ y: PairEntry) -> Bool {
        x.timestamp != y.timestamp ? x.timestamp < y.timestamp : x.recordID.lexicographicallyPrecedes(y.recordID)
    }
}
