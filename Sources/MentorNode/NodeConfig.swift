import Foundation
import MentorCrypto

/// What the node needs to know from the daemon's configuration.
public struct NodeConfig: Sendable {
    /// The state directory (replica, node key, account keys).
    public var stateDirectory: String
    /// Campus e-mail domains accepted at sign-up; empty accepts any address.
    public var emailDomains: [String]
    /// `min_age`: the youngest age allowed to sign up (nil: no limit).
    public var minAge: Int?
    /// `areas`: the campus areas a card may name (empty: any).
    public var areas: [String] = []
    /// Cost of passphrase protection for account keys.
    public var passphraseCost: Argon2id.Parameters
    /// Milliseconds since the Unix epoch (injected for tests).
    public var now: @Sendable () -> UInt64
    /// The monotonic clock the login back-off is measured on (injected for tests).
    public var clock: @Sendable () -> ContinuousClock.Instant = { .now }
    /// Passphrase derivations (Argon2id, `passphraseCost.memLimit` each: 256 MiB) that may run
    /// at once node-wide; more wait their turn (config `passphrase_checks_at_once`).
    public var passphraseChecksAtOnce = 1
    /// Signups whose proof of work (one core for a few seconds each, at the default difficulty)
    /// may be searched for at once node-wide; more wait their turn. The difficulty itself is the
    /// replica's `Settings.accountWork`, a parameter of the network.
    public var signupWorkAtOnce = 1
    /// A hub (`mentormated --hub`, PROTOCOL.md §13.5) holds no accounts: sign-up, login,
    /// import and device linking are refused with `hubRefusal`.
    public var hub = false
    /// The campus CA's key, whether membership is required, where the CA is reached
    /// (`campus_ca_key`, `require_membership`, `campus_ca`; `Campus`).
    public var campus = Campus.Settings()

    public init(stateDirectory: String, emailDomains: [String] = [], passphraseCost: Argon2id.Parameters = .moderate,
                now: @escaping @Sendable () -> UInt64) {
        self.stateDirectory = stateDirectory
        self.emailDomains = emailDomains
        self.passphraseCost = passphraseCost
        self.now = now
    }

    /// What this machine's device keys are called in their certificates (`device list`): the
    /// host name, cut to 64 bytes.
    public var deviceLabel: String = NodeConfig.hostLabel()

    static func hostLabel() -> String {
        var name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
        name = String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        while name.utf8.count > 64 { name.removeLast() }
        return name.isEmpty ? "machine" : name
    }

    public var accountsDirectory: String { stateDirectory + "/accounts" }
    /// The key that signs the user's everyday records on this node: this machine's device key
    /// (or, for an account made before devices existed, the account key itself).
    public func keyPath(uid: UInt32) -> String { accountsDirectory + "/\(uid).key" }
    /// The account key, where this node holds it (the machine the account was made or imported
    /// on): needed only to certify and revoke devices, and to export the account.
    public func accountKeyPath(uid: UInt32) -> String { accountsDirectory + "/\(uid).account.key" }
}

/// mDNS discovery as `status` shows it (its `description`) and `doctor` judges it.
public enum DiscoveryStatus: Sendable, Equatable, CustomStringConvertible {
    /// Not run (`--no-mdns`).
    case off
    /// Registering with Avahi (about a second after start).
    case starting
    /// Registered and browsing.
    case on
    /// Avahi or D-Bus cannot be reached, and why; the daemon retries by itself.
    case unavailable(String)

    public var description: String {
        switch self {
        case .off: "off"
        case .starting: "starting"
        case .on: "on"
        case .unavailable(let reason): "unavailable: \(reason) (retrying)"
        }
    }
}

