import Foundation
import MentorAPI
import MentorArguments

// MARK: Following (docs/API.md: follow, unfollow, followers, following)

extension MentormateCLI {
    public struct Follow: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["follow"],
                                 abstract: "Follow someone: their posts come first in `mentormate posts`.",
                                 discussion: "Follows are public: every node counts the same followers.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.follow, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            context.print("You follow \(ClientFormat.shortID(result[.id]?.stringValue ?? id)).")
        }
    }

    public struct Unfollow: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["unfollow"], abstract: "Stop following someone.")
        }
        public var id = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.accountID(\.id)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.unfollow, AccountRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            context.print("You no longer follow \(ClientFormat.shortID(result[.id]?.stringValue ?? id)).")
        }
    }

    public struct Followers: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["followers"], abstract: "List who follows you, or the account with ID.")
        }
        public var id: String?
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.optionalAccountID(\.id, help: "Whose followers (default: yours). " + idHelp)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.followers, FollowListRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.follows(result.json, empty: "Nobody follows \(id == nil ? "you" : "them") yet.", in: context.host.timeZone))
        }
    }

    public struct Following: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["following"], abstract: "List whom you follow, or whom the account with ID follows.")
        }
        public var id: String?
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] { [.optionalAccountID(\.id, help: "Whose follows (default: yours). " + idHelp)] }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.following, FollowListRequest(id: id))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.follows(result.json, empty: "\(id == nil ? "You follow" : "They follow") nobody yet.", in: context.host.timeZone))
        }
    }
}

extension ClientFormat {
    /// `followers`/`following`: one row per account, newest first, and the count.
    public static func follows(_ json: JSON, empty: String, in zone: TimeZone) -> String {
        let entries = Fields<FollowListResult>(json).objects(.accounts, as: FollowListResult.Entry.self)
        if entries.isEmpty { return empty }
        let rows: [[String]] = entries.map { e in
            [shortID(e[.id]?.stringValue ?? "?"), cell(e[.name]?.stringValue ?? "", width: 24),
             e[.since]?.intValue.map { time($0, in: zone) } ?? ""]
        }
        return table(["ID", "NAME", "SINCE"], rows) + "\n\n\(entries.count) account\(entries.count == 1 ? "" : "s")"
    }
}
