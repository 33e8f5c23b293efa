import MentorCore
import Testing
@testable import MentorNode

/// The peer manager's settings (`Peers/PeerSettings.swift`): the defaults are the figures
/// PROTOCOL.md §13.4 and §13.7 state (a change of one is a change of the protocol's bounds, to
/// be made there too), and the redial backoff and the records-per-second bucket are the ones the
/// daemon documents.
@Suite struct PeerSettingsTests {
    @Test func theDefaultRatesAreTheProtocolsBounds() {
        let s = PeerManager.Settings()
        #expect(s.reconBurst == 128 && s.reconPeriod == .seconds(30), "recon: 128 at once, 128 per 30 s")
        #expect(s.wantBurst == 256 && s.wantPeriod == .seconds(30), "want: 256 at once, 256 per 30 s")
        #expect(s.treeBurst == 512 && s.treePeriod == .seconds(30), "ihave/prune/graft: 512 at once, 512 per 30 s")
        #expect(s.hereBurst == 8 && s.herePeriod == .seconds(30), "here: 8 at once, 8 per 30 s")
        #expect(s.linkOfferBurst == 4 && s.linkOfferPeriod == .seconds(30), "link: 4 at once, 4 per 30 s")
        #expect(s.graftTimeout == .seconds(1), "an announced ID waits 1 s for its body")
        #expect(s.blobAnswerTimeout == .seconds(30), "a wantBlob unanswered for 30 s ends its link")
        #expect(s.lazyPush)
    }

    @Test func theDefaultDiallingPacingAndBudgets() {
        let s = PeerManager.Settings()
        #expect(s.initialBackoff == .milliseconds(250) && s.maxBackoff == .seconds(30))
        #expect(s.dialTimeout == .seconds(5))
        #expect(s.recordsPerSecond == 20_000 && s.recordsBurst == 20_000)
        #expect(s.recordsPerApply == 1024)
        #expect(s.authorBudget == 64 << 20 && s.photoBudget == 2 << 30)
        #expect(s.foreignAccountsMax == 1_000_000 && s.foreignBytesMax == 2 << 30)
        #expect(s.reconInterval == .seconds(60) && s.syncEventInterval == .milliseconds(250))
        #expect(s.photoDeferral == .seconds(10) && s.photoLookupInterval == .seconds(1) && s.blobRetry == .milliseconds(500))
    }

    /// The wall clock and the randomness are injectable (the redial jitter replays in tests).
    @Test func theClockAndTheRandomnessAreInjected() {
        struct Fixed: RandomNumberGenerator, Sendable { func next() -> UInt64 { 42 } }
        var s = PeerManager.Settings()
        s.now = { 1_234 }
        s.random = Fixed()
        #expect(s.now() == 1_234)
        #expect(s.random.next() == 42)
    }
}
