/// The card's fields 10–17 beyond text and numbers (PROTOCOL.md §6.3): words in canonical form,
/// lists of them, the preferences for the other side, and the sun sign.
extension ProfileCard {
    /// Runs of white space become one U+0020, none at either end; other scalars kept.
    public static func normalizeSpaces(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for s in text.unicodeScalars {
            if isCourseWhitespace(s) { pendingSpace = !out.isEmpty; continue }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.append(s)
        }
        return String(out)
    }

    /// A gender or a language in canonical form: spaces as `normalizeSpaces`, ASCII letters
    /// lower case ("  Non Binary " → "non binary"). As with courses, only ASCII is folded, so the
    /// rule is the same in every Unicode version.
    public static func normalizeWord(_ text: String) -> String {
        String(String.UnicodeScalarView(normalizeSpaces(text).unicodeScalars.map {
            ("A"..."Z").contains($0) ? Unicode.Scalar($0.value + 32)! : $0
        }))
    }

    static func checkWord(_ w: String, _ name: String) throws(RecordError) -> String {
        guard !w.isEmpty || name == "gender" else { throw RecordError(.invalidBody, "a \(name) is empty") }
        guard !w.unicodeScalars.contains(where: isControl) else { throw RecordError(.invalidBody, "a \(name) contains control characters") }
        guard Array(w.utf8) == Array(normalizeWord(w).utf8), !w.contains(",") else {
            throw RecordError(.invalidBody, "\(name) '\(w.prefix(40))' is not in canonical form (single spaces, none at the ends, ASCII lower case, no commas)")
        }
        return w
    }

    /// `length u8 ‖ UTF-8` per word, as courses are.
    static func encodeWords(_ words: [String]) -> [UInt8] {
        var w = ByteWriter()
        for word in words { let u = Array(word.utf8); w.u8(UInt8(truncatingIfNeeded: u.count)); w.raw(u) }
        return w.bytes
    }

    static func decodeWords(_ v: [UInt8], _ name: String, max: Int, maxBytes: Int) throws(RecordError) -> [String] {
        var r = ByteReader(v)
        var out: [String] = []
        while !r.isAtEnd {
            let n = Int(try r.u8("\(name) length"))
            let raw = try r.raw(n, name)
            guard n >= 1, n <= maxBytes else { throw RecordError(.invalidBody, "\(name)s are 1 to \(maxBytes) bytes") }
            guard let word = String(validating: raw, as: UTF8.self) else { throw RecordError(.malformed, "a \(name) is not valid UTF-8") }
            _ = try checkWord(word, name)
            guard !out.contains(where: { Array($0.utf8) == raw }) else { throw RecordError(.invalidBody, "\(name) '\(word)' is listed twice") }
            out.append(word)
            guard out.count <= max else { throw RecordError(.invalidBody, "at most \(max) \(name)s allowed") }
        }
        return out
    }
}

/// What a person looks for in the other side (card field 16, one register): each part is
/// optional, and each stated part is one "preference met or not" of the compatibility score.
/// An empty encoding clears them all.
public struct Preferences: Equatable, Sendable {
    public enum Tag: UInt8, CaseIterable { case genders = 1, minOverlapHours = 2, maxWage = 3, minBudget = 4 }
    public static let maxGenders = 8
    public static let maxOverlapHours: UInt64 = 168

    /// Genders the person would like to meet (canonical words); empty: any.
    public var genders: [String]
    /// Hours a week of shared availability the person needs.
    public var minOverlapHours: UInt64?
    /// A student's highest acceptable wage.
    public var maxWage: UInt64?
    /// A tutor's lowest acceptable budget.
    public var minBudget: UInt64?

    public init(genders: [String] = [], minOverlapHours: UInt64? = nil, maxWage: UInt64? = nil, minBudget: UInt64? = nil) {
        self.genders = genders; self.minOverlapHours = minOverlapHours; self.maxWage = maxWage; self.minBudget = minBudget
    }

    public static let none = Preferences()
    public var isEmpty: Bool { self == .none }

    public var encoded: [UInt8] {
        var f = FieldList()
        if !genders.isEmpty { f.set(Tag.genders.rawValue, ProfileCard.encodeWords(genders)) }
        if let minOverlapHours { f.set(Tag.minOverlapHours.rawValue, u64: minOverlapHours) }
        if let maxWage { f.set(Tag.maxWage.rawValue, u64: maxWage) }
        if let minBudget { f.set(Tag.minBudget.rawValue, u64: minBudget) }
        return f.encoded
    }

    public init(encoded v: [UInt8]) throws(RecordError) {
        let what = "profile preferences"
        let f = try FieldList.decode(v, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        if let g = f[Tag.genders.rawValue] {
            genders = try ProfileCard.decodeWords(g, "preferred gender", max: Self.maxGenders, maxBytes: ProfileCard.maxGenderBytes)
            guard !genders.isEmpty else { throw RecordError(.invalidBody, "\(what): an empty gender list is written by leaving the field out") }
        } else { genders = [] }
        minOverlapHours = try f.u64(Tag.minOverlapHours.rawValue, "overlap hours", what: what)
        if let h = minOverlapHours, h > Self.maxOverlapHours {
            throw RecordError(.invalidBody, "\(what): \(h) hours of overlap a week is more than a week has (\(Self.maxOverlapHours))")
        }
        maxWage = try f.u64(Tag.maxWage.rawValue, "max wage", what: what)
        minBudget = try f.u64(Tag.minBudget.rawValue, "min budget", what: what)
    }
}
