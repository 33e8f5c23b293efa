import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore
import Testing
@testable import MentorNode
import MentorSystem

/// A link's `SyncHost` over a fake shell: what the driver asks reaches the shell for this
/// link, the link's timers replace each other and stop with the link, a peer that asks for
/// blobs faster than it reads is refused, and nothing is done once the link is gone. And the
/// driver's settings come from the manager's: the lazy-push rate is the driver's (§13.7).
@Suite(.serialized) struct LinkHostTests {
    final class FakeShell: LinkShell {
        let node: TestNode
        var isStopped = false
        var replica: Replica { node.node.replica }
        var scheduled: [(work: DispatchWorkItem, at: ContinuousClock.Instant)] = []
        var sent: [SyncMessage] = []
        var applied: [[[UInt8]]] = []
        var served: [[UInt8]] = []
        var nearby = 0, progressed = 0, ran = 0
        var finished: [(reason: String, blame: Bool)] = []
        init() throws { node = try TestNode() }

        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) { scheduled.append((work, at)) }
        func send(_ message: SyncMessage, on connection: PeerConnection) { sent.append(message) }
        func pushSignal(_ signal: PushSignal, on connection: PeerConnection) {}
        func verifyAndApply(_ batch: [[UInt8]], from connection: PeerConnection) { applied.append(batch) }
        func announceSync(_ connection: PeerConnection) { progressed += 1 }
        func publishNearby() { nearby += 1 }
        func answerBlobRequest(_ hash: [UInt8], on connection: PeerConnection) { served.append(hash) }
        func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8], on connection: PeerConnection) -> String? { nil }
        func sessionFinished(_ connection: PeerConnection, reason: String, blame: Bool) { finished.append((reason, blame)) }
        func sessionRan(_ connection: PeerConnection) { ran += 1 }
        var offers: [[UInt8]] = []
        func linkOffer(_ offer: [UInt8], on connection: PeerConnection) -> String? {
            offers.append(offer)
            return offer == [0xBA, 0xD0] ? "malformed link offer: bad" : nil
        }
    }

    final class Dialled: @unchecked Sendable {
        var result: Result<TCPStream, SystemError>?
        let done = DispatchSemaphore(value: 0)
    }

    /// A link (never started) on loopback, its connection, and a driver whose host is a `LinkHost`.
    static func linked(_ shell: FakeShell, listener: TCPListener, settings: SyncDriver.Settings = .init()) throws -> PeerConnection {
        let queue = DispatchQueue(label: "LinkHostTests")
        let dialled = Dialled()
        TCPDialer.connect(host: "127.0.0.1", port: listener.boundPort, timeout: .seconds(5), queue: queue) { result in
            dialled.result = result
            dialled.done.signal()
        }
        dialled.done.wait()
        let stream = try #require(try dialled.result?.get())
        let link = PeerLink(stream: stream, role: .responder, identity: .generate(), queue: queue)
        let connection = PeerConnection(link: link, via: .incoming, staticIndex: nil,
                                        pacer: AckPacer(recordsPerSecond: 100, burst: 100, now: .now), serial: 1,
                                        here: MessageGate(tag: SyncMessage.hereTag, burst: 8, period: .seconds(30)),
                                        linkOffers: MessageGate(tag: SyncMessage.linkTag, burst: 4, period: .seconds(30)))
        connection.driver = SyncDriver(session: SyncSession(role: .responder, hashing: ReconHash.hashing), settings: settings,
                                       host: LinkHost(shell: shell, connection: connection))
        return connection
    }

    @Test func theDriversSettingsAreTheManagersAndTheLazyPushRateIsNeverOff() {
        var settings = PeerManager.Settings()
        #expect(settings.driver.treeBurst == 512 && settings.driver.treePeriod == .seconds(30))
        settings.reconInterval = .seconds(7)
        settings.reconBurst = 3
        settings.reconPeriod = .seconds(4)
        settings.wantBurst = 5
        settings.wantPeriod = .seconds(6)
        settings.treeBurst = 9
        settings.treePeriod = .seconds(11)
        let d = settings.driver
        #expect(d.roundInterval == .seconds(7) && d.reconBurst == 3 && d.reconPeriod == .seconds(4))
        #expect(d.wantBurst == 5 && d.wantPeriod == .seconds(6) && d.treeBurst == 9 && d.treePeriod == .seconds(11))
        settings.treeBurst = 0
        #expect(settings.driver.treeBurst == 1, "as the shell's bucket was: at least one message per period")
    }

    /// The daemon's figures in the driver: 512 `ihave`/`prune`/`graft` pass, `here` and `hello`
    /// do not count, the 513th ends the session as an offence with the reason the shell gave.
    @Test func theDaemonsLazyPushRateEndsTheSessionWithBlameOnTheMessagePastIt() throws {
        let shell = try FakeShell()
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let connection = try Self.linked(shell, listener: listener, settings: PeerManager.Settings().driver)
        defer { connection.link.close() }
        let driver = connection.driver!
        driver.start(salt: [UInt8](repeating: 1, count: 16), held: 0)
        driver.receive(bytes: SyncMessage.hello(salt: [UInt8](repeating: 2, count: 16), held: 0).encoded)
        let ihave = SyncMessage.ihave([[UInt8](repeating: 7, count: 32)]).encoded
        let here = SyncMessage.here([]).encoded
        for n in 0..<512 {
            driver.receive(bytes: n % 3 == 0 ? SyncMessage.prune.encoded : ihave)
            if n % 50 == 0 { driver.receive(bytes: here) }
        }
        #expect(shell.finished.isEmpty, "512 in 30 s pass: \(shell.finished)")
        driver.receive(bytes: SyncMessage.graft([[UInt8](repeating: 8, count: 32)]).encoded)
        #expect(shell.finished.count == 1)
        #expect(shell.finished.first?.blame == true)
        // As `driver.violation(excess)` from the shell said it: the session's violation of the same text.
        #expect(shell.finished.first?.reason == "protocol violation: more than 512 ihave/prune/graft messages in \(Duration.seconds(30))")
        #expect(shell.nearby > 0, "the `here`s reached the shell")
    }

    @Test func aLinksTimersReplaceEachOtherAndDoNothingOnceItCloses() throws {
        let shell = try FakeShell()
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let connection = try Self.linked(shell, listener: listener)
        defer { connection.link.close() }
        let host = try #require(LinkHost(shell: shell, connection: connection) as LinkHost?)
        let t0 = ContinuousClock.now
        host.schedule(.round, at: t0 + .seconds(60))
        host.schedule(.round, at: t0 + .seconds(30))
        #expect(shell.scheduled.count == 2 && shell.scheduled[1].at == t0 + .seconds(30))
        #expect(shell.scheduled[0].work.isCancelled, "a new timer of a kind replaces the pending one")
        #expect(connection.timers[.round] === shell.scheduled[1].work)
        shell.scheduled[1].work.perform()
        #expect(connection.timers[.round] == nil, "fired")

        host.schedule(.deferralRetry, at: t0)
        connection.closing = true
        shell.scheduled[2].work.perform()
        #expect(connection.timers[.deferralRetry] != nil, "a link closing fires nothing")
        #expect(!host.isOpen)
        connection.closing = false
        #expect(host.isOpen)
        shell.isStopped = true
        #expect(!host.isOpen)
    }

    @Test func aPeerAskingForBlobsFasterThanItReadsIsRefused() throws {
        let shell = try FakeShell()
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let connection = try Self.linked(shell, listener: listener)
        defer { connection.link.close() }
        let host = LinkHost(shell: shell, connection: connection)
        let hash = [UInt8](repeating: 3, count: 32)
        #expect(host.serveBlob(hash: hash) == nil)
        #expect(shell.served == [hash])
        connection.unsent = [[UInt8](repeating: 0, count: 2 * Limits.maxPhotoBytes + 1)]
        #expect(host.serveBlob(hash: hash) == "asks for blobs faster than it reads them")
        #expect(shell.served == [hash], "not served again")
    }

    @Test func whatTheDriverAsksReachesTheShellForThisLinkAndNothingOnceTheLinkIsGone() throws {
        let shell = try FakeShell()
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        var connection: PeerConnection? = try Self.linked(shell, listener: listener)
        let host = LinkHost(shell: shell, connection: connection!)
        let account = PublicKey(bytes: [UInt8](repeating: 4, count: 32))!
        host.peerAccounts([account, account])
        #expect(connection?.accounts == [account] && shell.nearby == 1)
        host.send(.prune)
        host.apply([[1, 2, 3]])
        host.progress(sent: 1, received: 2)
        host.didRun()
        #expect(host.linkOffer([1, 2]) == nil && host.linkOffer([0xBA, 0xD0]) == "malformed link offer: bad",
                "the offer reaches the shell, and the shell's reason comes back")
        #expect(shell.offers == [[1, 2], [0xBA, 0xD0]])
        host.finished("bad frame", blame: true)
        #expect(shell.sent == [.prune] && shell.applied == [[[1, 2, 3]]] && shell.progressed == 1 && shell.ran == 1)
        #expect(shell.finished.count == 1 && shell.finished[0] == ("bad frame", true))

        connection?.link.close()
        connection = nil
        #expect(host.connection == nil)
        #expect(!host.isOpen)
        host.send(.prune)
        host.finished("again", blame: true)
        host.peerAccounts([account])
        #expect(host.linkOffer([1, 2]) == nil)
        #expect(shell.sent.count == 1 && shell.finished.count == 1 && shell.nearby == 1 && shell.offers.count == 2,
                "nothing after the link is gone")
    }
}
