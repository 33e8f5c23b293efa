/// Weekly availability (card field 10, PROTOCOL.md §6.3): the hours of each weekday a person
/// can meet, as slots in quarter hours. Canonical form: sorted by day and start, overlapping and
/// touching slots merged, so one week has one encoding and two cards compare by bytes.
public struct WeeklySlots: Equatable, Sendable, CustomStringConvertible {
    /// Monday is 0 (ISO 8601 order).
    public enum Day: UInt8, CaseIterable, Sendable, CustomStringConvertible {
        case mon = 0, tue, wed, thu, fri, sat, sun
        public var description: String { Self.names[Int(rawValue)] }
        static let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        static let longNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

        /// "Mon", "mon", "Monday" (any case); nil for anything else.
        public init?(name: String) {
            let n = name.lowercased()
            guard let i = Self.names.firstIndex(where: { $0.lowercased() == n }) ?? Self.longNames.firstIndex(of: n) else { return nil }
            self.init(rawValue: UInt8(i))
        }
    }

    /// One slot: `start..<end` minutes of `day`, both multiples of `quantum`, `end` ≤ 24:00.
    public struct Slot: Equatable, Hashable, Sendable, Comparable {
        public var day: Day
        public var start: UInt16
        public var end: UInt16
        public init(day: Day, start: UInt16, end: UInt16) { self.day = day; self.start = start; self.end = end }
        public static func < (a: Slot, b: Slot) -> Bool { (a.day.rawValue, a.start, a.end) < (b.day.rawValue, b.start, b.end) }
        public var minutes: Int { Int(end) - Int(start) }
    }

    public static let quantum: UInt16 = 15
    public static let dayMinutes: UInt16 = 24 * 60
    /// At most four separate slots a day.
    public static let maxSlots = 28
    static let slotBytes = 5

    public private(set) var slots: [Slot]

    /// Sorts and merges `slots` into canonical form (callers check each slot's bounds).
    public init(normalizing slots: [Slot]) {
        var out: [Slot] = []
        for s in slots.sorted() where s.start < s.end {
            if let last = out.last, last.day == s.day, s.start <= last.end {
                out[out.count - 1].end = max(last.end, s.end)
            } else {
                out.append(s)
            }
        }
        self.slots = out
    }

    public static let none = WeeklySlots(normalizing: [])
    public var isEmpty: Bool { slots.isEmpty }

    /// Minutes a week both are free.
    public func overlapMinutes(with other: WeeklySlots) -> Int {
        var total = 0
        var j = 0
        for a in slots {
            while j < other.slots.count, (other.slots[j].day.rawValue, other.slots[j].end) <= (a.day.rawValue, a.start) { j += 1 }
            var k = j
            while k < other.slots.count, other.slots[k].day == a.day, other.slots[k].start < a.end {
                total += max(0, Int(min(a.end, other.slots[k].end)) - Int(max(a.start, other.slots[k].start)))
                k += 1
            }
        }
        return total
    }

    /// Whether some slot is on `day` and, when `minute` is given, covers it.
    public func covers(_ day: Day, minute: UInt16?) -> Bool {
        slots.contains { slot in
            guard slot.day == day else { return false }
            guard let minute else { return true }
            return slot.start <= minute && minute < slot.end
        }
    }

    /// "Mon 14-17, Wed 9:30-12" (hours without minutes when whole).
    public var description: String {
        slots.map { "\($0.day) \(Self.time($0.start))-\(Self.time($0.end))" }.joined(separator: ", ")
    }

    public static func time(_ m: UInt16) -> String {
        m % 60 == 0 ? "\(m / 60)" : "\(m / 60):\(m % 60 < 10 ? "0" : "")\(m % 60)"
    }

    // MARK: Encoding

