import Foundation
import MentorAPI
import MentorArguments

// MARK: Posts, comments, likes of posts (docs/API.md "Posts")

extension MentormateCLI {
    public enum Post {
        static let idHelp = "The post's ID as listings print it (any unique prefix of 4 or more hex digits)."

        public struct Create: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(
                    program: program, path: ["post", "create"],
                    abstract: "Post 1 to 4 photos with a caption and tags, for everyone on the network.",
                    discussion: """
                        Each FILE must be a JPEG, PNG or WebP image (by content) of at most 4 MiB. The caption holds at
                        most 2,000 characters; tags (at most 10) are made lower case, spaces become '-'.
                        """)
            }
            public var photos: [String] = []
            public var caption: String?
            public var tags: [String] = []
            public static var options: [CommandOption<Self>] {
                [.appending("--photo", value: "FILE", \.photos, help: "A photo to post (1 to 4; repeat the option)."),
                 .string("--caption", value: "TEXT", \.caption, help: "The caption (at most 2,000 characters)."),
                 .appending("--tag", value: "T", \.tags, help: "A tag, e.g. quartz (at most 10; repeat the option).")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                guard (1...4).contains(photos.count) else {
                    throw UsageError("a post has 1 to 4 photos; \(photos.count) given", hint: "for example: mentormate post create --photo rock.jpg --caption \"Found today\"")
                }
                if let caption, caption.unicodeScalars.count > 2000 {
                    throw UsageError("the caption is \(caption.unicodeScalars.count) characters; at most 2,000", hint: "shorten it")
                }
                if tags.count > 10 { throw UsageError("\(tags.count) tags; at most 10", hint: "keep the ten that identify it best") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                // Every file is checked before anything is sent.
                let loaded = try photos.map { path throws(ClientError) in try PhotoUpload.load(path, host: context.host) }
                var hashes: [String] = []
                for photo in loaded { hashes.append(try PhotoUpload.upload(photo.bytes, context: context)) }
                let post = try context.call(API.postCreate, PostCreateRequest(photos: hashes, caption: caption, tags: tags.isEmpty ? nil : tags))
                if context.json { return context.printJSON(post.json) }
                context.print("Posted \(ClientFormat.sanitize(post[.id]?.stringValue ?? "?")).\n" + ClientFormat.post(post.json, in: context.host.timeZone))
            }
        }

        public struct Show: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "show"],
                                     abstract: "Show a post: its caption, tags, photos, likes and comments.")
            }
            public var id = ""
            public var savePhotos: String?
            public static var options: [CommandOption<Self>] {
                [.string("--save-photos", value: "DIR", \.savePhotos, help: "Also write the post's photos to DIR as 1.jpg, 2.png, … (never overwriting).")]
            }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func validate() throws(UsageError) {
                if savePhotos?.isEmpty == true { throw UsageError("--save-photos needs a directory", hint: "for example --save-photos ~/finds") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let post = try context.call(API.postShow, PostRequest(id: id))
                var written: [String] = []
                if let dir = savePhotos { written = try Post.save(post, to: dir, context: context) }
                if context.json { return context.printJSON(post.json) }
                var text = ClientFormat.post(post.json, in: context.host.timeZone, comments: true)
                if !written.isEmpty { text += "\nSaved: " + written.map { ClientFormat.sanitize($0) }.joined(separator: ", ") }
                context.print(text)
            }
        }

        public struct Edit: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "edit"],
                                     abstract: "Change your post's caption or tags (the tags given replace the list).")
            }
            public var id = ""
            public var caption: String?
            public var tags: [String] = []
            public static var options: [CommandOption<Self>] {
                [.string("--caption", value: "TEXT", \.caption, help: "The new caption."),
                 .appending("--tag", value: "T", \.tags, help: "A tag of the new list (repeat the option).")]
            }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func validate() throws(UsageError) {
                if caption == nil && tags.isEmpty { throw UsageError("nothing to change", hint: "give --caption TEXT, --tag T, or both") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let post = try context.call(API.postEdit, PostEditRequest(id: id, caption: caption, tags: tags.isEmpty ? nil : tags))
                if context.json { return context.printJSON(post.json) }
                context.print("Edited.\n" + ClientFormat.post(post.json, in: context.host.timeZone))
            }
        }

        public struct Delete: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "delete"],
                                     abstract: "Delete your post: it, its photos and its comments leave every node.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let result = try context.call(API.postDelete, PostRequest(id: id))
                if context.json { return context.printJSON(result.json) }
                context.print("Deleted post \(ClientFormat.sanitize(result[.id]?.stringValue ?? id)).")
            }
        }

        public struct Like: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "like"], abstract: "Like a post (one like per person; counts are public).")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let post = try context.call(API.postLike, PostRequest(id: id))
                if context.json { return context.printJSON(post.json) }
                context.print("Liked (\(post[.likes]?.intValue ?? 0) likes).")
            }
        }

        public struct Unlike: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "unlike"], abstract: "Take back your like of a post.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let post = try context.call(API.postUnlike, PostRequest(id: id))
                if context.json { return context.printJSON(post.json) }
                context.print("Like taken back (\(post[.likes]?.intValue ?? 0) likes).")
            }
        }

        public struct Hide: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["post", "hide"],
                                     abstract: "Take someone's post out of your own lists (private; on all your devices).")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("ID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let result = try context.call(API.postHide, PostRequest(id: id))
                if context.json { return context.printJSON(result.json) }
                context.print("Post \(ClientFormat.sanitize(result[.id]?.stringValue ?? id)) hidden from your lists.")
            }
        }

        /// `--save-photos DIR`: the post's photos as DIR/1.jpg, … (by content); nothing is
        /// written if a file exists already.
        static func save(_ post: Fields<PostInfo>, to dir: String, context: CommandContext) throws(ClientError) -> [String] {
            var files: [(path: String, bytes: [UInt8])] = []
            for (i, photo) in post.objects(.photos, as: PhotoInfo.self).enumerated() {
                let bytes = try PhotoFiles.download(photo, number: i + 1, context: context)
                files.append(((dir.hasSuffix("/") ? dir : dir + "/") + "\(i + 1).\(PhotoFiles.fileExtension(bytes))", bytes))
            }
            if let existing = files.first(where: { context.host.fileExists($0.path) }) {
                throw ClientError("\(ClientFormat.sanitize(existing.path)) exists already; nothing was written (files are never overwritten)",
                                  hint: "give an empty or new directory")
            }
            try context.host.makeDirectory(dir)
            for file in files { try context.host.writeNewFile(file.path, file.bytes) }
            return files.map(\.path)
        }
    }

    public enum Comment {
        static let idHelp = "The comment's ID as `post show` or `meetup show` prints it (a unique prefix of 4 or more hex digits)."

        public struct Add: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["comment"], abstract: "Comment on a post (at most 2,000 characters).")
            }
            public var id = ""
            public var text = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] {
                [.required("ID", \.id, help: Post.idHelp), .required("TEXT", \.text, help: "What you say.")]
            }
            public init() {}

            public func validate() throws(UsageError) {
                if text.allSatisfy(\.isWhitespace) { throw UsageError("the comment is empty", hint: "mentormate comment ID \"Nice find!\"") }
                if text.unicodeScalars.count > 2000 { throw UsageError("the comment is \(text.unicodeScalars.count) characters; at most 2,000", hint: "shorten it") }
            }

            public func run(_ context: CommandContext) throws(ClientError) {
                let c = try context.call(API.commentCreate, CommentCreateRequest(post: id, text: text))
                if context.json { return context.printJSON(c.json) }
                context.print("Comment \(ClientFormat.sanitize(c[.id]?.stringValue ?? "?")) added.")
            }
        }

        public struct Delete: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["comment", "delete"], abstract: "Delete your comment from every node.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("CID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let result = try context.call(API.commentDelete, PostRequest(id: id))
                if context.json { return context.printJSON(result.json) }
                context.print("Deleted comment \(ClientFormat.sanitize(result[.id]?.stringValue ?? id)).")
            }
        }

        public struct Hide: ClientCommand {
            public static var configuration: CommandConfiguration {
                CommandConfiguration(program: program, path: ["comment", "hide"],
                                     abstract: "Hide a comment on your post (or a meetup you host) from everyone but its writer.")
            }
            public var id = ""
            public static var options: [CommandOption<Self>] { [] }
            public static var arguments: [CommandArgument<Self>] { [.required("CID", \.id, help: idHelp)] }
            public init() {}

            public func run(_ context: CommandContext) throws(ClientError) {
                let c = try context.call(API.commentHide, PostRequest(id: id))
                if context.json { return context.printJSON(c.json) }
                context.print("Comment \(ClientFormat.sanitize(c[.id]?.stringValue ?? id)) hidden.")
            }
        }
    }

    public struct Posts: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["posts"],
                abstract: "List posts, newest first (people you follow and nearby first), or search them.",
                discussion: "--search finds posts whose caption or tags hold every word (prefixes match), best first.")
        }
        public var tag: String?
        public var author: String?
        public var following = false
        public var search: String?
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.string("--tag", value: "T", \.tag, help: "Only posts tagged T."),
             .string("--author", value: "ID", \.author, help: "Only posts of this account."),
             .flag("--following", \.following, help: "Only posts of people you follow."),
             .string("--search", value: "TEXT", \.search, help: "Posts whose caption or tags hold these words, best first."),
             .integer("--limit", \.limit, range: 1...200, help: "At most N posts (1-200; default 20).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if search != nil && (tag != nil || author != nil || following) {
                throw UsageError("--search ranks by relevance and takes no other filter", hint: "give --search alone (with --limit)")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.posts, PostsRequest(tag: tag, author: author, following: following ? true : nil, search: search, limit: limit))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.posts(result.json, in: context.host.timeZone))
        }
    }

    public struct Explore: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: program, path: ["explore"], abstract: "A random sample of recent posts.")
        }
        public var limit: Int64?
        public static var options: [CommandOption<Self>] {
            [.integer("--limit", \.limit, range: 1...200, help: "At most N posts (1-200; default 10).")]
        }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.explore, ExploreRequest(limit: limit))
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.posts(result.json, in: context.host.timeZone))
        }
    }
}

