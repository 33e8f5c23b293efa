#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MentorCrypto
import MentorSystem

/// One TCP connection to a peer: the handshake (Handshake.swift), then encrypted frames
/// (Frames.swift), driven by a read and a write source on one serial queue.
///
/// ```swift
/// let link = PeerLink(stream: stream, role: .initiator, identity: key, queue: queue)
/// link.onEstablished = { nodeKey in ... }
/// link.onMessage = { bytes in ... }
/// link.onClosed = { reason in ... }
/// link.start()
/// ```
///
/// - Handshake: exactly 64 / 144 / 112 bytes are read for its three messages (never more, so
///   frames sent right behind msg3 stay in the socket for the decoder); it must finish within
///   `settings.handshakeTimeout`, else the connection closes. A responder that sees a wrong
///   network key sends nothing at all.
/// - Frames: lengths are checked by `FrameDecoder` before anything is allocated; a frame that
///   does not open ends the link.
/// - Backpressure: `send` refuses (returns false) while more than `settings.outputHighWater`
///   bytes wait for the socket; `onWritable` then fires once the backlog is under half of it.
/// - Every failure closes the link once, with a `CloseReason` naming the problem, logged once
///   with the peer's address.
///
/// Callbacks run on `queue`; they must not block. Set them before `start()`.
///
/// `@unchecked Sendable`: all mutable state is touched only on `queue` — sources deliver there,
/// and `send`/`close` from other threads go through `queue.sync`/`queue.async`.
public final class PeerLink: @unchecked Sendable {
    public struct Settings: Sendable {
        public var networkKey: NetworkKey = .default
        /// From the first byte to the end of the handshake.
        public var handshakeTimeout: Duration = .seconds(5)
        /// `send` refuses while this many bytes wait to be written.
        public var outputHighWater = 4 << 20
        /// How long `close()` waits for queued output to drain.
        public var closeLinger: Duration = .seconds(2)
        /// An established link sends a keep-alive (an empty frame) when it sent nothing for this
        /// long, and closes (`.silent`) when it received nothing for `silenceTimeout`: so a peer
        /// whose host left or whose network went down is noticed without a FIN.
        public var keepaliveInterval: Duration = .seconds(5)
        public var silenceTimeout: Duration = .seconds(15)
        /// The clock keep-alives and silence are measured by (tests hold a manual one; the
        /// ticker still runs on Dispatch's clock, every `min(keepaliveInterval, silenceTimeout / 3)`).
        public var now: @Sendable () -> ContinuousClock.Instant = { .now }

        public init() {}
    }

    /// Why a link closed.
    public enum CloseReason: Sendable, Equatable, CustomStringConvertible {
        /// `close()` was called.
        case closedLocally
        /// The peer closed the connection (`duringHandshake`: before it completed — often a
        /// wrong network key).
        case peerClosed(duringHandshake: Bool)
        /// The handshake did not finish within the deadline.
        case handshakeTimedOut(Duration)
        /// A handshake message was refused (`code` is `HandshakeError.Code.name`).
        case handshakeFailed(code: String, message: String)
        /// A frame was over the limit, malformed, or did not authenticate.
        case frameRejected(String)
        /// Reading or writing the socket failed.
        case ioFailed(String)
        /// Refused by a connection limit before the handshake.
        case refused(String)
        /// Nothing (not even a keep-alive) arrived for this long after the handshake.
        case silent(Duration)

        public var description: String {
            switch self {
            case .closedLocally: "closed locally"
            case .peerClosed(let during): during ? "peer closed the connection during the handshake (a wrong network key?)"
                                                 : "peer closed the connection"
            case .handshakeTimedOut(let d): "handshake not finished within \(d)"
            case .handshakeFailed(let code, let message): "handshake failed (\(code)): \(message)"
            case .frameRejected(let message): "frame rejected: \(message)"
            case .ioFailed(let message): "socket error: \(message)"
            case .refused(let message): "refused: \(message)"
            case .silent(let d): "nothing received for \(d) (the peer's host left or the network is down)"
            }
        }
    }

    /// Which end of the handshake this side is: the handshake's own role (one type, not two).
    public typealias Role = Handshake.Role

    /// Largest message `send` takes (one frame's plaintext, 1 MiB).
    public static let maximumMessageLength = Frames.maximumPlaintextLength

