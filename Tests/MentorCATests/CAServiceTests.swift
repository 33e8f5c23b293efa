import Foundation
import MentorCore
import MentorCrypto
import Testing
@testable import MentorCA

@Suite struct CAServiceTests {
    @Test func aRequestMailsOneCodeThatVerifiesOnceIntoACertificate() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let me = account()
        let receipt = try f.service.request(account: me, email: "Ana@campus.edu", client: "127.0.0.1")
        #expect(receipt == CARequestReceipt(sentTo: "A…@campus.edu", expiresIn: 900))
        let mails = try #require(f.sink?.messages)
        #expect(mails.count == 1)
        #expect(mails.first?.to == ["<Ana@campus.edu>"])
        #expect(mails.first?.from == "<mentormate-ca@campus.edu>")
        let data = mails.first?.data ?? ""
        #expect(data.contains("Subject: Your MentorMate code\r\n"))
        #expect(data.contains("Content-Type: text/plain; charset=utf-8\r\n"))
        #expect(data.contains("\r\nDate: ") && data.contains("\r\nMessage-ID: <"))
        let code = try f.lastCode(to: "Ana@campus.edu")
        #expect(code.count == 6 && code.allSatisfy(\.isNumber))

        let issuedAt = f.clock.now
        let certificate = try f.service.verify(account: me, code: code)
        #expect(certificate.account == me)
        #expect(certificate.domain == "campus.edu")
        #expect(certificate.ca == f.keys.publicKey.key)
        #expect(certificate.issued == issuedAt)
        #expect(certificate.expires == issuedAt + 365 * 86_400_000)
        #expect(certificate.hasValidSignature)
        #expect(f.service.counts == (pending: 0, certified: 1))

