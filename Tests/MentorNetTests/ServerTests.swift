#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorAPI
@testable import MentorNet
import Synchronization
import Testing
import MentorSystem

// MARK: Requests and errors

@Test func echoRoundTripCarriesTheCallersPeerCredentials() async throws {
    try await withServer { env in
        let result = try await offPool {
            try RPCClient(path: env.path, timeout: .seconds(5)).call("echo", ["text": "héllo", "n": 42])
        }
        #expect(result["params"] == ["text": "héllo", "n": 42])
        #expect(result["uid"]?.intValue == Int64(getuid()))
        #expect(result["gid"]?.intValue == Int64(getgid()))
        #expect(result["pid"]?.intValue == Int64(getpid()))  // the client runs in this process
    }
}

@Test func garbageBytesGetAParseErrorAndTheConnectionStaysUsable() async throws {
    try await withServer { env in
        let (garbage, after) = try await offPool {
            let client = try RawClient(path: env.path)
            client.send([0xFF, 0xFE, 0x00, 0x7B, 0x0A])
            let garbage = client.readJSON()
            client.request(2, "echo", ["x": 1])
            return (garbage, client.readJSON())
        }
        #expect(garbage?.errorCode == -32700)
        #expect(garbage?["id"] == .null)
        #expect(after?["id"] == 2)
        #expect(after?["result"]?["params"] == ["x": 1])
    }
}

@Test func invalidEnvelopesGetInvalidRequestWithTheIdWhenKnown() async throws {
    try await withServer { env in
        let answers = try await offPool {
            let client = try RawClient(path: env.path)
            var answers: [JSON?] = []
            for line in ["42", "[]", #"{"id":7,"method":"echo"}"#,
                         #"{"jsonrpc":"2.0","id":8,"method":"echo","params":[1,2]}"#] {
                client.send(line + "\n")
                answers.append(client.readJSON())
            }
            return answers
        }
        #expect(answers[0]?.errorCode == -32600)
        #expect(answers[0]?["id"] == .null)
        #expect(answers[1]?.errorCode == -32600)
        #expect(answers[1]?["id"] == .null && answers[1]?.errorMessage?.contains("empty batch") == true, "an empty batch: one error object")
        #expect(answers[2]?.errorCode == -32600)
        #expect(answers[2]?["id"] == 7)
        #expect(answers[3]?.errorCode == -32602)
        #expect(answers[3]?["id"] == 8)
        // None of these reached the handler.
        #expect(env.handler.methods.isEmpty)
    }
}

