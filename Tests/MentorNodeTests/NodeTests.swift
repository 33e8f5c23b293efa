import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// A node on a temp state directory with a fixed clock; callers are fake Unix users.
final class TestNode {
    let dir: String
    let node: Node
    let events = EventLog()
    /// What `status`, `peers` and `doctor` read as the daemon's facts; a test may change them.
    let runtime = SettableRuntime()
    /// The node's monotonic clock (the login back-off), moved by the test.
    let clock = ManualClock()

    /// The wall clock of the node and its replica (a second per reading), moved by the test.
    let wall = TestClock()

    init(domains: [String] = [], workBits: Int = 0, configure: (inout NodeConfig) -> Void = { _ in }) throws {
        dir = NSTemporaryDirectory() + "mm-node-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        node = try Self.startNode(dir: dir, wall: wall, clock: clock, events: events, runtime: runtime, domains: domains,
                                  workBits: workBits, configure: configure)
    }

    /// A second node over `other`'s state directory and replica file, its clock going on from
    /// `other`'s: the daemon restarted (the directory stays for `other` to remove).
    init(reopening other: TestNode, configure: (inout NodeConfig) -> Void = { _ in }) throws {
        dir = other.dir
        keepDirectory = true
        wall.set(other.wall.tick())
        node = try Self.startNode(dir: dir, wall: wall, clock: clock, events: events, runtime: runtime, configure: configure)
    }

    private static func startNode(dir: String, wall: TestClock, clock: ManualClock, events: EventLog, runtime: SettableRuntime,
                                  domains: [String] = [], workBits: Int = 0,
                                  configure: (inout NodeConfig) -> Void = { _ in }) throws -> Node {
        var settings = Replica.Settings()
        settings.now = { wall.tick() }
        settings.accountWork = AccountWork.Requirement(bits: workBits, network: .default)
        let replica = try Replica(path: dir + "/replica.db", settings: settings)
        var config = NodeConfig(stateDirectory: dir, emailDomains: domains, passphraseCost: .testing, now: { wall.tick() })
        config.clock = { clock.now }
        configure(&config)
        let node = Node(config: config, replica: replica, nodeKeys: SigningKeyPair.generate(), notifications: events, runtime: runtime)
        try node.start()
        return node
    }

    private var keepDirectory = false

    deinit { if !keepDirectory { try? FileManager.default.removeItem(atPath: dir) } }

    @discardableResult
    func call(_ uid: UInt32, _ method: String, _ params: [String: JSON] = [:], connection: UInt64 = 1) throws(RPCError) -> JSON {
        try node.handle(method, params, caller: Requester(uid: uid, connection: connection)).get()
    }

    func error(_ uid: UInt32, _ method: String, _ params: [String: JSON] = [:]) -> RPCError? {
        if case .failure(let e) = node.handle(method, params, caller: Requester(uid: uid, connection: 1)) { return e }
        return nil
    }
}

final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var t: UInt64 = 1_800_000_000_000
    func tick() -> UInt64 { lock.lock(); defer { lock.unlock() }; t += 1000; return t }
    func advance(days: UInt64) { lock.lock(); t += days * 86_400_000; lock.unlock() }
    /// Moves the clock to `time` (a restarted node goes on from where the other one was).
    func set(_ time: UInt64) { lock.lock(); t = time; lock.unlock() }
}

/// Results and counters shared with threads and tasks of a test (all under one lock).
final class ResultLog: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [UInt32: Result<JSON, RPCError>] = [:]
    private var noted: [Int] = []
    private var running = 0
    private var most = 0
    private var finished = 0
    func append(_ uid: UInt32, _ r: Result<JSON, RPCError>) { lock.lock(); results[uid] = r; lock.unlock() }
    func result(_ uid: UInt32) -> Result<JSON, RPCError>? { lock.lock(); defer { lock.unlock() }; return results[uid] }
    func note(_ i: Int) { lock.lock(); noted.append(i); lock.unlock() }
    var notes: [Int] { lock.lock(); defer { lock.unlock() }; return noted }
    func enterRun() { lock.lock(); running += 1; most = max(most, running); lock.unlock() }
    func leaveRun() { lock.lock(); running -= 1; finished += 1; lock.unlock() }
    var runs: Int { lock.lock(); defer { lock.unlock() }; return finished }
    var mostAtOnce: Int { lock.lock(); defer { lock.unlock() }; return most }
}

