import Foundation
import MentorAPI
import MentorArguments

// MARK: Meetups (docs/API.md "Meetups")

extension MentormateCLI {
    public enum Meetup {
        static let idHelp = "The meetup's ID as `mentormate meetups` prints it (any unique prefix of 4 or more hex digits)."

        /// "YYYY-MM-DD HH:MM" in `zone` → ms since the Unix epoch.
        static func parseTime(_ text: String, option: String, zone: TimeZone) throws(UsageError) -> Int64 {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = zone
            formatter.dateFormat = "yyyy-MM-dd HH:mm"
            formatter.isLenient = false
            let t = text.cliTrimmed
            let shape = t.map { $0.isASCII && $0.isNumber ? "9" : String($0) }.joined()
            guard shape == "9999-99-99 99:99", let date = formatter.date(from: t) else {
                throw UsageError("\(option) '\(ClientFormat.sanitize(text))' is not a time written YYYY-MM-DD HH:MM",
                                 hint: "for example \(option) \"2026-12-10 18:30\" (your local time)")
            }
            return Int64(date.timeIntervalSince1970 * 1000)
        }

        /// "2h", "90m", "1h30m", "90" (minutes) → minutes.
        static func parseDuration(_ text: String) throws(UsageError) -> Int64 {
            let t = text.cliTrimmed.lowercased()
            var minutes = 0, number = ""
            for c in t {
                if c.isNumber { number.append(c); continue }
                guard let n = Int(number), c == "h" || c == "m" else {
                    throw UsageError("--duration '\(ClientFormat.sanitize(text))' is not a duration", hint: "for example --duration 2h, 90m or 1h30m")
                }
                minutes += c == "h" ? n * 60 : n
                number = ""
            }
            // A bare number is minutes; after "1h" a bare "30" is minutes too.
            if !number.isEmpty, let n = Int(number) { minutes += n }
            guard (15...1440).contains(minutes) else {
                throw UsageError("--duration '\(ClientFormat.sanitize(text))' is \(minutes) minutes; 15 minutes to 24 hours", hint: "for example --duration 2h")
            }
            return Int64(minutes)
        }

        /// "18-99" → (18, 99).
        static func parseAges(_ text: String) throws(UsageError) -> (Int64, Int64) {
            let parts = text.cliTrimmed.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let lo = Int64(parts[0]), let hi = Int64(parts[1]), lo >= 13, lo <= hi, hi <= 120 else {
                throw UsageError("--age '\(ClientFormat.sanitize(text))' is not an age range from 13 to 120", hint: "for example --age 18-99, or --adults-only")
            }
            return (lo, hi)
        }

        /// The options `create` and `edit` share.
        struct Details {
            var title: String?, game: String?, course: String?, at: String?, duration: String?, place: String?
            var seats: Int64?, age: String?, adultsOnly = false, about: String?

            func validate() throws(UsageError) {
                if game != nil, course != nil { throw UsageError("--game and --course exclude each other", hint: "a meetup is about a game or a course") }
                if age != nil, adultsOnly { throw UsageError("--age and --adults-only exclude each other", hint: "--adults-only is --age 18-120") }
                if let age { _ = try parseAges(age) }
                if let duration { _ = try parseDuration(duration) }
                for (name, value) in [("--title", title), ("--place", place), ("--game", game), ("--course", course)] where value?.cliTrimmed.isEmpty == true {
                    throw UsageError("\(name) is empty", hint: "give a value or leave \(name) out")
                }
            }

            func ages() throws(UsageError) -> (Int64, Int64)? {
                if adultsOnly { return (18, 120) }
                return try age.map { a throws(UsageError) in try parseAges(a) }
            }
        }

