import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorNet
import MentorSystem

/// Runs mDNS/DNS-SD discovery for the daemon: advertises our peer port as `_mentormate._tcp`
/// (TXT `v=1`, nothing about people or accounts; the instance name is derived one-way from the
/// node key so it is stable but does not reveal it), hands the instances found to the peer
/// manager, and survives Avahi: when D-Bus or avahi-daemon is missing or goes away, `Discovery`
/// logs it once, static peers and links keep working, and discovery starts again after 1 s,
/// doubling to 60 s, registering anew once Avahi is back.
///
/// `@unchecked Sendable`: mutable state is confined to `queue`; `status` reads a locked copy.
public final class DiscoveryController: @unchecked Sendable {
    public enum State: Sendable, Equatable {
        case starting
        case on(name: String)
        case unavailable(reason: String)
    }

    public struct Settings: Sendable {
        public var firstRetry: Duration = .seconds(1)
        public var maxRetry: Duration = .seconds(60)
        /// Advertise TXT `hub=1` (this node runs as a hub, PROTOCOL.md §13.5).
        public var hub = false
        /// Unicast DNS domains browsed besides "local." and those Avahi recommends (`--browse-domain`).
        public var browseDomains: [String] = []
        public init() {}
    }

    private let queue = DispatchQueue(label: "MentorNode.Discovery")
    private let peers: PeerManager
    private let logger: any Logger
    private let settings: Settings
    private let advertisement: Discovery.Advertisement
    private var discovery: Discovery?
    private var failures = 0
    private var retry: DispatchWorkItem?
    private var stopped = false

    private let lock = NSLock()
    private var state_: State = .starting
    private var visible_: () -> Bool = { false }
    private var discovery_: Discovery?

    /// The instance name we ask for (Avahi appends " #2" and so on when it is taken).
    public static func instanceName(for nodeKey: SigningPublicKey) -> String {
        "MentorMate " + Hex.encode(BLAKE2b.hash(Array("mentormate mdns name".utf8) + nodeKey.bytes, outputLength: 16)).prefix(8)
    }

    public init(peers: PeerManager, port: UInt16, nodeKey: SigningPublicKey, settings: Settings = Settings(),
                logger: some Logger = DiscardingLogger()) {
        self.peers = peers
        self.logger = logger
        self.settings = settings
        self.advertisement = Discovery.Advertisement(name: Self.instanceName(for: nodeKey), port: port,
                                                     txt: .advertisement(hub: settings.hub))
    }

    /// What `status` and `doctor` show.
    public var status: DiscoveryStatus {
        switch state {
        case .starting: .starting
        case .on: .on
        case .unavailable(let reason): .unavailable(reason)
        }
    }

    public var state: State { lock.withLock { state_ } }
    /// The name we are registered under, while discovery is on.
    public var registeredName: String? { if case .on(let name) = state { name } else { nil } }
    /// The wide-area domains browsed now (configured and enumerated).
    public var browsedDomains: [String] { lock.withLock { discovery_ }?.browsedDomains ?? [] }
    /// Whether our own instance shows up when we browse (the service is visible on the network).
    public var isVisible: Bool { lock.withLock { visible_ }() }

    public func start() {
        queue.async { [self] in begin() }
    }

    /// Stops discovery (goodbye packets go out as the registration is withdrawn). Waits for it.
    public func stop() {
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            stopped = true
            retry?.cancel()
            retry = nil
            guard let discovery else { done.signal(); return }
            self.discovery = nil
            discovery.stop { done.signal() }
        }
        _ = done.wait(timeout: .now() + 5)
    }

    /// The machine's network changed (`NetworkWatch`): browse afresh, so the new segment's
    /// instances are found at once (`Discovery.rebrowse`). Nothing while discovery is off.
    public func networkChanged() {
        queue.async { [self] in
            guard !stopped else { return }
            discovery?.rebrowse()
        }
    }

    // MARK: On queue

    private func begin() {
        guard !stopped else { return }
        // One Discovery for the daemon's life, started again after each failure (so it logs
        // an outage once, not once per retry).
        let discovery = self.discovery ?? Discovery(settings: Discovery.Settings(advertisement: advertisement, domains: settings.browseDomains),
                                                    queue: queue,
                                                    logger: logger) { [weak self] event in self?.handle(event) }
        if self.discovery == nil {
            self.discovery = discovery
            lock.withLock {
                visible_ = { [weak discovery] in discovery?.isOwnInstanceVisible ?? false }
                discovery_ = discovery
            }
        }
        discovery.start()
    }

    /// The one-line fix for a newcomer whose daemon cannot reach Avahi.
    static var avahiFix: String {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/avahi-daemon")
            ? "start Avahi (it needs D-Bus): systemctl start dbus avahi-daemon — this daemon retries by itself; or run with --no-mdns and name peers with --peer"
            : "install Avahi: apt-get install avahi-daemon (then systemctl start avahi-daemon) — this daemon retries by itself; or run with --no-mdns and name peers with --peer"
    }

    private func handle(_ event: Discovery.Event) {
        guard !stopped else { return }
        switch event {
        case .registered(let name):
            failures = 0
            lock.withLock { state_ = .on(name: name) }
        case .found(let instance):
            peers.discovered(name: instance.name, addresses: instance.peerAddresses, hub: instance.isHub, local: instance.isLocal)
        case .lost(let name):
            peers.lost(name: name)
        case .failed(let error):
            // Discovery stopped everything and logged the first failure of a streak.
            lock.withLock { state_ = .unavailable(reason: error.code.meaning) }
            if failures == 0 { logger.log(.notice, "mDNS discovery unavailable", ["reason": error.code.meaning, "fix": Self.avahiFix]) }
            failures += 1
            let delay = min(settings.firstRetry * (1 << min(failures - 1, 16)), settings.maxRetry)
            let work = DispatchWorkItem { [weak self] in
                guard let self else { return }
                self.retry = nil
                self.begin()
            }
            retry = work
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)), execute: work)
        }
    }
}
