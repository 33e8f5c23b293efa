import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// One person, many machines, through the node's API (PROTOCOL.md §6.2): signup makes a device
/// key, card edits are signed by it, `account.import` brings the account to a second node with
/// a device of its own, concurrent edits are a conflict and no fork, revocation and leaving.
@Suite struct NodeDeviceTests {
    let ana: UInt32 = 1001

    /// Every record `from` holds of the authors it knows, applied to `to` (one sync, both ways
    /// by calling it twice).
    static func sync(_ from: TestNode, _ to: TestNode) throws {
        var all: [[UInt8]] = []
        for key in try from.node.replica.allAuthorKeys() { all += try from.node.replica.records(of: key, seqs: 1...1_000) }
        _ = try to.node.applyRemote(all)
    }

    @Test func signupMakesADeviceThatSignsCardEditsWithAClock() throws {
        let t = try TestNode()
        let info = try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let device = try #require(info["device"]?.stringValue)
        #expect(device.count == 16 && info["device_state"] == "current" && info["account_key"] == true)
        guard case .exact(let account)? = try? AccountID.parse(info["id"]?.stringValue ?? "") else { Issue.record("no ID"); return }
        // The account chain: the first card (with its proof of work) and the certificate.
        let chain = try t.node.replica.records(of: account, seqs: 1...10).map { try VerifiedRecord($0).record }
        #expect(chain.map(\.type) == [.profile, .device])
        try t.call(ana, "profile.set", ["bio": "first edit"])
        try t.call(ana, "profile.set", ["bio": "second edit", "name": "Ana L"])
        let list = try t.call(ana, "device.list")
        let devices = list["devices"]?.arrayValue ?? []
        #expect(devices.count == 1 && devices.first?["this"] == true && devices.first?["state"] == "current")
        #expect(list["account_key"] == true)
        // The edits are the device's (format version 2), the second supersedes the first and
        // the account's own first card: no conflict anywhere.
        let deviceKey = try #require(try t.node.replica.devices(of: account).first?.device)
        let edits = try t.node.replica.records(of: deviceKey, seqs: 1...10).map { try VerifiedRecord($0).record }
        #expect(edits.count == 1 && edits.first?.account == account && edits.first?.seq == 2)
        #expect(edits.first?.clock[account] == 1)
        let card = try #require(try t.node.replica.card(of: account))
        #expect(card.card.bio == "second edit" && card.card.name == "Ana L" && card.card.role == .student)
        #expect(card.conflicts.isEmpty && !card.forked)
    }

    @Test func anImportedAccountGetsADeviceOfItsOwnAndConcurrentEditsConflictWithoutAFork() throws {
        let lab = try TestNode(), laptop = try TestNode()
        let info = try lab.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let id = try #require(info["id"]?.stringValue)
        let key = try #require(try lab.call(ana, "account.export")["key"]?.stringValue)
        // Not before the laptop's node has the account's records.
        #expect(laptop.error(ana, "account.import", ["key": .string(key), "email": "ana@uni.edu"])?.code == RPCError.Code.notFound.rawValue)
        #expect(laptop.error(ana, "account.import", ["key": "AAEC", "email": "ana@uni.edu"])?.code == RPCError.Code.invalidValue.rawValue)
        try Self.sync(lab, laptop)
        let imported = try laptop.call(ana, "account.import", ["key": .string(key), "email": "ana@uni.edu", "label": "laptop"])
        #expect(imported["id"]?.stringValue == id && imported["device_state"] == "current" && imported["account_key"] == true)
        #expect(imported["device"] != info["device"])

        // Partitioned: both edit the bio at once.
        try lab.call(ana, "profile.set", ["bio": "from the lab"])
        try laptop.call(ana, "profile.set", ["bio": "from the laptop"])
        try Self.sync(lab, laptop)
        try Self.sync(laptop, lab)
        let labCard = try lab.call(ana, "profile.show")
        let laptopCard = try laptop.call(ana, "profile.show")
        #expect(labCard == laptopCard)
        let bios = Set([labCard["bio"]?.stringValue].compactMap { $0 } + (labCard["conflicts"]?["bio"]?.arrayValue ?? []).compactMap(\.stringValue))
        #expect(bios == ["from the lab", "from the laptop"])
        #expect(labCard["forked"] == false)
        #expect(try lab.call(ana, "device.list")["devices"]?.arrayValue?.count == 2)
        // The next edit resolves it everywhere.
        try laptop.call(ana, "profile.set", ["bio": "settled"])
        try Self.sync(laptop, lab)
        let settled = try lab.call(ana, "profile.show")
        #expect(settled["bio"] == "settled" && (settled["conflicts"]?["bio"]?.arrayValue ?? []).isEmpty)
    }