/// JSON-RPC 2.0 §6 and the specification's batch examples (with this handler's methods): an
/// array of requests is answered by an array of the responses to those with an id, in order;
/// invalid elements get their errors in it; an empty array, invalid JSON or an oversized batch
/// get one error object; a batch of notifications gets nothing.
@Test func batchesAreAnsweredAsTheJSONRPCSpecificationSays() async throws {
    try await withServer { env in
        let (answers, afterNotifications) = try await offPool {
            let client = try RawClient(path: env.path)
            var answers: [JSON?] = []
            let tooMany = "[" + Array(repeating: #"{"jsonrpc":"2.0","method":"echo"}"#, count: 101).joined(separator: ",") + "]"
            for line in [
                #"[{"jsonrpc":"2.0","method":"echo","params":{"a":1},"id":"1"},{"jsonrpc":"2.0","method""#,
                "[1]", "[1,2,3]",
                #"[{"jsonrpc":"2.0","method":"echo","params":{"x":1},"id":"1"},{"jsonrpc":"2.0","method":"echo","params":{"n":7}},"#
                    + #"{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"2"},{"foo":"boo"},"#
                    + #"{"jsonrpc":"2.0","method":"no.such.method","params":{},"id":"5"}]"#,
                tooMany,
            ] {
                client.send(line + "\n")
                answers.append(client.readJSON())
            }
            client.send(#"[{"jsonrpc":"2.0","method":"echo","params":{"n":1}},{"jsonrpc":"2.0","method":"echo","params":{"n":2}}]"# + "\n")
            client.request(9, "echo", ["after": true])
            return (answers, client.readJSON())
        }
        #expect(answers[0]?.errorCode == -32700 && answers[0]?["id"] == .null, "invalid JSON: one error object")
        let one = answers[1]?.arrayValue
        #expect(one?.count == 1 && one?[0].errorCode == -32600 && one?[0]["id"] == .null)
        let three = answers[2]?.arrayValue
        #expect(three?.count == 3 && three?.allSatisfy { $0.errorCode == -32600 } == true)
        let mixed = try #require(answers[3]?.arrayValue, "a mixed batch is answered by an array: \(String(describing: answers[3]))")
        #expect(mixed.count == 4, "the notification gets no response: \(mixed)")
        #expect(mixed.map { $0["id"] } == ["1", "2", .null, "5"])
        #expect(mixed[0]["result"]?["params"] == ["x": 1])
        #expect(mixed[1]["result"] == 3)
        #expect(mixed[2].errorCode == -32600 && mixed[3].errorCode == -32601)
        #expect(answers[4]?.errorCode == -32600 && answers[4]?.errorMessage?.contains("at most 100") == true, "one error object")
        #expect(afterNotifications?["id"] == 9, "a batch of notifications is answered by nothing")
        // Run in order, notifications too; nothing of the oversized batch ran.
        #expect(env.handler.methods == ["echo", "echo", "add", "no.such.method", "echo", "echo", "echo"])
    }
}

/// A batch's answers go out as one line: once they pass the output high-water mark the rest of
/// the batch is not run (its requests answered -32010, its notifications dropped), so one line
/// cannot make the daemon build more than a bounded answer.
@Test func aBatchStopsRunningOnceItsAnswersPassTheOutputLimit() async throws {
    var settings = APIServer.Settings()
    settings.outputHighWater = 100
    try await withServer(settings: settings) { env in
        let answer = try await offPool {
            let client = try RawClient(path: env.path)
            let requests = (1...5).map { #"{"jsonrpc":"2.0","method":"echo","params":{"text":"0123456789"},"id":\#($0)}"# }
            client.send("[" + (requests + [#"{"jsonrpc":"2.0","method":"echo"}"#]).joined(separator: ",") + "]\n")
            return client.readJSON()
        }
        let answers = try #require(answer?.arrayValue, "\(String(describing: answer))")
        #expect(answers.count == 5, "the notification is not answered")
        let ran = answers.prefix { $0["result"] != nil }.count
        #expect(ran >= 1 && ran < 5, "some ran, then the answers passed 100 bytes: \(answers)")
        #expect(answers.dropFirst(ran).allSatisfy { $0.errorCode == -32010 }, "\(answers)")
        #expect(answers.map { $0["id"] } == [1, 2, 3, 4, 5])
        #expect(env.handler.methods.count == ran, "what was answered -32010 did not run, nor the notification")
    }
}

@Test func unknownMethodsArePassedToTheHandlerWhichAnswersMethodNotFound() async throws {
    try await withServer { env in
        let outcome = try await offPool {
            clientError { _ = try RPCClient(path: env.path, timeout: .seconds(5)).call("no.such.method") }
        }
        guard case .server(let error)? = outcome else {
            Issue.record("expected a server error, got \(String(describing: outcome))")
            return
        }
        #expect(error.code == -32601)
        #expect(error.message == "the test handler has no method \"no.such.method\"")
        #expect(env.handler.methods == ["no.such.method"])
    }
}

@Test func wrongParameterTypesAreInvalidParamsNamingTheParameter() async throws {
    try await withServer { env in
        let (sum, wrong, unknown) = try await offPool {
            let client = try RPCClient(path: env.path, timeout: .seconds(5))
            let sum = try client.call("add", ["a": 2, "b": 40])
            func failure(_ params: [String: JSON]) -> RPCError? {
                if case .server(let error)? = clientError({ _ = try client.call("add", params) }) { return error }
                return nil
            }
            return (sum, failure(["a": "two", "b": 40]), failure(["a": 1, "b": 2, "c": 3]))
        }
        #expect(sum == 42)
        #expect(wrong == RPCError(.invalidParams, "add: parameter \"a\" must be an integer"))
        #expect(unknown?.code == -32602)
        #expect(unknown?.message.contains("\"c\"") == true)
    }
}

@Test func requestsWithoutIdAreHandledButNotAnswered() async throws {
    try await withServer { env in
        let next = try await offPool {
            let client = try RawClient(path: env.path)
            client.send(#"{"jsonrpc":"2.0","method":"echo"}"# + "\n")
            client.request(5, "add", ["a": 1, "b": 1])
            return client.readJSON()
        }
        #expect(next?["id"] == 5)  // the first line produced no response
        #expect(env.handler.methods == ["echo", "add"])
    }
}

// MARK: Ordering and independence

@Test func responsesOnOneConnectionComeInRequestOrder() async throws {
    try await withServer { env in
        let ids = try await offPool {
            let client = try RawClient(path: env.path)
            // Pipelined in one write: a slow request first must still be answered first.
            var batch: [UInt8] = []
            batch += RPCRequest(id: 1, method: "sleep", params: ["ms": 150]).line
            batch += RPCRequest(id: 2, method: "echo").line
            batch += Array("garbage\n".utf8)
            batch += RPCRequest(id: 4, method: "sleep", params: ["ms": 20]).line
            batch += RPCRequest(id: 5, method: "echo").line
            client.send(batch)
            return (0..<5).map { _ in client.readJSON()?["id"] }
        }
        #expect(ids == [1, 2, .null, 4, 5])
    }
}

@Test func aSlowRequestDoesNotHoldUpOtherConnections() async throws {
    try await withServer { env in
        let slow = try await offPool { () -> RawClient in
            let client = try RawClient(path: env.path)
            client.request(1, "sleep", ["ms": 1000])
            return client
        }
        #expect(await eventually { env.handler.sleepsStarted == 1 })
        let fast = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo", ["q": 1]) }
        #expect(fast["params"] == ["q": 1])
        #expect(env.handler.sleepsFinished == 0)  // answered while the slow one still runs
        let slowAnswer = try await offPool { slow.readJSON() }
        #expect(slowAnswer?["result"]?["slept"] == 1000)
    }
}

// MARK: Hostile and careless clients

@Test func anEndlessLineGetsAnErrorAndIsClosedWhileOthersAreServed() async throws {
    try await withServer { env in
        let flooder = try await offPool { try RawClient(path: env.path) }
        // 2 MiB without a newline, from its own thread: the send blocks once the server stops reading.
        let sender = Task.detached { flooder.send([UInt8](repeating: 0x61, count: 2 << 20)) }
        let other = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo", ["still": true]) }
        #expect(other["params"] == ["still": true])

        let (error, closed) = try await offPool { (flooder.readJSON(), flooder.waitClosed()) }
        #expect(error?.errorCode == -32600)
        #expect(error?.errorMessage?.hasPrefix("request line longer than 1 MiB") == true)
        #expect(error?["id"] == .null)
        #expect(closed)
        _ = await sender.value  // the rest of its 2 MiB was refused (EPIPE/ECONNRESET), not buffered
        #expect(await eventually { env.server.connectionCount == 0 })
        #expect(env.logger.contains("over the limit"))
        // One log line for the incident, not one per byte or per chunk.
        #expect(env.logger.lines.withLock { $0.filter { $0.1.contains("over the limit") }.count } == 1)
    }
}

@Test func aHalfSentRequestThenDisconnectLeavesTheServerFine() async throws {
    try await withServer { env in
        try await offPool {
            let client = try RawClient(path: env.path)
            client.send(#"{"jsonrpc":"2.0","id":1,"method":"ec"#)
        }  // the client is released here: its socket closes mid-line
        #expect(await eventually { env.handler.closed.count == 1 })
        #expect(env.handler.methods.isEmpty)  // the partial line was discarded, not parsed
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        #expect(answer["params"] == [:])
        #expect(await eventually { env.server.connectionCount == 0 })
    }
}

@Test func aClientThatLeavesMidRequestHasItsResponseDiscarded() async throws {
    try await withServer { env in
        try await offPool {
            let client = try RawClient(path: env.path)
            client.request(1, "sleep", ["ms": 100])
            shutdown(client.fd, Int32(SHUT_RDWR))
        }
        #expect(await eventually { env.handler.sleepsFinished == 1 })
        #expect(await eventually { env.handler.closed.count == 1 && env.server.connectionCount == 0 })
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("add", ["a": 1, "b": 2]) }
        #expect(answer == 3)
    }
}

@Test func aHalfClosedClientStillGetsItsAnswers() async throws {
    // `echo '{...}' | socat - UNIX-CONNECT:…` sends, shuts down its write side, then reads.
    try await withServer { env in
        let (first, second, closed) = try await offPool {
            let client = try RawClient(path: env.path)
            client.request(1, "sleep", ["ms": 50])
            client.request(2, "echo")
            shutdown(client.fd, Int32(SHUT_WR))
            return (client.readJSON(), client.readJSON(), client.waitClosed())
        }
        #expect(first?["result"]?["slept"] == 50)
        #expect(second?["id"] == 2)
        #expect(closed)
    }
}

@Test func aSubscriberThatNeverReadsCannotGrowTheServerAndOthersStayServed() async throws {
    try await withServer { env in
        let sleeper = try await offPool {
            let client = try RawClient(path: env.path)
            client.request(1, "subscribe")
            _ = client.readJSON()
            return client
        }
        let handle = try #require(env.handler.subscribers.first)
        let total = 100_000
        let accepted = try await offPool {
            var accepted = 0
            for i in 0..<total where handle.send(RPCNotification(method: "event.test", params: ["n": .int(Int64(i))])) {
                accepted += 1
            }
            return accepted
        }
        // Bounded: at most 1,000 wait in the server; the rest were dropped and counted.
        #expect(handle.queuedNotifications <= 1000)
        #expect(accepted + handle.droppedNotifications == total)
        #expect(handle.droppedNotifications >= total - 1000 - 20_000)  // the socket buffer holds a few
        // Another client is answered promptly meanwhile.
        let started = ContinuousClock.now
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo", ["ok": true]) }
        #expect(answer["params"] == ["ok": true])
        #expect(ContinuousClock.now - started < .seconds(1))

        // When the sleeper finally reads, it gets what was kept, then one event.overflow with
        // the exact number it missed.
        let (received, overflow, after) = try await offPool { () -> (Int, JSON?, ReadResult) in
            var received = 0
            while true {
                guard let json = sleeper.readJSON() else { return (received, nil, .timedOut) }
                if json["method"] == "event.overflow" {
                    return (received, json["params"], sleeper.readLine(timeout: .milliseconds(100)))
                }
                received += 1
            }
        }
        #expect(received == accepted)
        #expect(overflow?["dropped"]?.intValue == Int64(total - accepted))
        #expect(after == .timedOut)  // a single overflow notice
        #expect(handle.queuedNotifications == 0)
    }
}

@Test func aClientThatPipelinesButNeverReadsIsNotServedBeyondTheOutputLimit() async throws {
    var settings = APIServer.Settings()
    settings.outputHighWater = 1 << 20
    try await withServer(settings: settings) { env in
        let total = 60
        let greedy = try await offPool { () -> RawClient in
            let client = try RawClient(path: env.path)
            var batch: [UInt8] = []
            for id in 1...total { batch += RPCRequest(id: .int(Int64(id)), method: "big", params: ["kib": 256]).line }
            client.send(batch)
            return client
        }
        // It stops being served once about 1 MiB of answers wait (plus what the socket holds).
        #expect(await eventually { env.handler.methods.count >= 4 })
        try await Task.sleep(for: .milliseconds(200))
        let served = env.handler.methods.count
        #expect(served < 20)
        let other = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        #expect(other["params"] == [:])
        // Reading again lets it continue, and every answer arrives, in order.
        let ids = try await offPool { (1...total).map { _ in greedy.readJSON(timeout: .seconds(10))?["id"]?.intValue } }
        #expect(ids == (1...total).map { Int64($0) })
    }
}

@Test func overTheConnectionLimitExtraClientsGetAnErrorAndTheServerCarriesOn() async throws {
    var settings = APIServer.Settings()
    settings.maxConnections = 256
    settings.maxConnectionsPerUser = 300   // every client here is the same user
    try await withServer(settings: settings) { env in
        let clients = try await offPool { try (0..<300).map { _ in try RawClient(path: env.path) } }
        #expect(await eventually { env.server.connectionCount == 256 })
        // The 44 refused ones were told why and closed.
        #expect(await eventually { clients.filter(\.hasPendingInput).count == 44 })
        let refusals = try await offPool {
            clients.filter { $0.hasPendingInput }.map { ($0.readJSON(), $0.waitClosed()) }
        }
        #expect(refusals.count == 44)
        #expect(refusals.allSatisfy { $0.0?.errorCode == -32010 && $0.0?.errorMessage?.contains("256 connections") == true && $0.1 })
        #expect(env.logger.lines.withLock { $0.filter { $0.1.contains("limit reached") }.count } == 1)
        // The admitted ones work.
        let answers = try await offPool {
            clients.filter { !$0.hasPendingInput }.prefix(3).map { client in
                client.request(9, "echo")
                return client.readJSON()?["id"]
            }
        }
        #expect(answers == [9, 9, 9])
        // Once they leave, new clients are admitted again.
        clients.forEach { $0.close() }
        #expect(await eventually { env.server.connectionCount == 0 })
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        #expect(answer["params"] == [:])
    }
}

@Test func theClosedCallbackNamesEachConnectionOnce() async throws {
    try await withServer { env in
        let ids = try await offPool { () -> [Int64] in
            var ids: [Int64] = []
            for _ in 0..<3 {
                let client = try RawClient(path: env.path)
                client.request(1, "echo")
                ids.append(client.readJSON()?["result"]?["conn"]?.intValue ?? -1)
            }
            return ids
        }
        #expect(await eventually { env.handler.closed.count == 3 })
        #expect(env.handler.closed.sorted().map { Int64($0) } == ids.sorted())
        #expect(Set(ids).count == 3)
    }
}

// MARK: Shutdown

@Test func shutdownLetsAnInFlightRequestFinishAndDeliverItsResponse() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        let handler = TestHandler()
        let server = APIServer(listener: try UnixListener(path: path), handler: handler)
        let running = Task { try await server.run() }
        let client = try await offPool {
            let client = try RawClient(path: path)
            client.request(1, "sleep", ["ms": 300])
            return client
        }
        #expect(await eventually { handler.sleepsStarted == 1 })
        server.shutdown()
        // The listener goes at once: the socket file is removed and nobody new gets in.
        #expect(await eventually { !FileManager.default.fileExists(atPath: path) })
        #expect(throws: (any Error).self) { try RawClient(path: path) }
        let (response, closed) = try await offPool { (client.readJSON(), client.waitClosed()) }
        #expect(response?["result"]?["slept"] == 300)
        #expect(response?["result"]?["cancelled"] == false)
        #expect(closed)
        try await running.value  // run() returns once everything is closed
        #expect(server.connectionCount == 0)
    }
}

@Test func shutdownClosesConnectionsWhoseRequestsOutlastTheGracePeriod() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        let handler = TestHandler()
        var settings = APIServer.Settings()
        settings.shutdownGrace = .milliseconds(200)
        let server = APIServer(listener: try UnixListener(path: path), handler: handler, settings: settings)
        let running = Task { try await server.run() }
        let client = try await offPool {
            let client = try RawClient(path: path)
            client.request(1, "sleep", ["ms": 60_000])
            return client
        }
        #expect(await eventually { handler.sleepsStarted == 1 })
        let started = ContinuousClock.now
        server.shutdown()
        let closed = try await offPool { client.waitClosed(timeout: .seconds(5)) }
        #expect(closed)
        try await running.value
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(handler.sleepsFinished == 1)  // the handler was cancelled, not left behind
    }
}

@Test func cancellingRunStopsTheServerAndRemovesTheSocket() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        let handler = TestHandler()
        let server = APIServer(listener: try UnixListener(path: path), handler: handler)
        let running = Task { try await server.run() }
        let client = try await offPool {
            let client = try RawClient(path: path)
            client.request(1, "sleep", ["ms": 60_000])
            return client
        }
        #expect(await eventually { handler.sleepsStarted == 1 })
        running.cancel()
        try await running.value  // returns once the handler has been cancelled and all is closed
        #expect(handler.sleepsFinished == 1)
        #expect(server.connectionCount == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
        let answer = try await offPool { client.readJSON() }
        #expect(answer?["result"]?["cancelled"] == true)
    }
}

@Test func shutdownBeforeRunMakesRunReturnAndRemovesTheSocket() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        let server = APIServer(listener: try UnixListener(path: path), handler: TestHandler())
        server.shutdown()
        try await server.run()
        #expect(await eventually { !FileManager.default.fileExists(atPath: path) })
    }
}

