import Testing
import MentorAPI

/// Every method's request and result type through `JSONValueEncoder`/`JSONValueDecoder` and the
/// bytes of `JSONCodec`, and the wire shapes docs/API.md promises.
@Suite struct APIContractTests {
    static let id = "mm1" + String(repeating: "q", count: 58)
    static let message = Message(id: "9c2d", from: id, text: "See you at noon \"there\"\n", sentAt: 1_764_400_000_000, mine: true)
    static let card: Card = {
        let main = PhotoInfo(hash: "5f1e", size: 48213, type: "image/jpeg")
        var card = Card(id: id, name: "Ben", role: "tutor", bio: nil, courses: ["CS 490"], wage: 25, budget: nil,
                        availability: "Mon", photo: main,
                        conflicts: ["bio": ["older"], "wage": [.int(3)]], forked: false, updatedAt: 1_764_400_000_000)
        card.photos = [main, PhotoInfo(hash: "77aa", size: 1200, type: "image/png")]
        card.hosted = []
        card.attended = [MeetupInfo(id: "0123456789ab", host: id, hostName: "Ana", title: "Catan", kind: "game", topic: "Catan",
                                    start: 5, ends: 6, place: "Hall", seats: 4, taken: 1, left: 3, minAge: nil, maxAge: nil, about: "",
                                    status: "ended", you: nil, attendees: nil)]
        return card
    }()

    /// Encodes the request as params and decodes them as the daemon does, and the result to
    /// bytes and back as the client does; both must come back equal.
    func roundTrip<Request: Equatable, Result: Equatable>(_ call: APICall<Request, Result>, _ request: Request, _ result: Result) throws {
        let params = try call.params(request)
        let bytes = JSON.object(params).encoded
        let parsedParams = try #require(JSON.parse(bytes)?.objectValue)
        #expect(try call.request(from: parsedParams) == request, "\(call.method.rawValue) request")
        let json = try call.json(result)
        let parsed = try #require(JSON.parse(json.encoded))
        #expect(try call.result(from: parsed) == result, "\(call.method.rawValue) result")
    }

