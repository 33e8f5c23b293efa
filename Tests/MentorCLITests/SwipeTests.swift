import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `mentormate swipe` against a fake daemon and a fake terminal: the fetch ahead, the 80×24
/// layout, a match announced at once, undo, and the line prompt. (The real terminal, in a
/// pseudo-terminal, is Tests/EndToEndTests/SwipeTests.swift.)
extension CommandLineTests {
    @Suite struct SwipeTests {
        /// A terminal that plays `inputs` and records what was written; `log` is shared with the
        /// fake daemon, so the order of fetches and key presses shows.
        final class FakeTerminal: InteractiveTerminal {
            var size: (rows: Int, columns: Int)
            var inputs: [TerminalInput]
            var written: [String] = []
            var closed = 0
            let onKey: () -> Void

            init(_ inputs: [TerminalInput], rows: Int = 24, columns: Int = 80, onKey: @escaping () -> Void = {}) {
                self.inputs = inputs
                size = (rows, columns)
                self.onKey = onKey
            }
            func write(_ text: String) { written.append(text) }
            func next() -> TerminalInput {
                onKey()
                return inputs.isEmpty ? .end : inputs.removeFirst()
            }
            func close() { closed += 1 }
            var screen: String { written.joined() }
        }

        static func card(_ n: Int, name: String? = nil, extra: [String: JSON] = [:]) -> JSON {
            var o: [String: JSON] = ["id": .string("mm1tutor\(String(format: "%02d", n))aaaaaaaaaa"), "name": .string(name ?? "Tutor \(n)"),
                                     "role": "tutor", "courses": ["CS 490"], "wage": 25, "sharedCourses": ["CS 490"], "nearby": true]
            for (k, v) in extra { o[k] = v }
            return .object(o)
        }

        /// A pool of `count` tutors; `feed` answers the first `limit` not liked or passed yet.
        final class Pool {
            var cards: [JSON]
            var decided: Set<String> = []
            var matchOn: Set<String> = []
            init(_ count: Int) { cards = (1...count).map { SwipeTests.card($0) } }
            func answer(_ method: String, _ params: [String: JSON]) throws -> JSON {
                let id = params["id"]?.stringValue ?? ""
                switch method {
                case "feed":
                    let limit = Int(params["limit"]?.intValue ?? 20)
                    return ["cards": .array(Array(cards.filter { !decided.contains($0["id"]?.stringValue ?? "") }.prefix(limit)))]
                case "like":
                    decided.insert(id)
                    return ["id": .string(id), "matched": .bool(matchOn.contains(id))]
                case "pass":
                    decided.insert(id)
                    return ["id": .string(id)]
                case "undo":
                    decided.remove(id)
                    return ["id": .string(id), "undone": "pass"]
                default:
                    return [:]
                }
            }
        }

        @Test func everyKeyPressFindsItsCardAlreadyFetched() {
            let pool = Pool(45)
            var fetched = 0, decided = 0
            var starved: [Int] = []
            let daemon = CLIFakeDaemon()
            daemon.answer = { method, params in
                let result = try pool.answer(method, params)
                if method == "feed" { fetched = max(fetched, decided + (result["cards"]?.arrayValue?.count ?? 0)) }
                if method == "like" { decided += 1 }
                return result
            }
            let host = CLIFakeHost(daemon)
            var presses = 0
            let terminal = FakeTerminal(Array(repeating: .character("l"), count: 45) + [.character("q")]) {
                presses += 1
                // The card this key decides on must be here before the key is read.
                if decided < 45 && fetched <= decided { starved.append(presses) }
            }
            host.terminal = terminal
            #expect(runCLI(["swipe"], host) == .success, "\(host.stderr)")
            #expect(starved.isEmpty, "key presses that found no card fetched yet: \(starved)")
            #expect(daemon.methods.filter { $0 == "like" }.count == 45)
            #expect(daemon.methods.filter { $0 == "feed" }.count >= 3, "45 cards come in batches of 20: \(daemon.methods)")
            #expect(host.stdout == "Liked 45, passed 0, 0 new matches.")
            #expect(terminal.closed >= 1)
        }

        @Test func aCardFitsAn80x24TerminalAndShowsOnlyTheFieldsItHas() {
            let bio = String(repeating: "Graphs, proofs and patience. ", count: 60)
            let card = Self.card(1, name: "Ben", extra: ["bio": .string(bio), "availability": "Mon-Wed afternoons", "budget": .null])
            let lines = SwipeScreen.lines(card: card, whole: false, notice: "", rows: 24, columns: 80, zone: TimeZone(identifier: "UTC")!)
            #expect(lines.count == 24)
            #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines.filter { $0.count > 80 })")
            let text = lines.joined(separator: "\n")
            #expect(lines[0] == "Ben")
            for part in ["role       tutor", "courses    CS 490", "why        shares CS 490, nearby now", "available  Mon-Wed afternoons",
                         "wage       25 per hour", "bio        Graphs, proofs"] {
                #expect(text.contains(part), "missing \(part):\n\(text)")
            }
            #expect(!text.contains("budget"), "a card without a budget shows none")
            #expect(text.contains("… (i shows the whole card; the window is small)"))
            #expect(lines.last == SwipeScreen.keys)

            let bare = SwipeScreen.lines(card: Self.card(2, extra: ["wage": .null, "sharedCourses": [], "nearby": false]), whole: false,
                                         notice: "", rows: 24, columns: 80, zone: TimeZone(identifier: "UTC")!).joined(separator: "\n")
            #expect(!bare.contains("available") && !bare.contains("wage") && !bare.contains("bio"), "no invented fields:\n\(bare)")
            #expect(bare.contains("why      newest first"), "\(bare)")
            #expect(!bare.contains("score") && !bare.contains("slots"), "no score or slots where the daemon sent none")

            let scored = SwipeScreen.lines(card: Self.card(3, extra: ["score": 72, "slots": "Mon 14-17, Wed 9-12"]), whole: false,
                                           notice: "", rows: 24, columns: 80, zone: TimeZone(identifier: "UTC")!).joined(separator: "\n")
            #expect(scored.contains("score    72/100") && scored.contains("slots    Mon 14-17, Wed 9-12"), "\(scored)")
        }