    @Test func aRevokedDeviceSaysSoAndCannotWrite() throws {
        let lab = try TestNode(), laptop = try TestNode()
        _ = try lab.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let key = try #require(try lab.call(ana, "account.export")["key"]?.stringValue)
        try Self.sync(lab, laptop)
        let laptopDevice = try #require(try laptop.call(ana, "account.import", ["key": .string(key), "email": "ana@uni.edu"])["device"]?.stringValue)
        try Self.sync(laptop, lab)
        let revoked = try lab.call(ana, "device.revoke", ["id": .string(String(laptopDevice.prefix(6)))])
        #expect(revoked["state"] == "revoked" && revoked["this"] == false)
        #expect(lab.error(ana, "device.revoke", ["id": .string(laptopDevice)])?.message.contains("revoked already") == true)
        #expect(lab.error(ana, "device.revoke", ["id": "zz"])?.code == RPCError.Code.invalidValue.rawValue)
        try Self.sync(lab, laptop)
        let whoami = try laptop.call(ana, "account.whoami")
        #expect(whoami["device_state"] == "revoked")
        let refused = laptop.error(ana, "profile.set", ["bio": "still here?"])
        #expect(refused?.code == RPCError.Code.notAllowed.rawValue && refused?.message.contains("was revoked") == true)
        // The laptop holds the account key (it imported it) but its device is revoked: it
        // cannot approve a device either.
        let approve = laptop.error(ana, "device.approve", ["code": "qpzry-9x8gf"])
        #expect(approve?.code == RPCError.Code.notAllowed.rawValue && approve?.message.contains("revoked") == true)
    }

    @Test func forgettingTheMachineThatHoldsTheAccountKeyIsRefused() throws {
        let t = try TestNode()
        _ = try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let e = t.error(ana, "account.logout", ["forget": true])
        #expect(e?.code == RPCError.Code.notAllowed.rawValue && e?.message.contains("account export") == true)
        #expect(FileManager.default.fileExists(atPath: t.dir + "/accounts/\(ana).key"))
        #expect(try t.call(ana, "account.whoami")["unlocked"] == true)
    }
}

