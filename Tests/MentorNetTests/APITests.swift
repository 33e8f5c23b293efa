import MentorAPI
import Testing

// MARK: LineFramer

@Test func framerJoinsLinesSplitAcrossChunksAndStripsCarriageReturns() throws {
    var framer = LineFramer(maxLine: 100)
    #expect(try framer.append(Array("{\"a\":".utf8)) == [])
    #expect(framer.pending == 5)
    let lines = try framer.append(Array("1}\r\n{\"b\":2}\n{\"c\"".utf8))
    #expect(lines == [Array("{\"a\":1}".utf8), Array("{\"b\":2}".utf8)])
    #expect(framer.pending == 4)
    #expect(try framer.append(Array(":3}\n".utf8)) == [Array("{\"c\":3}".utf8)])
    #expect(framer.pending == 0)
}

@Test func framerKeepsEmptyLinesAndSeveralLinesInOneChunk() throws {
    var framer = LineFramer(maxLine: 10)
    #expect(try framer.append(Array("a\n\nb\n".utf8)) == [[0x61], [], [0x62]])
}

@Test func framerAcceptsALineOfExactlyTheLimitAndRefusesOneByteMore() throws {
    var exact = LineFramer(maxLine: 8)
    #expect(try exact.append([UInt8](repeating: 0x78, count: 8) + [0x0A]) == [[UInt8](repeating: 0x78, count: 8)])
    // The "\r" of a CRLF ending does not count against the limit.
    #expect(try exact.append([UInt8](repeating: 0x78, count: 8) + [0x0D, 0x0A]).count == 1)

    var over = LineFramer(maxLine: 8)
    #expect(throws: LineFramer.Failure.lineTooLong(limit: 8)) {
        try over.append([UInt8](repeating: 0x78, count: 9) + [0x0A])
    }
}