    @Test func everyMethodsRequestAndResultRoundTrip() throws {
        let account = AccountInfo(id: Self.id, name: "Ana", email: "ana@uni.edu", role: nil, protected: true, unlocked: false)
        for method in APIMethod.allCases {
            // Exhaustive: a new method does not compile until it has a case here.
            switch method {
            case .accountSignup:
                try roundTrip(API.accountSignup, SignupRequest(email: "a@uni.edu", name: "Ana", role: "student", passphrase: "pw"), account)
                try roundTrip(API.accountSignup, SignupRequest(email: "a@uni.edu", name: "Ana", role: "student"), account)
            case .accountLogin:
                try roundTrip(API.accountLogin, LoginRequest(passphrase: "pw"), account)
                try roundTrip(API.accountLogin, LoginRequest(), account)
            case .accountLogout:
                try roundTrip(API.accountLogout, LogoutRequest(), account)
                try roundTrip(API.accountLogout, LogoutRequest(forget: true),
                              AccountInfo(id: Self.id, name: nil, email: "e@uni.edu", role: "tutor", protected: false, unlocked: false,
                                          device: "0011223344556677", deviceLabel: "lab-3", deviceState: "revoked", accountKey: false))
            case .accountWhoami: try roundTrip(API.accountWhoami, NoParams(), account)
            case .profileShow:
                try roundTrip(API.profileShow, ProfileShowRequest(id: "mm1qqqqqq"), Self.card)
                try roundTrip(API.profileShow, ProfileShowRequest(), Card(id: Self.id, updatedAt: 1))
            case .profileSet:
                try roundTrip(API.profileSet, ProfileSetRequest(name: "A", bio: "b", courses: ["X 1"], wage: 0, budget: 9,
                                                                availability: "now", photo: .set(hash: "ab")), Self.card)
                try roundTrip(API.profileSet, ProfileSetRequest(photo: .remove), Self.card)
                try roundTrip(API.profileSet, ProfileSetRequest(bio: ""), Self.card)
                var contact = ProfileSetRequest()
                contact.contact = "+1 555 0100"
                var withContact = Self.card
                withContact.contact = "+1 555 0100"
                try roundTrip(API.profileSet, contact, withContact)
            case .profilePhotoAdd: try roundTrip(API.profilePhotoAdd, PhotoAddRequest(hash: "5f1e"), Self.card)
            case .profilePhotoRemove: try roundTrip(API.profilePhotoRemove, PhotoRemoveRequest(index: 2), Self.card)
            case .profilePhotoOrder: try roundTrip(API.profilePhotoOrder, PhotoOrderRequest(order: [3, 1, 2]), Self.card)
            case .blobPut:
                try roundTrip(API.blobPut, BlobPutRequest(chunk: "AAEC", done: false), .more(upload: "tok"))
                try roundTrip(API.blobPut, BlobPutRequest(chunk: "AAEC", upload: "tok", done: true),
                              .stored(PhotoInfo(hash: "ab", size: 3, type: "image/png")))
            case .blobGet:
                try roundTrip(API.blobGet, BlobGetRequest(hash: "ab", offset: 0, length: 10), BlobGetResult(data: "AAEC", size: 3, type: "image/png"))
            case .feed:
                try roundTrip(API.feed, FeedRequest(course: "CS 490", limit: 5),
                              FeedResult(cards: [FeedCard(card: Self.card, sharedCourses: ["CS 490"], nearby: true)]))
                try roundTrip(API.feed, FeedRequest(), FeedResult(cards: []))
            case .like: try roundTrip(API.like, AccountRequest(id: Self.id), LikeResult(id: Self.id, matched: true))
            case .pass: try roundTrip(API.pass, AccountRequest(id: Self.id), AccountResult(id: Self.id))
            case .undo:
                try roundTrip(API.undo, AccountRequest(id: Self.id), UndoResult(id: Self.id, undone: .like))
                try roundTrip(API.undo, AccountRequest(id: Self.id), UndoResult(id: Self.id, undone: .pass))
            case .matches:
                try roundTrip(API.matches, NoParams(), MatchesResult(matches: [
                    MatchSummary(id: Self.id, name: "Ben", messages: 2, lastMessage: Self.message),
                    MatchSummary(id: Self.id, name: nil, messages: 0, lastMessage: nil)]))
            case .unmatch: try roundTrip(API.unmatch, AccountRequest(id: Self.id), AccountResult(id: Self.id))
            case .block: try roundTrip(API.block, AccountRequest(id: Self.id), AccountResult(id: Self.id))
            case .unblock: try roundTrip(API.unblock, AccountRequest(id: Self.id), AccountResult(id: Self.id))
            case .follow: try roundTrip(API.follow, AccountRequest(id: Self.id), FollowResult(id: Self.id, following: true))
            case .unfollow: try roundTrip(API.unfollow, AccountRequest(id: Self.id), FollowResult(id: Self.id, following: false))
            case .followers:
                try roundTrip(API.followers, FollowListRequest(), FollowListResult(id: Self.id, accounts: [
                    FollowListResult.Entry(id: Self.id, name: "Ben", since: 5)]))
                try roundTrip(API.followers, FollowListRequest(id: Self.id), FollowListResult(id: Self.id, accounts: []))
            case .following:
                try roundTrip(API.following, FollowListRequest(id: Self.id), FollowListResult(id: Self.id, accounts: [
                    FollowListResult.Entry(id: Self.id, name: nil, since: 6)]))
            case .blocked:
                try roundTrip(API.blocked, NoParams(), BlockedResult(blocked: [
                    BlockedResult.Entry(id: Self.id, name: "Ben", since: 5), BlockedResult.Entry(id: Self.id, name: nil, since: 6)]))
                try roundTrip(API.blocked, NoParams(), BlockedResult(blocked: []))
            case .identify:
                try roundTrip(API.identify, IdentifyRequest(color: "dark", luster: "metallic", cleavage: "none", hardness: 5.5, streak: "black", limit: 3),
                              IdentifyResult(matches: [IdentifyResult.Match(
                                name: "hematite", kind: "mineral", score: 87, reasons: ["hardness 6 is within 5.5–6.5"], colors: ["black"],
                                luster: ["metallic"], streak: "red-brown", hardness: "5.5–6.5", cleavage: "none", specificGravity: "5.26",
                                crystalSystem: "trigonal", note: "Red-brown streak.")]))
                try roundTrip(API.identify, IdentifyRequest(hardness: 6), IdentifyResult(matches: []))
            case .postCreate, .postShow, .postEdit, .postLike, .postUnlike:
                let photo = PhotoInfo(hash: "5f1e", size: 10, type: "image/png")
                let comment = CommentInfo(id: "0123456789ab", post: "ba9876543210", author: Self.id, name: nil, created: 5, text: "Nice", hidden: true)
                let info = PostInfo(id: "ba9876543210", author: Self.id, name: "Ana", created: 1, caption: "Quartz", tags: ["quartz"],
                                    photos: [photo], likes: 2, comments: 1, liked: true, commentList: [comment])
                switch method {
                case .postCreate: try roundTrip(API.postCreate, PostCreateRequest(photos: ["5f1e"], caption: "Quartz", tags: ["quartz"]), info)
                case .postShow: try roundTrip(API.postShow, PostRequest(id: "ba98"), info)
                case .postEdit: try roundTrip(API.postEdit, PostEditRequest(id: "ba98", tags: []), info)
                case .postLike: try roundTrip(API.postLike, PostRequest(id: "ba98"), info)
                default: try roundTrip(API.postUnlike, PostRequest(id: "ba98"), info)
                }
            case .postDelete: try roundTrip(API.postDelete, PostRequest(id: "ba98"), DeletedResult(id: "ba9876543210"))
            case .postHide: try roundTrip(API.postHide, PostRequest(id: "ba98"), DeletedResult(id: "ba9876543210"))
            case .commentDelete: try roundTrip(API.commentDelete, PostRequest(id: "0123"), DeletedResult(id: "0123456789ab"))
            case .commentCreate, .commentHide:
                let comment = CommentInfo(id: "0123456789ab", post: "ba9876543210", author: Self.id, name: "Ben", created: 5, text: "Nice", hidden: false)
                if method == .commentCreate { try roundTrip(API.commentCreate, CommentCreateRequest(post: "ba98", text: "Nice"), comment) }
                else { try roundTrip(API.commentHide, PostRequest(id: "0123"), comment) }
            case .posts:
                try roundTrip(API.posts, PostsRequest(tag: "quartz", author: Self.id, following: true, limit: 5), PostsResult(posts: []))
                try roundTrip(API.posts, PostsRequest(search: "banded quartz"), PostsResult(posts: []))
            case .explore: try roundTrip(API.explore, ExploreRequest(limit: 3), PostsResult(posts: []))
            case .quizQuestions, .quizSubmit:
                let outcome = QuizOutcome(day: "2026-12-04", score: 7, of: 10, answers: [
                    QuizOutcome.Answer(number: 1, chosen: "b", right: "b", name: "quartz", correct: true),
                    QuizOutcome.Answer(number: 2, chosen: "-", right: "d", name: "talc", correct: false)], rank: 2, players: 5, at: 9)
                if method == .quizSubmit {
                    try roundTrip(API.quizSubmit, QuizSubmitRequest(day: "2026-12-04", answers: ["a", "-", "d"]), outcome)
                } else {
                    let q = QuizQuestionInfo(number: 1, colors: ["white"], luster: ["vitreous"], streak: "white", hardness: "7",
                                             cleavage: "none", choices: ["quartz", "talc", "gypsum", "calcite"])
                    try roundTrip(API.quizQuestions, NoParams(), QuizQuestions(day: "2026-12-04", questions: [q], played: outcome))
                    try roundTrip(API.quizQuestions, NoParams(), QuizQuestions(day: "2026-12-04", questions: [q], played: nil))
                }
            case .meetupComment:
                let comment = CommentInfo(id: "0123456789ab", post: nil, meetup: "ba9876543210", author: Self.id, name: "Ben", created: 5,
                                          text: "I'll bring snacks", hidden: false)
                try roundTrip(API.meetupComment, MeetupCommentRequest(id: "ba98", text: "I'll bring snacks"), comment)
            case .meetupCreate, .meetupEdit, .meetupCancel, .meetupShow, .meetupJoin, .meetupLeave, .meetups:
                let info = MeetupInfo(id: "0123456789ab", host: Self.id, hostName: "Ana", title: "Catan", kind: "game", topic: "Catan",
                                      start: 5, ends: 6, place: "Hall", seats: 4, taken: 1, left: 3, minAge: 18, maxAge: 120, about: "",
                                      status: "open", you: "seat 1",
                                      attendees: [MeetupAttendeeInfo(id: Self.id, name: nil, place: "seat 1", joined: 5)],
                                      comments: [CommentInfo(id: "0123456789ab", post: nil, meetup: "ba9876543210", author: Self.id, name: nil,
                                                             created: 5, text: "hi", hidden: true)])
                let bare = MeetupInfo(id: "0123456789ab", host: Self.id, hostName: nil, title: "Go", kind: "course", topic: "CS 490",
                                      start: 5, ends: 6, place: "Hall", seats: 4, taken: 0, left: 4, minAge: nil, maxAge: nil, about: "x",
                                      status: "full", you: nil, attendees: nil)
                switch method {
                case .meetupCreate:
                    try roundTrip(API.meetupCreate, MeetupCreateRequest(title: "Catan", game: "Catan", start: 5, duration: 90, place: "Hall",
                                                                        seats: 4, minAge: 18, maxAge: 120, about: "snacks"), info)
                    try roundTrip(API.meetupCreate, MeetupCreateRequest(title: "Go", course: "CS 490", start: 5, place: "Hall", seats: 4), bare)
                case .meetupEdit:
                    try roundTrip(API.meetupEdit, MeetupEditRequest(id: "0123", title: "t", seats: 3, noAgeLimit: true), info)
                case .meetupCancel: try roundTrip(API.meetupCancel, MeetupRequest(id: "0123"), bare)
                case .meetupShow: try roundTrip(API.meetupShow, MeetupRequest(id: "0123"), info)
                case .meetupJoin: try roundTrip(API.meetupJoin, MeetupRequest(id: "0123"), info)
                case .meetupLeave: try roundTrip(API.meetupLeave, MeetupRequest(id: "0123"), info)
                default:
                    try roundTrip(API.meetups, MeetupsRequest(search: "go", course: "CS 490", from: 1, to: 2, nearby: true, all: true,
                                                              mine: true, limit: 5), MeetupsResult(meetups: [bare]))
                    try roundTrip(API.meetups, MeetupsRequest(), MeetupsResult(meetups: []))
                }
            case .leaderboard:
                let row = Leaderboard.Entry(rank: 1, id: Self.id, name: "Ana", score: 9, days: 1, at: 5)
                try roundTrip(API.leaderboard, LeaderboardRequest(day: "2026-12-04", limit: 5),
                              Leaderboard(day: "2026-12-04", allTime: false, players: 1, entries: [row], you: row))
                try roundTrip(API.leaderboard, LeaderboardRequest(allTime: true),
                              Leaderboard(day: nil, allTime: true, players: 0, entries: [], you: nil))
            case .games, .gameShow:
                let catan = GameInfo(name: "Catan", year: 1995, playersMin: 3, playersMax: 4, timeMin: 60, timeMax: 120, minAge: 10,
                                     description: "Settlers trade and build.")
                if method == .games {
                    try roundTrip(API.games, GamesRequest(search: "trade", players: 4, time: 120), GamesResult(games: [catan]))
                    try roundTrip(API.games, GamesRequest(), GamesResult(games: []))
                } else {
                    try roundTrip(API.gameShow, GameShowRequest(name: "cat"), catan)
                }
            case .people:
                try roundTrip(API.people, PeopleRequest(role: "tutor", search: "ana", course: "CS 490", limit: 5), PeopleResult(people: [
                    PeopleResult.Person(id: Self.id, name: "Ben", role: "tutor", courses: ["CS 490"], updatedAt: 5),
                    PeopleResult.Person(id: Self.id, name: nil, role: nil, courses: [], updatedAt: 6)], more: true))
                try roundTrip(API.people, PeopleRequest(), PeopleResult(people: [], more: false))
            case .membershipSet:
                var member = Self.card
                member.member = CardMember(domain: "campus.edu", expires: 1_800_000_000_000)
                try roundTrip(API.membershipSet, MembershipSetRequest(certificate: "4d4d4301"), member)
                #expect(try API.membershipSet.json(member).objectValue?["member"] == ["domain": "campus.edu", "expires": 1_800_000_000_000])
            case .chatSend: try roundTrip(API.chatSend, ChatSendRequest(id: Self.id, text: "hi ✓"), Self.message)
            case .chatHistory:
                try roundTrip(API.chatHistory, ChatHistoryRequest(id: Self.id, limit: 3),
                              ChatHistory(messages: [Self.message], matched: false, unmatchedBy: Self.id))
                try roundTrip(API.chatHistory, ChatHistoryRequest(id: Self.id), ChatHistory(messages: [], matched: true, unmatchedBy: nil))
            case .subscribe:
                try roundTrip(API.subscribe, SubscribeRequest(events: ["match", "sync"]), SubscribeResult(events: ["match", "sync"]))
                try roundTrip(API.subscribe, SubscribeRequest(), SubscribeResult(events: []))
            case .peers:
                try roundTrip(API.peers, NoParams(), PeersResult(peers: [Peer(node: Self.id, address: "169.254.77.2:4711", via: "mdns", since: 5)]))
            case .status:
                let storage = Status.Storage(accounts: 1, bytes: 2, maxAccounts: 3, maxBytes: 4, declinedAuthors: 5, declinedRecords: 6, degraded: true)
                for (listen, storage, name) in [(Status.Listen(host: "0.0.0.0", port: 4711), storage, "mm"), (nil, nil, nil)] {
                    try roundTrip(API.status, NoParams(), Status(
                        node: Self.id, version: "1.0", listen: listen, socket: "/run/s", stateDir: "/var/lib/m", records: 1,
                        authors: 2, pending: 3, heldUntilDue: 4, evidence: 5, accounts: 6, peers: 7, recordsReceived: 8,
                        sync: Status.Sync(bodiesReceived: 8, duplicateBodies: 1, idsAnnounced: 9), discovery: "on",
                        mdnsName: name, uptime: 10, health: "degraded", problems: ["x"], storage: storage,
                        networkWorkBits: 20, signupWorkMillis: 1500,
                        network: name == nil ? nil : Status.Network(interfaces: [Status.NetworkInterface(name: "eth0", addresses: [
                            "169.254.78.3", "fe80::1%eth0"])], changedAt: 1_764_400_000_000, changes: 2)))
                }
            case .doctor:
                try roundTrip(API.doctor, NoParams(), DoctorResult(checks: [
                    DoctorCheck(name: "a", ok: true, detail: "fine", fix: nil),
                    DoctorCheck(name: "b", ok: false, detail: "bad", fix: "do this"),
                    DoctorCheck(name: "c", ok: true, detail: "hmm", fix: "maybe", warning: true)], ok: false))
            case .replicaDigest:
                try roundTrip(API.replicaDigest, NoParams(), ReplicaDigest(digest: "00ff", records: 12))
            case .deviceList:
                try roundTrip(API.deviceList, NoParams(), DevicesResult(devices: [
                    DeviceInfo(id: "0011223344556677", label: "laptop", created: 5, expires: nil, state: "current", lastSeen: 9, this: true),
                    DeviceInfo(id: "8899aabbccddeeff", label: "lab-3", created: 6, expires: 7, state: "expired", lastSeen: nil, this: false)],
                    accountKey: true))
            case .deviceRevoke:
                try roundTrip(API.deviceRevoke, DeviceRequest(id: "8899"),
                              DeviceInfo(id: "8899aabbccddeeff", label: "lab-3", created: 6, expires: nil, state: "revoked", lastSeen: 8, this: false))
            case .deviceLink:
                try roundTrip(API.deviceLink, LinkRequest(label: "lab-3", expires: 28800, passphrase: "pw"),
                              LinkStart(code: "qpzry-9x8gf", device: "0011223344556677", label: "lab-3", until: 600000))
                try roundTrip(API.deviceLink, LinkRequest(), LinkStart(code: "qpzry-9x8gf", device: "00", label: "x", until: 1))
            case .deviceLinkStatus:
                try roundTrip(API.deviceLinkStatus, NoParams(), LinkStatus(state: "linked", account: Self.id, device: "0011223344556677"))
                try roundTrip(API.deviceLinkStatus, NoParams(), LinkStatus(state: "none"))
            case .deviceApprove:
                try roundTrip(API.deviceApprove, ApproveRequest(code: "qpzry-9x8gf"), ApproveResult(device: "00", label: "lab-3", expires: 28800, approved: false))
                try roundTrip(API.deviceApprove, ApproveRequest(code: "qpzry-9x8gf", confirm: true), ApproveResult(device: "00", label: "x", expires: nil, approved: true))
            case .accountExport:
                try roundTrip(API.accountExport, NoParams(), AccountKeyExport(id: Self.id, key: "AAEC"))
            case .accountImport:
                try roundTrip(API.accountImport, ImportRequest(key: "AAEC", email: "a@uni.edu", passphrase: "pw", label: "laptop"), account)
                try roundTrip(API.accountImport, ImportRequest(key: "AAEC", email: "a@uni.edu"), account)
            case .settingsShow:
                try roundTrip(API.settingsShow, NoParams(), SettingsResult(settings: [Self.setting, SettingInfo(
                    key: "feed.gender", value: nil, isDefault: true, defaultValue: nil, kind: "text", accepts: "any text", description: "d")]))
            case .settingsSet:
                try roundTrip(API.settingsSet, SettingsSetRequest(key: "notify.match", value: .set("off")), Self.setting)
                try roundTrip(API.settingsSet, SettingsSetRequest(key: "notify.match", value: .unset), Self.setting)
            }
        }
    }

