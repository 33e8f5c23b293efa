import MentorAPI
import MentorArguments

/// Command-line parsing for `mentormate-bench`: MentorArguments' lexer splits argv into tokens, and
/// each command parses its options from the tokens, then validates them apart from running.

/// A usage mistake: printed with a hint to `--help`, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// argv is split by the project's own lexer (MentorArguments), the same rules as `mentormate`.
typealias Token = ArgumentToken

/// Consumes tokens for one command.
struct TokenReader {
    private var tokens: ArraySlice<Token>
    let command: String

    init(_ tokens: ArraySlice<Token>, command: String) {
        self.tokens = tokens
        self.command = command
    }

    mutating func next() -> Token? { tokens.popFirst() }

    /// The value of option `name`: from `--name=value`, or the token after it.
    mutating func value(for name: String, inline: String?) throws(UsageError) -> String {
        if let inline { return inline }
        guard case .argument(let v)? = tokens.first else {
            throw UsageError("\(command): \(name) needs a value")
        }
        tokens.removeFirst()
        return v
    }

    /// An integer option value; accepts `_` and `,` as digit separators and a `k` suffix (×1000).
    mutating func integer(for name: String, inline: String?) throws(UsageError) -> Int {
        let text = try value(for: name, inline: inline)
        var digits = text.filter { $0 != "_" && $0 != "," }
        var scale = 1
        if digits.hasSuffix("k") || digits.hasSuffix("K") { digits.removeLast(); scale = 1000 }
        guard let n = Int(digits), n >= 0, n <= Int.max / scale else {
            throw UsageError("\(command): \(name) wants a whole number, got '\(text)'")
        }
        return n * scale
    }

    /// A comma-separated list of counts, each in `range` (`_` allowed inside a number, `k` ×1000).
    mutating func counts(for name: String, inline: String?, range: ClosedRange<Int>) throws(UsageError) -> [Int] {
        let text = try value(for: name, inline: inline)
        let counts = text.split(separator: ",").map { part -> Int? in
            var digits = part.trimmingCharacters(in: .whitespaces).filter { $0 != "_" }
            var scale = 1
            if digits.hasSuffix("k") || digits.hasSuffix("K") { digits.removeLast(); scale = 1000 }
            return Int(digits).map { $0 * scale }
        }
        guard !counts.isEmpty, counts.allSatisfy({ $0.map(range.contains) ?? false }) else {
            throw UsageError("\(command): \(name) wants counts from \(range.lowerBound) to \(range.upperBound), comma-separated, got '\(text)'")
        }
        return counts.compactMap { $0 }
    }
}

/// The whole program's usage.
enum Usage {
    static let text = """
        mentormate-bench: performance measurements for MentorMate.

        USAGE: mentormate-bench <command> [options]

        COMMANDS:
          merge     Verify + merge + commit throughput of a replica against the single-core
                    signature-verify rate and the raw SQLite insert rate; with --devices D, the
                    same history signed by D device keys per account next to it (issue 15).
          api       Requests/s and p50/p99 latency of `status` and `feed` over the daemon's
                    socket (10,000 cards, 1 and 8 clients), idle CPU and idle memory.
          peers     Two daemons over loopback: time to replicate a 15,000-record backlog,
                    bytes on the wire ÷ record bytes, push latency p50/p99 over 1,000 messages.
          reconcile Issue 13's table: reconnecting equal and differing replicas (bytes, CPU),
                    cold sync against the local merge rate, many authors against few, bodies
                    per node per record in a mesh, replica size against the live state.
          hub       One hub and N client daemons over loopback (50, 200, 500): the hub's memory
                    and CPU per client, push latency p50/p99 to every client, extrapolated
                    to 2,000 clients.
          campus    Membership certificates at campus shape (1,000 to 50,000 accounts): verify
                    and apply cost of a certified card against a plain one, and the reads over
                    every account (members at start, accounts held) as the count grows.
          discovery In the multi-host lab (root): time from starting a daemon on a fresh host
                    to it being listed in `peers`, and its card readable, on another host.
          work      An account's proof of work on one core: hash rate, search time at a
                    difficulty (median, mean), and the cost of the check a receiver runs.
          recon     Sync v2's reconciliation tree at 10k, 100k and 1M IDs: read times (flat),
                    rebuild time (migration 8), bytes per ID on disk.

        Run `mentormate-bench <command> --help` for a command's options.
        Build with -c release; debug builds are many times slower.
        """
}
