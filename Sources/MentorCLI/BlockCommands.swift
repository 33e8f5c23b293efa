import Foundation
import MentorAPI
import MentorArguments

// MARK: Blocking (docs/API.md: block, unblock, blocked)

extension MentormateCLI {
    public struct Block: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["block"],
                abstract: "Block someone: they leave your feed and matches, and their messages are never shown.",
                discussion: """
                    A match with them ends (they see an ordinary unmatch; nothing tells them they are
                    blocked). The block is sealed to your own account, so your other machines keep it too.
                    """)
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.block, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            let who = ClientFormat.shortID(result[.id]?.stringValue ?? id)
            context.print("Blocked \(who). `mentormate unblock \(who)` ends the block.")
        }
    }

    public struct Unblock: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["unblock"],
                                 abstract: "End a block: the person may appear in your feed again (no match comes back).")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.unblock, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            context.print("Unblocked \(ClientFormat.shortID(result[.id]?.stringValue ?? id)).")
        }
    }

    public struct Blocked: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["blocked"], abstract: "List the people you block, and since when.")
        }
        public static var options: [CommandOption<Self>] { [] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.blocked)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.blocked(result.json, in: context.host.timeZone))
        }
    }
}

extension ClientFormat {
    /// `blocked`: one row per blocked account, oldest block first.
    public static func blocked(_ json: JSON, in zone: TimeZone) -> String {
        let entries = Fields<BlockedResult>(json).objects(.blocked, as: BlockedResult.Entry.self)
        if entries.isEmpty { return "You block nobody." }
        let rows: [[String]] = entries.map { e in
            [shortID(e[.id]?.stringValue ?? "?"), cell(e[.name]?.stringValue ?? "", width: 24),
             e[.since]?.intValue.map { time($0, in: zone) } ?? ""]
        }
        return table(["ID", "NAME", "SINCE"], rows)
    }
}
