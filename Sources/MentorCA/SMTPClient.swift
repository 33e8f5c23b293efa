#if canImport(Glibc)
import Glibc
#endif
import MentorCore
import MentorCrypto
import MentorSystem

/// A failed mail submission: the step (`RCPT TO`, `connect`), and what the relay said or why
/// it could not be asked.
public struct SMTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public let step: String
    public let detail: String

    public init(step: String, detail: String) {
        self.step = step
        self.detail = detail
    }

    public var description: String { "mail submission failed at \(step): \(detail)" }
}

/// Minimal SMTP submission (RFC 5321) to the campus's own relay: greeting, `EHLO`, `MAIL FROM`,
/// `RCPT TO`, `DATA` with the message dot-stuffed in CRLF lines, `.`, `QUIT`. Multi-line replies
/// (`250-…`) are read whole; any reply other than the one each step expects ends the
/// submission with an error naming the step and the relay's line. Every step has its own
/// timeout. No TLS and no AUTH: the relay is reached on a trusted network or on localhost (a
/// TLS relay through a local stunnel or postfix; docs/OPERATIONS.md).
public struct SMTPClient: Sendable {
    public let host: String
    public let port: UInt16
    /// The envelope and `From:` address.
    public let from: String
    /// The name given in `EHLO`.
    public let heloName: String
    public let stepTimeout: Duration

    /// The longest reply line read from the relay (RFC 5321 allows 512; some relays send more).
    static let maxReplyLine = 2048
    /// Lines of a multi-line reply read at most.
    static let maxReplyLines = 100

    public init(host: String, port: UInt16, from: String, heloName: String? = nil, stepTimeout: Duration = .seconds(10)) {
        self.host = host
        self.port = port
        self.from = from
        self.heloName = heloName ?? Self.hostName()
        self.stepTimeout = stepTimeout
    }

