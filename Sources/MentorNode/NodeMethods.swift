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
    func dispatch(_ method: String, _ p: Params, _ caller: Requester) throws -> JSON {
        switch method {
        case "account.signup": return try signup(p, caller)
        case "account.login": return try login(p, caller)
        case "account.logout": try p.allow([]); return try logout(caller)
        case "account.whoami": try p.allow([]); return try accountInfo(caller.uid)
        case "profile.show": return try profileShow(p, caller)
        case "profile.set": return try profileSet(p, caller)
        case "blob.put": return try blobPut(p, caller)
        case "blob.get": return try blobGet(p, caller)
        case "feed": return try feed(p, caller)
        case "like": return try like(p, caller)
        case "pass": return try pass(p, caller)
        case "undo": return try undo(p, caller)
        case "matches": try p.allow([]); return try matches(caller)
        case "unmatch": return try unmatch(p, caller)
        case "chat.send": return try chatSend(p, caller)
        case "chat.history": return try chatHistory(p, caller)
        case "subscribe": return try subscribe(p, caller)
        case "peers": try p.allow([]); return peers()
        case "status": try p.allow([]); return try status()
        case "doctor": try p.allow([]); return try doctor(caller)
        case "replica.digest": try p.allow([]); return try replicaDigest()
        default:
            throw RPCError(.methodNotFound, "unknown method \"\(method)\"; see docs/API.md for the list")
        }
    }

    // MARK: Account

    struct SignupRequest {
        var email: String
        var name: String
        var role: ProfileCard.Role
        var passphrase: String?
    }

    /// Every check of a signup that costs nothing: run before Argon2id (`admitPassphraseCheck`)
    /// and again by `signup` itself.
    func signupRequest(_ p: Params, _ caller: Requester) throws -> SignupRequest {
        try p.allow(["email", "name", "role", "passphrase"])
        let email = try p.string("email").trimmingCharacters(in: .whitespaces)
        let name = try p.string("name").trimmingCharacters(in: .whitespaces)
        let roleText = try p.string("role")
        let passphrase = try p.optionalString("passphrase")
        guard try replica.nodeAccount(uid: caller.uid) == nil else {
            throw RPCError(.alreadyExists, "you already have an account on this node (one per user); see `mentormate whoami`")
        }
        guard let role = ProfileCard.Role(rawValue: roleText) else {
            throw RPCError(.invalidValue, "role must be student or tutor, not \"\(roleText)\"")
        }
        try checkEmail(email)
        guard !name.isEmpty else { throw RPCError(.invalidValue, "the name is empty; give the name others will see") }
        if let passphrase, passphrase.isEmpty { throw RPCError(.invalidValue, "the passphrase is empty") }
        return SignupRequest(email: email, name: name, role: role, passphrase: passphrase)
    }

    func signup(_ p: Params, _ caller: Requester) throws -> JSON {
        let request = try signupRequest(p, caller)
        let (email, name, role, passphrase) = (request.email, request.name, request.role, request.passphrase)

        // The key and its proof of work were made off the node's queue (`prepareKey`, with
        // Argon2id behind its gate when there is a passphrase, then `proveWork`): neither
        // Argon2id nor the work ever runs here.
        let path = config.keyPath(uid: caller.uid)
        guard let prepared = preparedKey, let keys = prepared.keys, let temporary = prepared.temporaryPath else {
            throw RPCError(.internalError, "the new key was not prepared; sign up again")
        }
        guard rename(temporary, path) == 0 else {
            throw RPCError(.internalError, "could not put the account key in place at \(path)")
        }
        do {
            try replica.addNodeAccount(NodeAccount(uid: caller.uid, account: keys.publicKey.key, email: email,
                                                   protected: passphrase != nil, created: config.now()))
            try unlock(uid: caller.uid, keys: keys)
            localKeys.insert(keys.publicKey.key)
            // The account's first record: its card, carrying the proof of work (PROTOCOL.md §6.1).
            try write(caller.uid) { w, now throws(RecordError) in
                try w.profile(ProfileCard(name: name, role: role, work: prepared.work), at: now)
            }
        } catch {
            // Leave nothing half-made: no row, no key.
            writers[caller.uid] = nil
            localKeys.remove(keys.publicKey.key)
            try? replica.removeNodeAccount(uid: caller.uid)
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        logger.info("account created", ["uid": "\(caller.uid)", "account": keys.publicKey.key.shortID])
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

    func login(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["passphrase"])
        guard let account = try replica.nodeAccount(uid: caller.uid) else { throw noAccount() }
        loggedOut.remove(caller.uid)
        if writers[caller.uid] == nil {
            let passphrase = try p.optionalString("passphrase")
            if account.protected && passphrase == nil {
                throw RPCError(.wrongPassphrase, "your key is protected: give the passphrase (`mentormate login` asks for it)")
            }
            if account.protected && preparedKey?.keys == nil {
                // Argon2id never runs on the node's queue; an empty passphrase cannot be right
                // (signup refuses one), so it is refused without a check.
                if passphrase?.isEmpty == true {
                    throw RPCError(.wrongPassphrase, "the passphrase is empty; give the one you chose at sign-up")
                }
                throw RPCError(.locked, "your account was locked while the passphrase was checked; run `mentormate login` again")
            }
            do {
                let keys: SigningKeyPair
                if account.protected, let prepared = preparedKey?.keys {
                    keys = prepared   // decrypted off the queue
                } else {
                    keys = try KeyFile.read(from: config.keyPath(uid: caller.uid))
                }
                try unlock(uid: caller.uid, keys: keys)
                loginFailures[caller.uid] = nil
            } catch let e as CryptoError where e.code == .wrongPassphrase {
                throw RPCError(.wrongPassphrase, "wrong passphrase; try again")
            } catch let e as CryptoError {
                throw RPCError(.internalError, "could not read your account key: \(e.message)")
            }
        }
        return try accountInfo(caller.uid)
    }

    func logout(_ caller: Requester) throws -> JSON {
        guard let writer = writers[caller.uid] else {
            guard try replica.nodeAccount(uid: caller.uid) != nil else { throw noAccount() }
            return try accountInfo(caller.uid)
        }
        try replica.lock(writer.author)
        writers[caller.uid] = nil
        loggedOut.insert(caller.uid)
        return try accountInfo(caller.uid)
    }

    func accountInfo(_ uid: UInt32) throws -> JSON {
        guard let a = try replica.nodeAccount(uid: uid) else { throw noAccount() }
        let card = try replica.card(of: a.account)
        return ["id": .string(a.account.id), "name": card?.card.name.map(JSON.string) ?? .null,
                "email": .string(a.email), "role": card?.card.role.map { .string($0.rawValue) } ?? .null,
                "protected": .bool(a.protected), "unlocked": .bool(writers[uid] != nil)]
    }

    /// The caller's account key (whether or not it is unlocked).
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
                           data: ["matches": .array(keys.map { .string($0.id) })])
        }
    }

    func profileShow(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id"])
        let key = try p.optionalString("id").map(resolve) ?? me(caller)
        guard let state = try replica.card(of: key) else {
            throw RPCError(.notFound, "\(key.shortID)… has no profile card on this node yet")
        }
        return cardJSON(state)
    }

    func profileSet(_ p: Params, _ caller: Requester) throws -> JSON {
        let fields: Set<String> = ["name", "bio", "courses", "wage", "budget", "availability", "photo"]
        try p.allow(fields)
        // A field set to null changes nothing (except photo: null, which removes the photo).
        guard p.values.contains(where: { fields.contains($0.key) && (!$0.value.isNull || $0.key == "photo") }) else {
            throw RPCError(.invalidParams, "profile.set needs at least one field to change (\(fields.sorted().joined(separator: ", ")))")
        }
        var card = ProfileCard()
        card.name = try p.optionalString("name").map { $0.trimmingCharacters(in: .whitespaces) }
        if card.name?.isEmpty == true {
            throw RPCError(.invalidValue, "the name is empty; give the name others will see")
        }
        card.bio = try p.optionalString("bio")
        card.availability = try p.optionalString("availability")
        card.courses = try p.optionalStrings("courses").map { list in
            var seen = Set<[UInt8]>()
            return list.map(ProfileCard.normalizeCourse).filter { !$0.isEmpty && seen.insert(Array($0.utf8)).inserted }
        }
        if let bad = card.courses?.first(where: { $0.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } }) {
            throw RPCError(.invalidValue, "the course \(bad.debugDescription) contains a control character; type it with letters, digits and spaces only")
        }
        for (name, keyPath) in [("wage", \ProfileCard.wage), ("budget", \ProfileCard.budget)] {
            if let v = try p.optionalInt(name) {
                guard v >= 0 else { throw RPCError(.invalidValue, "\(name) must be 0 or more") }
                card[keyPath: keyPath] = UInt64(v)
            }
        }
        if p.has("photo") {
            if let hex = try p.optionalString("photo") {
                guard let hash = Hex.decode(hex), hash.count == 32, let blob = try replica.blob(hash: hash) else {
                    throw RPCError(.notFound, "no uploaded photo \(hex.prefix(16)); upload it first with blob.put (the client's --photo does)")
                }
                card.photo = .some(blob.ref)
            } else {
                card.photo = .some(nil)
            }
        }
        let me = try me(caller)
        try write(caller.uid) { w, now throws(RecordError) in try w.profile(card, at: now) }
        guard let state = try replica.card(of: me) else { throw RPCError(.internalError, "card missing after write") }
        return cardJSON(state)
    }

    static let maxChunk = 512 * 1024

    func blobPut(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["chunk", "upload", "done"])
        _ = try me(caller)
        guard let chunk = Data(base64Encoded: try p.string("chunk")) else {
            throw RPCError(.invalidParams, "blob.put: \"chunk\" is not base64")
        }
        guard chunk.count <= Self.maxChunk else {
            throw RPCError(.invalidValue, "a chunk may hold at most \(Self.maxChunk) bytes; send the file in several chunks")
        }
        let done = try p.bool("done")
        var token = try p.optionalString("upload") ?? Hex.encode(SecureRandom.bytes(12))
        if try p.optionalString("upload") != nil {
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
        guard done else { return ["upload": .string(token)] }
        let data = uploads[token]?.data ?? []
        uploads[token] = nil
        token = ""
        do {
            let ref = try replica.putBlob(data, uploadedAt: config.now())
            return ["hash": .string(Hex.encode(ref.hash)), "size": .int(Int64(ref.size)), "type": .string(ref.format.mimeType)]
        } catch {
            if let s = error.storage { throw s }
            throw RPCError(.invalidValue, error.message)
        }
    }

    func blobGet(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["hash", "offset", "length"])
        let hex = try p.string("hash")
        guard let hash = Hex.decode(hex), hash.count == 32, let blob = try replica.blob(hash: hash) else {
            throw RPCError(.notFound, "no blob \(hex.prefix(16)) on this node")
        }
        let offset = Int(try p.optionalInt("offset") ?? 0)
        let length = Int(try p.optionalInt("length") ?? Int64(Self.maxChunk))
        guard offset >= 0, offset <= blob.data.count, length > 0, length <= Self.maxChunk else {
            throw RPCError(.invalidParams, "offset must be 0...\(blob.data.count) and length 1...\(Self.maxChunk)")
        }
        let slice = blob.data[offset..<min(blob.data.count, offset + length)]
        return ["data": .string(Data(slice).base64EncodedString()), "size": .int(Int64(blob.data.count)),
                "type": .string(blob.ref.format.mimeType)]
    }

    // MARK: Feed, likes

    func feed(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["course", "limit"])
        let me = try me(caller)
        let limit = Int(try p.optionalInt("limit") ?? 20)
        guard (1...100).contains(limit) else { throw RPCError(.invalidParams, "feed: limit must be 1...100") }
        guard let mine = cards[me], let role = mine.role else {
            throw RPCError(.notAllowed, "your card has no role yet; this should not happen after signup — check `mentormate profile show`")
        }
        var excluded: Set<PublicKey> = [me]
        excluded.formUnion(try replica.passes(of: me))
        for s in try replica.pairSummaries(of: me) where s.iLike || s.matched || s.unmatchedBy != nil { excluded.insert(s.other) }
        let course = try p.optionalString("course").map(ProfileCard.normalizeCourse)
        // A course nobody lists matches nothing.
        let courseFilter: Int32? = course.map { courseIDs[$0] ?? -1 }
        let items = Feed.rank(role: role, courses: mine.courses, excluded: excluded, candidates: cards.values,
                              course: courseFilter, limit: limit)
        let states = Dictionary(uniqueKeysWithValues: try replica.cards(of: items.map(\.key)).map { ($0.author, $0) })
        var out: [JSON] = []
        for item in items {
            guard let state = states[item.key], case .object(var o) = cardJSON(state) else { continue }
            o["sharedCourses"] = .array(item.sharedCourses.map { .string(courseNames[Int($0)]) })
            o["nearby"] = .bool(item.nearby)
            out.append(.object(o))
        }
        return ["cards": .array(out)]
    }

    func target(_ p: Params, _ caller: Requester) throws -> (me: PublicKey, other: PublicKey) {
        let me = try me(caller)
        let other = try resolve(try p.string("id"))
        guard other != me else { throw RPCError(.invalidValue, "that is your own account") }
        return (me, other)
    }

    func like(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id"])
        let (me, other) = try target(p, caller)
        let view = try replica.pairView(account: me, other: other)
        if view.unmatchedBy != nil { throw RPCError(.notAllowed, "this match was ended with unmatch, which is final") }
        if !view.iLike {
            guard cards[other] != nil else { throw RPCError(.notFound, "\(other.shortID)… has no card on this node yet") }
            _ = try replica.removePass(account: me, target: other)
            let seen = try replica.contiguousSeq(of: other)
            try write(caller.uid) { w, now throws(RecordError) in try w.like(other, peerSeq: seen, at: now) }
        }
        let after = try replica.pairView(account: me, other: other)
        return ["id": .string(other.id), "matched": .bool(after.matched)]
    }

    func pass(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id"])
        let (me, other) = try target(p, caller)
        let view = try replica.pairView(account: me, other: other)
        if view.matched { throw RPCError(.notAllowed, "you are matched with \(other.shortID)…; use `mentormate unmatch` to end it") }
        if view.iLike { throw RPCError(.notAllowed, "you liked \(other.shortID)…; run `mentormate undo \(other.shortID)` first") }
        try replica.setPass(account: me, target: other, at: config.now())
        return ["id": .string(other.id)]
    }

    func undo(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id"])
        let (me, other) = try target(p, caller)
        if try replica.removePass(account: me, target: other) { return ["id": .string(other.id), "undone": "pass"] }
        let view = try replica.pairView(account: me, other: other)
        if view.matched { throw RPCError(.notAllowed, "you are matched; use `mentormate unmatch` to end it") }
        guard view.iLike else { throw RPCError(.notAllowed, "there is no like or pass of \(other.shortID)… to undo") }
        // The peer seq says which of their messages this account had seen: those it had not,
        // written against the like being withdrawn, are not shown (PROTOCOL.md section 8.5).
        let seen = try replica.contiguousSeq(of: other)
        try write(caller.uid) { w, now throws(RecordError) in try w.like(other, liked: false, peerSeq: seen, at: now) }
        return ["id": .string(other.id), "undone": "like"]
    }

    func matches(_ caller: Requester) throws -> JSON {
        let me = try me(caller)
        var out: [JSON] = []
        for s in try replica.pairSummaries(of: me).filter(\.matched).sorted(by: { $0.other < $1.other }) {
            let view = try replica.pairView(account: me, other: s.other)
            out.append(["id": .string(s.other.id), "name": names[s.other].map(JSON.string) ?? .null,
                        "messages": .int(Int64(view.messages.count)),
                        "lastMessage": view.messages.last.map { messageJSON($0, me: me) } ?? .null])
        }
        return ["matches": .array(out)]
    }

    func unmatch(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id"])
        let (me, other) = try target(p, caller)
        guard try replica.pairView(account: me, other: other).matched else {
            throw RPCError(.notAllowed, "you are not matched with \(other.shortID)…")
        }
        let seen = try replica.contiguousSeq(of: other)
        try write(caller.uid) { w, now throws(RecordError) in try w.unmatch(other, peerSeq: seen, at: now) }
        return ["id": .string(other.id)]
    }

    // MARK: Chat

    func chatSend(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id", "text"])
        let (me, other) = try target(p, caller)
        let text = try p.string("text")
        guard !text.isEmpty, text.utf8.count <= ChatPayload.maxTextBytes else {
            throw RPCError(.invalidValue, "a message is 1 to \(ChatPayload.maxTextBytes) bytes; this one is \(text.utf8.count)")
        }
        // The summary row, not the whole conversation: sending stays cheap in long chats.
        let pair = try replica.pairSummary(account: me, other: other)
        if pair?.unmatchedBy != nil { throw RPCError(.notAllowed, "this conversation was ended with unmatch") }
        guard pair?.matched == true, let theirLike = try replica.currentLike(account: me, by: other) else {
            throw RPCError(.notAllowed, "you can chat only after you both liked each other")
        }
        // The message names the like it answers, and has applied it (PROTOCOL.md section 8.5).
        let seen = max(try replica.contiguousSeq(of: other), theirLike.seq)
        let sent = try write(caller.uid) { w, now throws(RecordError) in
            try w.chat(to: other, peerSeq: seen, answers: theirLike.recordID, text: text, at: now)
        }
        return messageJSON(PairView.Message(author: me, seq: sent.record.seq, timestamp: sent.record.timestamp,
                                            recordID: sent.id, text: text), me: me)
    }

    func chatHistory(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["id", "limit"])
        let (me, other) = try target(p, caller)
        let limit = Int(try p.optionalInt("limit") ?? 50)
        guard limit >= 1 else { throw RPCError(.invalidParams, "chat.history: limit must be at least 1") }
        let view = try replica.pairView(account: me, other: other)
        return ["messages": .array(view.messages.suffix(limit).map { messageJSON($0, me: me) }),
                "matched": .bool(view.matched), "unmatchedBy": view.unmatchedBy.map { .string($0.id) } ?? .null]
    }

    func subscribe(_ p: Params, _ caller: Requester) throws -> JSON {
        try p.allow(["events"])
        let known: Set<String> = ["match", "message", "unmatch", "peer", "sync"]
        let events = try p.optionalStrings("events") ?? Array(known)
        if let bad = events.first(where: { !known.contains($0) }) {
            throw RPCError(.invalidParams, "unknown event \"\(bad)\"; events are \(known.sorted().joined(separator: ", "))")
        }
        _ = try me(caller)
        guard notifications.claimSubscription(caller.connection) else {
            throw RPCError(.limitReached, "your user already holds the most subscribed connections allowed (api_subscriptions_per_user); close one (such as another `mentormate chat --follow`) and retry")
        }
        subscriptions[caller.connection] = (caller.uid, Set(events))
        return ["events": .array(Set(events).sorted().map(JSON.string))]
    }

    // MARK: Node

    func peers() -> JSON {
        ["peers": .array(runtime.runtimeInfo().peers.map(peerJSON))]
    }

    /// The public digest of the replica (equal on nodes holding the same records) and how many
    /// records it holds.
    func replicaDigest() throws -> JSON {
        let digest = try replica.digest(includePrivate: false)
        let counts = try replica.counts()
        return ["digest": .string(Hex.encode(digest)), "records": .int(Int64(counts.records))]
    }

    func status() throws -> JSON {
        let info = runtime.runtimeInfo()
        let counts = try replica.counts()
        let accounts = try replica.nodeAccounts().count
        var problems: [String] = []
        if counts.pending > 0 { problems.append("\(counts.pending) records wait for missing predecessors") }
        if info.discovery.hasPrefix("unavailable") { problems.append("mDNS discovery is \(info.discovery); `mentormate doctor` says what to fix") }
        if let storage = info.storage, storage.degraded { problems.append(Self.storageProblem(storage)) }
        return [
            "node": .string(nodeKeys.publicKey.key.id), "version": .string(MentorMateVersion.string),
            "listen": info.listen.map { ["host": .string($0.host), "port": .int(Int64($0.port))] } ?? .null,
            "socket": .string(info.socketPath), "stateDir": .string(config.stateDirectory),
            "records": .int(Int64(counts.records)), "authors": .int(Int64(counts.authors)),
            "pending": .int(Int64(counts.pending)), "heldUntilDue": .int(Int64(counts.heldUntilDue)),
            "evidence": .int(Int64(counts.evidence)), "accounts": .int(Int64(accounts)),
            "peers": .int(Int64(info.peers.count)), "recordsReceived": .int(Int64(info.recordsReceived)),
            "sync": ["bodiesReceived": .int(Int64(info.recordsReceived)), "duplicateBodies": .int(Int64(info.duplicateBodies)),
                     "idsAnnounced": .int(Int64(info.idsAnnounced))],
            "discovery": .string(info.discovery),
            "mdnsName": info.discoveryName.map(JSON.string) ?? .null,
            "uptime": .int(Int64((config.now() - min(config.now(), info.startedAt)) / 1000)),
            "health": .string(problems.isEmpty ? "ok" : "degraded"), "problems": .array(problems.map(JSON.string)),
            "storage": info.storage.map(Self.storageJSON) ?? .null,
            "networkWorkBits": .int(Int64(replica.settings.accountWork.bits)),
            "signupWorkMillis": .int(Int64((signupWorkSeconds() * 1000).rounded())),
        ]
    }
}