        static func detailOptions<C>(_ details: WritableKeyPath<C, Details>) -> [CommandOption<C>] {
            [.string("--title", value: "T", details.appending(path: \.title), help: "What it is, e.g. \"Catan night\" (at most 100 characters)."),
             .string("--game", value: "NAME", details.appending(path: \.game), help: "The game played (a name from `mentormate games`, or any)."),
             .string("--course", value: "C", details.appending(path: \.course), help: "The course studied, for a study session."),
             .string("--at", value: "\"YYYY-MM-DD HH:MM\"", details.appending(path: \.at), help: "When it starts, in your local time."),
             .string("--duration", value: "D", details.appending(path: \.duration), help: "How long: 2h, 90m, 1h30m (default 2h)."),
             .string("--place", value: "TEXT", details.appending(path: \.place), help: "Where, e.g. \"Library room 2\"."),
             .integer("--seats", details.appending(path: \.seats), range: 1...500, help: "How many people can join (1 to 500)."),
             .string("--age", value: "MIN-MAX", details.appending(path: \.age), help: "Only people of these ages (13 to 120), from their card."),
             .flag("--adults-only", details.appending(path: \.adultsOnly), help: "Only people aged 18 or over (--age 18-120)."),
             .string("--about", value: "TEXT", details.appending(path: \.about), help: "More about it (at most 2,000 characters).")]
        }

