import Testing
@testable import MentorCore

/// The bodies of posts, comments and likes of posts (record types 9–11, PROTOCOL.md §6.6,
/// `Posts.swift`): each round trip, every bound at its edge, and malformed bodies refused with
/// the right code (`malformed`: not the encoding; `invalid-body`: well formed, not allowed).
@Suite struct PostCodecTests {
    static let postID = [UInt8](repeating: 0xAB, count: 32)
    static let commentID = [UInt8](repeating: 0xCD, count: 32)
    static func photo(_ n: UInt8) -> PhotoRef { PhotoRef(hash: [UInt8](repeating: n, count: 32), size: 1000, format: .jpeg) }

    /// The code a body is refused with, or nil when it decodes.
    static func code<T>(_ decode: ([UInt8]) throws(RecordError) -> T, _ body: [UInt8]) -> RecordError.Code? {
        do { _ = try decode(body); return nil } catch { return error.code }
    }
    static func post(_ b: [UInt8]) -> RecordError.Code? { code({ (b: [UInt8]) throws(RecordError) in try Post(body: b) }, b) }
    static func comment(_ b: [UInt8]) -> RecordError.Code? { code({ (b: [UInt8]) throws(RecordError) in try PostComment(body: b) }, b) }
    static func like(_ b: [UInt8]) -> RecordError.Code? { code({ (b: [UInt8]) throws(RecordError) in try PostLike(body: b) }, b) }

    /// A field list from (tag, value) pairs exactly as given (order and repeats kept).
    static func raw(_ fields: [(UInt8, [UInt8])]) -> [UInt8] {
        fields.flatMap { tag, value in [tag, UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value }
    }

    /// A create body with these fields.
    static func create(photos: Int = 1, caption: String = "c", tags: [String] = []) -> [UInt8] {
        var f = FieldList()
        f.set(Post.Tag.photos.rawValue, PhotoRef.encodeList((0..<photos).map { photo(UInt8($0 + 1)) }))
        f.set(Post.Tag.caption.rawValue, text: caption)
        if !tags.isEmpty { f.set(Post.Tag.tags.rawValue, tags.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }) }
        return f.encoded
    }

    @Test func everyActionRoundTripsAndItsBodyIsCanonical() throws {
        let posts: [Post.Action] = [
            .create(photos: [Self.photo(1)], caption: "Pyrite cube", tags: ["pyrite", "metallic", "hardness-6"]),
            .create(photos: (1...4).map { Self.photo($0) }, caption: "", tags: []),
            .edit(post: Self.postID, caption: "new caption", tags: nil),
            .edit(post: Self.postID, caption: nil, tags: ["only-tags"]),
            .edit(post: Self.postID, caption: "", tags: []),
            .delete(post: Self.postID),
        ]
        for action in posts {
            let body = Post(action).body
            let back = try Post(body: body)
            #expect(back.action == action)
            #expect(back.body == body)
        }
        #expect(Post(.create(photos: [Self.photo(1)], caption: "x", tags: [])).target == nil)
        #expect(Post(.delete(post: Self.postID)).target == Self.postID)
        for action in [PostComment.Action.create(text: "Nice bands"), .delete(comment: Self.commentID), .hide(comment: Self.commentID)] {
            let body = PostComment(post: Self.postID, action).body
            let back = try PostComment(body: body)
            #expect(back.post == Self.postID && back.action == action && back.body == body)
        }
        for liked in [true, false] {
            let body = PostLike(post: Self.postID, liked: liked).body
            let back = try PostLike(body: body)
            #expect(back == PostLike(post: Self.postID, liked: liked) && back.body == body)
        }
    }

    @Test func captionAndCommentTextAtTheirBounds() {
        let max = PostText.maxScalars
        #expect(Self.post(Self.create(caption: String(repeating: "a", count: max))) == nil)
        #expect(Self.post(Self.create(caption: String(repeating: "a", count: max + 1))) == .invalidBody)
        // Scalars are counted, not bytes: 2,000 four-byte scalars (8,000 bytes) are fine.
        #expect(Self.post(Self.create(caption: String(repeating: "💎", count: max))) == nil)
        #expect(Self.post(Self.create(caption: String(repeating: "💎", count: max + 1))) == .invalidBody)
        #expect(Self.post(Self.create(caption: "bad\u{07}bell")) == .invalidBody)
        #expect(Self.post(Self.raw([(1, PhotoRef.encodeList([Self.photo(1)])), (2, [0xFF, 0xFE])])) == .malformed)

        func comment(_ text: String) -> [UInt8] { PostComment(post: Self.postID, .create(text: text)).body }
        #expect(Self.comment(comment(String(repeating: "é", count: max))) == nil)
        #expect(Self.comment(comment(String(repeating: "é", count: max + 1))) == .invalidBody)
        #expect(Self.comment(comment("")) == .invalidBody, "a comment says something")
        #expect(Self.comment(comment("tab\u{01}")) == .invalidBody)
    }

