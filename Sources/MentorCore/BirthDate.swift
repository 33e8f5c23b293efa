/// A birth date (kept private on the person's node): the card publishes the age in whole years
/// and, if the person opts in, the sun sign. Dates are proleptic Gregorian, ages counted in UTC.
public struct BirthDate: Equatable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public struct ParseError: Error, CustomStringConvertible { public let description: String }

    /// "2004-05-17"; refuses impossible dates ("2023-02-29") and anything before 1900.
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else {
            throw ParseError(description: "\"\(text)\" is not a date; write it YYYY-MM-DD, e.g. 2004-05-17")
        }
        guard (1...12).contains(m), (1...Self.days(inMonth: m, year: y)).contains(d) else {
            throw ParseError(description: "\(text) is not a day of the calendar")
        }
        guard y >= 1900 else { throw ParseError(description: "\(text) is before 1900; check the year") }
        year = y; month = m; day = d
    }

    public var description: String {
        "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
    }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
    static func days(inMonth m: Int, year y: Int) -> Int {
        [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
    }

    /// The UTC calendar date of a Unix time in milliseconds (Howard Hinnant's civil_from_days).
    public static func civil(millis: UInt64) -> (year: Int, month: Int, day: Int) {
        let z = Int(millis / 86_400_000) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Whole years of age on the UTC date of `millis` (one born on February 29 turns a year
    /// older on March 1 in common years); negative for a date in the future.
    public func age(at millis: UInt64) -> Int {
        let today = Self.civil(millis: millis)
        let hadBirthday = (today.month, today.day) >= (month, day)
        return today.year - year - (hadBirthday ? 0 : 1)
    }

    public var sign: SunSign { SunSign(month: month, day: day) }
}
