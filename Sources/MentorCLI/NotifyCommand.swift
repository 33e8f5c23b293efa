import Foundation
import MentorAPI
import MentorArguments

/// `mentormate notify`: the daemon's match, message and unmatch events as desktop notifications
/// (freedesktop `org.freedesktop.Notifications` on the session bus, through `notify-send` or
/// `gdbus`), or as lines on the terminal. The user unit `mentormate-notify.service` runs it in
/// the desktop session.

extension MentormateCLI {
    public struct Notify: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["notify"],
                abstract: "Show a desktop notification for each new match, message, unmatch and meetup news, until stopped.",
                discussion: """
                    Notifications go to the desktop's notification server on the session bus, through
                    notify-send or else gdbus; without either, without a session bus (DBUS_SESSION_BUS_ADDRESS),
                    or with --stdout, each is a line on stdout (with --json, a JSON object per line). The
                    settings notify.match, notify.message, notify.unmatch and notify.meetup (a seat, a reminder 30 minutes
                    before, a cancellation of a meetup you joined) choose which are shown; they are
                    read as each event arrives, so a change applies at once. When the daemon stops, notify
                    exits with status 3 (the user unit mentormate-notify.service starts it again).
                    """)
        }
        public var stdout = false
        public static var options: [CommandOption<Self>] {
            [.flag("--stdout", \.stdout, help: "Print each notification as a line on stdout instead.")]
        }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let account = try context.call(API.accountWhoami)
            let me = account[.id]?.stringValue ?? ""
            let via = NotifyVia.choose(context.host, stdout: stdout)
            context.host.interruptEndsCleanly()
            _ = try context.call(API.subscribe, SubscribeRequest(events: [APIEvent.match, .message, .unmatch, .meetup].map(\.rawValue)))
            context.host.error("(notifications \(via.description); Ctrl-C stops)")
            if account[.unlocked]?.boolValue == false {
                // A locked account gets no events; they start once it is unlocked.
                context.host.error("mentormate: your account is locked: notifications start once you run `mentormate login`")
            }
            // Names of the accounts events name, asked for once each (a message carries only an ID).
            var names: [String: String] = [:]
            func name(_ id: String) -> String {
                if let known = names[id] { return known }
                let found = (try? context.call(API.profileShow, ProfileShowRequest(id: id)))?[.name]?.stringValue
                let shown = found.map { ClientFormat.cell($0, width: 40) } ?? ClientFormat.shortID(id)
                names[id] = shown
                return shown
            }
            var warned = false
            while true {
                guard let event = try context.nextNotification() else {
                    throw ClientError.connectionLost(socket: context.socketPath, reason: "the daemon closed the connection")
                }
                if event.method == OverflowEvent.method {
                    let dropped = ClientFormat.text(Fields<OverflowEvent>(event.params)[.dropped]) ?? "some"
                    context.host.error("mentormate: missed \(dropped) events while busy; `mentormate matches` shows where things stand")
                    continue
                }
                guard let note = DesktopNotification(event, me: me, name: name, zone: context.host.timeZone),
                      try Self.wanted(note.event, context) else { continue }
                if !via.show(note, context, json: context.json), !warned {
                    warned = true
                    context.host.error("mentormate: \(via.description) failed; showing notifications on the terminal when it does")
                }
            }
        }

        /// Whether the account's setting `notify.EVENT` allows it, read now (true if the daemon
        /// has no such setting).
        static func wanted(_ event: APIEvent, _ context: CommandContext) throws(ClientError) -> Bool {
            let settings = try context.call(API.settingsShow).objects(.settings, as: SettingInfo.self)
            let setting = settings.first { $0[.key]?.stringValue == "notify.\(event.rawValue)" }
            return setting?[.value]?.stringValue != "false"
        }
    }
}

/// One notification, made from an event: summary and body as shown.
public struct DesktopNotification: Equatable, Sendable {
    public var event: APIEvent
    /// The other account.
    public var id: String
    public var summary: String
    public var body: String

    /// How much of a message the body shows.
    public static let firstWordsLimit = 80

