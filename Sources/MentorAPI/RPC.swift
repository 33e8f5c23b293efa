/// JSON-RPC 2.0 messages as MentorMate uses them: one object per line (docs/API.md).

/// An error object: a code, a message that says what happened and what to do, optional data.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSON?

    public init(_ code: Code, _ message: String, data: JSON? = nil) {
        self.code = code.rawValue
        self.message = message
        self.data = data
    }

    public init(code: Int, message: String, data: JSON? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { message }

    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let parseError = Code(rawValue: -32700)
        public static let invalidRequest = Code(rawValue: -32600)
        public static let methodNotFound = Code(rawValue: -32601)
        public static let invalidParams = Code(rawValue: -32602)
        public static let internalError = Code(rawValue: -32603)
        public static let noAccount = Code(rawValue: -32001)
        public static let locked = Code(rawValue: -32002)
        public static let alreadyExists = Code(rawValue: -32003)
        public static let notFound = Code(rawValue: -32004)
        public static let ambiguous = Code(rawValue: -32005)
        public static let notAllowed = Code(rawValue: -32006)
        public static let invalidValue = Code(rawValue: -32007)
        public static let storage = Code(rawValue: -32008)
        public static let wrongPassphrase = Code(rawValue: -32009)
        /// A per-user or node-wide limit of the API: connections, subscriptions, uploads in
        /// flight, a passphrase check already running; also an idle connection being closed.
        public static let limitReached = Code(rawValue: -32010)
    }

    public var json: JSON {
        var o: [String: JSON] = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { o["data"] = data }
        return .object(o)
    }
}

/// A request (with `id`) or a notification (without).
public struct RPCRequest: Sendable, Equatable {
    public var id: JSON?
    public var method: String
    public var params: [String: JSON]

    public init(id: JSON?, method: String, params: [String: JSON] = [:]) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var isNotification: Bool { id == nil }

    /// A request that could not be parsed: the error to answer with, and the id if one was read.
    public struct Invalid: Error, Sendable, Equatable {
        public var error: RPCError
        public var id: JSON
    }

    /// Parses one line holding one request (a batch is `RPCIncoming`'s).
    public static func parse(_ line: [UInt8]) -> Result<RPCRequest, Invalid> {
        guard let json = JSON.parse(line) else { return .failure(RPCIncoming.notJSON) }
        return parse(json: json)
    }

    /// Reads one request object (a line's, or one element of a batch).
    public static func parse(json: JSON) -> Result<RPCRequest, Invalid> {
        guard case .object(let o) = json else {
            return .failure(Invalid(error: RPCError(.invalidRequest, "a request must be a JSON object; send {\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…,\"params\":{…}} (or an array of them, a batch) per line"), id: .null))
        }
        let id = o["id"]
        if let id, !(id.stringValue != nil || id.intValue != nil || id.isNull) {
            return .failure(Invalid(error: RPCError(.invalidRequest, "\"id\" must be a string, an integer or null"), id: .null))
        }
        guard o["jsonrpc"] == .string("2.0") else {
            return .failure(Invalid(error: RPCError(.invalidRequest, "\"jsonrpc\" must be \"2.0\""), id: id ?? .null))
        }
        guard let method = o["method"]?.stringValue, !method.isEmpty else {
            return .failure(Invalid(error: RPCError(.invalidRequest, "\"method\" must be a non-empty string"), id: id ?? .null))
        }
        if let extra = o.keys.first(where: { !["jsonrpc", "id", "method", "params"].contains($0) }) {
            return .failure(Invalid(error: RPCError(.invalidRequest, "unknown member \"\(extra)\" in the request"), id: id ?? .null))
        }
        let params: [String: JSON]
        switch o["params"] {
        case nil, .null?: params = [:]
        case .object(let p)?: params = p
        default:
            return .failure(Invalid(error: RPCError(.invalidParams, "\"params\" must be an object of named parameters"), id: id ?? .null))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    public var json: JSON {
        var o: [String: JSON] = ["jsonrpc": "2.0", "method": .string(method), "params": .object(params)]
        if let id { o["id"] = id }
        return .object(o)
    }

    /// The line to send (JSON and a newline).
    public var line: [UInt8] { json.encoded + [0x0A] }
}

/// What one line carries (JSON-RPC 2.0 §6): one request, or a batch — an array of requests,
/// answered by an array of the responses to those that have an `id` (nothing at all when every
/// one is a notification). An element that is not a valid request gets its error in the array;
/// an empty array, or one longer than `maxBatch`, gets one error object, not an array.
public enum RPCIncoming: Sendable, Equatable {
    case single(Result<RPCRequest, RPCRequest.Invalid>)
    case batch([Result<RPCRequest, RPCRequest.Invalid>])

    /// Requests in one batch, at most: the answers go back as one line, so a batch is bounded
    /// in what it makes the daemon hold, as a line is.
    public static let maxBatch = 100

    static let notJSON = RPCRequest.Invalid(
        error: RPCError(.parseError, "the request is not valid JSON; send one JSON-RPC 2.0 object (or an array of them, a batch) per line"), id: .null)

    public static func parse(_ line: [UInt8]) -> RPCIncoming {
        guard let json = JSON.parse(line) else { return .single(.failure(notJSON)) }
        guard let items = json.arrayValue else { return .single(RPCRequest.parse(json: json)) }
        guard !items.isEmpty else {
            return .single(.failure(RPCRequest.Invalid(error: RPCError(.invalidRequest, "an empty batch; send at least one request in the array"), id: .null)))
        }
        guard items.count <= maxBatch else {
            return .single(.failure(RPCRequest.Invalid(error: RPCError(.invalidRequest,
                "a batch of \(items.count) requests; at most \(maxBatch) go in one, send the rest in another line"), id: .null)))
        }
        return .batch(items.map(RPCRequest.parse(json:)))
    }
}

/// A response: a result or an error, for the request `id`.
public struct RPCResponse: Sendable, Equatable {
    public var id: JSON
    public var outcome: Result<JSON, RPCError>

    public init(id: JSON, outcome: Result<JSON, RPCError>) {
        self.id = id
        self.outcome = outcome
    }

    public var json: JSON {
        switch outcome {
        case .success(let r): return ["jsonrpc": "2.0", "id": id, "result": r]
        case .failure(let e): return ["jsonrpc": "2.0", "id": id, "error": e.json]
        }
    }

    public var line: [UInt8] { json.encoded + [0x0A] }

    /// Reads a response object (nil if the JSON is a notification or not a response).
    public init?(_ json: JSON) {
        guard case .object(let o) = json, o["jsonrpc"] == .string("2.0"), let id = o["id"] else { return nil }
        self.id = id
        if let e = o["error"]?.objectValue {
            outcome = .failure(RPCError(code: Int(e["code"]?.intValue ?? -32603),
                                        message: e["message"]?.stringValue ?? "error without a message",
                                        data: e["data"]))
        } else if let r = o["result"] {
            outcome = .success(r)
        } else {
            return nil
        }
    }
}

/// A notification pushed by the daemon (a request without `id`).
public struct RPCNotification: Sendable, Equatable {
    public var method: String
    public var params: JSON

    public init(method: String, params: JSON) {
        self.method = method
        self.params = params
    }

    public init?(_ json: JSON) {
        guard case .object(let o) = json, o["id"] == nil, let m = o["method"]?.stringValue else { return nil }
        method = m
        params = o["params"] ?? .object([:])
    }

    public var line: [UInt8] { JSON.object(["jsonrpc": "2.0", "method": .string(method), "params": params]).encoded + [0x0A] }
}
