/// What one account sees of its relation with another: the two like registers, the match,
/// the unmatch tombstone and the conversation. Computed by a pure function from the decrypted
/// private records of the pair, so it is the same whatever order they arrived in.
public struct PairEntry: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case like(Bool)
        case chat(peerSeq: UInt64, text: String)
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
    /// Messages that are not causally after a match (refused, kept out of the conversation).
    public var rejectedMessages: Int

    /// Builds the view from all entries of the pair, in any order, duplicates allowed.
    public static func build(me: PublicKey, other: PublicKey, entries: [PairEntry]) -> PairView {
        var seen = Set<[UInt8]>()
        let unique = entries.filter { seen.insert($0.recordID).inserted }
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
            let chats = unique.compactMap { e -> (PairEntry, UInt64, String)? in
                if case .chat(let p, let t) = e.kind, e.author == me || e.author == other { return (e, p, t) }
                return nil
            }
            var valid: [(PairEntry, UInt64, String)] = []
            for c in chats {
                let (sender, peerSeq) = (c.0, c.1)
                let senderLikes = sender.author == me ? mine : theirs
                let recipientLikes = sender.author == me ? theirs : mine
                // Causally after the match: the sender's own like stood when it wrote, and the
                // recipient's like that it depends on (seq ≤ peerSeq) was a like.
                if senderLikes.value(atOrBefore: sender.seq - 1) && recipientLikes.value(atOrBefore: peerSeq) {
                    valid.append(c)
                } else {
                    rejected += 1
                }
            }
            messages = causalOrder(valid.map { ($0.0, $0.1, $0.2) }, me: me, other: other)
        }
        let bothLike = iLike && theyLike
        return PairView(me: me, other: other, iLike: iLike, theyLike: theyLike,
                        matched: bothLike && unmatchedBy == nil, unmatchedBy: unmatchedBy,
                        messages: messages, rejectedMessages: rejected)
    }

    /// Deterministic order of two entries: earlier timestamp first, then smaller record ID.
    static func earlier(_ x: PairEntry, _ y: PairEntry) -> Bool {
        x.timestamp != y.timestamp ? x.timestamp < y.timestamp : x.recordID.lexicographicallyPrecedes(y.recordID)
    }

    /// One author's like register over time: for each seq it wrote a like at, the register's
    /// value from then on (single writer: a higher seq supersedes; forked writes at one seq
    /// resolve by the register tie-break). Sorted by seq, so a lookup is a binary search.
    struct LikeHistory {
        var steps: [(seq: UInt64, liked: Bool)] = []

        init(_ entries: [PairEntry], author: PublicKey) {
            var bySeq: [UInt64: [RegisterEntry<Bool>]] = [:]
            for e in entries where e.author == author {
                guard case .like(let liked) = e.kind else { continue }
                let entry = RegisterEntry(clock: VectorClock([(e.author, e.seq)]), timestamp: e.timestamp, recordID: e.recordID, value: liked)
                bySeq[e.seq] = MVRegister.merge(bySeq[e.seq] ?? [], entry) ?? bySeq[e.seq]
            }
            steps = bySeq.keys.sorted().compactMap { seq in
                MVRegister.winner(bySeq[seq] ?? []).map { (seq, $0.value) }
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
    static func causalOrder(_ chats: [(PairEntry, UInt64, String)], me: PublicKey, other: PublicKey) -> [Message] {
        func chain(_ k: PublicKey) -> [(PairEntry, UInt64, String)] {
            chats.filter { $0.0.author == k }.sorted {
                $0.0.seq != $1.0.seq ? $0.0.seq < $1.0.seq : $0.0.recordID.lexicographicallyPrecedes($1.0.recordID)
            }
        }
        let a = chain(me), b = chain(other)
        var i = 0, j = 0
        var out: [Message] = []
        out.reserveCapacity(chats.count)
        func emit(_ c: (PairEntry, UInt64, String)) {
            out.append(Message(author: c.0.author, seq: c.0.seq, timestamp: c.0.timestamp, recordID: c.0.recordID, text: c.2))
        }
        while i < a.count || j < b.count {
            guard i < a.count else { emit(b[j]); j += 1; continue }
            guard j < b.count else { emit(a[i]); i += 1; continue }
            // a[i] is ready when every b message it depends on (seq ≤ peerSeq) is out.
            let aReady = b[j].0.seq > a[i].1
            let bReady = a[i].0.seq > b[j].1
            let takeA: Bool
            if aReady != bReady {
                takeA = aReady
            } else {
                // Both ready (concurrent) — or a forged cycle: deterministic tie-break.
                takeA = earlier(a[i].0, b[j].0)
            }
            if takeA { emit(a[i]); i += 1 } else { emit(b[j]); j += 1 }
        }
        return out
    }
}