@Test func runTwiceIsRefused() async throws {
    try await withServer { env in
        _ = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }  // it runs
        let error = await #expect(throws: SystemError.self) { try await env.server.run() }
        #expect(error?.code == .alreadyRunning)
    }
}

// MARK: The socket file

@Test func theSocketDirectoryIsCreatedPrivateAndTheSocketIsOpenToAll() async throws {
    try await withServer { env in
        let directory = try FileManager.default.attributesOfItem(atPath: env.directory + "/run")
        #expect((directory[.posixPermissions] as? Int) == 0o700)
        let socket = try FileManager.default.attributesOfItem(atPath: env.path)
        #expect((socket[.posixPermissions] as? Int) == 0o666)
        #expect((socket[.type] as? FileAttributeType) == .typeSocket)
    }
}

@Test func aLiveSocketIsNotTakenOver() async throws {
    try await withServer { env in
        let error = #expect(throws: SystemError.self) { try UnixListener(path: env.path) }
        #expect(error?.code == .socketInUse)
        #expect(error?.description.contains("another mentormated is serving \(env.path)") == true)
        // The running server was not disturbed.
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        #expect(answer["params"] == [:])
    }
}

@Test func aStaleSocketIsReplaced() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        try makeStaleSocket(at: path)
        // The client recognizes it too.
        #expect(connectionError { _ = try RPCClient(path: path) }?.code == .staleSocket)

        let server = APIServer(listener: try UnixListener(path: path), handler: TestHandler())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let answer = try await offPool { try RPCClient(path: path, timeout: .seconds(5)).call("add", ["a": 2, "b": 3]) }
            #expect(answer == 5)
            server.shutdown()
            try await group.waitForAll()
        }
    }
}

