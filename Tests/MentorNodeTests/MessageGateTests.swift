import MentorCore
import MentorCrypto
import Testing
@testable import MentorNode

/// `here` or `link` over its rate (PROTOCOL.md §13.4): no offence, the newest kept and taken
/// once a token is back; one timer per link; other messages untouched.
@Suite struct MessageGateTests {
    let t0 = ContinuousClock.now
    func here(_ n: UInt8) -> [UInt8] { SyncMessage.here([PublicKey(bytes: [UInt8](repeating: n, count: 32))!]).encoded }

    @Test func theBurstPassesThenTheNewestIsKeptWithOneTimer() {
        var gate = MessageGate(tag: SyncMessage.hereTag, burst: 2, period: .seconds(30))
        #expect(gate.refill == .seconds(15))
        #expect(gate.admit(here(1), now: t0) == .pass)
        #expect(gate.admit(here(2), now: t0) == .pass)
        #expect(gate.admit(here(3), now: t0) == .hold(armTimer: true))
        #expect(gate.admit(here(4), now: t0) == .hold(armTimer: false), "one timer per link")
        #expect(gate.held == here(4), "the newest replaces the older one")
        #expect(gate.refilled(now: t0 + .seconds(1)) == .again, "no token yet")
        #expect(gate.refilled(now: t0 + gate.refill) == .take(here(4)))
        #expect(gate.held == nil)
        #expect(gate.refilled(now: t0 + .seconds(60)) == .nothing)
    }

    @Test func otherMessagesPassWithoutSpendingTokens() {
        var gate = MessageGate(tag: SyncMessage.hereTag, burst: 1, period: .seconds(30))
        let ihave = SyncMessage.ihave([[UInt8](repeating: 7, count: 32)]).encoded
        for _ in 0..<100 { #expect(gate.admit(ihave, now: t0) == .pass) }
        for _ in 0..<100 { #expect(gate.admit(SyncMessage.link([]).encoded, now: t0) == .pass, "another gate's type") }
        #expect(gate.admit([], now: t0) == .pass)
        #expect(gate.admit(here(1), now: t0) == .pass, "the token is still there")
        #expect(gate.admit(here(2), now: t0) == .hold(armTimer: true))
    }

    @Test func aFloodCostsOneUpdatePerRefill() {
        var gate = MessageGate(tag: SyncMessage.hereTag, burst: 8, period: .seconds(30))
        var taken = 0, now = t0
        for n in 0..<10_000 {
            now = t0 + .milliseconds(n * 6)   // 60 s of a `here` every 6 ms
            if gate.admit(here(UInt8(n % 200)), now: now) == .pass { taken += 1 }
        }
        // 8 at once, then 8 per 30 s over 60 s: at most 8 + 16 passed.
        #expect(taken >= 8 + 15 && taken <= 8 + 16)
        #expect(gate.held != nil)
    }

    @Test func aLinkGateRatesLinkMessagesOnly() {
        var gate = MessageGate(tag: SyncMessage.linkTag, burst: 4, period: .seconds(30))
        #expect(gate.refill == .milliseconds(7_500))
        for _ in 0..<10 { #expect(gate.admit(here(1), now: t0) == .pass) }
        for n in 0..<4 { #expect(gate.admit(SyncMessage.link([UInt8(n)]).encoded, now: t0) == .pass) }
        #expect(gate.admit(SyncMessage.link([9]).encoded, now: t0) == .hold(armTimer: true))
        #expect(gate.admit(SyncMessage.link([]).encoded, now: t0) == .hold(armTimer: false))
        #expect(gate.refilled(now: t0 + gate.refill) == .take(SyncMessage.link([]).encoded), "the newest: the withdrawal")
    }
}