extension ClientFormat {
    /// `posts`, `explore`: one row per post.
    public static func posts(_ json: JSON, in zone: TimeZone) -> String {
        let posts = Fields<PostsResult>(json).objects(.posts, as: PostInfo.self)
        if posts.isEmpty { return "No posts." }
        let rows: [[String]] = posts.map { p in
            [sanitize(p[.id]?.stringValue ?? "?"), cell(p[.name]?.stringValue ?? shortID(p[.author]?.stringValue ?? ""), width: 16),
             p[.created]?.intValue.map { time($0, in: zone) } ?? "", "\(p[.likes]?.intValue ?? 0)", "\(p[.comments]?.intValue ?? 0)",
             cell(p[.caption]?.stringValue ?? "", width: 40),
             cell((p[.tags]?.arrayValue ?? []).compactMap(\.stringValue).map { "#" + $0 }.joined(separator: " "), width: 30)]
        }
        return table(["ID", "BY", "WHEN", "LIKES", "COMMENTS", "CAPTION", "TAGS"], rows, right: [3, 4])
    }

    /// `post show` and what `post create|edit` print.
    public static func post(_ json: JSON, in zone: TimeZone, comments: Bool = false) -> String {
        let p = Fields<PostInfo>(json)
        let by = p[.name]?.stringValue ?? shortID(p[.author]?.stringValue ?? "")
        var lines = ["Post \(sanitize(p[.id]?.stringValue ?? "?")) by \(sanitize(by)) (\(shortID(p[.author]?.stringValue ?? "")))"
                     + (p[.created]?.intValue.map { ", " + time($0, in: zone) } ?? "")]
        let caption = p[.caption]?.stringValue ?? ""
        if !caption.isEmpty { lines.append(sanitize(caption, keepNewlines: true)) }
        let tags = (p[.tags]?.arrayValue ?? []).compactMap(\.stringValue)
        if !tags.isEmpty { lines.append("Tags: " + tags.map { "#" + sanitize($0) }.joined(separator: " ")) }
        lines.append("Photos: \(p.objects(.photos, as: PhotoInfo.self).count)   Likes: \(p[.likes]?.intValue ?? 0)"
                     + (p[.liked]?.boolValue == true ? " (you like it)" : "") + "   Comments: \(p[.comments]?.intValue ?? 0)")
        if comments {
            for c in p.objects(.commentList, as: CommentInfo.self) {
                let who = c[.name]?.stringValue ?? shortID(c[.author]?.stringValue ?? "")
                lines.append("  [\(sanitize(c[.id]?.stringValue ?? "?"))] \(sanitize(who)): \(sanitize(c[.text]?.stringValue ?? ""))"
                             + (c[.hidden]?.boolValue == true ? " (hidden by the post's author; only you see it)" : ""))
            }
        }
        return lines.joined(separator: "\n")
    }
}