@Test func aPathThatIsNotASocketIsRefusedAndLeftAlone() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/api.sock"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SystemError.self) { try UnixListener(path: path) }
        #expect(error?.code == .notASocket)
        #expect(error?.description.contains(path) == true)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")

        let notDirectory = #expect(throws: SystemError.self) { try UnixListener(path: path + "/inner.sock") }
        #expect(notDirectory?.code == .notADirectory)
    }
}

@Test func aPathTooLongForSockaddrIsRefusedClearly() throws {
    let path = "/tmp/" + String(repeating: "x", count: 120) + "/api.sock"
    let error = #expect(throws: SystemError.self) { try UnixListener(path: path) }
    #expect(error?.code == .pathTooLong)
    #expect(!FileManager.default.fileExists(atPath: "/tmp/" + String(repeating: "x", count: 120)))
}

@Test func anAdoptedListenerIsServedAndItsFileIsLeftInPlace() async throws {
    try await withTemporaryDirectory { directory in
        let path = directory + "/activated.sock"
        let fd = try listeningSocket(at: path)
        let server = APIServer(listener: try UnixListener(adopting: fd, path: path), handler: TestHandler())
        #expect(server.socketPath == path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let answer = try await offPool { try RPCClient(path: path, timeout: .seconds(5)).call("echo", ["via": "systemd"]) }
            #expect(answer["params"] == ["via": "systemd"])
            server.shutdown()
            try await group.waitForAll()
        }
        #expect(FileManager.default.fileExists(atPath: path))  // systemd's file, not ours to remove
    }
}

