import MentorAPI
import MentorArguments

/// `settings show|set`: the account's settings on this node (docs/API.md, "Settings"). Which keys
/// there are and what each accepts is the daemon's registry; the client only sends and shows.

extension MentormateCLI {
    public enum Settings {
        static let abstract = "Your settings on this node: notifications, feed defaults and more."

        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["settings", "show"],
                                     abstract: "Show every setting: its value, whether it is the default, what it does.")
            }
            public static var options: [CommandOption<Self>] { [] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let result = try context.call(API.settingsShow)
                if context.json { return context.printJSON(result.json) }
                context.print(Self.table(result.objects(.settings, as: SettingInfo.self)))
            }

            /// One line per key: key, value (marked when it is the default), description.
            static func table(_ settings: [Fields<SettingInfo>]) -> String {
                let rows = settings.map { s in
                    (ClientFormat.cell(s[.key]?.stringValue ?? "?", width: 28), value(s), ClientFormat.cell(s[.description]?.stringValue ?? "", width: 80))
                }
                let keyWidth = rows.map(\.0.count).max() ?? 0, valueWidth = rows.map(\.1.count).max() ?? 0
                return rows.map { "\($0.0.cliPadded(to: keyWidth))  \($0.1.cliPadded(to: valueWidth))  \($0.2)" }.joined(separator: "\n")
            }

            static func value(_ s: Fields<SettingInfo>) -> String {
                let text = s[.value]?.stringValue.map { ClientFormat.cell($0, width: 40) } ?? "(unset)"
                return s[.isDefault]?.boolValue == true ? "\(text) (default)" : text
            }
        }

        public struct Set: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["settings", "set"],
                    abstract: "Change a setting, or put it back to its default with --unset.",
                    discussion: """
                        KEY is one that `mentormate settings show` lists. A yes/no setting takes true or false
                        (also on/off, yes/no). A wrong key or value is refused and changes nothing.
                        """)
            }
            public var key = ""
            public var value: String?
            public var unset = false
            public static var options: [CommandOption<Self>] {
                [.flag("--unset", \.unset, help: "Put the setting back to its default.")]
            }
            public static var arguments: [CommandArgument<Self>] {
                [.required("KEY", \.key, help: "The setting, such as notify.message."),
                 .optional("VALUE", \.value, help: "Its new value (not with --unset).")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if key.cliTrimmed.isEmpty {
                    throw UsageError("the KEY is empty", hint: "`mentormate settings show` lists the keys")
                }
                switch (value, unset) {
                case (nil, false):
                    throw UsageError("give the new VALUE of \(key), or --unset to put it back to its default",
                                     hint: "for example `mentormate settings set \(key) off`")
                case (.some, true):
                    throw UsageError("--unset puts \(key) back to its default; a VALUE cannot go with it",
                                     hint: "`mentormate settings set \(key) VALUE` or `mentormate settings set \(key) --unset`")
                default: break
                }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let request = SettingsSetRequest(key: key.cliTrimmed, value: value.map { .set($0) } ?? .unset)
                let setting = try context.call(API.settingsSet, request)
                if context.json { return context.printJSON(setting.json) }
                context.print("\(ClientFormat.cell(setting[.key]?.stringValue ?? key, width: 28)) = \(Show.value(setting))")
            }
        }
    }
}
