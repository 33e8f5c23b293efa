import Foundation
import MentorAPI
import MentorCore

/// The per-account settings (`settings show|set`, docs/API.md "Settings"): node-local, never
/// synced, one row per changed key in `account_settings`. Each key is one declaration in
/// `SettingsRegistry.standard`: its name, kind, default, a one-line description and, optionally, what the node
/// does after it changed. `NodeSettings.swift` serves the API over this registry.

/// How a setting's text is read: what it accepts, said in words, and the canonical text of a
/// value it accepts (what is stored and shown).
public struct SettingKind: Sendable {
    /// "bool", "unsigned", "text", "date", "choice".
    public let name: String
    /// What `settings.set` accepts, for the error and for `settings show`.
    public let accepts: String
    /// The canonical text of `text`, or nil when it is not a value of this kind.
    public let canonical: @Sendable (String) -> String?

    public init(name: String, accepts: String, canonical: @escaping @Sendable (String) -> String?) {
        (self.name, self.accepts, self.canonical) = (name, accepts, canonical)
    }

    /// true/false, on/off, yes/no (any case); stored as "true" or "false".
    public static let bool = SettingKind(name: "bool", accepts: "true or false (also on/off, yes/no)") { text in
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "on", "yes": "true"
        case "false", "off", "no": "false"
        default: nil
        }
    }

    /// A whole number in `range`, written in decimal digits only.
    public static func unsigned(_ range: ClosedRange<UInt64>) -> SettingKind {
        SettingKind(name: "unsigned", accepts: "a whole number from \(range.lowerBound) to \(range.upperBound)") { text in
            let t = text.trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty, t.allSatisfy(\.isASCII), t.allSatisfy(\.isNumber), let n = UInt64(t), range.contains(n) else { return nil }
            return String(n)
        }
    }

    /// Text of 1 to `maxBytes` UTF-8 bytes, without control characters; trimmed.
    public static func text(maxBytes: Int) -> SettingKind {
        SettingKind(name: "text", accepts: "text of 1 to \(maxBytes) bytes, without control characters") { text in
            let t = text.trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty, t.utf8.count <= maxBytes, !t.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
            return t
        }
    }

    /// One of `choices` (any case); stored as written in `choices`.
    public static func choice(_ choices: [String]) -> SettingKind {
        SettingKind(name: "choice", accepts: "one of " + choices.joined(separator: ", ")) { text in
            let t = text.trimmingCharacters(in: .whitespaces).lowercased()
            return choices.first { $0.lowercased() == t }
        }
    }

    /// A feed moment: a day, optionally with a time (`Mon`, `Mon-14`, `Mon 9:30`).
    public static let moment = SettingKind(name: "moment", accepts: "a day, optionally with an hour: Mon, Mon-14, Mon 9:30") { text in
        guard let (day, minute) = try? WeeklySlots.parseMoment(text) else { return nil }
        return minute.map { "\(day)-\(WeeklySlots.time($0))" } ?? "\(day)"
    }

    /// A calendar date, YYYY-MM-DD (a real day of the Gregorian calendar).
    public static let date = SettingKind(name: "date", accepts: "a date as YYYY-MM-DD") { text in
        let t = text.trimmingCharacters(in: .whitespaces)
        let parts = t.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), (1...12).contains(m), d >= 1 else { return nil }
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
        return d <= days ? t : nil
    }
}

/// A setting that changed: what a `Setting.didSet` hook is given.
struct SettingChange {
    let uid: UInt32
    let account: PublicKey
    let key: String
    /// The values in effect before and after (the default where none was set; nil: unset).
    let old: String?
    let new: String?
}

/// One key of the registry.
struct Setting: Sendable {
    /// Dotted, lower-case: `notify.match`.
    let key: String
    let kind: SettingKind
    /// The value when none is set, in the kind's canonical text; nil: unset (no value).
    let defaultValue: String?
    /// One line for `settings show`.
    let description: String
    /// Runs on the node's queue after the new value is stored. If it throws, the old value is
    /// put back and the error is the answer: the set changes nothing.
    let didSet: (@Sendable (Node, SettingChange) throws -> Void)?

    init(_ key: String, _ kind: SettingKind, default defaultValue: String?, _ description: String,
         didSet: (@Sendable (Node, SettingChange) throws -> Void)? = nil) {
        (self.key, self.kind, self.defaultValue, self.description, self.didSet) = (key, kind, defaultValue, description, didSet)
    }

