import Testing
@testable import MentorCA

@Suite struct CAConfigTests {
    @Test func theFileInitWritesReadsBackAsTheSameSettings() throws {
        var config = CAConfig(domain: "campus.edu")
        try config.set("smtp", "mail.campus.edu:587", at: "test")
        try config.set("validity_days", "30", at: "test")
        try config.set("allow_subdomains", "true", at: "test")
        #expect(try CAConfig.parse(config.fileText, path: "ca.conf") == config)
        #expect(try CAConfig.parse(CAConfig(domain: "campus.edu").fileText, path: "ca.conf") == CAConfig(domain: "campus.edu"))
    }

    @Test func mistakesNameTheLineAndTheFix() {
        func error(_ text: String) -> String? {
            do { _ = try CAConfig.parse(text, path: "ca.conf"); return nil } catch { return error.message }
        }
        #expect(error("domain = campus.edu\nsmtpp = x:25\n")?.hasPrefix("ca.conf:2: unknown key 'smtpp'") == true)
        #expect(error("listen = [::]:4712\n")?.contains("no `domain = …` line") == true)
        #expect(error("domain = Campus.EDU\n")?.hasPrefix("ca.conf:1:") == true)
        #expect(error("domain = campus.edu\nvalidity_days = 0\n")?.contains("validity_days must be a whole number from 1") == true)
        #expect(error("domain = campus.edu\nsmtp = relay\n")?.contains("port is missing") == true)
        #expect(error("domain = campus.edu\ndomain = other.edu\n")?.contains("set twice") == true)
        #expect(error("domain = campus.edu\nfrom = a@b.edu\r\nBcc: x@y.z\n") != nil)
        #expect(error("domain = campus.edu\njust words\n")?.contains("ca.conf:2") == true)
    }
}
