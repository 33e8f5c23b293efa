/// A profile card edit (public). Only the fields present change; each is a register write.
public struct ProfileCard: RecordSchema, Equatable {
    public static let type = RecordType.profile
    public static let name = "profile"
    /// The card's writers are the account's keys: the account key and its devices. A clock
    /// names the other keys of the account whose writes the edit had seen (PROTOCOL.md §8.3).
    public static let maxClockEntries = Limits.maxDevicesPerAccount
    public static let publicMerge = PublicMerge.fieldRegisters

    public enum Role: String, Sendable, CaseIterable { case student, tutor }

    /// Field tags; each is one register of the card.
    public enum Field: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case name = 1, role = 2, bio = 3, courses = 4, wage = 5, budget = 6, availability = 7, photo = 8
        case slots = 10, gender = 11, languages = 12, area = 13, age = 14, sign = 15, preferences = 16, paused = 17
        case membership = 18
        public var description: String {
            switch self {
            case .name: "name"; case .role: "role"; case .bio: "bio"; case .courses: "courses"
            case .wage: "wage"; case .budget: "budget"; case .availability: "availability"; case .photo: "photo"
            case .slots: "slots"; case .gender: "gender"; case .languages: "languages"; case .area: "area"
            case .age: "age"; case .sign: "sign"; case .preferences: "preferences"; case .paused: "paused"
            case .membership: "membership"
            }
        }
    }

    /// Tag of the proof-of-work field (PROTOCOL.md §6.1): a `u64` nonce, only in an account's
    /// first record. Not a `Field`: it says nothing about the person and is no register of the
    /// card, so it is checked when the record arrives and then not merged.
    public static let workTag: UInt8 = 9
    /// Every tag a card body may hold.
    public static let bodyTags = Set(Field.allCases.map(\.rawValue)).union([workTag])

    public static let maxNameBytes = 100
    public static let maxBioBytes = 2000
    public static let maxAvailabilityBytes = 500
    public static let maxCourses = 32
    public static let maxCourseBytes = 32
    public static let maxGenderBytes = 32
    public static let maxLanguages = 8
    public static let maxLanguageBytes = 32
    public static let maxAreaBytes = 64
    public static let ageRange: ClosedRange<UInt8> = 13...120

    public var name: String?
    public var role: Role?
    public var bio: String?
    public var courses: [String]?
    /// Hourly wage asked by a tutor, in whole currency units.
    public var wage: UInt64?
    /// Hourly budget offered by a student, in whole currency units.
    public var budget: UInt64?
    public var availability: String?
    /// The photos, main one first (at most `maxPhotos`, each once); `[]` removes them all.
    public var photos: [PhotoRef]?
    /// Photos a card may name (field 8 is their list; the first is the main one).
    public static let maxPhotos = 6
    /// The account's proof-of-work nonce (`AccountWork`): set only in its seq-1 card.
    public var work: UInt64?
    // Fields 10–17 (PROTOCOL.md §6.3). Set after init. An empty value clears a field: an edit
    // with `gender = ""`, `languages = []`, `slots = .none`, `preferences = .none`, `age = .some(nil)`
    // or `sign = .some(nil)` removes it; the merged card shows a cleared field as nil.
    /// Weekly availability as slots (the free-text `availability` stays beside it).
    public var slots: WeeklySlots?
    /// Canonical form: `normalizeWord` (lower case, single spaces).
    public var gender: String?
    public var languages: [String]?
    /// A building or zone of the campus (the node's config may list the allowed ones).
    public var area: String?
    /// Age in whole years, computed by the person's node from a birth date it keeps private.
    public var age: UInt8??
    /// The sun sign, published only when the person opts in.
    public var sign: SunSign??
    /// What the person looks for in the other side.
    public var preferences: Preferences?
    /// "Pause me": hidden from new feeds while true; matches are unaffected.
    public var paused: Bool?
    /// A campus membership certificate for this account (field 18, PROTOCOL.md §6.8). Its form
    /// and account are checked here, its signature in MentorCrypto (`VerifiedRecord`).
    public var membership: MembershipCertificate?

    public init(name: String? = nil, role: Role? = nil, bio: String? = nil, courses: [String]? = nil,
                wage: UInt64? = nil, budget: UInt64? = nil, availability: String? = nil, photos: [PhotoRef]? = nil,
                work: UInt64? = nil) {
        self.name = name; self.role = role; self.bio = bio; self.courses = courses
        self.wage = wage; self.budget = budget; self.availability = availability; self.photos = photos
        self.work = work
    }

    /// Canonical course spelling (PROTOCOL.md §6): runs of Unicode White_Space scalars become
    /// one U+0020, none at either end, and ASCII letters upper case ("cs  490" → "CS 490").
    /// Other scalars are kept as written, so the rule is the same in every Unicode version and
    /// every implementation (full case mapping changes between versions, and a course one node
    /// takes and another refuses would make honest relays look like offenders).
    public static func normalizeCourse(_ c: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for s in c.unicodeScalars {
            if isCourseWhitespace(s) { pendingSpace = !out.isEmpty; continue }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.append(("a"..."z").contains(s) ? Unicode.Scalar(s.value - 32)! : s)
        }
        return String(out)
    }

    /// Unicode's White_Space property (PropList.txt; unchanged since Unicode 6.3), listed so
    /// that it does not depend on the platform's Unicode tables.
    static func isCourseWhitespace(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x09...0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: true
        default: false
        }
    }

    /// C0 and C1 controls and DEL (General_Category Cc), which a course never contains.
    static func isControl(_ s: Unicode.Scalar) -> Bool { s.value < 0x20 || (0x7F...0x9F).contains(s.value) }

    public init(body: [UInt8]) throws(RecordError) {
        let f = try FieldList.decode(body, known: Self.bodyTags, what: "profile")
        guard f.fields.contains(where: { $0.tag != Self.workTag }) else {
            throw RecordError(.invalidBody, f.fields.isEmpty ? "profile edit changes no field"
                                                            : "profile edit changes no field (proof of work alone is not an edit)")
        }
        try self.init(fieldValues: f.fields.map { ($0.tag, $0.value) })
    }

    /// Builds a card from (field tag, value bytes) pairs — a body, or the winning register values.
    public init(fieldValues: [(UInt8, [UInt8])]) throws(RecordError) {
        var f = FieldList()
        for (tag, value) in fieldValues { f.set(tag, value) }
        let what = "profile"
        name = try f.text(Field.name.rawValue, "name", maxBytes: Self.maxNameBytes, what: what)
        if let r = try f.text(Field.role.rawValue, "role", maxBytes: 16, what: what) {
            guard let role = Role(rawValue: r) else { throw RecordError(.invalidBody, "profile role '\(r)' is neither student nor tutor") }
            self.role = role
        }
        bio = try f.text(Field.bio.rawValue, "bio", maxBytes: Self.maxBioBytes, what: what)
        if let v = f[Field.courses.rawValue] { courses = try Self.decodeCourses(v) }
        wage = try f.u64(Field.wage.rawValue, "wage", what: what)
        budget = try f.u64(Field.budget.rawValue, "budget", what: what)
        availability = try f.text(Field.availability.rawValue, "availability", maxBytes: Self.maxAvailabilityBytes, what: what)
        if let v = f[Field.photo.rawValue] { photos = try PhotoRef.decodeList(v) }
        work = try f.u64(Self.workTag, "proof of work", what: what)
        if let v = f[Field.slots.rawValue] { slots = try WeeklySlots(encoded: v) }
        if let g = try f.text(Field.gender.rawValue, "gender", maxBytes: Self.maxGenderBytes, what: what) {
            gender = try Self.checkWord(g, "gender")
        }
        if let v = f[Field.languages.rawValue] {
            languages = try Self.decodeWords(v, "language", max: Self.maxLanguages, maxBytes: Self.maxLanguageBytes)
        }
        if let a = try f.text(Field.area.rawValue, "area", maxBytes: Self.maxAreaBytes, what: what) {
            guard a == Self.normalizeSpaces(a), !a.contains("\n") else {
                throw RecordError(.invalidBody, "profile area is not in canonical form (single spaces, none at the ends)")
            }
            area = a
        }
        if let v = f[Field.age.rawValue] {
            guard v.count <= 1 else { throw RecordError(.malformed, "profile age must be 0 or 1 byte, is \(v.count)") }
            if let a = v.first {
                guard Self.ageRange.contains(a) else { throw RecordError(.invalidBody, "profile age \(a) is outside \(Self.ageRange)") }
                age = .some(a)
            } else { age = .some(nil) }
        }
        if let v = f[Field.sign.rawValue] {
            guard v.count <= 1 else { throw RecordError(.malformed, "profile sign must be 0 or 1 byte, is \(v.count)") }
            if let b = v.first {
                guard let sign = SunSign(rawValue: b) else { throw RecordError(.invalidBody, "profile sign \(b) is not 0 (Aries) to 11 (Pisces)") }
                self.sign = .some(sign)
            } else { sign = .some(nil) }
        }
        if let v = f[Field.preferences.rawValue] { preferences = try Preferences(encoded: v) }
        if let v = f[Field.paused.rawValue] {
            guard v.count == 1, v[0] <= 1 else { throw RecordError(.malformed, "profile paused must be one byte, 0 or 1") }
            paused = v[0] == 1
        }
        if let v = f[Field.membership.rawValue] { membership = try MembershipCertificate(encoded: v) }
    }

    /// A card is valid only at its seq: the proof-of-work field belongs in an account's first
    /// record alone (one meaning per byte string: a later edit has nothing to prove).
    public static func validate(body: [UInt8], seq: UInt64) throws(RecordError) {
        let card = try ProfileCard(body: body)
        guard card.work == nil || seq == 1 else {
            throw RecordError(.invalidBody, "a profile edit at seq \(seq) carries a proof-of-work field; only an account's first record (seq 1) may")
        }
    }

    /// A device's records never carry proof of work: only the account's first record does.
    public static func validate(record: Record) throws(RecordError) {
        guard !record.isDeviceSigned || workNonce(inBody: record.body) == nil else {
            throw RecordError(.invalidBody, "a card signed by a device key carries a proof-of-work field; only the account's own first record (seq 1) may")
        }
        if let certificate = membership(inBody: record.body), certificate.account != record.account {
            throw RecordError(.invalidBody, "the card's membership certificate is for account \(certificate.account.shortID)…, not this card's \(record.account.shortID)…")
        }
    }

    /// The proof-of-work nonce of a card body, without decoding the rest (the body was
    /// validated already); nil when the field is absent or the body does not decode.
    public static func workNonce(inBody body: [UInt8]) -> UInt64? {
        guard let f = try? FieldList.decode(body, known: bodyTags, what: "profile") else { return nil }
        return try? f.u64(workTag, "proof of work", what: "profile")
    }

    /// The membership certificate of a card body, without decoding the rest (the body was
    /// validated already); nil when the field is absent or the body does not decode.
    public static func membership(inBody body: [UInt8]) -> MembershipCertificate? {
        guard let f = try? FieldList.decode(body, known: bodyTags, what: "profile"),
              let v = f[Field.membership.rawValue] else { return nil }
        return try? MembershipCertificate(encoded: v)
    }

    /// The fields this edit sets, as register writes.
    public var fieldList: FieldList {
        var f = FieldList()
        if let name { f.set(Field.name.rawValue, text: name) }
        if let role { f.set(Field.role.rawValue, text: role.rawValue) }
        if let bio { f.set(Field.bio.rawValue, text: bio) }
        if let courses {
            var w = ByteWriter()
            for c in courses { let u = Array(c.utf8); w.u8(UInt8(truncatingIfNeeded: u.count)); w.raw(u) }
            f.set(Field.courses.rawValue, w.bytes)
        }
        if let wage { f.set(Field.wage.rawValue, u64: wage) }
        if let budget { f.set(Field.budget.rawValue, u64: budget) }
        if let availability { f.set(Field.availability.rawValue, text: availability) }
        if let photos { f.set(Field.photo.rawValue, PhotoRef.encodeList(photos)) }
        if let work { f.set(Self.workTag, u64: work) }
        if let slots { f.set(Field.slots.rawValue, slots.encoded) }
        if let gender { f.set(Field.gender.rawValue, text: gender) }
        if let languages { f.set(Field.languages.rawValue, Self.encodeWords(languages)) }
        if let area { f.set(Field.area.rawValue, text: area) }
        if let age { f.set(Field.age.rawValue, age.map { [$0] } ?? []) }
        if let sign { f.set(Field.sign.rawValue, sign.map { [$0.rawValue] } ?? []) }
        if let preferences { f.set(Field.preferences.rawValue, preferences.encoded) }
        if let paused { f.set(Field.paused.rawValue, [paused ? 1 : 0]) }
        if let membership { f.set(Field.membership.rawValue, membership.encoded) }
        return f
    }

    public var body: [UInt8] { fieldList.encoded }

    /// The main photo (the first of the list); nil when the card names none or leaves them as they are.
    public var mainPhoto: PhotoRef? { photos?.first }

    /// Checks every value against its limit before encoding, so a value that does not fit is
    /// refused with a clear error rather than truncated (a course longer than 255 bytes would
    /// otherwise not fit its length byte). `RecordWriter.profile` calls it.
    public func validated() throws(RecordError) -> ProfileCard {
        if let courses {
            guard courses.count <= Self.maxCourses else {
                throw RecordError(.invalidBody, "\(courses.count) courses given; at most \(Self.maxCourses) allowed")
            }
            for c in courses {
                guard !c.isEmpty, c.utf8.count <= Self.maxCourseBytes else {
                    throw RecordError(.invalidBody, "course '\(c.prefix(40))' must be 1 to \(Self.maxCourseBytes) bytes")
                }
            }
        }
        if let languages {
            guard languages.count <= Self.maxLanguages else {
                throw RecordError(.invalidBody, "\(languages.count) languages given; at most \(Self.maxLanguages) allowed")
            }
            for l in languages where l.isEmpty || l.utf8.count > Self.maxLanguageBytes {
                throw RecordError(.invalidBody, "language '\(l.prefix(40))' must be 1 to \(Self.maxLanguageBytes) bytes")
            }
        }
        if let genders = preferences?.genders, genders.count > Preferences.maxGenders {
            throw RecordError(.invalidBody, "\(genders.count) preferred genders given; at most \(Preferences.maxGenders) allowed")
        }
        // Everything else is checked by decoding the encoding (its limits are all below what
        // the encoding can represent).
        return try ProfileCard(body: body)
    }

    static func decodeCourses(_ v: [UInt8]) throws(RecordError) -> [String] {
        var r = ByteReader(v)
        var out: [String] = []
        while !r.isAtEnd {
            let n = Int(try r.u8("course length"))
            let raw = try r.raw(n, "course")
            guard let c = String(validating: raw, as: UTF8.self) else { throw RecordError(.malformed, "a course name is not valid UTF-8") }
            guard !c.isEmpty, n <= maxCourseBytes else { throw RecordError(.invalidBody, "course names are 1 to \(maxCourseBytes) bytes") }
            guard !c.unicodeScalars.contains(where: { isControl($0) && !isCourseWhitespace($0) }) else {
                throw RecordError(.invalidBody, "a course name contains control characters")
            }
            // Compared as bytes, not as Swift strings (which compare by canonical equivalence).
            guard Array(c.utf8) == Array(normalizeCourse(c).utf8), !c.contains(",") else {
                throw RecordError(.invalidBody, "course '\(c)' is not in canonical form (single spaces, none at the ends, ASCII upper case, no commas)")
            }
            guard !out.contains(where: { Array($0.utf8) == raw }) else { throw RecordError(.invalidBody, "course '\(c)' is listed twice") }
            out.append(c)
        }
        guard out.count <= maxCourses else { throw RecordError(.invalidBody, "at most \(maxCourses) courses allowed") }
        return out
    }
}