    /// This machine's name (`gethostname`), or "localhost".
    static func hostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let text = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty || !isHeaderSafe(text) || text.contains(" ") ? "localhost" : text
    }

    /// Submits one plain-text message to `to`. `date` is Unix milliseconds (the `Date:` header).
    public func send(to recipient: String, subject: String, body: String, date: UInt64) throws(SMTPError) {
        let message = try Self.compose(from: from, to: recipient, subject: subject, body: body, date: date,
                                       messageID: Self.messageID(from: from))
        for (what, value) in [("MAIL FROM", from), ("RCPT TO", recipient), ("EHLO", heloName)] where !Self.isHeaderSafe(value) || value.contains(" ") {
            throw SMTPError(step: what, detail: "'\(value)' holds a space or a control character; no mail was sent")
        }
        let server = HostPort.format(host: host, port: port)
        let connection: LineSocket
        do {
            connection = try LineSocket.connect(host: host, port: port, deadline: .now + stepTimeout, maxLine: Self.maxReplyLine)
        } catch {
            throw SMTPError(step: "connect", detail: "cannot reach the mail relay at \(server): \(error.reason); check `smtp` in ca.conf and that the relay runs")
        }
        defer { connection.close() }

        try expect(connection, "greeting", [220])
        try command(connection, "EHLO \(heloName)", step: "EHLO", [250])
        try command(connection, "MAIL FROM:<\(from)>", step: "MAIL FROM", [250])
        try command(connection, "RCPT TO:<\(recipient)>", step: "RCPT TO", [250, 251])
        try command(connection, "DATA", step: "DATA", [354])
        do { try connection.send(message + Array(".\r\n".utf8), deadline: .now + stepTimeout) } catch {
            throw SMTPError(step: "message", detail: "sending the message to \(server) failed: \(error.reason)")
        }
        try expect(connection, "end of message", [250])
        // The message is taken; a relay that answers QUIT badly changes nothing.
        try? command(connection, "QUIT", step: "QUIT", [221])
    }

    private func command(_ connection: LineSocket, _ line: String, step: String, _ codes: Set<Int>) throws(SMTPError) {
        do { try connection.send(Array((line + "\r\n").utf8), deadline: .now + stepTimeout) } catch {
            throw SMTPError(step: step, detail: "the relay at \(connection.peer) did not take the command: \(error.reason)")
        }
        try expect(connection, step, codes)
    }

    /// Reads one reply (all its lines) and checks its code.
    private func expect(_ connection: LineSocket, _ step: String, _ codes: Set<Int>) throws(SMTPError) {
        let deadline = ContinuousClock.now + stepTimeout
        var count = 0
        while true {
            let bytes: [UInt8]
            do { bytes = try connection.readLine(deadline: deadline) } catch {
                throw SMTPError(step: step, detail: "no reply from the relay at \(connection.peer): \(error.reason)")
            }
            count += 1
            let line = String(decoding: bytes, as: UTF8.self)
            guard bytes.count >= 3, let code = Int(String(decoding: bytes[0..<3], as: UTF8.self)),
                  bytes.count == 3 || bytes[3] == UInt8(ascii: " ") || bytes[3] == UInt8(ascii: "-") else {
                throw SMTPError(step: step, detail: "the relay sent '\(Self.printable(line))', which is not an SMTP reply")
            }
            if bytes.count > 3 && bytes[3] == UInt8(ascii: "-") {
                guard count < Self.maxReplyLines else {
                    throw SMTPError(step: step, detail: "the relay's reply runs past \(Self.maxReplyLines) lines")
                }
                continue
            }
            guard codes.contains(code) else {
                throw SMTPError(step: step, detail: "the relay answered '\(Self.printable(line))'")
            }
            return
        }
    }

    // MARK: The message

    /// The message as sent after `DATA` (without the final "."): headers and body in CRLF lines,
    /// body lines starting with "." doubled (dot-stuffing, RFC 5321 §4.5.2). Header values with a
    /// CR, LF or other control character are refused (header injection).
    static func compose(from: String, to: String, subject: String, body: String, date: UInt64,
                        messageID: String) throws(SMTPError) -> [UInt8] {
        let headers = [("From", from), ("To", to), ("Subject", subject), ("Date", rfc5322Date(date)),
                       ("Message-ID", messageID), ("MIME-Version", "1.0"),
                       ("Content-Type", "text/plain; charset=utf-8"), ("Content-Transfer-Encoding", "8bit")]
        var text = ""
        for (name, value) in headers {
            guard isHeaderSafe(value) else {
                throw SMTPError(step: "message", detail: "the \(name) header would hold a line break or control character; no mail was sent")
            }
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        let normalized = body.replacingLineEnds()
        for line in normalized.split(separator: "\n", omittingEmptySubsequences: false) {
            text += (line.hasPrefix(".") ? "." : "") + line + "\r\n"
        }
        return Array(text.utf8)
    }

    /// No C0 control character (CR and LF among them) and no DEL.
    static func isHeaderSafe(_ value: String) -> Bool {
        !value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f }
    }

    /// `line` with control characters shown as "?", for error messages.
    static func printable(_ line: String) -> String {
        String(line.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : Character($0) }.prefix(200))
    }

    /// A unique `Message-ID`: random, at the sender's domain.
    static func messageID(from: String) -> String {
        let domain = from.split(separator: "@").last.map(String.init) ?? "mentormate-ca.invalid"
        return "<\(Hex.encode(SecureRandom.bytes(16)))@\(domain)>"
    }

    /// RFC 5322 date-time in UTC: "Fri, 04 Dec 2026 18:41:22 +0000".
    static func rfc5322Date(_ millis: UInt64) -> String {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }
}

extension String {
    /// CRLF and lone CR as LF.
    func replacingLineEnds() -> String {
        var out = ""
        var previousCR = false
        for scalar in unicodeScalars {
            if scalar == "\r" { out.append("\n"); previousCR = true; continue }
            if scalar == "\n" && previousCR { previousCR = false; continue }
            previousCR = false
            out.unicodeScalars.append(scalar)
        }
        return out
    }
}
