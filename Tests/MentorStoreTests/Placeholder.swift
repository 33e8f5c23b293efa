import Testing
@Test func placeholderMentorStoreTests() { #expect(Bool(true)) }
