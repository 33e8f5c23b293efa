import Foundation

/// Identify: the traits someone observed, scored against every catalogue entry
/// (docs/API.md `identify` gives the rules).
///
/// The matcher takes a `Traits` value, whatever it came from — command-line options today, a
/// post's tags later — so another source of traits only needs to build one.
public struct Traits: Sendable, Equatable {
    /// What a colour query asks: the specimen is light, dark, or a named colour.
    public enum Colour: Sendable, Equatable {
        case light, dark
        case named(String)
    }
    /// What a luster query asks: the metallic or non-metallic class, or one luster.
    public enum LusterQuery: Sendable, Equatable {
        case metallic, nonMetallic
        case specific(Catalogue.Luster)
    }

    public var colour: Colour?
    public var luster: LusterQuery?
    public var cleavage: Catalogue.Cleavage?
    public var hardness: Double?
    public var streak: String?

    public init(colour: Colour? = nil, luster: LusterQuery? = nil, cleavage: Catalogue.Cleavage? = nil,
                hardness: Double? = nil, streak: String? = nil) {
        (self.colour, self.luster, self.cleavage, self.hardness, self.streak) = (colour, luster, cleavage, hardness, streak)
    }

    public var isEmpty: Bool { colour == nil && luster == nil && cleavage == nil && hardness == nil && streak == nil }

    /// A trait value that is not accepted; the message names the trait and the accepted values.
    public struct InvalidValue: Error, Equatable, CustomStringConvertible {
        public var trait: String
        public var message: String
        public var description: String { message }
    }

    /// Reads the text form of each trait (nil = not observed); every value is checked.
    public static func parse(colour: String? = nil, luster: String? = nil, cleavage: String? = nil,
                             hardness: String? = nil, streak: String? = nil) throws(InvalidValue) -> Traits {
        var t = Traits()
        if let colour {
            let c = Catalogue.canonicalColour(colour.trimmingCharacters(in: .whitespaces))
            switch c {
            case "light": t.colour = .light
            case "dark": t.colour = .dark
            default:
                guard Catalogue.colours[c] != nil else {
                    throw InvalidValue(trait: "color", message: "unknown color \"\(colour)\"; use light, dark or one of: \(Catalogue.colourNames.joined(separator: ", "))")
                }
                t.colour = .named(c)
            }
        }
        if let luster {
            let l = luster.trimmingCharacters(in: .whitespaces).lowercased()
            switch l {
            case "metallic": t.luster = .metallic
            case "non-metallic", "nonmetallic": t.luster = .nonMetallic
            default:
                guard let specific = Catalogue.Luster(rawValue: l == "earthy" ? "dull" : l) else {
                    let accepted = ["metallic", "non-metallic"] + Catalogue.Luster.allCases.dropFirst().map(\.rawValue) + ["earthy"]
                    throw InvalidValue(trait: "luster", message: "unknown luster \"\(luster)\"; use one of: \(accepted.joined(separator: ", "))")
                }
                t.luster = .specific(specific)
            }
        }
        if let cleavage {
            guard let c = Catalogue.Cleavage(rawValue: cleavage.trimmingCharacters(in: .whitespaces).lowercased()) else {
                throw InvalidValue(trait: "cleavage", message: "unknown cleavage \"\(cleavage)\"; use none, poor, good or perfect (none = it only fractures)")
            }
            t.cleavage = c
        }
        if let hardness {
            guard let h = Double(hardness.trimmingCharacters(in: .whitespaces)), h.isFinite, (1...10).contains(h) else {
                throw InvalidValue(trait: "hardness", message: "hardness \"\(hardness)\" is not a Mohs hardness; use a number from 1 to 10, e.g. 5.5")
            }
            t.hardness = h
        }
        if let streak {
            let s = Catalogue.canonicalColour(streak.trimmingCharacters(in: .whitespaces))
            guard Catalogue.colours[s] != nil else {
                throw InvalidValue(trait: "streak", message: "unknown streak colour \"\(streak)\"; use one of: \(Catalogue.colourNames.joined(separator: ", "))")
            }
            t.streak = s
        }
        return t
    }
}

/// One entry's match: its score (0–100) and one reason per observed trait.
public struct Identification: Sendable, Equatable {
    public var entry: Catalogue.Entry
    public var score: Int
    public var reasons: [String]
}

extension Catalogue {
    /// The weight of each trait in a score: hardness and luster are what a student measures most
    /// reliably, streak is diagnostic, cleavage is often hard to see, colour misleads most.
    public static let weights: (hardness: Double, luster: Double, streak: Double, cleavage: Double, colour: Double) =
        (30, 25, 20, 15, 10)

