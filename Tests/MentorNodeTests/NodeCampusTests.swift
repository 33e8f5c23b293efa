import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode
import MentorSystem

/// Campus membership on a node (issue 19 item 5; PROTOCOL.md §6.8, OPERATIONS.md "A campus
/// CA"): who counts as a member, what `require_membership` takes and leaves, what is shown.
@Suite struct NodeCampusTests {
    static let ca = try! SigningKeyPair(seed: [UInt8](repeating: 0x43, count: 32))      // fixed test seeds, cannot fail
    static let otherCA = try! SigningKeyPair(seed: [UInt8](repeating: 0x44, count: 32))
    static let ana = try! SigningKeyPair(seed: [UInt8](repeating: 0x0A, count: 32))
    static let cy = try! SigningKeyPair(seed: [UInt8](repeating: 0x0C, count: 32))
    static let day: UInt64 = 86_400_000
    /// The TestClock starts at 1_800_000_000_000 and ticks a second per reading.
    static let issued: UInt64 = 1_799_000_000_000

    static func certificate(_ account: SigningKeyPair, by ca: SigningKeyPair = ca, days: UInt64 = 365,
                            issued: UInt64 = issued) throws -> MembershipCertificate {
        try MembershipCertificate.sign(by: ca, account: account.publicKey.key, domain: "campus.edu", issued: issued,
                                       expires: issued + days * day)
    }

    /// Ana: a tutor's card, then an edit carrying her certificate. Cy: a tutor's card and a post,
    /// no certificate.
    static func records(anaCertificate: MembershipCertificate? = nil) throws -> (ana: [[UInt8]], cy: [[UInt8]]) {
        var a = RecordWriter(keys: ana)
        let a1 = try a.profile(ProfileCard(name: "Ana", role: .tutor, courses: ["CS 490"]), at: issued + 1)
        var edit = ProfileCard()
        edit.membership = try anaCertificate ?? certificate(ana)
        let a2 = try a.profile(edit, at: issued + 2)
        var c = RecordWriter(keys: cy)
        let c1 = try c.profile(ProfileCard(name: "Cy", role: .tutor, courses: ["CS 490"]), at: issued + 3)
        let c2 = try c.follow(ana.publicKey.key, at: issued + 4)
        return ([a1.encoded, a2.encoded], [c1.encoded, c2.encoded])
    }

    static func campusNode(require: Bool = true, key: PublicKey? = ca.publicKey.key) throws -> TestNode {
        try TestNode { $0.campus = Campus.Settings(caKey: key, requireMembership: require, caAddress: "[::1]:7400") }
    }

    static func verified(_ node: TestNode, _ batch: [[UInt8]]) -> [VerifiedRecord?] {
        node.node.replica.verify(batch).map { try? $0.get() }
    }

    @Test func aCertificateInTheBatchAdmitsItsAccountWhateverTheOrderOthersAreDeclined() throws {
        let t = try Self.campusNode()
        let (ana, cy) = try Self.records()
        // Ana's first card comes before the card with her certificate: both are taken.
        let batch = [ana[0], cy[0], cy[1], ana[1]]
        #expect(t.node.campus.admit(Self.verified(t, batch), local: []).takes == [true, false, false, true])
        #expect(t.node.campus.member(Self.ana.publicKey.key)?.domain == "campus.edu")
        #expect(t.node.campus.member(Self.cy.publicKey.key) == nil)
        #expect(t.node.campus.counts.declinedRecords == 2)
        // Cy's records offered again are dropped before they are verified, but his card still
        // goes on to verification: it could bring a certificate.
        #expect(t.node.campus.declinedBeforeVerifying(cy, local: []) == [cy[0]])
        // This node's own accounts are never declined.
        #expect(t.node.campus.admit(Self.verified(t, cy), local: [Self.cy.publicKey.key]).takes == [true, true])
        // Once Cy is certified, his records are taken again.
        var w = RecordWriter(keys: Self.cy, lastSeq: 2)
        var edit = ProfileCard()
        edit.membership = try Self.certificate(Self.cy)
        let c3 = try w.profile(edit, at: Self.issued + 5).encoded
        // ... and asked for again: Cy was declined, and his certificate arrived.
        let again = t.node.campus.admit(Self.verified(t, [cy[1], c3]), local: [])
        #expect(again.takes == [true, true] && again.readmitted == [Self.cy.publicKey.key])
        #expect(t.node.campus.declinedBeforeVerifying(cy, local: []) == cy)
    }

