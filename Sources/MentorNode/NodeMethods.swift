import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

extension Node {
    /// Step 2 of a request, on the node's queue: the params decoded as the method's request
    /// type (a wrong one is -32602), then the handler; `finish` encodes its result off the queue.
    /// `prepared` is what step 1 of a login or signup made off the queue (`admit`, then
    /// `prepareKey`); nil otherwise.
    func dispatch(_ method: APIMethod, _ params: [String: JSON], _ caller: Requester, prepared: PreparedKey?) throws -> any APIObject {
        switch method {
        case .accountSignup: return try run(API.accountSignup, params) { try signup($0, caller, prepared: prepared) }
        case .accountLogin: return try run(API.accountLogin, params) { try login($0, caller, prepared: prepared) }
        case .accountLogout: return try run(API.accountLogout, params) { $0.forget == true ? try forget(caller) : try logout(caller) }
        case .accountWhoami: return try run(API.accountWhoami, params) { _ in try accountInfo(caller.uid) }
        case .profileShow: return try run(API.profileShow, params) { try profileShowWithContact($0, caller) }
        case .profileSet: return try run(API.profileSet, params) { try profileSetWithContact($0, caller) }
        case .profilePhotoAdd: return try run(API.profilePhotoAdd, params) { try profilePhotoAdd($0, caller) }
        case .profilePhotoRemove: return try run(API.profilePhotoRemove, params) { try profilePhotoRemove($0, caller) }
        case .profilePhotoOrder: return try run(API.profilePhotoOrder, params) { try profilePhotoOrder($0, caller) }
        case .blobPut: return try run(API.blobPut, params) { try blobPut($0, caller) }
        case .blobGet: return try run(API.blobGet, params) { try blobGet($0) }
        case .feed: return try run(API.feed, params) { try feed($0, caller) }
        case .like: return try run(API.like, params) { try like($0, caller) }
        case .pass: return try run(API.pass, params) { try pass($0, caller) }
        case .undo: return try run(API.undo, params) { try undo($0, caller) }
        case .matches: return try run(API.matches, params) { _ in try matches(caller) }
        case .unmatch: return try run(API.unmatch, params) { try unmatch($0, caller) }
        case .chatSend: return try run(API.chatSend, params) { try chatSend($0, caller) }
        case .chatHistory: return try run(API.chatHistory, params) { try chatHistory($0, caller) }
        case .subscribe: return try run(API.subscribe, params) { try subscribe($0, caller) }
        case .peers: return try run(API.peers, params) { _ in peers() }
        case .status: return try run(API.status, params) { _ in try status() }
        case .doctor: return try run(API.doctor, params) { _ in try doctor(caller) }
        case .replicaDigest: return try run(API.replicaDigest, params) { _ in try replicaDigest() }
        case .deviceList: return try run(API.deviceList, params) { _ in try deviceList(caller) }
        case .deviceRevoke: return try run(API.deviceRevoke, params) { try deviceRevoke($0, caller) }
        case .deviceLink: return try run(API.deviceLink, params) { try deviceLink($0, caller, prepared: prepared) }
        case .deviceLinkStatus: return try run(API.deviceLinkStatus, params) { _ in try deviceLinkStatus(caller) }
        case .deviceApprove: return try run(API.deviceApprove, params) { try deviceApprove($0, caller, prepared: prepared) }
        case .accountExport: return try run(API.accountExport, params) { _ in try accountExport(caller) }
        case .accountImport: return try run(API.accountImport, params) { try accountImport($0, caller, prepared: prepared) }
        case .settingsShow: return try run(API.settingsShow, params) { _ in try settingsShow(caller) }
        case .settingsSet: return try run(API.settingsSet, params) { try settingsSet($0, caller) }
        case .block: return try run(API.block, params) { try block($0, caller) }
        case .unblock: return try run(API.unblock, params) { try unblock($0, caller) }
        case .blocked: return try run(API.blocked, params) { _ in try blockedList(caller) }
        case .follow: return try run(API.follow, params) { try follow($0, caller, following: true) }
        case .unfollow: return try run(API.unfollow, params) { try follow($0, caller, following: false) }
        case .followers: return try run(API.followers, params) { try followList($0, caller, followers: true) }
        case .following: return try run(API.following, params) { try followList($0, caller, followers: false) }
        case .identify: return try run(API.identify, params) { try identify($0, caller) }
        case .postCreate: return try run(API.postCreate, params) { try postCreate($0, caller) }
        case .postShow: return try run(API.postShow, params) { try postShow($0, caller) }
        case .postEdit: return try run(API.postEdit, params) { try postEdit($0, caller) }
        case .postDelete: return try run(API.postDelete, params) { try postDelete($0, caller) }
        case .postLike: return try run(API.postLike, params) { try postLike($0, caller, liked: true) }
        case .postUnlike: return try run(API.postUnlike, params) { try postLike($0, caller, liked: false) }
        case .postHide: return try run(API.postHide, params) { try postHide($0, caller) }
        case .commentCreate: return try run(API.commentCreate, params) { try commentCreate($0, caller) }
        case .commentDelete: return try run(API.commentDelete, params) { try commentDelete($0, caller) }
        case .commentHide: return try run(API.commentHide, params) { try commentHide($0, caller) }
        case .posts: return try run(API.posts, params) { try postsList($0, caller) }
        case .explore: return try run(API.explore, params) { try explore($0, caller) }
        case .quizQuestions: return try run(API.quizQuestions, params) { _ in try quizQuestions(caller) }
        case .quizSubmit: return try run(API.quizSubmit, params) { try quizSubmit($0, caller) }
        case .leaderboard: return try run(API.leaderboard, params) { try leaderboard($0, caller) }
        case .meetupCreate: return try run(API.meetupCreate, params) { try meetupCreate($0, caller) }
        case .meetupEdit: return try run(API.meetupEdit, params) { try meetupEdit($0, caller) }
        case .meetupCancel: return try run(API.meetupCancel, params) { try meetupCancel($0, caller) }
        case .meetupShow: return try run(API.meetupShow, params) { try meetupShow($0, caller) }
        case .meetupJoin: return try run(API.meetupJoin, params) { try meetupJoin($0, caller, joining: true) }
        case .meetupLeave: return try run(API.meetupLeave, params) { try meetupJoin($0, caller, joining: false) }
        case .meetupComment: return try run(API.meetupComment, params) { try meetupComment($0, caller) }
        case .meetups: return try run(API.meetups, params) { try meetupsList($0, caller) }
        case .games: return try run(API.games, params) { try games($0) }
        case .gameShow: return try run(API.gameShow, params) { try gameShow($0, caller) }
        case .people: return try run(API.people, params) { try people($0, caller) }
        case .membershipSet: return try run(API.membershipSet, params) { try membershipSet($0, caller) }
        }
    }

