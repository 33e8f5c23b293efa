import MentorAPI
import MentorCore
import MentorStore

/// Profiles worth matching on (issue 16): the card's fields 10–17 from `profile.set`, the
/// compatibility score on `profile.show` and the feed, and the feed's filters. On the node's queue.
extension Node {
    /// Checks and puts in canonical form the request's slots, gender, languages, area and
    /// preferences; each bad value is refused naming the field, before anything is written.
    func setProfileFields(_ r: ProfileSetRequest, on card: inout ProfileCard) throws {
        if let text = r.slots {
            do { card.slots = try WeeklySlots.parse(text) } catch {
                throw RPCError(.invalidValue, "slots: \(error)")
            }
        }
        if let g = r.gender { card.gender = try word(g, "gender", maxBytes: ProfileCard.maxGenderBytes, allowEmpty: true) }
        if let list = r.languages {
            var seen = Set<String>()
            let words = try list.map { try word($0, "language", maxBytes: ProfileCard.maxLanguageBytes, allowEmpty: false) }
            card.languages = words.filter { seen.insert($0).inserted }
            guard card.languages?.count ?? 0 <= ProfileCard.maxLanguages else {
                throw RPCError(.invalidValue, "\(list.count) languages given; at most \(ProfileCard.maxLanguages)")
            }
        }
        if let a = r.area { card.area = try area(a) }
        if let p = r.preferences { card.preferences = try preferences(p) }
    }