/// The node's notifications, by connection (its `NotificationSink`; every subscription granted).
final class EventLog: NotificationSink, @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(UInt64, RPCNotification)] = []
    func append(_ c: UInt64, _ n: RPCNotification) { lock.lock(); items.append((c, n)); lock.unlock() }
    var all: [(UInt64, RPCNotification)] { lock.lock(); defer { lock.unlock() }; return items }
    func deliver(_ notification: RPCNotification, to connection: UInt64) { append(connection, notification) }
    func claimSubscription(_ connection: UInt64) -> Bool { true }
}

/// Daemon facts a test sets (`RuntimeFacts`).
final class SettableRuntime: RuntimeFacts, @unchecked Sendable {
    private let lock = NSLock()
    private var current = NoRuntime().runtimeInfo()
    var info: RuntimeInfo {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
    func runtimeInfo() -> RuntimeInfo { info }
    /// The network the node's link offers travel on (`LinkBoard`); nil: none.
    var board: LinkBoard? {
        get { lock.withLock { joined } }
        set { lock.withLock { joined = newValue } }
    }
    private var joined: LinkBoard?
    let id = UUID()
    func offerLink(_ offer: LinkOffer?) { board?.set(offer, from: id) }
    func linkOffers(codeID: UInt16) -> [LinkOffer] { board?.offers(codeID: codeID, except: id) ?? [] }
}

/// Test nodes "on one network": each one's link offer reaches the others.
final class LinkBoard: @unchecked Sendable {
    private let lock = NSLock()
    private var offers: [UUID: LinkOffer] = [:]
    func set(_ offer: LinkOffer?, from node: UUID) { lock.withLock { offers[node] = offer } }
    func offers(codeID: UInt16, except node: UUID) -> [LinkOffer] {
        lock.withLock { offers.filter { $0.key != node && $0.value.codeID == codeID }.map(\.value) }
    }
}

@Suite struct NodeTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003

