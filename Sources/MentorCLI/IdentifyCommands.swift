import Foundation
import MentorAPI
import MentorArguments

// MARK: Identify (docs/API.md: identify)

extension MentormateCLI {
    public struct Identify: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["identify"],
                abstract: "Name a mineral or rock from its traits: the five closest of the catalogue, each with a score and reasons.",
                discussion: """
                    Give any of the traits you observed (at least one). Each entry of the catalogue
                    (about 70 common minerals and rocks, from Klein & Dutrow's Manual of Mineral
                    Science, mindat.org and webmineral.com) gets a score from 0 to 100: hardness
                    weighs 30, luster 25, streak 20, cleavage 15, color 10, over the traits given.
                    Hardness inside the entry's range scores in full, 1 - d/2 at a distance d outside.
                    A color or streak of the same base color scores in full (greenish-black is black),
                    one of the same tone (both dark, both light) half: a black streak is near
                    hematite's red-brown one. Colors: black, blue, brass-yellow, brown, brownish-black,
                    colourless, copper-red, dark-green, dark-grey, gold-yellow, green, greenish-black,
                    grey, lead-grey, orange, pale-brown, pink, purple, red, red-brown, silver-white,
                    steel-grey, white, yellow, yellow-brown.
                    --post ID reads the traits from a post's tags (a trait given as an option wins):
                    hardness-N (or mohs-N; hardness-5.5), streak-COLOR, cleavage-none|poor|good|perfect
                    (or no-cleavage), a luster word (metallic, vitreous, …, or luster-X), and light,
                    dark or a color name (or color-X). The first tag of each trait counts; the tags
                    read, and those not used with the reason, are printed before the entries.
                    """)
        }
        public var color: String?
        public var luster: String?
        public var cleavage: String?
        public var hardness: String?
        public var streak: String?
        public var post: String?
        public static let lusters = ["metallic", "non-metallic", "submetallic", "vitreous", "pearly", "silky", "greasy",
                                     "resinous", "adamantine", "dull", "earthy"]
        public static var options: [CommandOption<Self>] {
            [.string("--color", value: "light|dark|NAME", \.color, help: "The specimen's color: light, dark, or a color name (see below)."),
             .choice("--luster", lusters, \.luster, help: "metallic, non-metallic, or the luster itself."),
             .choice("--cleavage", ["none", "poor", "good", "perfect"], \.cleavage,
                     help: "How well it splits along flat planes (none: it only fractures)."),
             .string("--hardness", value: "N", \.hardness, help: "Mohs hardness, 1 to 10 (5.5 is fine)."),
             .string("--streak", value: "COLOR", \.streak, help: "The color of its powder on an unglazed tile."),
             .string("--post", value: "ID", \.post, help: "Read the traits from this post's tags (hardness-6, streak-black, metallic, …).")]
        }
        public init() {}

        /// The hardness as a number, once `validate()` passed.
        var hardnessValue: Double? { hardness.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } }

        public func validate() throws(UsageError) {
            guard color != nil || luster != nil || cleavage != nil || hardness != nil || streak != nil || post != nil else {
                throw UsageError("identify needs at least one trait, or --post ID",
                                 hint: "for example: mentormate identify --luster metallic --streak black --hardness 6")
            }
            if let hardness {
                guard let h = hardnessValue, h.isFinite, (1...10).contains(h) else {
                    throw UsageError("--hardness '\(ClientFormat.sanitize(hardness))' is not a Mohs hardness: use a number from 1 to 10",
                                     hint: "for example --hardness 5.5")
                }
            }
            if color?.isEmpty == true { throw UsageError("--color needs a value", hint: "light, dark or a color name, e.g. --color black") }
            if streak?.isEmpty == true { throw UsageError("--streak needs a color", hint: "for example --streak red-brown") }
            if let post, post.count < 4 || !post.allSatisfy(\.isHexDigit) {
                throw UsageError("--post '\(ClientFormat.sanitize(post))' is not a post ID", hint: "give 4 or more hex digits, as `mentormate posts` prints them")
            }
        }

        public var request: IdentifyRequest {
            IdentifyRequest(color: color, luster: luster, cleavage: cleavage, hardness: hardnessValue, streak: streak, post: post)
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            let result = try context.call(API.identify, request)
            if context.json { return context.printJSON(result.json) }
            context.print(ClientFormat.identify(result.json))
        }
    }
}

extension ClientFormat {
    /// `identify`: one block per entry, best first: its score, its facts, and a reason per trait.
    public static func identify(_ json: JSON) -> String {
        let fields = Fields<IdentifyResult>(json)
        let matches = fields.objects(.matches, as: IdentifyResult.Match.self)
        // With --post: which of the post's tags gave the traits, and which were not used.
        var header: [String] = []
        if let post = fields[.post]?.stringValue {
            let read = (fields[.tagsRead]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
            let ignored = (fields[.tagsIgnored]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
            header.append("Traits from post \(sanitize(post))'s tags: " + (read.isEmpty ? "none (the options gave them)" : read.joined(separator: "; ")))
            if !ignored.isEmpty { header.append("Not used: " + ignored.joined(separator: "; ")) }
        }
        let top = header.isEmpty ? "" : header.joined(separator: "\n") + "\n\n"
        if matches.isEmpty { return top + "No entry of the catalogue matches." }
        return top + matches.enumerated().map { i, m in
            let name = sanitize(m[.name]?.stringValue ?? "?")
            let score = m[.score]?.intValue.map(String.init) ?? "?"
            func list(_ key: IdentifyResult.Match.CodingKeys) -> String {
                (m[key]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }.joined(separator: ", ")
            }
            func text(_ key: IdentifyResult.Match.CodingKeys) -> String { sanitize(m[key]?.stringValue ?? "") }
            var lines = ["\(i + 1). \(name) (\(text(.kind))) — \(score)/100"]
            lines.append(block([("color", list(.colors)), ("luster", list(.luster)), ("streak", text(.streak)),
                                ("hardness", text(.hardness)), ("cleavage", text(.cleavage)),
                                ("gravity", text(.specificGravity)), ("system", text(.crystalSystem)),
                                ("note", text(.note))], indent: 3))
            let reasons = (m[.reasons]?.arrayValue ?? []).compactMap(\.stringValue)
            lines += reasons.map { "   · " + sanitize($0) }
            for p in m.objects(.posts, as: IdentifyResult.TaggedPost.self) {
                let by = p[.name]?.stringValue ?? shortID(p[.author]?.stringValue ?? "")
                lines.append("   post \(sanitize(p[.id]?.stringValue ?? "?")) by \(sanitize(by)): \(cell(p[.caption]?.stringValue ?? "", width: 50))")
            }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }
}
