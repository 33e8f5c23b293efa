#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorAPI
import MentorNet
import Testing
import MentorSystem

/// The error `body` throws, if it is an `RPCClientError`.
func clientError(_ body: () throws -> Void) -> RPCClientError? {
    do { try body() } catch let error as RPCClientError { return error } catch {}
    return nil
}

/// The connection error `body` throws, if any.
func connectionError(_ body: () throws -> Void) -> RPCConnectionError? {
    if case .connection(let error)? = clientError(body) { return error }
    return nil
}

@Test func aMissingSocketSaysHowToStartTheDaemon() throws {
    let path = "/tmp/mnet-none-\(getpid())/api.sock"
    let error = try #require(connectionError { _ = try RPCClient(path: path) })
    #expect(error.code == .socketMissing)
    #expect(error.message.contains(path))
    #expect(error.message.contains("is mentormated running? start it with `mentormated` or `systemctl start mentormated`"))
}

@Test func aStaleSocketIsReportedAsStale() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        // A socket file nobody listens on, as a killed daemon leaves it.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = try #require(UnixSocketAddress(path: path))
        #expect(address.withSockaddr { bind(fd, $0, $1) } == 0)
        close(fd)
        let error = try #require(connectionError { _ = try RPCClient(path: path) })
        #expect(error.code == .staleSocket)
        #expect(error.message.contains(path))
        #expect(error.message.contains("start mentormated"))
    }
}

@Test func aServerErrorIsThrownAsServerWithItsCodeAndMessage() async throws {
    try await withServer { env in
        let outcome = try await offPool {
            clientError { _ = try RPCClient(path: env.path, timeout: .seconds(5)).call("add", ["a": 1]) }
        }
        #expect(outcome == .server(RPCError(.invalidParams, "add: missing parameter \"b\"")))
        #expect(outcome?.description == "add: missing parameter \"b\"")
    }
}

@Test func aCallThatTimesOutLeavesTheClientUsable() async throws {
    try await withServer { env in
        let (timedOut, next) = try await offPool { () -> (RPCConnectionError?, JSON) in
            let client = try RPCClient(path: env.path, timeout: .milliseconds(100))
            let timedOut = connectionError { _ = try client.call("sleep", ["ms": 300]) }
            client.timeout = .seconds(5)
            // The late answer to the first call arrives first and is skipped.
            return (timedOut, try client.call("add", ["a": 20, "b": 22]))
        }
        #expect(timedOut?.code == .timedOut)
        #expect(timedOut?.message.contains("sleep") == true)
        #expect(next == 42)
    }
}

@Test func notificationsAreBufferedDuringCallsAndDeliveredInOrder() async throws {
    try await withServer { env in
        let (subscribed, answer, buffered) = try await offPool {
            let client = try RPCClient(path: env.path, timeout: .seconds(5))
            let subscribed = try client.call("subscribe")
            // The notification arrives before the response; call() keeps it for later.
            return (subscribed, try client.call("notifyThenAnswer"), try client.nextNotification(timeout: .seconds(1)))
        }
        #expect(subscribed == ["events": [], "claimed": true])
        #expect(answer == "done")
        #expect(buffered == RPCNotification(method: "event.test", params: ["n": 0]))
    }
}

@Test func nextNotificationWaitsForPushedEventsAndTimesOutQuietly() async throws {
    try await withServer { env in
        let client = try await offPool { () -> UncheckedBox<RPCClient> in
            let client = try RPCClient(path: env.path, timeout: .seconds(5))
            _ = try client.call("subscribe")
            return UncheckedBox(client)
        }
        let none = try await offPool { try client.value.nextNotification(timeout: .milliseconds(50)) }
        #expect(none == nil)

        let handle = try #require(env.handler.subscribers.first)
        for n in 1...3 { handle.send(RPCNotification(method: "event.message", params: ["n": .int(Int64(n))])) }
        let received = try await offPool {
            try (1...3).map { _ in try client.value.nextNotification(timeout: .seconds(5))?.params["n"] }
        }
        #expect(received == [1, 2, 3])

        // When the daemon goes away, a --follow loop ends with a clear error instead of hanging.
        env.server.shutdown()
        let closed = try await offPool { connectionError { _ = try client.value.nextNotification() } }
        #expect(closed?.code == .closed)
        #expect(closed?.message.contains("mentormated closed the connection") == true)
    }
}

@Test func aRefusedConnectionSurfacesTheServersReason() async throws {
    var settings = APIServer.Settings()
    settings.maxConnections = 1
    try await withServer(settings: settings) { env in
        let holder = try await offPool { try RawClient(path: env.path) }
        #expect(await eventually { env.server.connectionCount == 1 })
        let outcome = try await offPool {
            clientError { _ = try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        }
        guard case .server(let error)? = outcome else {
            Issue.record("expected the server's refusal, got \(String(describing: outcome))")
            return
        }
        #expect(error.code == -32010)
        #expect(error.message.contains("limit"))
        holder.close()
    }
}

/// Moves a non-Sendable client between `offPool` blocks of one test (used by one at a time).
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
