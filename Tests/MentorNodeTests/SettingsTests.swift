import Foundation
import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

/// The per-account settings: the registry's keys and kinds, and `settings.show`/`settings.set`
/// through the node's API (docs/API.md, "Settings").
@Suite struct SettingsTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002

    // MARK: The registry

    @Test func everyKeyIsDottedLowerCaseUniqueDescribedAndItsDefaultIsAcceptedByItsKind() {
        let settings = SettingsRegistry.standard.settings
        #expect(Set(settings.map(\.key)).count == settings.count)
        for s in settings {
            #expect(s.key.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "." || $0 == "_" }, "\(s.key)")
            #expect(!s.key.hasPrefix(".") && !s.key.hasSuffix(".") && !s.key.contains(".."), "\(s.key)")
            #expect(!s.description.isEmpty && !s.description.contains("\n"), "\(s.key)")
            if let d = s.defaultValue { #expect(s.kind.canonical(d) == d, "\(s.key)'s default \(d) is not canonical for its kind") }
        }
        #expect(Set(["notify.match", "notify.message", "notify.unmatch"]).isSubset(of: Set(settings.map(\.key))))
    }

    @Test func boolTakesTrueFalseOnOffYesNoInAnyCaseAndNothingElse() {
        for yes in ["true", "on", "yes", "TRUE", " Yes "] { #expect(SettingKind.bool.canonical(yes) == "true", "\(yes)") }
        for no in ["false", "off", "no", "Off"] { #expect(SettingKind.bool.canonical(no) == "false", "\(no)") }
        for bad in ["", "1", "0", "maybe", "truee", "y"] { #expect(SettingKind.bool.canonical(bad) == nil, "\(bad)") }
    }

    @Test func unsignedDateTextAndChoiceKindsCheckWhatTheyTake() {
        let wage = SettingKind.unsigned(0...500)
        #expect(wage.canonical("030") == "30" && wage.canonical("500") == "500")
        for bad in ["-3", "501", "3.5", "", "٣", "1e3"] { #expect(wage.canonical(bad) == nil, "\(bad)") }
        #expect(SettingKind.date.canonical("2004-02-29") == "2004-02-29")
        for bad in ["2003-02-29", "1900-02-29", "2004-13-01", "2004-1-01", "04-01-01", "2004-04-31", "2004/04/01"] {
            #expect(SettingKind.date.canonical(bad) == nil, "\(bad)")
        }
        #expect(SettingKind.date.canonical("2000-02-29") == "2000-02-29")
        let text = SettingKind.text(maxBytes: 8)
        #expect(text.canonical("  hi  ") == "hi" && text.canonical("") == nil && text.canonical("123456789") == nil && text.canonical("a\u{1B}b") == nil)
        let gender = SettingKind.choice(["woman", "man", "nonbinary"])
        #expect(gender.canonical("Man") == "man" && gender.canonical("x") == nil)
        #expect(gender.accepts == "one of woman, man, nonbinary")
    }

    @Test func aRefusedValueNamesTheKeyTheValueAndWhatIsAccepted() {
        let setting = Setting("notify.match", .bool, default: "true", "d")
        #expect(throws: RPCError(.invalidValue, "notify.match: \"maybe\" is not accepted; give true or false (also on/off, yes/no)")) {
            try setting.validate("maybe")
        }
    }

    // MARK: Through the node

    @Test func showListsEveryKeyAtItsDefaultWithItsDescription() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let settings = try t.call(ana, "settings.show")["settings"]?.arrayValue ?? []
        #expect(settings.map { $0["key"]?.stringValue } == SettingsRegistry.standard.settings.map(\.key))
        let match = try #require(settings.first { $0["key"] == "notify.match" })
        #expect(match == ["key": "notify.match", "value": "true", "isDefault": true, "defaultValue": "true", "kind": "bool",
                          "accepts": "true or false (also on/off, yes/no)",
                          "description": "`mentormate notify` shows a notification for a new match."])
    }

    @Test func setStoresTheCanonicalValueUnsetAndTheDefaultGoBack() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let set = try t.call(ana, "settings.set", ["key": "notify.message", "value": "OFF"])
        #expect(set["value"] == "false" && set["isDefault"] == false)
        #expect(try value(t, ana, "notify.message") == ["false", false])
        // A JSON boolean is its text.
        #expect(try t.call(ana, "settings.set", ["key": "notify.message", "value": true])["isDefault"] == true)
        #expect(try t.node.replica.accountSettings(of: account(t, ana)).isEmpty, "the default is not stored")
        try t.call(ana, "settings.set", ["key": "notify.message", "value": "no"])
        let unset = try t.call(ana, "settings.set", ["key": "notify.message", "value": nil])
        #expect(unset["value"] == "true" && unset["isDefault"] == true)
        #expect(try t.node.replica.accountSettings(of: account(t, ana)).isEmpty)
    }

    @Test func eachAccountHasItsOwnSettings() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        try t.call(ben, "account.signup", ["email": "ben@uni.edu", "name": "Ben", "role": "tutor"])
        try t.call(ana, "settings.set", ["key": "notify.unmatch", "value": "off"])
        #expect(try value(t, ana, "notify.unmatch") == ["false", false])
        #expect(try value(t, ben, "notify.unmatch") == ["true", true])
        #expect(try t.node.queue.sync { try t.node.settingValue("notify.unmatch", uid: ana) } == "false")
        #expect(try t.node.queue.sync { try t.node.settingValue("notify.unmatch", uid: ben) } == "true")
    }

    @Test func anUnknownKeyOrABadValueIsRefusedAndChangesNothing() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        try t.call(ana, "settings.set", ["key": "notify.match", "value": "off"])
        let before = try t.call(ana, "settings.show")
        let unknown = t.error(ana, "settings.set", ["key": "notify.chat", "value": "on"])
        #expect(unknown?.code == RPCError.Code.invalidValue.rawValue)
        #expect(unknown?.message == "there is no setting \"notify.chat\"; the settings are birthdate, contact, email, feed.available, feed.gender, feed.max_age, feed.max_wage, feed.min_age, feed.min_budget, feed.min_score, feed.nearby, notify.match, notify.meetup, notify.message, notify.unmatch, paused, show_sign")
        let bad = t.error(ana, "settings.set", ["key": "notify.match", "value": "sometimes"])
        #expect(bad?.message == "notify.match: \"sometimes\" is not accepted; give true or false (also on/off, yes/no)")
        #expect(t.error(ana, "settings.set", ["key": "notify.match"])?.code == RPCError.Code.invalidParams.rawValue)
        #expect(t.error(ana, "settings.set", ["key": "notify.match", "value": "on", "extra": 1])?.code == RPCError.Code.invalidParams.rawValue)
        #expect(try t.call(ana, "settings.show") == before)
    }

    @Test func lockedLoggedOutAndMissingAccountsGetTheErrorsOtherMethodsGive() throws {
        let t = try TestNode()
        #expect(t.error(ana, "settings.show")?.code == RPCError.Code.noAccount.rawValue)
        #expect(t.error(ana, "settings.set", ["key": "notify.match", "value": "off"])?.code == RPCError.Code.noAccount.rawValue)
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student", "passphrase": "pw"])
        try t.call(ana, "account.logout")
        let locked = t.error(ana, "settings.show")
        #expect(locked == t.error(ana, "profile.set", ["bio": "x"]))
        #expect(locked?.code == RPCError.Code.locked.rawValue)
        #expect(t.error(ana, "settings.set", ["key": "notify.match", "value": "off"])?.code == RPCError.Code.locked.rawValue)
        // An unknown key from a locked account is still `locked`: nothing about the account is said first.
        #expect(t.error(ana, "settings.set", ["key": "nope", "value": "off"])?.code == RPCError.Code.locked.rawValue)
        #expect(try t.node.replica.accountSettings(of: account(t, ana)).isEmpty)
    }

    @Test func theHookRunsAfterASetAndItsErrorPutsTheOldValueBack() throws {
        let t = try TestNode()
        let seen = HookLog()
        t.node.queue.sync {
            t.node.settingsRegistry = SettingsRegistry([
                Setting("test.limit", .unsigned(0...100), default: nil, "d") { _, change in
                    seen.append("\(change.old ?? "nil")->\(change.new ?? "nil")")
                    if change.new == "13" { throw RPCError(.invalidValue, "13 is unlucky") }
                },
            ])
        }
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(try value(t, ana, "test.limit") == [nil, true])
        try t.call(ana, "settings.set", ["key": "test.limit", "value": "7"])
        #expect(t.error(ana, "settings.set", ["key": "test.limit", "value": "13"])?.message == "13 is unlucky")
        #expect(try value(t, ana, "test.limit") == ["7", false])
        try t.call(ana, "settings.set", ["key": "test.limit", "value": nil])
        #expect(seen.entries == ["nil->7", "7->13", "7->nil"])
        #expect(try value(t, ana, "test.limit") == [nil, true])
    }

    @Test func forgettingTheAccountRemovesItsSettings() throws {
        let t = try TestNode()
        try t.call(ana, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        let key = try account(t, ana)
        try t.call(ana, "settings.set", ["key": "notify.match", "value": "off"])
        try t.node.replica.removeNodeAccount(uid: ana)
        #expect(try t.node.replica.accountSettings(of: key).isEmpty)
    }

    // MARK: Helpers

    /// [value, isDefault] of `key` as `settings.show` gives them.
    func value(_ t: TestNode, _ uid: UInt32, _ key: String) throws -> [JSON] {
        let settings = try t.call(uid, "settings.show")["settings"]?.arrayValue ?? []
        guard let s = settings.first(where: { $0["key"]?.stringValue == key }) else { return [] }
        return [s["value"] ?? .null, s["isDefault"] ?? .null]
    }

    func account(_ t: TestNode, _ uid: UInt32) throws -> PublicKey {
        try #require(try t.node.replica.nodeAccount(uid: uid)?.account)
    }
}

/// What a test hook saw (it runs on the node's queue).
final class HookLog: @unchecked Sendable {   // `list` under `lock`
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ s: String) { lock.withLock { list.append(s) } }
    var entries: [String] { lock.withLock { list } }
}