    /// The notification for `event`, or nil for one that is not shown: the caller's own messages
    /// and unmatches (from this or another of their machines), and anything unreadable.
    /// `name` gives the other's name (or short ID) for an ID.
    public init?(_ event: RPCNotification, me: String, name: (String) -> String, zone: TimeZone = .current) {
        switch event.method {
        case APIEvent.match.method:
            let e = Fields<MatchEvent>(event.params)
            guard let id = e[.id]?.stringValue else { return nil }
            let who = e[.name]?.stringValue.map { ClientFormat.cell($0, width: 40) } ?? name(id)
            self.init(event: .match, id: id, summary: "New match: \(who)",
                      body: "You both liked each other. Say hello: mentormate chat \(ClientFormat.shortID(id))")
        case APIEvent.message.method:
            let e = Fields<MessageEvent>(event.params)
            guard let id = e[.with]?.stringValue, let message = e.object(.message, as: Message.self),
                  message[.mine]?.boolValue != true, let text = message[.text]?.stringValue else { return nil }
            self.init(event: .message, id: id, summary: "Message from \(name(id))", body: Self.firstWords(text))
        case APIEvent.unmatch.method:
            let e = Fields<UnmatchEvent>(event.params)
            guard let id = e[.id]?.stringValue, let by = e[.by]?.stringValue, by != me else { return nil }
            let who = name(id)
            self.init(event: .unmatch, id: id, summary: "\(who) ended the match", body: "The conversation with \(who) is closed.")
        case APIEvent.meetup.method:
            let e = Fields<MeetupEvent>(event.params)
            guard let id = e[.id]?.stringValue, let what = e[.what]?.stringValue else { return nil }
            let title = ClientFormat.cell(e[.title]?.stringValue ?? id, width: 40)
            let when = e[.start]?.intValue.map { ClientFormat.time($0, in: zone) } ?? "?"
            let place = ClientFormat.cell(e[.place]?.stringValue ?? "", width: 40)
            switch what {
            case "cancelled": self.init(event: .meetup, id: id, summary: "Cancelled: \(title)", body: "The meetup at \(when) will not take place.")
            case "seat": self.init(event: .meetup, id: id, summary: "You have a seat: \(title)", body: "\(when) at \(place)")
            case "reminder": self.init(event: .meetup, id: id, summary: "Starting soon: \(title)", body: "\(when) at \(place)")
            default: return nil
            }
        default:
            return nil
        }
    }

    public init(event: APIEvent, id: String, summary: String, body: String) {
        (self.event, self.id, self.summary, self.body) = (event, id, summary, body)
    }

    /// The text on one line (control characters shown as `?`, runs of spaces and newlines as one
    /// space), cut after the last whole word that fits in `limit` characters, with "…".
    public static func firstWords(_ text: String, limit: Int = firstWordsLimit) -> String {
        let words = ClientFormat.sanitize(text, keepNewlines: true).split(whereSeparator: \.isWhitespace)
        let line = words.joined(separator: " ")
        guard line.count > limit else { return line }
        var out = ""
        for word in words {
            let next = out.isEmpty ? String(word) : out + " " + word
            if next.count > limit - 1 { break }
            out = next
        }
        if out.isEmpty { out = String(line.prefix(limit - 1)) }
        return out + "…"
    }

    /// The terminal's line: "SUMMARY — BODY", or with --json one object.
    func line(json: Bool) -> String {
        guard json else { return "\(summary) — \(body)" }
        return JSON.object(["event": .string(event.rawValue), "id": .string(id), "summary": .string(summary),
                            "body": .string(body)]).description
    }
}

/// Where notifications go.
public enum NotifyVia: Equatable, Sendable, CustomStringConvertible {
    case notifySend(String)
    case gdbus(String)
    case terminal

    /// notify-send, else gdbus, when there is a session bus and --stdout was not given; else
    /// the terminal.
    public static func choose(_ host: any ClientHost, stdout: Bool) -> NotifyVia {
        guard !stdout, let bus = host.environment("DBUS_SESSION_BUS_ADDRESS"), !bus.isEmpty else { return .terminal }
        if let path = host.findProgram("notify-send") { return .notifySend(path) }
        if let path = host.findProgram("gdbus") { return .gdbus(path) }
        return .terminal
    }

    public var description: String {
        switch self {
        case .notifySend(let path): "via \(path)"
        case .gdbus(let path): "via \(path) (org.freedesktop.Notifications)"
        case .terminal: "on stdout"
        }
    }

    /// The program's argv for `note` (nil for the terminal). The body is escaped for the
    /// servers that read markup in it; nothing goes through a shell.
    public func argv(_ note: DesktopNotification) -> [String]? {
        let body = Self.markupEscaped(note.body)
        switch self {
        case .notifySend(let path):
            return [path, "--app-name=MentorMate", "--", note.summary, body]
        case .gdbus(let path):
            // Each argument in GVariant's text format, typed, so gdbus needs no introspection
            // and reads a message's text as nothing but a string.
            return [path, "call", "--session", "--timeout", "10", "--dest", "org.freedesktop.Notifications",
                    "--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify",
                    Self.gvariantString("MentorMate"), "uint32 0", Self.gvariantString(""), Self.gvariantString(note.summary),
                    Self.gvariantString(body), "@as []", "@a{sv} {}", "int32 -1"]
        case .terminal:
            return nil
        }
    }

    /// Shows `note`; false when the program failed (the line is printed instead).
    func show(_ note: DesktopNotification, _ context: CommandContext, json: Bool) -> Bool {
        guard let argv = argv(note) else {
            context.print(note.line(json: json))
            return true
        }
        do {
            if try context.host.runProgram(argv) == 0 { return true }
        } catch {}
        context.print(note.line(json: json))
        return false
    }

    /// `text` as a GVariant string literal: double-quoted, with `\`, `"` and control characters escaped.
    public static func gvariantString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `&`, `<` and `>` as entities (the body may be read as markup).
    public static func markupEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}

extension ClientHost {
    /// The default: no environment (the tests' fake host sets what it needs).
    public func environment(_ name: String) -> String? { nil }
    /// The default: no programs.
    public func findProgram(_ name: String) -> String? { nil }
    /// The default: programs cannot be run.
    public func runProgram(_ argv: [String]) throws(ClientError) -> Int32 {
        throw ClientError("cannot run \(argv.first ?? "a program") here")
    }
}