    /// Results say null for what is absent (docs/API.md); requests leave it out.
    @Test func nilIsNullInResultsAndAbsentInRequests() throws {
        let card = try API.profileShow.json(Card(id: "mm1x", updatedAt: 7))
        #expect(card == ["id": "mm1x", "name": nil, "role": nil, "bio": nil, "courses": [], "wage": nil, "budget": nil,
                         "availability": nil, "photo": nil, "photos": nil, "conflicts": [:], "forked": false, "updatedAt": 7,
                         "slots": nil, "gender": nil, "languages": nil, "area": nil, "age": nil, "sign": nil, "preferences": nil,
                         "paused": nil, "score": nil, "compatibility": nil, "matches": nil, "pendingLikes": nil, "contact": nil,
                         "followers": nil, "following": nil, "posts": nil, "hosted": nil, "attended": nil, "member": nil])
        #expect(try API.feed.params(FeedRequest(limit: 3)) == ["limit": 3])
        #expect(try API.accountWhoami.params(NoParams()) == [:])
    }

    /// profile.set's photo has three states on the wire: absent, null (remove), a hash.
    @Test func profileSetPhotoKeepsNullApartFromAbsent() throws {
        #expect(try API.profileSet.params(ProfileSetRequest(photo: .remove)) == ["photo": nil])
        #expect(try API.profileSet.params(ProfileSetRequest(name: "A")) == ["name": "A"])
        #expect(try API.profileSet.request(from: ["photo": nil]).photo == .remove)
        #expect(try API.profileSet.request(from: ["photo": "ab"]).photo == .set(hash: "ab"))
        #expect(try API.profileSet.request(from: ["name": "A"]).photo == nil)
        // Every other field given as null is absent.
        #expect(try API.profileSet.request(from: ["name": nil, "wage": nil]).isEmpty)
    }

    /// Shapes that are not one struct per object: a feed entry is a card with two more
    /// fields; doctor leaves out `fix` and `warning` when there is none; blob.put answers either
    /// a token or the blob.
    @Test func flattenedAndOptionalShapes() throws {
        let entry = try API.feed.json(FeedResult(cards: [FeedCard(card: Card(id: "mm1x", updatedAt: 1), sharedCourses: ["A"], nearby: false)]))
        let first = try #require(entry["cards"]?.arrayValue?.first?.objectValue)
        #expect(first["sharedCourses"] == ["A"] && first["nearby"] == false && first["id"] == "mm1x" && first["photo"] == .null)
        #expect(first.count == 34)
        let doctor = try API.doctor.json(DoctorResult(checks: [DoctorCheck(name: "a", ok: true, detail: "d", fix: nil)], ok: true))
        #expect(doctor == ["checks": [["name": "a", "ok": true, "detail": "d"]], "ok": true])
        #expect(try API.blobPut.json(.more(upload: "t")) == ["upload": "t"])
        #expect(try API.blobPut.json(.stored(PhotoInfo(hash: "h", size: 1, type: "image/png"))) == ["hash": "h", "size": 1, "type": "image/png"])
    }

    @Test func parameterNamesComeFromTheCodingKeys() {
        #expect(SignupRequest.parameterNames.sorted() == ["birthdate", "email", "name", "passphrase", "role"])
        #expect(NoParams.parameterNames.isEmpty)
        #expect(ProfileSetRequest.parameterNames.sorted() == ["area", "availability", "bio", "birthdate", "budget", "contact", "courses", "gender",
                                                              "languages", "name", "photo", "preferences", "slots", "wage"])
    }

    /// The notifications the node sends for the caller's own account, with their names.
    @Test func eventsRoundTripUnderTheirNames() throws {
        #expect(APIEvent.allCases.map(\.method) == ["event.match", "event.message", "event.unmatch", "event.peer", "event.sync", "event.meetup"])
        #expect(SubscribeRequest.allEvents == ["match", "message", "unmatch", "peer", "sync", "meetup"])
        let message = try RPCNotification(.message, MessageEvent(with: Self.id, message: Self.message))
        #expect(message.method == "event.message")
        let parsed = try #require(JSON.parse(message.params.encoded))
        #expect(try JSONValueDecoder().decode(MessageEvent.self, from: parsed) == MessageEvent(with: Self.id, message: Self.message))
        #expect(try RPCNotification(.match, MatchEvent(id: "x", name: nil)).params == ["id": "x", "name": nil])
        #expect(try RPCNotification(.unmatch, UnmatchEvent(id: "x", by: "y")).params == ["id": "x", "by": "y"])
        let meetup = try RPCNotification(.meetup, MeetupEvent(id: "0123456789ab", title: "Go", what: "seat", start: 5, place: "Hall"))
        #expect(meetup.method == "event.meetup" && meetup.params == ["id": "0123456789ab", "title": "Go", "what": "seat", "start": 5, "place": "Hall"])
    }

    /// The node-wide events, the server's overflow notice and the ambiguous-ID error's data:
    /// their wire shapes, and back.
    @Test func peerSyncOverflowAndAmbiguousDataHaveTheirWireShapes() throws {
        let peer = PeerEvent(peer: Peer(node: "n1", address: "10.0.0.7:7000", via: "mdns", since: 7), state: .disconnected)
        let peerNotice = try RPCNotification(.peer, peer)
        #expect(peerNotice.method == "event.peer")
        #expect(peerNotice.params == ["peer": ["node": "n1", "address": "10.0.0.7:7000", "via": "mdns", "since": 7, "hub": false], "state": "disconnected"])
        #expect(try JSONValueDecoder().decode(PeerEvent.self, from: peerNotice.params) == peer)
        let sync = SyncEvent(peer: "n1", address: "a:1", received: 12, sent: 3, caughtUp: false)
        let syncNotice = try RPCNotification(.sync, sync)
        #expect(syncNotice.method == "event.sync" && syncNotice.params == ["peer": "n1", "address": "a:1", "received": 12, "sent": 3, "caughtUp": false])
        let overflow = try RPCNotification(OverflowEvent(dropped: 5))
        #expect(overflow.method == "event.overflow" && overflow.params == ["dropped": 5])
        #expect(try JSONValueEncoder().encode(AmbiguousIDData(matches: ["a", "b"])) == ["matches": ["a", "b"]])
    }

    /// settings.set's value: null (back to the default) kept apart from absent (refused), and a
    /// boolean or integer taken as its text.
    @Test func settingsSetValueIsRequiredNullableAndTakesScalars() throws {
        #expect(try API.settingsSet.params(SettingsSetRequest(key: "k", value: .unset)) == ["key": "k", "value": nil])
        #expect(try API.settingsSet.request(from: ["key": "k", "value": nil]).value == .unset)
        #expect(try API.settingsSet.request(from: ["key": "k", "value": false]).value == .set("false"))
        #expect(try API.settingsSet.request(from: ["key": "k", "value": 30]).value == .set("30"))
        #expect(throws: RPCError.self) { try API.settingsSet.request(from: ["key": "k"]) }
        #expect(try API.settingsShow.json(SettingsResult(settings: [Self.setting])) == ["settings": [[
            "key": "notify.match", "value": "false", "isDefault": false, "defaultValue": "true", "kind": "bool",
            "accepts": "true or false (also on/off, yes/no)", "description": "Notify me of a new match."]]])
    }

    static let setting = SettingInfo(key: "notify.match", value: "false", isDefault: false, defaultValue: "true", kind: "bool",
                                     accepts: "true or false (also on/off, yes/no)", description: "Notify me of a new match.")

    @Test func unknownMethodNamesAreMethodNotFound() {
        #expect(throws: RPCError(.methodNotFound, "unknown method \"nope\"; see docs/API.md for the list")) { try APIMethod.named("nope") }
        #expect(APIMethod.allCases.count == 68)
        #expect(Set(APIMethod.allCases.map(\.rawValue)).count == 68)
    }
}

