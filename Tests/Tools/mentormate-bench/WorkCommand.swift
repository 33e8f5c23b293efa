import Foundation
import MentorCore
import MentorCrypto

/// `mentormate-bench work`: what an account's proof of work costs its maker and its checkers on
/// this machine (PROTOCOL.md §6.1), to choose and document a network's difficulty.
struct WorkCommand {
    static let name = "work"

    static let help = """
        USAGE: mentormate-bench work [--bits N] [--accounts K]

        Measures on one core:
          1. the hash rate of the work search (AccountWork.solve's loop, 2^22 hashes)
          2. the search itself for K fresh accounts at N bits: each time, the median and the mean,
             beside the prediction from the rate (median ln 2 * 2^N / rate, mean 2^N / rate)
          3. the check a receiver runs (AccountWork.refusal on a signed seq-1 card: one hash),
             over 100,000 checks
        and prints the ratio of one check to the median search: what making an account costs
        against what checking it costs.

        OPTIONS:
          --bits N      difficulty (default \(AccountWork.defaultBits), the built-in network's)
          --accounts K  accounts to search for (default 16)
          -h, --help    show this help

        Target (printed PASS/MISS): at the default difficulty the median search takes 1 to 10 s
        on one core ("a few CPU-seconds on a laptop core"), and a check under 10 µs.
        Exit status: 0 measured, 1 a found nonce did not check, 2 usage error.
        """

    var bits = AccountWork.defaultBits
    var accounts = 16

    enum Parsed { case help, run(WorkCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = WorkCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _):
                return .help
            case .option("--bits", let v):
                command.bits = try reader.integer(for: "--bits", inline: v)
            case .option("--accounts", let v):
                command.accounts = try reader.integer(for: "--accounts", inline: v)
            case .option(let other, _):
                throw UsageError("\(name): unknown option '\(other)'")
            case .argument(let other):
                throw UsageError("\(name): unexpected argument '\(other)'")
            }
        }
        guard (1...AccountWork.maxBits).contains(command.bits) else {
            throw UsageError("\(name): --bits must be 1 to \(AccountWork.maxBits)")
        }
        guard (1...10_000).contains(command.accounts) else { throw UsageError("\(name): --accounts must be 1 to 10000") }
        return .run(command)
    }

    func run() -> Bool {
        let clock = ContinuousClock()
        let requirement = AccountWork.Requirement(bits: bits, network: .default)
        print("mentormate-bench work: proof of work at \(bits) bits on the built-in network, one core")

        let rate = AccountWork.measureRate(tries: 1 << 22)
        print("hash rate: \(Format.grouped(Int(rate))) hashes/s (2^22 hashes)")
        let predictedMedian = AccountWork.medianSeconds(bits: bits, rate: rate)
        let predictedMean = Double(UInt64(1) << UInt64(bits)) / rate

        var times: [Double] = []
        var cards: [VerifiedRecord] = []
        for i in 0..<accounts {
            let keys = SigningKeyPair.generate()
            let start = clock.now
            guard let nonce = AccountWork.solve(account: keys.publicKey.key, requirement: requirement) else {
                printError("account \(i): the search found no nonce")
                return false
            }
            let took = (clock.now - start).seconds
            times.append(took)
            var writer = RecordWriter(keys: keys)
            do {
                cards.append(try writer.profile(ProfileCard(name: "Bench \(i)", role: .student, work: nonce), at: 1_764_000_000_000))
            } catch {
                printError("account \(i): signing: \(error)")
                return false
            }
            print("  account \(Format.pad(String(i + 1), 3, left: true)): nonce \(Format.pad(String(nonce), 10, left: true))  "
                  + "\(Format.fixed(took, 2)) s")
        }
        let sorted = times.sorted()
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let mean = times.reduce(0, +) / Double(times.count)
        print("search: median \(Format.fixed(median, 2)) s, mean \(Format.fixed(mean, 2)) s, max \(Format.fixed(sorted.last ?? 0, 2)) s "
              + "over \(accounts) accounts; predicted from the rate: median \(Format.fixed(predictedMedian, 2)) s, "
              + "mean \(Format.fixed(predictedMean, 2)) s")

        let checks = 100_000
        var refused = 0
        let start = clock.now
        for i in 0..<checks {
            if AccountWork.refusal(of: cards[i % cards.count].record, requirement: requirement) != nil { refused += 1 }
        }
        let perCheck = (clock.now - start).seconds / Double(checks)
        guard refused == 0 else {
            printError("\(refused) of \(checks) checks refused a card whose nonce the search found")
            return false
        }
        print("check: \(Format.fixed(perCheck * 1e6, 2)) µs per seq-1 card (\(Format.grouped(checks)) checks); "
              + "one check / median search = \(Format.fixed(perCheck / max(median, 1e-9), 9))")
        if bits == AccountWork.defaultBits {
            let ok = (1.0...10.0).contains(predictedMedian) && perCheck < 10e-6
            print("target: median search 1-10 s and check < 10 µs at the default difficulty: \(ok ? "PASS" : "MISS")")
        }
        return true
    }
}