        // Once: the code is gone after it was used.
        #expect(refusal { try f.service.verify(account: me, code: code) }?.code == .noCode)
    }

    @Test func addressesAtOtherDomainsAreRefused() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        for address in ["ana@gmail.com", "ana@evil-campus.edu", "ana@x.campus.edu", "ana@campus.edu.evil.com"] {
            #expect(refusal { try f.service.request(account: account(), email: address, client: "c") }?.code == .wrongDomain, "\(address)")
        }
        #expect(f.sink?.messages.isEmpty == true)
    }

    @Test func subdomainsOnlyWhenAllowedAndTheCertificateNamesTheConfiguredDomain() throws {
        let f = try Fixture { $0.allowSubdomains = true }
        defer { f.cleanup() }
        let me = account()
        _ = try f.service.request(account: me, email: "ana@x.campus.edu", client: "c")
        #expect(refusal { try f.service.request(account: account(), email: "ana@evil-campus.edu", client: "c") }?.code == .wrongDomain)
        let certificate = try f.service.verify(account: me, code: try f.lastCode(to: "ana@x.campus.edu"))
        #expect(certificate.domain == "campus.edu")
    }

    @Test func malformedAddressesAreBadRequests() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        for address in ["ana.campus.edu", "ana@b@campus.edu", "ana\r\n@campus.edu", "ana@campus.edu\r\nBcc: x@y.com",
                        "@campus.edu", "a na@campus.edu", "<ana>@campus.edu", ""] {
            #expect(refusal { try f.service.request(account: account(), email: address, client: "c") }?.code == .badRequest, "\(address.debugDescription)")
        }
        #expect(f.sink?.messages.isEmpty == true)
    }

    @Test func wrongCodesCountDownAndTheSixthTryVoidsTheCode() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let me = account()
        _ = try f.service.request(account: me, email: "ana@campus.edu", client: "c")
        let code = try f.lastCode(to: "ana@campus.edu")
        let wrong = code == "000000" ? "111111" : "000000"
        for left in (0...4).reversed() {
            let error = refusal { try f.service.verify(account: me, code: wrong) }
            #expect(error?.code == .wrongCode)
            #expect(error?.message.contains(left > 0 ? "\(left) tr" : "no tries are left") == true, "\(error?.message ?? "")")
        }
        // The sixth try, even with the right code: too many, and the code is gone.
        #expect(refusal { try f.service.verify(account: me, code: code) }?.code == .tooManyAttempts)
        #expect(refusal { try f.service.verify(account: me, code: code) }?.code == .noCode)
    }

    @Test func aCodeExpiresAfterItsTTL() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let me = account()
        _ = try f.service.request(account: me, email: "ana@campus.edu", client: "c")
        let code = try f.lastCode(to: "ana@campus.edu")
        f.clock.advance(seconds: 15 * 60)
        #expect(refusal { try f.service.verify(account: me, code: code) }?.code == .noCode)
    }

    @Test func aNewRequestReplacesTheOldCode() throws {
        let f = try Fixture { $0.requestsPerAddressPerHour = 100 }
        defer { f.cleanup() }
        let me = account()
        _ = try f.service.request(account: me, email: "ana@campus.edu", client: "c")
        let first = try f.lastCode(to: "ana@campus.edu")
        var second = first
        // A new code could equal the old one by chance (1 in a million); ask until it differs.
        while second == first {
            _ = try f.service.request(account: me, email: "ana@campus.edu", client: "c")
            second = try f.lastCode(to: "ana@campus.edu")
        }
        #expect(refusal { try f.service.verify(account: me, code: first) }?.code == .wrongCode)
        #expect(try f.service.verify(account: me, code: second).account == me)
    }

    @Test func requestsPerAddressAndPerClientAreLimitedPerHour() throws {
        let f = try Fixture { $0.requestsPerClientPerHour = 5 }
        defer { f.cleanup() }
        for _ in 0..<3 { _ = try f.service.request(account: account(), email: "ana@campus.edu", client: "10.0.0.1") }
        #expect(refusal { try f.service.request(account: account(), email: "ANA@campus.edu", client: "10.0.0.2") }?.code == .rateLimited)
        _ = try f.service.request(account: account(), email: "ben@campus.edu", client: "10.0.0.1")
        // The client's sixth request within the hour (one above was refused before it counted for 10.0.0.1).
        _ = try f.service.request(account: account(), email: "cy@campus.edu", client: "10.0.0.1")
        #expect(refusal { try f.service.request(account: account(), email: "dee@campus.edu", client: "10.0.0.1") }?.code == .rateLimited)
        #expect(f.sink?.messages.count == 5)
        f.clock.advance(seconds: 3601)
        _ = try f.service.request(account: account(), email: "ana@campus.edu", client: "10.0.0.1")
        #expect(f.sink?.messages.count == 6)
    }

    @Test func pendingCodesAreBoundedAndExpiredOnesMakeRoom() throws {
        let f = try Fixture { $0.maxPendingCodes = 2 }
        defer { f.cleanup() }
        _ = try f.service.request(account: account(), email: "ana@campus.edu", client: "c")
        _ = try f.service.request(account: account(), email: "ben@campus.edu", client: "c")
        #expect(refusal { try f.service.request(account: account(), email: "cy@campus.edu", client: "c") }?.code == .rateLimited)
        f.clock.advance(seconds: 901)
        let late = account()
        _ = try f.service.request(account: late, email: "cy@campus.edu", client: "c")
        #expect(f.service.counts.pending == 1)
        #expect(try f.service.verify(account: late, code: try f.lastCode(to: "cy@campus.edu")).account == late)
    }

    @Test func oneAddressCertifiesOneAccountUntilReleasedOrExpired() throws {
        let f = try Fixture { $0.requestsPerAddressPerHour = 100 }
        defer { f.cleanup() }
        let ana = account(), other = account()
        _ = try f.service.request(account: ana, email: "ana@campus.edu", client: "c")
        _ = try f.service.verify(account: ana, code: try f.lastCode(to: "ana@campus.edu"))
        let taken = refusal { try f.service.request(account: other, email: "Ana@Campus.edu", client: "c") }
        #expect(taken?.code == .addressTaken)
        #expect(taken?.message.contains("mentormate-ca release ADDRESS") == true)
        // The same account may renew.
        _ = try f.service.request(account: ana, email: "ana@campus.edu", client: "c")
        _ = try f.service.verify(account: ana, code: try f.lastCode(to: "ana@campus.edu"))

        #expect(try f.service.release(address: "ANA@campus.edu"))
        #expect(try f.service.release(address: "ana@campus.edu") == false)
        _ = try f.service.request(account: other, email: "ana@campus.edu", client: "c")
        _ = try f.service.verify(account: other, code: try f.lastCode(to: "ana@campus.edu"))

        // After the certificate expires, the address is free again.
        f.clock.advance(seconds: 366 * 86_400)
        let third = account()
        _ = try f.service.request(account: third, email: "ana@campus.edu", client: "c")
        #expect(try f.service.verify(account: third, code: try f.lastCode(to: "ana@campus.edu")).account == third)
    }

    @Test func aRelayRefusingTheRecipientIsMailFailedAndNoCodeIsKept() throws {
        let f = try Fixture(sink: try SMTPSink(refuseRecipients: true))
        defer { f.cleanup() }
        let me = account()
        let error = refusal { try f.service.request(account: me, email: "ana@campus.edu", client: "c") }
        #expect(error?.code == .mailFailed)
        #expect(error?.message.contains("RCPT TO") == true && error?.message.contains("550") == true, "\(error?.message ?? "")")
        #expect(f.service.counts.pending == 0)
        #expect(refusal { try f.service.verify(account: me, code: "123456") }?.code == .noCode)
    }

    @Test func anUnreachableRelayIsMailFailed() throws {
        let f = try Fixture(relayPort: closedPort())
        defer { f.cleanup() }
        let error = refusal { try f.service.request(account: account(), email: "ana@campus.edu", client: "c") }
        #expect(error?.code == .mailFailed)
        #expect(error?.message.contains("cannot reach the mail relay") == true, "\(error?.message ?? "")")
        #expect(f.service.counts.pending == 0)
    }

    @Test func theStoreNeverHoldsTheAddressOrTheCode() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let me = account(), other = account()
        _ = try f.service.request(account: me, email: "Ana.Lovelace@campus.edu", client: "c")
        _ = try f.service.request(account: other, email: "ben@campus.edu", client: "c")
        let pendingCode = try f.lastCode(to: "ben@campus.edu")
        let pendingState = f.stateBytes
        #expect(!pendingState.isEmpty)
        _ = try f.service.verify(account: me, code: try f.lastCode(to: "Ana.Lovelace@campus.edu"))
        let certifiedState = f.stateBytes
        for state in [pendingState, certifiedState] {
            // In clear, or in the hex the file writes its bytes in.
            let held = state.contains(bytes:)
            for needle in ["Ana.Lovelace", "ana.lovelace", "ben@", "campus.edu", pendingCode] {
                let clear = held(Array(needle.utf8)), hex = held(Array(Hex.encode(Array(needle.utf8)).utf8))
                #expect(!clear, "state.json holds \(needle)")
                #expect(!hex, "state.json holds \(needle) in hex")
            }
        }
        // And it is what a restarted CA reads back.
        let reopened = try CAService(keys: f.keys, secret: f.secret, config: f.service.config,
                                     store: CAStateFile(path: f.statePath), mailer: SMTPClient(host: "127.0.0.1", port: 1, from: "a@campus.edu"),
                                     now: f.clock.read)
        #expect(reopened.counts == (pending: 1, certified: 1))
        #expect(try reopened.verify(account: other, code: pendingCode).account == other)
        var st = stat()
        #expect(stat(f.statePath, &st) == 0 && st.st_mode & 0o777 == 0o600)
    }

    @Test func codesOfTheWrongFormAreBadRequestsAndCostNoTry() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let me = account()
        _ = try f.service.request(account: me, email: "ana@campus.edu", client: "c")
        for code in ["12345", "1234567", "12345a", "", "١٢٣٤٥٦"] {
            #expect(refusal { try f.service.verify(account: me, code: code) }?.code == .badRequest)
        }
        #expect(try f.service.verify(account: me, code: try f.lastCode(to: "ana@campus.edu")).account == me)
    }
}
