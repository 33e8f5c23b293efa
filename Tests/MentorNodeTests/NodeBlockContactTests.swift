import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// `block`, `unblock`, `blocked` (PROTOCOL.md §7.6) and the contact sealed to each current
/// match (§7.7), on test nodes.
@Suite struct NodeBlockContactTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String, _ role: String) throws -> String {
        let info = try t.call(uid, "account.signup", ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": .string(role)])
        try t.call(uid, "profile.set", ["courses": ["CS 490"]])
        return info["id"]?.stringValue ?? ""
    }

    func ids(_ t: TestNode, _ uid: UInt32, _ method: String, _ key: String) throws -> [String] {
        try t.call(uid, method)[key]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
    }

    func records(_ t: TestNode, of type: RecordType) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        for key in try t.node.replica.allAuthorKeys() {
            out += try t.node.replica.records(of: key, seqs: 1...1_000).filter { (try? Record.decode($0))?.type == type }
        }
        return out
    }

    /// Blocking a match ends it with an ordinary unmatch; the blocked person leaves the feed,
    /// the matches and the conversation, raises no event, and cannot be liked until unblocked.
    /// Unblocking re-matches nobody.
    @Test func aBlockEndsTheMatchAndHidesThePersonEverywhere() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor"), cyID = try signup(t, cy, "Cy", "tutor")
        let anaID = try #require(try t.call(ana, "account.whoami")["id"]?.stringValue)
        try t.call(ana, "subscribe", ["events": ["match", "message", "unmatch"]], connection: 10)
        try t.call(ben, "subscribe", ["events": ["match", "message", "unmatch"]], connection: 20)
        try t.call(ana, "like", ["id": .string(benID)])
        try t.call(ben, "like", ["id": .string(anaID)])
        try t.call(ben, "chat.send", ["id": .string(anaID), "text": "hi Ana"])
        #expect(try ids(t, ana, "matches", "matches") == [benID])
        let anaEventsBefore = t.events.all.filter { $0.0 == 10 }.count

        #expect(try t.call(ana, "block", ["id": .string(String(benID.prefix(12)))])["id"]?.stringValue == benID)
        #expect(try ids(t, ana, "matches", "matches").isEmpty)
        #expect(try ids(t, ana, "feed", "cards") == [cyID])
        #expect(try t.call(ana, "chat.history", ["id": .string(benID)])["messages"]?.arrayValue?.isEmpty == true)
        let listed = try t.call(ana, "blocked")["blocked"]?.arrayValue ?? []
        #expect(listed.count == 1 && listed.first?["id"]?.stringValue == benID && listed.first?["name"] == "Ben")
        #expect(listed.first?["since"]?.intValue != nil)
        // Ben sees an ordinary unmatch by Ana, nothing more.
        let benSaw = t.events.all.filter { $0.0 == 20 }.map(\.1)
        #expect(benSaw.last?.method == "event.unmatch" && benSaw.last?.params["by"]?.stringValue == anaID)
        let benHistory = try t.call(ben, "chat.history", ["id": .string(anaID)])
        #expect(benHistory["matched"] == false && benHistory["unmatchedBy"]?.stringValue == anaID)
        #expect(try ids(t, ben, "blocked", "blocked").isEmpty)
        // Ben likes Ana again: no event reaches her, and she cannot like him.
        try t.call(ben, "like", ["id": .string(anaID)])
        #expect(t.events.all.filter { $0.0 == 10 }.count == anaEventsBefore, "no event about a blocked person")
        let refused = t.error(ana, "like", ["id": .string(benID)])
        #expect(refused?.code == RPCError.Code.notAllowed.rawValue && refused?.message.contains("unblock") == true)

        try t.call(ana, "unblock", ["id": .string(benID)])
        #expect(try ids(t, ana, "blocked", "blocked").isEmpty)
        #expect(try ids(t, ana, "matches", "matches").isEmpty, "unblocking re-matches nobody")
    }

    /// Blocking someone not matched: out of the feed, a standing like of theirs withdrawn (no
    /// match can form), back in the feed after `unblock`.
    @Test func aBlockWithoutAMatchWithdrawsTheLikeAndUnblockBringsThemBack() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor"), cyID = try signup(t, cy, "Cy", "tutor")
        let anaID = try #require(try t.call(ana, "account.whoami")["id"]?.stringValue)
        try t.call(ana, "like", ["id": .string(cyID)])
        try t.call(ana, "block", ["id": .string(cyID)])
        try t.call(ana, "block", ["id": .string(benID)])
        #expect(try ids(t, ana, "feed", "cards").isEmpty)
        #expect(try t.call(cy, "like", ["id": .string(anaID)])["matched"] == false, "Ana's like was withdrawn")
        try t.call(ana, "unblock", ["id": .string(benID)])
        #expect(try ids(t, ana, "feed", "cards") == [benID])
    }

    /// Bad IDs, yourself, twice, unblocking someone not blocked: a clear error, nothing written.
    @Test func badBlocksAreRefusedAndChangeNothing() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor")
        let before = try t.node.replica.counts().records
        #expect(t.error(ana, "block", ["id": .string(anaID)])?.code == RPCError.Code.invalidValue.rawValue)
        #expect(t.error(ana, "block", ["id": "mm1zzzzzzzzz"])?.code == RPCError.Code.notFound.rawValue)
        #expect(t.error(ana, "block", ["id": "hello"])?.code == RPCError.Code.invalidValue.rawValue)
        #expect(t.error(ana, "block", [:])?.code == RPCError.Code.invalidParams.rawValue)
        let notBlocked = t.error(ana, "unblock", ["id": .string(benID)])
        #expect(notBlocked?.code == RPCError.Code.notAllowed.rawValue && notBlocked?.message.contains("do not block") == true)
        #expect(try t.node.replica.counts().records == before)
        try t.call(ana, "block", ["id": .string(benID)])
        #expect(t.error(ana, "block", ["id": .string(benID)])?.code == RPCError.Code.notAllowed.rawValue)
        #expect(try t.node.replica.counts().records == before + 1, "one note; no unmatch without a match")
    }

    /// The block is a note sealed to the account: the account's other device learns it (and
    /// hides the person there too); the blocked person's node holds it and reads nothing.
    @Test func aBlockReachesTheAccountsOtherDeviceOnly() async throws {
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
        try benNode.call(ben, "like", ["id": .string(anaID)])
        try syncAll()
        #expect(try ids(laptop, ana, "matches", "matches") == [benID])
        try lab.call(ana, "block", ["id": .string(benID)])
        try syncAll()
        try syncAll()
        #expect(try ids(laptop, ana, "blocked", "blocked") == [benID])
        #expect(try ids(laptop, ana, "matches", "matches").isEmpty)
        #expect(try ids(laptop, ana, "feed", "cards").isEmpty)
        #expect(laptop.error(ana, "like", ["id": .string(benID)])?.code == RPCError.Code.notAllowed.rawValue)
        #expect(try ids(benNode, ben, "blocked", "blocked").isEmpty)
        let anaKey = try #require(laptop.node.localAccounts().first)
        #expect(try benNode.node.replica.blockedAccounts(of: anaKey).isEmpty)
        // An ordinary unmatch; with both sides' unmatches (Ben's node answers), the earlier by
        // (timestamp, ID) names who ended it — these test nodes' clocks are independent.
        let benHistory = try benNode.call(ben, "chat.history", ["id": .string(anaID)])
        let endedBy = benHistory["unmatchedBy"]?.stringValue
        #expect(benHistory["matched"] == false && (endedBy == anaID || endedBy == benID))
    }

    /// The contact is sealed to each current match: a match made before or after `--contact`
    /// reads it (the newest), nobody else does, the public card never holds it; after an
    /// unmatch the former match reads neither the old contact (purged) nor a later edit.
    @Test func theContactReachesCurrentMatchesOnly() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor"), cyID = try signup(t, cy, "Cy", "tutor")
        try t.call(ana, "like", ["id": .string(cyID)])
        try t.call(cy, "like", ["id": .string(anaID)])
        let own = try t.call(ana, "profile.set", ["contact": "+1 555 0100"])
        #expect(own["contact"] == "+1 555 0100" && own["name"] == "Ana")
        #expect(try t.call(ana, "profile.show")["contact"] == "+1 555 0100")
        #expect(try t.call(cy, "profile.show", ["id": .string(anaID)])["contact"] == "+1 555 0100", "a match made before")
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil, "not a match")
        try t.call(ana, "like", ["id": .string(benID)])
        try t.call(ben, "like", ["id": .string(anaID)])
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"] == "+1 555 0100", "a new match gets it")
        #expect(try records(t, of: .contact).count == 2)
        try t.call(ana, "profile.set", ["contact": "@ana", "bio": "hello"])
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"] == "@ana")
        #expect(try t.call(cy, "profile.show", ["id": .string(anaID)])["contact"] == "@ana")
        let anaKey = try #require(t.node.localAccounts().first { $0.id == anaID })
        let card = try #require(try t.node.replica.card(of: anaKey))
        #expect(card.card.bio == "hello")
        for bytes in try records(t, of: .profile) { #expect(!Data(bytes).contains(Data("@ana".utf8))) }
        for bytes in try records(t, of: .contact) { #expect(!Data(bytes).contains(Data("@ana".utf8))) }

        // Cy unmatches: Ana's node answers, and its unmatch purges her contacts to Cy.
        try t.call(cy, "unmatch", ["id": .string(anaID)])
        #expect(try t.call(cy, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil)
        #expect(try records(t, of: .contact).count == 2, "only Ben's two are left")
        try t.call(ana, "profile.set", ["contact": "@ana.new"])
        #expect(try t.call(cy, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil, "a later edit is not sealed to a former match")
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"] == "@ana.new")
        #expect(try records(t, of: .contact).count == 3)
        // "" clears it for the matches; an unchanged value writes nothing.
        try t.call(ana, "profile.set", ["contact": ""])
        try t.call(ana, "profile.set", ["contact": ""])
        #expect(try records(t, of: .contact).count == 4)
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil)
        #expect(try t.call(ana, "profile.show")["contact"]?.stringValue == nil)
    }

    /// A match that formed while the account was locked gets the contact at its login.
    @Test func aMatchMadeWhileLockedGetsTheContactAtLogin() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor")
        try t.call(ana, "profile.set", ["contact": "+1 555 0100"])
        try t.call(ana, "like", ["id": .string(benID)])
        try t.call(ana, "account.logout")
        try t.call(ben, "like", ["id": .string(anaID)])
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil)
        try t.call(ana, "account.login")
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"] == "+1 555 0100")
    }

    /// The contact is the setting `contact`: `settings.set` of it seals it to the matches too,
    /// and unsetting it clears it for them.
    @Test func theContactIsTheSettingContact() throws {
        let t = try TestNode()
        let anaID = try signup(t, ana, "Ana", "student")
        let benID = try signup(t, ben, "Ben", "tutor")
        try t.call(ana, "like", ["id": .string(benID)])
        try t.call(ben, "like", ["id": .string(anaID)])
        try t.call(ana, "settings.set", ["key": "contact", "value": "@ana"])
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"] == "@ana")
        try t.call(ana, "profile.set", ["contact": "@ana2"])
        let listed = try t.call(ana, "settings.show")["settings"]?.arrayValue?.first { $0["key"] == "contact" }
        #expect(listed?["value"] == "@ana2")
        try t.call(ana, "settings.set", ["key": "contact", "value": .null])
        #expect(try t.call(ben, "profile.show", ["id": .string(anaID)])["contact"]?.stringValue == nil)
        #expect(try t.call(ana, "profile.show")["contact"]?.stringValue == nil)
    }

    @Test func aBadContactIsRefusedAndChangesNothing() throws {
        let t = try TestNode()
        _ = try signup(t, ana, "Ana", "student")
        try t.call(ana, "profile.set", ["contact": "+1 555 0100"])
        let before = try t.node.replica.counts().records
        let long = t.error(ana, "profile.set", ["contact": .string(String(repeating: "x", count: 201)), "bio": "new"])
        #expect(long?.code == RPCError.Code.invalidValue.rawValue && long?.message.contains("200") == true)
        #expect(t.error(ana, "profile.set", ["contact": "a\u{7}b"])?.code == RPCError.Code.invalidValue.rawValue)
        #expect(t.error(ana, "profile.set", ["contact": 5])?.code == RPCError.Code.invalidParams.rawValue)
        #expect(try t.node.replica.counts().records == before)
        #expect(try t.call(ana, "profile.show")["contact"] == "+1 555 0100")
        #expect(try t.call(ana, "profile.show")["bio"]?.stringValue == nil)
    }
}
