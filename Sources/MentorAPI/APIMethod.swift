/// The API's methods, each name spelled once (docs/API.md lists them with their types).
public enum APIMethod: String, CaseIterable, Sendable {
    case accountSignup = "account.signup"
    case accountLogin = "account.login"
    case accountLogout = "account.logout"
    case accountWhoami = "account.whoami"
    case profileShow = "profile.show"
    case profileSet = "profile.set"
    case profilePhotoAdd = "profile.photo.add"
    case profilePhotoRemove = "profile.photo.remove"
    case profilePhotoOrder = "profile.photo.order"
    case blobPut = "blob.put"
    case blobGet = "blob.get"
    case feed
    case like
    case pass
    case undo
    case matches
    case unmatch
    case chatSend = "chat.send"
    case chatHistory = "chat.history"
    case subscribe
    case peers
    case status
    case doctor
    case replicaDigest = "replica.digest"
    case deviceList = "device.list"
    case deviceRevoke = "device.revoke"
    case deviceLink = "device.link"
    case deviceLinkStatus = "device.link.status"
    case deviceApprove = "device.approve"
    case accountExport = "account.export"
    case accountImport = "account.import"
    case settingsShow = "settings.show"
    case settingsSet = "settings.set"
    case block
    case unblock
    case blocked
    case follow
    case unfollow
    case followers
    case following
    case identify
    case postCreate = "post.create"
    case postShow = "post.show"
    case postEdit = "post.edit"
    case postDelete = "post.delete"
    case postLike = "post.like"
    case postUnlike = "post.unlike"
    case postHide = "post.hide"
    case commentCreate = "comment.create"
    case commentDelete = "comment.delete"
    case commentHide = "comment.hide"
    case posts
    case explore
    case quizQuestions = "quiz.questions"
    case quizSubmit = "quiz.submit"
    case leaderboard
    case meetupCreate = "meetup.create"
    case meetupEdit = "meetup.edit"
    case meetupCancel = "meetup.cancel"
    case meetupShow = "meetup.show"
    case meetupJoin = "meetup.join"
    case meetupLeave = "meetup.leave"
    case meetupComment = "meetup.comment"
    case meetups
    case games
    case gameShow = "game.show"
    case people
    case membershipSet = "membership.set"

    /// The method named `name`, or -32601 (the daemon's answer to a name it does not know).
    public static func named(_ name: String) throws(RPCError) -> APIMethod {
        guard let method = APIMethod(rawValue: name) else {
            throw RPCError(.methodNotFound, "unknown method \"\(name)\"; see docs/API.md for the list")
        }
        return method
    }
}

/// A method's parameters: a Codable struct whose coding keys are the parameter names, so the
/// names it takes (and refuses all others) come from the same place as its coding.
public protocol APIRequest: Codable, Sendable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

extension APIRequest {
    public static var parameterNames: [String] { CodingKeys.allCases.map(\.stringValue) }
}

/// One method with its request and result types: what the daemon's dispatcher and the client's
/// commands share. `API` holds one for each `APIMethod`.
public struct APICall<Request: APIRequest, Result: APIObject>: Sendable {
    public let method: APIMethod

    public init(_ method: APIMethod) {
        self.method = method
    }

    /// Decodes a request's params; a wrong one is -32602 with the message `Params` always gave:
    /// an unknown name (before anything else), a missing one, or one of the wrong type.
    public func request(from params: [String: JSON]) throws(RPCError) -> Request {
        try Params.allow(params, Set(Request.parameterNames), method: method.rawValue)
        do {
            return try JSONValueDecoder().decode(Request.self, from: .object(params))
        } catch let e as RPCError {
            throw e
        } catch let e as DecodingError {
            throw invalidParams(e)
        } catch {
            throw RPCError(.invalidParams, "\(method.rawValue): \(error)")
        }
    }

    /// The params object for `request` (parameters that are nil are left out).
    public func params(_ request: Request) throws -> [String: JSON] {
        try JSONValueEncoder(nilEncoding: .omit).encode(request).objectValue ?? [:]
    }

    /// The result's JSON (fields that are nil are null).
    public func json(_ result: Result) throws -> JSON {
        try JSONValueEncoder().encode(result)
    }

    /// Reads a result the daemon sent.
    public func result(from json: JSON) throws -> Result {
        try JSONValueDecoder().decode(Result.self, from: json)
    }

    private func invalidParams(_ error: DecodingError) -> RPCError {
        let m = method.rawValue
        switch error {
        case .keyNotFound(let key, _):
            return Params.missing(key.stringValue, method: m)
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let name = context.codingPath.first?.stringValue ?? "?"
            let expected: String
            if context.codingPath.count > 1 || type is [JSON].Type { expected = "a list of strings" }
            else if type is String.Type { expected = "a string" }
            else if type is Bool.Type { expected = "true or false" }
            else if type is any FixedWidthInteger.Type { expected = "an integer" }
            else if type is Double.Type { expected = "a number" }
            else { expected = "\(type)" }
            return Params.wrong(name, expected, method: m)
        case .dataCorrupted(let context):
            return RPCError(.invalidParams, "\(m): \(context.debugDescription)")
        @unknown default:
            return RPCError(.invalidParams, "\(m): \(error)")
        }
    }
}

