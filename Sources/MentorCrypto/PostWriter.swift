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

/// Writing meetups, joins and rosters (PROTOCOL.md §6.7): public, no clock.
extension RecordWriter {
    public mutating func meetup(_ action: Meetup.Action, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let body = Meetup(action).body
        _ = try Meetup(body: body)
        return try next(.meetup, body: body, at: timestamp)
    }

    public mutating func meetupJoin(_ meetup: [UInt8], joining: Bool = true, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.meetupJoin, body: MeetupJoin(meetup: meetup, joining: joining).body, at: timestamp)
    }

    public mutating func meetupRoster(_ meetup: [UInt8], joins: [[UInt8]], at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let body = MeetupRoster(meetup: meetup, joins: joins).body
        _ = try MeetupRoster(body: body)
        return try next(.meetupRoster, body: body, at: timestamp)
    }
}
