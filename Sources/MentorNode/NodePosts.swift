import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// MARK: Posts, comments, likes of posts (docs/API.md "Posts"; PROTOCOL.md §6.6)

extension Node {
    /// Hex digits of a post's or comment's record ID a listing prints.
    static let postIDDigits = 12

    /// Whom `account` follows: their posts come first in `posts`, and `posts --following` lists
    /// only theirs (the follows register, record type 12; a failed read counts as nobody).
    func followedAccounts(of account: PublicKey) -> Set<PublicKey> {
        Set(((try? replica.following(of: account)) ?? []).map(\.account))
    }

    func postCreate(_ request: PostCreateRequest, _ caller: Requester) throws -> PostInfo {
        let me = try me(caller)
        guard (1...Post.maxPhotos).contains(request.photos.count) else {
            throw RPCError(.invalidValue, "a post has 1 to \(Post.maxPhotos) photos; \(request.photos.count) given")
        }
        let photos = try request.photos.map { try uploadedPhoto($0) }
        guard Set(photos.map(\.hash)).count == photos.count else { throw RPCError(.invalidValue, "the same photo is given twice") }
        let tags = try Self.canonicalTags(request.tags ?? [])
        let record = try write(caller.uid) { w, now throws(RecordError) in
            try w.post(.create(photos: photos, caption: request.caption ?? "", tags: tags), at: now)
        }
        logger.info("posted", ["uid": "\(caller.uid)", "post": Hex.encode(record.id).prefix(Self.postIDDigits).description])
        return try postInfo(record.id, viewer: me, withComments: false)
    }

    func postShow(_ request: PostRequest, _ caller: Requester) throws -> PostInfo {
        let me = try me(caller)
        return try postInfo(try postID(request.id), viewer: me, withComments: true)
    }

    func postEdit(_ request: PostEditRequest, _ caller: Requester) throws -> PostInfo {
        let me = try me(caller)
        let post = try ownPost(request.id, me: me, doing: "edit")
        guard request.caption != nil || request.tags != nil else {
            throw RPCError(.invalidValue, "nothing to change: give a caption, tags, or both")
        }
        let tags = try request.tags.map { try Self.canonicalTags($0) }
        try write(caller.uid) { w, now throws(RecordError) in
            try w.post(.edit(post: post.id, caption: request.caption, tags: tags), at: now)
        }
        return try postInfo(post.id, viewer: me, withComments: false)
    }

    func postDelete(_ request: PostRequest, _ caller: Requester) throws -> DeletedResult {
        let me = try me(caller)
        let post = try ownPost(request.id, me: me, doing: "delete")
        try write(caller.uid) { w, now throws(RecordError) in try w.post(.delete(post: post.id), at: now) }
        logger.info("post deleted", ["uid": "\(caller.uid)", "post": Self.shortPostID(post.id)])
        return DeletedResult(id: Self.shortPostID(post.id))
    }

    func postLike(_ request: PostRequest, _ caller: Requester, liked: Bool) throws -> PostInfo {
        let me = try me(caller)
        let id = try postID(request.id)
        guard try replica.likesPost(id, account: me) != liked else {
            throw RPCError(.notAllowed, liked ? "you like this post already" : "you do not like this post")
        }
        try write(caller.uid) { w, now throws(RecordError) in try w.likePost(id, liked: liked, at: now) }
        return try postInfo(id, viewer: me, withComments: false)
    }

    /// Takes someone's post out of the caller's own lists (`posts`, `explore`, search): a note
    /// sealed to the caller's account (PROTOCOL.md §7.6, field 4), so its other devices keep it.
    func postHide(_ request: PostRequest, _ caller: Requester) throws -> DeletedResult {
        let me = try me(caller)
        let id = try postID(request.id)
        guard let post = try replica.post(id) else { throw RPCError(.notFound, "no post \(request.id) on this node") }
        guard post.account != me else { throw RPCError(.invalidValue, "that is your own post; `mentormate post delete` removes it") }
        guard try !replica.hiddenPosts(of: me).contains(id) else { throw RPCError(.notAllowed, "you hid that post already") }
        guard replica.sealingKey(for: me) != nil, let payload = NotePayload(hidingPost: id) else {
            throw RPCError(.notAllowed, "hiding a post needs your account's encryption key, which this node has not received yet; wait for it to sync, then try again")
        }
        try write(caller.uid, as: .sealing) { w, now throws(RecordError) in try w.note(payload, at: now) }
        return DeletedResult(id: Self.shortPostID(id))
    }

    func commentCreate(_ request: CommentCreateRequest, _ caller: Requester) throws -> CommentInfo {
        _ = try me(caller)
        return try writeComment(on: try postID(request.post), request.text, caller, onMeetup: false)
    }

