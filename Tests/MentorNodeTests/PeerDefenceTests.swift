import MentorNet
import Testing
@testable import MentorNode

/// Whose fault a link's end is and what it costs the address (PROTOCOL.md §13.4), on an
/// injected clock.
@Suite struct PeerDefenceTests {
    let t0 = ContinuousClock.now
    let host = "10.0.0.9"

    @Test func onlyThePeersFaultsAreOffences() {
        let offences: [PeerLink.CloseReason] = [.handshakeFailed(code: "bad-signature", message: "m"), .frameRejected("too long"),
                                                .handshakeTimedOut(.seconds(5)), .refused("links per address")]
        for reason in offences { #expect(PeerDefence.offence(reason) == "\(reason)") }
        let noFault: [PeerLink.CloseReason] = [.closedLocally, .peerClosed(duringHandshake: true), .peerClosed(duringHandshake: false),
                                               .ioFailed("reset"), .silent(.seconds(15))]
        for reason in noFault { #expect(PeerDefence.offence(reason) == nil) }
    }

    @Test func offencesRefuseTheAddressForADoublingIntervalAndSayWhy() {
        var d = PeerDefence()
        let first = d.punish(host, reason: "forged", now: t0)
        #expect(first == .init(interval: .seconds(2), offences: 1) && first.isFirstOfStreak)
        #expect(d.refusedUntil(host, now: t0) == t0 + .seconds(2))
        #expect(d.refusalReason(host, now: t0 + .seconds(1)) == "refused after offence 1 (forged)")
        #expect(d.refusalReason("10.0.0.10", now: t0) == nil, "another address is not refused")
        let second = d.punish(host, reason: "malformed", now: t0 + .seconds(3))
        #expect(second == .init(interval: .seconds(4), offences: 2) && !second.isFirstOfStreak)
        #expect(d.refusalReason(host, now: t0 + .seconds(4)) == "refused after offence 2 (malformed)")
        #expect(d.refusedUntil(host, now: t0 + .seconds(7)) == nil, "the refusal ends")
    }

    @Test func aLinksEndPunishesOffencesAndLogsACutShortHandshakeOncePerAddressUntilALinkWorks() {
        var d = PeerDefence()
        #expect(d.linkEnded(host: host, reason: .frameRejected("bad tag"), handshakeDone: true, now: t0)
                == .punished(reason: "\(PeerLink.CloseReason.frameRejected("bad tag"))", .init(interval: .seconds(2), offences: 1)))
        #expect(d.refusedUntil(host, now: t0) != nil)

        let other = "10.0.0.11"
        #expect(d.linkEnded(host: other, reason: .peerClosed(duringHandshake: true), handshakeDone: false, now: t0) == .handshakeCutShort(logAtInfo: true))
        #expect(d.linkEnded(host: other, reason: .peerClosed(duringHandshake: true), handshakeDone: false, now: t0) == .handshakeCutShort(logAtInfo: false))
        #expect(d.refusedUntil(other, now: t0) == nil, "a cut-short handshake is no offence")
        d.linkEstablished(host: other)
        #expect(d.linkEnded(host: other, reason: .ioFailed("reset"), handshakeDone: false, now: t0) == .handshakeCutShort(logAtInfo: true))

        #expect(d.linkEnded(host: other, reason: .closedLocally, handshakeDone: false, now: t0) == .quiet, "our own close")
        #expect(d.linkEnded(host: other, reason: .peerClosed(duringHandshake: false), handshakeDone: true, now: t0) == .quiet)
        #expect(d.linkEnded(host: other, reason: .silent(.seconds(15)), handshakeDone: true, now: t0) == .quiet)
    }

    @Test func theLogOfCutShortHandshakesIsBounded() {
        var d = PeerDefence()
        for n in 0..<PeerDefence.loggedHandshakesMax {
            _ = d.linkEnded(host: "h\(n)", reason: .ioFailed("x"), handshakeDone: false, now: t0)
        }
        #expect(d.linkEnded(host: "one more", reason: .ioFailed("x"), handshakeDone: false, now: t0) == .handshakeCutShort(logAtInfo: false))
    }

    @Test func pastHalfItsCapacityTheBoxForgetsForgivenAddresses() {
        var settings = PenaltyBox.Settings()
        settings.capacity = 4
        var d = PeerDefence(settings: settings)
        for n in 0..<3 { _ = d.punish("old\(n)", reason: "x", now: t0) }
        #expect(d.penalties.count == 3, "past half, but none is forgiven yet")
        let later = t0 + settings.maximum + settings.forgiveAfter + .seconds(1)
        _ = d.punish("new", reason: "x", now: later)
        #expect(d.penalties.count == 1, "the forgiven ones were pruned, the new one kept")
        #expect(d.refusedUntil("new", now: later) != nil)
    }

    /// The shell's log lines of what `PeerDefence` returns: the first offence of a streak at
    /// info, repeats at debug; a handshake cut short at info the first time, then at debug; a
    /// quiet end logs nothing.
    @Test func theLogLinesOfOffencesAndEndingsAndTheirLevels() {
        let logger = CaptureLogger()
        var d = PeerDefence()
        let first = d.punish(host, reason: "forged", now: t0)
        PeerDefence.log(first, reason: "forged", address: "10.0.0.9:7000", via: .config, to: logger)
        let again = d.punish(host, reason: "forged", now: t0 + .seconds(3))
        PeerDefence.log(again, reason: "forged", address: "10.0.0.9:7000", via: .config, to: logger)
        #expect(logger.lines.map(\.level) == [.info, .debug])
        #expect(logger.lines.first?.metadata == ["peer.address": "10.0.0.9:7000", "for": "2.0 seconds", "offences": "1",
                                                  "via": "config", "reason": "forged"])
        #expect(logger.lines.last?.metadata["offences"] == "2")

        let cut = CaptureLogger()
        for _ in 0..<2 {
            let ending = d.linkEnded(host: "10.0.0.5", reason: .peerClosed(duringHandshake: true), handshakeDone: false, now: t0)
            PeerDefence.log(ending, reason: .peerClosed(duringHandshake: true), address: "10.0.0.5:7000", via: .mdns, to: cut)
        }
        #expect(cut.lines.map(\.level) == [.info, .debug])
        #expect(cut.lines("peer handshake did not complete").count == 2)
        #expect(cut.lines.first?.metadata["via"] == "mdns" && cut.lines.first?.metadata["peer.address"] == "10.0.0.5:7000")

        let quiet = CaptureLogger()
        PeerDefence.log(d.linkEnded(host: "10.0.0.6", reason: .closedLocally, handshakeDone: true, now: t0), reason: .closedLocally,
                        address: "10.0.0.6:7000", via: .config, to: quiet)
        #expect(quiet.lines.isEmpty)
        let punished = d.linkEnded(host: "10.0.0.7", reason: .frameRejected("too long"), handshakeDone: true, now: t0)
        PeerDefence.log(punished, reason: .frameRejected("too long"), address: "10.0.0.7:7000", via: .incoming, to: quiet)
        #expect(quiet.lines.map(\.message) == ["peer refused for a while"] && quiet.lines.first?.level == .info)
    }
}