/// Linking a machine with a code (PROTOCOL.md §13.8), and what the linked device can read and
/// write: the conversation, from either machine; revocation rotating the encryption key.
@Suite struct NodeLinkTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002

    /// Through `respond` (the daemon's path): link and approve do their Argon2id off the queue.
    static func call(_ t: TestNode, _ uid: UInt32, _ method: String, _ params: [String: JSON] = [:]) async throws -> JSON {
        try await t.node.respond(method, params, caller: Requester(uid: uid, connection: 1)).get()
    }

    static func failure(_ t: TestNode, _ uid: UInt32, _ method: String, _ params: [String: JSON] = [:]) async -> RPCError? {
        if case .failure(let e) = await t.node.respond(method, params, caller: Requester(uid: uid, connection: 1)) { return e }
        return nil
    }

    @Test func aMachineLinkedWithACodeReadsAndWritesTheConversationUntilRevoked() async throws {
        let lab = try TestNode(), laptop = try TestNode()
        let lan = LinkBoard()
        lab.runtime.board = lan
        laptop.runtime.board = lan
        _ = try await Self.call(lab, ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        _ = try await Self.call(lab, ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor"])
        let benID = try #require(try lab.call(ben, "account.whoami")["id"]?.stringValue)
        let anaID = try #require(try lab.call(ana, "account.whoami")["id"]?.stringValue)
        // Ben and Ana match and Ben writes, before the laptop exists.
        try lab.call(ben, "like", ["id": .string(anaID)])
        try lab.call(ana, "like", ["id": .string(benID)])
        try lab.call(ben, "chat.send", ["id": .string(anaID), "text": "hi Ana"])

        let start = try await Self.call(laptop, ana, "device.link", ["label": "laptop", "expires": 28_800])
        let code = try #require(start["code"]?.stringValue)
        #expect(try await Self.call(laptop, ana, "device.link.status")["state"] == "waiting")
        // A wrong code: nothing matches, nothing is linked.
        let wrong = await Self.failure(lab, ana, "device.approve", ["code": code == "qqqqq-qqqqq" ? "ppppp-ppppp" : "qqqqq-qqqqq"])
        #expect(wrong?.code == RPCError.Code.notFound.rawValue && wrong?.message.contains("no machine") == true)
        let garbled = await Self.failure(lab, ana, "device.approve", ["code": "hello"])
        #expect(garbled?.code == RPCError.Code.invalidValue.rawValue)
        let preview = try await Self.call(lab, ana, "device.approve", ["code": .string(code)])
        #expect(preview["label"] == "laptop" && preview["expires"] == 28_800 && preview["approved"] == false)
        #expect(preview["device"] == start["device"])
        guard case .exact(let anaKey)? = try? AccountID.parse(anaID) else { Issue.record("no ID"); return }
        #expect(try lab.node.replica.devices(of: anaKey).count == 1)   // nothing yet
        let approved = try await Self.call(lab, ana, "device.approve", ["code": .string(code), "confirm": true])
        #expect(approved["approved"] == true)
        // Used once: a second approval is refused.
        let reused = await Self.failure(lab, ana, "device.approve", ["code": .string(code), "confirm": true])
        #expect(reused?.code == RPCError.Code.alreadyExists.rawValue && reused?.message.contains("used already") == true)

        // The certificate reaches the laptop: linked, with the history readable.
        try NodeDeviceTests.sync(lab, laptop)
        let status = try await Self.call(laptop, ana, "device.link.status")
        #expect(status["state"] == "linked" && status["account"]?.stringValue == anaID)
        let whoami = try laptop.call(ana, "account.whoami")
        #expect(whoami["device_state"] == "current" && whoami["account_key"] == false && whoami["id"]?.stringValue == anaID)
        let history = try laptop.call(ana, "chat.history", ["id": .string(benID)])
        #expect(history["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue } == ["hi Ana"])
        let devices = try laptop.call(ana, "device.list")["devices"]?.arrayValue ?? []
        let expires = devices.first { $0["label"] == "laptop" }?["expires"]?.intValue
        let created = devices.first { $0["label"] == "laptop" }?["created"]?.intValue
        #expect(devices.count == 2 && expires != nil && expires == created.map { $0 + 28_800_000 })

        // Ana answers from the laptop; both machines show one conversation, in one order.
        try laptop.call(ana, "chat.send", ["id": .string(benID), "text": "from my laptop"])
        try NodeDeviceTests.sync(laptop, lab)
        let onLab = try lab.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        let onLaptop = try laptop.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        let forBen = try lab.call(ben, "chat.history", ["id": .string(anaID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        #expect(onLab == ["hi Ana", "from my laptop"] && onLaptop == onLab && forBen == onLab)

        // Revoke the laptop: its writes are refused; Ben's next message is sealed to the new key.
        let laptopID = try #require(start["device"]?.stringValue)
        _ = try lab.call(ana, "device.revoke", ["id": .string(laptopID)])
        try lab.call(ben, "chat.send", ["id": .string(anaID), "text": "after the revocation"])
        try NodeDeviceTests.sync(lab, laptop)
        #expect(laptop.error(ana, "chat.send", ["id": .string(benID), "text": "still me?"])?.code == RPCError.Code.notAllowed.rawValue)
        let laptopAfter = try laptop.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        let labAfter = try lab.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        #expect(labAfter == ["hi Ana", "from my laptop", "after the revocation"])
        #expect(laptopAfter == ["hi Ana", "from my laptop"])
        // A revoked device cannot approve (it holds no account key here anyway) nor write.
        #expect(try laptop.call(ana, "account.whoami")["device_state"] == "revoked")
    }

    @Test func aCodeThatExpiresLinksNothingAndLogoutForgetLeavesNoKey() async throws {
        let lab = try TestNode(), laptop = try TestNode()
        let lan = LinkBoard()
        lab.runtime.board = lan
        laptop.runtime.board = lan
        _ = try await Self.call(lab, ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let start = try await Self.call(laptop, ana, "device.link", ["label": "lab-7"])
        let code = try #require(start["code"]?.stringValue)
        // A second link on the same machine by another user waits its turn.
        let busy = await Self.failure(laptop, ben, "device.link", [:])
        #expect(busy?.code == RPCError.Code.limitReached.rawValue)
        // The laptop's clock moves 1 s per reading; 10 minutes pass in 600 readings.
        for _ in 0..<600 { _ = laptop.node.config.now() }
        #expect(try await Self.call(laptop, ana, "device.link.status")["state"] == "expired")
        #expect(!FileManager.default.fileExists(atPath: laptop.dir + "/accounts/\(ana).key.link"))
        #expect(lan.offers(codeID: try LinkCode.parse(code).codeID, except: UUID()).isEmpty)
        #expect(await Self.failure(lab, ana, "device.approve", ["code": .string(code)])?.code == RPCError.Code.notFound.rawValue)

        // Linked again for 2 minutes: it writes, and past the expiry it no longer can.
        for _ in 0..<620 { _ = lab.node.config.now() }            // the two test clocks apart by less than a minute
        let short = try await Self.call(laptop, ana, "device.link", ["expires": 120])
        _ = try await Self.call(lab, ana, "device.approve", ["code": .string(try #require(short["code"]?.stringValue)), "confirm": true])
        try NodeDeviceTests.sync(lab, laptop)
        #expect(try await Self.call(laptop, ana, "device.link.status")["state"] == "linked")
        try laptop.call(ana, "profile.set", ["bio": "for two minutes"])
        for _ in 0..<200 { _ = laptop.node.config.now() }          // the laptop's clock: 1 s per reading
        let late = laptop.error(ana, "profile.set", ["bio": "too late"])
        #expect(late?.code == RPCError.Code.notAllowed.rawValue && late?.message.contains("expired") == true, "\(String(describing: late))")
        #expect(try laptop.call(ana, "account.whoami")["device_state"] == "expired")
        _ = try laptop.call(ana, "account.logout", ["forget": true])

        // Linked again, then `logout --forget`: revoked, and no key file left.
        let again = try await Self.call(laptop, ana, "device.link", [:])
        _ = try await Self.call(lab, ana, "device.approve", ["code": .string(try #require(again["code"]?.stringValue)), "confirm": true])
        try NodeDeviceTests.sync(lab, laptop)
        #expect(try await Self.call(laptop, ana, "device.link.status")["state"] == "linked")
        let forgotten = try laptop.call(ana, "account.logout", ["forget": true])
        #expect(forgotten["device_state"] == "revoked")
        #expect(!FileManager.default.fileExists(atPath: laptop.dir + "/accounts/\(ana).key"))
        #expect(laptop.error(ana, "account.whoami")?.code == RPCError.Code.noAccount.rawValue)
        try NodeDeviceTests.sync(laptop, lab)
        let states = try lab.call(ana, "device.list")["devices"]?.arrayValue?.compactMap { $0["state"]?.stringValue }
        // The lab, the two-minute device (expired by the laptop's clock, maybe not yet by the
        // lab's), and the forgotten one, revoked.
        #expect(states?.count == 3 && states?.filter { $0 == "revoked" }.count == 1 && states?.first == "current")
    }
}

/// Unmatch, purge and matching again across three replicas: Ana's two machines and Ben's
/// (PROTOCOL.md §8.7, §8.8).
@Suite struct NodeUnmatchTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002

    static func chatRecords(_ t: TestNode) throws -> Int {
        var n = 0
        for key in try t.node.replica.allAuthorKeys() {
            n += try t.node.replica.records(of: key, seqs: 1...1_000).filter { (try? Record.decode($0))?.type == .chat }.count
        }
        return n
    }

    @Test func anUnmatchPurgesTheMatchsMessagesFromEveryReplicaAndANewMatchStartsEmpty() async throws {
        let lab = try TestNode(), laptop = try TestNode(), benNode = try TestNode()
        let lan = LinkBoard()
        lab.runtime.board = lan
        laptop.runtime.board = lan
        _ = try await NodeLinkTests.call(lab, ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        _ = try await NodeLinkTests.call(benNode, ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor"])
        let start = try await NodeLinkTests.call(laptop, ana, "device.link", [:])
        _ = try await NodeLinkTests.call(lab, ana, "device.approve", ["code": .string(try #require(start["code"]?.stringValue)), "confirm": true])
        func syncAll() throws {
            for (a, b) in [(lab, laptop), (lab, benNode), (laptop, lab), (laptop, benNode), (benNode, lab), (benNode, laptop)] {
                try NodeDeviceTests.sync(a, b)
            }
        }
        try syncAll()
        let anaID = try #require(try lab.call(ana, "account.whoami")["id"]?.stringValue)
        let benID = try #require(try benNode.call(ben, "account.whoami")["id"]?.stringValue)
        try lab.call(ana, "like", ["id": .string(benID)])
        try syncAll()
        try benNode.call(ben, "like", ["id": .string(anaID)])
        try syncAll()
        try benNode.call(ben, "chat.send", ["id": .string(anaID), "text": "hi"])
        try syncAll()
        try laptop.call(ana, "chat.send", ["id": .string(benID), "text": "hello from the laptop"])
        try syncAll()
        try lab.call(ana, "chat.send", ["id": .string(benID), "text": "and from the lab"])
        try syncAll()
        let before = try benNode.call(ben, "chat.history", ["id": .string(anaID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        #expect(before == ["hi", "hello from the laptop", "and from the lab"])
        #expect(try Self.chatRecords(lab) == 3 && Self.chatRecords(laptop) == 3 && Self.chatRecords(benNode) == 3)

        // Ben unmatches; Ana's nodes answer with her own unmatch of that match.
        try benNode.call(ben, "unmatch", ["id": .string(anaID)])
        try syncAll()
        try syncAll()
        for (t, uid, other) in [(lab, ana, benID), (laptop, ana, benID), (benNode, ben, anaID)] {
            let history = try t.call(uid, "chat.history", ["id": .string(other)])
            #expect(history["matched"] == false && history["messages"]?.arrayValue?.isEmpty == true)
            #expect(try Self.chatRecords(t) == 0, "the ended match's messages are gone from every replica")
        }
        // Both ended it (Ana's nodes answered); the earlier unmatch by (timestamp, ID) names who
        // did — these test nodes' clocks are independent, so either.
        let endedBy = try lab.call(ana, "chat.history", ["id": .string(benID)])["unmatchedBy"]?.stringValue
        #expect(endedBy == benID || endedBy == anaID)

        // New likes on both sides: a new match, an empty conversation, chatting again works.
        // The unmatch ended both likes (Ben's, and Ana's by her node's answer): nothing to undo.
        #expect(laptop.error(ana, "undo", ["id": .string(benID)])?.code == RPCError.Code.notAllowed.rawValue)
        try laptop.call(ana, "like", ["id": .string(benID)])
        try syncAll()
        #expect(try benNode.call(ben, "chat.history", ["id": .string(anaID)])["matched"] == false, "Ana's new like alone matches nobody")
        try benNode.call(ben, "like", ["id": .string(anaID)])
        try syncAll()
        let again = try lab.call(ana, "chat.history", ["id": .string(benID)])
        #expect(again["matched"] == true && again["messages"]?.arrayValue?.isEmpty == true)
        try benNode.call(ben, "chat.send", ["id": .string(anaID), "text": "hi again"])
        try syncAll()
        let onLaptop = try laptop.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.compactMap { $0["text"]?.stringValue }
        #expect(onLaptop == ["hi again"])
    }
}

extension NodeUnmatchTests {
    /// An unmatch that arrives while the other account is locked is answered at its login: its
    /// messages of the match go too.
    @Test func anUnmatchThatArrivedWhileLockedIsAnsweredAtLogin() throws {
        let anaNode = try TestNode(), benNode = try TestNode()
        _ = try anaNode.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        _ = try benNode.call(ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor"])
        func sync() throws { try NodeDeviceTests.sync(anaNode, benNode); try NodeDeviceTests.sync(benNode, anaNode) }
        try sync()
        let anaID = try #require(try anaNode.call(ana, "account.whoami")["id"]?.stringValue)
        let benID = try #require(try benNode.call(ben, "account.whoami")["id"]?.stringValue)
        try anaNode.call(ana, "like", ["id": .string(benID)])
        try benNode.call(ben, "like", ["id": .string(anaID)])
        try sync()
        try anaNode.call(ana, "chat.send", ["id": .string(benID), "text": "from Ana"])
        try sync()
        try anaNode.call(ana, "account.logout")
        try benNode.call(ben, "unmatch", ["id": .string(anaID)])
        try sync()
        #expect(try Self.chatRecords(benNode) == 1, "Ana's message stays until her node answers")
        try anaNode.call(ana, "account.login")
        try sync()
        #expect(try Self.chatRecords(benNode) == 0 && Self.chatRecords(anaNode) == 0)
    }
}