    private func run<Request, Result>(_ call: APICall<Request, Result>, _ params: [String: JSON],
                                      _ handler: (Request) throws -> Result) throws -> Result {
        try handler(try call.request(from: params))
    }

    // MARK: Account

    /// A signup that passed every check that costs nothing.
    struct NewAccount {
        var email: String
        var name: String
        var role: ProfileCard.Role
        var passphrase: String?
        var birthdate: BirthDate?
    }

    /// Every check of a signup that costs nothing: run before Argon2id (`admit`) and again by
    /// `signup` itself.
    func newAccount(_ request: SignupRequest, _ caller: Requester) throws -> NewAccount {
        let email = request.email.trimmingCharacters(in: .whitespaces)
        let name = request.name.trimmingCharacters(in: .whitespaces)
        guard try replica.nodeAccount(uid: caller.uid) == nil else {
            throw RPCError(.alreadyExists, "you already have an account on this node (one per user); see `mentormate whoami`")
        }
        guard let role = ProfileCard.Role(rawValue: request.role) else {
            throw RPCError(.invalidValue, "role must be student or tutor, not \"\(request.role)\"")
        }
        try checkEmail(email)
        guard !name.isEmpty else { throw RPCError(.invalidValue, "the name is empty; give the name others will see") }
        if let passphrase = request.passphrase, passphrase.isEmpty { throw RPCError(.invalidValue, "the passphrase is empty") }
        let birthdate = try request.birthdate.map(checkBirthdate)
        if let minAge = config.minAge {
            guard let birthdate else {
                throw RPCError(.invalidValue, "this node admits people aged \(minAge) or over (min_age): sign up with your birth date, --birthdate YYYY-MM-DD")
            }
            let age = birthdate.age(at: config.now())
            guard age >= minAge else {
                throw RPCError(.notAllowed, "sign-up here needs an age of \(minAge) or over (this node's min_age); by the birth date given you are \(age)")
            }
        }
        return NewAccount(email: email, name: name, role: role, passphrase: request.passphrase, birthdate: birthdate)
    }