    /// Signup makes the account's first record a card carrying the network's proof of work,
    /// searched for off the node's queue (through `respond`, as the daemon calls it) — and the
    /// node's queue answers other requests meanwhile.
    @Test func signupWritesACardWithTheNetworksProofOfWorkAsTheFirstRecord() async throws {
        let t = try TestNode(workBits: 16)
        let caller = Requester(uid: ana, connection: 1)
        let info = try await t.node.respond("account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"], caller: caller).get()
        guard case .exact(let key)? = try? AccountID.parse(info["id"]?.stringValue ?? "") else {
            Issue.record("signup gave no account ID: \(info)"); return
        }
        let first = try #require(try t.node.replica.records(of: key, seqs: 1...1).first)
        let record = try VerifiedRecord(first).record
        #expect(record.type == .profile)
        let nonce = try #require(ProfileCard.workNonce(inBody: record.body))
        #expect(AccountWork.bits(account: key, nonce: nonce, network: AccountWork.networkID(.default)) >= 16)
        #expect(AccountWork.refusal(of: record, requirement: t.node.replica.settings.accountWork) == nil)
        // The work is no register of the card: the profile shows name and role only.
        let card = try #require(try t.node.replica.card(of: key))
        #expect(card.card.work == nil && card.card.name == "Ana")
        // Later edits carry no work and are applied as usual.
        try t.call(ana, "profile.set", ["bio": "hello"])
        let second = try #require(try t.node.replica.records(of: key, seqs: 2...2).first)
        #expect(ProfileCard.workNonce(inBody: try VerifiedRecord(second).record.body) == nil)
        #expect(t.node.workGate.peak == 1)
    }

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String, _ role: String, courses: [String]) throws -> String {
        let info = try t.call(uid, "account.signup", ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": .string(role)])
        try t.call(uid, "profile.set", ["courses": .array(courses.map(JSON.string))])
        return info["id"]?.stringValue ?? ""
    }

    @Test func signupCreatesOneAccountPerUserWithA0600KeyAndACard() throws {
        let t = try TestNode()
        let info = try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(info["id"]?.stringValue?.hasPrefix("mm1") == true)
        #expect(info["unlocked"] == true && info["protected"] == false)
        let mode = try FileManager.default.attributesOfItem(atPath: t.dir + "/accounts/\(ana).key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(t.error(ana, "account.signup", ["email": "a2@uni.edu", "name": "Ana", "role": "student"])?.code == -32003)
        #expect(try t.call(ana, "account.whoami")["name"] == "Ana")
        #expect(t.error(ben, "account.whoami")?.code == -32001)
    }

    @Test func emailDomainsAreEnforcedAndNothingIsLeftBehindOnRefusal() throws {
        let t = try TestNode(domains: ["uni.edu"])
        let e = t.error(ana, "account.signup", ["email": "ana@gmail.com", "name": "Ana", "role": "student"])
        #expect(e?.code == -32007 && e?.message.contains("uni.edu") == true)
        #expect(!FileManager.default.fileExists(atPath: t.dir + "/accounts/\(ana).key"))
        #expect(try t.call(ana, "account.signup", ["email": "ana@cs.uni.edu", "name": "Ana", "role": "student"])["id"] != nil)
        #expect(t.error(ben, "account.signup", ["email": "not-an-address", "name": "B", "role": "tutor"])?.code == -32007)
        #expect(t.error(ben, "account.signup", ["email": "b@uni.edu", "name": "B", "role": "wizard"])?.code == -32007)
        #expect(t.error(ben, "account.signup", ["email": "b@uni.edu", "name": "B", "role": "tutor", "nmae": "x"])?.code == -32602)
    }

    /// SIGHUP's reload replaces the domains sign-up accepts; the start configuration, which
    /// key work reads off the node's queue, is not written (it is a `let`: no data race).
    @Test func reloadedEmailDomainsApplyToTheNextSignUpWhileAPassphraseSignUpRuns() throws {
        let t = try TestNode(domains: ["uni.edu"])
        let keyWork = DispatchGroup(), node = t.node
        DispatchQueue.global().async(group: keyWork) {   // Argon2id off the queue, during the reload
            _ = node.handle("account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor", "passphrase": "b"],
                            caller: Requester(uid: ben, connection: 2))
        }
        t.node.reload(emailDomains: ["other.edu"])
        keyWork.wait()
        let refused = t.error(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(refused?.code == -32007 && refused?.message.contains("other.edu") == true, "\(String(describing: refused))")
        #expect(try t.call(ana, "account.signup", ["email": "ana@other.edu", "name": "Ana", "role": "student"])["id"] != nil)
        #expect(t.node.config.emailDomains == ["uni.edu"], "the start configuration stays as it was")
    }

    @Test func passphraseAccountLocksOnLogoutAndUnlocksOnlyWithTheRightPassphrase() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "correct horse"])
        #expect(try t.call(ana, "account.whoami")["protected"] == true)
        try t.call(ana, "account.logout")
        #expect(t.error(ana, "profile.set", ["bio": "x"])?.code == -32002)
        #expect(t.error(ana, "account.login", ["passphrase": "wrong"])?.code == -32009)
        #expect(t.error(ana, "account.login")?.code == -32009)
        #expect(try t.call(ana, "account.login", ["passphrase": "correct horse"])["unlocked"] == true)
        #expect(try t.call(ana, "profile.set", ["bio": "back"])["bio"] == "back")
    }

    @Test func repeatedWrongPassphrasesAreSlowedDown() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "right"])
        try t.call(ana, "account.logout")
        #expect(t.error(ana, "account.login", ["passphrase": "wrong1"])?.message == "wrong passphrase; try again")
        #expect(t.error(ana, "account.login", ["passphrase": "wrong2"])?.code == -32009)
        // Now even the right passphrase must wait.
        let throttled = t.error(ana, "account.login", ["passphrase": "right"])
        #expect(throttled?.code == -32009 && throttled?.message.contains("try again in 1 s") == true, "\(String(describing: throttled))")
        // The back-off is 1 s: still refused a millisecond before it ends, served at its end.
        t.clock.advance(.milliseconds(999))
        #expect(t.error(ana, "account.login", ["passphrase": "right"])?.message.contains("try again in") == true)
        t.clock.advance(.milliseconds(1))
        #expect(try t.call(ana, "account.login", ["passphrase": "right"])["unlocked"] == true)
        // Another user is not slowed down by Ana's mistakes.
        try t.call(ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor", "passphrase": "b"])
        #expect(try t.call(ben, "account.whoami")["protected"] == true)
    }

    /// The back-off is reserved before Argon2id: while one login of Ana's waits for (or holds)
    /// the passphrase gate, her other attempts are refused without a check, and a signup for an
    /// account that exists never reaches the gate; Ben's login waits its turn (queued, not refused).
    @Test func aLoginWaitingForThePassphraseGateHoldsTheUsersPlaceSoParallelAttemptsAreNotChecked() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "right"])
        try t.call(ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor", "passphrase": "b"])
        try t.call(ana, "account.logout")
        try t.call(ben, "account.logout")
        let node = t.node
        let (ana, ben) = (self.ana, self.ben)
        // Hold the gate's only slot, as a running Argon2id would.
        node.passphraseGate.wait()
        let results = ResultLog()
        let done = DispatchGroup()
        for (uid, passphrase) in [(ana, "wrong"), (ben, "b")] {
            done.enter()
            Thread.detachNewThread {
                results.append(uid, node.handle("account.login", ["passphrase": .string(passphrase)], caller: Requester(uid: uid, connection: 9)))
                done.leave()
            }
        }
        let deadline = Date().addingTimeInterval(5)
        while node.passphraseGate.load.waiting < 2 && Date() < deadline { usleep(1000) }
        #expect(node.passphraseGate.load.waiting == 2, "both logins wait for the gate")
        // Ana's second attempt, on another thread: refused at once, or (the bug) queued behind the gate.
        let secondDone = DispatchGroup()
        secondDone.enter()
        Thread.detachNewThread {
            results.append(0, node.handle("account.login", ["passphrase": "right"], caller: Requester(uid: ana, connection: 10)))
            secondDone.leave()
        }
        let refusedAtOnce = secondDone.wait(timeout: .now() + 2) == .success
        #expect(refusedAtOnce, "Ana's second login must be refused, not wait for the gate behind her first")
        let second: RPCError? = results.result(0).flatMap { if case .failure(let e) = $0 { e } else { nil } }
        #expect(second?.code == -32010 && second?.message.contains("being checked already") == true, "\(String(describing: second))")
        let existing = t.error(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "x"])
        #expect(existing?.code == -32003, "a signup for an existing account is refused before the gate")
        #expect(t.error(cy, "account.signup", ["email": "cy@elsewhere", "name": "Cy", "role": "student", "passphrase": "x"])?.code == -32007,
                "a bad e-mail is refused before the gate")
        node.passphraseGate.leave()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(results.result(ana).flatMap { if case .failure(let e) = $0 { e.message } else { nil } } == "wrong passphrase; try again")
        #expect(results.result(ben).flatMap { try? $0.get()["unlocked"] } == true)
        #expect(node.passphraseGate.peak == 1 && node.passphraseGate.load.running == 0)
        // The first mistake is free: Ana's right passphrase is checked now.
        #expect(try t.call(ana, "account.login", ["passphrase": "right"])["unlocked"] == true)
    }

    @Test func thePassphraseGateAdmitsAtMostItsSlotsAndTheOthersInArrivalOrder() async {
        let gate = PassphraseGate(slots: 2)
        let order = ResultLog()
        for i in 1...5 { gate.enter { order.note(i) } }
        #expect(order.notes == [1, 2] && gate.load == (2, 3))
        gate.leave()
        #expect(order.notes == [1, 2, 3])
        gate.leave()
        gate.leave()
        #expect(order.notes == [1, 2, 3, 4, 5] && gate.load == (2, 0))
        gate.leave()
        gate.leave()
        #expect(gate.load == (0, 0) && gate.peak == 2)

        // Under load, from many tasks at once: never more than one inside a one-slot gate.
        let single = PassphraseGate(slots: 1)
        let inside = ResultLog()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await single.enter()
                    inside.enterRun()
                    try? await Task.sleep(for: .milliseconds(2))
                    inside.leaveRun()
                    single.leave()
                }
            }
        }
        #expect(inside.runs == 20 && inside.mostAtOnce == 1 && single.peak == 1)
    }

    @Test func profileSetNormalizesCoursesRefusesOverLimitValuesAndStoresPhotos() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student", courses: [])
        let card = try t.call(ana, "profile.set", ["courses": ["cs  490", "CS 490", "math 221"], "budget": 20])
        #expect(card["courses"] == ["CS 490", "MATH 221"] && card["budget"] == 20)
        #expect(t.error(ana, "profile.set", ["bio": .string(String(repeating: "x", count: 3000))])?.code == -32007)
        #expect(t.error(ana, "profile.set", [:])?.code == -32602)
        #expect(t.error(ana, "profile.set", ["name": .null])?.code == -32602)
        #expect(t.error(ana, "profile.set", ["wage": "lots"])?.code == -32602)
        // A PNG in two chunks.
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 1000)
        let first = try t.call(ana, "blob.put", ["chunk": .string(Data(png.prefix(500)).base64EncodedString()), "done": false])
        let done = try t.call(ana, "blob.put", ["chunk": .string(Data(png.dropFirst(500)).base64EncodedString()),
                                                "upload": first["upload"] ?? .null, "done": true])
        #expect(done["type"] == "image/png" && done["size"] == 1008)
        let withPhoto = try t.call(ana, "profile.set", ["photo": done["hash"] ?? .null])
        #expect(withPhoto["photo"]?["hash"] == done["hash"])
        let back = try t.call(ana, "blob.get", ["hash": done["hash"] ?? .null])
        #expect(Data(base64Encoded: back["data"]?.stringValue ?? "") == Data(png))
        // Not an image: refused by content.
        #expect(t.error(ana, "blob.put", ["chunk": .string(Data("<svg/>".utf8).base64EncodedString()), "done": true])?.code == -32007)
        #expect(try t.call(ana, "profile.set", ["photo": .null])["photo"] == .null)
    }

    @Test func anUploadIsContinuedOnlyByTheCallerThatStartedIt() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student", courses: [])
        _ = try signup(t, ben, "Ben", "tutor", courses: [])
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 1000)
        let first = try t.call(ana, "blob.put", ["chunk": .string(Data(png.prefix(500)).base64EncodedString()), "done": false])
        let rest: [String: JSON] = ["chunk": .string(Data(png.dropFirst(500)).base64EncodedString()),
                                    "upload": first["upload"] ?? .null, "done": true]
        // Ben, another Unix user, holding Ana's token: refused, and Ana's upload is untouched.
        #expect(t.error(ben, "blob.put", rest)?.code == RPCError.Code.notFound.rawValue)
        let done = try t.call(ana, "blob.put", rest)
        #expect(done["type"] == "image/png" && done["size"] == 1008)
    }

    @Test func theStoryOnOneNodeFeedLikeMatchChatUnmatch() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student", courses: ["CS 490"])
        let benID = try signup(t, ben, "Ben", "tutor", courses: ["CS 490", "MATH 221"])
        _ = try signup(t, cy, "Cy", "tutor", courses: ["ART 100"])
        try t.call(ana, "subscribe", ["events": ["match", "message", "unmatch"]], connection: 10)
        try t.call(ben, "subscribe", ["events": ["match", "message", "unmatch"]], connection: 20)

        let feed = try t.call(ana, "feed")["cards"]?.arrayValue ?? []
        #expect(feed.first?["id"]?.stringValue == benID)              // shared course ranks first
        #expect(feed.first?["sharedCourses"] == ["CS 490"])
        #expect(try t.call(ana, "feed", ["course": "cs 490"])["cards"]?.arrayValue?.count == 1)
        #expect(t.error(ana, "chat.send", ["id": .string(benID), "text": "hi"])?.code == -32006)

        #expect(try t.call(ana, "like", ["id": .string(String(benID.prefix(12)))])["matched"] == false)
        #expect(try t.call(ben, "like", ["id": .string(anaID)])["matched"] == true)
        #expect(t.events.all.filter { $0.1.method == "event.match" }.map(\.0).sorted() == [10, 20])
        #expect(try t.call(ana, "feed")["cards"]?.arrayValue?.contains { $0["id"]?.stringValue == benID } == false)

        let sent = try t.call(ana, "chat.send", ["id": .string(benID), "text": "Can we meet Tuesday?"])
        #expect(sent["mine"] == true)
        try t.call(ben, "chat.send", ["id": .string(anaID), "text": "Yes, 3pm"])
        let history = try t.call(ben, "chat.history", ["id": .string(anaID)])["messages"]?.arrayValue ?? []
        #expect(history.map { $0["text"]?.stringValue } == ["Can we meet Tuesday?", "Yes, 3pm"])
        #expect(t.events.all.contains { $0.0 == 20 && $0.1.method == "event.message" && $0.1.params["message"]?["text"] == "Can we meet Tuesday?" })
        #expect(try t.call(ana, "matches")["matches"]?.arrayValue?.first?["messages"] == 2)

        try t.call(ben, "unmatch", ["id": .string(anaID)])
        #expect(t.events.all.contains { $0.0 == 10 && $0.1.method == "event.unmatch" })
        #expect(t.error(ana, "chat.send", ["id": .string(benID), "text": "hello?"])?.code == -32006)
        #expect(try t.call(ana, "matches")["matches"]?.arrayValue?.isEmpty == true)
    }

    /// A pass is a note sealed to the account itself (PROTOCOL.md §7.6): one record, which
    /// only the account's devices read.
    @Test func passAndUndoAreNotesToTheAccountAndUndoTakesBackALike() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student", courses: ["CS 490"])
        let benID = try signup(t, ben, "Ben", "tutor", courses: ["CS 490"])
        let records = try t.node.replica.counts().records
        try t.call(ana, "pass", ["id": .string(benID)])
        #expect(try t.node.replica.counts().records == records + 1)       // one note
        #expect(try t.call(ben, "feed")["cards"]?.arrayValue?.count == 1)   // Ben sees nothing of it
        #expect(try t.call(ana, "feed")["cards"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(ana, "undo", ["id": .string(benID)])["undone"] == "pass")
        try t.call(ana, "like", ["id": .string(benID)])
        #expect(try t.call(ana, "undo", ["id": .string(benID)])["undone"] == "like")
        #expect(try t.call(ana, "feed")["cards"]?.arrayValue?.count == 1)
        #expect(t.error(ana, "undo", ["id": .string(benID)])?.code == -32006)
    }

    @Test func idsAreResolvedByPrefixAndBadOnesAreExplained() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student", courses: [])
        let benID = try signup(t, ben, "Ben", "tutor", courses: [])
        #expect(try t.call(ana, "profile.show", ["id": .string(String(benID.prefix(10)))])["name"] == "Ben")
        #expect(t.error(ana, "profile.show", ["id": "mm1qq"])?.code == -32007)       // too short
        var typo = Array(benID); typo[20] = typo[20] == "q" ? "p" : "q"
        #expect(t.error(ana, "profile.show", ["id": .string(String(typo))])?.code == -32007)
        #expect(t.error(ana, "like", ["id": .string(try t.call(ana, "account.whoami")["id"]?.stringValue ?? "")])?.code == -32007)
        #expect(t.error(ana, "no.such.method")?.code == -32601)
    }

}