    /// `day u8 ‖ start u16 ‖ end u16` per slot, in canonical order.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: slots.count * Self.slotBytes)
        for s in slots { w.u8(s.day.rawValue); w.u16(s.start); w.u16(s.end) }
        return w.bytes
    }

    public init(encoded v: [UInt8]) throws(RecordError) {
        guard v.count % Self.slotBytes == 0 else {
            throw RecordError(.malformed, "availability slots are \(v.count) bytes; must be a multiple of \(Self.slotBytes)")
        }
        guard v.count / Self.slotBytes <= Self.maxSlots else {
            throw RecordError(.invalidBody, "\(v.count / Self.slotBytes) availability slots; at most \(Self.maxSlots) allowed")
        }
        var r = ByteReader(v)
        var list: [Slot] = []
        while !r.isAtEnd {
            let d = try r.u8("slot day"), start = try r.u16("slot start"), end = try r.u16("slot end")
            guard let day = Day(rawValue: d) else { throw RecordError(.invalidBody, "availability slot day \(d) is not 0 (Monday) to 6 (Sunday)") }
            guard start < end, end <= Self.dayMinutes, start % Self.quantum == 0, end % Self.quantum == 0 else {
                throw RecordError(.invalidBody, "availability slot \(start)-\(end) must be quarter hours within one day, start before end")
            }
            list.append(Slot(day: day, start: start, end: end))
        }
        let canonical = WeeklySlots(normalizing: list)
        guard canonical.slots == list else {
            throw RecordError(.invalidBody, "availability slots are not in canonical form (sorted, overlapping and touching slots merged)")
        }
        slots = list
    }

    // MARK: Parsing what people type

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    static let grammar = "write slots like \"Mon 14-17, Wed 9:30-12, Sat-Sun 10-13\" (days Mon…Sun, hours 0–24, minutes :00, :15, :30 or :45)"

    /// Parses "Mon 14-17, Wed 9:30-12, Sat-Sun 10-13" (empty: no slots). A slot may not run past
    /// midnight: "Fri 22-2" is two slots, "Fri 22-24, Sat 0-2".
    public static func parse(_ text: String) throws(ParseError) -> WeeklySlots {
        var list: [Slot] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = item.split(whereSeparator: \.isWhitespace)
            if words.isEmpty {
                if text.allSatisfy({ $0.isWhitespace }) { break }
                throw ParseError("an empty slot between commas; \(grammar)")
            }
            guard words.count == 2 else { throw ParseError("\"\(item.trimmed)\" is not a slot; \(grammar)") }
            let days = try parseDays(String(words[0]))
            let (start, end) = try parseHours(String(words[1]))
            for d in days { list.append(Slot(day: d, start: start, end: end)) }
        }
        let slots = WeeklySlots(normalizing: list)
        guard slots.slots.count <= maxSlots else { throw ParseError("\(slots.slots.count) slots after merging; at most \(maxSlots)") }
        return slots
    }

    static func parseDays(_ s: String) throws(ParseError) -> [Day] {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        var days: [Day] = []
        for p in parts {
            guard let d = Day(name: p) else { throw ParseError("\"\(p)\" is not a day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun") }
            days.append(d)
        }
        switch days.count {
        case 1: return days
        case 2:
            guard days[0].rawValue <= days[1].rawValue else {
                throw ParseError("the days \"\(s)\" run backwards; write them Monday first, e.g. Mon-Fri")
            }
            return (days[0].rawValue...days[1].rawValue).compactMap(Day.init(rawValue:))
        default: throw ParseError("\"\(s)\" is not a day or a range of days like Mon-Fri")
        }
    }

    static func parseHours(_ s: String) throws(ParseError) -> (UInt16, UInt16) {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw ParseError("\"\(s)\" is not a time range like 14-17 or 9:30-12") }
        let start = try parseTime(parts[0]), end = try parseTime(parts[1])
        guard start < end else {
            throw ParseError("\(s) ends before it starts; a slot stays within one day (write 22-24 and the next day 0-2)")
        }
        return (start, end)
    }

    /// "14", "9:30", "24" → minutes of the day.
    public static func parseTime(_ s: String) throws(ParseError) -> UInt16 {
        let hm = s.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(hm.count), let h = UInt16(hm[0]), hm[0].count <= 2 else {
            throw ParseError("\"\(s)\" is not a time; write the hour (0–24), optionally with :MM")
        }
        let m: UInt16
        if hm.count == 2 {
            guard hm[1].count == 2, let v = UInt16(hm[1]), v < 60 else { throw ParseError("\"\(s)\" has no valid minutes (:00 to :59)") }
            m = v
        } else { m = 0 }
        guard h <= 24, h * 60 + m <= dayMinutes else { throw ParseError("\(h) is not an hour of the day (0–24)") }
        guard m % quantum == 0 else { throw ParseError("\"\(s)\": minutes must be :00, :15, :30 or :45") }
        return h * 60 + m
    }

    /// A feed filter `DAY[-TIME]`: "Mon" (any time Monday) or "Mon-14" / "Mon-9:30" / "Mon 14".
    public static func parseMoment(_ text: String) throws(ParseError) -> (Day, UInt16?) {
        let t = text.trimmed
        let cut = t.firstIndex(where: { $0 == "-" || $0.isWhitespace })
        let dayText = cut.map { String(t[..<$0]) } ?? t
        guard let day = Day(name: dayText) else {
            throw ParseError("\"\(dayText)\" is not a day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun, optionally with an hour: Mon-14")
        }
        guard let cut else { return (day, nil) }
        let timeText = String(t[t.index(after: cut)...]).trimmed
        let m = try parseTime(timeText)
        guard m < dayMinutes else { throw ParseError("24 is the end of the day; ask for an hour 0–23") }
        return (day, m)
    }
}

extension StringProtocol {
    var trimmed: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
