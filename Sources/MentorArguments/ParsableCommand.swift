/// Commands in the style of swift-argument-parser, without the dependency: a command is a struct
/// whose options are declared, each with its help text, next to the property it fills; parsing
/// works on `ArgumentLexer`'s tokens, `validate()` checks what one option cannot check alone,
/// and nothing runs until both passed. Shared by `mentormate` and `mentormated`.

/// A mistake in how a command was typed, found before anything runs (exit status 2). The
/// message names the problem; the hint says how to do it right.
public struct UsageError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var hint: String?

    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    public var description: String { hint.map { "\(message)\nhint: \($0)" } ?? message }
}

/// What help and error messages show of an option.
public struct OptionSpec: Equatable, Sendable {
    /// With its dashes: `--name`.
    public let name: String
    /// A one-letter alias with its dash (`-h`), if any.
    public let short: String?
    /// The placeholder of the value (`N`, `FILE`); nil for a flag.
    public let valueName: String?
    /// One line for `--help`.
    public let help: String
    /// Parsing fails when a required option is missing.
    public let isRequired: Bool
    /// May be given more than once (every value is kept); otherwise a second use is an error.
    public let repeats: Bool

    public init(_ name: String, short: String? = nil, valueName: String? = nil, help: String,
                isRequired: Bool = false, repeats: Bool = false) {
        self.name = name
        self.short = short
        self.valueName = valueName
        self.help = help
        self.isRequired = isRequired
        self.repeats = repeats
    }

    public var takesValue: Bool { valueName != nil }

    /// `--name N` or `--follow`.
    public var synopsis: String { valueName.map { "\(name) \($0)" } ?? name }

    /// The column on the left of the help line: `-h, --help` or `--name N`.
    public var helpLabel: String { (short.map { "\($0), " } ?? "") + synopsis }

    public func matches(_ token: String) -> Bool { token == name || (short != nil && token == short) }
}

/// An option of command `Command`: what help shows, and how a value lands in the command.
public struct CommandOption<Command> {
    public let spec: OptionSpec
    let apply: (inout Command, String?) throws(UsageError) -> Void

    public init(_ spec: OptionSpec, apply: @escaping (inout Command, String?) throws(UsageError) -> Void) {
        self.spec = spec
        self.apply = apply
    }

    /// A flag without a value (`--follow`).
    public static func flag(_ name: String, short: String? = nil, _ keyPath: WritableKeyPath<Command, Bool>,
                            help: String) -> Self {
        Self(OptionSpec(name, short: short, help: help)) { command, _ throws(UsageError) in
            command[keyPath: keyPath] = true
        }
    }

    /// Any text (`--bio TEXT`); the empty string is a value too.
    public static func string(_ name: String, value: String, _ keyPath: WritableKeyPath<Command, String?>,
                              required: Bool = false, help: String) -> Self {
        Self(OptionSpec(name, valueName: value, help: help, isRequired: required)) { command, text throws(UsageError) in
            command[keyPath: keyPath] = text ?? ""
        }
    }

    /// A whole number in `range` (`--wage N`); anything else is refused naming the option.
    public static func integer(_ name: String, value: String = "N", _ keyPath: WritableKeyPath<Command, Int64?>,
                               range: ClosedRange<Int64> = 0...Int64.max, help: String) -> Self {
        Self(OptionSpec(name, valueName: value, help: help)) { command, text throws(UsageError) in
            command[keyPath: keyPath] = try ValueParser.integer(text ?? "", option: name, range: range)
        }
    }

    /// A comma-separated list (`--courses C1,C2`): items trimmed, empty items dropped, so
    /// `--courses ""` gives the empty list.
    public static func list(_ name: String, value: String, _ keyPath: WritableKeyPath<Command, [String]?>,
                            help: String) -> Self {
        Self(OptionSpec(name, valueName: value, help: help)) { command, text throws(UsageError) in
            command[keyPath: keyPath] = ValueParser.list(text ?? "")
        }
    }

    /// One of a few words (`--role student|tutor`), compared without regard to case.
    public static func choice(_ name: String, _ choices: [String], _ keyPath: WritableKeyPath<Command, String?>,
                              required: Bool = false, help: String) -> Self {
        Self(OptionSpec(name, valueName: choices.joined(separator: "|"), help: help, isRequired: required)) {
            command, text throws(UsageError) in
            command[keyPath: keyPath] = try ValueParser.choice(text ?? "", option: name, choices: choices)
        }
    }