@Test func adoptingADescriptorThatIsNotListeningIsRefused() throws {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    let error = #expect(throws: SystemError.self) { try UnixListener(adopting: fd) }
    #expect(error?.code == .notListening)
    #expect(fcntl(fd, F_GETFD) >= 0)  // still open: it was not ours to close
}

// MARK: Helpers

/// A socket file nobody listens on, as a killed daemon leaves it.
private func makeStaleSocket(at path: String) throws {
    let fd = try listeningSocket(at: path)
    close(fd)
}

private func listeningSocket(at path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    let address = try #require(UnixSocketAddress(path: path))
    guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 16) == 0 else {
        let code = errno
        close(fd)
        throw TestSocketError(what: "bind/listen \(path)", code: code)
    }
    return fd
}

@Test func perUserCountGivesEachUserItsLimitAndForgetsUsersWhoHoldNothing() {
    var count = PerUserCount(limit: 2)
    let first = count.take(1000), second = count.take(1000), third = count.take(1000)
    #expect(first && second && !third, "a third for the same user is over the limit")
    let other = count.take(1001)
    #expect(other, "another user has a limit of its own")
    #expect(count.count(1000) == 2 && count.count(1001) == 1 && count.users == 2)
    count.release(1000)
    let again = count.take(1000)
    #expect(again)
    count.release(1001)
    count.release(1001)   // more releases than takes change nothing
    #expect(count.count(1001) == 0 && count.users == 1)
}

