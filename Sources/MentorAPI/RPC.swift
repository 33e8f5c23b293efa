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

    /// Parses one line.
    public static func parse(_ line: [UInt8]) -> Result<RPCRequest, Invalid> {
        guard let json = JSON.parse(line) else {
            return .failure(Invalid(error: RPCError(.parseError, "the request is not valid JSON; send one JSON-RPC 2.0 object per line"), id: .null))
        }
        guard case .object(let o) = json else {
            let what = json.arrayValue != nil ? "batches (arrays) are not supported" : "a request must be a JSON object"
            return .failure(Invalid(error: RPCError(.invalidRequest, "\(what); send one {\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…,\"params\":{…}} per line"), id: .null))
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
