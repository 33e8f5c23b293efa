/// `mentormate swipe`: the feed one card at a time. On a terminal a full-screen view driven by
/// single keys (plain ANSI escape sequences; the raw mode itself is the host's, in
/// Client/RawTerminal.swift); otherwise a line prompt. The deciding and the drawing are here,
/// pure functions of the cards and the screen size, so the fake host of the unit tests and the
/// real terminal of the pseudo-terminal tests see the same thing.

import Foundation
import MentorAPI
import MentorArguments

/// A key or an event of the full-screen view.
public enum TerminalInput: Equatable, Sendable {
    case left, right, up, down
    case character(Character)
    /// Ctrl-C, Ctrl-D or the end of the input: the view ends.
    case end
    /// The window changed size (SIGWINCH).
    case resize
}

/// A terminal in raw mode, opened by the host (nil when stdin or stdout is not a terminal).
public protocol InteractiveTerminal: AnyObject {
    /// Rows and columns now.
    var size: (rows: Int, columns: Int) { get }
    func write(_ text: String)
    /// Waits for the next key or resize.
    func next() -> TerminalInput
    /// Back to the terminal's settings before the view (also on a signal).
    func close()
}

extension ClientHost {
    /// The default: no full-screen terminal (the tests' fake host; pipes).
    public func openTerminal() -> (any InteractiveTerminal)? { nil }
    /// One line of stdin for the line prompt; nil at its end.
    public func readInputLine() -> String? { nil }
    /// Waits (`device link` polling); the default sleeps.
    public func pause(seconds: Double) { usleep(useconds_t(seconds * 1_000_000)) }
    /// The default: files cannot be written (the tests' fake host records them itself).
    public func writeNewFile(_ path: String, _ bytes: [UInt8]) throws(ClientError) {
        throw ClientError("cannot write \(path) here", hint: "run mentormate in a terminal")
    }
}

extension MentormateCLI {
    public struct Swipe: ClientCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                program: program, path: ["swipe"],
                abstract: "Go through your feed one card at a time: like, pass, undo.",
                discussion: """
                    On a terminal: a full-screen card with → or l to like, ← or h to pass, u to undo the last
                    decision, i to show the whole card, q to quit; a match is announced at once. When stdout
                    is not a terminal it asks on a line instead: l (like), h or p (pass), u (undo), i (the whole
                    card), q (quit), read one per line from stdin.
                    """)
        }
        public var course: String?
        public static var options: [CommandOption<Self>] {
            [.string("--course", value: "C", \.course, help: "Only people who list course C.")]
        }
        public init() {}

        public func validate() throws(UsageError) {
            if let course, course.cliTrimmed.isEmpty {
                throw UsageError("--course is empty", hint: "give a course, for example --course \"CS 490\", or leave --course out")
            }
        }

        public func run(_ context: CommandContext) throws(ClientError) {
            if context.json {
                throw ClientError("swipe is interactive and has no --json output", hint: "use `mentormate feed --json`, then `like`/`pass` ID",
                                  status: .usage)
            }
            var deck = SwipeDeck(course: course)
            try deck.refill(context)
            if let terminal = context.host.openTerminal() {
                defer { terminal.close() }
                var screen = SwipeScreen(deck: deck, terminal: terminal)
                try screen.run(context)
            } else {
                var prompt = SwipePrompt(deck: deck)
                try prompt.run(context)
            }
        }
    }
}

/// The cards to decide on and the decisions taken, shared by both views.
struct SwipeDeck {
    let course: String?
    /// Cards not decided yet, the current one first. The feed is fetched ahead: while at most
    /// `lowWater` cards wait behind the current one, more are fetched after drawing it.
    var cards: [JSON] = []
    /// Decisions in order, for undo: (card, liked).
    var decided: [(card: JSON, liked: Bool)] = []
    var seen: Set<String> = []
    var exhausted = false
    var liked = 0, passed = 0, matches = 0
    static let batch = 20
    static let lowWater = 2

    init(course: String?) { self.course = course }

    var current: JSON? { cards.first }

    /// Fetches the feed and keeps the cards not seen yet (the daemon leaves out what was decided).
    mutating func refill(_ context: CommandContext) throws(ClientError) {
        guard !exhausted else { return }
        // The daemon's feed still holds the cards waiting here (not decided yet): ask for those
        // and a batch more.
        let limit = min(100, Self.batch + cards.count)
        let got = try context.call(API.feed, FeedRequest(course: course, limit: Int64(limit)))[.cards]?.arrayValue ?? []
        for card in got {
            guard let id = Fields<Card>(card)[.id]?.stringValue, seen.insert(id).inserted else { continue }
            cards.append(card)
        }
        exhausted = got.count < limit
    }

    /// The fetch ahead: called after drawing, so the next key finds its card already here.
    mutating func prefetchIfLow(_ context: CommandContext) throws(ClientError) {
        if cards.count <= Self.lowWater + 1 { try refill(context) }
    }

