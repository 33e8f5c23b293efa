/// The compatibility score (0–100) of a candidate for a viewer, with its parts (PROTOCOL.md
/// §6.4, API.md "Compatibility"). Pure: every node computes the same score from the same two
/// cards and the same "nearby now".
///
/// | part | weight | fraction of the weight earned |
/// |---|---|---|
/// | courses | 35 | shared courses ÷ min(3, the viewer's course count); 0 if the viewer lists none |
/// | availability | 20 | hours a week both are free ÷ the viewer's required overlap (2 h if none stated), at most 1 |
/// | money | 15 | 1 when the tutor's wage is within the student's budget; 0 when over it or either is not given |
/// | preferences | 20 | the viewer's stated preferences met ÷ stated (gender, overlap, max wage, min budget); 1 if none stated |
/// | nearby | 10 | 1 when the candidate's node is linked to the viewer's now |
/// | sign | 10 | only when both publish a sun sign: the element/modality table (`SunSign.compatibility`) |
///
/// score = round(100 × Σ weight × fraction ÷ Σ weight), the sum over the parts that apply (the
/// sign applies only when both opted in, so the total weight is 100 or 110).
public enum Compatibility {
    public enum Kind: String, Sendable, CaseIterable {
        case courses, availability, money, preferences, nearby, sign
        public var weight: Int {
            switch self {
            case .courses: 35; case .availability: 20; case .money: 15; case .preferences: 20; case .nearby: 10; case .sign: 10
            }
        }
    }

    /// One part: its weight, the fraction earned (0…1) and why, in one line.
    public struct Part: Sendable, Equatable {
        public var kind: Kind
        public var fraction: Double
        public var reason: String
        public var points: Double { Double(kind.weight) * fraction }
    }

    /// What scoring needs of a card: interned courses and genders (small integers), the rest as
    /// on the card. `Feed.Candidate` is one.
    public static let defaultOverlapMinutes = 120

    /// The total alone (the feed index's hot path: no strings).
    public static func score(viewer v: Feed.Candidate, candidate c: Feed.Candidate) -> UInt8 {
        var earned = 0.0, total = 0
        for kind in Kind.allCases {
            guard let f = fraction(kind, v, c) else { continue }
            earned += Double(kind.weight) * f
            total += kind.weight
        }
        return total == 0 ? 0 : UInt8((earned * 100 / Double(total)).rounded())
    }

    /// The parts with their reasons; `course` and `gender` name interned IDs.
    public static func parts(viewer v: Feed.Candidate, candidate c: Feed.Candidate,
                             course: (Int32) -> String, gender: (Int32) -> String) -> [Part] {
        Kind.allCases.compactMap { kind in
            fraction(kind, v, c).map { Part(kind: kind, fraction: $0, reason: reason(kind, v, c, course: course, gender: gender)) }
        }
    }

    static func sharedCourses(_ v: Feed.Candidate, _ c: Feed.Candidate) -> [Int32] { c.courses.filter(v.courses.contains) }

    static func overlapMinutes(_ v: Feed.Candidate, _ c: Feed.Candidate) -> Int { v.slots.overlapMinutes(with: c.slots) }

    /// (wage, budget) of the pair: the tutor's wage and the student's budget.
    static func money(_ v: Feed.Candidate, _ c: Feed.Candidate) -> (wage: UInt64?, budget: UInt64?) {
        v.role == .tutor ? (v.wage, c.budget) : (c.wage, v.budget)
    }

    /// Each preference the viewer stated, and whether the candidate meets it.
    static func preferences(_ v: Feed.Candidate, _ c: Feed.Candidate) -> [(name: String, met: Bool)] {
        var out: [(String, Bool)] = []
        if !v.preferredGenders.isEmpty { out.append(("gender", c.gender.map(v.preferredGenders.contains) ?? false)) }
        if let h = v.minOverlapHours { out.append(("overlap", overlapMinutes(v, c) >= Int(h) * 60)) }
        if let max = v.maxWage { out.append(("max wage", c.wage.map { $0 <= max } ?? false)) }
        if let min = v.minBudget { out.append(("min budget", c.budget.map { $0 >= min } ?? false)) }
        return out
    }

    static func fraction(_ kind: Kind, _ v: Feed.Candidate, _ c: Feed.Candidate) -> Double? {
        switch kind {
        case .courses:
            guard !v.courses.isEmpty else { return 0 }
            return min(1, Double(sharedCourses(v, c).count) / Double(min(3, v.courses.count)))
        case .availability:
            let target = v.minOverlapHours.map { max(1, Int($0) * 60) } ?? defaultOverlapMinutes
            return min(1, Double(overlapMinutes(v, c)) / Double(target))
        case .money:
            let (wage, budget) = money(v, c)
            guard let wage, let budget else { return 0 }
            return wage <= budget ? 1 : 0
        case .preferences:
            let stated = preferences(v, c)
            return stated.isEmpty ? 1 : Double(stated.filter(\.met).count) / Double(stated.count)
        case .nearby:
            return c.nearby ? 1 : 0
        case .sign:
            guard let a = v.sign, let b = c.sign else { return nil }
            return a.compatibility(with: b)
        }
    }