    @Test func onlyCurrentCertificatesOfTheTrustedCACount() throws {
        let t = try Self.campusNode()
        let (other, _) = try Self.records(anaCertificate: try Self.certificate(Self.ana, by: Self.otherCA))
        #expect(t.node.campus.admit(Self.verified(t, other), local: []).takes == [false, false])
        let expired = try Self.certificate(Self.ana, days: 1, issued: 1_700_000_000_000)
        let (old, _) = try Self.records(anaCertificate: expired)
        #expect(t.node.campus.admit(Self.verified(t, old), local: []).takes == [false, false])
        #expect(t.node.campus.member(Self.ana.publicKey.key) == nil)
        // Without require_membership nothing is declined; a certificate still makes a member.
        let open = try Self.campusNode(require: false)
        let (ana, cy) = try Self.records()
        #expect(open.node.campus.admit(Self.verified(open, ana + cy), local: []) == ([true, true, true, true], []))
        #expect(open.node.campus.member(Self.ana.publicKey.key) != nil)
    }

    @Test func theReplicaRemembersACertificateEvenInACardHeldBackAndAcrossARestart() throws {
        let t = try Self.campusNode()
        let (ana, _) = try Self.records()
        // The card with the certificate arrives first: held back until Ana's seq 1.
        #expect(try t.node.applyRemote([ana[1]]) == [.held])
        #expect(try t.node.replica.memberships(ca: Self.ca.publicKey.key).map(\.account) == [Self.ana.publicKey.key])
        let restarted = try TestNode(reopening: t) { $0.campus = Campus.Settings(caKey: Self.ca.publicKey.key, requireMembership: true) }
        restarted.node.campus.note(try Self.certificate(Self.cy, by: Self.otherCA))   // another CA's: ignored
        #expect(restarted.node.campus.member(Self.ana.publicKey.key)?.domain == "campus.edu")
        #expect(restarted.node.campus.member(Self.cy.publicKey.key) == nil)
        // At most four CAs per account are kept, the latest-expiring.
        for seed in UInt8(0x50)...UInt8(0x55) {
            let c = try Self.certificate(Self.cy, by: try SigningKeyPair(seed: [UInt8](repeating: seed, count: 32)), days: UInt64(seed))
            try t.node.replica.noteMembership(c)
        }
        let kept = try (UInt8(0x50)...UInt8(0x55)).map { seed in
            try t.node.replica.memberships(ca: try SigningKeyPair(seed: [UInt8](repeating: seed, count: 32)).publicKey.key).count
        }
        #expect(kept == [0, 0, 1, 1, 1, 1])
    }

