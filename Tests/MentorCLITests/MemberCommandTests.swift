import Foundation
import Testing
import MentorAPI
import MentorCA
import MentorCore
import MentorCrypto
@testable import MentorCLI

/// `member show|request|verify|set`: what they ask of the campus CA and the daemon, and what
/// they print (OPERATIONS.md "A campus CA").
@Suite struct MemberCommandTests {
    static let ca = try! SigningKeyPair(seed: [UInt8](repeating: 0x43, count: 32))   // a fixed test seed, cannot fail
    static let me = try! SigningKeyPair(seed: [UInt8](repeating: 0x0A, count: 32))

    /// A CA that mails nothing: it remembers what it was asked and answers from the test.
    final class FakeCA: CampusCA {
        var requests: [(PublicKey, String)] = []
        var verifies: [(PublicKey, String)] = []
        var refusal: CAError?
        func request(account: PublicKey, email: String) throws(CAError) -> CARequestReceipt {
            requests.append((account, email))
            if let refusal { throw refusal }
            return CARequestReceipt(sentTo: "a…@campus.edu", expiresIn: 900)
        }
        func verify(account: PublicKey, code: String) throws(CAError) -> MembershipCertificate {
            verifies.append((account, code))
            if let refusal { throw refusal }
            do {
                return try MembershipCertificate.sign(by: MemberCommandTests.ca, account: account, domain: "campus.edu",
                                                      issued: 1_800_000_000_000, expires: 1_831_536_000_000)
            } catch { throw CAError(.internal, "\(error)") }
        }
    }

    static let campus: JSON = ["caKey": .string(MembershipCertificate.printKey(ca.publicKey.key)), "ca": "ca.campus.edu:4712",
                               "requireMembership": true, "members": 3, "declinedRecords": 0]

    /// A daemon whose `whoami` is `me`, whose `status` says `campus`, and whose
    /// `membership.set` answers a card with `member`.
    static func host(campus: JSON = campus) -> (CLIFakeHost, FakeCA) {
        let daemon = CLIFakeDaemon { method, _ in
            switch method {
            case "account.whoami": return ["id": .string(me.publicKey.key.id), "email": "ana@uni.edu", "protected": false, "unlocked": true]
            case "status": return ["campus": campus]
            case "membership.set", "profile.show":
                return ["id": .string(me.publicKey.key.id), "courses": [], "conflicts": [:], "forked": false, "updatedAt": 1,
                        "member": ["domain": "campus.edu", "expires": 1_831_536_000_000]]
            default: return [:]
            }
        }
        let host = CLIFakeHost(daemon)
        let ca = FakeCA()
        host.fakeCA = ca
        return (host, ca)
    }

    @Test func requestAsksTheNodesCAForTheCallersAccountAndSaysWhatComesNext() {
        let (host, ca) = Self.host()
        #expect(runCLI(["member", "request", "ana@campus.edu"], host) == .success)
        #expect(host.campusCAAddresses == ["ca.campus.edu:4712"])
        #expect(ca.requests.count == 1 && ca.requests.first?.0 == Self.me.publicKey.key && ca.requests.first?.1 == "ana@campus.edu")
        #expect(host.stdout.contains("A code was sent to a…@campus.edu") && host.stdout.contains("mentormate member verify CODE"), "\(host.stdout)")
        // --ca wins over the node's; the daemon is not asked for its status then.
        let (other, _) = Self.host()
        #expect(runCLI(["member", "request", "ana@campus.edu", "--ca", "[::1]:4712"], other) == .success)
        #expect(other.campusCAAddresses == ["[::1]:4712"] && !other.transport.methods.contains("status"))
    }

    @Test func verifyPublishesTheCertificateTheCAGives() throws {
        let (host, ca) = Self.host()
        #expect(runCLI(["member", "verify", "123 456"], host) == .success)
        #expect(ca.verifies.first?.1 == "123456")
        let set = try #require(host.transport.calls.first { $0.method == "membership.set" })
        let hex = try #require(set.params["certificate"]?.stringValue)
        let certificate = try MembershipCertificate(encoded: try #require(Hex.decode(hex)))
        #expect(certificate.account == Self.me.publicKey.key && certificate.hasValidSignature)
        #expect(host.stdout.contains("You are a verified member of campus.edu until 2028-01-15"), "\(host.stdout)")
    }

    @Test func refusalsAndMissingAddressesAreNamedAndSendNothing() {
        let (host, ca) = Self.host()
        ca.refusal = CAError(.wrongCode, "the code does not match; 4 tries left")
        #expect(runCLI(["member", "verify", "000000"], host) == .failure)
        #expect(host.stderr.contains("the campus CA refused: the code does not match; 4 tries left"), "\(host.stderr)")
        #expect(!host.transport.methods.contains("membership.set"))
        let (down, downCA) = Self.host()
        downCA.refusal = CAError(.unreachable, "cannot reach the campus CA at ca.campus.edu:4712: connection refused")
        #expect(runCLI(["member", "request", "ana@campus.edu"], down) == .unreachable)
        #expect(down.stderr.contains("check the address"), "\(down.stderr)")
        // No campus_ca on the node and no --ca: the fix is named.
        let (none, _) = Self.host(campus: .null)
        #expect(runCLI(["member", "request", "ana@campus.edu"], none) == .usage)
        #expect(none.stderr.contains("--ca HOST:PORT") && none.campusCAAddresses.isEmpty, "\(none.stderr)")
        // Bad input never reaches the daemon or the CA.
        #expect(cliUsageError(["member", "request", "ana"])?.message.contains("is not an e-mail address") == true)
        #expect(cliUsageError(["member", "request", "ana@campus.edu\r\nBcc: x@y.z"]) != nil)
        #expect(cliUsageError(["member", "verify", "12ab56"])?.message.contains("is not a code") == true)
        #expect(cliUsageError(["member", "set"]) != nil)
    }

    @Test func showSaysWhetherYouAreAMemberAndOfWhichCampus() {
        let zone = TimeZone(identifier: "UTC")!
        let key = MembershipCertificate.printKey(Self.ca.publicKey.key)
        let member = ClientFormat.membership(card: ["member": ["domain": "campus.edu", "expires": 1_831_536_000_000]],
                                             status: ["campus": Self.campus], in: zone)
        #expect(member.contains("You are a verified member of campus.edu until 2028-01-15") && member.contains("members only"))
        #expect(member.contains(String(key.prefix(20))))
        let not = ClientFormat.membership(card: ["member": .null], status: ["campus": Self.campus], in: zone)
        #expect(not.contains("You are not a verified member") && not.contains("mentormate member request ADDRESS"))
        #expect(ClientFormat.membership(card: [:], status: ["campus": .null], in: zone).contains("trusts no campus CA"))
        // The card and status lines.
        let card = ClientFormat.card(["id": "mm1x", "courses": [], "updatedAt": 1, "member": ["domain": "campus.edu", "expires": 1_831_536_000_000]],
                                     in: zone)
        #expect(card.contains("member") && card.contains("of campus.edu until 2028-01-15"), "\(card)")
        let status = ClientFormat.status(["node": "mm1x", "campus": Self.campus], in: zone)
        #expect(status.contains("campus") && status.contains("(members only); 3 members") && status.contains("codes from ca.campus.edu:4712"), "\(status)")
    }
}
