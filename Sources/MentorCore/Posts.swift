/// Posts, comments and likes of posts (record types 9, 10, 11; PROTOCOL.md §6.6 "Posts").
///
/// A post is public: 1–4 photos (content-addressed blobs, as a card's), a caption and tags. Its
/// author edits the caption and the tags (two registers of the post) and deletes it (final: the
/// post, its edits, likes and comments leave every replica). Anyone comments and likes; a
/// comment's author deletes it, the post's author hides it. Who may do what is decided when a
/// record is applied (the replica must hold the post or comment it names), never by the body.

/// How text bounds are counted: Unicode scalars, the same in every Unicode version (grapheme
/// clusters are not), and at most 4 UTF-8 bytes each.
public enum PostText {
    /// A caption or a comment: at most this many Unicode scalars.
    public static let maxScalars = 2000
    public static let maxBytes = 4 * maxScalars

    static func check(_ s: String, _ name: String, what: String) throws(RecordError) {
        let n = s.unicodeScalars.count
        guard n <= maxScalars else {
            throw RecordError(.invalidBody, "\(what) \(name) is \(n) characters; at most \(maxScalars) allowed")
        }
    }
}

/// A post's tags: 0 … 10 words, each 1 … 32 bytes, canonical lower case.
public enum PostTags {
    public static let maxTags = 10
    public static let maxTagBytes = 32

    /// The canonical spelling of what a person typed: a leading `#` dropped, runs of whitespace
    /// made one `-` (none at either end), ASCII letters lower case; other scalars kept as
    /// written (so every implementation agrees on what is canonical). Nil when nothing is left.
    public static func normalize(_ t: String) -> String? {
        var out = String.UnicodeScalarView()
        var pendingDash = false
        var scalars = Substring(t).unicodeScalars[...]
        while let first = scalars.first, first == "#" || ProfileCard.isCourseWhitespace(first) { scalars.removeFirst() }
        for s in scalars {
            if ProfileCard.isCourseWhitespace(s) { pendingDash = !out.isEmpty; continue }
            if pendingDash { out.append("-"); pendingDash = false }
            out.append(("A"..."Z").contains(s) ? Unicode.Scalar(s.value + 32)! : s)
        }
        return out.isEmpty ? nil : String(out)
    }

    static func encode(_ tags: [String]) -> [UInt8] {
        var w = ByteWriter(capacity: tags.reduce(0) { $0 + 1 + $1.utf8.count })
        for t in tags { w.u8(UInt8(truncatingIfNeeded: t.utf8.count)); w.raw(Array(t.utf8)) }
        return w.bytes
    }

    static func decode(_ v: [UInt8], what: String) throws(RecordError) -> [String] {
        var r = ByteReader(v)
        var out: [String] = []
        while !r.isAtEnd {
            let n = Int(try r.u8("tag length"))
            let raw = try r.raw(n, "tag")
            guard let t = String(validating: raw, as: UTF8.self) else { throw RecordError(.malformed, "\(what) tag is not valid UTF-8") }
            guard n >= 1, n <= maxTagBytes else { throw RecordError(.invalidBody, "\(what) tags are 1 to \(maxTagBytes) bytes") }
            guard !t.unicodeScalars.contains(where: ProfileCard.isControl), let canonical = normalize(t),
                  Array(canonical.utf8) == raw, !t.contains(",") else {
                throw RecordError(.invalidBody, "\(what) tag '\(t)' is not canonical (lower case, no spaces, no '#', no commas)")
            }
            guard !out.contains(where: { Array($0.utf8) == raw }) else { throw RecordError(.invalidBody, "\(what) tag '\(t)' is listed twice") }
            out.append(t)
        }
        guard out.count <= maxTags else { throw RecordError(.invalidBody, "\(what) has \(out.count) tags; at most \(maxTags) allowed") }
        return out
    }
}

/// Type 9: a post, an edit of one, or its deletion (§6.6).
///
/// | tag | field | |
/// |---|---|---|
/// | 1 | photos | 1 … 4 photo references (37 bytes each), only when creating |
/// | 2 | caption | text, ≤ 2,000 scalars (may be empty) |
/// | 3 | tags | 0 … 10 canonical tags, each `length (u8) ‖ UTF-8` |
/// | 4 | post | 32 bytes: the record ID of the post this edits or deletes |
/// | 5 | deleted | one byte `01` |
public struct Post: RecordSchema, Equatable {
    public static let type = RecordType.post
    public static let name = "post"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.posts
    public static let maxPhotos = 4
    public enum Tag: UInt8, CaseIterable { case photos = 1, caption = 2, tags = 3, post = 4, deleted = 5 }

    public enum Action: Equatable, Sendable {
        case create(photos: [PhotoRef], caption: String, tags: [String])
        /// Sets the caption and/or the tags of `post` (nil: unchanged).
        case edit(post: [UInt8], caption: String?, tags: [String]?)
        case delete(post: [UInt8])
    }
    public var action: Action

    public init(_ action: Action) { self.action = action }

