import MentorCore

/// The seed of the quiz of a day (docs/PROTOCOL.md §15.1): the first 8 bytes, little-endian, of
/// BLAKE2b-256 over the UTF-8 bytes of "mentormate quiz v1 " followed by the date "YYYY-MM-DD".
public enum QuizSeed {
    public static let domain = "mentormate quiz v1 "

    /// nil unless `day` is a real date written YYYY-MM-DD (years 2000–2999).
    public static func seed(day: String) -> UInt64? {
        guard isDay(day) else { return nil }
        let digest = BLAKE2b.hash(Array((domain + day).utf8), outputLength: 32)
        return digest.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    /// The day's questions; nil for a malformed day.
    public static func questions(day: String, catalogue: Catalogue = .standard) -> [QuizQuestion]? {
        seed(day: day).map { Quiz.questions(seed: $0, catalogue: catalogue) }
    }

    static func isDay(_ day: String) -> Bool { Quiz.isDay(day) }
}