    /// An option that may be repeated; each use appends its value (`--peer HOST:PORT`).
    public static func appending(_ name: String, value: String, _ keyPath: WritableKeyPath<Command, [String]>,
                                 help: String) -> Self {
        Self(OptionSpec(name, valueName: value, help: help, repeats: true)) { command, text throws(UsageError) in
            command[keyPath: keyPath].append(text ?? "")
        }
    }
}

/// A positional argument of command `Command` (`ID`, `[MESSAGE]`).
public struct CommandArgument<Command> {
    public let name: String
    public let help: String
    public let isOptional: Bool
    let apply: (inout Command, String) throws(UsageError) -> Void

    public init(_ name: String, optional: Bool, help: String,
                apply: @escaping (inout Command, String) throws(UsageError) -> Void) {
        self.name = name
        self.isOptional = optional
        self.help = help
        self.apply = apply
    }

    public static func required(_ name: String, _ keyPath: WritableKeyPath<Command, String>, help: String) -> Self {
        Self(name, optional: false, help: help) { command, text throws(UsageError) in command[keyPath: keyPath] = text }
    }

    public static func optional(_ name: String, _ keyPath: WritableKeyPath<Command, String?>, help: String) -> Self {
        Self(name, optional: true, help: help) { command, text throws(UsageError) in command[keyPath: keyPath] = text }
    }

    var synopsis: String { isOptional ? "[\(name)]" : name }
}

/// Name and help of a command.
public struct CommandConfiguration: Sendable {
    /// The program (`mentormate`).
    public var program: String
    /// The words after the program that select this command (`["profile", "set"]`); empty for a
    /// program without subcommands.
    public var path: [String]
    /// One line for the command list and the top of `--help`.
    public var abstract: String
    /// More paragraphs for `--help`, if any.
    public var discussion: String?
    /// The hint for an argument too many, when the usage line alone would not help (a chat
    /// message with spaces that was not quoted).
    public var extraArgumentHint: String?

    public init(program: String, path: [String], abstract: String, discussion: String? = nil,
                extraArgumentHint: String? = nil) {
        self.program = program
        self.path = path
        self.abstract = abstract
        self.discussion = discussion
        self.extraArgumentHint = extraArgumentHint
    }

    /// How messages name the command: `profile set`, or the program when there is no path.
    public var displayName: String { path.isEmpty ? program : path.joined(separator: " ") }
    /// What to type for it: `mentormate profile set`.
    public var invocation: String { ([program] + path).joined(separator: " ") }
}

public protocol ParsableCommand {
    static var configuration: CommandConfiguration { get }
    static var options: [CommandOption<Self>] { get }
    static var arguments: [CommandArgument<Self>] { get }
    /// Every field at its default, before parsing fills it.
    init()
    /// Checks across options (a required combination, a conflict) that parsing one option at a
    /// time cannot; runs after parsing and before anything else.
    func validate() throws(UsageError)
}

extension ParsableCommand {
    public static var arguments: [CommandArgument<Self>] { [] }
    public func validate() throws(UsageError) {}

    /// Fills a command from the tokens after its name, then validates it.
    public static func parse(_ tokens: some Collection<ArgumentToken>) throws(UsageError) -> Self {
        let config = configuration
        let options = self.options
        let positional = arguments
        var command = Self()
        var seen: Set<String> = []
        var nextArgument = 0
        var rest = tokens[...]

        while let token = rest.popFirst() {
            switch token {
            case .option(let name, let inline):
                guard let option = options.first(where: { $0.spec.matches(name) }) else {
                    throw unknownOption(name)
                }
                let spec = option.spec
                if seen.contains(spec.name) && !spec.repeats {
                    throw UsageError("\(spec.name) is given twice for `\(config.displayName)`",
                                     hint: "give it once")
                }
                seen.insert(spec.name)
                var value: String?
                if spec.takesValue {
                    if let inline {
                        value = inline
                    } else if case .argument(let next)? = rest.first {
                        rest.removeFirst()
                        value = next
                    } else {
                        throw UsageError("\(spec.name) needs a value (\(spec.synopsis))",
                                         hint: "for a value that starts with -, write \(spec.name)=VALUE")
                    }
                } else if inline != nil {
                    throw UsageError("\(spec.name) takes no value", hint: "write just \(spec.name)")
                }
                try option.apply(&command, value)
            case .argument(let word):
                guard nextArgument < positional.count else {
                    throw extraArgument(word)
                }
                try positional[nextArgument].apply(&command, word)
                nextArgument += 1
            }
        }

        if let missing = options.first(where: { $0.spec.isRequired && !seen.contains($0.spec.name) }) {
            throw UsageError("`\(config.displayName)` needs \(missing.spec.synopsis)",
                             hint: "usage: \(usage)")
        }
        if nextArgument < positional.count, !positional[nextArgument].isOptional {
            throw UsageError("`\(config.displayName)` needs \(positional[nextArgument].name)",
                             hint: "usage: \(usage)")
        }
        try command.validate()
        return command
    }