    /// Writes a comment on a post or a meetup (its subject, PROTOCOL.md §6.6) for the caller.
    func writeComment(on subject: [UInt8], _ text: String, _ caller: Requester, onMeetup: Bool) throws -> CommentInfo {
        guard !text.allSatisfy(\.isWhitespace) else { throw RPCError(.invalidValue, "the comment is empty") }
        let record = try write(caller.uid) { w, now throws(RecordError) in try w.comment(on: subject, .create(text: text), at: now) }
        guard let c = try replica.comment(record.id) else { throw RPCError(.internalError, "comment missing after write") }
        return try commentInfo(c, onMeetup: onMeetup)
    }

    func commentDelete(_ request: PostRequest, _ caller: Requester) throws -> DeletedResult {
        let me = try me(caller)
        let c = try comment(request.id)
        guard c.account == me else {
            throw RPCError(.notAllowed, "that comment is \(c.account.shortID)…'s; only its writer deletes it (the post's author or the meetup's host may hide it)")
        }
        try write(caller.uid) { w, now throws(RecordError) in try w.comment(on: c.post, .delete(comment: c.id), at: now) }
        return DeletedResult(id: Self.shortPostID(c.id))
    }

    /// Hides a comment on the caller's post or on a meetup the caller hosts.
    func commentHide(_ request: PostRequest, _ caller: Requester) throws -> CommentInfo {
        let me = try me(caller)
        var c = try comment(request.id)
        let owner = try replica.post(c.post)?.account ?? replica.meetup(c.post)?.host
        guard owner == me else {
            throw RPCError(.notAllowed, "only the post's author (or the meetup's host) hides its comments")
        }
        guard !c.hidden else { throw RPCError(.notAllowed, "that comment is hidden already") }
        try write(caller.uid) { w, now throws(RecordError) in try w.comment(on: c.post, .hide(comment: c.id), at: now) }
        c.hidden = true
        return try commentInfo(c)
    }

    func postsList(_ request: PostsRequest, _ caller: Requester) throws -> PostsResult {
        let me = try me(caller)
        let limit = Int(request.limit ?? 20)
        guard (1...200).contains(limit) else { throw RPCError(.invalidValue, "limit must be 1 to 200") }
        let blocked = try hiddenAccounts(of: me)
        if let search = request.search {
            guard request.tag == nil, request.author == nil, request.following != true else {
                throw RPCError(.invalidValue, "search ranks by relevance; give it alone (with limit)")
            }
            guard search.contains(where: { $0.isLetter || $0.isNumber }) else {
                throw RPCError(.invalidValue, "search needs a word of letters or digits")
            }
            let found = try replica.searchPosts(search, limit: limit + blocked.count, excluded: try replica.hiddenPosts(of: me))
            return PostsResult(posts: try found.filter { !blocked.contains($0.account) }.prefix(limit).map { try postInfo($0, viewer: me) })
        }
        let followed = followedAccounts(of: me)
        var filter = PostFilter(limit: limit)
        if let tag = request.tag {
            guard let t = PostTags.normalize(tag) else { throw RPCError(.invalidValue, "the tag is empty") }
            filter.tag = t
        }
        if let author = request.author { filter.authors = [try resolve(author)] }
        if request.following == true {
            filter.authors = filter.authors.map { $0.intersection(followed) } ?? followed
        }
        filter.first = followed.union(nearbyAccounts)
        filter.excludedAuthors = blocked
        filter.excluded = try replica.hiddenPosts(of: me)
        return PostsResult(posts: try replica.posts(filter).map { try postInfo($0, viewer: me) })
    }

    func explore(_ request: ExploreRequest, _ caller: Requester) throws -> PostsResult {
        let me = try me(caller)
        let limit = Int(request.limit ?? 10)
        guard (1...200).contains(limit) else { throw RPCError(.invalidValue, "limit must be 1 to 200") }
        var ids = try replica.recentPostIDs(limit: 500)
        var random = SeededRandom(seed: config.now() ^ UInt64(caller.uid))
        ids.shuffle(using: &random)
        let blocked = try hiddenAccounts(of: me), hidden = try replica.hiddenPosts(of: me)
        var out: [PostInfo] = []
        for id in ids where out.count < limit && !hidden.contains(id) {
            guard let p = try replica.post(id), !blocked.contains(p.account) else { continue }
            out.append(try postInfo(p, viewer: me))
        }
        return PostsResult(posts: out)
    }

    /// After a post's deletion (local or from a peer): its photos go unless a card or another
    /// post names them, and the WAL is checkpointed and truncated, so the post's words leave
    /// the replica's files, not only its tables (PROTOCOL.md §6.6).
    func afterPosts(_ records: [Record]) {
        let deletions = records.contains { r in
            guard r.type == .post, let post = try? Post(body: r.body), case .delete = post.action else { return false }
            return true
        }
        guard deletions else { return }
        collectPhotos()
        do { try replica.truncateLog() } catch {
            logger.info("truncating the replica's log after a post's deletion failed", ["error": "\(error)"])
        }
    }