    /// Likes or passes the current card; returns what to announce.
    mutating func decide(like: Bool, _ context: CommandContext) throws(ClientError) -> String {
        guard let card = cards.first, let id = Fields<Card>(card)[.id]?.stringValue else { return "No card to decide on." }
        let name = ClientFormat.cell(Fields<Card>(card)[.name]?.stringValue ?? ClientFormat.shortID(id), width: 24)
        var matched = false
        if like {
            matched = try context.call(API.like, AccountRequest(id: id))[.matched]?.boolValue == true
        } else {
            _ = try context.call(API.pass, AccountRequest(id: id))
        }
        cards.removeFirst()
        decided.append((card, like))
        if like {
            liked += 1
            if matched {
                matches += 1
                return "It's a match with \(name)! Say hello: mentormate chat \(ClientFormat.shortID(id)) \"Hi!\""
            }
            return "You liked \(name)."
        }
        passed += 1
        return "Passed on \(name)."
    }

    /// Takes back the last decision and shows that card again.
    mutating func undo(_ context: CommandContext) throws(ClientError) -> String {
        guard let last = decided.last, let id = Fields<Card>(last.card)[.id]?.stringValue else { return "Nothing to undo." }
        let name = ClientFormat.cell(Fields<Card>(last.card)[.name]?.stringValue ?? ClientFormat.shortID(id), width: 24)
        do {
            _ = try context.call(API.undo, AccountRequest(id: id))
        } catch let e where e.rpcError != nil {
            return "Cannot undo: \(e.message)" + (e.hint.map { " (\($0))" } ?? "")
        }
        decided.removeLast()
        if last.liked { liked -= 1 } else { passed -= 1 }
        cards.insert(last.card, at: 0)
        return "Took back your \(last.liked ? "like of" : "pass on") \(name)."
    }

    var summary: String {
        "Liked \(liked), passed \(passed), \(matches) new match\(matches == 1 ? "" : "es")."
            + (matches > 0 ? " `mentormate matches` lists them." : "")
    }
}

/// What a card shows, as lines without escape sequences.
enum SwipeCard {
    /// Why the card ranks where it does, from what the daemon computed: shared courses, nearby.
    static func reasons(_ card: JSON) -> [String] { ClientFormat.feedReasons(card) }

    static func summary(_ card: JSON) -> [(String, String)] {
        var pairs: [(String, String)] = []
        let card = Fields<Card>(card)
        let role = card[.role]?.stringValue ?? "?"
        pairs.append(("role", ClientFormat.sanitize(role)))
        let courses = (card[.courses]?.arrayValue ?? []).compactMap(\.stringValue).map { ClientFormat.sanitize($0) }
        pairs.append(("courses", courses.isEmpty ? "none" : courses.joined(separator: ", ")))
        if let score = card[.score]?.intValue { pairs.append(("score", "\(score)/100")) }
        let why = reasons(card.json)
        pairs.append(("why", why.joined(separator: ", ")))
        if let slots = card[.slots]?.stringValue { pairs.append(("slots", ClientFormat.sanitize(slots))) }
        if let availability = card[.availability]?.stringValue {
            pairs.append(("available", ClientFormat.sanitize(availability)))
        }
        if let wage = card[.wage]?.intValue { pairs.append(("wage", "\(wage) per hour")) }
        if let budget = card[.budget]?.intValue { pairs.append(("budget", "\(budget) per hour")) }
        if let bio = card[.bio]?.stringValue { pairs.append(("bio", ClientFormat.sanitize(bio, keepNewlines: true))) }
        return pairs
    }

    static func title(_ card: JSON) -> String {
        ClientFormat.cell(Fields<Card>(card)[.name]?.stringValue ?? "(no name)", width: 60)
    }
}

/// Wrapping text to a width (by characters; cards are sanitized first).
enum TextWrap {
    static func wrap(_ text: String, width: Int) -> [String] {
        let width = max(width, 8)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // A line that fits keeps its spacing (the aligned columns of a card).
            if paragraph.count <= width { lines.append(String(paragraph)); continue }
            var line = ""
            for word in paragraph.split(separator: " ") {
                var word = String(word)
                while word.count > width {
                    if !line.isEmpty { lines.append(line); line = "" }
                    lines.append(String(word.prefix(width)))
                    word = String(word.dropFirst(width))
                }
                if line.isEmpty { line = word } else if line.count + 1 + word.count <= width { line += " " + word } else {
                    lines.append(line)
                    line = word
                }
            }
            lines.append(line)
        }
        return lines
    }
}

/// The full-screen view.
struct SwipeScreen {
    var deck: SwipeDeck
    let terminal: any InteractiveTerminal
    var whole = false
    var notice = ""

    static let keys = "→/l like  ←/h pass  u undo  i whole card  q quit"

    init(deck: SwipeDeck, terminal: any InteractiveTerminal) {
        self.deck = deck
        self.terminal = terminal
    }

