import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// The replica's cached statements stay prepared through applies and reads: each re-prepare
/// is a parse and plan of the SQL again, and two causes made them happen on every use (a flag
/// pragma around each read; a parameter bound where a partial index might apply).
@Suite struct StatementReuseTests {
    @Test func applyingAndReadingAMixedWorkloadPreparesNoCachedStatementAgain() throws {
        let replica = try Replica(path: ":memory:")
        // Opening ran the migrations, whose schema changes expire what was prepared before them
        // once (BEGIN and COMMIT, at their next use): counted from the end of the first round.
        var atStart = 0, startedWith: [String: Int] = [:]
        var writers = try (0..<40).map { n in
            RecordWriter(keys: try SigningKeyPair(seed: [UInt8(n)] + [UInt8](repeating: 7, count: 31)))
        }
        let keys = writers.map(\.keys.publicKey.key)
        for round in 0..<3 {
            var batch: [[UInt8]] = []
            for n in writers.indices {
                let t = UInt64(1000 * (round + 1) + n)
                let photo = PhotoRef(hash: [UInt8](repeating: UInt8(n), count: 31) + [UInt8(round)], size: 100, format: .png)
                batch.append(try writers[n].profile(ProfileCard(name: "A \(n)", role: .student, bio: "bio \(round)",
                                                                courses: ["CS 10\(round)"], photos: [photo]), at: t).encoded)
                batch.append(try writers[n].like(keys[(n + 1) % keys.count], liked: round != 1, at: t + 1).encoded)
            }
            #expect(try replica.apply(batch: batch).allSatisfy { $0 == .applied })
            for key in keys.prefix(10) {
                _ = try replica.authorUsage(key)
                _ = try replica.card(of: key)
            }
            _ = try replica.missingPhotos(limit: 16)
            _ = try replica.counts()
            if round == 0 { (atStart, startedWith) = try replica.run { db throws(StoreError) in (db.cachedStatementsReprepared, db.repreparedStatements) } }
        }
        let (reprepared, which) = try replica.run { db throws(StoreError) in (db.cachedStatementsReprepared, db.repreparedStatements) }
        #expect(reprepared == atStart, "cached statements were prepared again \(reprepared - atStart) times: \(which), after the first round \(startedWith)")
    }
}