    /// The canonical text of `text`, or the error that names the key, the value and what it takes.
    func validate(_ text: String) throws(RPCError) -> String {
        guard let value = kind.canonical(text) else {
            throw RPCError(.invalidValue, "\(key): \"\(text)\" is not accepted; give \(kind.accepts)")
        }
        return value
    }

    /// The value in effect given what is stored (a stored text its kind no longer takes counts
    /// as unset, so the default applies).
    func effective(stored: String?) -> (value: String?, isDefault: Bool) {
        guard let stored, let value = kind.canonical(stored) else { return (defaultValue, true) }
        return (value, value == defaultValue)
    }

    func info(stored: String?) -> SettingInfo {
        let (value, isDefault) = effective(stored: stored)
        return SettingInfo(key: key, value: value, isDefault: isDefault, defaultValue: defaultValue,
                           kind: kind.name, accepts: kind.accepts, description: description)
    }
}

/// The registry: every key there is. Adding one is one line in `standard`; the node holds it
/// (`Node.settingsRegistry`), so tests can give a node keys of their own.
struct SettingsRegistry: Sendable {
    let settings: [Setting]
    private let byKey: [String: Setting]

    init(_ settings: [Setting]) {
        self.settings = settings.sorted { $0.key < $1.key }
        byKey = Dictionary(settings.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static let standard = SettingsRegistry([
        Setting("notify.match", .bool, default: "true", "`mentormate notify` shows a notification for a new match."),
        Setting("notify.message", .bool, default: "true", "`mentormate notify` shows a notification for a new message."),
        Setting("notify.unmatch", .bool, default: "true", "`mentormate notify` shows a notification when a match ends."),
        Setting("notify.meetup", .bool, default: "true",
                "`mentormate notify` shows a seat, a reminder 30 minutes before and a cancellation of a meetup you joined."),
        // The feed's default filters: each applies when `feed` leaves that filter out.
        Setting("feed.available", .moment, default: nil, "Default for `feed --available`: a day, optionally with an hour (Mon, Mon-14)."),
        Setting("feed.max_wage", .unsigned(0...1_000_000), default: nil, "Default for `feed --max-wage`."),
        Setting("feed.min_budget", .unsigned(0...1_000_000), default: nil, "Default for `feed --min-budget`."),
        Setting("feed.nearby", .bool, default: "false", "Default for `feed --nearby`."),
        Setting("feed.gender", .text(maxBytes: ProfileCard.maxGenderBytes), default: nil, "Default for `feed --gender`."),
        Setting("feed.min_age", .unsigned(0...150), default: nil, "Default for `feed --min-age`."),
        Setting("feed.max_age", .unsigned(0...150), default: nil, "Default for `feed --max-age`."),
        Setting("feed.min_score", .unsigned(0...100), default: nil, "Default for `feed --min-score`."),
        // What the card publishes, and the account's private facts.
        Setting("paused", .bool, default: "false", "Pause me: hidden from new feeds on every node while true; matches and chats go on.",
                didSet: { node, change in try node.cardSettingChanged(change) }),
        Setting("birthdate", .date, default: nil, "Your birth date, kept on this node; the card shows your age in years.",
                didSet: { node, change in try node.cardSettingChanged(change) }),
        Setting("show_sign", .bool, default: "false", "Publish your sun sign (from the birth date); it counts in the score with others who publish theirs.",
                didSet: { node, change in try node.cardSettingChanged(change) }),
        Setting("email", .text(maxBytes: 254), default: nil, "Your campus e-mail address, checked against this node's domains; never published.",
                didSet: { node, change in try node.emailChanged(change) }),
        Setting("contact", .text(maxBytes: ContactPayload.maxTextBytes), default: nil,
                "How your matches reach you (phone, chat handle): sealed to each current match, never on the card.",
                didSet: { node, change in try node.sendContact(change.uid, me: change.account) }),
    ])

    /// The key's setting, or the error that lists the keys there are.
    func named(_ key: String) throws(RPCError) -> Setting {
        guard let setting = byKey[key.trimmingCharacters(in: .whitespaces).lowercased()] else {
            throw RPCError(.invalidValue, "there is no setting \"\(key)\"; the settings are \(settings.map(\.key).joined(separator: ", "))")
        }
        return setting
    }
}
