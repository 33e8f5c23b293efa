import Foundation
import MentorAPI
import MentorArguments
import MentorCA
import MentorCore
import MentorCrypto

// MARK: Campus membership (docs/API.md "Campus membership"; OPERATIONS.md "A campus CA")

/// What `member request` and `member verify` ask of the campus CA (`CAClient` in the program;
/// a fake in tests).
public protocol CampusCA {
    func request(account: PublicKey, email: String) throws(CAError) -> CARequestReceipt
    func verify(account: PublicKey, code: String) throws(CAError) -> MembershipCertificate
}

extension CAClient: CampusCA {}

extension ClientHost {
    /// The campus CA at `address` (HOST:PORT), reached over TCP by this process.
    public func campusCA(at address: String) throws(ClientError) -> any CampusCA {
        do { return try CAClient(address: address) } catch {
            throw ClientError(error.message, hint: "give the CA's address as --ca HOST:PORT", status: .usage)
        }
    }
}

extension MentormateCLI {
    public enum Member {
        static let caHelp = "The campus CA's HOST:PORT (default: the node's campus_ca, in `mentormate status`)."

        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["member", "show"],
                                     abstract: "Whether you are a verified member of this node's campus, and until when.")
            }
            public static var options: [CommandOption<Self>] { [] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let card = try context.call(API.profileShow, ProfileShowRequest())
                let status = try context.call(API.status)
                if context.json {
                    return context.printJSON(.object(["member": card.json.objectValue?["member"] ?? .null,
                                                      "campus": status.json.objectValue?["campus"] ?? .null]))
                }
                context.print(ClientFormat.membership(card: card.json, status: status.json, in: context.host.timeZone))
            }
        }

        public struct Request: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["member", "request"],
                    abstract: "Ask the campus CA to mail a one-time code to your campus address.",
                    discussion: """
                        The CA checks that the address is at the campus's domain and mails it a six-digit code,
                        valid for 15 minutes; `mentormate member verify CODE` then makes you a verified member.
                        Your certificate names your account and the domain, never the address.
                        """)
            }
            public var address = ""
            public var ca: String?
            public static var options: [CommandOption<Self>] { [.string("--ca", value: "HOST:PORT", \.ca, help: Member.caHelp)] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("ADDRESS", \.address, help: "Your e-mail address at the campus (ana@campus.edu).")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                guard MembershipCertificate.domain(ofAddress: address) != nil else {
                    throw UsageError("'\(address)' is not an e-mail address", hint: "mentormate member request ana@campus.edu")
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let (me, client, at) = try Member.prepare(context, ca: ca)
                let receipt: CARequestReceipt
                do { receipt = try client.request(account: me, email: address) } catch {
                    throw Member.failure(error, at: at)
                }
                if context.json {
                    return context.printJSON(["sentTo": .string(receipt.sentTo), "expiresIn": .int(Int64(clamping: receipt.expiresIn))])
                }
                context.print("""
                    A code was sent to \(ClientFormat.sanitize(receipt.sentTo)); it is valid for \(ClientFormat.duration(Int64(clamping: receipt.expiresIn))).
                    Then: mentormate member verify CODE
                    """)
            }
        }

        public struct Verify: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["member", "verify"],
                                     abstract: "Give the CA the code it mailed you, and publish the certificate it signs in your card.")
            }
            public var code = ""
            public var ca: String?
            public static var options: [CommandOption<Self>] { [.string("--ca", value: "HOST:PORT", \.ca, help: Member.caHelp)] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("CODE", \.code, help: "The six digits from the mail.")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                let digits = code.filter { !$0.isWhitespace && $0 != "-" }
                guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else {
                    throw UsageError("'\(code)' is not a code: the mail gives six digits", hint: "mentormate member verify 123456")
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let (me, client, at) = try Member.prepare(context, ca: ca)
                let certificate: MembershipCertificate
                do { certificate = try client.verify(account: me, code: code.filter { !$0.isWhitespace && $0 != "-" }) } catch {
                    throw Member.failure(error, at: at)
                }
                try Member.publish(Hex.encode(certificate.encoded), context)
            }
        }

        public struct Set: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["member", "set"],
                                     abstract: "Publish a membership certificate the CA's operator gave you (`mentormate-ca issue`).")
            }
            public var certificate = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("CERTIFICATE", \.certificate, help: "The certificate, in hex.")]
            }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                try Member.publish(certificate, context)
            }
        }

        /// The caller's account and the CA to ask: `--ca`, else the node's `campus_ca`.
        static func prepare(_ context: CommandContext, ca: String?) throws(ClientError) -> (PublicKey, any CampusCA, String) {
            let whoami = try context.call(API.accountWhoami)
            guard let id = whoami[.id]?.stringValue, case .exact(let me)? = try? AccountID.parse(id) else {
                throw ClientError("the daemon did not say which account is yours", hint: "mentormate whoami")
            }
            let address: String
            if let ca { address = ca } else {
                let status = try context.call(API.status)
                guard let configured = status.json.objectValue?["campus"]?["ca"]?.stringValue else {
                    throw ClientError("this node does not say where the campus CA is (no campus_ca in its config)",
                                      hint: "give the CA's address as --ca HOST:PORT (ask the campus's IT)", status: .usage)
                }
                address = configured
            }
            return (me, try context.host.campusCA(at: address), address)
        }

        static func failure(_ error: CAError, at address: String) -> ClientError {
            switch error.code {
            case .unreachable, .timedOut, .badResponse:
                return ClientError("the campus CA at \(address): \(error.message)", hint: "check the address (--ca HOST:PORT) and that the CA runs",
                                   status: .unreachable)
            default:
                return ClientError("the campus CA refused: \(error.message)")
            }
        }

        static func publish(_ hex: String, _ context: CommandContext) throws(ClientError) {
            let card = try context.call(API.membershipSet, MembershipSetRequest(certificate: hex))
            if context.json { return context.printJSON(card.json) }
            if let m = card.object(.member, as: CardMember.self), let domain = m[.domain]?.stringValue {
                let until = m[.expires]?.intValue.map { " until " + String(ClientFormat.time($0, in: context.host.timeZone).prefix(10)) } ?? ""
                context.print("You are a verified member of \(ClientFormat.sanitize(domain))\(until). Your card carries the certificate to every node.")
            } else {
                context.print("The certificate is in your card. This node trusts no campus CA, so it shows no membership; nodes of the campus will.")
            }
        }
    }
}

extension ClientFormat {
    /// `member show`: the caller's membership and the node's campus.
    public static func membership(card: JSON, status: JSON, in zone: TimeZone) -> String {
        let member = card.objectValue?["member"]
        let campus = status.objectValue?["campus"]
        guard let campus, campus != .null else {
            return "This node trusts no campus CA (campus_ca_key is not set), so it shows nobody as a member."
        }
        let key = cell(campus["caKey"]?.stringValue ?? "?", width: 24)
        let only = campus["requireMembership"]?.boolValue == true ? " It stores and shows members only." : ""
        if let member, member != .null, let domain = member["domain"]?.stringValue {
            let until = member["expires"]?.intValue.map { " until " + String(time($0, in: zone).prefix(10)) } ?? ""
            return "You are a verified member of \(sanitize(domain))\(until) (campus CA \(key)).\(only)"
        }
        return "You are not a verified member of this node's campus (CA \(key)).\(only)\n"
            + "`mentormate member request ADDRESS` mails a code to your campus address; `mentormate member verify CODE` finishes."
    }
}