/// Facts only the daemon knows, for `status` and `doctor`.
public struct RuntimeInfo: Sendable {
    public var socketPath: String
    public var listen: (host: String, port: UInt16)?
    public var discovery: DiscoveryStatus
    public var peers: [PeerInfo]
    public var startedAt: UInt64
    /// The mDNS instance name we are registered under, and whether we see it when we browse.
    public var discoveryName: String?
    public var discoveryVisible: Bool
    /// The network key file in use, or nil for the built-in key.
    public var networkKeyFile: String?
    /// Whether the daemon runs as the system service (root, or under systemd's StateDirectory=).
    public var systemMode: Bool
    /// Records received from peers since start, duplicates included (`PeerManager.recordsReceived`).
    public var recordsReceived = 0
    /// Of those, bodies that were already held when they came (lazy push prunes their links),
    /// and record IDs peers announced in `ihave` instead of a body (PROTOCOL.md §13.7).
    public var duplicateBodies = 0
    public var idsAnnounced = 0
    /// The node-wide storage budget (`PeerManager.storage`; nil without a peer manager).
    public var storage: StorageStatus?
    /// This machine's interfaces and addresses, and when they last changed (`NetworkWatch`;
    /// nil without one).
    public var network: NetworkStatus?
    /// This node runs as a hub (`--hub`), and the mDNS instances it does not dial because a hub
    /// is linked (PROTOCOL.md §13.5).
    public var isHub = false
    public var heldInstances = 0
    /// Peer links accepted at most (`max_peer_links`; 0: no peer manager), for `doctor`'s file
    /// descriptor check, and the wide-area domains browsed.
    public var maxPeerLinks = 0
    public var browseDomains: [String] = []

    public init(socketPath: String, listen: (host: String, port: UInt16)?, discovery: DiscoveryStatus, peers: [PeerInfo], startedAt: UInt64,
                discoveryName: String? = nil, discoveryVisible: Bool = false, networkKeyFile: String? = nil, systemMode: Bool = false) {
        self.socketPath = socketPath; self.listen = listen; self.discovery = discovery; self.peers = peers; self.startedAt = startedAt
        self.discoveryName = discoveryName; self.discoveryVisible = discoveryVisible
        self.networkKeyFile = networkKeyFile; self.systemMode = systemMode
    }
}

/// This machine's usable interfaces and addresses (up, with carrier, not loopback), when they
/// last changed (wall-clock milliseconds; nil: not since the daemon started) and how many times:
/// `status.network` (issue 19, roaming).
public struct NetworkStatus: Sendable, Equatable {
    /// Interface name → addresses (link-local IPv6 with `%interface`), sorted.
    public var interfaces: [String: [String]]
    public var changedAt: UInt64?
    public var changes: Int

    public init(interfaces: [String: [String]], changedAt: UInt64?, changes: Int) {
        (self.interfaces, self.changedAt, self.changes) = (interfaces, changedAt, changes)
    }
}

/// The node-wide storage budget's state (issue 13 item 4; `StorageBudget` says the policy), for
/// `status.storage` and `doctor`.
public struct StorageStatus: Sendable, Equatable {
    /// Foreign accounts held and the bytes of their records, and the budgets for both.
    public var accounts: Int
    public var bytes: Int64
    public var maxAccounts: Int
    public var maxBytes: Int64
    /// Authors whose records were declined lately (the bounded set) and records declined since start.
    public var declinedAuthors: Int
    public var declinedRecords: Int
    /// A budget is full, or something was declined since start.
    public var degraded: Bool

    public init(accounts: Int, bytes: Int64, maxAccounts: Int, maxBytes: Int64, declinedAuthors: Int, declinedRecords: Int,
                degraded: Bool) {
        self.accounts = accounts; self.bytes = bytes; self.maxAccounts = maxAccounts; self.maxBytes = maxBytes
        self.declinedAuthors = declinedAuthors; self.declinedRecords = declinedRecords; self.degraded = degraded
    }
}

public struct PeerInfo: Sendable {
    public var node: String
    public var address: String
    public var via: String
    public var since: UInt64
    /// The peer advertises itself as a hub (PROTOCOL.md §13.5).
    public var hub: Bool

    public init(node: String, address: String, via: String, since: UInt64, hub: Bool = false) {
        self.node = node; self.address = address; self.via = via; self.since = since; self.hub = hub
    }
}