@Test func framerRefusesAnEndlessLineBeforeItsNewlineArrives() throws {
    var framer = LineFramer(maxLine: 1 << 20)
    let chunk = [UInt8](repeating: 0x41, count: 64 << 10)
    for _ in 0..<16 { #expect(try framer.append(chunk) == []) }  // exactly 1 MiB pending: still fine
    #expect(framer.pending == 1 << 20)
    #expect(throws: LineFramer.Failure.lineTooLong(limit: 1 << 20)) { try framer.append([0x41]) }
}

// MARK: RPCRequest.parse

private func parse(_ text: String) -> Result<RPCRequest, RPCRequest.Invalid> {
    RPCRequest.parse(Array(text.utf8))
}

private func invalid(_ text: String) -> RPCRequest.Invalid? {
    if case .failure(let invalid) = parse(text) { return invalid }
    return nil
}

@Test func parseReadsIdMethodAndNamedParams() throws {
    let request = try parse(#"{"jsonrpc":"2.0","id":7,"method":"feed","params":{"limit":5,"course":"CS 490"}}"#).get()
    #expect(request == RPCRequest(id: .int(7), method: "feed", params: ["limit": 5, "course": "CS 490"]))
    #expect(!request.isNotification)

    let stringID = try parse(#"{"jsonrpc":"2.0","id":"a-1","method":"status"}"#).get()
    #expect(stringID.id == .string("a-1"))
    #expect(stringID.params == [:])  // omitting params is the same as {}

    let nullParams = try parse(#"{"jsonrpc":"2.0","id":null,"method":"status","params":null}"#).get()
    #expect(nullParams.id == .null)  // an explicit null id is still a request, not a notification
    #expect(!nullParams.isNotification)

    let notification = try parse(#"{"jsonrpc":"2.0","method":"status"}"#).get()
    #expect(notification.isNotification)
}

@Test func parseRoundTripsItsOwnLine() throws {
    let request = RPCRequest(id: .int(3), method: "chat.send", params: ["id": "mm1abc", "text": "hi\nthere"])
    var line = request.line
    #expect(line.last == 0x0A)
    #expect(!line.dropLast().contains(0x0A))  // a newline in a value is escaped: still one line
    line.removeLast()
    #expect(try RPCRequest.parse(line).get() == request)
}

@Test func garbageIsAParseErrorWithNullId() throws {
    for text in ["not json", "{\"jsonrpc\":\"2.0\",", "\u{FF}\u{FE}", ""] {
        let error = try #require(invalid(text))
        #expect(error.error.code == -32700)
        #expect(error.id == .null)
    }
    let bytes = try #require({ () -> RPCRequest.Invalid? in
        if case .failure(let e) = RPCRequest.parse([0xFF, 0x00, 0xC3, 0x28]) { return e }
        return nil
    }())
    #expect(bytes.error.code == -32700)
}

@Test func nonObjectsAreInvalidRequestsAndArraysAreBatches() throws {
    // One request must be an object; an array on a line is a batch (JSON-RPC 2.0 §6).
    let array = Array(#"[{"jsonrpc":"2.0","id":1,"method":"status"},7]"#.utf8)
    let asOne = try #require(invalid(String(decoding: array, as: UTF8.self)))
    #expect(asOne.error.code == -32600 && asOne.error.message.contains("batch"))
    guard case .batch(let items) = RPCIncoming.parse(array) else {
        Issue.record("an array is a batch: \(RPCIncoming.parse(array))")
        return
    }
    #expect(items.count == 2)
    #expect(try items[0].get() == RPCRequest(id: .int(1), method: "status"))
    if case .failure(let e) = items[1] { #expect(e.error.code == -32600 && e.id == .null) } else { Issue.record("7 is no request") }
    guard case .single(.failure(let empty)) = RPCIncoming.parse(Array("[]".utf8)) else {
        Issue.record("an empty batch is one error")
        return
    }
    #expect(empty.error.code == -32600 && empty.error.message.contains("empty batch"))
    for text in ["42", "\"status\"", "null", "true"] {
        let error = try #require(invalid(text))
        #expect(error.error.code == -32600)
        #expect(error.id == .null)
    }
}

@Test func envelopeErrorsKeepTheIdWhenOneWasRead() throws {
    let missingVersion = try #require(invalid(#"{"id":9,"method":"status"}"#))
    #expect(missingVersion.error.code == -32600)
    #expect(missingVersion.id == .int(9))
    #expect(missingVersion.error.message.contains("jsonrpc"))

    let oldVersion = try #require(invalid(#"{"jsonrpc":"1.0","id":"x","method":"status"}"#))
    #expect(oldVersion.error.code == -32600)
    #expect(oldVersion.id == .string("x"))

    let noMethod = try #require(invalid(#"{"jsonrpc":"2.0","id":2}"#))
    #expect(noMethod.error.code == -32600)
    #expect(noMethod.id == .int(2))

    let emptyMethod = try #require(invalid(#"{"jsonrpc":"2.0","id":2,"method":""}"#))
    #expect(emptyMethod.error.code == -32600)

    let extra = try #require(invalid(#"{"jsonrpc":"2.0","id":3,"method":"status","paramz":{}}"#))
    #expect(extra.error.code == -32600)
    #expect(extra.error.message.contains("paramz"))
    #expect(extra.id == .int(3))

    // An id of the wrong type cannot be echoed back: the answer carries null.
    let objectID = try #require(invalid(#"{"jsonrpc":"2.0","id":{"a":1},"method":"status"}"#))
    #expect(objectID.error.code == -32600)
    #expect(objectID.id == .null)
}

@Test func positionalParamsAreInvalidParams() throws {
    let error = try #require(invalid(#"{"jsonrpc":"2.0","id":4,"method":"like","params":["mm1abc"]}"#))
    #expect(error.error.code == -32602)
    #expect(error.id == .int(4))
}

// MARK: Params

@Test func paramsNameTheParameterAndTheExpectedType() throws {
    let params = Params(["limit": "ten", "course": 5, "done": true], method: "feed")
    #expect(throws: RPCError(.invalidParams, "feed: parameter \"limit\" must be an integer")) { try params.int("limit") }
    #expect(throws: RPCError(.invalidParams, "feed: parameter \"course\" must be a string")) { try params.optionalString("course") }
    #expect(throws: RPCError(.invalidParams, "feed: missing parameter \"id\"")) { try params.string("id") }
    #expect(try params.bool("done"))
    #expect(try params.optionalInt("absent") == nil)
    let unknown = #expect(throws: RPCError.self) { try params.allow(["limit", "course"]) }
    #expect(unknown?.code == -32602)
    #expect(unknown?.message.contains("\"done\"") == true)
}
