import Dispatch
import Foundation
import MentorNet
import MentorNode
import MentorStore
import Synchronization

/// What the daemon tells systemd (`Type=notify`, docs/OPERATIONS.md "Running under systemd"):
///
/// - `READY=1` once the replica is open, the peer listener listens and the API server accepts —
///   sent from the node's queue after the API server's queue reported it serves, so a client
///   that connects after it is answered;
/// - `STATUS=` with the peers, records and local accounts, refreshed every `statusInterval`;
/// - `WATCHDOG=1` keep-alives. A timer only *starts* a probe; the probe passes through the API
///   server's event loop and then the node's serial queue, and the keep-alive is sent from the
///   node's queue. While either is stuck no keep-alive goes out and systemd restarts the
///   service after `WatchdogSec=`. At most one probe is in flight, so a stuck loop does not
///   pile probes up behind it;
/// - `STOPPING=1` when a graceful stop begins.
///
/// Without `NOTIFY_SOCKET` nothing of this runs.
///
/// `@unchecked Sendable`: `timer` is made and activated (unscheduled: it does not fire) in
/// `init`, scheduled once by `startTimer()` and cancelled by `deinit`;
/// the other mutable state is in `state` (a `Mutex`); the rest is immutable.
final class ServiceWatch: @unchecked Sendable {
    private let notifier: ServiceNotifier
    private let node: Node
    private let server: APIServer
    private let replica: Replica
    private let peers: @Sendable () -> Int
    private let logger: DaemonLogger
    /// How often keep-alives go out: half the watchdog interval (as systemd recommends), nil
    /// without a watchdog.
    let keepAliveInterval: Duration?
    let statusInterval: Duration
    private let queue = DispatchQueue(label: "mentormated.service-watch")
    private let state = Mutex(State())
    private let timer: DispatchSourceTimer
    private struct State {
        var probing = false
        var stopping = false
        var lastStatus: String?
        var statusAt: ContinuousClock.Instant?
        var sendFailureLogged = false
    }

    init?(environment: [String: String], node: Node, server: APIServer, replica: Replica,
          peers: @escaping @Sendable () -> Int, logger: DaemonLogger) {
        guard let notifier = ServiceNotifier(environment: environment) else { return nil }
        self.notifier = notifier
        self.node = node
        self.server = server
        self.replica = replica
        self.peers = peers
        self.logger = logger
        keepAliveInterval = ServiceNotifier.watchdogInterval(environment: environment).map { $0 / 2 }
        statusInterval = .seconds(10)
        timer = DispatchSource.makeTimerSource(queue: queue)
        // Active from the start, so letting go of a watch whose timer never started (the API
        // server stopped before it served) is not the release of an inactive source, which
        // libdispatch answers with a crash.
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.activate()
    }

    deinit { timer.cancel() }

    /// Sends `READY=1` (with a first status) once the API server serves, then starts the
    /// keep-alive and status timer.
    func start() {
        server.whenServing { [self] in
            node.probe { [self] in
                let status = statusLine()
                state.withLock { $0.lastStatus = status; $0.statusAt = .now }
                send("READY=1\nMAINPID=\(getpid())\n" + status)
                logger.info("told systemd we are ready", ["watchdog": keepAliveInterval.map { "\($0 * 2)" } ?? "off"])
                startTimer()
            }
        }
    }

    /// `STOPPING=1`: the stop has begun (keep-alives go on while the loops still turn).
    func stopping() {
        state.withLock { $0.stopping = true }
        send("STOPPING=1\nSTATUS=stopping: closing connections, withdrawing the mDNS service, closing the replica")
    }

    private func startTimer() {
        let period = min(keepAliveInterval ?? statusInterval, statusInterval)
        timer.schedule(deadline: .now() + period.dispatch, repeating: period.dispatch, leeway: .milliseconds(10))
    }

    /// Starts a probe through the API server's loop and the node's queue, unless one is still
    /// on its way (then a loop is slow or stuck, and no keep-alive is due).
    private func tick() {
        let start = state.withLock { s -> Bool in
            if s.probing { return false }
            s.probing = true
            return true
        }
        guard start else { return }
        server.probe { [self] in
            node.probe { [self] in
                var message = keepAliveInterval == nil ? "" : "WATCHDOG=1"
                let (stopping, due) = state.withLock { s in
                    (s.stopping, s.statusAt.map { ContinuousClock.now - $0 >= statusInterval * 0.9 } ?? true)
                }
                if !stopping && due {
                    let status = statusLine()
                    let changed = state.withLock { s -> Bool in
                        s.statusAt = .now
                        defer { s.lastStatus = status }
                        return s.lastStatus != status
                    }
                    if changed { message += (message.isEmpty ? "" : "\n") + status }
                }
                if !message.isEmpty { send(message) }
                state.withLock { $0.probing = false }
            }
        }
    }

    /// `STATUS=serving: 2 peers, 1234 records, 3 local accounts` (on the node's queue).
    private func statusLine() -> String {
        let peerCount = peers()
        var parts = ["\(peerCount) peer\(peerCount == 1 ? "" : "s")"]
        if let counts = try? replica.counts() { parts.append("\(counts.records) records") }
        if let accounts = try? replica.nodeAccounts().count { parts.append("\(accounts) local account\(accounts == 1 ? "" : "s")") }
        return "STATUS=serving: " + parts.joined(separator: ", ")
    }

    private func send(_ message: String) {
        guard let error = notifier.send(message) else { return }
        // Logged once: systemd going away must not flood the log.
        let first = state.withLock { s -> Bool in
            defer { s.sendFailureLogged = true }
            return !s.sendFailureLogged
        }
        if first {
            logger.warning("cannot notify systemd", ["socket": notifier.socketName, "error": String(cString: strerror(error))])
        }
    }
}

extension Duration {
    var dispatch: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
