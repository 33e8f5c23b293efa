import Dispatch
import MentorCrypto
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// The accepting side of the peer transport: accepts on a read source, applies the connection
/// limits, and runs each admitted connection as a responder `PeerLink`.
///
/// Limits (issue 4, item 5): at most `maxLinksPerAddress` links per remote IP and `maxLinks` in
/// all; a connection beyond either is closed at once, before any handshake byte, and counted in
/// `refusedCount` (logged per address at a slowing rate: 1 s, 2 s, 4 s … apart).
///
/// A host under a refusal (`refusal` answers a reason) is closed at once too, logged the same way.
/// The log's rate is measured by the links' clock, `settings.link.now`.
///
/// `accepted` runs on `queue` for each admitted link, before `start()`: set its callbacks there.
///
/// `@unchecked Sendable`: mutable state is confined to `queue`; the public accessors hop there.
public final class PeerListener: @unchecked Sendable {
    public struct Settings: Sendable {
        public var maxLinksPerAddress = 8
        public var maxLinks = 256
        public var link = PeerLink.Settings()
        public init() {}
    }

    public let settings: Settings
    public let address: PeerAddress
    private let identity: SigningKeyPair
    private let queue: DispatchQueue
    private let logger: any Logger
    private let accepted: (PeerLink) -> Void
    /// Called on `queue` for each accepted connection's host: a reason refuses it before any
    /// handshake byte. Set before `start()`.
    public var refusal: (String) -> String? = { _ in nil }

    // Confined to queue:
    private var listener: TCPListener?
    private var source: DispatchSourceRead?
    private var perAddress: [String: Int] = [:]
    private var total = 0
    private var refused = 0
    /// Refusals are logged per address at a slowing rate (1 s, 2 s, 4 s … apart).
    private var throttle = LogThrottle()
    private var acceptFailure = RecurringFailure()
    /// The accept source is suspended for a moment after a failed accept.
    private var paused = false

    public init(listener: TCPListener, identity: SigningKeyPair, queue: DispatchQueue,
                settings: Settings = Settings(), logger: some Logger = DiscardingLogger(),
                accepted: @escaping (PeerLink) -> Void) {
        self.listener = listener
        self.address = listener.address
        self.identity = identity
        self.queue = queue
        self.settings = settings
        self.logger = logger
        self.accepted = accepted
    }

    /// Let go of without `close()`: the source is not left suspended (releasing a suspended
    /// source crashes libdispatch) nor watching; its cancel handler closes the descriptor. Only
    /// the source's cancel handler (which holds the listener, not this object) and a pause's
    /// timer (weak) can still run, so nothing else touches `source` or `paused` here.
    deinit {
        guard let source else { return }
        if paused { source.resume() }
        source.cancel()
    }

    /// Starts accepting.
    public func start() {
        queue.async { [self] in
            guard let listener, source == nil else { return }
            let source = DispatchSource.makeReadSource(fileDescriptor: listener.descriptor.raw, queue: queue)
            source.setEventHandler { [weak self] in self?.acceptPending() }
            // The listening descriptor closes only once the source is gone.
            source.setCancelHandler { [listener] in listener.close() }
            self.source = source
            source.resume()
        }
    }

    /// Stops accepting (graceful: links already open go on). Idempotent.
    public func close() {
        queue.async { [self] in
            if let source, paused {
                paused = false
                source.resume()  // a suspended source must be resumed to be cancelled
            }
            if let source { source.cancel() } else { listener?.close() }
            source = nil
            listener = nil
        }
    }

    /// Connections closed at once by a limit.
    public var refusedCount: Int { queue.sync { refused } }
    /// Links open now.
    public var openLinks: Int { queue.sync { total } }

    private func acceptPending() {
        for _ in 0..<64 {
            guard let listener else { return }
            let stream: TCPStream
            do throws(SystemError) {
                switch try listener.accept() {
                case .wouldBlock: return
                case .done(let s): stream = s
                }
            } catch {
                if error.errno == ECONNABORTED || error.errno == EPROTO { continue }  // the peer gave up first
                // Out of descriptors or memory: the listener stays readable, so pause instead of
                // spinning on it; logged once, then at a slowing rate.
                if let missed = acceptFailure.failed(now: settings.link.now()) {
                    logger.info("accepting a peer connection failed", ["error": "\(error)", "unreported": "\(missed)"])
                }
                pause()
                return
            }
            if acceptFailure.recovered() > 0 { logger.info("accepting peer connections again", [:]) }
            admit(stream)
        }
        queue.async { [weak self] in self?.acceptPending() }
    }

    private func pause() {
        guard let source, !paused else { return }
        paused = true
        source.suspend()
        queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
            guard let self, self.paused else { return }
            self.paused = false
            if let source = self.source {
                source.resume()
                self.acceptPending()
            }
        }
    }

    private func admit(_ stream: TCPStream) {
        let host = stream.remote.host
        if let reason = refusal(host) {
            refused += 1
            let (log, suppressed) = throttle.admit("refused " + host + "\u{0}" + reason, now: settings.link.now())
            if log {
                logger.info("peer connection refused", ["peer.address": "\(stream.remote)", "reason": reason,
                                                        "suppressed": "\(suppressed)"])
            }
            stream.close()
            return
        }
        let count = perAddress[host, default: 0]
        guard count < settings.maxLinksPerAddress, total < settings.maxLinks else {
            refused += 1
            let (log, suppressed) = throttle.admit("limit " + host, now: settings.link.now())
            if log {
                logger.info("peer connection refused: limit reached",
                            ["peer.address": "\(stream.remote)", "limit.address": "\(settings.maxLinksPerAddress)",
                             "limit.total": "\(settings.maxLinks)", "suppressed": "\(suppressed)"])
            }
            stream.close()
            return
        }
        perAddress[host] = count + 1
        total += 1
        let link = PeerLink(stream: stream, role: .responder, identity: identity, queue: queue,
                            settings: settings.link, logger: logger)
        link.closeHook = { [weak self] in
            guard let self else { return }
            self.total -= 1
            let left = (self.perAddress[host] ?? 1) - 1
            self.perAddress[host] = left > 0 ? left : nil
        }
        accepted(link)
        link.start()
    }
}
