import Foundation
import MentorCore
import MentorStore

/// `merge --devices N` (issue 15's benchmark): the history `merge` measures, signed three ways,
/// each merged into an empty file replica, in turn, `rounds` times; the medians side by side.
///
///   A. the account key signs every record (today's history, the same file as the report above);
///   B. the same, but each account certifies N device keys right after its first card and never
///      uses them (and seals with the encryption key the certificates publish, as C does): what
///      the certificates cost as records;
///   C. the account key writes the first card and the N certificates, the devices sign the rest
///      round-robin (format version 2, with clocks): B's records, now device-signed — checked
///      against their certificates (`ApplyBatch.standing(of:in:)`), 32 bytes longer (the
///      account), card edits with clocks, a signing key more per device that writes.
///
/// C − B is the cost of the device-signed path, certificate checks included; C / A is the rate
/// next to today's.
struct DeviceComparison {
    let records: Int
    let authors: Int
    let devices: Int
    let batchSize: Int
    let seed: UInt64
    let rounds: Int
    /// Also runs each history not pipelined (verify, then apply), each stage timed alone.
    let breakdown: Bool

    /// One of the three histories and what its merges measured.
    struct History {
        let name: String
        let label: String
        let path: String
        let stats: Workload.Stats
        /// Wall seconds of each merge.
        var merges: [Double] = []
        /// CPU seconds of each merge, all threads.
        var cpu: [Double] = []
        /// Cores other processes used during each merge.
        var others: [Double] = []
        var verifies: [Duration] = []
        var applies: [Duration] = []
    }

    /// Generates B and C, merges A, B, C in turn `rounds` times, checks every replica and prints
    /// the comparison. False if a history did not merge correctly.
    func run(in dir: String, baselinePath: String, baseline: Workload.Stats) throws -> Bool {
        print("")
        print("device keys (--devices \(devices)): the same \(Format.grouped(records)) records of \(Format.grouped(authors)) accounts "
              + "signed three ways, each merged into an empty file replica \(rounds) times, in turn; medians")
        var histories = [History(name: "A", label: "account key only (today)", path: baselinePath, stats: baseline)]
        for (name, label, signing) in [("B", "+ \(devices) certificates, account key signs", Workload.Signing.accountKeyCertifying(devices: devices)),
                                       ("C", "\(devices) devices sign, round-robin", Workload.Signing.devices(devices))] {
            let path = dir + "/workload-\(name).records"
            let stats = try Workload(records: records, authors: authors, seed: seed, signing: signing).write(to: path)
            ProcessMemory.releaseFreedMemory()
            print("  \(name). \(label): generated in \(Format.seconds(stats.elapsed)) (not measured), \(Format.grouped(stats.records)) records: "
                  + "\(Format.grouped(stats.certificates)) certificates, \(Format.grouped(stats.deviceSigned)) signed by a device, "
                  + "\(Format.grouped(stats.signers)) signing keys; avg \(stats.bytes / max(stats.records, 1)) B/record")
            histories.append(History(name: name, label: label, path: path, stats: stats))
        }
        guard histories.allSatisfy({ $0.stats.profiles == baseline.profiles && $0.stats.likes == baseline.likes
                                      && $0.stats.chats == baseline.chats }) else {
            printError("error: the histories differ in content (card edits, likes, chats); they must differ only in who signs")
            return false
        }

        var correct = true
        var reference: Outcome?
        for round in 0..<rounds {
            // Each round starts with the next history, so a drift of the machine's speed spreads evenly.
            for k in 0..<histories.count {
                let h = (round + k) % histories.count
                let replicaPath = dir + "/compare-\(histories[h].name).sqlite"
                let replica = try Replica(path: replicaPath, settings: Workload.replicaSettings)
                let merge = try Phases.importFile(histories[h].path, into: replica, batchSize: batchSize)
                histories[h].merges.append(merge.elapsed.seconds)
                histories[h].cpu.append(merge.cpu)
                histories[h].others.append(merge.others)
                if round == 0 {
                    // Checked once, outside the clock. A is merged first in round 0: the
                    // reference B and C must reach.
                    let outcome = try Outcome(summary: merge.summary, replica)
                    if h == 0 { reference = outcome }
                    if let reference, !check(histories[h], outcome, reference: reference) { correct = false }
                }
                try replica.close()
                try Self.remove(replicaPath)
                if breakdown {
                    let b = try Phases.breakdown(path: histories[h].path, replicaPath: replicaPath, batchSize: batchSize)
                    histories[h].verifies.append(b.verifyTime)
                    histories[h].applies.append(b.applyTime)
                    try Self.remove(replicaPath)
                }
            }
        }
        report(histories)
        return correct
    }

