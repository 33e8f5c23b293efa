import MentorCrypto
import MentorNet
import MentorNode
import Synchronization

/// The daemon's facts for `status`, `peers` and `doctor` (the node's `RuntimeFacts`). Made
/// before the node, with what is known then; the peer manager and discovery, made after the
/// node because they need it, are attached once when they exist, and the socket path once the
/// API socket is bound (socket activation may name another). Behind its lock: read on the
/// node's queue, written on the main thread during start-up.
final class DaemonFacts: RuntimeFacts {
    private struct Later {
        var socketPath: String
        var peerManager: PeerManager?
        var discovery: DiscoveryController?
        var network: NetworkWatch?
    }

    private let later: Mutex<Later>
    private let started: UInt64
    private let networkKeyFile: String?
    private let systemMode: Bool

    init(socketPath: String, started: UInt64, networkKeyFile: String?, systemMode: Bool) {
        later = Mutex(Later(socketPath: socketPath))
        self.started = started
        self.networkKeyFile = networkKeyFile
        self.systemMode = systemMode
    }

    /// The peer manager and discovery (nil with --no-mdns), once made.
    func attach(peerManager: PeerManager, discovery: DiscoveryController?) {
        later.withLock { $0.peerManager = peerManager; $0.discovery = discovery }
    }

    /// The network watch (roaming), once started.
    func attach(network: NetworkWatch) {
        later.withLock { $0.network = network }
    }

    /// The API socket's path once bound.
    func serving(at socketPath: String) {
        later.withLock { $0.socketPath = socketPath }
    }

    func offerLink(_ offer: LinkOffer?) {
        later.withLock { $0.peerManager }?.offerLink(offer)
    }

    func linkOffers(codeID: UInt16) -> [LinkOffer] {
        later.withLock { $0.peerManager }?.linkOffers(codeID: codeID) ?? []
    }

    func runtimeInfo() -> RuntimeInfo {
        let (socketPath, peerManager, discovery, network) = later.withLock { ($0.socketPath, $0.peerManager, $0.discovery, $0.network) }
        let listen = peerManager.map { (host: $0.listenAddress.host, port: $0.listenAddress.port) }
        var info = RuntimeInfo(socketPath: socketPath, listen: listen, discovery: discovery?.status ?? .off,
                               peers: peerManager?.peers ?? [], startedAt: started,
                               discoveryName: discovery?.registeredName, discoveryVisible: discovery?.isVisible ?? false,
                               networkKeyFile: networkKeyFile, systemMode: systemMode)
        info.recordsReceived = peerManager?.recordsReceived ?? 0
        info.storage = peerManager?.storage
        info.network = network?.status
        info.isHub = peerManager?.settings.hub ?? false
        info.heldInstances = peerManager?.heldInstances ?? 0
        info.maxPeerLinks = peerManager?.settings.listener.maxLinks ?? 0
        info.browseDomains = discovery?.browsedDomains ?? []
        if let push = peerManager?.pushCounters {
            info.duplicateBodies = push.duplicates
            info.idsAnnounced = push.announced
        }
        return info
    }
}