    public let remote: PeerAddress
    /// Our end of the connection (`TCPStream.local`).
    public let local: PeerAddress
    public let role: Role
    public let settings: Settings
    public let queue: DispatchQueue

    public var onEstablished: (SigningPublicKey) -> Void = { _ in }
    public var onMessage: ([UInt8]) -> Void = { _ in }
    public var onWritable: () -> Void = {}
    public var onClosed: (CloseReason) -> Void = { _ in }
    /// For the owner (`PeerListener`): after `onClosed`.
    var closeHook: () -> Void = {}

    private let logger: any Logger
    private let descriptor: FileDescriptor
    /// Made by `start()`, so a link closed before it never holds an inactive source.
    private var readSource: DispatchSourceRead!
    private var writeSource: DispatchSourceWrite!
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    private static let onQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    private enum Phase {
        case idle
        case handshaking
        /// With the frame keys the handshake made, both ways.
        case established(FrameKeys)
        case closing(CloseReason)
        case closed
    }

    /// An established link's frame keys: the sealer's and opener's nonces advance in place.
    private final class FrameKeys {
        var sealer: FrameSealer
        var opener: FrameOpener
        init(_ session: Handshake.Session) {
            sealer = FrameSealer(session: session)
            opener = FrameOpener(session: session)
        }
    }

    // Confined to queue:
    private var phase = Phase.idle
    private var initiator: HandshakeInitiator?
    private var responder: HandshakeResponder?
    private var handshakeBytes: [UInt8] = []
    private var handshakeNeed = 0
    private var deadline: DispatchWorkItem?
    private var decoder = FrameDecoder()
    private var output = FIFO<[UInt8]>()
    private var outputHead = 0
    private var outputBytes = 0
    private var refusedSend = false
    private var reading = false
    private var writing = false
    private var liveSources = 2
    /// Keep-alive and silence checks of an established link.
    private var ticker: DispatchSourceTimer?
    private var lastSent: ContinuousClock.Instant
    private var lastReceived: ContinuousClock.Instant
    /// The peer's node key once the handshake completed.
    private var peerKey: SigningPublicKey?

    public init(stream: TCPStream, role: Role, identity: SigningKeyPair, queue: DispatchQueue,
                settings: Settings = Settings(), logger: some Logger = DiscardingLogger()) {
        self.remote = stream.remote
        self.local = stream.local
        self.role = role
        self.settings = settings
        self.queue = queue
        self.logger = logger
        self.descriptor = stream.descriptor
        lastSent = settings.now()
        lastReceived = lastSent
        switch role {
        case .initiator: initiator = HandshakeInitiator(networkKey: settings.networkKey, identity: identity)
        case .responder: responder = HandshakeResponder(networkKey: settings.networkKey, identity: identity)
        }
        queue.setSpecific(key: Self.onQueueKey, value: ObjectIdentifier(queue))
    }

    deinit { readBuffer.deallocate() }

