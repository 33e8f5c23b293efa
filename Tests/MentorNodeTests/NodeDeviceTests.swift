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
