/// The first step of command-line parsing, shared by `mentormate` and `mentormated`: argv is
/// split into tokens before any command looks at it, so every command sees the same rules for
/// `--name value`, `--name=value`, `-h` and `--`.

/// One element of argv after lexing.
public enum ArgumentToken: Equatable, Sendable, CustomStringConvertible {
    /// `--name`, `--name=value` or `-x`. `name` keeps its dashes. `value` is set only by the
    /// `=` form; a parser that wants a value takes the following `.argument` token otherwise.
    case option(name: String, value: String?)
    /// A word that is not an option: a command name, a positional argument or an option's
    /// value. Everything after a lone `--` is an argument, whatever it looks like.
    case argument(String)

    public var description: String {
        switch self {
        case .option(let name, let value?): return "\(name)=\(value)"
        case .option(let name, nil): return name
        case .argument(let text): return text
        }
    }
}

public enum ArgumentLexer {
    /// Splits argv (without the program name) into tokens.
    ///
    /// - `--name=value` is one option with an inline value (`--name=` gives the empty value);
    /// - `--name` and `-x` are options without an inline value;
    /// - a lone `--` ends the options: it is dropped and every later word is an argument;
    /// - `-` (the usual name for stdin) and words that start with `-` and a digit (`-5`,
    ///   `-0.5`) are arguments, so a negative number reaches the option that parses it and is
    ///   refused there with a message about the number, not about an unknown option.
    public static func lex(_ argv: some Sequence<String>) -> [ArgumentToken] {
        var tokens: [ArgumentToken] = []
        var onlyArguments = false
        for word in argv {
            if onlyArguments {
                tokens.append(.argument(word))
            } else if word == "--" {
                onlyArguments = true
            } else if word.hasPrefix("--") {
                if let eq = word.firstIndex(of: "=") {
                    tokens.append(.option(name: String(word[..<eq]), value: String(word[word.index(after: eq)...])))
                } else {
                    tokens.append(.option(name: word, value: nil))
                }
            } else if word.hasPrefix("-"), word.count > 1, let second = word.dropFirst().first, !second.isNumber, second != "." {
                tokens.append(.option(name: word, value: nil))
            } else {
                tokens.append(.argument(word))
            }
        }
        return tokens
    }
}