        public struct Create: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["meetup", "create"],
                    abstract: "Host a meetup: a game night or a study session, with a number of seats.",
                    discussion: """
                        Needs --title, --game or --course, --at, --place and --seats. Joins take the seats in the order your
                        node sees them; the rest wait, and a leave gives the next one the seat. Times are your local time.
                        """)
            }
            var details = Details()
            public static var options: [CommandOption<Self>] { detailOptions(\Self.details) }
            public init() {}

            public func validate() throws(UsageError) {
                try details.validate()
                guard details.title != nil, details.at != nil, details.place != nil, details.seats != nil,
                      details.game != nil || details.course != nil else {
                    throw UsageError("meetup create needs --title, --game or --course, --at, --place and --seats",
                                     hint: "for example: mentormate meetup create --title \"Catan night\" --game Catan --at \"2026-12-10 18:30\" --place \"Library room 2\" --seats 4")
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let start: Int64, duration: Int64?, ages: (Int64, Int64)?
                do {
                    start = try parseTime(details.at ?? "", option: "--at", zone: context.host.timeZone)
                    duration = try details.duration.map { d throws(UsageError) in try parseDuration(d) }
                    ages = try details.ages()
                } catch { throw ClientError(error.message, hint: error.hint, status: .usage) }
                let m = try context.call(API.meetupCreate, MeetupCreateRequest(
                    title: details.title ?? "", game: details.game, course: details.course, start: start, duration: duration,
                    place: details.place ?? "", seats: details.seats ?? 0, minAge: ages?.0, maxAge: ages?.1, about: details.about))
                if context.json { return context.printJSON(m.json) }
                context.print("Meetup \(ClientFormat.sanitize(m[.id]?.stringValue ?? "?")) created.\n" + ClientFormat.meetup(m.json, in: context.host.timeZone))
            }
        }

        public struct Edit: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "edit"],
                                     abstract: "Change your meetup: only the options given change (the host only).",
                                     discussion: "--no-age-limit removes an age limit.")
            }
            public var id = ""
            var details = Details()
            var noAgeLimit = false
            public static var options: [CommandOption<Self>] {
                detailOptions(\Self.details) + [.flag("--no-age-limit", \.noAgeLimit, help: "Remove the age limit.")]
            }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func validate() throws(UsageError) {
                try details.validate()
                if noAgeLimit, details.age != nil || details.adultsOnly {
                    throw UsageError("--no-age-limit excludes --age and --adults-only", hint: "give one of them")
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let start: Int64?, duration: Int64?, ages: (Int64, Int64)?
                do {
                    start = try details.at.map { a throws(UsageError) in try parseTime(a, option: "--at", zone: context.host.timeZone) }
                    duration = try details.duration.map { d throws(UsageError) in try parseDuration(d) }
                    ages = try details.ages()
                } catch { throw ClientError(error.message, hint: error.hint, status: .usage) }
                let m = try context.call(API.meetupEdit, MeetupEditRequest(
                    id: id, title: details.title, game: details.game, course: details.course, start: start, duration: duration,
                    place: details.place, seats: details.seats, minAge: ages?.0, maxAge: ages?.1, noAgeLimit: noAgeLimit ? true : nil,
                    about: details.about))
                if context.json { return context.printJSON(m.json) }
                context.print("Meetup updated.\n" + ClientFormat.meetup(m.json, in: context.host.timeZone))
            }
        }

        public struct Cancel: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "cancel"],
                                     abstract: "Cancel your meetup (the host only); everyone who joined sees it cancelled.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}
            public func run(_ context: CommandContext) throws(ClientError) {
                let m = try context.call(API.meetupCancel, MeetupRequest(id: id))
                if context.json { return context.printJSON(m.json) }
                context.print("Meetup \(ClientFormat.sanitize(m[.id]?.stringValue ?? id)) cancelled.")
            }
        }

        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "show"],
                                     abstract: "Show a meetup: host, game or course, time, place, seats, who joined and where.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}
            public func run(_ context: CommandContext) throws(ClientError) {
                let m = try context.call(API.meetupShow, MeetupRequest(id: id))
                if context.json { return context.printJSON(m.json) }
                context.print(ClientFormat.meetup(m.json, in: context.host.timeZone))
            }
        }

        public struct Join: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "join"],
                                     abstract: "Join a meetup: a seat, or the waitlist when it is full, once the host's node has seen it.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}
            public func run(_ context: CommandContext) throws(ClientError) {
                let m = try context.call(API.meetupJoin, MeetupRequest(id: id))
                if context.json { return context.printJSON(m.json) }
                let you = m[.you]?.stringValue ?? "pending"
                context.print(you == "pending"
                    ? "Joined; pending until the host's node has seen it (`mentormate meetup show \(ClientFormat.sanitize(m[.id]?.stringValue ?? id))`)."
                    : "Joined: \(ClientFormat.sanitize(you)).")
            }
        }

        public struct Comment: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "comment"],
                                     abstract: "Comment on a meetup (at most 2,000 characters); everyone sees it in `meetup show`.",
                                     discussion: "`mentormate comment delete CID` deletes your comment; the host hides others' with `mentormate comment hide CID`.")
            }
            public var id = ""
            public var text = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("ID", \.id, help: idHelp), .required("TEXT", \.text, help: "What you say.")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if text.allSatisfy(\.isWhitespace) { throw UsageError("the comment is empty", hint: "mentormate meetup comment ID \"I'll bring snacks\"") }
                if text.unicodeScalars.count > 2000 { throw UsageError("the comment is \(text.unicodeScalars.count) characters; at most 2,000", hint: "shorten it") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let c = try context.call(API.meetupComment, MeetupCommentRequest(id: id, text: text))
                if context.json { return context.printJSON(c.json) }
                context.print("Comment \(ClientFormat.sanitize(c[.id]?.stringValue ?? "?")) added.")
            }
        }

        public struct Leave: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["meetup", "leave"],
                                     abstract: "Leave a meetup you joined: your seat goes to the first on the waitlist.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}
            public func run(_ context: CommandContext) throws(ClientError) {
                let m = try context.call(API.meetupLeave, MeetupRequest(id: id))
                if context.json { return context.printJSON(m.json) }
                context.print("You left \(ClientFormat.sanitize(m[.title]?.stringValue ?? id)).")
            }
        }
    }

    public struct Meetups: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["meetups"],
                abstract: "List the open meetups — not cancelled, not over, seats left — soonest first.",
                discussion: "Times are your local time. A meetup under way is still open while it has seats.")
        }
        public var search: String?
        public var game: String?
        public var course: String?
        public var day: String?
        public var nearby = false
        public var all = false
        public var mine = false
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.string("--search", value: "TEXT", \.search, help: "Words in the title, game or course, place or description."),
             .string("--game", value: "NAME", \.game, help: "Only meetups for this game."),
             .string("--course", value: "C", \.course, help: "Only study sessions for this course."),
             .string("--day", value: "YYYY-MM-DD", \.day, help: "Only those starting on this day (your local time)."),
             .flag("--nearby", \.nearby, help: "Only those hosted by people nearby now."),
             .flag("--all", \.all, help: "Full, past and cancelled ones too."),
             .flag("--mine", \.mine, help: "Only those you host or joined."),
             .integer("--limit", \.limit, range: 1...200, help: "At most N (default 20).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if game != nil, course != nil { throw UsageError("--game and --course exclude each other", hint: "give one of them") }
            if let day { _ = try Meetup.parseTime(day + " 00:00", option: "--day", zone: .current) }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            var from: Int64?, to: Int64?
            if let day {
                do { from = try Meetup.parseTime(day + " 00:00", option: "--day", zone: context.host.timeZone) }
                catch { throw ClientError(error.message, hint: error.hint, status: .usage) }
                to = from.map { $0 + 86_400_000 }
            }
            let result = try context.call(API.meetups, MeetupsRequest(search: search, game: game, course: course, from: from, to: to,
                                                                      nearby: nearby ? true : nil, all: all ? true : nil,
                                                                      mine: mine ? true : nil, limit: limit))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.meetups(result.json, in: context.host.timeZone))
        }
    }
}