    func signup(_ request: SignupRequest, _ caller: Requester, prepared: PreparedKey?) throws -> AccountInfo {
        let new = try newAccount(request, caller)
        let (email, name, role, passphrase) = (new.email, new.name, new.role, new.passphrase)

        // The key and its proof of work were made off the node's queue (`prepareKey`, with
        // Argon2id behind its gate when there is a passphrase, then `proveWork`): neither
        // Argon2id nor the work ever runs here.
        let path = config.keyPath(uid: caller.uid), accountPath = config.accountKeyPath(uid: caller.uid)
        guard let prepared, let keys = prepared.keys, let accountKeys = prepared.accountKeys,
              let temporary = prepared.temporaryPath, let accountTemporary = prepared.accountTemporaryPath else {
            throw RPCError(.internalError, "the new key was not prepared; sign up again")
        }
        guard rename(temporary, path) == 0, rename(accountTemporary, accountPath) == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw RPCError(.internalError, "could not put the account key in place at \(accountPath)")
        }
        let account = accountKeys.publicKey.key
        do {
            try replica.addNodeAccount(NodeAccount(uid: caller.uid, account: account, email: email,
                                                   protected: passphrase != nil, created: config.now()))
            try unlock(uid: caller.uid, keys: keys, account: account, accountKeys: accountKeys)
            localKeys.insert(account)
            // The account's first record: its card, carrying the proof of work (PROTOCOL.md §6.1);
            // then the certificate of this machine's device key, which signs from now on.
            try write(caller.uid, as: .account) { w, now throws(RecordError) in
                var card = ProfileCard(name: name, role: role, work: prepared.work)
                if let birthdate = new.birthdate { card.age = .some(Self.publishedAge(birthdate, at: now)) }
                return try w.profile(card, at: now)
            }
            try write(caller.uid, as: .account) { w, now throws(RecordError) in
                try w.certify(keys.publicKey.key, label: config.deviceLabel, epoch: 1, at: now)
            }
            if let birthdate = new.birthdate { try replica.setAccountSetting(account, key: "birthdate", value: birthdate.description) }
        } catch {
            // Leave nothing half-made: no row, no keys.
            writers[caller.uid] = nil
            self.accountKeys[caller.uid] = nil
            localKeys.remove(account)
            try? replica.removeNodeAccount(uid: caller.uid)
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: accountPath)
            throw error
        }
        logger.info("account created", ["uid": "\(caller.uid)", "account": account.shortID, "device": keys.publicKey.key.shortID])
        changes.publish(.accountsChanged)
        return try accountInfo(caller.uid)
    }

    func checkEmail(_ email: String) throws {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !email.contains(where: \.isWhitespace) else {
            throw RPCError(.invalidValue, "\"\(email)\" is not an e-mail address")
        }
        guard !emailDomains.isEmpty else { return }
        let domain = parts[1].lowercased()
        let allowed = emailDomains.map { $0.lowercased() }
        guard allowed.contains(where: { domain == $0 || domain.hasSuffix("." + $0) }) else {
            throw RPCError(.invalidValue, "sign-up needs an address at \(allowed.joined(separator: " or ")) (this node's email_domains); \(domain) is not one")
        }
    }


    /// `prepared`: the key step 1 decrypted off the queue, when the account is protected and a
    /// passphrase was given.
    func login(_ request: LoginRequest, _ caller: Requester, prepared: PreparedKey?) throws -> AccountInfo {
        guard let account = try replica.nodeAccount(uid: caller.uid) else { throw noAccount() }
        loggedOut.remove(caller.uid)
        if writers[caller.uid] == nil {
            let passphrase = request.passphrase
            if account.protected && passphrase == nil {
                throw RPCError(.wrongPassphrase, "your key is protected: give the passphrase (`mentormate login` asks for it)")
            }
            if account.protected && prepared?.keys == nil {
                // Argon2id never runs on the node's queue; an empty passphrase cannot be right
                // (signup refuses one), so it is refused without a check.
                if passphrase?.isEmpty == true {
                    throw RPCError(.wrongPassphrase, "the passphrase is empty; give the one you chose at sign-up")
                }
                throw RPCError(.locked, "your account was locked while the passphrase was checked; run `mentormate login` again")
            }
            do {
                let keys: SigningKeyPair
                var held: SigningKeyPair?
                if account.protected, let decrypted = prepared?.keys {
                    keys = decrypted   // decrypted off the queue
                    held = prepared?.accountKeys
                } else {
                    keys = try KeyFile.read(from: config.keyPath(uid: caller.uid))
                    let accountPath = config.accountKeyPath(uid: caller.uid)
                    if FileManager.default.fileExists(atPath: accountPath) { held = try KeyFile.read(from: accountPath) }
                }
                try unlock(uid: caller.uid, keys: keys, account: account.account, accountKeys: held)
                loginFailures[caller.uid] = nil
            } catch let e as CryptoError where e.code == .wrongPassphrase {
                throw RPCError(.wrongPassphrase, "wrong passphrase; try again")
            } catch let e as CryptoError {
                throw RPCError(.internalError, "could not read your account key: \(e.message)")
            }
        }
        return try accountInfo(caller.uid)
    }

    func logout(_ caller: Requester) throws -> AccountInfo {
        guard let writer = writers[caller.uid] else {
            guard try replica.nodeAccount(uid: caller.uid) != nil else { throw noAccount() }
            return try accountInfo(caller.uid)
        }
        try replica.lock(writer.account)
        writers[caller.uid] = nil
        accountKeys[caller.uid] = nil
        loggedOut.insert(caller.uid)
        return try accountInfo(caller.uid)
    }

    func accountInfo(_ uid: UInt32) throws -> AccountInfo {
        guard let a = try replica.nodeAccount(uid: uid) else { throw noAccount() }
        let card = try replica.card(of: a.account)
        let device = try deviceFacts(uid, account: a.account)
        return AccountInfo(id: a.account.id, name: card?.card.name, email: a.email, role: card?.card.role?.rawValue,
                           protected: a.protected, unlocked: writers[uid] != nil, device: device.id, deviceLabel: device.label,
                           deviceState: device.state, accountKey: accountKeys[uid] != nil)
    }

    /// The caller's account key (whether or not it is unlocked).
    /// The caller's account when it has one (nil without, or when it cannot be read): for
    /// methods that need no account but leave out what the account blocked or hid.
    func account(ifAny caller: Requester?) -> PublicKey? {
        guard let caller else { return nil }
        return (try? replica.nodeAccount(uid: caller.uid))??.account
    }

    func me(_ caller: Requester) throws -> PublicKey {
        guard let a = try replica.nodeAccount(uid: caller.uid) else { throw noAccount() }
        return a.account
    }

    // MARK: Profile

    func resolve(_ text: String) throws -> PublicKey {
        let query: AccountID.Query
        do { query = try AccountID.parse(text) } catch { throw RPCError(.invalidValue, error.description) }
        switch AccountID.resolve(query, among: try replica.knownAuthors()) {
        case .found(let k): return k
        case .notFound:
            throw RPCError(.notFound, "no account \(text) is known on this node (yet); check the ID, or wait until its node syncs")
        case .ambiguous(let keys):
            throw RPCError(.ambiguous, "\(text) matches \(keys.count) accounts; give more characters",
                           data: try? JSONValueEncoder().encode(AmbiguousIDData(matches: keys.map(\.id))))
        }
    }

    func profileShow(_ request: ProfileShowRequest, _ caller: Requester) throws -> Card {
        refreshAge(caller.uid)
        let key = try request.id.map(resolve) ?? me(caller)
        guard let state = try replica.card(of: key) else {
            throw RPCError(.notFound, "\(key.shortID)… has no profile card on this node yet")
        }
        if campus.settings.requires, try replica.nodeAccount(uid: caller.uid)?.account != key,
           campusHidden(viewer: nil).contains(key) {
            throw RPCError(.notFound, "\(key.shortID)… is not a member of this campus (require_membership): its card is not shown here")
        }
        var card = shownCard(state)
        (card.followers, card.following) = try followCounts(key)
        card.posts = Int64(try replica.postCount(of: key))
        let viewer = try replica.nodeAccount(uid: caller.uid)?.account
        let history = try replica.meetupHistory(of: key, limit: 10)
        card.hosted = try history.hosted.map { try meetupInfo($0, viewer: viewer, attendees: false) }
        card.attended = try history.seated.map { try meetupInfo($0, viewer: viewer, attendees: false) }
        // Anyone may read a card (a user without an account here too); the score and the
        // counts are for the caller's own account.
        guard let me = try replica.nodeAccount(uid: caller.uid)?.account else { return card }
        if key == me {
            (card.matches, card.pendingLikes) = try ownCounts(me)
        } else if let (score, parts) = compatibility(of: me, with: key) {
            (card.score, card.compatibility) = (score, parts)
        }
        return card
    }

    func profileSet(_ request: ProfileSetRequest, _ caller: Requester) throws -> Card {
        // A field set to null changes nothing (except photo: null, which removes every photo).
        guard !request.isEmpty else {
            throw RPCError(.invalidParams, "\(APIMethod.profileSet.rawValue) needs at least one field to change (\(ProfileSetRequest.parameterNames.sorted().joined(separator: ", ")))")
        }
        var card = ProfileCard()
        card.name = request.name.map { $0.trimmingCharacters(in: .whitespaces) }
        if card.name?.isEmpty == true {
            throw RPCError(.invalidValue, "the name is empty; give the name others will see")
        }
        card.bio = request.bio
        card.availability = request.availability
        card.courses = request.courses.map { list in
            var seen = Set<[UInt8]>()
            return list.map(ProfileCard.normalizeCourse).filter { !$0.isEmpty && seen.insert(Array($0.utf8)).inserted }
        }
        if let bad = card.courses?.first(where: { $0.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } }) {
            throw RPCError(.invalidValue, "the course \(bad.debugDescription) contains a control character; type it with letters, digits and spaces only")
        }
        let amounts: [(ProfileSetRequest.CodingKeys, Int64?, WritableKeyPath<ProfileCard, UInt64?>)]
            = [(.wage, request.wage, \.wage), (.budget, request.budget, \.budget)]
        for (key, value, keyPath) in amounts {
            if let v = value {
                guard v >= 0 else { throw RPCError(.invalidValue, "\(key.stringValue) must be 0 or more") }
                card[keyPath: keyPath] = UInt64(v)
            }
        }
        switch request.photo {
        case nil: break
        case .set(let hex)?:
            card.photos = [try uploadedPhoto(hex)]   // the only photo: the list is replaced
        case .remove?:
            card.photos = []
        }
        try setProfileFields(request, on: &card)
        let me = try me(caller)
        if let text = request.birthdate { try setBirthdate(text, uid: caller.uid, account: me, on: &card) }
        // The edit has seen every current entry of the card, whichever of the account's keys
        // wrote it: it supersedes them all (PROTOCOL.md §8.3).
        let seen = try replica.cardClock(of: me)
        try write(caller.uid) { w, now throws(RecordError) in try w.profile(card, clock: seen, at: now) }
        guard let state = try replica.card(of: me) else { throw RPCError(.internalError, "card missing after write") }
        return shownCard(state)
    }

    static let maxChunk = 512 * 1024

    func blobPut(_ request: BlobPutRequest, _ caller: Requester) throws -> BlobPutResult {
        _ = try me(caller)
        guard let chunk = Data(base64Encoded: request.chunk) else {
            throw RPCError(.invalidParams, "blob.put: \"chunk\" is not base64")
        }
        guard chunk.count <= Self.maxChunk else {
            throw RPCError(.invalidValue, "a chunk may hold at most \(Self.maxChunk) bytes; send the file in several chunks")
        }
        var token = request.upload ?? Hex.encode(SecureRandom.bytes(12))
        if request.upload != nil {
            guard let up = uploads[token], up.caller == caller else {
                throw RPCError(.notFound, "no upload \(token) on this connection; start again without \"upload\"")
            }
        } else {
            // One unfinished upload per user (at most 4 MiB held for them): a new one on the same
            // connection replaces it; one on another connection is refused.
            uploads = uploads.filter { $0.value.caller != caller }
            if let other = uploads.values.first(where: { $0.caller.uid == caller.uid }) {
                throw RPCError(.limitReached, "you have an unfinished upload on another connection (\(other.caller.connection)); finish it (done: true) or close that connection, then upload again")
            }
            uploads[token] = (caller, [])
        }
        uploads[token]?.data.append(contentsOf: chunk)
        let size = uploads[token]?.data.count ?? 0
        guard size <= Limits.maxPhotoBytes else {
            uploads[token] = nil
            throw RPCError(.invalidValue, "the photo is over \(Limits.maxPhotoBytes / (1024 * 1024)) MiB; choose a smaller picture")
        }
        guard request.done else { return .more(upload: token) }
        let data = uploads[token]?.data ?? []
        uploads[token] = nil
        token = ""
        do {
            let ref = try replica.putBlob(data, uploadedAt: config.now())
            return .stored(PhotoInfo(hash: Hex.encode(ref.hash), size: Int64(ref.size), type: ref.format.mimeType))
        } catch {
            if let s = error.storage { throw s }
            throw RPCError(.invalidValue, error.message)
        }
    }

    func blobGet(_ request: BlobGetRequest) throws -> BlobGetResult {
        let hex = request.hash
        guard let hash = Hex.decode(hex), hash.count == 32, let blob = try replica.blob(hash: hash) else {
            throw RPCError(.notFound, "no blob \(hex.prefix(16)) on this node")
        }
        let offset = Int(request.offset ?? 0)
        let length = Int(request.length ?? Int64(Self.maxChunk))
        guard offset >= 0, offset <= blob.data.count, length > 0, length <= Self.maxChunk else {
            throw RPCError(.invalidParams, "offset must be 0...\(blob.data.count) and length 1...\(Self.maxChunk)")
        }
        let slice = blob.data[offset..<min(blob.data.count, offset + length)]
        return BlobGetResult(data: Data(slice).base64EncodedString(), size: Int64(blob.data.count), type: blob.ref.format.mimeType)
    }

    // MARK: Feed, likes

    func feed(_ request: FeedRequest, _ caller: Requester) throws -> FeedResult {
        let me = try me(caller)
        let limit = Int(request.limit ?? 20)
        guard (1...100).contains(limit) else { throw RPCError(.invalidParams, "feed: limit must be 1...100") }
        refreshAge(caller.uid)
        let filter = try feedFilter(try withDefaults(request, me))
        guard let ranking = feedIndex.ranking(of: me) else {
            throw RPCError(.notAllowed, "your card has no role yet; this should not happen after signup — check `mentormate profile show`")
        }
        var excluded: Set<PublicKey> = [me]
        excluded.formUnion(try replica.passes(of: me))
        excluded.formUnion(try hiddenAccounts(of: me))
        for s in try replica.pairSummaries(of: me) where s.iLike || s.matched || s.unmatchedBy != nil { excluded.insert(s.other) }
        let index = feedIndex
        let items = ranking.top(limit: limit, filter: filter, excluded: excluded, lookup: { index.candidates[$0] })
        let states = Dictionary(uniqueKeysWithValues: try replica.cards(of: items.map(\.key)).map { ($0.author, $0) })
        return FeedResult(cards: items.compactMap { item in
            states[item.key].map { state in
                var card = shownCard(state)
                if let (score, parts) = compatibility(of: me, with: item.key) { (card.score, card.compatibility) = (score, parts) }
                return FeedCard(card: card, sharedCourses: item.sharedCourses.map(index.courses.name), nearby: item.nearby)
            }
        })
    }

    func target(_ id: String, _ caller: Requester) throws -> (me: PublicKey, other: PublicKey) {
        let me = try me(caller)
        let other = try resolve(id)
        guard other != me else { throw RPCError(.invalidValue, "that is your own account") }
        return (me, other)
    }

    func like(_ request: AccountRequest, _ caller: Requester) throws -> LikeResult {
        let (me, other) = try target(request.id, caller)
        if isBlocked(other, by: me) { throw RPCError(.notAllowed, "you block \(other.shortID)…; `mentormate unblock \(other.shortID)` first") }
        let view = try replica.pairView(account: me, other: other)
        // After an unmatch a new like may make a new match, once the other likes again too
        // (PROTOCOL.md §8.7).
        if !view.iLike {
            guard cards[other] != nil else { throw RPCError(.notFound, "\(other.shortID)… has no card on this node yet") }
            if try replica.passes(of: me).contains(other) { try notePass(caller, me: me, other: other, passed: false) }
            let seen = try replica.contiguousSeq(of: other)
            let key = try sealTo(other)
            // The new like supersedes every like of this account's register, whichever of its
            // devices wrote it (PROTOCOL.md §8.4).
            let clock = PairView.likeClock(of: me, in: try replica.pairEntries(account: me, other: other))
            try write(caller.uid, as: .sealing) { w, now throws(RecordError) in try w.like(other, peerSeq: seen, to: key, clock: clock, at: now) }
        }
        let after = try replica.pairView(account: me, other: other)
        return LikeResult(id: other.id, matched: after.matched)
    }

    func pass(_ request: AccountRequest, _ caller: Requester) throws -> AccountResult {
        let (me, other) = try target(request.id, caller)
        let view = try replica.pairView(account: me, other: other)
        if view.matched { throw RPCError(.notAllowed, "you are matched with \(other.shortID)…; use `mentormate unmatch` to end it") }
        if view.iLike { throw RPCError(.notAllowed, "you liked \(other.shortID)…; run `mentormate undo \(other.shortID)` first") }
        try notePass(caller, me: me, other: other, passed: true)
        return AccountResult(id: other.id)
    }

    func undo(_ request: AccountRequest, _ caller: Requester) throws -> UndoResult {
        let (me, other) = try target(request.id, caller)
        if try replica.passes(of: me).contains(other) {
            try notePass(caller, me: me, other: other, passed: false)
            return UndoResult(id: other.id, undone: .pass)
        }
        let view = try replica.pairView(account: me, other: other)
        if view.matched { throw RPCError(.notAllowed, "you are matched; use `mentormate unmatch` to end it") }
        guard view.iLike else { throw RPCError(.notAllowed, "there is no like or pass of \(other.shortID)… to undo") }
        // The peer seq says which of their messages this account had seen: those it had not,
        // written against the like being withdrawn, are not shown (PROTOCOL.md section 8.5).
        try withdrawLike(caller.uid, me: me, other: other)
        return UndoResult(id: other.id, undone: .like)
    }

    func matches(_ caller: Requester) throws -> MatchesResult {
        let me = try me(caller)
        var out: [MatchSummary] = []
        let blocked = try replica.blockedAccounts(of: me)
        for s in try replica.pairSummaries(of: me).filter({ $0.matched && !blocked.contains($0.other) }).sorted(by: { $0.other < $1.other }) {
            let view = try replica.pairView(account: me, other: s.other)
            out.append(MatchSummary(id: s.other.id, name: names[s.other], messages: Int64(view.messages.count),
                                    lastMessage: view.messages.last.map { apiMessage($0, me: me) }))
        }
        return MatchesResult(matches: out)
    }

    func unmatch(_ request: AccountRequest, _ caller: Requester) throws -> AccountResult {
        let (me, other) = try target(request.id, caller)
        guard try replica.pairView(account: me, other: other).matched else {
            throw RPCError(.notAllowed, "you are not matched with \(other.shortID)…")
        }
        // It ends this match — the two likes that stand — and no other (PROTOCOL.md §8.7).
        try endMatch(caller.uid, me: me, other: other)
        return AccountResult(id: other.id)
    }

    // MARK: Chat

    func chatSend(_ request: ChatSendRequest, _ caller: Requester) throws -> Message {
        let (me, other) = try target(request.id, caller)
        let text = request.text
        guard !text.isEmpty, text.utf8.count <= ChatPayload.maxTextBytes else {
            throw RPCError(.invalidValue, "a message is 1 to \(ChatPayload.maxTextBytes) bytes; this one is \(text.utf8.count)")
        }
        // The summary row, not the whole conversation: sending stays cheap in long chats.
        let pair = try replica.pairSummary(account: me, other: other)
        if pair?.unmatchedBy != nil { throw RPCError(.notAllowed, "this conversation was ended with unmatch") }
        guard pair?.matched == true, let theirLike = try replica.currentLike(account: me, by: other) else {
            throw RPCError(.notAllowed, "you can chat only after you both liked each other")
        }
        // The message names its match — the two likes that stand — and takes the place after
        // every message of the pair this node holds (PROTOCOL.md sections 8.5, 8.6).
        let entries = try replica.pairEntries(account: me, other: other)
        guard let myLike = PairView.currentLike(of: me, in: entries) else {
            throw RPCError(.notAllowed, "you can chat only after you both liked each other")
        }
        let place = PairView.nextPlace(in: entries)
        let key = try sealTo(other)
        let sent = try write(caller.uid, as: .sealing) { w, now throws(RecordError) in
            try w.chat(to: other, peerSeq: place, answers: theirLike.recordID, mine: myLike.recordID, text: text, key: key, at: now)
        }
        return apiMessage(PairView.Message(author: me, seq: sent.record.seq, timestamp: sent.record.timestamp,
                                           recordID: sent.id, text: text), me: me)
    }

    func chatHistory(_ request: ChatHistoryRequest, _ caller: Requester) throws -> ChatHistory {
        let (me, other) = try target(request.id, caller)
        let limit = Int(request.limit ?? 50)
        guard limit >= 1 else { throw RPCError(.invalidParams, "chat.history: limit must be at least 1") }
        var view = try replica.pairView(account: me, other: other)
        if isBlocked(other, by: me) { view.messages.removeAll { $0.author == other } }
        return ChatHistory(messages: view.messages.suffix(limit).map { apiMessage($0, me: me) },
                           matched: view.matched, unmatchedBy: view.unmatchedBy?.id)
    }

    func subscribe(_ request: SubscribeRequest, _ caller: Requester) throws -> SubscribeResult {
        let known = SubscribeRequest.allEvents
        let events = request.events ?? Array(known)
        if let bad = events.first(where: { !known.contains($0) }) {
            throw RPCError(.invalidParams, "unknown event \"\(bad)\"; events are \(known.sorted().joined(separator: ", "))")
        }
        _ = try me(caller)
        guard notifications.claimSubscription(caller.connection) else {
            throw RPCError(.limitReached, "your user already holds the most subscribed connections allowed (api_subscriptions_per_user); close one (such as another `mentormate chat --follow`) and retry")
        }
        subscriptions[caller.connection] = (caller.uid, Set(events))
        return SubscribeResult(events: Set(events).sorted())
    }

    // MARK: Node

    func peers() -> PeersResult {
        PeersResult(peers: runtime.runtimeInfo().peers.map(apiPeer))
    }

    /// The public digest of the replica (equal on nodes holding the same records) and how many
    /// records it holds.
    func replicaDigest() throws -> ReplicaDigest {
        let digest = try replica.digest(includePrivate: false)
        let counts = try replica.counts()
        return ReplicaDigest(digest: Hex.encode(digest), records: Int64(counts.records))
    }

    func status() throws -> Status {
        let info = runtime.runtimeInfo()
        let counts = try replica.counts()
        let accounts = try replica.nodeAccounts().count
        var problems: [String] = []
        if counts.pending > 0 { problems.append("\(counts.pending) records wait for missing predecessors") }
        if case .unavailable = info.discovery { problems.append("mDNS discovery is \(info.discovery); `mentormate doctor` says what to fix") }
        if let storage = info.storage, storage.degraded { problems.append(Self.storageProblem(storage)) }
        var status = Status(
            node: nodeKeys.publicKey.key.id, version: MentorMateVersion.string,
            listen: info.listen.map { Status.Listen(host: $0.host, port: Int64($0.port)) },
            socket: info.socketPath, stateDir: config.stateDirectory,
            records: Int64(counts.records), authors: Int64(counts.authors),
            pending: Int64(counts.pending), heldUntilDue: Int64(counts.heldUntilDue),
            evidence: Int64(counts.evidence), accounts: Int64(accounts),
            peers: Int64(info.peers.count), recordsReceived: Int64(info.recordsReceived),
            sync: Status.Sync(bodiesReceived: Int64(info.recordsReceived), duplicateBodies: Int64(info.duplicateBodies),
                              idsAnnounced: Int64(info.idsAnnounced)),
            discovery: info.discovery.description, mdnsName: info.discoveryName,
            uptime: Int64((config.now() - min(config.now(), info.startedAt)) / 1000),
            health: problems.isEmpty ? "ok" : "degraded", problems: problems,
            storage: info.storage.map(Self.storageStatus),
            networkWorkBits: Int64(replica.settings.accountWork.bits),
            signupWorkMillis: Int64((signupWorkSeconds() * 1000).rounded()),
            network: info.network.map(Self.networkStatus),
            hub: Status.Hub(isHub: info.isHub, linked: Int64(info.peers.filter(\.hub).count), held: Int64(info.heldInstances)),
            browseDomains: info.browseDomains)
        status.campus = statusCampus()
        return status
    }
}

