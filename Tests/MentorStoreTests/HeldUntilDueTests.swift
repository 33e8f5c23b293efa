import Foundation
import Synchronization
import Testing
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Records dated ahead of the replica's clock (PROTOCOL.md §9): within the tolerance applied at
/// once, up to 24 h ahead held until due, further refused (no offence); held ones survive a
/// restart and are applied once the (injected) clock reaches them.
@Suite struct HeldUntilDueTests {
    let ana = keyPair(1), ben = keyPair(2)
    static let hour: UInt64 = 3_600_000

    /// A clock the test moves.
    final class ManualWallClock: Sendable {
        let millis: Mutex<UInt64>
        init(_ start: UInt64) { millis = Mutex(start) }
        func advance(_ by: UInt64) { millis.withLock { $0 += by } }
        var now: @Sendable () -> UInt64 { { [self] in millis.withLock { $0 } } }
    }

    func settings(_ clock: ManualWallClock) -> Replica.Settings {
        var s = Replica.Settings()
        s.now = clock.now
        return s
    }

    @Test func aRecordHoursAheadIsHeldOutOfTheDigestAndAppliedOnceDue() throws {
        let clock = ManualWallClock(testNow)
        let replica = try memoryReplica(settings: settings(clock))
        var w = RecordWriter(keys: ana)
        // The author's clock runs 3 h fast: every record it writes is 3 h ahead of ours.
        let first = try w.profile(ProfileCard(name: "Ana", role: .student), at: testNow + 3 * Self.hour)
        let second = try w.profile(ProfileCard(bio: "fast clock"), at: testNow + 3 * Self.hour + 1000)
        let empty = try replica.digest()
        #expect(try replica.apply(batch: [first.encoded, second.encoded]) == [.heldUntilDue, .heldUntilDue])
        #expect(try replica.apply(first.encoded) == .duplicate, "offered again (the peer's next hello): nothing changes")
        #expect(try replica.digest() == empty && replica.counts().records == 0 && replica.counts().heldUntilDue == 2)
        #expect(try replica.versionSummary().isEmpty, "a held record is not in the vector: peers offer it again")
        #expect(try replica.card(of: ana.publicKey.key) == nil)
        #expect(try replica.earliestHeldUntilDue() == testNow + 3 * Self.hour)

        clock.advance(2 * Self.hour)            // 1 h still to go: not due yet
        #expect(try replica.releaseDue().isEmpty)
        clock.advance(Self.hour - Limits.maxFutureSkewMillis + 1000)   // both due: within the 10 min tolerance
        let released = try replica.releaseDue()
        #expect(released.map(\.id) == [first.id, second.id])
        #expect(try replica.counts().records == 2 && replica.counts().heldUntilDue == 0)
        #expect(try replica.card(of: ana.publicKey.key)?.card.bio == "fast clock")
        #expect(try replica.earliestHeldUntilDue() == nil)
        // The same records applied directly on another replica give the same digest.
        let direct = try memoryReplica(settings: settings(clock))
        _ = try direct.apply(batch: [first.encoded, second.encoded])
        #expect(try direct.digest() == replica.digest())
    }

    @Test func heldRecordsSurviveARestart() throws {
        let dir = try TempDir()
        let clock = ManualWallClock(testNow)
        var w = RecordWriter(keys: ana)
        let ahead = try w.profile(ProfileCard(name: "Ana"), at: testNow + 5 * Self.hour)
        var replica: Replica? = try Replica(path: dir.file("replica.db"), settings: settings(clock))
        #expect(try replica?.applyOne(ahead) == .heldUntilDue)
        try replica?.close()
        replica = nil
        clock.advance(5 * Self.hour)
        let reopened = try Replica(path: dir.file("replica.db"), settings: settings(clock))
        #expect(try reopened.counts().heldUntilDue == 1)
        #expect(try reopened.releaseDue().map(\.id) == [ahead.id])
        #expect(try reopened.card(of: ana.publicKey.key)?.card.name == "Ana")
        try reopened.close()
    }

    @Test func theToleranceTheHoldBoundAndTheAreaBoundDecide() throws {
        let clock = ManualWallClock(testNow)
        var s = settings(clock)
        s.maxHeldUntilDue = 1
        let replica = try memoryReplica(settings: s)
        var a = RecordWriter(keys: ana), b = RecordWriter(keys: ben)
        // Within the tolerance: applied at once.
        #expect(try replica.applyOne(try a.profile(ProfileCard(name: "Ana"), at: testNow + Limits.maxFutureSkewMillis)) == .applied)
        // Over 24 h ahead: refused, no offence, nothing kept.
        let far = try b.profile(ProfileCard(name: "Ben"), at: testNow + Limits.maxHoldAheadMillis + 1)
        guard case .refused(let e) = try replica.applyOne(far) else { Issue.record("a record 24 h ahead was kept"); return }
        #expect(e.code == .timestampInFuture && !e.code.isOffence && e.code.isDeferral)
        #expect(try replica.counts().heldUntilDue == 0 && replica.counts().authors == 1)
        // The area holds one record: the next is refused the same way.
        #expect(try replica.applyOne(try a.profile(ProfileCard(bio: "one"), at: testNow + Self.hour)) == .heldUntilDue)
        var b2 = RecordWriter(keys: ben)
        guard case .refused(let full) = try replica.applyOne(try b2.profile(ProfileCard(name: "Ben"), at: testNow + Self.hour)) else {
            Issue.record("a full area took another record"); return
        }
        #expect(full.code == .timestampInFuture && full.message.contains("fill"))
    }

    /// The classification of PROTOCOL.md §10: only refusals a relay could have checked itself
    /// before relaying are offences.
    @Test func onlyRefusalsTheSenderCouldHaveCheckedAreOffences() {
        let offences: [RecordError.Code] = [.badSignature, .unknownType, .unsupportedVersion, .malformed, .bodyTooLarge,
                                            .clockTooLarge, .invalidBody]
        let notNow: [RecordError.Code] = [.sequenceGapTooLarge, .pendingFull, .equivocation, .timestampInFuture]
        for code in offences { #expect(code.isOffence && !code.isDeferral, "\(code)") }
        for code in notNow { #expect(!code.isOffence, "\(code)") }
        #expect(notNow.filter(\.isDeferral) == [.sequenceGapTooLarge, .pendingFull, .timestampInFuture],
                "all but equivocation (its outcome never changes) are asked for again later")
    }
}
