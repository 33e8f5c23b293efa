import Testing
@Test func placeholderMentorCoreTests() { #expect(Bool(true)) }