    // MARK: Checks

    /// What a merge left: its outcomes, the replica's counts, cards and integrity check.
    struct Outcome {
        var summary: ImportSummary
        var counts: ReplicaCounts
        var cards: [PublicKey: CardState] = [:]
        var integrity: [String]

        init(summary: ImportSummary, _ replica: Replica) throws {
            self.summary = summary
            counts = try replica.counts()
            integrity = try replica.integrityCheck()
            var cards: [PublicKey: CardState] = [:]
            try replica.forEachCard { cards[$0.author] = $0 }
            self.cards = cards
        }
    }

    /// Every record applied and none refused or held; the same cards, with no conflict, as A's
    /// replica; as many records kept as A's plus the certificates (compaction is per account).
    private func check(_ h: History, _ o: Outcome, reference: Outcome) -> Bool {
        var problems: [String] = []
        let s = o.summary, c = o.counts
        if s.applied != h.stats.records || s.refused != 0 || s.held != 0 || c.pending != 0 {
            problems.append("applied \(s.applied) of \(h.stats.records), refused \(s.refused) \(s.refusedByCode), held \(s.held), pending \(c.pending)")
        }
        if c.authors != h.stats.signers { problems.append("\(c.authors) signing keys in authors, \(h.stats.signers) expected") }
        if c.records != reference.counts.records + h.stats.certificates {
            problems.append("\(c.records) records kept, \(reference.counts.records) + \(h.stats.certificates) certificates expected")
        }
        if c.cards != authors || o.cards.count != authors { problems.append("\(c.cards) cards, \(authors) expected") }
        let differing = reference.cards.filter { o.cards[$0.key] != $0.value }.count
        if differing > 0 { problems.append("\(differing) cards differ from A's") }
        let conflicted = o.cards.values.filter { !$0.conflicts.isEmpty || $0.forked }.count
        if conflicted > 0 { problems.append("\(conflicted) cards with a conflict or a fork (every edit saw the ones before it)") }
        if o.integrity != ["ok"] { problems.append("integrity check: \(o.integrity.joined(separator: "; "))") }
        guard problems.isEmpty else {
            printError("error: history \(h.name) (\(h.label)) merged wrong: " + problems.joined(separator: "; "))
            return false
        }
        return true
    }

