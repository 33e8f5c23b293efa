#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import MentorCrypto
@testable import MentorNet
import Synchronization
import MentorSystem
import Testing

/// Links torn down while traffic flows, from either side or both at once, or by a peer that
/// resets the connection: the churn that, with a descriptor closed under a source that was
/// still registered, makes libdispatch's epoll loop deliver an event for a source that is gone
/// (a crash of this process) or leaves the next socket given that number deaf (a handshake that
/// never finishes). The process must survive, every new link must still come up, and no socket
/// of these links may be left open.
@Suite struct LinkChurnTests {
    /// How one pair of links ends.
    enum Teardown: CaseIterable {
        case initiatorCloses, responderCloses, bothCloseAtOnce
    }

    @Test func linksTornDownMidTrafficFromEitherSideLeaveNoDescriptorBehind() async throws {
        var link = PeerLink.Settings()
        link.closeLinger = .milliseconds(20)
        link.handshakeTimeout = .seconds(30)   // longer than any wait below: an unclosed end fails the test
        var settings = PeerListener.Settings()
        settings.maxLinks = 10_000
        settings.maxLinksPerAddress = 10_000
        settings.link = link
        let burst = [UInt8](repeating: 0x5a, count: 128 << 10)
        // Both ends start writing the moment the link is up, so a close finds output queued
        // and the write source armed on the descriptor next to the read source.
        let acceptor = try AcceptorFixture(settings: settings) { link in
            for _ in 0..<3 { _ = link.send(burst) }
        }
        let port = acceptor.port
        let dialerQueues = (0..<3).map { DispatchQueue(label: "test.churn.dialer\($0)") }
        let rounds = 120, linksPerRound = 4
        var accepted = 0

        for round in 0..<rounds {
            var dialled: [(PeerLink, LinkEvents, SigningPublicKey)] = []
            for i in 0..<linksPerRound {
                let events = LinkEvents()
                let identity = SigningKeyPair.generate()   // how the responder end is told apart
                let link = try await dialLink(port: port, identity: identity, settings: link, events: events,
                                              queue: dialerQueues[(round + i) % dialerQueues.count]) { link in
                    for _ in 0..<3 { _ = link.send(burst) }
                }
                dialled.append((link, events, identity.publicKey))
            }
            // A peer that resets the connection in the middle of its handshake.
            var raw: RawPeer? = try RawPeer(port: port)
            raw?.write([UInt8](repeating: 1, count: 20))
            var hard = linger(l_onoff: 1, l_linger: 0)
            setsockopt(raw!.fd, SOL_SOCKET, SO_LINGER, &hard, socklen_t(MemoryLayout<linger>.size))

            let upTo = accepted + linksPerRound + 1
            let up = await eventually(.seconds(10)) {
                dialled.allSatisfy { $0.1.established.withLock { $0 } != nil }
                    && acceptor.links.withLock { links in
                        links.count >= upTo
                            && links[accepted..<upTo].filter { $0.1.established.withLock { $0 } != nil }.count == linksPerRound
                    }
            }
            #expect(up, "round \(round): a link did not come up (a deaf socket?)")
            guard up else { break }
            let responders = acceptor.links.withLock { Array($0[accepted..<upTo]) }
            accepted = upTo
            raw = nil   // its socket closes: the reset goes out now, with the links still busy

            for (index, (initiator, _, key)) in dialled.enumerated() {
                let found = responders.first { $0.1.established.withLock { $0 } == key }?.0
                let responder = try #require(found, "round \(round): no responder end for a dialled link")
                switch Teardown.allCases[(round + index) % Teardown.allCases.count] {
                case .initiatorCloses: initiator.close()
                case .responderCloses: responder.close()
                case .bothCloseAtOnce:
                    DispatchQueue.concurrentPerform(iterations: 2) { $0 == 0 ? initiator.close() : responder.close() }
                }
            }
            let down = await eventually(.seconds(10)) {
                dialled.allSatisfy { $0.1.closed.withLock { $0 } != nil }
                    && responders.allSatisfy { $0.1.closed.withLock { $0 } != nil }
            }
            #expect(down, "round \(round): a link never reported closing")
            guard down else { break }
        }

        #expect(await eventually { acceptor.listener.openLinks == 0 })
        acceptor.listener.close()
        // Descriptors close in the sources' cancel handlers, a moment after `onClosed`.
        let leaked = await eventually(.seconds(5)) { Self.socketsOnPort(port) == 0 }
        #expect(leaked, "\(Self.socketsOnPort(port)) sockets on port \(port) still open in this process")
    }

    /// This process's open TCP sockets whose local or remote port is `port` (from
    /// /proc/self/fd and /proc/net/tcp), so tests running alongside do not disturb the count.
    static func socketsOnPort(_ port: UInt16) -> Int {
        let fdDirectory = "/proc/self/fd"
        var inodes: Set<String> = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + entry),
                  target.hasPrefix("socket:[") else { continue }
            inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
        }
        let hexPort = String(format: "%04X", port)
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9 else { continue }
                let local = fields[1].split(separator: ":").last, remote = fields[2].split(separator: ":").last
                if (local == Substring(hexPort) || remote == Substring(hexPort)) && inodes.contains(String(fields[9])) {
                    count += 1
                }
            }
        }
        return count
    }
}