@Test func aUserOverItsConnectionLimitIsRefusedWhileReservedUsersPassTheNodeWideLimit() async throws {
    var settings = APIServer.Settings()
    settings.maxConnections = 2
    settings.maxConnectionsPerUser = 4
    // Not reserved: the node-wide limit of 2 applies.
    try await withServer(settings: settings) { env in
        let clients = try await offPool { try (0..<3).map { _ in try RawClient(path: env.path) } }
        #expect(await eventually { env.server.connectionCount == 2 })
        let refusal = try await offPool { clients[2].readJSON() }
        #expect(refusal?.errorCode == -32010 && refusal?.errorMessage?.contains("2 connections, its limit") == true)
        clients.forEach { $0.close() }
    }
    // Reserved (as the daemon does for root and itself): only the per-user limit applies.
    settings.reservedUsers = [getuid()]
    try await withServer(settings: settings) { env in
        let clients = try await offPool { try (0..<5).map { _ in try RawClient(path: env.path) } }
        #expect(await eventually { env.server.connectionCount == 4 })
        let refusal = try await offPool { clients[4].readJSON() }
        #expect(refusal?.errorCode == -32010
                    && refusal?.errorMessage?.contains("4 connections of your user (uid \(getuid()))") == true, "\(String(describing: refusal))")
        #expect(env.logger.lines.withLock { $0.filter { $0.1.contains("per-user limit reached") }.count } == 1)
        // One leaves: the user may connect again.
        clients[0].close()
        #expect(await eventually { env.server.connectionCount == 3 })
        let answer = try await offPool { try RPCClient(path: env.path, timeout: .seconds(5)).call("echo") }
        #expect(answer["params"] == [:])
        clients.forEach { $0.close() }
    }
}

