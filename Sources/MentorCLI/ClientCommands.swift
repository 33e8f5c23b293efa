import MentorAPI
import MentorArguments
/// The `mentormate` commands of SPEC §5, one struct each, nested in `MentormateCLI` the way
/// swift-argument-parser nests subcommands. Each declares its options with their help, checks
/// them in `validate()`, and in `run(_:)` calls the daemon's methods (docs/API.md) and prints.

/// A `mentormate` command: parsed and validated before it runs.
public protocol ClientCommand: ParsableCommand {
    func run(_ context: CommandContext) throws(ClientError)
}

extension CommandArgument {
    /// An account ID or a prefix of one: at least 6 characters after `mm1` (the daemon looks it
    /// up and checks the checksum of a full ID).
    static func accountID(_ keyPath: WritableKeyPath<Command, String>) -> Self {
        Self("ID", optional: false, help: MentormateCLI.idHelp) { command, text throws(UsageError) in
            command[keyPath: keyPath] = try MentormateCLI.checkID(text)
        }
    }

    static func optionalAccountID(_ keyPath: WritableKeyPath<Command, String?>, help: String) -> Self {
        Self("ID", optional: true, help: help) { command, text throws(UsageError) in
            command[keyPath: keyPath] = try MentormateCLI.checkID(text)
        }
    }
}

public enum MentormateCLI {
    public static let program = "mentormate"

    static let idHelp = "An account ID (mm1…), or a unique prefix of it of at least 6 characters after mm1."

    /// Checks the shape of an ID argument: long enough to be a prefix, not longer than an ID.
    static func checkID(_ text: String) throws(UsageError) -> String {
        let id = text.cliTrimmed
        let body = id.lowercased().hasPrefix("mm1") ? id.dropFirst(3) : id[...]
        guard body.count >= 6 else {
            throw UsageError("'\(ClientFormat.sanitize(text))' is too short for an ID: give at least 6 characters after mm1",
                             hint: "`mentormate feed` and `mentormate matches` show IDs; the first 12 characters are enough")
        }
        guard id.count <= 61 else {
            throw UsageError("'\(ClientFormat.sanitize(text))' is longer than an ID (61 characters)",
                             hint: "copy the ID again from `mentormate feed`, `mentormate matches` or `mentormate whoami`")
        }
        return id
    }

    // MARK: Account

