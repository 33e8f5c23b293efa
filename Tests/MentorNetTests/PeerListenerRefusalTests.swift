#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorCrypto
@testable import MentorNet
import Synchronization
import Testing

@Suite(.serialized) struct PeerListenerRefusalTests {
    /// A host under a refusal (the penalty box's answer, as `PeerManager` wires it) is closed at
    /// accept: its message 1 gets no message 2, no link is made, and the refusal is counted and
    /// logged with its reason — again only after a second (the links' clock, moved by hand), with
    /// the count left out. Once the refusal ends, the same host completes a handshake.
    @Test func aRefusedHostIsClosedBeforeAnyHandshakeByteAndServedOnceItsRefusalEnds() async throws {
        let reason = Mutex<String?>("forged record")
        let logger = CaptureLogger()
        let clock = ManualClock()
        var settings = PeerListener.Settings()
        settings.link.now = { clock.now }
        let acceptor = try AcceptorFixture(settings: settings, logger: logger, refusal: { host in
            host == "127.0.0.1" ? reason.withLock { $0 } : nil
        })
        let port = acceptor.port
        let (bytes, eof) = try await offPool { () -> ([UInt8], Bool) in
            let raw = try RawPeer(port: port)
            var initiator = HandshakeInitiator(networkKey: .default, identity: .generate())
            raw.write(initiator.start())
            return raw.readToEnd()
        }
        #expect(eof && bytes.isEmpty, "a refused host reads an end of stream and not one byte (read \(bytes.count))")
        #expect(acceptor.listener.refusedCount == 1)
        #expect(acceptor.listener.openLinks == 0 && acceptor.links.withLock { $0.isEmpty }, "no link was made")
        func refusals() -> [[String: String]] { logger.lines.withLock { $0.filter { $0.1 == "peer connection refused" }.map(\.2) } }
        #expect(refusals().count == 1 && refusals().first?["reason"] == "forged record"
                    && refusals().first?["peer.address"]?.hasPrefix("127.0.0.1") == true, "\(refusals())")

        // Refused again at once: counted, not logged; a second later: logged, with the one left out.
        let refusedAgain = try await offPool { try RawPeer(port: port).readToEnd() }
        #expect(refusedAgain.eof && refusedAgain.bytes.isEmpty && acceptor.listener.refusedCount == 2)
        #expect(refusals().count == 1)
        clock.advance(.seconds(1))
        _ = try await offPool { try RawPeer(port: port).readToEnd() }
        #expect(acceptor.listener.refusedCount == 3)
        #expect(refusals().count == 2 && refusals().last?["suppressed"] == "1", "\(refusals())")

        // The refusal ends: the same host is served.
        reason.withLock { $0 = nil }
        let identity = SigningKeyPair.generate()
        let raw = try await offPool { () -> UncheckedBox<RawPeer> in
            let raw = try RawPeer(port: port)
            _ = try raw.handshake(identity: identity)
            return UncheckedBox(raw)
        }
        #expect(await eventually { acceptor.firstEvents?.established.withLock { $0 } == identity.publicKey })
        #expect(acceptor.listener.refusedCount == 3 && acceptor.listener.openLinks == 1)
        _ = raw.value
        acceptor.listener.close()
    }
}