    private static func remove(_ replicaPath: String) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: replicaPath + suffix) {
            try FileManager.default.removeItem(atPath: replicaPath + suffix)
        }
    }

    // MARK: Report

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    private static func median(_ values: [Duration]) -> Double { median(values.map(\.seconds)) }

    /// (max − min) / median, in percent: how far the rounds disagree.
    private static func spread(_ values: [Double]) -> String {
        guard let lo = values.min(), let hi = values.max(), median(values) > 0 else { return "-" }
        return Format.fixed(100 * (hi - lo) / median(values), 0) + "%"
    }

    private static func spread(_ values: [Duration]) -> String { spread(values.map(\.seconds)) }

    /// Microseconds per item of `seconds` over `n` items.
    private static func micros(_ seconds: Double, per n: Int) -> String { Format.fixed(seconds * 1e6 / Double(max(n, 1)), 1) }

    /// A difference in seconds as signed milliseconds.
    private static func signedMillis(_ seconds: Double) -> String { (seconds < 0 ? "-" : "+") + Format.fixed(abs(seconds) * 1000, 1) + " ms" }

    private static func signedMicros(_ seconds: Double, per n: Int) -> String {
        (seconds < 0 ? "-" : "+") + micros(abs(seconds), per: n) + " us"
    }

    private func report(_ histories: [History]) {
        let (a, b, c) = (histories[0], histories[1], histories[2])
        print("")
        print("merge: verify + apply + commit, pipelined   records  records/s  us/record  us/content"
              + "   wall: median    best  spread   cpu s: median    best  spread")
        for h in histories {
            let t = Self.median(h.merges)
            print(Format.pad("\(h.name). \(h.label)", 42) + Format.pad(Format.grouped(h.stats.records), 10, left: true)
                  + Format.pad(Format.grouped(Int((Double(h.stats.records) / t).rounded())), 11, left: true)
                  + Format.pad(Self.micros(t, per: h.stats.records), 11, left: true)
                  + Format.pad(Self.micros(t, per: records), 12, left: true)
                  + Format.pad(Format.fixed(t, 2) + " s", 15, left: true)
                  + Format.pad(Format.fixed(h.merges.min() ?? 0, 2) + " s", 8, left: true)
                  + Format.pad(Self.spread(h.merges), 8, left: true)
                  + Format.pad(Format.fixed(Self.median(h.cpu), 2), 16, left: true)
                  + Format.pad(Format.fixed(h.cpu.min() ?? 0, 2), 8, left: true)
                  + Format.pad(Self.spread(h.cpu), 8, left: true))
        }
        print("  (us/content: per record of A, the same card edits, likes and chats in every history; best: the least of the rounds;")
        print("   spread: (max - min) / median; cpu: this process, all threads)")
        let others = Self.median(histories.flatMap(\.others))
        if others >= 0.1 {
            print("  warning: other processes used \(Format.fixed(others, 2)) cores (median) during these merges: "
                  + "differences of a few percent between A, B and C are within the noise (the ranges below)")
        }
        let (ta, tc) = (Self.median(a.merges), Self.median(c.merges))
        let (ca, cc) = (Self.median(a.cpu), Self.median(c.cpu))
        let rateRatio = (Double(c.stats.records) / tc) / (Double(a.stats.records) / ta)
        print("")
        print("C / A: merge rate \(Format.ratio(rateRatio)) (records/s, median); per content record: wall \(Format.ratio(tc / ta)), "
              + "cpu \(Format.ratio(cc / ca)) (C holds \(Format.grouped(c.stats.certificates)) certificates more: "
              + "\(Format.fixed(Double(c.stats.records) / Double(records), 2)) records per content record)")
        // Differences of CPU time within each round (the two merges ran minutes apart at most):
        // their median, and their range, which is what the machine's noise allows.
        func paired(_ x: History, _ y: History) -> (median: Double, low: Double, high: Double) {
            let d = zip(y.cpu, x.cpu).map { $0 - $1 }
            return (Self.median(d), d.min() ?? 0, d.max() ?? 0)
        }
        func percent(_ x: Double) -> String { Format.fixed(100 * x / ca, 1) + "%" }
        let certificates = paired(a, b)
        print("certificates as records (B - A): cpu \(Self.signedMillis(certificates.median)) (rounds \(Self.signedMillis(certificates.low)) "
              + "... \(Self.signedMillis(certificates.high))) = \(Self.signedMicros(certificates.median, per: b.stats.certificates)) per certificate; "
              + "A: \(Self.micros(ca, per: a.stats.records)) us per record")
        let checks = paired(b, c)
        let verdict = checks.high <= 0.10 * ca ? "PASS" : checks.low > 0.10 * ca ? "MISS" : "UNDECIDED: within the noise"
        print("device-signed records, certificate checks included (C - B): cpu \(Self.signedMillis(checks.median)) "
              + "= \(Self.signedMicros(checks.median, per: c.stats.deviceSigned)) per device-signed record = \(percent(checks.median)) of A's "
              + "(rounds \(percent(checks.low)) ... \(percent(checks.high)))   target <= 10%   \(verdict)")
        guard breakdown else { return }
        print("")
        print("not pipelined, each stage alone (medians):  verify, all cores  us/record  spread   apply + commit  us/record  spread")
        for h in histories {
            let v = Self.median(h.verifies), ap = Self.median(h.applies)
            print(Format.pad("\(h.name). \(h.label)", 42) + Format.pad(Format.fixed(v, 2) + " s", 19, left: true)
                  + Format.pad(Self.micros(v, per: h.stats.records), 11, left: true) + Format.pad(Self.spread(h.verifies), 8, left: true)
                  + Format.pad(Format.fixed(ap, 2) + " s", 17, left: true)
                  + Format.pad(Self.micros(ap, per: h.stats.records), 11, left: true) + Format.pad(Self.spread(h.applies), 8, left: true))
        }
        let (va, vb, vc) = (Self.median(a.verifies), Self.median(b.verifies), Self.median(c.verifies))
        let (pa, pb, pc) = (Self.median(a.applies), Self.median(b.applies), Self.median(c.applies))
        print("certificates as records (B - A): verify \(Self.signedMillis(vb - va)) (\(Self.signedMicros(vb - va, per: b.stats.certificates)) "
              + "per certificate), apply \(Self.signedMillis(pb - pa)) (\(Self.signedMicros(pb - pa, per: b.stats.certificates)) per certificate)")
        print("device-signed records (C - B): verify \(Self.signedMillis(vc - vb)), apply \(Self.signedMillis(pc - pb)) "
              + "(\(Self.signedMicros(pc - pb, per: c.stats.deviceSigned)) per device-signed record; A's apply is "
              + "\(Self.micros(pa, per: a.stats.records)) us per record) = \(Format.fixed(100 * (pc - pb) / (va + pa), 1))% of A's verify + apply")
    }
}