extension ClientFormat {
    /// `meetups`: one row per meetup, soonest first.
    public static func meetups(_ json: JSON, in zone: TimeZone) -> String {
        let list = Fields<MeetupsResult>(json).objects(.meetups, as: MeetupInfo.self)
        if list.isEmpty { return "No open meetups. `mentormate meetup create` hosts one; --all shows full and past ones." }
        let rows: [[String]] = list.map { m in
            [sanitize(m[.id]?.stringValue ?? "?"), m[.start]?.intValue.map { time($0, in: zone) } ?? "",
             cell(m[.title]?.stringValue ?? "", width: 28), cell(m[.topic]?.stringValue ?? "", width: 20),
             "\(m[.left]?.intValue ?? 0)/\(m[.seats]?.intValue ?? 0)", cell(m[.place]?.stringValue ?? "", width: 24),
             sanitize(m[.status]?.stringValue ?? "")]
        }
        return table(["ID", "WHEN", "TITLE", "GAME/COURSE", "LEFT", "WHERE", "STATUS"], rows, right: [4])
    }

    /// `meetup show` and what `create`/`edit` print.
    public static func meetup(_ json: JSON, in zone: TimeZone) -> String {
        let m = Fields<MeetupInfo>(json)
        let host = m[.hostName]?.stringValue ?? shortID(m[.host]?.stringValue ?? "")
        let start = m[.start]?.intValue.map { time($0, in: zone) } ?? "?"
        let ends = m[.ends]?.intValue.map { time($0, in: zone) } ?? "?"
        var pairs: [(String, String)] = [
            ("host", sanitize(host)),
            (m[.kind]?.stringValue == "course" ? "course" : "game", sanitize(m[.topic]?.stringValue ?? "")),
            ("when", "\(start) to \(ends.suffix(5))"), ("where", sanitize(m[.place]?.stringValue ?? "")),
            ("seats", "\(m[.taken]?.intValue ?? 0) taken, \(m[.left]?.intValue ?? 0) left of \(m[.seats]?.intValue ?? 0)"),
            ("status", sanitize(m[.status]?.stringValue ?? ""))]
        if let lo = m[.minAge]?.intValue, let hi = m[.maxAge]?.intValue { pairs.append(("ages", "\(lo)-\(hi)")) }
        if let you = m[.you]?.stringValue { pairs.append(("you", sanitize(you))) }
        let about = m[.about]?.stringValue ?? ""
        if !about.isEmpty { pairs.append(("about", sanitize(about))) }
        var lines = ["\(sanitize(m[.title]?.stringValue ?? "?")) (\(sanitize(m[.id]?.stringValue ?? "?")))", block(pairs)]
        let people = m.objects(.attendees, as: MeetupAttendeeInfo.self)
        if !people.isEmpty {
            lines.append("Joined:")
            for p in people {
                lines.append("  \(sanitize(p[.place]?.stringValue ?? "?"))  \(sanitize(p[.name]?.stringValue ?? shortID(p[.id]?.stringValue ?? "")))")
            }
        }
        let comments = m.objects(.comments, as: CommentInfo.self)
        if !comments.isEmpty {
            lines.append("Comments:")
            for c in comments {
                let who = c[.name]?.stringValue ?? shortID(c[.author]?.stringValue ?? "")
                lines.append("  [\(sanitize(c[.id]?.stringValue ?? "?"))] \(sanitize(who)): \(sanitize(c[.text]?.stringValue ?? ""))"
                             + (c[.hidden]?.boolValue == true ? " (hidden by the host; only you see it)" : ""))
            }
        }
        return lines.joined(separator: "\n")
    }
}
