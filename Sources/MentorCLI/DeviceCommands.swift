import Foundation
import MentorAPI
import MentorArguments
import MentorCrypto
/// One person, many machines: `device list|link|approve|revoke`, `account export` and the
/// import half of `signup --import` (docs/PROTOCOL.md §6.2).

extension MentormateCLI {
    public enum Device {
        static let abstract = "Your devices: the machines your account is used on."

        public struct List: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["device", "list"],
                                     abstract: "List your account's devices: ID, label, state, last seen; this one marked.")
            }
            public static var options: [CommandOption<Self>] { [] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let result = try context.call(API.deviceList)
                if context.json { return context.printJSON(result.json) }
                context.print(ClientFormat.devices(result.json, in: context.host.timeZone))
            }
        }

        public struct Revoke: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["device", "revoke"],
                    abstract: "Revoke one of your devices: what it signs from now on is refused everywhere.",
                    discussion: """
                        Needs the account key (the machine you signed up on or imported the account to). ID is
                        a device ID from `mentormate device list`, or 4 or more of its first hex digits. What the
                        device wrote before stays; anything later is refused by every node and removed where
                        it had arrived.
                        """)
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("ID", \.id, help: "The device's ID, or at least 4 of its first hex digits.")]
            }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let device = try context.call(API.deviceRevoke, DeviceRequest(id: id))
                if context.json { return context.printJSON(device.json) }
                context.print("Revoked \(ClientFormat.sanitize(device[.label]?.stringValue ?? "?")) (\(ClientFormat.sanitize(device[.id]?.stringValue ?? "?"))): nodes refuse what it signs from now on.")
            }
        }

        public struct Link: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["device", "link"],
                    abstract: "Use your account on this machine too: prints a one-time code and waits for it to be approved.",
                    discussion: """
                        Run it on the new machine, then `mentormate device approve CODE` on a machine that holds
                        your account key, on the same network. The code works for 10 minutes. With --expires
                        (a shared lab machine) this device stops working after that long: 30m, 8h, 2d.
                        """)
            }
            public var label: String?
            public var expires: String?
            public var passphrase = false
            public static var options: [CommandOption<Self>] {
                [.string("--label", value: "NAME", \.label, help: "What to call this machine (default: its host name)."),
                 .string("--expires", value: "DURATION", \.expires, help: "This device stops working after DURATION (30m, 8h, 2d)."),
                 .flag("--passphrase", \.passphrase, help: "Protect this machine's device key with a passphrase.")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if let expires { _ = try Self.seconds(expires) }
                if label?.cliTrimmed.isEmpty == true { throw UsageError("--label is empty", hint: "for example --label lab-3") }
            }

            /// "30m", "8h", "2d", "90s" → seconds (1 minute … 365 days).
            static func seconds(_ text: String) throws(UsageError) -> Int64 {
                let t = text.cliTrimmed.lowercased()
                let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
                guard let unit = t.last, let factor = units[unit], let n = Int64(t.dropLast()), n > 0,
                      n <= 365 * 86400 / factor, n * factor >= 60 else {
                    throw UsageError("--expires '\(ClientFormat.sanitize(text))' is not a duration of 1 minute to 365 days",
                                     hint: "a number and a unit: 30m, 8h, 2d")
                }
                return n * factor
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                var request = LinkRequest(label: label?.cliTrimmed)
                if let expires {
                    do { request.expires = try Self.seconds(expires) } catch { throw ClientError(error.message, hint: error.hint) }
                }
                if passphrase { request.passphrase = try PassphrasePrompt.ask(context.host, confirm: true) }
                let start = try context.call(API.deviceLink, request)
                let code = ClientFormat.sanitize(start[.code]?.stringValue ?? "?")
                if !context.json {
                    context.print("""
                        On a machine that has your account, run:

                            mentormate device approve \(code)

                        and check that it shows this machine: \(ClientFormat.sanitize(start[.label]?.stringValue ?? "?")), device \(ClientFormat.sanitize(start[.device]?.stringValue ?? "?")).
                        Waiting for the approval (the code works for 10 minutes)…
                        """)
                }
                while true {
                    let status = try context.call(API.deviceLinkStatus)
                    switch status[.state]?.stringValue {
                    case "linked":
                        if context.json { return context.printJSON(status.json) }
                        return context.print("Linked: this machine now uses account \(ClientFormat.sanitize(status[.account]?.stringValue ?? "?")). `mentormate whoami` shows it.")
                    case "waiting":
                        context.host.pause(seconds: 1)
                    default:
                        throw ClientError("the code expired before it was approved; nothing was linked",
                                          hint: "run `mentormate device link` again and approve the new code within 10 minutes")
                    }
                }
            }
        }

        public struct Approve: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["device", "approve"],
                    abstract: "Approve a new machine for your account with the code `mentormate device link` printed there.",
                    discussion: """
                        Shows the new machine's label and device ID and asks you to confirm they are the ones
                        the new machine printed (--yes skips the question). Needs the account key: run it on
                        the machine you signed up on or imported the account to.
                        """)
            }
            public var code = ""
            public var yes = false
            public static var options: [CommandOption<Self>] {
                [.flag("--yes", \.yes, help: "Approve without asking (scripts).")]
            }
            public static var arguments: [CommandArgument<Self>] {
                [.required("CODE", \.code, help: "The code the new machine printed, like k7d2x-9wq4m.")]
            }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let preview = try context.call(API.deviceApprove, ApproveRequest(code: code))
                let label = ClientFormat.sanitize(preview[.label]?.stringValue ?? "?")
                let device = ClientFormat.sanitize(preview[.device]?.stringValue ?? "?")
                if !yes {
                    var line = "This code names machine \(label), device \(device)"
                    if let seconds = preview[.expires]?.intValue { line += ", for \(ClientFormat.duration(seconds))" }
                    context.host.error(line + ".\nIs that the machine you are linking? [y/N] ")
                    let answer = context.host.readInputLine()?.cliTrimmed.lowercased()
                    guard answer == "y" || answer == "yes" else {
                        throw ClientError("not approved; nothing was linked", hint: "run `mentormate device approve CODE` again to approve it")
                    }
                }
                let result = try context.call(API.deviceApprove, ApproveRequest(code: code, confirm: true))
                if context.json { return context.printJSON(result.json) }
                context.print("Approved \(label) (\(device)): it finishes linking as soon as the certificate reaches it.")
            }
        }
    }

    public enum Account {
        static let abstract = "Your account key."

        public struct Export: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["account", "export"],
                    abstract: "Write your account key to FILE, encrypted with a passphrase: `signup --import FILE` elsewhere.",
                    discussion: """
                        The offline way to bring your account to another machine, and your backup: with the
                        account key you can link and revoke devices even after losing every machine. FILE must
                        not exist; it is written with mode 0600. The passphrase is asked twice.
                        """)
            }
            public var file = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("FILE", \.file, help: "Where to write the export (must not exist).")]
            }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let export = try context.call(API.accountExport)
                guard var seed = (export[.key]?.stringValue).flatMap({ Data(base64Encoded: $0) }).map(Array.init), seed.count == 32,
                      let keys = try? SigningKeyPair(seed: seed) else {
                    throw ClientError("the daemon sent no usable account key", hint: "check `mentormate doctor`")
                }
                defer { for i in seed.indices { seed[i] = 0 } }
                context.host.error("Choose a passphrase for the export file.")
                let passphrase = try PassphrasePrompt.ask(context.host, confirm: true)
                let bytes: [UInt8]
                do {
                    bytes = try KeyFile.encode(keys, passphrase: Array(passphrase.utf8), path: file)
                } catch {
                    throw ClientError("could not encrypt the export: \(error.message)", hint: "try again")
                }
                try context.host.writeNewFile(file, bytes)
                if context.json { return context.printJSON(.object(["id": .string(export[.id]?.stringValue ?? ""), "file": .string(file)])) }
                context.print("Wrote your account key to \(ClientFormat.sanitize(file)), encrypted. Keep it safe: whoever has it and the passphrase is you.")
            }
        }
    }
}