    /// The `limit` best matches of `traits`: score = 100 × Σ weight × credit / Σ weight over the
    /// traits given (rounded half away from zero), highest first, ties by name. Credits are in
    /// the `...Credit` functions below (docs/API.md `identify`).
    public func identify(_ traits: Traits, limit: Int = 5) -> [Identification] {
        let scored = entries.map { e -> Identification in
            var earned = 0.0, total = 0.0
            var reasons: [String] = []
            func add(_ weight: Double, _ credit: Double, _ reason: String) {
                earned += weight * credit
                total += weight
                reasons.append(reason)
            }
            if let h = traits.hardness {
                let (c, r) = Self.hardnessCredit(h, e.hardness)
                add(Self.weights.hardness, c, r)
            }
            if let l = traits.luster {
                let (c, r) = Self.lusterCredit(l, e.lusters)
                add(Self.weights.luster, c, r)
            }
            if let s = traits.streak {
                let (c, r) = Self.colourCredit(s, [e.streak])
                add(Self.weights.streak, c, "streak: " + r)
            }
            if let k = traits.cleavage {
                let (c, r) = Self.cleavageCredit(k, e.cleavage)
                add(Self.weights.cleavage, c, r)
            }
            if let col = traits.colour {
                let (c, r) = Self.bodyColourCredit(col, e.colours)
                add(Self.weights.colour, c, "color: " + r)
            }
            let score = total > 0 ? Int((100 * earned / total).rounded()) : 0
            return Identification(entry: e, score: score, reasons: reasons)
        }
        return Array(scored.sorted { a, b in a.score != b.score ? a.score > b.score : a.entry.name < b.entry.name }
            .prefix(max(0, limit)))
    }

    static func format(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(x)
    }

    public static func formatRange(_ r: ClosedRange<Double>) -> String {
        r.lowerBound == r.upperBound ? format(r.lowerBound) : "\(format(r.lowerBound))–\(format(r.upperBound))"
    }

    /// Full credit inside the range; outside, 1 − d/2 for a distance d (so half a step off is
    /// 0.75, one step 0.5, two or more 0).
    static func hardnessCredit(_ h: Double, _ range: ClosedRange<Double>) -> (Double, String) {
        let d = range.contains(h) ? 0 : min(abs(h - range.lowerBound), abs(h - range.upperBound))
        let credit = max(0, 1 - d / 2)
        let r = d == 0 ? "hardness \(format(h)) is within \(formatRange(range))"
            : "hardness \(format(h)) is \(format(d)) from \(formatRange(range))"
        return (credit, r)
    }

    /// metallic: 1 if the entry can be metallic, ½ if submetallic. non-metallic: 1 if it has a
    /// non-metallic luster, ½ if submetallic. A named luster: 1 if the entry has it, ½ if the
    /// entry has another of the same class (or either side is submetallic), else 0.
    static func lusterCredit(_ q: Traits.LusterQuery, _ lusters: [Luster]) -> (Double, String) {
        let list = lusters.map(\.rawValue).joined(separator: ", ")
        let credit: Double
        let asked: String
        switch q {
        case .metallic:
            asked = "metallic"
            credit = lusters.contains(.metallic) ? 1 : lusters.contains(.submetallic) ? 0.5 : 0
        case .nonMetallic:
            asked = "non-metallic"
            credit = lusters.contains(where: \.isNonMetallic) ? 1 : lusters.contains(.submetallic) ? 0.5 : 0
        case .specific(let l):
            asked = l.rawValue
            if lusters.contains(l) { credit = 1 }
            else if l == .submetallic || lusters.contains(.submetallic)
                        || lusters.contains(where: { $0.isNonMetallic == l.isNonMetallic }) { credit = 0.5 }
            else { credit = 0 }
        }
        let how = credit == 1 ? "matches" : credit > 0 ? "is close to" : "differs from"
        return (credit, "luster \(asked) \(how) \(list)")
    }

    /// Two colours: 1 if the same base colour (greenish-black is black, red-brown is brown);
    /// ½ if the same tone (both dark or both light: a black query and hematite's red-brown
    /// streak); else 0. Against a list, the best of the list.
    static func colourCredit(_ q: String, _ list: [String]) -> (Double, String) {
        guard let asked = colours[q] else { return (0, "\(q) is not a colour") }
        var best = 0.0
        var which = list.first ?? ""
        for c in list {
            guard let have = colours[c] else { continue }
            let credit = asked.base == have.base ? 1 : asked.dark == have.dark ? 0.5 : 0
            if credit > best { (best, which) = (credit, c) }
        }
        let r = best == 1 ? "\(q) matches \(which)"
            : best > 0 ? "\(q) is near \(which) (both \(asked.dark ? "dark" : "light")), half credit"
            : "\(q) differs from \(list.joined(separator: ", "))"
        return (best, r)
    }

    /// light/dark: 1 if one of the entry's colours has that tone; a named colour as in
    /// `colourCredit`.
    static func bodyColourCredit(_ q: Traits.Colour, _ list: [String]) -> (Double, String) {
        switch q {
        case .named(let name): return colourCredit(name, list)
        case .light, .dark:
            let dark = q == .dark
            let hit = list.first { colours[$0]?.dark == dark }
            let word = dark ? "dark" : "light"
            return hit.map { (1, "\(word) matches \($0)") } ?? (0, "\(word) differs from \(list.joined(separator: ", "))")
        }
    }

    /// Equal: 1; one step apart on none < poor < good < perfect: ½; else 0.
    static func cleavageCredit(_ q: Cleavage, _ have: Cleavage) -> (Double, String) {
        let d = abs(q.rank - have.rank)
        let credit = d == 0 ? 1 : d == 1 ? 0.5 : 0
        let r = d == 0 ? "cleavage \(q.rawValue) matches" : "cleavage \(q.rawValue), catalogue says \(have.rawValue)"
        return (credit, r)
    }
}