    /// The screen as lines (at most `rows`, each at most `columns` characters).
    static func lines(card: JSON?, whole: Bool, notice: String, rows: Int, columns: Int, zone: TimeZone) -> [String] {
        // Laid out for at least 20 columns, then every line cut to the window's width.
        let width = max(columns, 20), cut = max(columns, 1)
        var body: [String] = []
        if let card {
            body.append(SwipeCard.title(card))
            body.append(String(repeating: "─", count: cut))
            if whole {
                body += ClientFormat.card(card, in: zone, extra: [("why", SwipeCard.reasons(card).joined(separator: ", "))])
                    .split(separator: "\n", omittingEmptySubsequences: false)
                    .dropFirst().flatMap { TextWrap.wrap(String($0), width: width) }
            } else {
                let pairs = SwipeCard.summary(card)
                let label = (pairs.map(\.0.count).max() ?? 0) + 2
                for (name, value) in pairs {
                    let wrapped = TextWrap.wrap(value, width: width - label - 2)
                    for (i, piece) in wrapped.enumerated() {
                        body.append("  " + (i == 0 ? name.cliPadded(to: label - 2) : String(repeating: " ", count: label - 2)) + "  " + piece)
                    }
                }
            }
        } else {
            body.append("Nobody new to show right now.")
            body.append("People appear as their nodes are discovered; press q and try again later.")
        }
        let footer = [String(repeating: "─", count: cut)]
            + TextWrap.wrap(notice, width: width).filter { !$0.isEmpty }
            + [keys]
        // A window too short for the footer and a line of card shows the card's first lines only.
        let showFooter = rows > footer.count
        let room = showFooter ? rows - footer.count : max(rows, 1)
        if body.count > room {
            body = room > 1 ? Array(body.prefix(room - 1)) + ["  … (i shows the whole card; the window is small)"] : Array(body.prefix(1))
        }
        while body.count < room { body.append("") }
        let all = showFooter ? body + footer : body
        return all.prefix(max(rows, 1)).map { line in
            line.count > cut ? String(line.prefix(cut - 1)) + "…" : line
        }
    }

    func draw(zone: TimeZone) {
        let size = terminal.size
        let lines = Self.lines(card: deck.current, whole: whole, notice: notice, rows: size.rows, columns: size.columns, zone: zone)
        // Home, then each line cleared to its end; the rest of the screen cleared.
        terminal.write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J")
    }

    mutating func run(_ context: CommandContext) throws(ClientError) {
        let zone = context.host.timeZone
        // The alternate screen, cursor hidden; close() (the host's) puts both back.
        terminal.write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
        draw(zone: zone)
        try deck.prefetchIfLow(context)
        loop: while true {
            let input = terminal.next()
            switch input {
            case .right, .character("l"):
                if deck.current != nil { notice = try deck.decide(like: true, context); whole = false }
            case .left, .character("h"):
                if deck.current != nil { notice = try deck.decide(like: false, context); whole = false }
            case .character("u"):
                notice = try deck.undo(context)
                whole = false
            case .character("i"):
                whole.toggle()
            case .character("q"), .end:
                break loop
            case .resize:
                terminal.write("\u{1B}[2J")
            default:
                continue
            }
            draw(zone: zone)
            let empty = deck.current == nil
            try deck.prefetchIfLow(context)
            if empty && deck.current != nil { draw(zone: zone) }
        }
        terminal.write("\u{1B}[?25h\u{1B}[?1049l")
        terminal.close()
        context.print(deck.summary)
    }
}

/// The line prompt, when stdout is not a terminal.
struct SwipePrompt {
    var deck: SwipeDeck
    static let prompt = "[l]ike, [h] or [p]ass, [u]ndo, [i] whole card, [q]uit?"

    mutating func run(_ context: CommandContext) throws(ClientError) {
        let zone = context.host.timeZone
        var showCard = true
        while true {
            if showCard {
                if let card = deck.current {
                    context.print("\n" + SwipeCard.title(card) + "\n"
                                  + ClientFormat.block(SwipeCard.summary(card)))
                } else {
                    context.print("\nNobody new to show right now.")
                }
            }
            showCard = true
            context.print(Self.prompt)
            guard let line = context.host.readInputLine() else { break }
            switch line.cliTrimmed.lowercased() {
            case "l", "like":
                guard deck.current != nil else { context.print("No card to decide on."); continue }
                context.print(try deck.decide(like: true, context))
            case "h", "p", "pass":
                guard deck.current != nil else { context.print("No card to decide on."); continue }
                context.print(try deck.decide(like: false, context))
            case "u", "undo":
                context.print(try deck.undo(context))
            case "i":
                if let card = deck.current {
                    context.print(ClientFormat.card(card, in: zone, extra: [("why", SwipeCard.reasons(card).joined(separator: ", "))]))
                }
                showCard = false
            case "q", "quit":
                context.print(deck.summary)
                return
            default:
                context.print("Unknown answer '\(ClientFormat.cell(line, width: 20))'.")
                showCard = false
                continue
            }
            try deck.prefetchIfLow(context)
        }
        context.print(deck.summary)
    }
}
