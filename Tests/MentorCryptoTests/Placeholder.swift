import Testing
@Test func placeholderMentorCryptoTests() { #expect(Bool(true)) }