@Suite struct DoctorCheckTests {
    /// The mDNS check says what is true in each state: right after start ("starting") nothing
    /// is wrong yet, so its fix says to look again rather than to start Avahi; an unavailable
    /// Avahi gets the command that starts it; off (--no-mdns) passes as not needed.
    @Test func doctorsDiscoveryCheckGivesTheFixThatFitsItsState() throws {
        let t = try TestNode()
        func check(_ discovery: DiscoveryStatus) throws -> JSON? {
            t.runtime.info = RuntimeInfo(socketPath: "", listen: nil, discovery: discovery, peers: [], startedAt: 0)
            return try t.call(0, "doctor")["checks"]?.arrayValue?.first { $0["name"]?.stringValue == "mDNS discovery" }
        }
        let starting = try #require(try check(.starting))
        #expect(starting["ok"]?.boolValue == false)
        #expect(starting["fix"]?.stringValue?.contains("again in a moment") == true, "\(starting)")
        #expect(starting["fix"]?.stringValue?.contains("systemctl start avahi-daemon") == false, "\(starting)")
        let unavailable = try #require(try check(.unavailable("Avahi/D-Bus unreachable")))
        #expect(unavailable["fix"]?.stringValue?.contains("systemctl start avahi-daemon") == true, "\(unavailable)")
        let off = try #require(try check(.off))
        #expect(off["ok"]?.boolValue == true && off["fix"] == nil, "\(off)")
    }
}
