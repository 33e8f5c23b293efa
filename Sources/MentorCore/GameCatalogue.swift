import Foundation

/// The board-game catalogue shipped with the product (GameCatalogueData.swift holds the rows and
/// names the sources): `games` lists and filters it, `game show` finds one by name. Parsed and
/// validated once; `standard` is the product's own. Shaped like the mineral `Catalogue`.
public struct GameCatalogue: Sendable, Equatable {
    public let games: [Game]

    /// One board game, with the figures printed on its box.
    public struct Game: Sendable, Equatable {
        /// As published ("Ticket to Ride: Europe"); unique once folded (`GameCatalogue.fold`).
        public var name: String
        /// The year of first publication of this title.
        public var year: Int
        public var players: ClosedRange<Int>
        /// Playing time in minutes, as the box gives it (one figure is a range of one).
        public var minutes: ClosedRange<Int>
        public var minAge: Int
        public var description: String

        /// The name folded (`GameCatalogue.fold`): unique in the catalogue and the same however
        /// the name is typed. The seam for meetups (a later record type): a meetup is to name its
        /// game by this key, and `game(key:)` finds it back.
        public var key: String { GameCatalogue.fold(name) }

        /// Whether `n` people can play it.
        public func seats(_ n: Int) -> Bool { players.contains(n) }
        /// Whether a game fits in `minutes`: the longest playing time the box gives does.
        public func fits(minutes budget: Int) -> Bool { minutes.upperBound <= budget }
    }

    public init(games: [Game]) { self.games = games }

    /// The product's catalogue, parsed and checked once (the daemon does so at start and logs
    /// `error` if a row is malformed). The rows are checked by the tests; should one ever be
    /// malformed the catalogue is empty and `games` says it is unavailable.
    public static let loaded: (catalogue: GameCatalogue, error: Catalogue.ParseError?) = {
        do throws(Catalogue.ParseError) {
            return (try parse(table), nil)
        } catch {
            return (GameCatalogue(games: []), error)
        }
    }()

    public static var standard: GameCatalogue { loaded.catalogue }

    // MARK: Listing

    /// The games that pass every filter given, by name. `search` is a case- and
    /// accent-insensitive substring of the name or the description; `players`, a number of
    /// people it seats; `minutes`, a time it fits in.
    public func filter(search: String? = nil, players: Int? = nil, minutes: Int? = nil) -> [Game] {
        let needle = search.map(Self.fold).flatMap { $0.isEmpty ? nil : $0 }
        return games.filter { g in
            if let players, !g.seats(players) { return false }
            if let minutes, !g.fits(minutes: minutes) { return false }
            if let needle, !Self.fold(g.name).contains(needle), !Self.fold(g.description).contains(needle) { return false }
            return true
        }.sorted { Self.fold($0.name) < Self.fold($1.name) }
    }

    // MARK: Finding one by name

    /// The game whose `key` is `key` (exactly: keys are already folded).
    public func game(key: String) -> Game? { games.first { $0.key == key } }

    public enum Lookup: Sendable, Equatable {
        case found(Game)
        /// Several games start with the text: their names, sorted.
        case ambiguous([String])
        /// No game does: the nearest names (at most five, nearest first; maybe none).
        case notFound(near: [String])
    }

    /// The game named `text`: a name equal once folded (case, accents, punctuation and "&"
    /// against "and" do not count), else the only one it is a prefix of. Otherwise the names
    /// it could mean.
    public func lookup(_ text: String) -> Lookup {
        let q = Self.fold(text)
        guard !q.isEmpty else { return .notFound(near: []) }
        if let exact = games.first(where: { Self.fold($0.name) == q }) { return .found(exact) }
        let prefixed = games.filter { Self.fold($0.name).hasPrefix(q) }
        if prefixed.count == 1 { return .found(prefixed[0]) }
        if prefixed.count > 1 { return .ambiguous(prefixed.map(\.name).sorted()) }
        return .notFound(near: near(q))
    }

    /// Names that contain the folded query, then those within a few edits of it (or of one of
    /// their words' runs as long as it), nearest first.
    func near(_ q: String, limit: Int = 5) -> [String] {
        var scored: [(Int, String)] = []
        for g in games {
            let name = Self.fold(g.name)
            if name.contains(q) { scored.append((0, g.name)); continue }
            // Edits are counted for a query of a name's length only (the cost is their product).
            guard q.count <= 64 else { continue }
            // The distance to the whole name, or to its start as long as the query.
            let whole = Self.distance(q, name)
            let start = Self.distance(q, String(name.prefix(q.count)))
            let d = min(whole, start + 1)
            if d <= max(2, q.count / 3) { scored.append((d, g.name)) }
        }
        return scored.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.prefix(limit).map(\.1)
    }

    /// Lower case, without accents, "&" read as "and", anything but letters and digits a single
    /// space: "Tigris & Euphrates" and "tigris and euphrates" fold the same, "Sushi Go!" and
    /// "sushi go" too.
    public static func fold(_ text: String) -> String {
        String(decoding: foldedBytes(text), as: UTF8.self)
    }

