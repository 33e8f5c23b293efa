/// Posts, comments and likes of posts (docs/API.md "Posts"; PROTOCOL.md §6.6). A post's and a
/// comment's `id` is the first 12 hex digits of its record ID; any unique prefix of 4 or more
/// digits is accepted back.

/// `post.create`: photos uploaded first with `blob.put` (their hashes, 1–4), a caption
/// (≤ 2,000 characters) and tags (≤ 10, made lower case).
public struct PostCreateRequest: APIRequest, Equatable {
    public var photos: [String]
    public var caption: String?
    public var tags: [String]?
    public enum CodingKeys: String, CodingKey, CaseIterable { case photos, caption, tags }
    public init(photos: [String], caption: String? = nil, tags: [String]? = nil) {
        (self.photos, self.caption, self.tags) = (photos, caption, tags)
    }
}

/// `post.show|delete|like|unlike`, `comment.delete|hide`: one post or comment by its ID.
public struct PostRequest: APIRequest, Equatable {
    public var id: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case id }
    public init(id: String) { self.id = id }
}

/// `post.edit`: the caption and/or the tags (the tags replace the list).
public struct PostEditRequest: APIRequest, Equatable {
    public var id: String
    public var caption: String?
    public var tags: [String]?
    public enum CodingKeys: String, CodingKey, CaseIterable { case id, caption, tags }
    public init(id: String, caption: String? = nil, tags: [String]? = nil) { (self.id, self.caption, self.tags) = (id, caption, tags) }
}

/// `comment.create`: a comment on post `post`.
public struct CommentCreateRequest: APIRequest, Equatable {
    public var post: String
    public var text: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case post, text }
    public init(post: String, text: String) { (self.post, self.text) = (post, text) }
}

/// `posts`: newest first (people followed and nearby first), or best first with `search`.
public struct PostsRequest: APIRequest, Equatable {
    public var tag: String?
    /// An account ID: only its posts.
    public var author: String?
    /// true: only posts of people the caller follows.
    public var following: Bool?
    /// Words to find in captions and tags (every word, prefixes match), ranked by bm25.
    public var search: String?
    /// 1…200, default 20.
    public var limit: Int64?
    public enum CodingKeys: String, CodingKey, CaseIterable { case tag, author, following, search, limit }
    public init(tag: String? = nil, author: String? = nil, following: Bool? = nil, search: String? = nil, limit: Int64? = nil) {
        (self.tag, self.author, self.following, self.search, self.limit) = (tag, author, following, search, limit)
    }
}

/// `explore`: a random sample of recent posts.
public struct ExploreRequest: APIRequest, Equatable {
    /// 1…200, default 10.
    public var limit: Int64?
    public enum CodingKeys: String, CodingKey, CaseIterable { case limit }
    public init(limit: Int64? = nil) { self.limit = limit }
}

public struct CommentInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id, post, meetup, author, name, created, text, hidden }
    public var id: String
    /// What it comments on: a post or a meetup (exactly one of the two).
    public var post: String?
    public var meetup: String?
    public var author: String
    public var name: String?
    public var created: Int64
    public var text: String
    /// Hidden by the post's author (the meetup's host): only its writer sees it.
    public var hidden: Bool
    public init(id: String, post: String?, meetup: String? = nil, author: String, name: String?, created: Int64, text: String, hidden: Bool) {
        (self.id, self.post, self.meetup, self.author, self.name, self.created, self.text, self.hidden) =
            (id, post, meetup, author, name, created, text, hidden)
    }
}

public struct PostInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey {
        case id, author, name, created, caption, tags, photos, likes, comments, liked, commentList = "comment_list"
    }
    public var id: String
    public var author: String
    public var name: String?
    public var created: Int64
    public var caption: String
    public var tags: [String]
    public var photos: [PhotoInfo]
    public var likes: Int64
    public var comments: Int64
    /// Whether the caller's like stands.
    public var liked: Bool
    /// The comments, oldest first (only `post.show`).
    public var commentList: [CommentInfo]?
    public init(id: String, author: String, name: String?, created: Int64, caption: String, tags: [String], photos: [PhotoInfo],
                likes: Int64, comments: Int64, liked: Bool, commentList: [CommentInfo]? = nil) {
        (self.id, self.author, self.name, self.created, self.caption, self.tags) = (id, author, name, created, caption, tags)
        (self.photos, self.likes, self.comments, self.liked, self.commentList) = (photos, likes, comments, liked, commentList)
    }
}

/// `post.delete`, `comment.delete`, `post.hide`: the ID of what was deleted (hidden).
public struct DeletedResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case id }
    public var id: String
    public init(id: String) { self.id = id }
}

public struct PostsResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case posts }
    public var posts: [PostInfo]
    public init(posts: [PostInfo]) { self.posts = posts }
}
