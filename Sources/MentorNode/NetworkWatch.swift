import Dispatch
import Foundation
import MentorNet
import MentorSystem

/// Roaming (OPERATIONS.md "Roaming between networks"): watches this machine's addresses
/// (`NetworkMonitor`: netlink notifications, then one `getifaddrs` reading) and, when they
/// change, tells the peer manager — links whose local address is gone close at once, static
/// peers are redialled now — and, when the machine may be on another segment (an address went,
/// an interface came), discovery, which browses afresh so the new segment's nodes are found
/// without waiting for the old browse's next query. Keeps what `status.network` shows:
/// the interfaces and addresses now, when they last changed, and how often.
///
/// `@unchecked Sendable`: the monitor is confined to `queue`; `status` reads a locked copy.
public final class NetworkWatch: @unchecked Sendable {
    private let queue = DispatchQueue(label: "MentorNode.NetworkWatch")
    private let logger: any Logger
    private let now: @Sendable () -> UInt64
    private var monitor: NetworkMonitor!
    private let lock = NSLock()
    private var state_ = NetworkStatus(interfaces: [:], changedAt: nil, changes: 0)

    /// `onChange` runs on the watch's queue after the peer manager and discovery were told.
    public init(peers: PeerManager, discovery: DiscoveryController?, settings: NetworkMonitor.Settings = .init(),
                now: @escaping @Sendable () -> UInt64, logger: some Logger = DiscardingLogger(),
                read: (@Sendable () throws(SystemError) -> [InterfaceAddress])? = nil) {
        self.logger = logger
        self.now = now
        let handler: (NetworkSnapshot.Change) -> Void = { [weak self, weak peers, weak discovery] change in
            guard let self else { return }
            let at = self.now()
            self.lock.withLock {
                self.state_ = NetworkStatus(interfaces: change.new.interfaces, changedAt: at, changes: self.state_.changes + 1)
            }
            self.logger.info("network changed", ["addresses": change.new.description,
                                                   "vanished": change.vanished.sorted().joined(separator: ","),
                                                   "appeared": change.appeared.sorted().joined(separator: ",")])
            peers?.networkChanged(change)
            // A fresh browse only when the machine may be on another segment (it reports every
            // instance lost and found again, which costs a redial of each).
            if change.mayHaveMoved { discovery?.networkChanged() }
        }
        // (Two calls, not `read ?? default`: Swift 6.3's compiler crashes on a typed-throws
        // closure in `??`.)
        if let read {
            monitor = NetworkMonitor(queue: queue, settings: settings, logger: logger, read: read, handler: handler)
        } else {
            monitor = NetworkMonitor(queue: queue, settings: settings, logger: logger, handler: handler)
        }
    }

    /// Reads the addresses and starts watching (waits for the first reading).
    public func start() {
        queue.sync {
            let first = monitor.start()
            lock.withLock { state_.interfaces = first.interfaces }
        }
    }

    public func stop() {
        queue.sync { monitor.stop() }
    }

    /// What `status.network` shows. Never waits on the watch's queue.
    public var status: NetworkStatus { lock.withLock { state_ } }
}