/// With a manual clock: the test moves time and runs the idle sweep itself
/// (`sweepIdleConnections`, what the server's timer does). Before each move it sweeps once
/// without moving: that also waits for the server's queue, so a write the client has already
/// read has had its time stamped by then (the stamp follows the send).
@Test func idleConnectionsAreClosedAfterTheTimeoutButSubscribersAndRunningRequestsStay() async throws {
    let clock = ManualClock()
    var settings = APIServer.Settings()
    settings.idleTimeout = .seconds(300)
    settings.maxSubscriptionsPerUser = 1
    settings.now = { clock.now }
    try await withServer(settings: settings) { env in
        // The subscriptions one after the other, so that the subscriber is the one that claims.
        let (idle, subscriber, extra, busy, claims) = try await offPool {
            let idle = try RawClient(path: env.path), subscriber = try RawClient(path: env.path)
            let extra = try RawClient(path: env.path), busy = try RawClient(path: env.path)
            subscriber.request(1, "subscribe")
            let first = subscriber.readJSON()?["result"]?["claimed"]
            extra.request(1, "subscribe")
            let second = extra.readJSON()?["result"]?["claimed"]
            busy.request(1, "sleep", ["ms": 1000])   // outlasts the sweeps below, even on a loaded machine
            return (idle, subscriber, extra, busy, [first, second])
        }
        #expect(claims == [true, false], "one subscription per user here: \(claims)")
        #expect(await eventually { env.handler.sleepsStarted == 1 })
        // A millisecond before the timeout nothing closes; at the timeout the idle ones do.
        env.server.sweepIdleConnections()
        clock.advance(.seconds(300) - .milliseconds(1))
        env.server.sweepIdleConnections()
        #expect(env.server.connectionCount == 4, "nobody is idle for 300 s yet")
        clock.advance(.milliseconds(1))
        env.server.sweepIdleConnections()
        #expect(env.server.connectionCount == 2, "the idle one and the refused subscriber close, the subscriber and the busy one stay")
        let notice = try await offPool { idle.readJSON(timeout: .seconds(2)) }
        #expect(notice?.errorCode == -32010 && notice?.errorMessage?.contains("idle") == true, "\(String(describing: notice))")
        #expect(try await offPool { idle.waitClosed(timeout: .seconds(1)) && extra.waitClosed(timeout: .seconds(2)) },
                "idle connections close; a refused subscription does not exempt one")
        // The sleeping request outlasted the timeout: its connection is not idle while it runs.
        let slept = try await offPool { busy.readJSON(timeout: .seconds(3)) }
        #expect(slept?["result"]?["slept"] == 1000)
        env.server.sweepIdleConnections()
        clock.advance(.seconds(300))
        env.server.sweepIdleConnections()
        #expect(env.server.connectionCount == 1, "after its answer the busy one goes idle and is closed too")
        let stillThere = try await offPool { () -> JSON? in
            subscriber.request(2, "echo")
            return subscriber.readJSON()
        }
        #expect(stillThere?["id"] == 2, "a subscriber stays open however long it is idle")
        #expect(try await offPool { busy.waitClosed(timeout: .seconds(2)) }, "the busy one's connection ends")
    }
}
