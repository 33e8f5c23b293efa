import Testing
import MentorCrypto

@Suite struct CryptoErrorTests {
    @Test func catchClauseMatchesOnCode() {
        func fail() throws { throw CryptoError(.wrongPassphrase, "the passphrase does not open the file") }
        var matched = false
        do {
            try fail()
        } catch CryptoError.Code.passphraseRequired {
            Issue.record("matched the wrong code")
        } catch CryptoError.Code.wrongPassphrase {
            matched = true
        } catch {
            Issue.record("no code matched \(error)")
        }
        #expect(matched)
    }

    @Test func descriptionNamesCodeAndMessage() {
        let error = CryptoError(.keyFileMissing, "no key file at /x")
        #expect(error.description == "keyFileMissing: no key file at /x")
        #expect(error == CryptoError(.keyFileMissing, "no key file at /x"))
        #expect(error != CryptoError(.malformedKeyFile, "no key file at /x"))
    }
}
