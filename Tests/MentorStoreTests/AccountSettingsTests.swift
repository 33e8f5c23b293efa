import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// `account_settings` (migration 13): a value per (account, key), removed with nil, and a
/// replica of schema 12 upgraded in place.
@Suite struct AccountSettingsTests {
    let ana = keyPair(1).publicKey.key, ben = keyPair(2).publicKey.key

    @Test func aValueIsKeptPerAccountAndKeyAndNilRemovesIt() throws {
        let replica = try memoryReplica()
        #expect(try replica.accountSettings(of: ana).isEmpty)
        try replica.setAccountSetting(ana, key: "notify.match", value: "false")
        try replica.setAccountSetting(ana, key: "notify.match", value: "true")
        try replica.setAccountSetting(ana, key: "feed.min_age", value: "21")
        try replica.setAccountSetting(ben, key: "notify.match", value: "false")
        #expect(try replica.accountSettings(of: ana) == ["notify.match": "true", "feed.min_age": "21"])
        #expect(try replica.accountSettings(of: ben) == ["notify.match": "false"])
        try replica.setAccountSetting(ana, key: "notify.match", value: nil)
        try replica.setAccountSetting(ana, key: "never.set", value: nil)
        #expect(try replica.accountSettings(of: ana) == ["feed.min_age": "21"])
    }

    @Test func aSchema12ReplicaGetsTheTableAndKeepsItsRecords() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        do {
            let replica = try Replica(path: path, settings: testSettings())
            var w = RecordWriter(keys: keyPair(1))
            _ = try replica.applyOne(try w.profile(ProfileCard(name: "Ana"), at: 1000))
            try replica.run { db throws(StoreError) in try db.executeScript(undoMigration13 + "PRAGMA user_version = 12;") }
            try replica.close()
        }
        let upgraded = try Replica(path: path, settings: testSettings())
        #expect(try upgraded.read { db throws(StoreError) in try ReplicaSchema.migrator.currentVersion(db) } == ReplicaSchema.migrator.latestVersion)
        #expect(try upgraded.card(of: ana)?.card.name == "Ana")
        try upgraded.setAccountSetting(ana, key: "notify.message", value: "false")
        #expect(try upgraded.accountSettings(of: ana) == ["notify.message": "false"])
    }
}
