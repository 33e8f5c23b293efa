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

// MARK: - Helpers

/// What one link reported, collected from its queue.
final class LinkEvents: Sendable {
    let established = Mutex<SigningPublicKey?>(nil)
    let messages = Mutex<[[UInt8]]>([])
    let closed = Mutex<PeerLink.CloseReason?>(nil)
    let writable = Mutex(0)

    func attach(_ link: PeerLink, onEstablished extra: @escaping (PeerLink) -> Void = { _ in }) {
        link.onEstablished = { [weak link] key in
            self.established.withLock { $0 = key }
            if let link { extra(link) }
        }
        link.onMessage = { bytes in self.messages.withLock { $0.append(bytes) } }
        link.onClosed = { reason in self.closed.withLock { $0 = reason } }
        link.onWritable = { self.writable.withLock { $0 += 1 } }
    }
}

/// A listener on 127.0.0.1 whose accepted links are collected.
final class AcceptorFixture: @unchecked Sendable {
    let queue = DispatchQueue(label: "test.acceptor")
    let identity = SigningKeyPair.generate()
    let listener: PeerListener
    let links = LinkList()

    init(settings: PeerListener.Settings = PeerListener.Settings(), logger: some Logger = DiscardingLogger(),
         onEstablished: @escaping @Sendable (PeerLink) -> Void = { _ in },
         refusal: @escaping (String) -> String? = { _ in nil }) throws {
        let tcp = try TCPListener(host: "127.0.0.1", port: 0)
        let links = self.links
        listener = PeerListener(listener: tcp, identity: identity, queue: queue, settings: settings, logger: logger) { link in
            let events = LinkEvents()
            events.attach(link, onEstablished: onEstablished)
            links.withLock { $0.append((link, events)) }
        }
        listener.refusal = refusal
        listener.start()
    }

    var port: UInt16 { listener.address.port }
    var firstEvents: LinkEvents? { links.withLock { $0.first?.1 } }
    var firstLink: PeerLink? { links.withLock { $0.first?.0 } }
}

/// The links a fixture accepted, in order.
final class LinkList: @unchecked Sendable {   // guarded by its Mutex
    private let items = Mutex<[(PeerLink, LinkEvents)]>([])
    func withLock<R>(_ body: (inout [(PeerLink, LinkEvents)]) -> R) -> R { items.withLock { body(&$0) } }
}

/// Dials `port` and runs an initiator link; returns it once created.
func dialLink(port: UInt16, identity: SigningKeyPair, settings: PeerLink.Settings = PeerLink.Settings(),
              events: LinkEvents, queue: DispatchQueue,
              onEstablished: @escaping @Sendable (PeerLink) -> Void = { _ in }) async throws -> PeerLink {
    let result: UncheckedBox<PeerLink> = try await withCheckedThrowingContinuation { continuation in
        TCPDialer.connect(host: "127.0.0.1", port: port, timeout: .seconds(2), queue: queue) { result in
            switch result {
            case .failure(let error): continuation.resume(throwing: error)
            case .success(let stream):
                let link = PeerLink(stream: stream, role: .initiator, identity: identity, queue: queue, settings: settings)
                events.attach(link, onEstablished: onEstablished)
                link.start()
                continuation.resume(returning: UncheckedBox(link))
            }
        }
    }
    return result.value
}

/// A blocking client socket for playing a hostile or silent peer (used on its own thread).
final class RawPeer: @unchecked Sendable {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else { throw TestSocketError(what: "connect", code: errno) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    func write(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Reads exactly `count` bytes, or fewer at end of stream / timeout.
    func read(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            got += n
        }
        return Array(bytes[..<got])
    }

    /// Reads until end of stream; the bytes, and whether EOF came (false: timeout/error).
    func readToEnd() -> (bytes: [UInt8], eof: Bool) {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress!, 4096, 0) }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { return (all, true) }
            if n < 0 { return (all, errno == ECONNRESET) }
            all += buffer[..<n]
        }
    }

    /// Runs the initiator's side of the handshake over this socket.
    func handshake(identity: SigningKeyPair, networkKey: NetworkKey = .default) throws -> Handshake.Session {
        var initiator = HandshakeInitiator(networkKey: networkKey, identity: identity)
        write(initiator.start())
        let message2 = read(Handshake.message2Length)
        guard case .sendAndDone(let message3, let session) = try initiator.receive(message2) else {
            throw TestSocketError(what: "handshake", code: 0)
        }
        write(message3)
        return session
    }
}

// MARK: - Tests