    static func unknownOption(_ name: String) -> UsageError {
        let config = configuration
        let names = options.flatMap { [$0.spec.name] + ($0.spec.short.map { [$0] } ?? []) }
        let message = "unknown option \(name) for `\(config.displayName)`"
        if let guess = Suggestion.closest(to: name, among: names) {
            return UsageError("\(message); did you mean \(guess)?", hint: "`\(config.invocation) --help` lists its options")
        }
        return UsageError(message, hint: "`\(config.invocation) --help` lists its options")
    }

    static func extraArgument(_ word: String) -> UsageError {
        let config = configuration
        let positional = arguments
        let takes: String
        switch positional.count {
        case 0: takes = "takes no arguments"
        case 1: takes = "takes one argument, \(positional[0].name)"
        default: takes = "takes \(positional.map(\.name).joined(separator: " and "))"
        }
        return UsageError("unexpected argument '\(word)' for `\(config.displayName)`, which \(takes)",
                          hint: config.extraArgumentHint ?? "usage: \(usage)")
    }

    /// The usage line: `mentormate profile set [--name N] ... [ID]`.
    public static var usage: String {
        var words = [configuration.invocation]
        for option in options {
            words.append(option.spec.isRequired ? option.spec.synopsis : "[\(option.spec.synopsis)]")
        }
        for argument in arguments { words.append(argument.synopsis) }
        return words.joined(separator: " ")
    }

    /// The whole `--help` page; `global` lists options that every command accepts.
    public static func helpText(global: [OptionSpec] = []) -> String {
        let config = configuration
        var out = config.abstract + "\n"
        if let discussion = config.discussion { out += "\n" + discussion + "\n" }
        out += "\nUSAGE: " + HelpFormatter.wrap(usage, indent: 7 + config.invocation.count + 1, width: 100) + "\n"
        if !arguments.isEmpty {
            out += "\nARGUMENTS:\n" + HelpFormatter.rows(arguments.map { ($0.name, $0.help) })
        }
        if !options.isEmpty {
            out += "\nOPTIONS:\n" + HelpFormatter.rows(options.map { ($0.spec.helpLabel, $0.spec.help) })
        }
        if !global.isEmpty {
            out += "\nGLOBAL OPTIONS:\n" + HelpFormatter.rows(global.map { ($0.helpLabel, $0.help) })
        }
        return out
    }
}

/// Takes options that may stand anywhere on the line (`--json`, `--socket PATH` for the
/// client) out of the tokens, leaving the rest in order for the command's own parser.
public struct GlobalOptionScan: Equatable, Sendable {
    /// Values by option name (the long name); a flag maps to `[nil]`, one entry per use.
    public var values: [String: [String?]] = [:]
    public var remaining: [ArgumentToken] = []

    public init(_ tokens: [ArgumentToken], options: [OptionSpec]) throws(UsageError) {
        var rest = tokens[...]
        while let token = rest.popFirst() {
            guard case .option(let name, let inline) = token, let spec = options.first(where: { $0.matches(name) }) else {
                remaining.append(token)
                continue
            }
            if values[spec.name] != nil && !spec.repeats && spec.takesValue {
                throw UsageError("\(spec.name) is given twice", hint: "give it once")
            }
            if spec.takesValue {
                if let inline {
                    values[spec.name, default: []].append(inline)
                } else if case .argument(let next)? = rest.first {
                    rest.removeFirst()
                    values[spec.name, default: []].append(next)
                } else {
                    throw UsageError("\(spec.name) needs a value (\(spec.synopsis))",
                                     hint: "for a value that starts with -, write \(spec.name)=VALUE")
                }
            } else {
                if inline != nil { throw UsageError("\(spec.name) takes no value", hint: "write just \(spec.name)") }
                values[spec.name, default: []].append(nil)
            }
        }
    }

