import Foundation
import MentorAPI
import MentorCore
import MentorSystem
import Testing
@testable import MentorCA
#if canImport(Glibc)
import Glibc
#endif

/// A CAServer on 127.0.0.1 (a free port) over a fixture's service, running on its own thread.
final class RunningServer: @unchecked Sendable {
    let server: CAServer
    private let done = DispatchSemaphore(value: 0)
    init(_ service: CAService, maxConnections: Int? = nil) throws {
        server = try CAServer(service: service, host: "127.0.0.1", port: 0, logger: DiscardingLogger(),
                              maxConnections: maxConnections, deadline: .seconds(2))
        let thread = Thread { [server, done] in server.run(); done.signal() }
        thread.start()
    }
    var client: CAClient { CAClient(host: "127.0.0.1", port: server.port, timeout: .seconds(10)) }
    func stop() { server.stop(); done.wait() }

    /// Sends raw bytes and returns everything the server sends back until it closes.
    func raw(_ bytes: [UInt8]) throws -> [UInt8] {
        let connection = try LineSocket.connect(host: "127.0.0.1", port: server.port, deadline: .now + .seconds(5), maxLine: 1 << 16)
        defer { connection.close() }
        try connection.send(bytes, deadline: .now + .seconds(5))
        var out: [UInt8] = []
        while true {
            do { out += try connection.readLine(deadline: .now + .seconds(5)) + [0x0A] } catch {
                if case .closed = error { return out }
                throw error
            }
        }
    }
}

@Suite struct CAServerTests {
    @Test func infoRequestAndVerifyRoundTripThroughTheClient() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let running = try RunningServer(f.service)
        defer { running.stop() }
        let me = account()

        let info = try running.client.info()
        #expect(info == CAInfo(key: f.keys.publicKey.key, domain: "campus.edu", codeTTL: 900))
        let receipt = try running.client.request(account: me, email: "ana@campus.edu")
        #expect(receipt.sentTo == "a…@campus.edu" && receipt.expiresIn == 900)
        let code = try f.lastCode(to: "ana@campus.edu")
        let wrong = refusal { try running.client.verify(account: me, code: code == "999999" ? "888888" : "999999") }
        #expect(wrong?.code == .wrongCode && wrong?.message.contains("4 tries left") == true, "\(wrong?.message ?? "")")
        let certificate = try running.client.verify(account: me, code: code)
        #expect(certificate.account == me && certificate.hasValidSignature && certificate.ca == info.key)
        #expect(refusal { try running.client.request(account: account(), email: "ana@gmail.com") }?.code == .wrongDomain)
    }

    @Test func theWireIsOneJSONLineEachWay() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let running = try RunningServer(f.service)
        defer { running.stop() }
        let answer = try running.raw(Array("{\"op\":\"info\"}\n".utf8))
        let json = try #require(JSON.parse(Array(answer.dropLast())))
        #expect(json["ok"] == true && json["domain"] == "campus.edu" && json["codeTTL"] == 900)
        #expect(json["key"]?.stringValue == MembershipCertificate.printKey(f.keys.publicKey.key))
        #expect(answer.filter { $0 == 0x0A }.count == 1)
    }

    @Test func garbageAndUnknownOpsAreBadRequests() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let running = try RunningServer(f.service)
        defer { running.stop() }
        for line in ["hello\n", "[1,2]\n", "{\"op\":\"steal\"}\n", "{\"op\":\"info\",\"x\":1}\n",
                     "{\"op\":\"request\",\"account\":\"mm1abc\",\"email\":\"a@campus.edu\"}\n"] {
            let answer = try running.raw(Array(line.utf8))
            let json = try #require(JSON.parse(Array(answer.dropLast())), "\(line)")
            #expect(json["ok"] == false && json["code"] == "bad-request", "\(line) → \(json)")
            #expect((json["error"]?.stringValue ?? "").count > 20)
        }
    }

    @Test func aLineOver4KiBClosesTheConnectionWithoutAnAnswer() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let running = try RunningServer(f.service)
        defer { running.stop() }
        let long = "{\"op\":\"info\",\"pad\":\"" + String(repeating: "x", count: 5000) + "\"}\n"
        #expect(try running.raw(Array(long.utf8)).isEmpty)
        // The server still serves.
        #expect(try running.client.info().domain == "campus.edu")
    }

    @Test func connectionsBeyondTheLimitAreAnsweredBusyAndASilentClientIsDroppedAtTheDeadline() throws {
        let f = try Fixture()
        defer { f.cleanup() }
        let running = try RunningServer(f.service, maxConnections: 1)
        defer { running.stop() }
        // A client that connects and says nothing holds the one slot...
        let silent = try LineSocket.connect(host: "127.0.0.1", port: running.server.port, deadline: .now + .seconds(5), maxLine: 4096)
        defer { silent.close() }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(refusal { try running.client.info() }?.code == .busy)
        // ...until the connection's deadline (2 s here) closes it without an answer.
        #expect(throws: LineSocketFailure.self) { try silent.readLine(deadline: .now + .seconds(5)) }
        #expect(try running.client.info().domain == "campus.edu")
    }

    @Test func aServerNotListeningIsAClearError() throws {
        let port = closedPort()
        let error = refusal { try CAClient(host: "127.0.0.1", port: port).info() }
        #expect(error?.code == .unreachable)
        #expect(error?.message == "cannot reach the campus CA at 127.0.0.1:\(port): connection refused; check `campus_ca` in the config or pass --ca",
                "\(error?.message ?? "")")
    }

    @Test func protocolTypesRoundTripThroughJSON() throws {
        let me = account()
        for request in [CARequest.info, .request(account: me, email: "a@b.edu"), .verify(account: me, code: "123456")] {
            #expect(try CARequest(line: Array(request.line.dropLast())) == request)
        }
        let failure = CAResponse.failure(CAError(.noCode, "none"))
        #expect(try CAResponse(line: Array(failure.line.dropLast())) == failure)
        let receipt = CAResponse.requested(CARequestReceipt(sentTo: "a…@b.edu", expiresIn: 900))
        #expect(try CAResponse(line: Array(receipt.line.dropLast())) == receipt)
    }
}
