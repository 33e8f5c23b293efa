import Foundation
import MentorCore
import MentorCrypto
import MentorStore

/// `mentormate-bench campus`: what campus membership (issue 19 item 5, PROTOCOL.md §6.8) costs
/// a node at campus shape — thousands of accounts, a card or two each — as the number of
/// accounts grows.
struct CampusCommand {
    static let name = "campus"

    static let help = """
        USAGE: mentormate-bench campus [--accounts N,N,...]

        For each N (default 1000,10000,50000) a fresh replica in a temporary directory gets N
        accounts' first cards and, for half of them, a second card carrying a membership
        certificate. Measured, in one run:
          1. verifying a card with a certificate against one without (VerifiedRecord: the record's
             signature, and for the first the CA's too): µs each and the ratio
          2. applying them in batches of 256 (`memberships` is written for each certificate): µs a
             record, cards with and without a certificate
          3. what a node reads over every account, and how often: the members at start
             (`Replica.memberships(ca:)`, once) and the accounts held (`Replica.cardAccounts()`,
             at most once per 10 s while lists are asked for with require_membership)
        and prints how each grows with N (per-record costs should stay flat; the two reads grow
        linearly and are paid once, or once per 10 s).

        OPTIONS:
          --accounts N,...  account counts (100 to 200,000)
          -h, --help        show this help
        Exit status: 0 measured, 1 a record was refused or a count is wrong, 2 usage error.
        """

    var accounts = [1_000, 10_000, 50_000]

    enum Parsed { case help, run(CampusCommand) }

    static func parse(_ tokens: ArraySlice<Token>) throws(UsageError) -> Parsed {
        var command = CampusCommand()
        var reader = TokenReader(tokens, command: name)
        while let token = reader.next() {
            switch token {
            case .option("--help", _), .option("-h", _):
                return .help
            case .option("--accounts", let v):
                command.accounts = try reader.counts(for: "--accounts", inline: v, range: 100...200_000)
            case .option(let other, _):
                throw UsageError("\(name): unknown option '\(other)'")
            case .argument(let other):
                throw UsageError("\(name): unexpected argument '\(other)'")
            }
        }
        return .run(command)
    }

    struct Row {
        var n: Int
        var verifyPlain: Double, verifyCertified: Double
        var applyPlain: Double, applyCertified: Double
        var members: Duration, cardAccounts: Duration
    }

    func run() -> Bool {
        print("mentormate-bench campus: membership certificates at campus shape (half the accounts certified)")
        let ca = SigningKeyPair.generate()
        var rows: [Row] = []
        for n in accounts {
            do {
                guard let row = try measure(n, ca: ca) else { return false }
                rows.append(row)
                print("  \(Format.pad(Format.grouped(n), 7, left: true)) accounts: verify \(Format.fixed(row.verifyPlain, 1)) µs plain, "
                      + "\(Format.fixed(row.verifyCertified, 1)) µs certified (ratio \(Format.ratio(row.verifyCertified / row.verifyPlain))); "
                      + "apply \(Format.fixed(row.applyPlain, 1)) µs plain, \(Format.fixed(row.applyCertified, 1)) µs certified; "
                      + "members at start \(Format.millis(row.members)), accounts held \(Format.millis(row.cardAccounts))")
            } catch {
                printError("campus: \(n) accounts: \(error)")
                return false
            }
        }
        if let first = rows.first, let last = rows.last, last.n > first.n {
            let growth = Double(last.n) / Double(first.n)
            print("growth from \(Format.grouped(first.n)) to \(Format.grouped(last.n)) accounts (\(Format.fixed(growth, 0))x): "
                  + "apply a certified card \(Format.ratio(last.applyCertified / first.applyCertified)), "
                  + "members at start \(Format.ratio(last.members.seconds / max(first.members.seconds, 1e-9))), "
                  + "accounts held \(Format.ratio(last.cardAccounts.seconds / max(first.cardAccounts.seconds, 1e-9)))")
        }
        return true
    }

    private func measure(_ n: Int, ca: SigningKeyPair) throws -> Row? {
        let clock = ContinuousClock()
        let issued: UInt64 = 1_800_000_000_000
        var plain: [[UInt8]] = [], certified: [[UInt8]] = []
        plain.reserveCapacity(n)
        certified.reserveCapacity(n / 2)
        for i in 0..<n {
            let keys = SigningKeyPair.generate()
            var w = RecordWriter(keys: keys)
            plain.append(try w.profile(ProfileCard(name: "Student \(i)", role: i % 2 == 0 ? .student : .tutor, courses: ["CS \(i % 40)"]),
                                       at: issued + UInt64(i)).encoded)
            guard i % 2 == 0 else { continue }
            var edit = ProfileCard()
            edit.membership = try MembershipCertificate.sign(by: ca, account: keys.publicKey.key, domain: "campus.edu",
                                                             issued: issued, expires: issued + 365 * 86_400_000)
            certified.append(try w.profile(edit, at: issued + UInt64(n + i)).encoded)
        }
        func microsEach(_ records: [[UInt8]]) -> Double {
            let start = clock.now
            for r in records { _ = try? VerifiedRecord(r) }
            return (clock.now - start).seconds * 1e6 / Double(records.count)
        }
        let verifyPlain = microsEach(plain), verifyCertified = microsEach(certified)

        let dir = NSTemporaryDirectory() + "mm-bench-campus-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var settings = Replica.Settings()
        settings.accountWork = AccountWork.Requirement(bits: 0, network: .default)
        settings.now = { issued + 1_000_000 }
        let replica = try Replica(path: dir + "/replica.db", settings: settings)
        func applyMicros(_ records: [[UInt8]]) throws -> Double? {
            let start = clock.now
            for chunk in stride(from: 0, to: records.count, by: 256) {
                let outcomes = try replica.apply(batch: Array(records[chunk..<min(chunk + 256, records.count)]))
                if let bad = outcomes.first(where: { $0 != .applied }) {
                    printError("campus: a record was not applied: \(bad)")
                    return nil
                }
            }
            return (clock.now - start).seconds * 1e6 / Double(records.count)
        }
        guard let applyPlain = try applyMicros(plain), let applyCertified = try applyMicros(certified) else { return nil }

        var start = clock.now
        let members = try replica.memberships(ca: ca.publicKey.key)
        let membersTook = clock.now - start
        start = clock.now
        let held = try replica.cardAccounts()
        let heldTook = clock.now - start
        guard members.count == certified.count, held.count == n else {
            printError("campus: \(members.count) members (want \(certified.count)), \(held.count) accounts held (want \(n))")
            return nil
        }
        try replica.close()
        return Row(n: n, verifyPlain: verifyPlain, verifyCertified: verifyCertified, applyPlain: applyPlain,
                   applyCertified: applyCertified, members: membersTook, cardAccounts: heldTook)
    }
}