    static func reason(_ kind: Kind, _ v: Feed.Candidate, _ c: Feed.Candidate,
                       course: (Int32) -> String, gender: (Int32) -> String) -> String {
        switch kind {
        case .courses:
            let shared = sharedCourses(v, c)
            if v.courses.isEmpty { return "you list no courses" }
            return shared.isEmpty ? "no shared course" : "\(shared.count) shared course\(shared.count == 1 ? "" : "s"): \(shared.map(course).joined(separator: ", "))"
        case .availability:
            if v.slots.isEmpty || c.slots.isEmpty { return v.slots.isEmpty ? "you give no availability slots" : "they give no availability slots" }
            let m = overlapMinutes(v, c)
            return "free at the same time \(hours(m)) a week"
        case .money:
            let (wage, budget) = money(v, c)
            guard let wage, let budget else { return wage == nil ? "no wage given" : "no budget given" }
            return wage <= budget ? "wage \(wage) within budget \(budget)" : "wage \(wage) over budget \(budget)"
        case .preferences:
            let stated = preferences(v, c)
            if stated.isEmpty { return "you state no preferences" }
            return stated.map { "\($0.name) \($0.met ? "met" : "not met")" }.joined(separator: ", ")
        case .nearby:
            return c.nearby ? "nearby now" : "not nearby now"
        case .sign:
            guard let a = v.sign, let b = c.sign else { return "" }
            return "\(a) and \(b): \(a.relation(to: b))"
        }
    }

    /// Quarter hours as "1.5 h", "2 h", "0.25 h".
    static func hours(_ minutes: Int) -> String {
        "\(minutes / 60)\(["", ".25", ".5", ".75"][(minutes % 60) / 15]) h"
    }
}

/// The twelve sun signs of the tropical zodiac, with the element and modality the Juno design's
/// compatibility uses (PROTOCOL.md §6.4).
public enum SunSign: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    case aries = 0, taurus, gemini, cancer, leo, virgo, libra, scorpio, sagittarius, capricorn, aquarius, pisces

    public enum Element: String, Sendable { case fire, earth, air, water }
    public enum Modality: String, Sendable { case cardinal, fixed, mutable }

    public var description: String {
        ["Aries", "Taurus", "Gemini", "Cancer", "Leo", "Virgo", "Libra", "Scorpio", "Sagittarius", "Capricorn", "Aquarius", "Pisces"][Int(rawValue)]
    }

    /// Fire, earth, air, water in turn from Aries.
    public var element: Element { [.fire, .earth, .air, .water][Int(rawValue) % 4] }
    /// Cardinal, fixed, mutable in turn from Aries.
    public var modality: Modality { [.cardinal, .fixed, .mutable][Int(rawValue) % 3] }

    /// The sign of a birthday (month 1–12, day 1–31), by the usual tropical dates: Aries from
    /// March 21, Taurus April 20, Gemini May 21, Cancer June 21, Leo July 23, Virgo August 23,
    /// Libra September 23, Scorpio October 23, Sagittarius November 22, Capricorn December 22,
    /// Aquarius January 20, Pisces February 19.
    public init(month: Int, day: Int) {
        // The first day of each month's second sign, January to December.
        let cusp = [20, 19, 21, 20, 21, 21, 23, 23, 23, 23, 22, 22]
        // The sign a month starts in: January starts in Capricorn.
        let first: [SunSign] = [.capricorn, .aquarius, .pisces, .aries, .taurus, .gemini, .cancer, .leo, .virgo, .libra, .scorpio, .sagittarius]
        let m = min(max(month, 1), 12) - 1
        let start = first[m]
        self = day >= cusp[m] ? SunSign(rawValue: (start.rawValue + 1) % 12)! : start
    }

    static func complementary(_ a: Element, _ b: Element) -> Bool {
        Set([a, b]) == [.fire, .air] || Set([a, b]) == [.earth, .water]
    }

    /// 1 for the same element; 0.8 for complementary elements (fire–air, earth–water); 0.3 for
    /// the same modality in clashing elements (the squares); 0.5 otherwise.
    public func compatibility(with other: SunSign) -> Double {
        if element == other.element { return 1 }
        if Self.complementary(element, other.element) { return 0.8 }
        if modality == other.modality { return 0.3 }
        return 0.5
    }

    public func relation(to other: SunSign) -> String {
        if element == other.element { return "both \(element.rawValue) signs" }
        if Self.complementary(element, other.element) { return "\(element.rawValue) and \(other.element.rawValue) complement each other" }
        if modality == other.modality { return "both \(modality.rawValue), \(element.rawValue) against \(other.element.rawValue)" }
        return "\(element.rawValue) and \(other.element.rawValue), neutral"
    }
}