    func word(_ text: String, _ name: String, maxBytes: Int, allowEmpty: Bool) throws -> String {
        let w = ProfileCard.normalizeWord(text)
        guard allowEmpty || !w.isEmpty else { throw RPCError(.invalidValue, "a \(name) is empty; give a name, e.g. english") }
        guard w.utf8.count <= maxBytes else { throw RPCError(.invalidValue, "the \(name) \"\(w.prefix(40))\" is over \(maxBytes) bytes") }
        guard !w.contains(","), !w.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw RPCError(.invalidValue, "the \(name) \(w.debugDescription) contains a comma or a control character; give one \(name) per entry")
        }
        return w
    }

    /// An area in canonical form; where the node's config lists areas, one of them (matched
    /// without regard to ASCII case, written as the list spells it).
    func area(_ text: String) throws -> String {
        let a = ProfileCard.normalizeSpaces(text)
        guard !a.unicodeScalars.contains(where: { $0.value < 0x20 }) else { throw RPCError(.invalidValue, "the area contains a control character") }
        guard a.utf8.count <= ProfileCard.maxAreaBytes else { throw RPCError(.invalidValue, "the area is over \(ProfileCard.maxAreaBytes) bytes") }
        guard !a.isEmpty, !config.areas.isEmpty else { return a }
        guard let known = config.areas.first(where: { $0.lowercased() == a.lowercased() }) else {
            throw RPCError(.invalidValue, "\"\(a)\" is not an area of this campus; choose one of: \(config.areas.joined(separator: ", "))")
        }
        return known
    }

    func preferences(_ p: CardPreferences) throws -> Preferences {
        var out = Preferences()
        if let genders = p.genders {
            var seen = Set<String>()
            out.genders = try genders.map { try word($0, "gender", maxBytes: ProfileCard.maxGenderBytes, allowEmpty: false) }.filter { seen.insert($0).inserted }
            guard out.genders.count <= Preferences.maxGenders else {
                throw RPCError(.invalidValue, "at most \(Preferences.maxGenders) preferred genders")
            }
        }
        if let h = p.overlapHours {
            guard (0...Int64(Preferences.maxOverlapHours)).contains(h) else {
                throw RPCError(.invalidValue, "overlapHours must be 0 to \(Preferences.maxOverlapHours) hours a week, not \(h)")
            }
            out.minOverlapHours = h == 0 ? nil : UInt64(h)
        }
        for (name, value, keyPath) in [("maxWage", p.maxWage, \Preferences.maxWage), ("minBudget", p.minBudget, \Preferences.minBudget)] {
            guard let v = value else { continue }
            guard v >= 0 else { throw RPCError(.invalidValue, "\(name) must be 0 or more, not \(v)") }
            out[keyPath: keyPath] = UInt64(v)
        }
        return out
    }

    // MARK: Age

    /// A birth date as given: a real date, not in the future, at most 120 years ago.
    func checkBirthdate(_ text: String) throws -> BirthDate {
        let date: BirthDate
        do { date = try BirthDate(parsing: text.trimmingCharacters(in: .whitespaces)) } catch {
            throw RPCError(.invalidValue, "birthdate: \(error)")
        }
        let age = date.age(at: config.now())
        guard age >= 0 else { throw RPCError(.invalidValue, "birthdate \(date) is in the future") }
        guard age <= Int(ProfileCard.ageRange.upperBound) else { throw RPCError(.invalidValue, "birthdate \(date) is over \(ProfileCard.ageRange.upperBound) years ago; check the year") }
        return date
    }

    /// The age a card publishes: whole years, or none below the card's range (under 13).
    static func publishedAge(_ date: BirthDate, at now: UInt64) -> UInt8? {
        let age = date.age(at: now)
        return ProfileCard.ageRange.contains(UInt8(clamping: max(0, age))) ? UInt8(age) : nil
    }

    // MARK: Settings that change the card

    /// The stored birth date of `account` (the setting `birthdate`), if any.
    func birthdate(of account: PublicKey) throws -> BirthDate? {
        try replica.accountSettings(of: account)["birthdate"].flatMap { try? BirthDate(parsing: $0) }
    }

    func showsSign(_ account: PublicKey) throws -> Bool { try replica.accountSettings(of: account)["show_sign"] == "true" }

    /// `paused`, `birthdate` or `show_sign` changed (the new value is stored): the card says so.
    func cardSettingChanged(_ change: SettingChange) throws {
        var card = ProfileCard()
        switch change.key {
        case "paused":
            card.paused = change.new == "true"
        case "birthdate":
            let date = try change.new.map(checkBirthdate)
            card.age = .some(date.flatMap { Self.publishedAge($0, at: config.now()) })
            if try showsSign(change.account) { card.sign = .some(date?.sign) }
        case "show_sign":
            let on = change.new == "true"
            guard let date = try birthdate(of: change.account) else {
                if on { throw RPCError(.notAllowed, "the sun sign comes from your birth date: set it first (mentormate settings set birthdate YYYY-MM-DD)") }
                return
            }
            card.sign = .some(on ? date.sign : nil)
        default:
            return
        }
        try writeCardEdit(change.uid, change.account, card)
    }

    /// `email` changed: it must pass this node's campus domains; the account's row follows.
    func emailChanged(_ change: SettingChange) throws {
        guard let email = change.new else {
            throw RPCError(.invalidValue, "the e-mail address cannot be unset; give the new address instead")
        }
        try checkEmail(email)
        try replica.setNodeAccountEmail(uid: change.uid, email: email)
    }

    /// Writes an edit of the caller's card that supersedes every current entry.
    func writeCardEdit(_ uid: UInt32, _ account: PublicKey, _ card: ProfileCard) throws {
        let seen = try replica.cardClock(of: account)
        try write(uid) { w, now throws(RecordError) in try w.profile(card, clock: seen, at: now) }
    }

    /// `profile.set`'s `birthdate`: stored (or forgotten with ""), and the edit gets the age and,
    /// if published, the sign.
    func setBirthdate(_ text: String, uid: UInt32, account: PublicKey, on card: inout ProfileCard) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let date = trimmed.isEmpty ? nil : try checkBirthdate(trimmed)
        card.age = .some(date.flatMap { Self.publishedAge($0, at: config.now()) })
        if try showsSign(account) || date == nil { card.sign = .some(date?.sign) }
        try replica.setAccountSetting(account, key: "birthdate", value: date?.description)
    }

    /// A birthday passed since the card's age was written: a new edit says the new age. Run at
    /// unlock and when the account asks for its feed or its card.
    func refreshAge(_ uid: UInt32) {
        // Once per UTC day per account: a feed or card request does not read the settings each time.
        let day = config.now() / 86_400_000
        guard ageCheckedDay[uid] != day, let account = writers[uid]?.account else { return }
        ageCheckedDay[uid] = day
        guard let date = try? birthdate(of: account) else { return }
        let age = Self.publishedAge(date, at: config.now())
        guard let indexed = feedIndex.candidates[account], indexed.age != age else { return }
        var card = ProfileCard()
        card.age = .some(age)
        do { try writeCardEdit(uid, account, card) } catch {
            logger.info("the card's age could not be brought up to date; tried again later", ["uid": "\(uid)", "error": "\(error)"])
        }
    }

    // MARK: The score

    /// The caller's compatibility with `other`: the score and its parts; nil when either has
    /// no role or both have the same one (the score ranks the other side).
    func compatibility(of me: PublicKey, with other: PublicKey) -> (score: Int64, parts: [CompatibilityPart])? {
        let index = feedIndex
        guard let v = index.candidates[me], let c = index.candidates[other], let a = v.role, let b = c.role, a != b else { return nil }
        let parts = Compatibility.parts(viewer: v, candidate: c, course: index.courses.name, gender: index.genders.name)
        return (Int64(Compatibility.score(viewer: v, candidate: c)), parts.map(Self.apiPart))
    }

    static func apiPart(_ p: Compatibility.Part) -> CompatibilityPart {
        CompatibilityPart(part: p.kind.rawValue, points: (p.points * 10).rounded() / 10, max: Int64(p.kind.weight), reason: p.reason)
    }

    /// The caller's own card adds its counts: current matches, and likes received that it has
    /// not answered (not liked back, not passed, not blocked) — how many, never who.
    func ownCounts(_ me: PublicKey) throws -> (matches: Int64, pendingLikes: Int64) {
        let pairs = try replica.pairSummaries(of: me)
        let passed = try replica.passes(of: me), blocked = try replica.blockedAccounts(of: me)
        let matches = pairs.filter { $0.matched && !blocked.contains($0.other) }.count
        let pending = pairs.filter {
            $0.theyLike && !$0.iLike && !$0.matched && $0.unmatchedBy == nil && !passed.contains($0.other) && !blocked.contains($0.other)
        }.count
        return (Int64(matches), Int64(pending))
    }

    // MARK: Filters

    /// The request with the caller's default filters (settings `feed.*`) where it left one out.
    func withDefaults(_ request: FeedRequest, _ account: PublicKey) throws -> FeedRequest {
        guard request.noDefaults != true else { return request }
        let stored = try replica.accountSettings(of: account)
        var r = request
        func number(_ key: String) -> Int64? { stored[key].flatMap { Int64($0) } }
        if r.available == nil { r.available = stored["feed.available"] }
        if r.maxWage == nil { r.maxWage = number("feed.max_wage") }
        if r.minBudget == nil { r.minBudget = number("feed.min_budget") }
        if r.nearby == nil, stored["feed.nearby"] == "true" { r.nearby = true }
        if r.gender == nil { r.gender = stored["feed.gender"] }
        if r.minAge == nil { r.minAge = number("feed.min_age") }
        if r.maxAge == nil { r.maxAge = number("feed.max_age") }
        if r.minScore == nil { r.minScore = number("feed.min_score") }
        return r
    }

    /// The feed's filters from the request.
    func feedFilter(_ r: FeedRequest) throws -> Feed.Filter {
        var f = Feed.Filter()
        let index = feedIndex
        if let c = r.course {
            // A course nobody lists matches nothing.
            f.course = index.courses.lookup(ProfileCard.normalizeCourse(c)) ?? -1
        }
        if let text = r.available {
            do { f.available = try WeeklySlots.parseMoment(text) } catch {
                throw RPCError(.invalidValue, "available: \(error)")
            }
        }
        for (name, value, keyPath) in [("maxWage", r.maxWage, \Feed.Filter.maxWage), ("minBudget", r.minBudget, \Feed.Filter.minBudget)] {
            guard let v = value else { continue }
            guard v >= 0 else { throw RPCError(.invalidValue, "\(name) must be 0 or more, not \(v)") }
            f[keyPath: keyPath] = UInt64(v)
        }
        f.nearby = r.nearby ?? false
        if let g = r.gender {
            let w = ProfileCard.normalizeWord(g)
            guard !w.isEmpty else { throw RPCError(.invalidValue, "gender is empty; give the gender to show, e.g. woman") }
            f.gender = index.genders.lookup(w) ?? -1
        }
        for (name, value, keyPath) in [("minAge", r.minAge, \Feed.Filter.minAge), ("maxAge", r.maxAge, \Feed.Filter.maxAge)] {
            guard let v = value else { continue }
            guard (0...150).contains(v) else { throw RPCError(.invalidValue, "\(name) must be an age from 0 to 150, not \(v)") }
            f[keyPath: keyPath] = UInt8(v)
        }
        if let lo = f.minAge, let hi = f.maxAge, lo > hi {
            throw RPCError(.invalidValue, "minAge \(lo) is above maxAge \(hi); nobody could pass")
        }
        if let s = r.minScore {
            guard (0...100).contains(s) else { throw RPCError(.invalidValue, "minScore must be 0 to 100, not \(s)") }
            f.minScore = UInt8(s)
        }
        return f
    }
}

/// The card's fields 10–17 as the API shows them (`apiCard`).
func apiCardFields(_ c: ProfileCard, into card: inout Card) {
    card.slots = c.slots.flatMap { $0.isEmpty ? nil : $0.description }
    card.gender = c.gender.flatMap { $0.isEmpty ? nil : $0 }
    card.languages = c.languages.flatMap { $0.isEmpty ? nil : $0 }
    card.area = c.area.flatMap { $0.isEmpty ? nil : $0 }
    card.age = (c.age ?? nil).map { Int64($0) }
    card.sign = (c.sign ?? nil).map(\.description)
    card.preferences = c.preferences.flatMap(apiPreferences)
    card.paused = c.paused == true ? true : nil
}

/// A preferences register as the API shows it; nil when nothing is stated.
func apiPreferences(_ p: Preferences) -> CardPreferences? {
    guard !p.isEmpty else { return nil }
    return CardPreferences(genders: p.genders.isEmpty ? nil : p.genders, overlapHours: p.minOverlapHours.map { Int64(clamping: $0) },
                           maxWage: p.maxWage.map { Int64(clamping: $0) }, minBudget: p.minBudget.map { Int64(clamping: $0) })
}