    /// The post a record names: itself when creating (nil here), else the one it edits or deletes.
    public var target: [UInt8]? {
        switch action {
        case .create: nil
        case .edit(let p, _, _), .delete(let p): p
        }
    }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "post"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        let caption = try f.text(Tag.caption.rawValue, "caption", maxBytes: PostText.maxBytes, what: what)
        if let caption { try PostText.check(caption, "caption", what: what) }
        let tags = try f[Tag.tags.rawValue].map { v throws(RecordError) in try PostTags.decode(v, what: what) }
        let post = try f.bytes(Tag.post.rawValue, "post", length: 32, what: what)
        let deleted = try f.bytes(Tag.deleted.rawValue, "deleted", length: 1, what: what)
        if let deleted, deleted != [1] { throw RecordError(.malformed, "post deleted flag must be 01") }
        switch (f[Tag.photos.rawValue], post) {
        case (let photos?, nil):
            guard deleted == nil else { throw RecordError(.invalidBody, "a new post cannot be deleted") }
            let refs = try PhotoRef.decodeList(photos)
            guard (1...Self.maxPhotos).contains(refs.count) else {
                throw RecordError(.invalidBody, "a post has 1 to \(Self.maxPhotos) photos; this one names \(refs.count)")
            }
            action = .create(photos: refs, caption: caption ?? "", tags: tags ?? [])
        case (nil, let post?):
            if deleted != nil {
                guard caption == nil, tags == nil else { throw RecordError(.invalidBody, "a post's deletion carries nothing else") }
                action = .delete(post: post)
            } else {
                guard caption != nil || tags != nil else { throw RecordError(.invalidBody, "a post edit changes neither caption nor tags") }
                action = .edit(post: post, caption: caption, tags: tags)
            }
        case (_?, _?):
            throw RecordError(.invalidBody, "a post's photos are set when it is created, never by an edit")
        case (nil, nil):
            throw RecordError(.malformed, "post lacks its photos field")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        switch action {
        case .create(let photos, let caption, let tags):
            f.set(Tag.photos.rawValue, PhotoRef.encodeList(photos))
            f.set(Tag.caption.rawValue, text: caption)
            if !tags.isEmpty { f.set(Tag.tags.rawValue, PostTags.encode(tags)) }
        case .edit(let post, let caption, let tags):
            if let caption { f.set(Tag.caption.rawValue, text: caption) }
            if let tags { f.set(Tag.tags.rawValue, PostTags.encode(tags)) }
            f.set(Tag.post.rawValue, post)
        case .delete(let post):
            f.set(Tag.post.rawValue, post)
            f.set(Tag.deleted.rawValue, [1])
        }
        return f.encoded
    }
}

/// Type 10: a comment on a post, its deletion by its author, or its hiding by the post's author.
///
/// | tag | field | |
/// |---|---|---|
/// | 1 | post | 32 bytes: the post's record ID (required) |
/// | 2 | text | text, 1 … 2,000 scalars (a new comment) |
/// | 3 | comment | 32 bytes: the comment deleted or hidden |
/// | 4 | deleted | one byte `01` |
/// | 5 | hidden | one byte `01` |
public struct PostComment: RecordSchema, Equatable {
    public static let type = RecordType.comment
    public static let name = "comment"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.posts
    public enum Tag: UInt8, CaseIterable { case post = 1, text = 2, comment = 3, deleted = 4, hidden = 5 }

    public enum Action: Equatable, Sendable {
        case create(text: String)
        case delete(comment: [UInt8])
        case hide(comment: [UInt8])
    }
    public var post: [UInt8]
    public var action: Action

    public init(post: [UInt8], _ action: Action) { self.post = post; self.action = action }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "comment"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        post = try f.require(f.bytes(Tag.post.rawValue, "post", length: 32, what: what), "post", what: what)
        let text = try f.text(Tag.text.rawValue, "text", maxBytes: PostText.maxBytes, what: what)
        let comment = try f.bytes(Tag.comment.rawValue, "comment", length: 32, what: what)
        let deleted = try f.bytes(Tag.deleted.rawValue, "deleted", length: 1, what: what)
        let hidden = try f.bytes(Tag.hidden.rawValue, "hidden", length: 1, what: what)
        guard deleted == nil || deleted == [1], hidden == nil || hidden == [1] else {
            throw RecordError(.malformed, "comment deleted and hidden flags must be 01")
        }
        switch (text, comment, deleted, hidden) {
        case (let text?, nil, nil, nil):
            guard !text.isEmpty else { throw RecordError(.invalidBody, "a comment's text is empty") }
            try PostText.check(text, "text", what: what)
            action = .create(text: text)
        case (nil, let c?, _?, nil): action = .delete(comment: c)
        case (nil, let c?, nil, _?): action = .hide(comment: c)
        default:
            throw RecordError(.invalidBody, "a comment record is a text, or a comment ID with exactly one of deleted and hidden")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.post.rawValue, post)
        switch action {
        case .create(let text): f.set(Tag.text.rawValue, text: text)
        case .delete(let c): f.set(Tag.comment.rawValue, c); f.set(Tag.deleted.rawValue, [1])
        case .hide(let c): f.set(Tag.comment.rawValue, c); f.set(Tag.hidden.rawValue, [1])
        }
        return f.encoded
    }
}

/// Type 11: an account's like of a post, or its withdrawal — one register per (account, post),
/// the newest by (timestamp, record ID) deciding.
public struct PostLike: RecordSchema, Equatable {
    public static let type = RecordType.postLike
    public static let name = "post-like"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.posts
    public enum Tag: UInt8, CaseIterable { case post = 1, liked = 2 }

    public var post: [UInt8]
    public var liked: Bool

    public init(post: [UInt8], liked: Bool) { self.post = post; self.liked = liked }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "post-like"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        post = try f.require(f.bytes(Tag.post.rawValue, "post", length: 32, what: what), "post", what: what)
        let flag = try f.require(f.bytes(Tag.liked.rawValue, "liked", length: 1, what: what), "liked", what: what)
        guard flag == [0] || flag == [1] else { throw RecordError(.malformed, "post-like liked flag must be 00 or 01") }
        liked = flag == [1]
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.post.rawValue, post)
        f.set(Tag.liked.rawValue, [liked ? 1 : 0])
        return f.encoded
    }
}
