import MentorAPI
import MentorCore

// The campus CA's wire (docs/OPERATIONS.md, "A campus CA"): TCP, one JSON object per line
// (UTF-8, "\n"-terminated, at most `CAWire.maxLine` bytes; a longer line closes the connection).
// The client sends one request, the server one answer, then closes.
//
//   {"op":"info"}                                         → {"ok":true,"key":"mmca1…","domain":"campus.edu","codeTTL":900}
//   {"op":"request","account":"mm1…","email":"a@b.edu"}   → {"ok":true,"sentTo":"a…@b.edu","expiresIn":900}
//   {"op":"verify","account":"mm1…","code":"123456"}      → {"ok":true,"certificate":"<hex>"}
//   any failure                                           → {"ok":false,"code":"wrong-code","error":"…"}

/// Limits of the wire, shared by the server and the client.
public enum CAWire {
    /// The longest line either side accepts, without its "\n".
    public static let maxLine = 4096
    /// How long a connection may take, from accept (or connect) to the answer.
    public static let connectionDeadline: Duration = .seconds(10)
}

/// A refusal by the CA or a failure to reach it: a kebab-case `code` to match on and a
/// `message` that names the problem and the fix. The server sends both; the client's
/// `description` is the message.
public struct CAError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Sent by the server.
        /// The request is not one of the three, or a field is missing, extra or malformed.
        public static let badRequest = Code(rawValue: "bad-request")
        /// The address is not at the CA's domain.
        public static let wrongDomain = Code(rawValue: "wrong-domain")
        /// Too many requests from this address or client, or too many codes pending.
        public static let rateLimited = Code(rawValue: "rate-limited")
        /// No code is pending for the account (never asked, used, or expired).
        public static let noCode = Code(rawValue: "no-code")
        /// The code does not match; the message says how many tries are left.
        public static let wrongCode = Code(rawValue: "wrong-code")
        /// The code was tried too often and is gone.
        public static let tooManyAttempts = Code(rawValue: "too-many-attempts")
        /// Another account holds a valid certificate for the address.
        public static let addressTaken = Code(rawValue: "address-taken")
        /// The mail relay did not take the message.
        public static let mailFailed = Code(rawValue: "mail-failed")
        /// The server has as many connections as it serves at once.
        public static let busy = Code(rawValue: "busy")
        /// The CA could not write its state (disk full, permissions).
        public static let `internal` = Code(rawValue: "internal")

        // Made by the client.
        /// The CA could not be reached (refused, no route, name not found).
        public static let unreachable = Code(rawValue: "unreachable")
        /// The CA did not answer in time.
        public static let timedOut = Code(rawValue: "timed-out")
        /// The CA's answer is not a valid answer (not JSON, wrong shape, closed early).
        public static let badResponse = Code(rawValue: "bad-response")
        /// The certificate sent does not verify, or is for another account.
        public static let badCertificate = Code(rawValue: "bad-certificate")

        /// Lets a `catch` clause match on a code: `catch CAError.Code.wrongCode { ... }`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? CAError)?.code == pattern
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// A request to the CA.
public enum CARequest: Sendable, Equatable, Codable {
    /// The CA's key, domain and code lifetime.
    case info
    /// Mail a code to `email`, for `account`.
    case request(account: PublicKey, email: String)
    /// Trade the code mailed for `account` for a certificate.
    case verify(account: PublicKey, code: String)

    /// The longest address accepted on the wire (RFC 5321's path limit); the service checks the rest.
    public static let maxEmailBytes = 254
    /// The longest code accepted on the wire; the service checks its exact form.
    public static let maxCodeBytes = 32

    public var op: String {
        switch self {
        case .info: "info"
        case .request: "request"
        case .verify: "verify"
        }
    }

    public var json: JSON {
        switch self {
        case .info: ["op": "info"]
        case .request(let account, let email): ["op": "request", "account": .string(account.id), "email": .string(email)]
        case .verify(let account, let code): ["op": "verify", "account": .string(account.id), "code": .string(code)]
        }
    }

    /// The request as sent: its JSON and "\n".
    public var line: [UInt8] { json.encoded + [0x0A] }

    /// Reads one request line (without its "\n"); anything else is `.badRequest`.
    public init(line: [UInt8]) throws(CAError) {
        guard let json = JSON.parse(line) else {
            throw CAError(.badRequest, "the request is not a JSON object on one line; send {\"op\":\"info\"}, {\"op\":\"request\",…} or {\"op\":\"verify\",…}")
        }
        try self.init(json: json)
    }

