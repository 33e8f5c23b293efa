import Testing
@testable import MentorCA

@Suite struct SMTPClientTests {
    @Test func bodyLinesStartingWithADotAreDoubledAndLinesEndInCRLF() throws {
        let message = try SMTPClient.compose(from: "ca@campus.edu", to: "ana@campus.edu", subject: "S",
                                             body: "one\n.two\r\n..three\rfour", date: 0, messageID: "<x@campus.edu>")
        let text = String(decoding: message, as: UTF8.self)
        #expect(text.hasSuffix("\r\n\r\none\r\n..two\r\n...three\r\nfour\r\n"))
        #expect(text.hasPrefix("From: ca@campus.edu\r\nTo: ana@campus.edu\r\nSubject: S\r\nDate: Thu, 01 Jan 1970 00:00:00 +0000\r\n"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }

    @Test func headerValuesWithLineBreaksAreRefused() throws {
        for to in ["ana@campus.edu\r\nBcc: eve@evil.com", "ana@campus.edu\nX: y", "ana@campus.edu\r"] {
            #expect(throws: SMTPError.self) {
                try SMTPClient.compose(from: "ca@campus.edu", to: to, subject: "S", body: "b", date: 0, messageID: "<x@y>")
            }
        }
    }

    @Test func theDateIsRFC5322() {
        #expect(SMTPClient.rfc5322Date(1_796_409_682_000) == "Fri, 04 Dec 2026 18:41:22 +0000")
    }

    @Test func aMultiLineEHLOReplyIsReadWhole() throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let client = SMTPClient(host: "127.0.0.1", port: sink.port, from: "ca@campus.edu", heloName: "ca.test")
        try client.send(to: "ana@campus.edu", subject: "Hi", body: ".hidden\nshown", date: 0)
        #expect(sink.messages.count == 1)
        #expect(sink.messages.first?.bodyLines.prefix(2) == [".hidden", "shown"])
    }
}