    public struct Signup: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["signup"],
                abstract: "Create your account on this node — its account key, this machine's device key, a first profile card — or bring one here (--import).",
                discussion: """
                    Each user of this computer can have one account on the node. The e-mail address must be
                    in the campus domains the node is set up with; it stays on this node and is never
                    published. With --passphrase your key is encrypted with a passphrase (typed twice without
                    echo, or one line read from stdin when stdin is not a terminal); then `mentormate login`
                    is needed after every restart of the daemon.
                    """)
        }

        public var email: String?
        public var name: String?
        public var role: String?
        public var passphrase = false
        public var importFile: String?
        public var label: String?

        public static var options: [CommandOption<Self>] {
            [.string("--email", value: "ADDR", \.email, required: true,
                     help: "Your campus e-mail address (checked against the node's domains, never published)."),
             .string("--name", value: "NAME", \.name, help: "The name others see on your card (not with --import)."),
             .choice("--role", ["student", "tutor"], \.role,
                     help: "student to find tutors, tutor to find students (not with --import)."),
             .flag("--passphrase", \.passphrase, help: "Protect your key with a passphrase (asked for, never an argument)."),
             .string("--import", value: "FILE", \.importFile,
                     help: "Bring an existing account to this machine from a file `mentormate account export` wrote."),
             .string("--label", value: "NAME", \.label, help: "With --import: what to call this machine (default: its host name).")]
        }

        public init() {}

        public func validate() throws(UsageError) {
            if let importFile {
                guard !importFile.isEmpty else { throw UsageError("--import needs a file name", hint: "for example --import ~/ana.mmaccount") }
                guard name == nil, role == nil else {
                    throw UsageError("--name and --role do not go with --import: the account has its card already",
                                     hint: "mentormate signup --import FILE --email ADDR")
                }
            } else {
                if name == nil { throw UsageError("missing --name", hint: "for example --name \"Ana Lima\"") }
                if role == nil { throw UsageError("missing --role", hint: "--role student or --role tutor") }
                if label != nil { throw UsageError("--label goes with --import", hint: "a new account's first machine is named after the host") }
            }
            let parts = (email ?? "").split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix(".") else {
                throw UsageError("--email needs an e-mail address, not '\(ClientFormat.sanitize(email ?? ""))'",
                                 hint: "for example --email ana@uni.edu")
            }
            guard !(name ?? "").cliTrimmed.isEmpty else {
                throw UsageError("--name is empty", hint: "give the name others should see, for example --name \"Ana Lima\"")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            if let importFile { return try AccountFile.importAccount(from: importFile, email: email ?? "", label: label,
                                                                      protect: passphrase, context: context) }
            var request = SignupRequest(email: email ?? "", name: name ?? "", role: role ?? "")
            if passphrase {
                // Typing a passphrase twice for an account that exists already would be wasted.
                let existing: Fields<AccountInfo>?
                do {
                    existing = try context.call(API.accountWhoami)
                } catch let e where e.rpcError?.code == RPCError.Code.noAccount.rawValue {
                    existing = nil
                }
                if let existing {
                    throw ClientError("you already have an account on this node: \(ClientFormat.sanitize(existing[.id]?.stringValue ?? "?"))",
                                      hint: "`mentormate whoami` shows it; each user has one account per node")
                }
                request.passphrase = try PassphrasePrompt.ask(context.host, confirm: true)
            }
            // At a real network's difficulty the daemon searches for the account's proof of work
            // for seconds (PROTOCOL.md §6.1): say so first, with the daemon's estimate.
            if let millis = (try? context.call(API.status))?[.signupWorkMillis]?.intValue, millis >= 500 {
                context.host.error("Making this account's proof of work (about \((millis + 999) / 1000) s on this computer)…")
            }
            let info = try context.call(API.accountSignup, request)
            if context.json { return context.printJSON(info.json) }
            context.print("Signed up.\n" + ClientFormat.account(info.json))
            context.print("Next: mentormate profile set --courses \"CS 101,MATH 221\" --bio \"...\"; then mentormate feed")
        }
    }

    public struct Login: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["login"],
                abstract: "Unlock your account key (after a daemon restart, or after logout).",
                discussion: """
                    Asks for the passphrase only when the account has one: typed without echo, or one line
                    read from stdin when stdin is not a terminal.
                    """)
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let info: Fields<AccountInfo>?
            do {
                info = try context.call(API.accountWhoami)
            } catch let e where e.rpcError?.code == RPCError.Code.locked.rawValue {
                // A daemon that refuses even whoami while locked: the key has a passphrase.
                info = nil
            }
            let result: Fields<AccountInfo>
            var already = false
            if let info, info[.protected]?.boolValue != true {
                result = try context.call(API.accountLogin, LoginRequest())
            } else if let info, info[.unlocked]?.boolValue == true {
                result = info
                already = true
            } else {
                let passphrase = try PassphrasePrompt.ask(context.host, confirm: false)
                result = try context.call(API.accountLogin, LoginRequest(passphrase: passphrase))
            }
            if context.json { return context.printJSON(result.json) }
            context.print((already ? "Already logged in.\n" : "Logged in.\n") + ClientFormat.account(result.json))
        }
    }

    public struct Logout: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["logout"],
                                 abstract: "Drop your keys from the daemon's memory; changes need `mentormate login` again (--forget: leave this machine for good).",
                                 discussion: """
                                     With --forget (a shared lab machine): this machine's device revokes itself, so nothing
                                     it could still sign is accepted anywhere, and its key is deleted from this node; your
                                     account stays on your other devices.
                                     """)
        }
        public var forget = false
        public static var options: [CommandOption<Self>] {
            [.flag("--forget", \.forget, help: "Also revoke this device and delete its key from this node.")]
        }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let info = try context.call(API.accountLogout, LogoutRequest(forget: forget ? true : nil))
            if forget {
                if context.json { return context.printJSON(info.json) }
                if info[.deviceState]?.stringValue == "forgotten" {
                    return context.print("This machine's device key is deleted (it was locked, so it could not revoke itself): revoke it from a machine that holds your account key — `mentormate device revoke \(ClientFormat.sanitize(info[.device]?.stringValue ?? "ID"))`.")
                }
                return context.print("This device is revoked and its key deleted from this node; your account stays on your other devices.")
            }
            if context.json { return context.printJSON(info.json) }
            context.print("Logged out; `mentormate login` unlocks your account again.\n" + ClientFormat.account(info.json))
        }
    }

    public struct Whoami: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["whoami"],
                                 abstract: "Show your account: full ID, name, e-mail, role, and whether the key is protected and unlocked.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let info = try context.call(API.accountWhoami)
            if context.json { return context.printJSON(info.json) }
            context.print(ClientFormat.account(info.json))
        }
    }

    // MARK: Profile

    public enum Profile {
        static let abstract = "Show or change profile cards."

        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["profile", "show"],
                                     abstract: "Show a profile card: yours, or the account with ID.")
            }
            public var id: String?
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.optionalAccountID(\.id, help: "Whose card to show (default: yours). " + idHelp)]
            }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let card = try context.call(API.profileShow, ProfileShowRequest(id: id))
                if context.json { return context.printJSON(card.json) }
                context.print(ClientFormat.card(card.json, in: context.host.timeZone))
            }
        }

        public struct Set: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["profile", "set"],
                    abstract: "Change fields of your profile card; fields not given stay as they are.",
                    discussion: """
                        Courses are normalized by the daemon (`cs 490` becomes `CS 490`); --courses "" clears
                        them. A photo must be a JPEG, PNG or WebP image (by content) of at most 4 MiB.
                        The contact is never on your card: it is sealed to each current match only.
                        """)
            }

            public var name: String?
            public var bio: String?
            public var courses: [String]?
            public var wage: Int64?
            public var budget: Int64?
            public var availability: String?
            public var photo: String?
            public var noPhoto = false
            public var contact: String?

            public static var options: [CommandOption<Self>] {
                [.string("--name", value: "N", \.name, help: "The name others see."),
                 .string("--bio", value: "TEXT", \.bio, help: "A few words about you."),
                 .list("--courses", value: "C1,C2", \.courses, help: "Your courses, comma-separated (replaces the list)."),
                 .integer("--wage", \.wage, help: "What you charge per hour, as a tutor (a whole number ≥ 0)."),
                 .integer("--budget", \.budget, help: "What you can pay per hour, as a student (a whole number ≥ 0)."),
                 .string("--availability", value: "TEXT", \.availability, help: "When you are free, e.g. \"Mon-Wed afternoons\"."),
                 .string("--photo", value: "FILE", \.photo, help: "Upload FILE (JPEG, PNG or WebP, ≤ 4 MiB) as your photo."),
                 .flag("--no-photo", \.noPhoto, help: "Remove the photo from your card."),
                 .string("--contact", value: "TEXT", \.contact,
                         help: "How your matches reach you (phone, chat handle; ≤ 200 bytes), sealed to each current match; \"\" clears it.")]
            }

            public init() {}

            public func validate() throws(UsageError) {
                if photo != nil && noPhoto {
                    throw UsageError("--photo and --no-photo contradict each other", hint: "give one of them")
                }
                if photo?.isEmpty == true {
                    throw UsageError("--photo needs a file name", hint: "for example --photo ~/me.jpg")
                }
                if let contact, contact.utf8.count > 200 {
                    throw UsageError("--contact is \(contact.utf8.count) bytes; at most 200", hint: "give a phone number or a chat handle")
                }
                if name == nil && bio == nil && courses == nil && wage == nil && budget == nil
                    && availability == nil && photo == nil && !noPhoto && contact == nil {
                    throw UsageError("`profile set` needs at least one field to change",
                                     hint: "for example: mentormate profile set --courses \"CS 490,MATH 221\" --wage 25; "
                                        + "`mentormate profile set --help` lists the fields")
                }
            }

            /// The `profile.set` request apart from an uploaded photo.
            public var request: ProfileSetRequest {
                var request = ProfileSetRequest(name: name, bio: bio, courses: courses, wage: wage, budget: budget,
                                                availability: availability, photo: noPhoto ? .remove : nil)
                request.contact = contact
                return request
            }

            /// The same as the params object it sends.
            public var params: [String: JSON] { (try? API.profileSet.params(request)) ?? [:] }

            public func run(_ context: CommandContext) throws(ClientError) {
                var request = self.request
                if let photo {
                    // Checked before the daemon is contacted: a wrong file fails fast.
                    let file = try PhotoUpload.load(photo, host: context.host)
                    request.photo = .set(hash: try PhotoUpload.upload(file.bytes, context: context))
                }
                let card = try context.call(API.profileSet, request)
                if context.json { return context.printJSON(card.json) }
                context.print("Profile updated.\n" + ClientFormat.card(card.json, in: context.host.timeZone))
            }
        }
    }

    // MARK: Finding people

    public struct Feed: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["feed"],
                abstract: "List people to like or pass: tutors for students, students for tutors.",
                discussion: """
                    Best first: the most shared courses, then people whose node is nearby now, then the
                    most recently updated cards. Nobody you liked, passed or matched appears.
                    """)
        }
        public var course: String?
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.string("--course", value: "C", \.course, help: "Only people who list course C."),
             .integer("--limit", \.limit, range: 1...100, help: "Show at most N people (1-100; default 20).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if let course, course.cliTrimmed.isEmpty {
                throw UsageError("--course is empty", hint: "give a course, for example --course \"CS 490\", or leave --course out")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.feed, FeedRequest(course: course, limit: limit))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.feed(result.json))
        }
    }

    public struct Like: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["like"],
                                 abstract: "Like someone; when they like you too it is a match and you can chat.",
                                 discussion: "Only the person you like can see the like.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.like, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            let who = ClientFormat.shortID(result[.id]?.stringValue ?? id)
            if result[.matched]?.boolValue == true {
                context.print("You liked \(who), and they like you: it's a match!\nSay hello: mentormate chat \(who) \"Hi!\"")
            } else {
                context.print("You liked \(who). If they like you too, it's a match (`mentormate matches`).")
            }
        }
    }

    public struct Pass: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["pass"],
                                 abstract: "Pass on someone: they leave your feed. A pass stays on your node.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.pass, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            let who = ClientFormat.shortID(result[.id]?.stringValue ?? id)
            context.print("Passed on \(who). `mentormate undo \(who)` takes it back.")
        }
    }

    public struct Undo: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["undo"],
                                 abstract: "Take back a like that has not matched yet, or a pass.",
                                 discussion: "After a match, use `mentormate unmatch ID` instead.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.undo, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            let who = ClientFormat.shortID(result[.id]?.stringValue ?? id)
            let what = result[.undone]?.stringValue == UndoResult.Undone.like.rawValue ? "like of" : "pass on"
            context.print("Took back your \(what) \(who).")
        }
    }

    public struct Matches: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["matches"],
                                 abstract: "List your matches, with the number of messages and the latest one.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.matches)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.matches(result.json, in: context.host.timeZone))
        }
    }

    public struct Unmatch: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["unmatch"],
                                 abstract: "End a match: the conversation closes for both of you. This is final.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.unmatch, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            let who = ClientFormat.shortID(result[.id]?.stringValue ?? id)
            context.print("Unmatched \(who): the conversation is closed for both of you.")
        }
    }

    // MARK: Chat

    public struct Chat: ClientCommand {
        /// docs/API.md: a message is 1…4000 bytes.
        public static let maxMessageBytes = 4000

        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["chat"],
                abstract: "Send a message to a match, or show your conversation with them.",
                discussion: """
                    With MESSAGE: send it. Without: print the conversation. With --follow: print the
                    conversation, then new messages as they arrive, until Ctrl-C or until the match ends.
                    With --json, --follow prints one JSON object per line: the history, then each event.
                    A message that starts with - goes after --: mentormate chat ID -- "-_-"
                    """,
                extraArgumentHint: "quote a message with spaces: mentormate chat ID \"see you at noon\"")
        }

        public var id = ""
        public var message: String?
        public var follow = false

        public static var options: [CommandOption<Self>] {
            [.flag("--follow", \.follow, help: "Keep printing new messages until Ctrl-C or an unmatch.")]
        }
        public static var arguments: [CommandArgument<Self>] {
            [.accountID(\.id),
             .optional("MESSAGE", \.message, help: "The message to send (quote it; 1-4000 bytes).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if follow && message != nil {
                throw UsageError("--follow streams the conversation and sends nothing; a MESSAGE cannot go with it",
                                 hint: "send first with `mentormate chat ID \"MESSAGE\"`, then follow with `mentormate chat ID --follow`")
            }
            if let message {
                if message.cliTrimmed.isEmpty {
                    throw UsageError("the message is empty", hint: "mentormate chat ID \"your message\"")
                }
                let bytes = message.utf8.count
                if bytes > Self.maxMessageBytes {
                    throw UsageError("the message is \(bytes) bytes; a message may be at most \(Self.maxMessageBytes)",
                                     hint: "split it into several messages")
                }
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let zone = context.host.timeZone
            if let message {
                let sent = try context.call(API.chatSend, ChatSendRequest(id: id, text: message))
                if context.json { return context.printJSON(sent.json) }
                context.print(ClientFormat.message(sent.json, otherName: "", speakerWidth: 3, in: zone))
                return
            }
            if follow { return try runFollow(context) }
            if context.json { return context.printJSON(try context.call(API.chatHistory, ChatHistoryRequest(id: id)).json) }
            // The card gives the other's name and full ID (and reports an unknown or ambiguous ID).
            let card = try context.call(API.profileShow, ProfileShowRequest(id: id))
            let other = card[.id]?.stringValue ?? id
            let history = try context.call(API.chatHistory, ChatHistoryRequest(id: other))
            context.print(ClientFormat.conversation(history.json, otherName: card[.name]?.stringValue ?? ClientFormat.shortID(other),
                                                    otherID: other, in: zone))
        }

        /// Subscribes before reading the history so that nothing sent in between is lost;
        /// a message both in the history and in an event is printed once.
        func runFollow(_ context: CommandContext) throws(ClientError) {
            let zone = context.host.timeZone
            let card = try context.call(API.profileShow, ProfileShowRequest(id: id))
            let other = card[.id]?.stringValue ?? id
            let name = ClientFormat.cell(card[.name]?.stringValue ?? ClientFormat.shortID(other), width: 24)
            context.host.interruptEndsCleanly()
            _ = try context.call(API.subscribe, SubscribeRequest(events: [APIEvent.message.rawValue, APIEvent.unmatch.rawValue]))
            let history = try context.call(API.chatHistory, ChatHistoryRequest(id: other))
            var seen = Swift.Set(history.objects(.messages, as: Message.self).compactMap { $0[.id]?.stringValue })
            if context.json {
                context.print(history.json.description)
            } else {
                context.print(ClientFormat.conversation(history.json, otherName: name, otherID: other, in: zone))
            }
            if !(history[.unmatchedBy]?.isNull ?? true) { return }
            if !context.json { context.host.error("(following new messages; Ctrl-C stops)") }
            let width = max(3, name.count)
            while true {
                guard let event = try context.nextNotification() else {
                    throw ClientError.connectionLost(socket: context.socketPath, reason: "the daemon closed the connection")
                }
                switch event.method {
                case APIEvent.message.method where Fields<MessageEvent>(event.params)[.with]?.stringValue == other:
                    guard let message = Fields<MessageEvent>(event.params).object(.message, as: Message.self) else { continue }
                    if let mid = message[.id]?.stringValue {
                        guard !seen.contains(mid) else { continue }
                        seen.insert(mid)
                    }
                    context.print(context.json ? JSON.object(["method": .string(event.method), "params": event.params]).description
                                  : ClientFormat.message(message.json, otherName: name, speakerWidth: width, in: zone))
                case APIEvent.unmatch.method where Fields<UnmatchEvent>(event.params)[.id]?.stringValue == other:
                    if context.json {
                        context.print(JSON.object(["method": .string(event.method), "params": event.params]).description)
                    } else {
                        let byThem = Fields<UnmatchEvent>(event.params)[.by]?.stringValue == other
                        context.print(byThem ? "\(name) ended the match; the conversation is closed."
                                             : "You ended the match; the conversation is closed.")
                    }
                    return
                case OverflowEvent.method:
                    let dropped = ClientFormat.text(Fields<OverflowEvent>(event.params)[.dropped]) ?? "some"
                    context.host.error("mentormate: missed \(dropped) events while the output was slow; "
                                       + "`mentormate chat \(ClientFormat.shortID(other))` shows the whole conversation")
                default:
                    continue
                }
            }
        }
    }

    // MARK: Node

    public struct Peers: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["peers"],
                                 abstract: "List the nodes connected now and how they were found (mdns, config or incoming).")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.peers)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.peers(result.json, in: context.host.timeZone))
        }
    }

    public struct Status: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["status"],
                                 abstract: "Show this node: ID, version, listen address and port, counts, discovery and health.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.status)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.status(result.json))
        }
    }

    public struct Doctor: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["doctor"],
                                 abstract: "Check what the node needs: Avahi, D-Bus, multicast, firewall, the socket and disk space.",
                                 discussion: "Exits with status 1 when a check fails, so scripts can use it too.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.doctor)
            if context.json { context.printJSON(result.json) } else { context.print(ClientFormat.doctor(result.json)) }
            let checks = result.objects(.checks, as: DoctorCheck.self)
            let failed = checks.filter { $0[.ok]?.boolValue != true }.count
            if failed > 0 {
                throw ClientError("\(failed) of \(checks.count) checks failed",
                                  hint: context.json ? "each failed check has a \"fix\"" : "each failed check says how to fix it")
            }
        }
    }
}