    @Test func nonMembersAreLeftOutOfWhatIsShownAndMembersAreMarked() throws {
        let t = try Self.campusNode()
        let ben = try t.call(1001, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "student"])
        let benID = try #require(ben["id"]?.stringValue)
        try t.call(1001, "profile.set", ["courses": ["CS 490"]])
        let (ana, cy) = try Self.records()
        // Cy's records were stored before require_membership was set (applied here without the gate).
        _ = try t.node.applyRemote(ana + cy)
        let anaID = Self.ana.publicKey.key.id, cyID = Self.cy.publicKey.key.id
        let people = try t.call(1001, "people")["people"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(people == [anaID])
        let feed = try t.call(1001, "feed")["cards"]?.arrayValue ?? []
        #expect(feed.compactMap { $0["id"]?.stringValue } == [anaID])
        #expect(feed.first?["member"]?["domain"] == "campus.edu")
        #expect(t.error(1001, "profile.show", ["id": .string(cyID)])?.code == RPCError.Code.notFound.rawValue)
        #expect(try t.call(1001, "profile.show", ["id": .string(anaID)])["member"]?["domain"] == "campus.edu")
        // Ben, not certified, still sees his own card; he is hidden from nobody's view but his own.
        #expect(try t.call(1001, "profile.show")["id"]?.stringValue == benID)
        let status = try t.call(1001, "status")["campus"]
        #expect(status?["requireMembership"] == true && status?["members"] == 1 && status?["ca"] == "[::1]:7400")
        #expect(status?["caKey"]?.stringValue == MembershipCertificate.printKey(Self.ca.publicKey.key))
        // Another user of this node, not certified, is hidden from Ben but sees their own card.
        let dee = try #require(try t.call(1002, "account.signup", ["email": "dee@uni.edu", "name": "Dee", "role": "tutor"])["id"]?.stringValue)
        #expect(try t.call(1002, "profile.show")["id"]?.stringValue == dee)
        #expect(t.error(1001, "profile.show", ["id": .string(dee)])?.code == RPCError.Code.notFound.rawValue)
        #expect(try t.call(1002, "people")["people"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [anaID])
        // A year on, Ana's certificate has expired: she is hidden too.
        t.wall.advance(days: 400)
        #expect(try t.call(1001, "people")["people"]?.arrayValue?.isEmpty == true)
        #expect(try t.call(1001, "status")["campus"]?["members"] == 0, "the count follows the expiry")
        #expect(t.error(1001, "profile.show", ["id": .string(anaID)])?.code == RPCError.Code.notFound.rawValue)
    }

    @Test func withoutACampusKeyNobodyIsMarkedAndNobodyHidden() throws {
        let t = try Self.campusNode(require: false, key: nil)
        _ = try t.call(1001, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "student"])
        let (ana, cy) = try Self.records()
        _ = try t.node.applyRemote(ana + cy)
        let people = try t.call(1001, "people")["people"]?.arrayValue ?? []
        #expect(people.count == 2)
        #expect(try t.call(1001, "profile.show", ["id": .string(Self.ana.publicKey.key.id)])["member"] == .null)
        #expect(try t.call(1001, "status")["campus"] == .null)
    }

    @Test func membershipSetPublishesOnlyAValidCurrentCertificateForTheCallersAccountFromTheTrustedCA() throws {
        let t = try Self.campusNode()
        let info = try t.call(1001, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "student"])
        let me = try #require(info["id"]?.stringValue.flatMap { try? AccountID.parse($0) }.flatMap { q -> PublicKey? in
            if case .exact(let k) = q { return k } else { return nil }
        })
        let before = try t.call(1001, "profile.show")
        func certificate(for account: PublicKey, by ca: SigningKeyPair = Self.ca, issued: UInt64 = Self.issued, days: UInt64 = 365) throws -> String {
            Hex.encode(try MembershipCertificate.sign(by: ca, account: account, domain: "campus.edu", issued: issued,
                                                      expires: issued + days * Self.day).encoded)
        }
        let refusals: [(String, Int)] = [
            ("zz", RPCError.Code.invalidValue.rawValue),
            ("4d4d4301", RPCError.Code.invalidValue.rawValue),
            (try certificate(for: Self.ana.publicKey.key), RPCError.Code.notAllowed.rawValue),
            (try certificate(for: me, by: Self.otherCA), RPCError.Code.notAllowed.rawValue),
            (try certificate(for: me, issued: 1_700_000_000_000, days: 1), RPCError.Code.invalidValue.rawValue),
        ]
        for (hex, code) in refusals {
            #expect(t.error(1001, "membership.set", ["certificate": .string(hex)])?.code == code, "\(hex.prefix(12))")
        }
        // A forged one: the domain changed after signing.
        var forged = try #require(Hex.decode(try certificate(for: me)))
        forged[85] ^= 0x01   // "campus.edu" becomes "bampus.edu": canonical, not what was signed
        let forgedError = t.error(1001, "membership.set", ["certificate": .string(Hex.encode(forged))])
        #expect(forgedError?.code == RPCError.Code.invalidValue.rawValue && forgedError?.message.contains("signature") == true)
        // Nothing was written by the refusals.
        #expect(try t.call(1001, "profile.show")["updatedAt"] == before["updatedAt"])
        let card = try t.call(1001, "membership.set", ["certificate": .string(try certificate(for: me))])
        #expect(card["member"]?["domain"] == "campus.edu")
        #expect(card["member"]?["expires"] == .int(Int64(Self.issued + 365 * Self.day)))
        #expect(try t.node.replica.card(of: me)?.card.membership?.account == me)
        #expect(try t.call(1001, "status")["campus"]?["members"] == 1)
    }
}