    /// Strict: an object with a known `op` and exactly that op's fields.
    public init(json: JSON) throws(CAError) {
        guard let object = json.objectValue else {
            throw CAError(.badRequest, "the request must be a JSON object with an \"op\" field (info, request or verify)")
        }
        guard let op = object["op"]?.stringValue else {
            throw CAError(.badRequest, "the request has no \"op\" string; give \"op\": \"info\", \"request\" or \"verify\"")
        }
        func fields(_ allowed: Set<String>) throws(CAError) {
            let extra = Set(object.keys).subtracting(allowed).sorted()
            guard extra.isEmpty else {
                throw CAError(.badRequest, "unknown field \(extra.map { "\"\($0)\"" }.joined(separator: ", ")) in a \"\(op)\" request; it takes only \(allowed.sorted().joined(separator: ", "))")
            }
        }
        func text(_ name: String, max: Int) throws(CAError) -> String {
            guard let value = object[name]?.stringValue else {
                throw CAError(.badRequest, "a \"\(op)\" request needs \"\(name)\" as a string")
            }
            guard value.utf8.count <= max else {
                throw CAError(.badRequest, "\"\(name)\" is \(value.utf8.count) bytes; at most \(max) are accepted")
            }
            return value
        }
        func account() throws(CAError) -> PublicKey {
            let typed = try text("account", max: 128)
            let query: AccountID.Query
            do { query = try AccountID.parse(typed) } catch {
                throw CAError(.badRequest, "\"account\" is not an account ID: \(error.description)")
            }
            guard case .exact(let key) = query else {
                throw CAError(.badRequest, "\"account\" must be a whole account ID (mm1… as `mentormate whoami` prints it), not a prefix")
            }
            return key
        }
        switch op {
        case "info":
            try fields(["op"])
            self = .info
        case "request":
            try fields(["op", "account", "email"])
            self = .request(account: try account(), email: try text("email", max: Self.maxEmailBytes))
        case "verify":
            try fields(["op", "account", "code"])
            self = .verify(account: try account(), code: try text("code", max: Self.maxCodeBytes))
        default:
            throw CAError(.badRequest, "unknown op \"\(op)\"; the CA answers \"info\", \"request\" and \"verify\"")
        }
    }

    public init(from decoder: any Decoder) throws { try self.init(json: try JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

/// What `info` tells: the key nodes trust (`campus_ca_key`), the domain, how long a code lives.
public struct CAInfo: Sendable, Equatable {
    public let key: PublicKey
    public let domain: String
    /// Seconds a mailed code stays valid.
    public let codeTTL: UInt64

    public init(key: PublicKey, domain: String, codeTTL: UInt64) {
        self.key = key
        self.domain = domain
        self.codeTTL = codeTTL
    }
}

/// What `request` tells: where the code went (masked) and for how many seconds it is valid.
public struct CARequestReceipt: Sendable, Equatable {
    public let sentTo: String
    public let expiresIn: UInt64

    public init(sentTo: String, expiresIn: UInt64) {
        self.sentTo = sentTo
        self.expiresIn = expiresIn
    }
}

/// The CA's answer.
public enum CAResponse: Sendable, Equatable, Codable {
    case info(CAInfo)
    case requested(CARequestReceipt)
    case certificate(MembershipCertificate)
    case failure(CAError)

    public var json: JSON {
        switch self {
        case .info(let info):
            ["ok": true, "key": .string(MembershipCertificate.printKey(info.key)), "domain": .string(info.domain),
             "codeTTL": .int(Int64(clamping: info.codeTTL))]
        case .requested(let receipt):
            ["ok": true, "sentTo": .string(receipt.sentTo), "expiresIn": .int(Int64(clamping: receipt.expiresIn))]
        case .certificate(let certificate):
            ["ok": true, "certificate": .string(Hex.encode(certificate.encoded))]
        case .failure(let error):
            ["ok": false, "code": .string(error.code.rawValue), "error": .string(error.message)]
        }
    }

    public var line: [UInt8] { json.encoded + [0x0A] }

    /// Reads an answer line; anything that is not one of the four shapes is `.badResponse`.
    public init(line: [UInt8]) throws(CAError) {
        guard let json = JSON.parse(line) else {
            throw CAError(.badResponse, "the CA's answer is not JSON; is the address that of a mentormate-ca?")
        }
        try self.init(json: json)
    }

    public init(json: JSON) throws(CAError) {
        func bad(_ why: String) -> CAError {
            CAError(.badResponse, "the CA's answer is malformed (\(why)); is the address that of a mentormate-ca of this version?")
        }
        guard let object = json.objectValue, let ok = object["ok"]?.boolValue else { throw bad("no \"ok\"") }
        if !ok {
            guard let code = object["code"]?.stringValue, let message = object["error"]?.stringValue else {
                throw bad("a refusal without \"code\" and \"error\"")
            }
            self = .failure(CAError(CAError.Code(rawValue: code), message))
        } else if let keyText = object["key"]?.stringValue {
            guard let key = MembershipCertificate.parseKey(keyText) else { throw bad("\"key\" is not an mmca1… key") }
            guard let domain = object["domain"]?.stringValue, let ttl = object["codeTTL"]?.intValue, ttl >= 0 else {
                throw bad("info without \"domain\" and \"codeTTL\"")
            }
            self = .info(CAInfo(key: key, domain: domain, codeTTL: UInt64(ttl)))
        } else if let sentTo = object["sentTo"]?.stringValue {
            guard let expiresIn = object["expiresIn"]?.intValue, expiresIn >= 0 else { throw bad("no \"expiresIn\"") }
            self = .requested(CARequestReceipt(sentTo: sentTo, expiresIn: UInt64(expiresIn)))
        } else if let hex = object["certificate"]?.stringValue {
            guard let bytes = Hex.decode(hex) else { throw bad("\"certificate\" is not hex") }
            do { self = .certificate(try MembershipCertificate(encoded: bytes)) } catch {
                throw CAError(.badCertificate, "the CA sent a certificate that does not decode: \(error); tell the CA's operator")
            }
        } else {
            throw bad("none of \"key\", \"sentTo\", \"certificate\"")
        }
    }

    public init(from decoder: any Decoder) throws { try self.init(json: try JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