    /// Starts the handshake (and its deadline). Call once, after setting the callbacks.
    public func start() {
        perform {
            guard case .idle = self.phase else { return }
            self.phase = .handshaking
            self.readSource = DispatchSource.makeReadSource(fileDescriptor: self.descriptor.raw, queue: self.queue)
            self.writeSource = DispatchSource.makeWriteSource(fileDescriptor: self.descriptor.raw, queue: self.queue)
            self.readSource.setEventHandler { [weak self] in self?.readable() }
            self.writeSource.setEventHandler { [weak self] in self?.flush() }
            // Both sources hold the descriptor; it closes when the last is cancelled.
            let release: @Sendable () -> Void = { [self] in
                self.liveSources -= 1
                if self.liveSources == 0 { try? self.descriptor.close() }
            }
            self.readSource.setCancelHandler(handler: release)
            self.writeSource.setCancelHandler(handler: release)
            let timeout = self.settings.handshakeTimeout
            let deadline = DispatchWorkItem { [weak self] in
                guard let self, case .handshaking = self.phase else { return }
                self.fail(.handshakeTimedOut(timeout))
            }
            self.deadline = deadline
            self.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds)), execute: deadline)
            switch self.role {
            case .initiator:
                let message1 = self.initiator!.start()
                self.handshakeNeed = Handshake.message2Length
                self.enqueue(message1)
            case .responder:
                self.handshakeNeed = Handshake.message1Length
            }
            // Writing msg1 may already have failed (the peer reset the connection the moment it
            // was made, e.g. it was just killed): that closed the link, and closing resumed the
            // read source to cancel it. Resuming it again would crash the daemon.
            guard case .handshaking = self.phase else { return }
            self.reading = true
            self.readSource.resume()
        }
    }

    /// The peer's node key, once established.
    public var peerNodeKey: SigningPublicKey? { onQueue { self.peerKey } }

    /// Bytes waiting to be written.
    public var bufferedOutput: Int { onQueue { self.outputBytes } }

    /// Seals `plaintext` as one frame and queues it. False when the link is not established (or
    /// closed), or while more than `outputHighWater` bytes wait: then `onWritable` fires once the
    /// backlog has drained to half of it. At most `maximumMessageLength` bytes.
    public func send(_ plaintext: [UInt8]) -> Bool {
        precondition(plaintext.count <= Self.maximumMessageLength,
                     "PeerLink.send: \(plaintext.count) bytes is over the \(Self.maximumMessageLength)-byte message limit; split it")
        return onQueue {
            guard case .established(let keys) = self.phase else { return false }
            guard self.outputBytes <= self.settings.outputHighWater else {
                self.refusedSend = true
                return false
            }
            let frame: [UInt8]
            do { frame = try keys.sealer.seal(plaintext) } catch { return false }
            self.enqueue(frame)
            return true
        }
    }

    /// Closes gracefully: nothing more is read or accepted by `send`; what is queued is written
    /// (for up to `closeLinger`), then the connection closes. `onClosed(.closedLocally)`.
    public func close() {
        perform { self.beginClose(.closedLocally) }
    }

    // MARK: Queue confinement

    private var isOnQueue: Bool { DispatchQueue.getSpecific(key: Self.onQueueKey) == ObjectIdentifier(queue) }

    private func onQueue<T>(_ body: () -> T) -> T {
        isOnQueue ? body() : queue.sync(execute: body)
    }

    private func perform(_ body: @escaping @Sendable () -> Void) {
        if isOnQueue { body() } else { queue.async(execute: body) }
    }

    // MARK: Reading (on queue)

    private var isOpenForInput: Bool {
        switch phase {
        case .handshaking, .established: true
        default: false
        }
    }

    /// Drains the socket (16 chunks at most, then yields); libdispatch on Linux does not report
    /// an end of stream that came with the last data once that data was read.
    private func readable() {
        for _ in 0..<16 {
            guard isOpenForInput else { return }
            let limit: Int
            if case .handshaking = phase { limit = handshakeNeed - handshakeBytes.count } else { limit = readBuffer.count }
            guard limit > 0 else { return }
            let count: Int
            do throws(SystemError) {
                switch try Syscall.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: readBuffer[..<limit])) {
                case .wouldBlock: return
                case .done(let n): count = n
                }
            } catch {
                fail(.ioFailed("\(error)"))
                return
            }
            if count == 0 {
                if case .handshaking = phase { fail(.peerClosed(duringHandshake: true)) } else { fail(.peerClosed(duringHandshake: false)) }
                return
            }
            let bytes = Array(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]))
            if case .handshaking = phase { handshakeReceived(bytes) } else { framesReceived(bytes) }
        }
        queue.async { [weak self] in self?.readable() }
    }

    private func handshakeReceived(_ bytes: [UInt8]) {
        handshakeBytes += bytes
        guard handshakeBytes.count == handshakeNeed else { return }
        let message = handshakeBytes
        handshakeBytes = []
        let step: Handshake.Step
        do throws(HandshakeError) {
            if role == .initiator { step = try initiator!.receive(message) } else { step = try responder!.receive(message) }
        } catch {
            fail(.handshakeFailed(code: error.code.name, message: "\(error)"))
            return
        }
        switch step {
        case .send(let reply):
            handshakeNeed = Handshake.message3Length
            enqueue(reply)
        case .sendAndDone(let reply, let session):
            enqueue(reply)
            established(session)
        case .done(let session):
            established(session)
        }
    }

    private func established(_ session: Handshake.Session) {
        initiator = nil
        responder = nil
        deadline?.cancel()
        deadline = nil
        peerKey = session.peerNodeKey
        phase = .established(FrameKeys(session))
        startTicker()
        logger.debug("peer link established", ["peer.address": "\(remote)", "peer.key": "\(session.peerNodeKey)"])
        onEstablished(session.peerNodeKey)
    }

    private func framesReceived(_ bytes: [UInt8]) {
        guard case .established(let keys) = phase else { return }
        do throws(FrameError) {
            for body in try decoder.feed(bytes) {
                let plaintext = try keys.opener.open(body)
                lastReceived = settings.now()
                if plaintext.isEmpty { continue }   // a keep-alive
                onMessage(plaintext)
                guard case .established = phase else { return }   // closed by the callback
            }
        } catch {
            fail(.frameRejected("\(error)"))
        }
    }

    // MARK: Writing (on queue)

    private func enqueue(_ bytes: [UInt8]) {
        lastSent = settings.now()
        output.append(bytes)
        outputBytes += bytes.count
        if !writing { flush() }
    }

    private func flush() {
        if case .closed = phase { return }
        while let chunk = output.first {
            let result = chunk.withUnsafeBytes { raw in
                Result { () throws(SystemError) in
                    try Syscall.send(descriptor, UnsafeRawBufferPointer(rebasing: raw[outputHead...]))
                }
            }
            switch result {
            case .failure(let error):
                output.removeAll()
                outputBytes = 0
                fail(.ioFailed("\(error)"))
                return
            case .success(.wouldBlock):
                if !writing {
                    writing = true
                    writeSource.resume()
                }
                return
            case .success(.done(let n)):
                outputHead += n
                outputBytes -= n
                if outputHead == chunk.count {
                    _ = output.popFirst()
                    outputHead = 0
                }
            }
        }
        if writing {
            writing = false
            writeSource.suspend()
        }
        if case .closing(let reason) = phase {
            finishClose(reason)
            return
        }
        if refusedSend && outputBytes <= settings.outputHighWater / 2 {
            refusedSend = false
            onWritable()
        }
    }

    // MARK: Keep-alive (on queue)

    private func startTicker() {
        let period = min(settings.keepaliveInterval, settings.silenceTimeout / 3)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .nanoseconds(Int(period.nanoseconds)), repeating: .nanoseconds(Int(period.nanoseconds)),
                       leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.tick() }
        ticker = timer
        timer.resume()
    }

    /// The ticker's check, run now (tests that move the clock by hand call it after moving it).
    func checkLiveness() { perform { self.tick() } }

    /// When a frame last arrived (by `settings.now`), for tests to wait on.
    var lastFrameReceived: ContinuousClock.Instant { queue.sync { lastReceived } }

    private func tick() {
        guard case .established(let keys) = phase else { return }
        let now = settings.now()
        if now - lastReceived >= settings.silenceTimeout {
            fail(.silent(settings.silenceTimeout))
            return
        }
        if now - lastSent >= settings.keepaliveInterval, let frame = try? keys.sealer.seal([]) {
            enqueue(frame)
        }
    }

    // MARK: Closing (on queue)

    /// Fails the link: closes at once (queued output is dropped), logs the reason once.
    private func fail(_ reason: CloseReason) {
        switch phase {
        case .closed: return
        default: break
        }
        // At debug: the owner logs what matters (offences, once per host) with more context.
        logger.debug("peer link closed", ["peer.address": "\(remote)", "reason": "\(reason)"])
        finishClose(reason)
    }

    private func beginClose(_ reason: CloseReason) {
        switch phase {
        case .idle:
            phase = .closed
            try? descriptor.close()   // no sources exist yet
            onClosed(reason)
            closeHook()
            return
        case .closing, .closed: return
        case .handshaking, .established: break
        }
        phase = .closing(reason)
        if reading {
            reading = false
            readSource.suspend()
        }
        if outputBytes == 0 { finishClose(reason); return }
        let linger = DispatchWorkItem { [weak self] in
            guard let self, case .closing(let reason) = self.phase else { return }
            self.finishClose(reason)
        }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(settings.closeLinger.nanoseconds)), execute: linger)
    }

    private func finishClose(_ reason: CloseReason) {
        if case .closed = phase { return }
        phase = .closed
        deadline?.cancel()
        deadline = nil
        ticker?.cancel()
        ticker = nil
        output.removeAll()
        outputBytes = 0
        // A source must be resumed to be cancelled; the cancel handlers close the descriptor.
        if !reading { readSource.resume() }
        readSource.cancel()
        if !writing { writeSource.resume() }
        writeSource.cancel()
        reading = false
        writing = false
        onClosed(reason)
        closeHook()
        onEstablished = { _ in }
        onMessage = { _ in }
        onWritable = {}
        onClosed = { _ in }
        closeHook = {}
    }
}
