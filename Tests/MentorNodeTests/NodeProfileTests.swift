import Foundation
import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

/// Issue 16 through the node's API: the card's new fields from `profile.set`, the birth date and
/// `min_age`, the settings that change the card, and the feed's default filters. The test clock
/// starts at 2027-01-15.
@Suite struct NodeProfileTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String, _ role: String, _ extra: [String: JSON] = [:]) throws {
        var params: [String: JSON] = ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": .string(role)]
        params.merge(extra) { _, new in new }
        try t.call(uid, "account.signup", params)
    }

    @Test func profileSetPutsTheNewFieldsInCanonicalFormAndBadValuesChangeNothing() throws {
        let t = try TestNode { $0.areas = ["Library", "Science Hall"] }
        try signup(t, ana, "Ana", "student")
        let card = try t.call(ana, "profile.set", ["slots": "wed 9-12, Mon 14-17, Mon 16-18", "gender": " Non  Binary ",
                                                   "languages": ["English", "english", "Tupi "], "area": "science hall",
                                                   "preferences": ["genders": ["Woman"], "overlapHours": 3, "maxWage": 30]])
        #expect(card["slots"] == "Mon 14-18, Wed 9-12" && card["gender"] == "non binary" && card["languages"] == ["english", "tupi"])
        #expect(card["area"] == "Science Hall", "the config's spelling")
        #expect(card["preferences"] == ["genders": ["woman"], "overlapHours": 3, "maxWage": 30, "minBudget": nil])
        let before = try t.call(ana, "profile.show")
        let bad: [([String: JSON], String)] = [
            (["slots": "Funday 25-26"], "slots: \"Funday\" is not a day"),
            (["slots": "Mon 9-8"], "ends before it starts"),
            (["area": "Mars"], "\"Mars\" is not an area of this campus; choose one of: Library, Science Hall"),
            (["languages": .array((0..<9).map { .string("l\($0)") })], "at most 8"),
            (["gender": "a,b"], "comma"),
            (["preferences": ["overlapHours": 200]], "overlapHours must be 0 to 168"),
            (["preferences": ["maxWage": -3]], "maxWage must be 0 or more"),
            (["birthdate": "2004-02-30"], "not a day of the calendar"),
            (["birthdate": "2030-01-01"], "is in the future"),
            (["name": "Ana B", "slots": "Mon 25-26"], "25 is not an hour"),
        ]
        for (params, reason) in bad {
            let e = t.error(ana, "profile.set", params)
            #expect(e?.code == RPCError.Code.invalidValue.rawValue && e?.message.contains(reason) == true, "\(params): \(String(describing: e))")
        }
        #expect(try t.call(ana, "profile.show") == before, "no refused edit changed the card")
    }

    @Test func minAgeRefusesASignupWithoutABirthDateOrBelowItAndMakesNothing() throws {
        let t = try TestNode { $0.minAge = 18 }
        let none = t.error(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(none?.code == RPCError.Code.invalidValue.rawValue && none?.message.contains("--birthdate YYYY-MM-DD") == true)
        let young = t.error(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "birthdate": "2010-01-16"])
        #expect(young?.code == RPCError.Code.notAllowed.rawValue && young?.message.contains("you are 16") == true, "\(String(describing: young))")
        #expect(t.error(ana, "account.whoami")?.code == RPCError.Code.noAccount.rawValue)
        let justEighteen = "2009-01-15"
        try signup(t, ana, "Ana", "student", ["birthdate": .string(justEighteen)])
        #expect(try t.call(ana, "profile.show")["age"] == 18, "18 on the day")
        #expect(try t.node.replica.accountSettings(of: #require(t.node.localKeys.first))["birthdate"] == "2009-01-15", "kept on this node")
    }

    @Test func settingsThatChangeTheCardWriteAnEditAndAFailedOneIsPutBack() throws {
        let t = try TestNode(domains: ["uni.edu"])
        try signup(t, ana, "Ana", "student")
        try t.call(ana, "settings.set", ["key": "paused", "value": "true"])
        #expect(try t.call(ana, "profile.show")["paused"] == true)
        try t.call(ana, "settings.set", ["key": "paused", "value": "false"])
        #expect(try t.call(ana, "profile.show")["paused"] == .null)
        let noDate = t.error(ana, "settings.set", ["key": "show_sign", "value": "true"])
        #expect(noDate?.code == RPCError.Code.notAllowed.rawValue && noDate?.message.contains("set it first") == true)
        let shown = try t.call(ana, "settings.show")["settings"]?.arrayValue?.first { $0["key"] == "show_sign" }
        #expect(shown?["value"] == "false", "the refused value was put back")
        try t.call(ana, "settings.set", ["key": "birthdate", "value": "2004-05-17"])
        #expect(try t.call(ana, "profile.show")["age"] == 22 && t.call(ana, "profile.show")["sign"] == .null)
        try t.call(ana, "settings.set", ["key": "show_sign", "value": "true"])
        #expect(try t.call(ana, "profile.show")["sign"] == "Taurus")
        try t.call(ana, "profile.set", ["birthdate": ""])
        let cleared = try t.call(ana, "profile.show")
        #expect(cleared["age"] == .null && cleared["sign"] == .null, "forgetting the date clears both: \(cleared)")
        // The e-mail: checked against the campus domains, the account's row follows.
        let gmail = t.error(ana, "settings.set", ["key": "email", "value": "ana@gmail.com"])
        #expect(gmail?.message.contains("email_domains") == true)
        #expect(try t.call(ana, "account.whoami")["email"] == "ana@uni.edu")
        try t.call(ana, "settings.set", ["key": "email", "value": "ana.lima@cs.uni.edu"])
        #expect(try t.call(ana, "account.whoami")["email"] == "ana.lima@cs.uni.edu")
    }

    /// A card is public: a user with no account on this node reads it too, without a score.
    @Test func anyoneMayReadACardTheScoreIsForTheCallersAccount() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana", "student")
        try signup(t, ben, "Ben", "tutor")
        let benID = try #require(try t.call(ben, "account.whoami")["id"]?.stringValue)
        let stranger = try t.call(4242, "profile.show", ["id": .string(benID)])
        #expect(stranger["name"] == "Ben" && stranger["score"] == .null && stranger["matches"] == .null)
        #expect(try t.call(ana, "profile.show", ["id": .string(benID)])["score"]?.intValue != nil)
        #expect(t.error(4242, "profile.show")?.code == RPCError.Code.noAccount.rawValue, "one's own card needs an account")
    }

    @Test func theAgeFollowsABirthdayThatPasses() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana", "student", ["birthdate": "2007-01-17"])
        #expect(try t.call(ana, "profile.show")["age"] == 19)
        t.wall.advance(days: 2)
        #expect(try t.call(ana, "profile.show")["age"] == 20, "the node wrote a new edit when asked after the birthday")
    }

    @Test func defaultFiltersApplyWhereTheRequestLeavesOneOut() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana", "student")
        try signup(t, ben, "Ben", "tutor")
        try t.call(ben, "profile.set", ["wage": 20, "gender": "man"])
        try signup(t, cy, "Cy", "tutor")
        try t.call(cy, "profile.set", ["wage": 40, "gender": "woman"])
        func names(_ params: [String: JSON] = [:]) throws -> [String] {
            (try t.call(ana, "feed", params)["cards"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }.sorted()
        }
        #expect(try names() == ["Ben", "Cy"])
        try t.call(ana, "settings.set", ["key": "feed.max_wage", "value": "25"])
        #expect(try names() == ["Ben"])
        #expect(try names(["maxWage": 50]) == ["Ben", "Cy"], "a filter given wins")
        #expect(try names(["noDefaults": true]) == ["Ben", "Cy"])
        try t.call(ana, "settings.set", ["key": "feed.gender", "value": "Woman"])
        #expect(try names(["maxWage": 50]) == ["Cy"])
        let bad = t.error(ana, "settings.set", ["key": "feed.available", "value": "Funday"])
        #expect(bad?.message.contains("a day, optionally with an hour") == true)
        try t.call(ana, "settings.set", ["key": "feed.available", "value": "tue-9:30"])
        let stored = try t.call(ana, "settings.show")["settings"]?.arrayValue?.first { $0["key"] == "feed.available" }
        #expect(stored?["value"] == "Tue-9:30", "stored canonical")
        #expect(try names(["noDefaults": true]) == ["Ben", "Cy"] && names() == [], "nobody gives slots")
    }
}