extension ApplyPipelineTests {
    /// The campus's rule inside the real pipeline (a real replica verifies, a stand-in applies):
    /// after the budgets, a members-only node takes members' records and declines the others —
    /// acknowledged like any batch, no offence — and a batch bringing the certificate of an
    /// account it declined asks the link for that account's records again (`want`). Records
    /// of strangers go through the budget gate too, whose counts must follow what is declined
    /// (a count for each admitted record: it once indexed past the batch and crashed).
    @Test func aMembersOnlyPipelineDeclinesNonMembersAndAsksForAReadmittedAccountAgain() throws {
        let wall: UInt64 = 1_800_000_000_000
        let clock = ManualClock()
        let replica = try Replica(path: ":memory:")
        let campus = Campus(settings: .init(caKey: NodeCampusTests.ca.publicKey.key, requireMembership: true),
                            replica: replica, now: { wall }, logger: DiscardingLogger())
        let applied = AppliedCounter()
        let store = ApplyStore(verify: { replica.verify($0) },
                               apply: { (batches) throws(StoreError) in
                                   applied.add(batches.map(\.verified.count).reduce(0, +))
                                   return batches.map { $0.verified.map { _ in ApplyOutcome.applied } }
                               },
                               nextDue: { () throws(StoreError) in nil }, releaseDue: { () throws(StoreError) in 0 })
        let gate = BudgetGate(replica: replica, localAccounts: { [] }, authorBudget: 64 << 20,
                              budget: .init(maxAccounts: 1_000, maxBytes: 1 << 30), logger: DiscardingLogger())
        let queue = DispatchQueue(label: "campus pipeline")
        let pipeline = ApplyPipeline<FakeShell>(queue: queue, store: store, budgetGate: gate, campus: campus, localAccounts: { [] },
                                                recordsPerApply: 1024, logger: DiscardingLogger(), clock: { clock.now }, wallClock: { wall })
        let shell = FakeShell()
        pipeline.shell = shell
        let link = FakeLink(serial: 1, now: clock.now)
        shell.add(link)
        func submit(_ batch: [[UInt8]]) {
            queue.sync { pipeline.submit(batch, from: link, linked: { _ in false }) }
            pipeline.applyQueue.sync {}
            queue.sync {}
        }
        let (ana, cy) = try NodeCampusTests.records()
        submit([cy[0], ana[0], cy[1], ana[1]])
        #expect(applied.count == 2, "Ana's two records are applied, Cy's two declined")
        #expect(link.outcomes == [.init(stored: 2, refused: 0, holdAck: false)], "declined is no offence: \(link.outcomes)")
        #expect(gate.storage.accounts == 1, "the budget counts Ana's account only")
        #expect(campus.counts.declinedRecords == 2)
        // Cy's follow offered again is dropped before it is verified; his card is not.
        submit([cy[1]])
        #expect(applied.count == 2 && campus.counts.declinedRecords == 3)
        // Cy's certificate arrives: taken, and Cy's earlier records are asked for again.
        var w = RecordWriter(keys: NodeCampusTests.cy, lastSeq: 2)
        var edit = ProfileCard()
        edit.membership = try NodeCampusTests.certificate(NodeCampusTests.cy)
        submit([try w.profile(edit, at: NodeCampusTests.issued + 9).encoded])
        #expect(applied.count == 3)
        #expect(link.deferredAuthors == [[NodeCampusTests.cy.publicKey.key]], "\(link.deferredAuthors)")
        submit(cy)
        #expect(applied.count == 5, "Cy's records are taken now")
    }

    final class AppliedCounter: @unchecked Sendable {   // `n` only under `lock`
        private let lock = NSLock()
        private var n = 0
        func add(_ k: Int) { lock.withLock { n += k } }
        var count: Int { lock.withLock { n } }
    }
}