/// The Encoder/Decoder pair over `JSON` on its own.
@Suite struct JSONValueCoderTests {
    struct Nested: Codable, Equatable {
        var a: Int
        var b: [String: [Int64]]
        var c: [Double?]
        var d: JSON
        var e: UInt8?
    }

    @Test func nestedValuesRoundTrip() throws {
        let value = Nested(a: -3, b: ["x": [1, 2], "y": []], c: [1.5, nil], d: ["k": [true, nil]], e: nil)
        let json = try JSONValueEncoder().encode(value)
        #expect(json == ["a": -3, "b": ["x": [1, 2], "y": []], "c": [.double(1.5), nil], "d": ["k": [true, nil]], "e": nil])
        #expect(try JSONValueDecoder().decode(Nested.self, from: json) == value)
        #expect(try JSONValueEncoder(nilEncoding: .omit).encode(value)["e"] == nil)
    }

    @Test func mismatchesAreDecodingErrorsWithTheirPath() {
        do {
            _ = try JSONValueDecoder().decode(Nested.self, from: ["a": 1, "b": ["x": ["no"]], "c": [], "d": nil])
            Issue.record("decoded a string as an integer")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["b", "x", "0"])
        } catch {
            Issue.record("\(error)")
        }
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(UInt8.self, from: 300) }
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Nested.self, from: ["a": 1]) }
    }
}
