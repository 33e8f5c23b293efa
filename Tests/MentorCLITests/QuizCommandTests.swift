import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `quiz` and `leaderboard`: what they parse, refuse, send and print.
@Suite struct QuizCommandTests {
    static let questions: JSON = {
        let list: [JSON] = (1...10).map { (n: Int) -> JSON in
            let q: [String: JSON] = ["number": .int(Int64(n)), "colors": ["white"], "luster": ["vitreous"], "streak": "white",
                                     "hardness": "7", "cleavage": "none", "choices": ["quartz", "talc", "gypsum", "calcite"]]
            return .object(q)
        }
        return .object(["day": "2026-12-04", "questions": .array(list)])
    }()
    static let outcome: JSON = {
        let list: [JSON] = (1...10).map { (n: Int) -> JSON in
            let a: [String: JSON] = ["number": .int(Int64(n)), "chosen": .string(n == 10 ? "-" : "a"), "right": "a", "name": "quartz",
                                     "correct": .bool(n != 10)]
            return .object(a)
        }
        return .object(["day": "2026-12-04", "score": 9, "of": 10, "rank": 1, "players": 2, "at": 5, "answers": .array(list)])
    }()

    /// A daemon that serves today's questions (with `played` when given) and records the submit.
    static func daemon(played: JSON? = nil) -> CLIFakeDaemon {
        CLIFakeDaemon { method, _ in
            switch method {
            case "quiz.questions":
                guard let played, case .object(var q) = questions else { return questions }
                q["played"] = played
                return .object(q)
            case "quiz.submit": return outcome
            default: return .object([:])
            }
        }
    }

    @Test func answersFromTheFlagAreSentAsTenLetters() {
        let host = CLIFakeHost(Self.daemon())
        #expect(runCLI(["quiz", "--answers", "A, b,c,d,-,a,,c,d,a"], host) == .success, "\(host.stderr)")
        #expect(host.transport.methods == ["quiz.questions", "quiz.submit"])
        let sent = host.transport.calls.last?.params
        #expect(sent?["day"] == "2026-12-04")
        #expect(sent?["answers"] == .array(["a", "b", "c", "d", "-", "a", "-", "c", "d", "a"].map { .string($0) }))
        #expect(host.stdout.contains("Score 9/10 on 2026-12-04 — rank 1 of 2 so far"))
        #expect(host.stdout.contains("  1. a ✓ quartz") && host.stdout.contains("  10. skipped ✗ — a (quartz)"))
    }

    @Test func badAnswersAreUsageErrorsAndNothingIsAsked() {
        #expect(cliUsageError(["quiz", "--answers", "a,b,c"])?.message.contains("has 3 answers; give all ten") == true)
        #expect(cliUsageError(["quiz", "--answers", "a,b,c,d,e,a,b,c,d,a"])?.message.contains("answer 5 is 'e'") == true)
        #expect(cliUsageError(["leaderboard", "--day", "2026-12-01", "--all-time"])?.message.contains("exclude each other") == true)
        #expect(cliUsageError(["leaderboard", "--limit", "0"]) != nil)
    }

    @Test func interactiveAnswersAreReadALineAtATimeAndBadOnesAskedAgain() {
        let host = CLIFakeHost(Self.daemon())
        host.inputLines = ["a", "x", "B", "", "-", "c", "d", "a", "b", "c", "d"]
        #expect(runCLI(["quiz"], host) == .success, "\(host.stderr)")
        #expect(host.stdout.contains("1. color white · luster vitreous · streak white · hardness 7 · cleavage none\n   a) quartz   b) talc   c) gypsum   d) calcite"))
        #expect(host.stdout.contains("'x' is not an answer"))
        #expect(host.transport.calls.last?.params["answers"] == .array(["a", "b", "-", "-", "c", "d", "a", "b", "c", "d"].map { .string($0) }))
    }

    @Test func quittingOrRunningOutOfInputSubmitsNothing() {
        for lines in [["a", "q"], ["a", "b"]] {
            let host = CLIFakeHost(Self.daemon())
            host.inputLines = lines
            #expect(runCLI(["quiz"], host) != .success)
            #expect(host.stderr.contains("nothing was submitted"), "\(host.stderr)")
            #expect(host.transport.methods == ["quiz.questions"])
        }
    }

    @Test func aDayPlayedShowsTheResultAndRefusesNewAnswers() {
        let host = CLIFakeHost(Self.daemon(played: Self.outcome))
        #expect(runCLI(["quiz"], host) == .success)
        #expect(host.stdout.contains("You played the quiz of 2026-12-04 already.") && host.stdout.contains("Score 9/10"))
        let again = CLIFakeHost(Self.daemon(played: Self.outcome))
        #expect(runCLI(["quiz", "--answers", "a,a,a,a,a,a,a,a,a,a"], again) != .success)
        #expect(again.stderr.contains("played the quiz of 2026-12-04 already"))
        #expect(again.transport.methods == ["quiz.questions"])
    }

    @Test func leaderboardSendsItsOptionsAndPrintsRanks() {
        let host = CLIFakeHost(CLIFakeDaemon { _, _ in
            ["day": "2026-12-04", "all_time": false, "players": 3, "entries": [
                ["rank": 1, "id": "mm1aaaaaaaaaaaaaaaa", "name": "Ana", "score": 10, "days": 1, "at": 5],
                ["rank": 2, "id": "mm1bbbbbbbbbbbbbbbb", "name": "Ben", "score": 7, "days": 1, "at": 6]],
             "you": ["rank": 2, "id": "mm1bbbbbbbbbbbbbbbb", "name": "Ben", "score": 7, "days": 1, "at": 6]]
        })
        #expect(runCLI(["leaderboard", "--day", "2026-12-04", "--limit", "2"], host) == .success, "\(host.stderr)")
        #expect(host.transport.calls.last?.params == ["day": "2026-12-04", "limit": 2])
        #expect(host.stdout.hasPrefix("Quiz of 2026-12-04 — 3 players"))
        #expect(host.stdout.contains("Ana") && host.stdout.contains("You: rank 2 with 7"))
        let all = CLIFakeHost(CLIFakeDaemon { _, _ in ["all_time": true, "players": 0, "entries": []] })
        #expect(runCLI(["leaderboard", "--all-time"], all) == .success)
        #expect(all.transport.calls.last?.params == ["all_time": true])
        #expect(all.stdout == "All time: nobody has played yet.")
    }
}