extension Node {
    /// `status.network` (docs/API.md): interfaces in name order.
    static func networkStatus(_ n: NetworkStatus) -> Status.Network {
        Status.Network(interfaces: n.interfaces.keys.sorted().map { Status.NetworkInterface(name: $0, addresses: n.interfaces[$0] ?? []) },
                       changedAt: n.changedAt.map { Int64(clamping: $0) }, changes: Int64(n.changes))
    }

    /// `status.storage` (docs/API.md).
    static func storageStatus(_ s: StorageStatus) -> Status.Storage {
        Status.Storage(accounts: Int64(s.accounts), bytes: s.bytes, maxAccounts: Int64(s.maxAccounts), maxBytes: s.maxBytes,
                       declinedAuthors: Int64(s.declinedAuthors), declinedRecords: Int64(s.declinedRecords), degraded: s.degraded)
    }

    /// What `status.problems` and `doctor` say while the storage budget degrades the node.
    static func storageProblem(_ s: StorageStatus) -> String {
        "the storage budget is full (\(s.accounts) of \(s.maxAccounts) foreign accounts, \(s.bytes >> 20) of \(s.maxBytes >> 20) MiB): "
            + "\(s.declinedRecords) records of strangers' accounts were not stored; own accounts, partners, nearby and held accounts are kept"
    }
}