        @Test func aMatchIsAnnouncedOnTheNextDrawAndUndoBringsACardBack() {
            let pool = Pool(2)
            let ben = pool.cards[0]["id"]!.stringValue!
            pool.matchOn = [ben]
            let host = CLIFakeHost(CLIFakeDaemon(answer: pool.answer))
            var drawsBeforeKey: [Int] = []
            var terminal: FakeTerminal!
            terminal = FakeTerminal([.right, .left, .character("u"), .character("i"), .resize, .character("q")]) {
                drawsBeforeKey.append(terminal?.written.count ?? 0)
            }
            host.terminal = terminal
            #expect(runCLI(["swipe"], host) == .success, "\(host.stderr)")
            let frames = terminal.written
            // After → (like Tutor 1, who liked us): the very next frame says so.
            // The frame written just before the second key is read: the one after the like.
            let afterLike = drawsBeforeKey.count > 1 && drawsBeforeKey[1] >= 1 ? frames[drawsBeforeKey[1] - 1] : ""
            #expect(afterLike.contains("It's a match with Tutor 1! Say hello: mentormate chat mm1tutor01aa \"Hi!\""), "\(afterLike)")
            #expect(afterLike.contains("Tutor 2"), "the next card is shown with the announcement")
            #expect(terminal.screen.contains("Passed on Tutor 2."))
            #expect(terminal.screen.contains("Took back your pass on Tutor 2."))
            #expect(terminal.screen.contains("  id       mm1tutor02aaaaaaaaaa"), "i shows the whole card, aligned, with the full ID")
            #expect(terminal.screen.contains("  why      shares CS 490, nearby now"), "and why it ranks there")
            #expect(frames.contains("\u{1B}[2J"), "a resize clears and redraws")
            #expect(frames.first?.hasPrefix("\u{1B}[?1049h") == true && frames.last?.hasSuffix("\u{1B}[?1049l") == true,
                    "the alternate screen is entered and left")
            #expect(host.stdout == "Liked 1, passed 0, 1 new match. `mentormate matches` lists them.")
        }

        @Test func textFromTheNetworkIsShownNeverObeyed() {
            let card = Self.card(1, name: "Eve\u{1B}[2J\u{1B}]0;owned\u{07}", extra: ["bio": "line\u{1B}[31mred\u{202E}txet", "availability": "now\r\u{1B}[H"])
            for whole in [false, true] {
                let text = SwipeScreen.lines(card: card, whole: whole, notice: "", rows: 24, columns: 80, zone: TimeZone(identifier: "UTC")!)
                    .joined(separator: "\n")
                #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x0D || $0.value == 0x202E },
                        "control characters and bidi overrides become ?: \(text.debugDescription)")
                #expect(text.contains("Eve?[2J?]0;owned?"))
            }
        }

        @Test func aTinyWindowStillGetsAFrameOfItsSize() {
            for (rows, columns) in [(1, 1), (3, 10), (5, 20), (24, 80)] {
                let lines = SwipeScreen.lines(card: Self.card(1, extra: ["bio": .string(String(repeating: "x", count: 500))]), whole: true,
                                              notice: "It's a match with Tutor 1!", rows: rows, columns: columns, zone: TimeZone(identifier: "UTC")!)
                #expect(lines.count == rows, "\(rows)x\(columns): \(lines)")
                #expect(lines.allSatisfy { $0.count <= columns }, "\(rows)x\(columns): \(lines)")
            }
        }

        @Test func withoutATerminalSwipeAsksOnALine() {
            let pool = Pool(2)
            let host = CLIFakeHost(CLIFakeDaemon(answer: pool.answer))
            host.inputLines = ["h", "u", "l", "x", "q"]
            #expect(runCLI(["swipe"], host) == .success, "\(host.stderr)")
            let out = host.stdout
            for part in ["Tutor 1\n  role     tutor", "why      shares CS 490, nearby now", SwipePrompt.prompt, "Passed on Tutor 1.",
                         "Took back your pass on Tutor 1.", "You liked Tutor 1.", "Unknown answer 'x'.", "Liked 1, passed 0, 0 new matches."] {
                #expect(out.contains(part), "missing \(part):\n\(out)")
            }
            #expect(host.transport.methods.filter { $0 != "feed" } == ["pass", "undo", "like"], "\(host.transport.methods)")
        }
    }
}