    public func has(_ name: String) -> Bool { values[name] != nil }
    public func value(_ name: String) -> String? { values[name]?.last ?? nil }
}

/// Parses option values; each failure names the option and shows a correct use.
public enum ValueParser {
    public static func integer(_ text: String, option: String, range: ClosedRange<Int64>) throws(UsageError) -> Int64 {
        let trimmed = text.cliTrimmed
        let digits = trimmed.hasPrefix("-") ? trimmed.dropFirst() : trimmed[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw UsageError("\(option) needs a whole number, not '\(text)'",
                             hint: "for example \(option) \(range.lowerBound == 0 ? 25 : range.lowerBound)")
        }
        guard let n = Int64(trimmed), range.contains(n) else {
            if trimmed.hasPrefix("-") || (Int64(trimmed).map { $0 < range.lowerBound } ?? false) {
                throw UsageError(range.upperBound == .max ? "\(option) must be \(range.lowerBound) or more, not \(trimmed)"
                                 : "\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(trimmed)")
            }
            throw UsageError(range.upperBound == .max ? "\(option) is too large: \(trimmed)"
                             : "\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(trimmed)")
        }
        return n
    }

    public static func list(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false)
            .map { String($0).cliTrimmed }
            .filter { !$0.isEmpty }
    }

    public static func choice(_ text: String, option: String, choices: [String]) throws(UsageError) -> String {
        let word = text.cliTrimmed.lowercased()
        if let match = choices.first(where: { $0.lowercased() == word }) { return match }
        let list = choices.count == 2 ? "\(choices[0]) or \(choices[1])" : choices.joined(separator: ", ")
        var message = "\(option) must be \(list), not '\(text)'"
        if let guess = Suggestion.closest(to: word, among: choices) { message += "; did you mean \(guess)?" }
        throw UsageError(message)
    }
}

/// "Did you mean": the candidate nearest to a mistyped word, when it is near enough to be a typo.
public enum Suggestion {
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let typed = Array(word.lowercased().drop(while: { $0 == "-" }))
        guard !typed.isEmpty else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let target = Array(candidate.lowercased().drop(while: { $0 == "-" }))
            // A unique-looking abbreviation (`--cour` for `--courses`) counts as near.
            let d = target.starts(with: typed) && typed.count >= 3 ? 1 : distance(typed, target)
            let allowed = max(1, min(typed.count, target.count) / 3)
            if d <= allowed, d < (best?.distance ?? .max) { best = (candidate, d) }
        }
        return best?.candidate
    }

    /// Edit distance counting an insertion, a deletion, a substitution or a swap of two
    /// neighbours as one edit (optimal string alignment), so `nmae` is one edit from `name`.
    public static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

public enum HelpFormatter {
    /// Two columns: labels padded to one width, help text after them.
    public static func rows(_ rows: [(String, String)], labelWidth: Int? = nil) -> String {
        let width = labelWidth ?? min(max(rows.map(\.0.count).max() ?? 0, 8), 28)
        var out = ""
        for (label, help) in rows {
            if label.count > width {
                out += "  \(label)\n" + String(repeating: " ", count: width + 4) + help + "\n"
            } else {
                out += "  " + label.cliPadded(to: width) + "  " + help + "\n"
            }
        }
        return out
    }

    /// Breaks a usage line between words at `width` (the first line follows the 7 columns of
    /// "USAGE: "), continuing lines at `indent` columns; `[--name N]` stays in one piece.
    public static func wrap(_ text: String, indent: Int, width: Int) -> String {
        var words: [String] = []
        var depth = 0
        var word = ""
        for c in text {
            if c == "[" { depth += 1 } else if c == "]" { depth -= 1 }
            if c == " " && depth == 0 {
                if !word.isEmpty { words.append(word) }
                word = ""
            } else {
                word.append(c)
            }
        }
        if !word.isEmpty { words.append(word) }
        var lines: [String] = []
        var line = ""
        var offset = 7
        for w in words {
            let candidate = line.isEmpty ? w : line + " " + w
            if !line.isEmpty && offset + candidate.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent) + w
                offset = 0
            } else {
                line = candidate
            }
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

extension String {
    public var cliTrimmed: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }

    public func cliPadded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
