import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// What the node-wide storage budget reads from the replica (`StorageTotals.swift`): foreign
/// accounts and their bytes — kept by migration 10's triggers through applies, records held
/// back and compaction, and computed by the migration for a replica that had records before —
/// and whether an author is a local account's partner.
@Suite struct StorageTotalsTests {
    /// Bytes of the records and held-back records of every author but `local`, summed afresh.
    func summed(_ replica: Replica, excluding local: PublicKey) throws -> Int64 {
        try replica.run { db throws(StoreError) in
            try db.queryOne("""
                SELECT coalesce((SELECT sum(length(r.bytes)) FROM records r JOIN authors a ON a.id = r.author WHERE a.key <> ?1), 0)
                     + coalesce((SELECT sum(length(p.bytes)) FROM pending p JOIN authors a ON a.id = p.author WHERE a.key <> ?1), 0)
                """, [.blob(local.bytes)])?.int64(0) ?? -1
        }
    }

    @Test func foreignAccountsAndBytesFollowAppliesHeldRecordsAndCompaction() throws {
        let ana = keyPair(1), ben = keyPair(2), cara = keyPair(3)
        let replica = try memoryReplica(unlocking: [ana])
        let empty = try replica.foreignStorage()
        #expect(empty.accounts == 0 && empty.bytes == 0)
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben), c = RecordWriter(keys: cara)
        _ = try replica.apply(batch: [try a.profile(ProfileCard(name: "Ana", bio: "mine"), at: 1000).encoded])
        let own = try replica.foreignStorage()
        #expect(own.accounts == 0 && own.bytes == 0, "the local account is not counted")

        let benCard = try b.profile(ProfileCard(name: "Ben", bio: "first"), at: 1000)
        let benEdit = try b.profile(ProfileCard(bio: "second"), at: 2000)
        #expect(try replica.apply(batch: [benCard.encoded, benEdit.encoded]) == [.applied, .applied])
        let one = try replica.foreignStorage()
        #expect(one.accounts == 1 && one.bytes == Int64(benCard.encoded.count + benEdit.encoded.count))

        // Cara's seq 2 before her seq 1: held back, and counted.
        let caraCard = try c.profile(ProfileCard(name: "Cara"), at: 1000)
        let caraLike = try c.like(ana.publicKey.key, liked: true, at: 1500)
        #expect(try replica.apply(batch: [caraLike.encoded]) == [.held])
        let held = try replica.foreignStorage()
        let heldSummed = try summed(replica, excluding: ana.publicKey.key)
        #expect(held.accounts == 2 && held.bytes == heldSummed)

        // Ben's third edit supersedes his second: compaction drops it, the bytes follow.
        let before = try replica.foreignBytes()
        let benThird = try b.profile(ProfileCard(bio: "third"), at: 3000)
        _ = try replica.apply(batch: [caraCard.encoded, benThird.encoded])
        let after = try replica.foreignBytes()
        let afterSummed = try summed(replica, excluding: ana.publicKey.key)
        #expect(after == afterSummed, "kept by the triggers through compaction")
        #expect(after < before + Int64(caraCard.encoded.count + benThird.encoded.count), "the superseded edit no longer counts")
    }

    /// The budget reads this at start and again while full: at a million records the planner's
    /// own choice — every record scanned, two look-ups each — kept a daemon from answering its
    /// socket for ten seconds. The node's accounts must be the outer loop.
    @Test func foreignBytesReadsOnlyTheLocalAccountsRecordsNotEveryRecord() throws {
        let ana = keyPair(1), ben = keyPair(2)
        let replica = try memoryReplica(unlocking: [ana])
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        let benCard = try b.profile(ProfileCard(name: "Ben"), at: 1000).encoded
        _ = try replica.apply(batch: [try a.profile(ProfileCard(name: "Ana"), at: 1000).encoded, benCard])
        #expect(try replica.foreignBytes() == Int64(benCard.count), "the same sum as before")
        let plan = try replica.foreignBytesQueryPlan()
        #expect(!plan.isEmpty)
        let scans = plan.filter { $0.hasPrefix("SCAN") && !$0.hasPrefix("SCAN CONSTANT") }
        #expect(scans.allSatisfy { $0 == "SCAN l" }, "only the local accounts may be scanned: \(plan)")
        #expect(plan.contains { $0.hasPrefix("SEARCH r ") } && plan.contains { $0.hasPrefix("SEARCH p ") },
                "records and held-back records found by author: \(plan)")
    }

    @Test func aPartnerIsAnAccountALocalAccountLikesNotOneThatLikesIt() throws {
        let ana = keyPair(1), ben = keyPair(2), cara = keyPair(3)
        let replica = try memoryReplica(unlocking: [ana])
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben), c = RecordWriter(keys: cara)
        _ = try replica.apply(batch: [try a.profile(ProfileCard(name: "Ana"), at: 1000).encoded,
                                      try b.profile(ProfileCard(name: "Ben"), at: 1000).encoded,
                                      try c.profile(ProfileCard(name: "Cara"), at: 1000).encoded])
        #expect(try replica.isPartner(ben.publicKey.key) == false)
        _ = try replica.apply(batch: [try a.like(ben.publicKey.key, liked: true, at: 2000).encoded,
                                      try c.like(ana.publicKey.key, liked: true, at: 2000).encoded])
        #expect(try replica.isPartner(ben.publicKey.key), "Ana likes Ben")
        #expect(try replica.isPartner(cara.publicKey.key) == false, "a like from a stranger does not make it a partner")
        #expect(try replica.holdsAccount(cara.publicKey.key))
        #expect(try replica.holdsAccount(keyPair(9).publicKey.key) == false)
    }

    @Test func migrationTenCountsTheRecordsAReplicaAlreadyHeld() throws {
        let dir = try TempDir()
        let path = dir.file("replica.db")
        let ana = keyPair(1), ben = keyPair(2)
        do {
            let replica = try Replica(path: path, settings: testSettings())
            var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
            _ = try replica.apply(batch: [try a.profile(ProfileCard(name: "Ana"), at: 1000).encoded,
                                          try b.profile(ProfileCard(name: "Ben", bio: "x"), at: 1000).encoded,
                                          try b.like(ana.publicKey.key, liked: true, at: 2000).encoded])
            try replica.close()
            let db = try Database(path: path)
            try db.executeScript(undoMigration10 + "PRAGMA user_version = 9;")
            try db.close()
        }
        let upgraded = try Replica(path: path, settings: testSettings())
        let all = try summed(upgraded, excluding: PublicKey(bytes: [UInt8](repeating: 0, count: 32))!)
        let seeded = try upgraded.foreignStorage()
        #expect(seeded.accounts == 2 && seeded.bytes == all && all > 0, "no local account: everything is foreign")
    }
}
