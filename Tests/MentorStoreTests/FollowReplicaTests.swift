import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Follows (record type 12, PROTOCOL.md §6.5): one public register per (follower, target).
@Suite struct FollowReplicaTests {
    static let ana = keyPair(170), ben = keyPair(171), cy = keyPair(172)

    static func cards() throws -> (records: [VerifiedRecord], writers: [RecordWriter]) {
        var out: [VerifiedRecord] = [], writers: [RecordWriter] = []
        for (keys, name) in [(ana, "Ana"), (ben, "Ben"), (cy, "Cy")] {
            var w = RecordWriter(keys: keys)
            out.append(try w.profile(ProfileCard(name: name, role: .student), at: 1))
            writers.append(w)
        }
        return (out, writers)
    }

    /// The newest record of an account about a target decides, whatever order the records
    /// arrive in; the counts are the same on every replica.
    @Test func theNewestFollowRecordDecidesInAnyOrder() throws {
        var (cards, w) = try Self.cards()
        let ana = Self.ana.publicKey.key, ben = Self.ben.publicKey.key, cy = Self.cy.publicKey.key
        let anaFollowsBen = try w[0].follow(ben, at: 10)
        let anaStops = try w[0].follow(ben, following: false, at: 20)
        let anaAgain = try w[0].follow(ben, at: 30)
        let anaFollowsCy = try w[0].follow(cy, at: 31)
        let cyFollowsBen = try w[2].follow(ben, at: 15)
        let cyStops = try w[2].follow(ben, following: false, at: 16)
        let benFollowsAna = try w[1].follow(ana, at: 40)
        let all = [anaFollowsBen, anaStops, anaAgain, anaFollowsCy, cyFollowsBen, cyStops, benFollowsAna]
        var rng = SeededRandom(seed: 12)
        for order in [all, all.reversed(), all.shuffled(using: &rng), all.shuffled(using: &rng)] {
            let r = try memoryReplica()
            for v in cards + order { _ = try r.applyOne(v) }
            #expect(try r.followers(of: ben).map(\.account) == [ana], "Ana follows Ben again; Cy stopped")
            #expect(try r.followers(of: ben).first?.since == 30)
            #expect(try r.following(of: ana).map(\.account) == [cy, ben], "newest first")
            #expect(try r.followers(of: ana).map(\.account) == [ben] && r.following(of: cy).isEmpty)
            #expect(try r.follows(ana, ben) && !r.follows(cy, ben) && !r.follows(ben, cy))
        }
        // Stopping again, later: Ben loses his follower everywhere.
        let r = try memoryReplica()
        for v in cards + all { _ = try r.applyOne(v) }
        #expect(try r.applyOne(try w[0].follow(ben, following: false, at: 50)) == .applied)
        #expect(try r.followers(of: ben).isEmpty)
    }

    /// A record of an account following itself is refused as an invalid body (nothing stored),
    /// even signed correctly by a peer that does not use our writer.
    @Test func followingOneselfIsRefused() throws {
        let (cards, _) = try Self.cards()
        let ana = Self.ana
        var w = RecordWriter(keys: ana, lastSeq: 1)
        #expect(throws: RecordError.self) { try w.follow(ana.publicKey.key, at: 5) }
        let body = Follow(target: ana.publicKey.key, following: true).body
        let message = Record.signedBytes(type: .follow, account: nil, author: ana.publicKey.key, seq: 2, timestamp: 5,
                                         clock: VectorClock(), body: body)
        let forged = message + ana.signature(for: message)
        let r = try memoryReplica()
        for v in cards { _ = try r.applyOne(v) }
        let outcome = try r.apply(forged)
        #expect({ if case .refused(let e) = outcome { return e.code == .invalidBody }; return false }(), "\(outcome)")
        #expect(try r.following(of: ana.publicKey.key).isEmpty)
        #expect(throws: RecordError.self) { try Follow(body: [1, 0, 32] + ana.publicKey.key.bytes + [2, 0, 1, 2]) }  // flag 2
        #expect(throws: RecordError.self) { try Follow(body: [2, 0, 1, 1]) }                                          // no target
    }
}
