import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 17's quiz through the real client on two daemons (B links A). Ana on A plays with
    /// --answers, Ben on B at the line prompt; each node computes both scores from the published
    /// answers, so the two leaderboards are the same. A record signed with Ben's account key that
    /// claims a score its answers do not give (a forged field, sent by a hostile peer) is refused
    /// by A, relayed to nobody, and on no board. A second play of the day is refused.
    @Test func twoNodesShowTheSameLeaderboardAndAForgedScoreIsIgnored() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock"), socketB = e2e.path("b.sock"), stateB = e2e.path("state-b")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let b = try e2e.startDaemon(stateDir: stateB, socket: socketB, extra: ["--peer", "127.0.0.1:\(portA)"])
        defer { b.kill() }
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)" }

        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], socket: socketA)
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
        let anaID = try #require(try mmJSON(e2e, ["whoami"], socketA)["id"]?.stringValue)
        let benID = try #require(try mmJSON(e2e, ["whoami"], socketB)["id"]?.stringValue)

        // The questions are the same on both nodes.
        let quizA = try mmJSON(e2e, ["quiz"], socketA), quizB = try mmJSON(e2e, ["quiz"], socketB)
        let day = try #require(quizA["day"]?.stringValue)
        #expect(quizA["questions"]?.arrayValue?.count == 10 && quizA["questions"] == quizB["questions"], "\(quizA)\n\(quizB)")

        let ana = try mmJSON(e2e, ["quiz", "--answers", "a,b,c,d,a,b,c,d,a,b"], socketA)
        let anaScore = try #require(ana["score"]?.intValue)
        let benPlay = try e2e.mm(["quiz"], socket: socketB, stdin: "d\nx\nc\n\nb\na\nd\nc\nb\na\nd\n")
        #expect(benPlay.stdout.contains("'x' is not an answer") && benPlay.stdout.contains("Score "), "\(benPlay)")
        let benScore = try #require(try mmJSON(e2e, ["quiz"], socketB)["score"]?.intValue, "quiz shows the day's result once played")

        // The forgery: Ben's account key signs a result of today answered all wrong that claims 10.
        let benKeyFile = stateB + "/accounts/\(getuid()).account.key"
        let benHex = try accountKeyBytes(benID).map { String(format: "%02X", $0) }.joined()
        let seqRun = try e2e.tool(["/usr/bin/sqlite3", stateB + "/replica.db", "SELECT contiguous FROM authors WHERE key = X'\(benHex)'"])
        let seq = try #require(UInt64(seqRun.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(seqRun.output)") + 1
        let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "quiz-claim", "--from", "127.0.0.42", "--wait", "2",
                                             "--key", benKeyFile, "--seq", "\(seq)"], timeout: .seconds(30))
        #expect(status.exitCode == 0 && output.contains("claim day=\(day)") && output.contains("closed=true"),
                "A should end the session of a peer sending a malformed record: \(status) \(output)\(logs())")

        struct Row: Equatable { let id: String, rank: Int64, score: Int64 }
        func board(_ socket: String, _ extra: [String] = []) throws -> [Row] {
            try mmJSON(e2e, ["leaderboard"] + extra, socket)["entries"]?.arrayValue?.map {
                Row(id: $0["id"]?.stringValue ?? "", rank: $0["rank"]?.intValue ?? 0, score: $0["score"]?.intValue ?? -1)
            } ?? []
        }
        let boards = try poll(timeout: .seconds(30), { [try board(socketA), try board(socketB)] }, until: { $0[0].count == 2 && $0[0] == $0[1] })
        #expect(boards[0] == boards[1] && boards[0].count == 2, "both nodes rank both players alike: \(boards)\(logs())")
        #expect(Set(boards[0].map { "\($0.id) \($0.score)" }) == ["\(anaID) \(anaScore)", "\(benID) \(benScore)"],
                "each node computed each score from the answers: \(boards)")
        #expect(try board(socketA, ["--day", day]) == boards[0] && board(socketB, ["--all-time"]).map(\.score) == boards[0].map(\.score))
        let text = try e2e.mm(["leaderboard"], socket: socketA).stdout
        #expect(text.contains("Quiz of \(day) — 2 players") && text.contains("Ana") && text.contains("Ben") && text.contains("You: rank"), "\(text)")
        // The forged record is stored nowhere: Ben's account key has no record at that seq.
        for state in [e2e.path("state-a"), stateB] {
            let held = try e2e.tool(["/usr/bin/sqlite3", state + "/replica.db",
                                     "SELECT count(*) FROM records r JOIN authors a ON a.id = r.author WHERE a.key = X'\(benHex)' AND r.seq = \(seq)"])
            #expect(held.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(state): \(held.output)")
        }

        let again = try e2e.run(["quiz", "--answers", "a,a,a,a,a,a,a,a,a,a"], socket: socketA)
        #expect(!again.ok && again.stderr.contains("played the quiz of \(day) already"), "\(again)")
        let bad = try e2e.run(["leaderboard", "--day", "04/12/2026"], socket: socketA)
        #expect(!bad.ok && bad.stderr.contains("not a date written YYYY-MM-DD"), "\(bad)")
    }
}
