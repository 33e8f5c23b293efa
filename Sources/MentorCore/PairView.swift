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
        case chat(peerSeq: UInt64, answers: [UInt8]?, text: String)
        case unmatch(peerSeq: UInt64)
    }
    public var author: PublicKey
    public var seq: UInt64
    public var timestamp: UInt64
    public var recordID: [UInt8]
    public var kind: Kind

    public init(author: PublicKey, seq: UInt64, timestamp: UInt64, recordID: [UInt8], kind: Kind) {
        self.author = author; self.seq = seq; self.timestamp = timestamp; self.recordID = recordID; self.kind = kind
    }
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

    /// Builds the view from all entries of the pair, in any order, duplicates allowed.
    public static func build(me: PublicKey, other: PublicKey, entries: [PairEntry]) -> PairView {
        var seen = Set<[UInt8]>()
        let unique = entries.filter { seen.insert($0.recordID).inserted }
        var likesByID: [[UInt8]: PairEntry] = [:]
        for e in unique { if case .like(true, _) = e.kind { likesByID[e.recordID] = e } }
        let mine = LikeHistory(unique, author: me)
        let theirs = LikeHistory(unique, author: other)
        // The tombstone is final; if both unmatched, the earliest by (timestamp, ID) names who did.
        let unmatchedBy = unique.filter { if case .unmatch = $0.kind { return true } else { return false } }
            .min { earlier($0, $1) }?.author
        let iLike = mine.value(atOrBefore: .max)
        let theyLike = theirs.value(atOrBefore: .max)

        var messages: [Message] = []
        var rejected = 0
        if unmatchedBy == nil {
            let chats = unique.compactMap { e -> Chat? in
                if case .chat(let p, let answers, let t) = e.kind, e.author == me || e.author == other {
                    return Chat(entry: e, peerSeq: p, answers: answers, text: t)
                }
                return nil
            }
            let myWithdrawals = Withdrawals(unique, author: me), theirWithdrawals = Withdrawals(unique, author: other)
            var valid: [Chat] = []
            for c in chats {
                let fromMe = c.entry.author == me
                if isWrittenWhileMatched(c, senderLikes: fromMe ? mine : theirs, recipient: fromMe ? other : me,
                                         recipientWithdrawals: fromMe ? theirWithdrawals : myWithdrawals, likes: likesByID) {
                    valid.append(c)
                } else {
                    rejected += 1
                }
            }
            messages = causalOrder(valid, me: me, other: other)
        }
        let bothLike = iLike && theyLike
        return PairView(me: me, other: other, iLike: iLike, theyLike: theyLike,
                        matched: bothLike && unmatchedBy == nil, unmatchedBy: unmatchedBy,
                        messages: messages, rejectedMessages: rejected)
    }

    /// A message of the pair, as the validity rule and the causal order read it.
    struct Chat {
        var entry: PairEntry
        var peerSeq: UInt64
        var answers: [UInt8]?
        var text: String
    }

    /// Section 8.5: the message was written while the two were matched. The sender's own like
    /// stood before it (seq ≤ s − 1); it answers a like of the recipient that is in the pair's
    /// records (a record ID, which nobody can know before the like exists) and that it had
    /// applied (peer seq ≥ the like's seq); and the recipient did not withdraw that like before
    /// it had seen the message (a withdrawal at or after the like's seq whose peer seq is < s).
    static func isWrittenWhileMatched(_ c: Chat, senderLikes: LikeHistory, recipient: PublicKey,
                                      recipientWithdrawals: Withdrawals, likes: [[UInt8]: PairEntry]) -> Bool {
        let s = c.entry.seq
        guard s > 0, senderLikes.value(atOrBefore: s - 1) else { return false }
        guard let id = c.answers, let like = likes[id], like.author == recipient else { return false }
        guard c.peerSeq >= like.seq else { return false }
        return !recipientWithdrawals.withdrewUnseen(since: like.seq, messageSeq: s)
    }

    /// One author's withdrawals (like = false) in the pair, sorted by seq, with the smallest
    /// peer seq of each suffix: "a withdrawal at seq ≥ ℓ with peer seq < s" is one binary search.
    struct Withdrawals {
        var seqs: [UInt64] = []
        var suffixMinPeerSeq: [UInt64] = []

        init(_ entries: [PairEntry], author: PublicKey) {
            let w = entries.compactMap { e -> (UInt64, UInt64)? in
                if e.author == author, case .like(false, let q) = e.kind { return (e.seq, q) }
                return nil
            }.sorted { $0.0 < $1.0 }
            seqs = w.map(\.0)
            suffixMinPeerSeq = w.map(\.1)
            if suffixMinPeerSeq.count > 1 {
                for i in stride(from: suffixMinPeerSeq.count - 2, through: 0, by: -1) {
                    suffixMinPeerSeq[i] = min(suffixMinPeerSeq[i], suffixMinPeerSeq[i + 1])
                }
            }
        }

        /// Some withdrawal with seq ≥ `since` was written before its author had applied seq
        /// `messageSeq` of the other account.
        func withdrewUnseen(since: UInt64, messageSeq: UInt64) -> Bool {
            var lo = 0, hi = seqs.count            // first index with seq ≥ since
            while lo < hi {
                let mid = (lo + hi) / 2
                if seqs[mid] < since { lo = mid + 1 } else { hi = mid }
            }
            return lo < seqs.count && suffixMinPeerSeq[lo] < messageSeq
        }
    }

    /// The like of `author` that currently stands in `entries` (the register's winner), if the
    /// register's value is "like": the record a new message to `author` answers (section 8.5).
    public static func currentLike(of author: PublicKey, in entries: [PairEntry]) -> PairEntry? {
        var seen = Set<[UInt8]>()
        let unique = entries.filter { seen.insert($0.recordID).inserted }
        guard let last = LikeHistory(unique, author: author).steps.last, last.liked else { return nil }
        return unique.first { $0.recordID == last.recordID }
    }

    /// Deterministic order of two entries: earlier timestamp first, then smaller record ID.
    static func earlier(_ x: PairEntry, _ y: PairEntry) -> Bool {
        x.timestamp != y.timestamp ? x.timestamp < y.timestamp : x.recordID.lexicographicallyPrecedes(y.recordID)
    }

    /// One author's like register over time: for each seq it wrote a like at, the register's
    /// value from then on (single writer: a higher seq supersedes; forked writes at one seq
    /// resolve by the register tie-break). Sorted by seq, so a lookup is a binary search.
    struct LikeHistory {
        var steps: [(seq: UInt64, liked: Bool, recordID: [UInt8])] = []

        init(_ entries: [PairEntry], author: PublicKey) {
            var bySeq: [UInt64: [RegisterEntry<Bool>]] = [:]
            for e in entries where e.author == author {
                guard case .like(let liked, _) = e.kind else { continue }
                let entry = RegisterEntry(clock: VectorClock([(e.author, e.seq)]), timestamp: e.timestamp, recordID: e.recordID, value: liked)
                bySeq[e.seq] = MVRegister.merge(bySeq[e.seq] ?? [], entry) ?? bySeq[e.seq]
            }
            steps = bySeq.keys.sorted().compactMap { seq in
                MVRegister.winner(bySeq[seq] ?? []).map { (seq, $0.value, $0.recordID) }
            }
        }

        /// The value considering only writes with seq ≤ `bound`.
        func value(atOrBefore bound: UInt64) -> Bool {
            var lo = 0, hi = steps.count            // first index with seq > bound
            while lo < hi {
                let mid = (lo + hi) / 2
                if steps[mid].seq <= bound { lo = mid + 1 } else { hi = mid }
            }
            return lo == 0 ? false : steps[lo - 1].liked
        }
    }

    /// Merges the two writers' chains in causal order: a message comes after every message of
    /// its own author with a lower seq and after the other's messages with seq ≤ its peerSeq.
    /// Among messages that are both ready, the earlier (timestamp, record ID) goes first.
    static func causalOrder(_ chats: [Chat], me: PublicKey, other: PublicKey) -> [Message] {
        func chain(_ k: PublicKey) -> [Chat] {
            chats.filter { $0.entry.author == k }.sorted {
                $0.entry.seq != $1.entry.seq ? $0.entry.seq < $1.entry.seq : $0.entry.recordID.lexicographicallyPrecedes($1.entry.recordID)
            }
        }
        let a = chain(me), b = chain(other)
        var i = 0, j = 0
        var out: [Message] = []
        out.reserveCapacity(chats.count)
        func emit(_ c: Chat) {
            out.append(Message(author: c.entry.author, seq: c.entry.seq, timestamp: c.entry.timestamp, recordID: c.entry.recordID, text: c.text))
        }
        while i < a.count || j < b.count {
            guard i < a.count else { emit(b[j]); j += 1; continue }
            guard j < b.count else { emit(a[i]); i += 1; continue }
            // a[i] is ready when every b message it depends on (seq ≤ peerSeq) is out.
            let aReady = b[j].entry.seq > a[i].peerSeq
            let bReady = a[i].entry.seq > b[j].peerSeq
            let takeA: Bool
            if aReady != bReady {
                takeA = aReady
            } else {
                // Both ready (concurrent) — or a forged cycle: deterministic tie-break.
                takeA = earlier(a[i].entry, b[j].entry)
            }
            if takeA { emit(a[i]); i += 1 } else { emit(b[j]); j += 1 }
        }
        return out
    }
}