    // MARK: Helpers

    static func shortPostID(_ id: [UInt8]) -> String { String(Hex.encode(id).prefix(postIDDigits)) }

    static func canonicalTags(_ tags: [String]) throws -> [String] {
        var out: [String] = []
        for t in tags {
            guard let c = PostTags.normalize(t) else { throw RPCError(.invalidValue, "a tag is empty") }
            guard c.utf8.count <= PostTags.maxTagBytes else {
                throw RPCError(.invalidValue, "tag \"\(c)\" is \(c.utf8.count) bytes; at most \(PostTags.maxTagBytes)")
            }
            guard !c.contains(","), !c.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
                throw RPCError(.invalidValue, "tag \"\(c)\" has a comma or a control character")
            }
            if !out.contains(c) { out.append(c) }
        }
        guard out.count <= PostTags.maxTags else { throw RPCError(.invalidValue, "\(out.count) tags; at most \(PostTags.maxTags)") }
        return out
    }

    /// A post's record ID from what a person typed: 4 to 64 hex digits, a unique prefix.
    func postID(_ text: String) throws -> [UInt8] {
        try resolveID(text, comments: false)
    }

    private func resolveID(_ text: String, comments: Bool) throws -> [UInt8] {
        let what = comments ? "comment" : "post"
        let hex = text.lowercased()
        guard (4...64).contains(hex.count), hex.allSatisfy(\.isHexDigit) else {
            throw RPCError(.invalidValue, "\"\(text.prefix(70))\" is not a \(what) ID: give 4 to 64 hex digits, as listings print them")
        }
        let found = try replica.postIDs(prefix: hex, comments: comments)
        switch found.count {
        case 1: return found[0]
        case 0:
            if !comments, hex.count == 64, let id = Hex.decode(hex), try replica.isDeletedPost(id) {
                throw RPCError(.notFound, "post \(hex.prefix(Self.postIDDigits)) was deleted by its author")
            }
            throw RPCError(.notFound, "no \(what) \(hex) on this node (it may not have arrived yet, or was deleted)")
        default: throw RPCError(.ambiguous, "\(hex) names more than one \(what); give more digits")
        }
    }

    private func comment(_ text: String) throws -> CommentSummary {
        let id = try resolveID(text, comments: true)
        guard let c = try replica.comment(id) else { throw RPCError(.notFound, "no comment \(text) on this node") }
        return c
    }

    private func ownPost(_ text: String, me: PublicKey, doing what: String) throws -> PostSummary {
        let id = try postID(text)
        guard let post = try replica.post(id) else { throw RPCError(.notFound, "no post \(text) on this node") }
        guard post.account == me else {
            throw RPCError(.notAllowed, "that post is \(post.account.shortID)…'s; only its author may \(what) it")
        }
        return post
    }

    private func postInfo(_ id: [UInt8], viewer: PublicKey, withComments: Bool) throws -> PostInfo {
        guard let p = try replica.post(id) else { throw RPCError(.notFound, "no post \(Self.shortPostID(id)) on this node") }
        var info = try postInfo(p, viewer: viewer)
        if withComments {
            let blocked = try hiddenAccounts(of: viewer)
            info.commentList = try replica.comments(of: id, viewer: viewer).filter { !blocked.contains($0.account) }.map { c in try commentInfo(c, onMeetup: false) }
        }
        return info
    }

    private func postInfo(_ p: PostSummary, viewer: PublicKey) throws -> PostInfo {
        PostInfo(id: Self.shortPostID(p.id), author: p.account.id, name: names[p.account], created: Int64(clamping: p.created),
                 caption: p.caption, tags: p.tags, photos: p.photos.map(apiPhoto), likes: Int64(p.likes), comments: Int64(p.comments),
                 liked: try replica.likesPost(p.id, account: viewer))
    }

    /// A comment as the API shows it; `onMeetup` says what it names when the caller knows.
    func commentInfo(_ c: CommentSummary, onMeetup: Bool? = nil) throws -> CommentInfo {
        let meetup = try onMeetup ?? (replica.post(c.post) == nil && replica.meetup(c.post) != nil)
        return CommentInfo(id: Self.shortPostID(c.id), post: meetup ? nil : Self.shortPostID(c.post),
                           meetup: meetup ? Self.shortMeetupID(c.post) : nil, author: c.account.id, name: names[c.account],
                           created: Int64(clamping: c.created), text: c.text, hidden: c.hidden)
    }
}