    /// `fold` as UTF-8 bytes. ASCII (nearly every name) is folded byte by byte; any other
    /// scalar by Foundation, alone. Kept plain (no generics, no closures): `people --search`
    /// folds every name a node holds.
    public static func foldedBytes(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var space = false
        var utf8 = text.utf8.makeIterator()
        var pending: [UInt8] = []   // the bytes of one non-ASCII scalar
        while true {
            let bytes: [UInt8]
            if let b = utf8.next() {
                if b < 0x80 {
                    // Fast path: one ASCII byte.
                    if (0x30...0x39).contains(b) || (0x61...0x7A).contains(b) || (0x41...0x5A).contains(b) {
                        if space, !out.isEmpty { out.append(0x20) }
                        out.append((0x41...0x5A).contains(b) ? b + 0x20 : b)
                        space = false
                    } else if b == 0x26 {   // "&"
                        if !out.isEmpty { out.append(0x20) }
                        out.append(contentsOf: [0x61, 0x6E, 0x64])
                        space = true
                    } else {
                        space = true
                    }
                    continue
                }
                pending.append(b)
                // The whole scalar: as many bytes as its lead byte says (a String is valid UTF-8).
                let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
                while pending.count < length, let c = utf8.next() { pending.append(c) }
                bytes = pending
                pending = []
            } else {
                break
            }
            let scalar = String(decoding: bytes, as: UTF8.self)
            let folded = scalar.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            for s in folded.unicodeScalars {
                if s.isASCII, let b = Optional(UInt8(s.value)),
                   (0x30...0x39).contains(b) || (0x61...0x7A).contains(b) || (0x41...0x5A).contains(b) {
                    if space, !out.isEmpty { out.append(0x20) }
                    out.append((0x41...0x5A).contains(b) ? b + 0x20 : b)
                    space = false
                } else if !s.isASCII, CharacterSet.alphanumerics.contains(s) {
                    if space, !out.isEmpty { out.append(0x20) }
                    out.append(contentsOf: Array(String(s).utf8))
                    space = false
                } else {
                    space = true
                }
            }
        }
        return out
    }

    /// Whether `needle` occurs in `haystack` (bytes; an empty needle always does).
    public static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return true }
            }
            i += 1
        }
        return false
    }

    /// Levenshtein distance over characters.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in 1...b.count {
                let current = row[j]
                row[j] = a[i - 1] == b[j - 1] ? previous : 1 + min(previous, row[j], row[j - 1])
                previous = current
            }
        }
        return row[b.count]
    }

    // MARK: Parsing

    /// Parses and validates the tab-separated rows (see GameCatalogueData.swift): six fields,
    /// numbers in range, ranges ordered, names unique once folded.
    public static func parse(_ text: String) throws(Catalogue.ParseError) -> GameCatalogue {
        var games: [Game] = []
        var names = Set<String>()
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = i + 1
            if raw.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            let f = raw.split(separator: "\t", omittingEmptySubsequences: false).map { String($0) }
            func fail(_ m: String) -> Catalogue.ParseError { Catalogue.ParseError(line: line, message: m) }
            guard f.count == 6 else { throw fail("\(f.count) fields, 6 expected") }
            let name = f[0]
            guard !name.isEmpty, name == name.trimmingCharacters(in: .whitespaces), !fold(name).isEmpty else {
                throw fail("the name must be non-empty, without spaces around it")
            }
            guard names.insert(fold(name)).inserted else { throw fail("\(name) appears twice") }
            guard let year = Int(f[1]), (1800...2100).contains(year) else { throw fail("year \"\(f[1])\" is not a year from 1800 to 2100") }
            guard let players = range(f[2]), players.lowerBound >= 1, players.upperBound <= 100 else {
                throw fail("players \"\(f[2])\" is not a range min-max within 1-100")
            }
            guard let minutes = range(f[3]), minutes.lowerBound >= 1, minutes.upperBound <= 1440 else {
                throw fail("playing time \"\(f[3])\" is not a range min-max of minutes within 1-1440")
            }
            guard let age = Int(f[4]), (3...21).contains(age) else { throw fail("minimum age \"\(f[4])\" is not a number from 3 to 21") }
            let description = f[5]
            guard !description.trimmingCharacters(in: .whitespaces).isEmpty else { throw fail("no description") }
            guard description.count <= 160 else { throw fail("the description has \(description.count) characters, at most 160") }
            games.append(Game(name: name, year: year, players: players, minutes: minutes, minAge: age, description: description))
        }
        return GameCatalogue(games: games)
    }

    /// "a-b" with a ≤ b, as whole numbers.
    static func range(_ text: String) -> ClosedRange<Int>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Int(parts[0]), let b = Int(parts[1]), a <= b else { return nil }
        return a...b
    }

    /// "2–5" or "2" for a range of one.
    public static func formatRange(_ r: ClosedRange<Int>) -> String {
        r.lowerBound == r.upperBound ? "\(r.lowerBound)" : "\(r.lowerBound)–\(r.upperBound)"
    }
}
