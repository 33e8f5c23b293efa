import Foundation

/// The reference catalogue of common minerals and rocks (CatalogueData.swift holds the rows and
/// names the sources). Parsed and validated once; `standard` is the product's own.
public struct Catalogue: Sendable, Equatable {
    public let entries: [Entry]

    /// One mineral or rock.
    public struct Entry: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable { case mineral, rock }
        public var name: String
        public var kind: Kind
        /// Colours seen in hand specimens, from `Catalogue.colours`.
        public var colours: [String]
        public var lusters: [Luster]
        /// The colour of the powder (streak plate), from `Catalogue.colours`.
        public var streak: String
        public var hardness: ClosedRange<Double>
        public var cleavage: Cleavage
        public var specificGravity: ClosedRange<Double>
        /// A crystal system, or "none" for rocks and amorphous matter.
        public var crystalSystem: String
        public var note: String
    }

    /// How a surface reflects light. `metallic` and `submetallic` are the metallic class; every
    /// other value is non-metallic.
    public enum Luster: String, Sendable, CaseIterable {
        case metallic, submetallic, vitreous, pearly, silky, greasy, resinous, adamantine, dull

        public var isNonMetallic: Bool { self != .metallic && self != .submetallic }
    }

    /// How well a mineral splits along planes; `none` means it only fractures.
    public enum Cleavage: String, Sendable, CaseIterable, Comparable {
        case none, poor, good, perfect

        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }
    }

    /// Every colour name an entry, a streak or a query may use, each with its base colour (the
    /// last word: "greenish-black" is black) and its tone.
    public static let colours: [String: (base: String, dark: Bool)] = [
        "colourless": ("colourless", false), "white": ("white", false), "silver-white": ("white", false),
        "grey": ("grey", false), "yellow": ("yellow", false), "gold-yellow": ("yellow", false),
        "brass-yellow": ("yellow", false), "pale-brown": ("brown", false), "pink": ("pink", false),
        "orange": ("orange", false),
        "dark-grey": ("grey", true), "steel-grey": ("grey", true), "lead-grey": ("grey", true),
        "black": ("black", true), "greenish-black": ("black", true), "brownish-black": ("black", true),
        "brown": ("brown", true), "red-brown": ("brown", true), "yellow-brown": ("brown", true),
        "red": ("red", true), "copper-red": ("red", true), "green": ("green", true),
        "dark-green": ("green", true), "blue": ("blue", true), "purple": ("purple", true),
    ]

    /// The colour names, sorted (for messages and help).
    public static var colourNames: [String] { colours.keys.sorted() }

    /// The US spellings accepted for the two colour words that have one.
    static func canonicalColour(_ word: String) -> String {
        let w = word.lowercased()
        switch w {
        case "colorless": return "colourless"
        case "gray": return "grey"
        default: return w.replacingOccurrences(of: "gray", with: "grey")
        }
    }

    public init(entries: [Entry]) { self.entries = entries }

    /// The product's catalogue, parsed and checked once (the daemon does so at start and logs
    /// `error` if a row is malformed). The rows are checked by the tests; should one ever be
    /// malformed the catalogue is empty and `identify` says it is unavailable.
    public static let loaded: (catalogue: Catalogue, error: ParseError?) = {
        do {
            return (try parse(table), nil)
        } catch let e as ParseError {
            return (Catalogue(entries: []), e)
        } catch {
            return (Catalogue(entries: []), ParseError(line: 0, message: "\(error)"))
        }
    }()

    public static var standard: Catalogue { loaded.catalogue }

    public func entry(named name: String) -> Entry? {
        entries.first { $0.name == name.lowercased() }
    }

    // MARK: Parsing

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "catalogue line \(line): \(message)" }
    }

    /// Parses and validates the tab-separated rows (see CatalogueData.swift): nine fields, every
    /// value from its allowed set, ranges ordered and positive, names unique.
    public static func parse(_ text: String) throws(ParseError) -> Catalogue {
        var entries: [Entry] = []
        var names = Set<String>()
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = i + 1
            if raw.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            let f = raw.split(separator: "\t", omittingEmptySubsequences: false).map { String($0) }
            func fail(_ m: String) -> ParseError { ParseError(line: line, message: m) }
            guard f.count == 10 else { throw fail("\(f.count) fields, 10 expected") }
            guard !f[0].isEmpty, f[0] == f[0].lowercased() else { throw fail("the name must be non-empty, lower-case") }
            guard names.insert(f[0]).inserted else { throw fail("\(f[0]) appears twice") }
            guard let kind = Entry.Kind(rawValue: f[1]) else { throw fail("kind \"\(f[1])\" is not mineral or rock") }
            let colours = f[2].split(separator: ",").map(String.init)
            guard !colours.isEmpty else { throw fail("no colour") }
            for c in colours where Self.colours[c] == nil { throw fail("unknown colour \"\(c)\"") }
            var lusters: [Luster] = []
            for l in f[3].split(separator: ",") {
                guard let luster = Luster(rawValue: String(l)) else { throw fail("unknown luster \"\(l)\"") }
                lusters.append(luster)
            }
            guard !lusters.isEmpty else { throw fail("no luster") }
            guard Self.colours[f[4]] != nil else { throw fail("unknown streak colour \"\(f[4])\"") }
            guard let hardness = range(f[5]), hardness.lowerBound >= 1, hardness.upperBound <= 10 else {
                throw fail("hardness \"\(f[5])\" is not a range min-max within 1-10")
            }
            guard let cleavage = Cleavage(rawValue: f[6]) else { throw fail("cleavage \"\(f[6])\" is not none, poor, good or perfect") }
            guard let gravity = range(f[7]), gravity.lowerBound > 0, gravity.upperBound < 25 else {
                throw fail("specific gravity \"\(f[7])\" is not a range min-max within 0-25")
            }
            guard Self.crystalSystems.contains(f[8]) else { throw fail("crystal system \"\(f[8])\" is not one of \(Self.crystalSystems.joined(separator: ", "))") }
            guard kind == .mineral || f[8] == "none" else { throw fail("a rock has no crystal system") }
            guard !f[9].trimmingCharacters(in: .whitespaces).isEmpty else { throw fail("no note") }
            entries.append(Entry(name: f[0], kind: kind, colours: colours, lusters: lusters, streak: f[4],
                                 hardness: hardness, cleavage: cleavage, specificGravity: gravity,
                                 crystalSystem: f[8], note: f[9]))
        }
        return Catalogue(entries: entries)
    }

    public static let crystalSystems = ["cubic", "tetragonal", "orthorhombic", "hexagonal", "trigonal",
                                        "monoclinic", "triclinic", "none"]

    /// "a-b" with a ≤ b, as numbers.
    static func range(_ text: String) -> ClosedRange<Double>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Double(parts[0]), let b = Double(parts[1]), a.isFinite, b.isFinite, a <= b else { return nil }
        return a...b
    }
}