/// Reading an export file for `signup --import`.
enum AccountFile {
    static func importAccount(from path: String, email: String, label: String?, protect: Bool, context: CommandContext) throws(ClientError) {
        let bytes: [UInt8]
        do { bytes = try context.host.readFile(path, limit: 4096) } catch {
            throw ClientError("cannot read \(ClientFormat.sanitize(path)): \(error)", hint: "give the file `mentormate account export` wrote")
        }
        let keys: SigningKeyPair
        do {
            let protected = try KeyFile.isProtected(bytes: bytes, path: path)
            var passphrase: [UInt8]?
            if protected {
                context.host.error("The export file's passphrase:")
                passphrase = Array(try PassphrasePrompt.ask(context.host, confirm: false).utf8)
            }
            keys = try KeyFile.read(bytes: bytes, passphrase: passphrase, path: path)
        } catch let e as CryptoError {
            throw ClientError(e.message, hint: "check the file and its passphrase")
        } catch let e as ClientError {
            throw e
        } catch {
            throw ClientError("\(error)", hint: "check the file")
        }
        var request = ImportRequest(key: Data(keys.seed).base64EncodedString(), email: email, label: label)
        if protect {
            context.host.error("Choose a passphrase for your keys on this machine.")
            request.passphrase = try PassphrasePrompt.ask(context.host, confirm: true)
        }
        let info = try context.call(API.accountImport, request)
        if context.json { return context.printJSON(info.json) }
        context.print("Imported.\n" + ClientFormat.account(info.json))
    }
}
