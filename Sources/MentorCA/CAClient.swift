#if canImport(Glibc)
import Glibc
#endif
import MentorCore
import MentorCrypto
import MentorSystem

/// A client of the campus CA (`mentormate member …` uses it): one connection per call, one
/// request line, one answer line. Every failure is a `CAError` whose description says what to
/// do — the server's own message for a refusal.
///
/// ```swift
/// let ca = try CAClient(address: "ca.campus.edu:4712")
/// let receipt = try ca.request(account: me, email: "ana@campus.edu")   // "a…@campus.edu"
/// let certificate = try ca.verify(account: me, code: "123456")         // checked
/// ```
public struct CAClient: Sendable {
    public let host: String
    public let port: UInt16
    /// For the whole exchange: connect, send, answer.
    public let timeout: Duration

    public init(host: String, port: UInt16, timeout: Duration = .seconds(10)) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    /// `address` is HOST:PORT (an IPv6 address in brackets).
    public init(address: String, timeout: Duration = .seconds(10)) throws(CAError) {
        let parsed: (host: String, port: UInt16)
        do { parsed = try HostPort.parse(address) } catch {
            throw CAError(.unreachable, "the campus CA address \(error.description); check `campus_ca` in the config or pass --ca HOST:PORT")
        }
        self.init(host: parsed.host, port: parsed.port, timeout: timeout)
    }

    public var address: String { HostPort.format(host: host, port: port) }

    public func info() throws(CAError) -> CAInfo {
        guard case .info(let info) = try exchange(.info) else { throw unexpected("info") }
        return info
    }

    public func request(account: PublicKey, email: String) throws(CAError) -> CARequestReceipt {
        guard case .requested(let receipt) = try exchange(.request(account: account, email: email)) else { throw unexpected("request") }
        return receipt
    }

    /// The certificate for `account`, after checking its signature and that it names `account`.
    public func verify(account: PublicKey, code: String) throws(CAError) -> MembershipCertificate {
        guard case .certificate(let certificate) = try exchange(.verify(account: account, code: code)) else { throw unexpected("verify") }
        guard certificate.hasValidSignature else {
            throw CAError(.badCertificate, "the CA at \(address) sent a certificate whose signature does not verify; do not use it, and tell the CA's operator")
        }
        guard certificate.account == account else {
            throw CAError(.badCertificate, "the CA at \(address) sent a certificate for another account (\(certificate.account.shortID)…); do not use it, and tell the CA's operator")
        }
        return certificate
    }

    /// Sends `request`, returns the answer; a refusal is thrown.
    public func exchange(_ request: CARequest) throws(CAError) -> CAResponse {
        let deadline = ContinuousClock.now + timeout
        let connection: LineSocket
        do {
            connection = try LineSocket.connect(host: host, port: port, deadline: deadline, maxLine: CAWire.maxLine)
        } catch {
            throw failure(error, while: "reach")
        }
        defer { connection.close() }
        let line: [UInt8]
        do {
            try connection.send(request.line, deadline: deadline)
            line = try connection.readLine(deadline: deadline)
        } catch {
            throw failure(error, while: "get an answer from")
        }
        let response = try CAResponse(line: line)
        if case .failure(let refusal) = response { throw refusal }
        return response
    }

    private func failure(_ error: LineSocketFailure, while doing: String) -> CAError {
        let fix = "check `campus_ca` in the config or pass --ca"
        switch error {
        case .timedOut:
            return CAError(.timedOut, "the campus CA at \(address) did not answer within \(timeout); try again later, or \(fix)")
        case .closed:
            return CAError(.badResponse, "the campus CA at \(address) closed the connection without answering; try again, or \(fix)")
        case .lineTooLong:
            return CAError(.badResponse, "the campus CA at \(address) sent an answer longer than \(CAWire.maxLine) bytes; is it a mentormate-ca?")
        case .system(let system):
            let reason = system.errno != 0 ? String(cString: strerror(system.errno)).lowercased() : system.what
            return CAError(.unreachable, "cannot \(doing) the campus CA at \(address): \(reason); \(fix)")
        }
    }

    private func unexpected(_ op: String) -> CAError {
        CAError(.badResponse, "the campus CA at \(address) answered \(op) with another kind of answer; is it a mentormate-ca of this version?")
    }
}