// MARK: The API's values (docs/API.md, APITypes.swift)

func apiCard(_ s: CardState) -> Card {
    let c = s.card
    var conflicts: [String: [JSON]] = [:]
    for (field, values) in s.conflicts {
        conflicts[field.description] = values.map { fieldValueJSON(field, $0) }
    }
    let photo = c.mainPhoto.map(apiPhoto)
    var card = Card(id: s.author.id, name: c.name, role: c.role?.rawValue, bio: c.bio, courses: c.courses ?? [],
                    wage: c.wage.map { Int64(clamping: $0) }, budget: c.budget.map { Int64(clamping: $0) },
                    availability: c.availability, photo: photo, conflicts: conflicts, forked: s.forked,
                    updatedAt: Int64(clamping: s.updatedAt))
    card.photos = (c.photos ?? []).map(apiPhoto)
    apiCardFields(c, into: &card)
    return card
}

/// A losing register value, shown in the field's own type.
func fieldValueJSON(_ field: ProfileCard.Field, _ value: [UInt8]) -> JSON {
    guard let card = try? ProfileCard(fieldValues: [(field.rawValue, value)]) else { return .null }
    switch field {
    case .name: return card.name.map(JSON.string) ?? .null
    case .role: return card.role.map { .string($0.rawValue) } ?? .null
    case .bio: return card.bio.map(JSON.string) ?? .null
    case .courses: return .array((card.courses ?? []).map(JSON.string))
    case .wage: return card.wage.map { .int(Int64(clamping: $0)) } ?? .null
    case .budget: return card.budget.map { .int(Int64(clamping: $0)) } ?? .null
    case .availability: return card.availability.map(JSON.string) ?? .null
    case .photo: return .array((card.photos ?? []).map { .string(Hex.encode($0.hash)) })
    case .slots: return card.slots.map { .string($0.description) } ?? .null
    case .gender: return card.gender.map(JSON.string) ?? .null
    case .languages: return .array((card.languages ?? []).map(JSON.string))
    case .area: return card.area.map(JSON.string) ?? .null
    case .age: return (card.age ?? nil).map { .int(Int64($0)) } ?? .null
    case .sign: return (card.sign ?? nil).map { .string($0.description) } ?? .null
    case .preferences:
        return (try? JSONValueEncoder().encode(card.preferences.flatMap(apiPreferences) ?? CardPreferences())) ?? .null
    case .paused: return card.paused.map(JSON.bool) ?? .null
    case .membership: return card.membership.map { .string($0.domain) } ?? .null
    }
}

func apiMessage(_ m: PairView.Message, me: PublicKey) -> Message {
    Message(id: Hex.encode(m.recordID), from: m.author.id, text: m.text, sentAt: Int64(clamping: m.timestamp), mine: m.author == me)
}

func apiPeer(_ p: PeerInfo) -> Peer {
    Peer(node: p.node, address: p.address, via: p.via, since: Int64(clamping: p.since), hub: p.hub)
}

