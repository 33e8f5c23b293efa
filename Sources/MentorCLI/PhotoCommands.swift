import Foundation
import MentorAPI
import MentorArguments
/// Several photos per card: `profile photo add|remove|order`, and what `profile show` does with
/// them (`--save-photos DIR`, `--open`). The daemon edits the list (`profile.photo.*`,
/// docs/API.md); the client uploads, downloads and writes files.

extension MentormateCLI.Profile {
    static let photoAbstract = "Your card's photos: up to \(maxPhotos), in order; the first is the main one."
    /// PROTOCOL.md §6, field 8.
    public static let maxPhotos = 6

    public struct PhotoAdd: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: MentormateCLI.program, path: ["profile", "photo", "add"],
                abstract: "Upload FILE and add it after your card's other photos (at most \(maxPhotos)).",
                discussion: """
                    FILE must be a JPEG, PNG or WebP image (by content) of at most 4 MiB. The first photo is the
                    main one; `mentormate profile photo order` changes the order.
                    """)
        }
        public var file = ""
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] {
            [.required("FILE", \.file, help: "The image to add (JPEG, PNG or WebP, ≤ 4 MiB).")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if file.isEmpty { throw UsageError("FILE is empty", hint: "for example: mentormate profile photo add ~/me.jpg") }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            // Checked before anything is sent: a wrong file, or a full list, fails fast.
            let loaded = try PhotoUpload.load(file, host: context.host)
            let count = try context.call(API.profileShow, ProfileShowRequest()).objects(.photos, as: PhotoInfo.self).count
            guard count < maxPhotos else { throw PhotoFiles.full(count) }
            let hash = try PhotoUpload.upload(loaded.bytes, context: context)
            let card = try context.call(API.profilePhotoAdd, PhotoAddRequest(hash: hash))
            if context.json { return context.printJSON(card.json) }
            let now = card.objects(.photos, as: PhotoInfo.self).count
            context.print("Photo added (\(now) of at most \(maxPhotos)).\n" + ClientFormat.card(card.json, in: context.host.timeZone))
        }
    }

    public struct PhotoRemove: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(program: MentormateCLI.program, path: ["profile", "photo", "remove"],
                                 abstract: "Remove photo N of your card (1 is the main one; `profile show` numbers them).")
        }
        public var index: Int64 = 0
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] {
            [CommandArgument("N", optional: false, help: "The photo's number, 1 to \(maxPhotos), as `mentormate profile show` lists them.") {
                command, text throws(UsageError) in
                command.index = try PhotoFiles.position(text, what: "N")
            }]
        }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let card = try context.call(API.profilePhotoRemove, PhotoRemoveRequest(index: index))
            if context.json { return context.printJSON(card.json) }
            context.print("Photo \(index) removed.\n" + ClientFormat.card(card.json, in: context.host.timeZone))
        }
    }

    public struct PhotoOrder: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: MentormateCLI.program, path: ["profile", "photo", "order"],
                abstract: "Put your card's photos in a new order: 3,1,2 makes photo 3 the main one.",
                discussion: """
                    ORDER lists every photo's current number once, in the new order (with 3 photos, a permutation
                    of 1,2,3); the first becomes the main photo.
                    """)
        }
        public var order: [Int64] = []
        public static var options: [CommandOption<Self>] { [] }
        public static var arguments: [CommandArgument<Self>] {
            [CommandArgument("ORDER", optional: false, help: "The photos' current numbers in their new order, comma-separated (e.g. 3,1,2).") {
                command, text throws(UsageError) in
                command.order = try PhotoFiles.order(text)
            }]
        }
        public init() {}

        public func run(_ context: CommandContext) throws(ClientError) {
            let card = try context.call(API.profilePhotoOrder, PhotoOrderRequest(order: order))
            if context.json { return context.printJSON(card.json) }
            context.print("Photos reordered.\n" + ClientFormat.card(card.json, in: context.host.timeZone))
        }
    }
}

/// Parsing photo numbers, and `profile show --save-photos DIR` / `--open`.
public enum PhotoFiles {
    static func full(_ count: Int) -> ClientError {
        ClientError("your card has \(count) photos, the most a card may have; nothing was uploaded",
                    hint: "remove one first: mentormate profile photo remove N")
    }

    /// A photo number: 1 to 6.
    static func position(_ text: String, what: String) throws(UsageError) -> Int64 {
        let t = text.cliTrimmed
        guard let n = Int64(t), (1...Int64(MentormateCLI.Profile.maxPhotos)).contains(n) else {
            throw UsageError("\(what) must be a photo number, 1 to \(MentormateCLI.Profile.maxPhotos), not '\(ClientFormat.sanitize(text))'",
                             hint: "`mentormate profile show` numbers your photos")
        }
        return n
    }

