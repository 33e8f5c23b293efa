import Dispatch
import MentorSystem

/// Notices when this machine's addresses change — an interface lost or regained its carrier, an
/// address was added or removed (DHCP on a new network, a laptop moving between segments) — and
/// reports the new `NetworkSnapshot` once things have settled.
///
/// How: the kernel's netlink route notifications (RTM_NEWADDR/DELADDR for IPv4 and IPv6,
/// RTM_NEWLINK/DELLINK) on a Dispatch read source, so nothing runs while nothing changes; when
/// one arrives the notifications are only drained (none is parsed) and the addresses are read
/// with `getifaddrs` at once and again `settle` later, each reading compared with the last. A
/// burst of notifications (a move brings carrier down, addresses flushed and added, carrier up)
/// thus gives at most two readings — the first usually sees the carrier gone, so links over that
/// interface end even when it comes back with the same addresses (an IPv6 link-local address
/// stays across a move) — and the readings, not the messages, are the truth. Where no netlink socket
/// can be opened (a sandbox without AF_NETLINK), the addresses are read every `pollInterval`
/// instead, and that is logged once.
///
/// Events run on `queue`. `@unchecked Sendable`: mutable state is touched only on `queue`.
public final class NetworkMonitor: @unchecked Sendable {
    public struct Settings: Sendable {
        /// From the first notification of a burst to the reading.
        public var settle: Duration = .milliseconds(250)
        /// Reading interval when netlink is unavailable.
        public var pollInterval: Duration = .seconds(2)
        public init() {}
    }

    private let queue: DispatchQueue
    private let settings: Settings
    private let logger: any Logger
    private let read: @Sendable () throws(SystemError) -> [InterfaceAddress]
    private let handler: (NetworkSnapshot.Change) -> Void

    // Confined to queue:
    private var socket: FileDescriptor?
    private var source: DispatchSourceRead?
    private var poller: DispatchSourceTimer?
    private var pending: DispatchWorkItem?
    private var current = NetworkSnapshot()
    private var running = false

    public init(queue: DispatchQueue, settings: Settings = Settings(), logger: some Logger = DiscardingLogger(),
                read: @escaping @Sendable () throws(SystemError) -> [InterfaceAddress] = { () throws(SystemError) in try Syscall.interfaceAddresses() },
                handler: @escaping (NetworkSnapshot.Change) -> Void) {
        self.queue = queue
        self.settings = settings
        self.logger = logger
        self.read = read
        self.handler = handler
    }

    deinit {
        // Cancelling is safe from any thread; the read source's cancel handler closes the socket.
        pending?.cancel()
        source?.cancel()
        poller?.cancel()
    }

    /// Reads the addresses (the first snapshot, not reported as a change) and starts watching.
    /// Returns the first snapshot. Call on `queue`.
    @discardableResult
    public func start() -> NetworkSnapshot {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !running else { return current }
        running = true
        current = snapshot() ?? NetworkSnapshot()
        do throws(SystemError) {
            let fd = try Syscall.netlinkRouteSocket()
            let source = DispatchSource.makeReadSource(fileDescriptor: fd.raw, queue: queue)
            source.setEventHandler { [weak self] in self?.readable() }
            source.setCancelHandler { try? fd.close() }
            socket = fd
            self.source = source
            source.resume()
        } catch {
            logger.info("netlink unavailable; reading the network's addresses every few seconds instead",
                        ["error": "\(error)", "interval": "\(settings.pollInterval)"])
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let interval = DispatchTimeInterval.nanoseconds(Int(settings.pollInterval.nanoseconds))
            timer.schedule(deadline: .now() + interval, repeating: interval)
            timer.setEventHandler { [weak self] in self?.check() }
            poller = timer
            timer.resume()
        }
        return current
    }

    /// Stops watching. Call on `queue`; idempotent.
    public func stop() {
        dispatchPrecondition(condition: .onQueue(queue))
        running = false
        pending?.cancel()
        pending = nil
        source?.cancel()
        source = nil
        socket = nil
        poller?.cancel()
        poller = nil
    }

    /// The last reading.
    public var snapshotNow: NetworkSnapshot {
        dispatchPrecondition(condition: .onQueue(queue))
        return current
    }

    /// Reads the addresses now and reports a change if they differ from the last reading (what a
    /// netlink notification leads to after `settle`; for tests, and for a caller that knows the
    /// network changed). Call on `queue`.
    public func checkNow() {
        dispatchPrecondition(condition: .onQueue(queue))
        check()
    }

    private func readable() {
        guard running, let socket else { return }
        do throws(SystemError) {
            guard try Syscall.drainNetlink(socket) > 0 else { return }
        } catch {
            logger.debug("reading netlink failed", ["error": "\(error)"])
        }
        guard pending == nil else { return }
        // Read at once (the first notification of a burst is often the carrier going: links
        // over that interface must go even if it is back, with the same addresses, by the
        // time the burst settles), and again once it has settled.
        check()
        let work = DispatchWorkItem { [weak self] in
            self?.pending = nil
            self?.check()
        }
        pending = work
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(settings.settle.nanoseconds)), execute: work)
    }

    /// Reads the addresses; reports a change when they differ from the last reading.
    private func check() {
        guard running, let fresh = snapshot(), fresh != current else { return }
        let change = NetworkSnapshot.Change(old: current, new: fresh)
        current = fresh
        handler(change)
    }

    private func snapshot() -> NetworkSnapshot? {
        do throws(SystemError) { return NetworkSnapshot(try read()) } catch {
            logger.info("cannot read the network's addresses", ["error": "\(error)"])
            return nil
        }
    }
}