@Suite(.serialized) struct PeerTransportTests {
    @Test func twoLinksHandshakeAndExchangeMessagesBothWaysInOrder() async throws {
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let small = (0..<1000).map { i in Array("message \(i)".utf8) }
        let acceptor = try AcceptorFixture { link in
            for message in small { #expect(link.send(message)) }
        }
        let dialerIdentity = SigningKeyPair.generate()
        let events = LinkEvents()
        let link = try await dialLink(port: acceptor.port, identity: dialerIdentity, events: events,
                                      queue: DispatchQueue(label: "test.dialer")) { link in
            #expect(link.send(big))
            for message in small { #expect(link.send(message)) }
        }
        #expect(await eventually { events.messages.withLock { $0.count } == 1000 })
        #expect(await eventually { acceptor.firstEvents?.messages.withLock { $0.count } == 1001 })
        #expect(events.established.withLock { $0 } == acceptor.identity.publicKey)
        #expect(acceptor.firstEvents?.established.withLock { $0 } == dialerIdentity.publicKey)
        #expect(events.messages.withLock { $0 } == small)
        #expect(acceptor.firstEvents?.messages.withLock { $0 } == [big] + small)

        link.close()
        #expect(await eventually { events.closed.withLock { $0 } == .closedLocally })
        #expect(await eventually { acceptor.firstEvents?.closed.withLock { $0 } == .peerClosed(duringHandshake: false) })
        #expect(await eventually { acceptor.listener.openLinks == 0 })
        acceptor.listener.close()
    }

    /// With a manual clock: the test moves time and runs each link's keep-alive check itself
    /// (`checkLiveness`, what the ticker does), so no test time is spent waiting.
    @Test func idleLinksStayUpOnKeepAlivesAndASilentPeerIsClosed() async throws {
        let clock = ManualClock()
        var links = PeerLink.Settings()   // keep-alive after 5 s, silent after 15 s
        links.now = { clock.now }
        var listenerSettings = PeerListener.Settings()
        listenerSettings.link = links
        let acceptor = try AcceptorFixture(settings: listenerSettings)
        // Two honest links, idle for four silence timeouts: keep-alives keep both up, and no
        // empty message reaches the callbacks.
        let events = LinkEvents()
        let link = try await dialLink(port: acceptor.port, identity: SigningKeyPair.generate(), settings: links,
                                      events: events, queue: DispatchQueue(label: "test.keepalive"))
        #expect(await eventually { events.established.withLock { $0 } != nil && acceptor.firstEvents?.established.withLock { $0 } != nil })
        let accepted = try #require(acceptor.firstLink)
        for step in 1...12 {
            clock.advance(links.keepaliveInterval)
            link.checkLiveness()
            accepted.checkLiveness()
            // Each sent a keep-alive (nothing else was sent for 5 s) and the other received it.
            let now = clock.now
            #expect(await eventually { link.lastFrameReceived == now && accepted.lastFrameReceived == now },
                    "step \(step): a keep-alive each way")
        }
        #expect(events.closed.withLock { $0 } == nil && acceptor.firstEvents?.closed.withLock { $0 } == nil,
                "an idle link closed: \(String(describing: events.closed.withLock { $0 }))")
        #expect(events.messages.withLock { $0 }.isEmpty && acceptor.firstEvents?.messages.withLock { $0 }.isEmpty == true)
        link.close()
        #expect(await eventually { acceptor.listener.openLinks == 0 })

        // A peer that completes the handshake and then sends nothing: it gets keep-alives
        // (empty frames: 4 + 16 bytes), and is closed as silent after the timeout — not before.
        let raw = try RawPeer(port: acceptor.port)
        let session = try raw.handshake(identity: SigningKeyPair.generate())
        var opener = FrameOpener(session: session)
        #expect(await eventually { acceptor.links.withLock { $0.count } == 2 && acceptor.listener.openLinks == 1 })
        let (silentLink, silentEvents) = try #require(acceptor.links.withLock { $0.last })
        #expect(await eventually { silentEvents.established.withLock { $0 } != nil })
        clock.advance(links.keepaliveInterval)
        silentLink.checkLiveness()
        let frame = try await offPool { raw.read(4 + 16) }
        #expect(frame.count == 20 && frame.prefix(4) == [0, 0, 0, 16], "a keep-alive frame: \(frame)")
        #expect(try opener.open(Array(frame.dropFirst(4))) == [])
        clock.advance(links.silenceTimeout - links.keepaliveInterval - .milliseconds(1))
        silentLink.checkLiveness()
        #expect(silentLink.lastFrameReceived < clock.now && silentEvents.closed.withLock { $0 } == nil,
                "not silent yet a millisecond before the timeout")
        clock.advance(.milliseconds(1))
        silentLink.checkLiveness()
        #expect(await eventually { silentEvents.closed.withLock { $0 } == .silent(links.silenceTimeout) })
        acceptor.listener.close()
    }

    @Test func wrongNetworkKeyClosesBothSidesAndTheAcceptorSendsNothing() async throws {
        let acceptor = try AcceptorFixture()
        var settings = PeerLink.Settings()
        settings.networkKey = try NetworkKey(bytes: [UInt8](repeating: 7, count: 32))
        let events = LinkEvents()
        _ = try await dialLink(port: acceptor.port, identity: .generate(), settings: settings, events: events,
                               queue: DispatchQueue(label: "test.dialer"))
        #expect(await eventually { events.closed.withLock { $0 } == .peerClosed(duringHandshake: true) })
        #expect(await eventually {
            if case .handshakeFailed(code: "wrongNetworkKey", _) = acceptor.firstEvents?.closed.withLock({ $0 }) { true } else { false }
        })
        #expect(events.established.withLock { $0 } == nil)

        // On the wire: a raw peer with the wrong key reads an end of stream and not one byte.
        let port = acceptor.port
        let (bytes, eof) = try await offPool { () -> ([UInt8], Bool) in
            let raw = try RawPeer(port: port)
            var initiator = HandshakeInitiator(networkKey: try NetworkKey(bytes: [UInt8](repeating: 9, count: 32)),
                                               identity: .generate())
            raw.write(initiator.start())
            return raw.readToEnd()
        }
        #expect(eof)
        #expect(bytes.isEmpty)
        acceptor.listener.close()
    }

    @Test func aSilentClientIsClosedAfterTheHandshakeDeadline() async throws {
        var settings = PeerListener.Settings()
        settings.link.handshakeTimeout = .milliseconds(300)
        let acceptor = try AcceptorFixture(settings: settings)
        let port = acceptor.port
        let started = ContinuousClock.now
        let (bytes, eof) = try await offPool { try RawPeer(port: port).readToEnd() }
        let waited = ContinuousClock.now - started
        #expect(eof && bytes.isEmpty)
        #expect(waited >= .milliseconds(250) && waited < .seconds(3))
        #expect(await eventually { acceptor.firstEvents?.closed.withLock { $0 } == .handshakeTimedOut(.milliseconds(300)) })
        acceptor.listener.close()
    }

    @Test func garbageAndAnOversizedFrameAfterTheHandshakeCloseTheLink() async throws {
        let acceptor = try AcceptorFixture()
        let port = acceptor.port
        // Garbage instead of msg1: refused as a wrong network key, nothing sent back.
        let garbage = try await offPool { () -> ([UInt8], Bool) in
            let raw = try RawPeer(port: port)
            raw.write((0..<64).map { UInt8($0) })
            return raw.readToEnd()
        }
        #expect(garbage.1 && garbage.0.isEmpty)

        // A valid handshake, then a frame header announcing 100 MB.
        let identity = SigningKeyPair.generate()
        let eof = try await offPool { () -> Bool in
            let raw = try RawPeer(port: port)
            _ = try raw.handshake(identity: identity)
            let length = UInt32(100_000_000)
            raw.write([UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16),
                       UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)])
            return raw.readToEnd().eof
        }
        #expect(eof)
        #expect(await eventually { acceptor.links.withLock { $0.count } == 2 })
        let reason = acceptor.links.withLock { $0[1].1 }.closed.withLock { $0 }
        #expect(reason == .frameRejected(FrameError.tooLarge(100_000_000).description))
        #expect(acceptor.links.withLock { $0[1].1 }.established.withLock { $0 } == identity.publicKey)

        // A valid handshake, then a frame that does not authenticate.
        let eof2 = try await offPool { () -> Bool in
            let raw = try RawPeer(port: port)
            _ = try raw.handshake(identity: identity)
            raw.write([0, 0, 0, 20] + [UInt8](repeating: 0xAB, count: 20))
            return raw.readToEnd().eof
        }
        #expect(eof2)
        #expect(await eventually {
            acceptor.links.withLock { $0.count == 3 ? $0[2].1.closed.withLock { $0 } : nil } == .frameRejected(FrameError.authenticationFailed.description)
        })
        acceptor.listener.close()
    }

    @Test func theNinthConnectionFromOneAddressIsRefused() async throws {
        var settings = PeerListener.Settings()
        settings.link.handshakeTimeout = .seconds(5)
        let acceptor = try AcceptorFixture(settings: settings)
        let port = acceptor.port
        let peers = try await offPool { () -> UncheckedBox<[RawPeer]> in
            UncheckedBox(try (0..<8).map { _ in try RawPeer(port: port) })
        }
        #expect(await eventually { acceptor.listener.openLinks == 8 })
        let ninth = try await offPool { try RawPeer(port: port).readToEnd() }
        #expect(ninth.eof && ninth.bytes.isEmpty)
        #expect(acceptor.listener.refusedCount == 1)
        #expect(acceptor.listener.openLinks == 8)
        // When one leaves, a new one is admitted.
        _ = peers.value.count
        acceptor.firstLink?.close()
        #expect(await eventually { acceptor.listener.openLinks == 7 })
        let tenth = try await offPool { UncheckedBox(try RawPeer(port: port)) }
        #expect(await eventually { acceptor.listener.openLinks == 8 })
        #expect(acceptor.listener.refusedCount == 1)
        _ = tenth
        acceptor.listener.close()
    }

    @Test func aConnectionBeyondTheTotalLimitIsRefusedEvenBelowThePerAddressLimit() async throws {
        var settings = PeerListener.Settings()
        settings.maxLinks = 3   // under maxLinksPerAddress (8): only the total limit can refuse
        let acceptor = try AcceptorFixture(settings: settings)
        let port = acceptor.port
        let peers = try await offPool { () -> UncheckedBox<[RawPeer]> in
            UncheckedBox(try (0..<3).map { _ in try RawPeer(port: port) })
        }
        #expect(await eventually { acceptor.listener.openLinks == 3 })
        let fourth = try await offPool { try RawPeer(port: port).readToEnd() }
        #expect(fourth.eof && fourth.bytes.isEmpty)
        #expect(acceptor.listener.refusedCount == 1)
        #expect(acceptor.listener.openLinks == 3)
        _ = peers.value.count
        acceptor.listener.close()
    }

    @Test func sendRefusesOverTheHighWaterMarkWhenThePeerDoesNotRead() async throws {
        var settings = PeerListener.Settings()
        settings.link.outputHighWater = 1 << 20
        let acceptor = try AcceptorFixture(settings: settings)
        let port = acceptor.port
        let raw = try await offPool { () -> UncheckedBox<RawPeer> in
            let raw = try RawPeer(port: port)
            _ = try raw.handshake(identity: .generate())
            return UncheckedBox(raw)
        }
        #expect(await eventually { acceptor.firstEvents?.established.withLock { $0 } != nil })
        let link = try #require(acceptor.firstLink)
        let chunk = [UInt8](repeating: 1, count: 64 << 10)
        var accepted = 0
        while link.send(chunk) {
            accepted += 1
            if accepted > 10_000 { break }   // unbounded: fail below
            if accepted % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }  // let the socket fill
        }
        #expect(accepted < 10_000)
        #expect(link.bufferedOutput <= (1 << 20) + chunk.count + 64)
        #expect(link.send(chunk) == false)
        #expect(acceptor.firstEvents?.writable.withLock { $0 } == 0)

        // Once the reader catches up, onWritable fires and send works again.
        let total = accepted * (chunk.count + Frames.headerLength + Frames.tagLength)
        let drained = try await offPool { raw.value.read(total).count }
        #expect(drained == total)
        #expect(await eventually { acceptor.firstEvents?.writable.withLock { $0 } == 1 })
        #expect(link.send(chunk))
        link.close()
        acceptor.listener.close()
    }

    /// A peer that resets the connection the moment it is made (a daemon killed just as we
    /// dialled it): writing msg1 in `start()` fails and closes the link, and closing resumes
    /// the read source to cancel it. `start()` once resumed it a second time, and libdispatch
    /// aborts the process on an over-resume — the crash loop test caught a daemon dying so.
    @Test func aPeerThatResetsTheConnectionBeforeMessage1ClosesTheLinkWithoutACrash() async throws {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { Glibc.close(server) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, length) == 0 && getsockname(server, $0, &length) == 0 }
        }
        #expect(bound && listen(server, 4) == 0)
        let port = UInt16(bigEndian: address.sin_port)
        let queue = DispatchQueue(label: "test.reset")
        let stream: UncheckedBox<TCPStream> = try await withCheckedThrowingContinuation { continuation in
            TCPDialer.connect(host: "127.0.0.1", port: port, timeout: .seconds(2), queue: queue) { result in
                switch result {
                case .failure(let error): continuation.resume(throwing: error)
                case .success(let stream): continuation.resume(returning: UncheckedBox(stream))
                }
            }
        }
        // The peer accepts and resets (SO_LINGER 0: close sends RST), before we write a byte.
        let accepted = accept(server, nil, nil)
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(accepted, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(accepted)
        try await Task.sleep(for: .milliseconds(100))   // the RST has arrived

        let events = LinkEvents()
        let link = PeerLink(stream: stream.value, role: .initiator, identity: .generate(), queue: queue)
        events.attach(link)
        link.start()
        #expect(await eventually { events.closed.withLock { $0 } != nil })
        if case .ioFailed? = events.closed.withLock({ $0 }) {} else {
            Issue.record("closed with \(String(describing: events.closed.withLock { $0 })), not an I/O failure")
        }
        #expect(events.established.withLock { $0 } == nil)
    }
}
