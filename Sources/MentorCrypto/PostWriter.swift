import MentorCore

/// Writing posts, comments and likes of posts (PROTOCOL.md §6.6): public records, no clock.
extension RecordWriter {
    public mutating func post(_ action: Post.Action, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let body = Post(action).body
        _ = try Post(body: body)
        return try next(.post, body: body, at: timestamp)
    }

    public mutating func comment(on post: [UInt8], _ action: PostComment.Action, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let body = PostComment(post: post, action).body
        _ = try PostComment(body: body)
        return try next(.comment, body: body, at: timestamp)
    }

    public mutating func likePost(_ post: [UInt8], liked: Bool = true, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.postLike, body: PostLike(post: post, liked: liked).body, at: timestamp)
    }
}

/// Writing quiz results (PROTOCOL.md §15.4): public, no clock; the day must be the timestamp's.
extension RecordWriter {
    public mutating func quizResult(_ result: QuizResult, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.quizResult, body: result.validated().body, at: timestamp)
    }
}
