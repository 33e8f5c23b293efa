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
        public var birthdate: String?

        public static var options: [CommandOption<Self>] {
            [.string("--email", value: "ADDR", \.email, required: true,
                     help: "Your campus e-mail address (checked against the node's domains, never published)."),
             .string("--name", value: "NAME", \.name, help: "The name others see on your card (not with --import)."),
             .choice("--role", ["student", "tutor"], \.role,
                     help: "student to find tutors, tutor to find students (not with --import)."),
             .flag("--passphrase", \.passphrase, help: "Protect your key with a passphrase (asked for, never an argument)."),
             .string("--import", value: "FILE", \.importFile,
                     help: "Bring an existing account to this machine from a file `mentormate account export` wrote."),
             .string("--label", value: "NAME", \.label, help: "With --import: what to call this machine (default: its host name)."),
             .string("--birthdate", value: "YYYY-MM-DD", \.birthdate,
                     help: "Kept on this node; your card shows your age. Needed where the node sets min_age.")]
        }

        public init() {}

        public func validate() throws(UsageError) {
            if let importFile {
                if birthdate != nil { throw UsageError("--birthdate does not go with --import", hint: "after the import: mentormate profile set --birthdate YYYY-MM-DD") }
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
            var request = SignupRequest(email: email ?? "", name: name ?? "", role: role ?? "", birthdate: birthdate)
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
            public var savePhotos: String?
            public var open = false
            public static var options: [CommandOption<Self>] {
                [.string("--save-photos", value: "DIR", \.savePhotos,
                         help: "Write every photo to DIR as 1.jpg, 2.png, … (DIR is made if missing; no file is overwritten)."),
                 .flag("--open", \.open, help: "Open the main photo with xdg-open (needs a desktop session).")]
            }
            public static var arguments: [CommandArgument<Self>] {
                [.optionalAccountID(\.id, help: "Whose card to show (default: yours). " + idHelp)]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if savePhotos?.isEmpty == true { throw UsageError("--save-photos needs a directory", hint: "for example --save-photos ~/photos") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let card = try context.call(API.profileShow, ProfileShowRequest(id: id))
                let saved = try savePhotos.map { dir throws(ClientError) in try PhotoFiles.save(card, to: dir, context: context) }
                let opened = open ? try PhotoFiles.open(card, context: context) : nil
                if context.json {
                    guard saved != nil || opened != nil, case .object(var object) = card.json else { return context.printJSON(card.json) }
                    if let saved { object["saved"] = .array(saved.map(JSON.string)) }
                    if let opened { object["opened"] = .string(opened) }
                    return context.printJSON(.object(object))
                }
                context.print(ClientFormat.card(card.json, in: context.host.timeZone))
                if let saved { context.print("Saved \(saved.count) photo\(saved.count == 1 ? "" : "s"): " + saved.map { ClientFormat.sanitize($0) }.joined(separator: ", ")) }
                if let opened { context.print("Opened the main photo with xdg-open (\(ClientFormat.sanitize(opened))).") }
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
                        --available takes weekly slots ("Mon 14-17, Wed 9:30-12, Sat-Sun 10-13"; quarter
                        hours; "" clears them) — the free-text --availability stays beside them. Your birth
                        date stays on this node: the card shows your age in years (and your sun sign only
                        after `mentormate settings set show_sign true`). The --prefer-* options say what you
                        look for; each one you state counts in the compatibility score of the people you see.
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
            public var available: String?
            public var gender: String?
            public var languages: [String]?
            public var area: String?
            public var birthdate: String?
            public var preferGenders: [String]?
            public var preferOverlap: Int64?
            public var preferMaxWage: String?
            public var preferMinBudget: String?
            public var noPreferences = false

            /// Whether any --prefer-* option (or --no-preferences) was given.
            var changesPreferences: Bool {
                preferGenders != nil || preferOverlap != nil || preferMaxWage != nil || preferMinBudget != nil || noPreferences
            }

            public static var options: [CommandOption<Self>] {
                [.string("--name", value: "N", \.name, help: "The name others see."),
                 .string("--bio", value: "TEXT", \.bio, help: "A few words about you."),
                 .list("--courses", value: "C1,C2", \.courses, help: "Your courses, comma-separated (replaces the list)."),
                 .integer("--wage", \.wage, help: "What you charge per hour, as a tutor (a whole number ≥ 0)."),
                 .integer("--budget", \.budget, help: "What you can pay per hour, as a student (a whole number ≥ 0)."),
                 .string("--availability", value: "TEXT", \.availability, help: "When you are free, e.g. \"Mon-Wed afternoons\"."),
                 .string("--photo", value: "FILE", \.photo, help: "Upload FILE (JPEG, PNG or WebP, ≤ 4 MiB) as your only photo (replaces them all)."),
                 .flag("--no-photo", \.noPhoto, help: "Remove every photo from your card."),
                 .string("--available", value: "SLOTS", \.available, help: "Weekly slots, e.g. \"Mon 14-17, Wed 9:30-12\" (\"\" clears)."),
                 .string("--gender", value: "G", \.gender, help: "Your gender, in your words (\"\" clears)."),
                 .list("--languages", value: "L1,L2", \.languages, help: "Languages you speak, comma-separated (replaces the list)."),
                 .string("--area", value: "AREA", \.area, help: "Your campus area: a building or zone (\"\" clears)."),
                 .string("--birthdate", value: "YYYY-MM-DD", \.birthdate, help: "Kept on this node; the card shows your age (\"\" forgets it)."),
                 .list("--prefer-gender", value: "G1,G2", \.preferGenders, help: "Genders you would like to meet (\"\" clears)."),
                 .integer("--prefer-overlap", value: "HOURS", \.preferOverlap, range: 0...168, help: "Hours a week you need free at the same time (0 clears)."),
                 .string("--prefer-max-wage", value: "N|none", \.preferMaxWage, help: "The highest wage you would pay, as a student."),
                 .string("--prefer-min-budget", value: "N|none", \.preferMinBudget, help: "The lowest budget you would accept, as a tutor."),
                 .flag("--no-preferences", \.noPreferences, help: "Clear every preference."),
                 .string("--contact", value: "TEXT", \.contact,
                         help: "How your matches reach you (phone, chat handle; ≤ 200 bytes), sealed to each current match; \"\" clears it.")]
            }

            /// A --prefer-max-wage/--prefer-min-budget value: a whole number ≥ 0, or none (.some(nil)).
            static func amount(_ text: String?, option: String) throws(UsageError) -> Int64?? {
                guard let text else { return nil }
                if text.lowercased() == "none" { return .some(nil) }
                return .some(try ValueParser.integer(text, option: option, range: 0...Int64.max))
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
                if noPreferences && (preferGenders != nil || preferOverlap != nil || preferMaxWage != nil || preferMinBudget != nil) {
                    throw UsageError("--no-preferences and a --prefer-* option contradict each other", hint: "give one of them")
                }
                _ = try Self.amount(preferMaxWage, option: "--prefer-max-wage")
                _ = try Self.amount(preferMinBudget, option: "--prefer-min-budget")
                if name == nil && bio == nil && courses == nil && wage == nil && budget == nil
                    && availability == nil && photo == nil && !noPhoto && available == nil && gender == nil
                    && languages == nil && area == nil && birthdate == nil && !changesPreferences && contact == nil {
                    throw UsageError("`profile set` needs at least one field to change",
                                     hint: "for example: mentormate profile set --courses \"CS 490,MATH 221\" --wage 25; "
                                        + "`mentormate profile set --help` lists the fields")
                }
            }

            /// The `profile.set` request apart from an uploaded photo.
            public var request: ProfileSetRequest {
                var r = ProfileSetRequest(name: name, bio: bio, courses: courses, wage: wage, budget: budget,
                                          availability: availability, photo: noPhoto ? .remove : nil)
                (r.slots, r.gender, r.languages, r.area, r.birthdate) = (available, gender, languages, area, birthdate)
                if noPreferences { r.preferences = CardPreferences() }
                r.contact = contact
                return r
            }

            /// The preferences register after the --prefer-* options: the current card's with
            /// the parts given replaced (the register is written whole).
            /// (The amounts were checked by `validate`.)
            func preferences(over current: CardPreferences?) -> CardPreferences {
                var p = current ?? CardPreferences()
                if let g = preferGenders { p.genders = g.isEmpty ? nil : g }
                if let h = preferOverlap { p.overlapHours = h == 0 ? nil : h }
                if let w = (try? Self.amount(preferMaxWage, option: "--prefer-max-wage")) ?? nil { p.maxWage = w }
                if let b = (try? Self.amount(preferMinBudget, option: "--prefer-min-budget")) ?? nil { p.minBudget = b }
                return p
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
                if changesPreferences && !noPreferences {
                    let current = try context.call(API.profileShow, ProfileShowRequest())
                    request.preferences = preferences(over: current.object(.preferences, as: CardPreferences.self).flatMap { try? $0.decoded() })
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
                    Best first by compatibility score (0-100: shared courses, availability overlap, wage
                    within budget, your preferences met, nearby now, and the sun signs when both publish
                    them), then people whose node is nearby now, then the most recently updated cards.
                    Nobody you liked, passed, matched or blocked appears, nor anyone who paused. Filters
                    you leave out come from your defaults (`mentormate settings set feed.max_wage 30`).
                    """)
        }
        public var course: String?
        public var limit: Int64?
        public var available: String?
        public var maxWage: Int64?
        public var minBudget: Int64?
        public var nearby = false
        public var gender: String?
        public var minAge: Int64?
        public var maxAge: Int64?
        public var minScore: Int64?
        public var noDefaults = false
        public static var options: [CommandOption<Self>] {
            [.string("--course", value: "C", \.course, help: "Only people who list course C."),
             .integer("--limit", \.limit, range: 1...100, help: "Show at most N people (1-100; default 20)."),
             .string("--available", value: "DAY[-TIME]", \.available, help: "Only people free that day (at that time), e.g. Mon or Mon-14."),
             .integer("--max-wage", \.maxWage, help: "Only tutors asking at most N an hour."),
             .integer("--min-budget", \.minBudget, help: "Only students offering at least N an hour."),
             .flag("--nearby", \.nearby, help: "Only people whose node is linked to yours now."),
             .string("--gender", value: "G", \.gender, help: "Only people of gender G."),
             .integer("--min-age", value: "YEARS", \.minAge, range: 0...150, help: "Only people at least this old."),
             .integer("--max-age", value: "YEARS", \.maxAge, range: 0...150, help: "Only people at most this old."),
             .integer("--min-score", \.minScore, range: 0...100, help: "Only people scoring at least N (0-100)."),
             .flag("--no-defaults", \.noDefaults, help: "Ignore your default filters (settings feed.*) this time.")]
        }

        public var request: FeedRequest {
            var r = FeedRequest(course: course, limit: limit)
            (r.available, r.maxWage, r.minBudget, r.gender) = (available, maxWage, minBudget, gender)
            (r.minAge, r.maxAge, r.minScore) = (minAge, maxAge, minScore)
            r.nearby = nearby ? true : nil
            r.noDefaults = noDefaults ? true : nil
            return r
        }
        public init() {}

        public func validate() throws(UsageError) {
            if let course, course.cliTrimmed.isEmpty {
                throw UsageError("--course is empty", hint: "give a course, for example --course \"CS 490\", or leave --course out")
            }
            if let available, available.cliTrimmed.isEmpty {
                throw UsageError("--available is empty", hint: "give a day, optionally with an hour: --available Mon or --available Mon-14")
            }
            if let minAge, let maxAge, minAge > maxAge {
                throw UsageError("--min-age \(minAge) is above --max-age \(maxAge)", hint: "nobody could pass; swap them")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.feed, request)
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
                                 abstract: "List the nodes connected now, at which address (IPv6 as [fe80::1%eth0]:PORT), and how they were found (mdns, config or incoming).")
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
                                 abstract: "Show this node: ID, version, listen address and port, counts, discovery, network (addresses, when they last changed) and health.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.status)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.status(result.json, in: context.host.timeZone))
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
