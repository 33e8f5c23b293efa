/// `posts --search` over many posts (issue 17: 100,000 posts, p99 under 10 ms): a post's
/// rowid is its place in time (`recency`, migration 20), so FTS5 hands a query's matches newest
/// first and stops after `window` of them; bm25 ranks those alone. A word in half of 100,000
/// posts costs the newest 1,000 matches, not 50,000 bm25 scores and a sort of them.
///
/// What a search returns (API.md, `posts`): the best by bm25 among the newest `window` posts
/// that match every word; with fewer matches than that, the best of all of them. A relevant
/// post older than the newest 1,000 matches of a common word is found with a further word.
public enum PostSearch {
    /// How many of the newest matches are ranked.
    public static let window = 1_000

    /// The greatest timestamp a key holds (milliseconds, the year 4199); later ones share it.
    static let maxMillis: Int64 = 1 << 46
    /// Posts of one millisecond: slots 0...65535 after the timestamp.
    static let slots: Int64 = 1 << 16

    /// The most whole words a search's last word is read as (`lastWord`).
    static let expansion = 8

    /// The FTS5 query of a search's last word, which matches as the start of a word: the whole
    /// words of the index it starts, when they are few — `"agate"`, or `("agate" OR "agates")`
    /// — else the prefix query `"ag"*`. Both find the same posts; the words are cheaper: FTS5
    /// reads the whole doclist of every term a prefix starts before its first match (and bm25
    /// reads them again for its statistics), where a whole word streams newest first and stops
    /// at the window. The index's words are read from `post_words` (migration 22) for words of
    /// ASCII letters and digits, which the index holds as typed but lower-cased; any other word
    /// stays a prefix query, as the tokenizer folds it.
    public static func lastWord(_ word: Substring, _ db: Database) throws(StoreError) -> String {
        let prefix = "\"\(word)\"*"
        let folded = Array(word.lowercased().utf8)
        guard folded.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x7a).contains($0) }), let last = folded.last else { return prefix }
        let upper = String(decoding: folded.dropLast() + [last + 1], as: UTF8.self)
        let terms = try db.cachedStatement("SELECT term FROM post_words WHERE term >= ? AND term < ? LIMIT ?")
            .query([.text(String(decoding: folded, as: UTF8.self)), .text(upper), .integer(Int64(expansion + 1))]).compactMap { $0.text(0) }
        guard (1...expansion).contains(terms.count), terms.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber } }) else { return prefix }
        return terms.count == 1 ? "\"\(terms[0])\"" : "(" + terms.map { "\"\($0)\"" }.joined(separator: " OR ") + ")"
    }

    /// The first key of the posts created at `created` (milliseconds).
    static func base(created: UInt64) -> Int64 {
        min(Int64(clamping: created), maxMillis) << 16
    }
}

extension ApplyBatch {
    /// The `recency` of a post created at `created`: the first free slot of its millisecond;
    /// when all 65,536 are taken (one account signing that many posts in one millisecond),
    /// below every other post, so a flood sorts oldest instead of failing.
    func postRecency(created: UInt64) throws(StoreError) -> Int64 {
        let base = PostSearch.base(created: created)
        let top = base + PostSearch.slots - 1
        guard let taken = try statement("SELECT max(recency) FROM posts WHERE recency BETWEEN ? AND ?")
            .queryOne([.integer(base), .integer(top)])?.int64(0) else { return base }
        if taken < top { return taken + 1 }
        let lowest = try statement("SELECT min(recency) FROM posts").queryOne([])?.int64(0) ?? 0
        return min(lowest, 0) - 1
    }
}