extension Node {
    /// `status.storage` (docs/API.md).
    static func storageJSON(_ s: StorageStatus) -> JSON {
        ["accounts": .int(Int64(s.accounts)), "bytes": .int(s.bytes), "maxAccounts": .int(Int64(s.maxAccounts)),
         "maxBytes": .int(s.maxBytes), "declinedAuthors": .int(Int64(s.declinedAuthors)),
         "declinedRecords": .int(Int64(s.declinedRecords)), "degraded": .bool(s.degraded)]
    }

    /// What `status.problems` and `doctor` say while the storage budget degrades the node.
    static func storageProblem(_ s: StorageStatus) -> String {
        "the storage budget is full (\(s.accounts) of \(s.maxAccounts) foreign accounts, \(s.bytes >> 20) of \(s.maxBytes >> 20) MiB): "
            + "\(s.declinedRecords) records of strangers' accounts were not stored; own accounts, partners, nearby and held accounts are kept"
    }
}

// MARK: JSON shapes (docs/API.md)

func cardJSON(_ s: CardState) -> JSON {
    let c = s.card
    var conflicts: [String: JSON] = [:]
    for (field, values) in s.conflicts {
        conflicts[field.description] = .array(values.map { fieldValueJSON(field, $0) })
    }
    let photo: JSON
    if case .some(.some(let ref)) = c.photo {
        photo = ["hash": .string(Hex.encode(ref.hash)), "size": .int(Int64(ref.size)), "type": .string(ref.format.mimeType)]
    } else {
        photo = .null
    }
    return [
        "id": .string(s.author.id), "name": c.name.map(JSON.string) ?? .null,
        "role": c.role.map { .string($0.rawValue) } ?? .null, "bio": c.bio.map(JSON.string) ?? .null,
        "courses": .array((c.courses ?? []).map(JSON.string)),
        "wage": c.wage.map { .int(Int64(clamping: $0)) } ?? .null, "budget": c.budget.map { .int(Int64(clamping: $0)) } ?? .null,
        "availability": c.availability.map(JSON.string) ?? .null, "photo": photo,
        "conflicts": .object(conflicts), "forked": .bool(s.forked), "updatedAt": .int(Int64(clamping: s.updatedAt)),
    ]
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
    case .photo:
        if case .some(.some(let ref)) = card.photo { return .string(Hex.encode(ref.hash)) }
        return .null
    }
}

func messageJSON(_ m: PairView.Message, me: PublicKey) -> JSON {
    ["id": .string(Hex.encode(m.recordID)), "from": .string(m.author.id), "text": .string(m.text),
     "sentAt": .int(Int64(clamping: m.timestamp)), "mine": .bool(m.author == me)]
}

func peerJSON(_ p: PeerInfo) -> JSON {
    ["node": .string(p.node), "address": .string(p.address), "via": .string(p.via), "since": .int(Int64(clamping: p.since))]
}