    /// "3,1,2" → [3, 1, 2]: photo numbers, each once (the daemon checks it is every photo).
    static func order(_ text: String) throws(UsageError) -> [Int64] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
        var out: [Int64] = []
        for part in parts {
            let n = try position(part, what: "each number of ORDER")
            guard !out.contains(n) else {
                throw UsageError("ORDER names photo \(n) twice; give each photo's number once", hint: "for example: 3,1,2")
            }
            out.append(n)
        }
        return out
    }

    /// The file name extension of a photo's bytes, sniffed (not the type the card claims).
    static func fileExtension(_ bytes: [UInt8]) -> String {
        switch PhotoUpload.sniffType(bytes) {
        case "image/png": "png"
        case "image/webp": "webp"
        case "image/jpeg": "jpg"
        default: "bin"
        }
    }

    /// Downloads photo `number` (1-based) of a card with `blob.get`, in chunks. A photo the
    /// node does not hold yet is pending: its peers have not sent it.
    static func download(_ photo: Fields<PhotoInfo>, number: Int, context: CommandContext) throws(ClientError) -> [UInt8] {
        let hash = photo[.hash]?.stringValue ?? ""
        var bytes: [UInt8] = []
        while true {
            let part: Fields<BlobGetResult>
            do {
                part = try context.call(API.blobGet, BlobGetRequest(hash: hash, offset: Int64(bytes.count)))
            } catch where error.rpcError?.code == RPCError.Code.notFound.rawValue {
                throw ClientError("photo \(number) (\(ClientFormat.sanitize(String(hash.prefix(16))))…) has not arrived on this node yet (pending): "
                                  + "it is fetched from peers; nothing was written", hint: "try again in a while")
            }
            guard let data = part[.data]?.stringValue.flatMap({ Data(base64Encoded: $0) }), let size = part[.size]?.intValue else {
                throw ClientError("the daemon answered blob.get without data (\(part.json))",
                                  hint: "this client (\(MentorMateVersion.string)) and the daemon may be different versions")
            }
            bytes.append(contentsOf: data)
            if bytes.count >= size || data.isEmpty { return bytes }
        }
    }

    /// `--save-photos DIR`: every photo of the card, as DIR/1.jpg, DIR/2.png, … (by content).
    /// DIR is made if missing; an existing file is never overwritten — nothing is written then.
    /// Returns the paths written.
    static func save(_ card: Fields<Card>, to dir: String, context: CommandContext) throws(ClientError) -> [String] {
        let photos = card.objects(.photos, as: PhotoInfo.self)
        guard !photos.isEmpty else {
            throw ClientError("\(ClientFormat.sanitize(card[.name]?.stringValue ?? "this card")) has no photos; nothing was written")
        }
        var files: [(path: String, bytes: [UInt8])] = []
        for (i, photo) in photos.enumerated() {
            let bytes = try download(photo, number: i + 1, context: context)
            let base = dir.hasSuffix("/") ? dir : dir + "/"
            files.append((base + "\(i + 1).\(fileExtension(bytes))", bytes))
        }
        if let existing = files.first(where: { context.host.fileExists($0.path) }) {
            throw ClientError("\(ClientFormat.sanitize(existing.path)) exists already; nothing was written (files are never overwritten)",
                              hint: "give an empty or new directory, or move the old photos away")
        }
        try context.host.makeDirectory(dir)
        for file in files { try context.host.writeNewFile(file.path, file.bytes) }
        return files.map(\.path)
    }

    /// `--open`: the main photo, handed to `xdg-open` (`runProgram`: argv, no shell) from a private
    /// temporary file — only where a desktop session is: DISPLAY or WAYLAND_DISPLAY set and
    /// `xdg-open` on the PATH. Returns the file opened.
    static func open(_ card: Fields<Card>, context: CommandContext) throws(ClientError) -> String {
        let host = context.host
        let desktop = ["DISPLAY", "WAYLAND_DISPLAY"].contains { host.environment($0)?.isEmpty == false }
        guard desktop else {
            throw ClientError("--open needs a desktop session, and neither DISPLAY nor WAYLAND_DISPLAY is set",
                              hint: "run it in a terminal of your desktop, or save the photos with --save-photos DIR")
        }
        guard let opener = host.findProgram("xdg-open") else {
            throw ClientError("--open needs xdg-open, which is not on the PATH",
                              hint: "install xdg-utils (apt install xdg-utils), or save the photos with --save-photos DIR")
        }
        guard let main = card.objects(.photos, as: PhotoInfo.self).first ?? card.object(.photo, as: PhotoInfo.self) else {
            throw ClientError("\(ClientFormat.sanitize(card[.name]?.stringValue ?? "this card")) has no photo to open")
        }
        let bytes = try download(main, number: 1, context: context)
        let path = try host.writeTemporaryFile("photo-1.\(fileExtension(bytes))", bytes)
        // xdg-open hands the file to the desktop's viewer and returns (without a desktop
        // environment it runs the viewer itself, and returns when it closes).
        let status = try host.runProgram([opener, path])
        guard status == 0 else {
            throw ClientError("xdg-open failed (exit status \(status)); the photo is in \(ClientFormat.sanitize(path))",
                              hint: "open that file with an image viewer, or set one up for images (xdg-mime default)")
        }
        return path
    }
}

extension ClientHost {
    // Defaults for hosts without a file system or desktop (the tests' fake host has its own).
    public func fileExists(_ path: String) -> Bool { false }
    public func makeDirectory(_ path: String) throws(ClientError) {
        throw ClientError("cannot make \(path) here", hint: "run mentormate in a terminal")
    }
    public func writeTemporaryFile(_ name: String, _ bytes: [UInt8]) throws(ClientError) -> String {
        throw ClientError("cannot write a temporary file here", hint: "run mentormate in a terminal")
    }
}
