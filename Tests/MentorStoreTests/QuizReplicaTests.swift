import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Quiz results (record type 13, PROTOCOL.md §15.4): the answers travel, the score never does;
/// every replica computes it, and the earliest result of an account's day counts.
@Suite struct QuizReplicaTests {
    static let ana = keyPair(180), ben = keyPair(181), cy = keyPair(182)
    static let day = "2026-01-01", nextDay = "2026-01-02"
    static let start = Quiz.start(of: day) ?? 0

    static func cards() throws -> (records: [VerifiedRecord], writers: [RecordWriter]) {
        var out: [VerifiedRecord] = [], writers: [RecordWriter] = []
        for (keys, name) in [(ana, "Ana"), (ben, "Ben"), (cy, "Cy")] {
            var w = RecordWriter(keys: keys)
            out.append(try w.profile(ProfileCard(name: name, role: .student), at: 1))
            writers.append(w)
        }
        return (out, writers)
    }

    /// The right answers of a day, from the generator every node runs.
    static func key(_ day: String) -> [Int?] { (QuizSeed.questions(day: day) ?? []).map(\.answer) }
    /// `n` right answers, then wrong ones.
    static func answers(_ day: String, right n: Int) -> [Int?] {
        key(day).enumerated().map { i, a in i < n ? a : a.map { ($0 + 1) % 4 } }
    }

    @Test func theScoreIsComputedAndTheEarliestResultOfADayCountsInAnyOrder() throws {
        var (cards, w) = try Self.cards()
        let ana = Self.ana.publicKey.key, ben = Self.ben.publicKey.key, cy = Self.cy.publicKey.key
        let day1 = Self.start, day2 = Quiz.start(of: Self.nextDay) ?? 0
        let anaFirst = try w[0].quizResult(QuizResult(day: Self.day, answers: Self.answers(Self.day, right: 9)), at: day1 + 60_000)
        // A second try the same day, all right: written later, so it changes nothing.
        let anaRetry = try w[0].quizResult(QuizResult(day: Self.day, answers: Self.key(Self.day)), at: day1 + 120_000)
        let benFirst = try w[1].quizResult(QuizResult(day: Self.day, answers: Self.answers(Self.day, right: 9)), at: day1 + 30_000)
        let cySkips = try w[2].quizResult(QuizResult(day: Self.day, answers: Array(repeating: nil, count: 10)), at: day1 + 10_000)
        let benNext = try w[1].quizResult(QuizResult(day: Self.nextDay, answers: Self.answers(Self.nextDay, right: 4)), at: day2 + 5)
        let all = [anaFirst, anaRetry, benFirst, cySkips, benNext]
        var rng = SeededRandom(seed: 13)
        for order in [all, all.reversed(), all.shuffled(using: &rng), all.shuffled(using: &rng)] {
            let r = try memoryReplica()
            for v in cards + order { #expect(try r.applyOne(v) == .applied) }
            let board = try r.quizStandings(day: Self.day)
            #expect(board.map(\.account) == [ben, ana, cy], "9 and 9: Ben answered first; Cy skipped everything")
            #expect(board.map(\.score) == [9, 9, 0])
            #expect(board[1].recordID == anaFirst.id, "Ana's retry does not count")
            #expect(try r.quizStanding(of: ana, day: Self.day)?.score == 9)
            #expect(try r.quizAnswers(recordID: anaFirst.id) == Self.answers(Self.day, right: 9))
            #expect(try r.quizStandings(day: Self.nextDay).map(\.score) == [4])
            let totals = try r.quizTotals()
            #expect(totals.map(\.account) == [ben, ana, cy] && totals.map(\.score) == [13, 9, 0] && totals.map(\.days) == [2, 1, 1])
            #expect(totals[0].lastDay == Self.nextDay)
        }
    }

    /// A record claiming a score (an extra field no schema has) is refused as malformed by every
    /// replica and stored nowhere; a result dated another day than its timestamp is refused as
    /// an invalid body — both are signed correctly, by a peer that does not use our writer.
    @Test func aForgedScoreAndAMisdatedResultAreRefusedAndStoreNothing() throws {
        let (cards, _) = try Self.cards()
        let ana = Self.ana
        func signed(_ body: [UInt8], at timestamp: UInt64) -> [UInt8] {
            let message = Record.signedBytes(type: .quizResult, account: nil, author: ana.publicKey.key, seq: 2, timestamp: timestamp,
                                             clock: VectorClock(), body: body)
            return message + ana.signature(for: message)
        }
        let wrong = Self.answers(Self.day, right: 0)
        // Field 3 "score 10" after honest answers that score 0.
        let claim = QuizResult(day: Self.day, answers: wrong).body + [3, 0, 1, 10]
        let misdated = QuizResult(day: Self.nextDay, answers: Self.key(Self.nextDay)).body
        for (bytes, code) in [(signed(claim, at: Self.start + 5), RecordError.Code.malformed),
                              (signed(misdated, at: Self.start + 5), .invalidBody)] {
            for _ in 0..<2 {  // two replicas, the same verdict
                let r = try memoryReplica()
                for v in cards { _ = try r.applyOne(v) }
                let outcome = try r.apply(bytes)
                let refusedWithCode: Bool = { if case .refused(let e) = outcome { return e.code == code }; return false }()
                #expect(refusedWithCode, "\(outcome)")
                #expect(try r.quizStandings(day: Self.day).isEmpty && r.quizStandings(day: Self.nextDay).isEmpty)
                #expect(try r.quizTotals().isEmpty)
            }
        }
        // Honest answers that score 0 are stored and score 0: the score is never read from a record.
        let r = try memoryReplica()
        for v in cards { _ = try r.applyOne(v) }
        #expect(try r.apply(signed(QuizResult(day: Self.day, answers: wrong).body, at: Self.start + 5)) == .applied)
        #expect(try r.quizStandings(day: Self.day).map(\.score) == [0])
    }

    /// A revoked device's results leave the board with its records.
    @Test func aRevokedDevicesResultsLeaveTheBoard() throws {
        let account = keyPair(183), device = keyPair(184)
        var a = RecordWriter(keys: account)
        let card = try a.profile(ProfileCard(name: "Dee", role: .student), at: 1)
        let cert = try a.certify(device.publicKey.key, label: "laptop", epoch: 1, at: 2)
        var d = RecordWriter(keys: device, account: account.publicKey.key)
        let result = try d.quizResult(QuizResult(day: Self.day, answers: Self.key(Self.day)), at: Self.start + 9)
        let r = try memoryReplica()
        for v in [card, cert, result] { #expect(try r.applyOne(v) == .applied) }
        #expect(try r.quizStandings(day: Self.day).map(\.score) == [10])
        _ = try r.applyOne(try a.revoke(device.publicKey.key, lastSeq: 0, at: Self.start + 10))
        #expect(try r.quizStandings(day: Self.day).isEmpty)
    }
}