/// Every method's call, named as its `APIMethod` case.
public enum API {
    public static let accountSignup = APICall<SignupRequest, AccountInfo>(.accountSignup)
    public static let accountLogin = APICall<LoginRequest, AccountInfo>(.accountLogin)
    public static let accountLogout = APICall<LogoutRequest, AccountInfo>(.accountLogout)
    public static let accountWhoami = APICall<NoParams, AccountInfo>(.accountWhoami)
    public static let profileShow = APICall<ProfileShowRequest, Card>(.profileShow)
    public static let profileSet = APICall<ProfileSetRequest, Card>(.profileSet)
    public static let profilePhotoAdd = APICall<PhotoAddRequest, Card>(.profilePhotoAdd)
    public static let profilePhotoRemove = APICall<PhotoRemoveRequest, Card>(.profilePhotoRemove)
    public static let profilePhotoOrder = APICall<PhotoOrderRequest, Card>(.profilePhotoOrder)
    public static let blobPut = APICall<BlobPutRequest, BlobPutResult>(.blobPut)
    public static let blobGet = APICall<BlobGetRequest, BlobGetResult>(.blobGet)
    public static let feed = APICall<FeedRequest, FeedResult>(.feed)
    public static let like = APICall<AccountRequest, LikeResult>(.like)
    public static let pass = APICall<AccountRequest, AccountResult>(.pass)
    public static let undo = APICall<AccountRequest, UndoResult>(.undo)
    public static let matches = APICall<NoParams, MatchesResult>(.matches)
    public static let unmatch = APICall<AccountRequest, AccountResult>(.unmatch)
    public static let block = APICall<AccountRequest, AccountResult>(.block)
    public static let unblock = APICall<AccountRequest, AccountResult>(.unblock)
    public static let blocked = APICall<NoParams, BlockedResult>(.blocked)
    public static let follow = APICall<AccountRequest, FollowResult>(.follow)
    public static let unfollow = APICall<AccountRequest, FollowResult>(.unfollow)
    public static let followers = APICall<FollowListRequest, FollowListResult>(.followers)
    public static let following = APICall<FollowListRequest, FollowListResult>(.following)
    public static let identify = APICall<IdentifyRequest, IdentifyResult>(.identify)
    public static let quizQuestions = APICall<NoParams, QuizQuestions>(.quizQuestions)
    public static let quizSubmit = APICall<QuizSubmitRequest, QuizOutcome>(.quizSubmit)
    public static let leaderboard = APICall<LeaderboardRequest, Leaderboard>(.leaderboard)
    public static let meetupCreate = APICall<MeetupCreateRequest, MeetupInfo>(.meetupCreate)
    public static let meetupEdit = APICall<MeetupEditRequest, MeetupInfo>(.meetupEdit)
    public static let meetupCancel = APICall<MeetupRequest, MeetupInfo>(.meetupCancel)
    public static let meetupShow = APICall<MeetupRequest, MeetupInfo>(.meetupShow)
    public static let meetupJoin = APICall<MeetupRequest, MeetupInfo>(.meetupJoin)
    public static let meetupLeave = APICall<MeetupRequest, MeetupInfo>(.meetupLeave)
    public static let meetupComment = APICall<MeetupCommentRequest, CommentInfo>(.meetupComment)
    public static let membershipSet = APICall<MembershipSetRequest, Card>(.membershipSet)
    public static let meetups = APICall<MeetupsRequest, MeetupsResult>(.meetups)
    public static let chatSend = APICall<ChatSendRequest, Message>(.chatSend)
    public static let chatHistory = APICall<ChatHistoryRequest, ChatHistory>(.chatHistory)
    public static let subscribe = APICall<SubscribeRequest, SubscribeResult>(.subscribe)
    public static let peers = APICall<NoParams, PeersResult>(.peers)
    public static let status = APICall<NoParams, Status>(.status)
    public static let doctor = APICall<NoParams, DoctorResult>(.doctor)
    public static let replicaDigest = APICall<NoParams, ReplicaDigest>(.replicaDigest)
    public static let deviceList = APICall<NoParams, DevicesResult>(.deviceList)
    public static let deviceRevoke = APICall<DeviceRequest, DeviceInfo>(.deviceRevoke)
    public static let deviceLink = APICall<LinkRequest, LinkStart>(.deviceLink)
    public static let deviceLinkStatus = APICall<NoParams, LinkStatus>(.deviceLinkStatus)
    public static let deviceApprove = APICall<ApproveRequest, ApproveResult>(.deviceApprove)
    public static let accountExport = APICall<NoParams, AccountKeyExport>(.accountExport)
    public static let accountImport = APICall<ImportRequest, AccountInfo>(.accountImport)
    public static let settingsShow = APICall<NoParams, SettingsResult>(.settingsShow)
    public static let settingsSet = APICall<SettingsSetRequest, SettingInfo>(.settingsSet)
    public static let postCreate = APICall<PostCreateRequest, PostInfo>(.postCreate)
    public static let postShow = APICall<PostRequest, PostInfo>(.postShow)
    public static let postEdit = APICall<PostEditRequest, PostInfo>(.postEdit)
    public static let postDelete = APICall<PostRequest, DeletedResult>(.postDelete)
    public static let postLike = APICall<PostRequest, PostInfo>(.postLike)
    public static let postUnlike = APICall<PostRequest, PostInfo>(.postUnlike)
    public static let postHide = APICall<PostRequest, DeletedResult>(.postHide)
    public static let commentCreate = APICall<CommentCreateRequest, CommentInfo>(.commentCreate)
    public static let commentDelete = APICall<PostRequest, DeletedResult>(.commentDelete)
    public static let commentHide = APICall<PostRequest, CommentInfo>(.commentHide)
    public static let posts = APICall<PostsRequest, PostsResult>(.posts)
    public static let explore = APICall<ExploreRequest, PostsResult>(.explore)
    public static let games = APICall<GamesRequest, GamesResult>(.games)
    public static let gameShow = APICall<GameShowRequest, GameInfo>(.gameShow)
    public static let people = APICall<PeopleRequest, PeopleResult>(.people)
}