    @Test func photosAndTagsAtTheirBounds() {
        #expect(Self.post(Self.create(photos: 1)) == nil)
        #expect(Self.post(Self.create(photos: Post.maxPhotos)) == nil)
        #expect(Self.post(Self.create(photos: 0)) == .invalidBody)
        #expect(Self.post(Self.create(photos: Post.maxPhotos + 1)) == .invalidBody)
        #expect(Self.post(Self.raw([(1, Array(PhotoRef.encodeList([Self.photo(1)]).dropLast()))])) == .malformed, "not a multiple of 37 bytes")

        let ten = (0..<PostTags.maxTags).map { "t\($0)" }
        #expect(Self.post(Self.create(tags: ten)) == nil)
        #expect(Self.post(Self.create(tags: ten + ["t10"])) == .invalidBody)
        #expect(Self.post(Self.create(tags: [String(repeating: "a", count: PostTags.maxTagBytes)])) == nil)
        #expect(Self.post(Self.create(tags: [String(repeating: "a", count: PostTags.maxTagBytes + 1)])) == .invalidBody)
        for bad in ["Quartz", "#quartz", "a b", "a,b", "tab\u{09}"] {
            #expect(Self.post(Self.create(tags: [bad])) == .invalidBody, "\(bad) is not canonical")
        }
        #expect(Self.post(Self.create(tags: ["twice", "twice"])) == .invalidBody)
        #expect(Self.post(Self.raw([(1, PhotoRef.encodeList([Self.photo(1)])), (3, [0])])) == .invalidBody, "an empty tag")
        #expect(Self.post(Self.raw([(1, PhotoRef.encodeList([Self.photo(1)])), (3, [2, 0xC3, 0x28])])) == .malformed, "not UTF-8")
        #expect(Self.post(Self.raw([(1, PhotoRef.encodeList([Self.photo(1)])), (3, [5, 0x61])])) == .malformed, "a tag past the field's end")
        // What people type is made canonical before it is written.
        #expect(PostTags.normalize("  #Streak   Black ") == "streak-black")
        #expect(PostTags.normalize(" # ") == nil)
    }

    @Test func malformedPostsAreRefusedWithTheRightCode() {
        let photos = PhotoRef.encodeList([Self.photo(1)])
        #expect(Self.post([]) == .malformed, "neither photos nor a post")
        #expect(Self.post(Self.raw([(2, Array("only a caption".utf8))])) == .malformed)
        #expect(Self.post(Self.raw([(1, photos), (4, Self.postID)])) == .invalidBody, "photos are set when created only")
        #expect(Self.post(Self.raw([(1, photos), (5, [1])])) == .invalidBody, "a new post cannot be deleted")
        #expect(Self.post(Self.raw([(4, Self.postID)])) == .invalidBody, "an edit that changes nothing")
        #expect(Self.post(Self.raw([(2, Array("x".utf8)), (4, Self.postID), (5, [1])])) == .invalidBody, "a deletion carries nothing else")
        #expect(Self.post(Self.raw([(4, Self.postID), (5, [2])])) == .malformed)
        #expect(Self.post(Self.raw([(4, Self.postID), (5, [1, 1])])) == .malformed)
        #expect(Self.post(Self.raw([(4, Array(Self.postID.dropLast())), (5, [1])])) == .malformed, "a post ID is 32 bytes")
        #expect(Self.post(Self.raw([(1, photos), (6, [0])])) == .malformed, "an unknown field")
        #expect(Self.post(Self.raw([(2, Array("x".utf8)), (1, photos)])) == .malformed, "fields out of order")
        #expect(Self.post(Self.raw([(1, photos), (1, photos)])) == .malformed, "a field twice")
        #expect(Self.post(Array(Self.raw([(1, photos)]).dropLast())) == .malformed, "cut short")
    }

    @Test func malformedCommentsAndLikesAreRefusedWithTheRightCode() {
        let text = Array("hi".utf8)
        #expect(Self.comment(Self.raw([(2, text)])) == .malformed, "no post")
        #expect(Self.comment(Self.raw([(1, Array(Self.postID.prefix(31))), (2, text)])) == .malformed)
        #expect(Self.comment(Self.raw([(1, Self.postID)])) == .invalidBody, "neither text nor a comment")
        #expect(Self.comment(Self.raw([(1, Self.postID), (3, Self.commentID)])) == .invalidBody, "a comment ID with no flag")
        #expect(Self.comment(Self.raw([(1, Self.postID), (3, Self.commentID), (4, [1]), (5, [1])])) == .invalidBody, "both flags")
        #expect(Self.comment(Self.raw([(1, Self.postID), (2, text), (3, Self.commentID), (4, [1])])) == .invalidBody, "text and a deletion")
        #expect(Self.comment(Self.raw([(1, Self.postID), (3, Self.commentID), (4, [2])])) == .malformed)
        #expect(Self.comment(Self.raw([(1, Self.postID), (3, Self.commentID), (5, [0])])) == .malformed)
        #expect(Self.comment(Self.raw([(1, Self.postID), (2, text), (6, [1])])) == .malformed, "an unknown field")

        #expect(Self.like(Self.raw([(1, Self.postID)])) == .malformed, "no liked flag")
        #expect(Self.like(Self.raw([(2, [1])])) == .malformed, "no post")
        #expect(Self.like(Self.raw([(1, Self.postID), (2, [2])])) == .malformed)
        #expect(Self.like(Self.raw([(1, Self.postID), (2, [])])) == .malformed)
        #expect(Self.like(Self.raw([(1, Self.postID + [0]), (2, [1])])) == .malformed)
        #expect(Self.like(Self.raw([(2, [1]), (1, Self.postID)])) == .malformed, "fields out of order")
        #expect(Self.like(Self.raw([(1, Self.postID), (2, [1]), (3, [0])])) == .malformed, "an unknown field")
    }
}
