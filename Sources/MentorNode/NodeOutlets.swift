import MentorAPI
import MentorCrypto
import MentorNet
import Synchronization

// What the node is given at construction to reach the rest of the daemon (`Node.init`): where
// its notifications go, the stream of its changes, the daemon's facts, the logger. Nothing is
// set on a node after it is made.

/// Where the node's notifications go: the API connections, by ID (the daemon's connection
/// registry). Called on the node's queue: neither may block.
public protocol NotificationSink: Sendable {
    /// Queues a notification on one connection (dropped if it has closed).
    func deliver(_ notification: RPCNotification, to connection: UInt64)
    /// Marks a connection as a subscriber (exempt from the API's idle timeout, limited per
    /// user); false when the caller's user holds its limit of subscribed connections.
    func claimSubscription(_ connection: UInt64) -> Bool
}

/// The daemon's facts that `status`, `peers` and `doctor` show (socket, listen address,
/// discovery, connected peers, storage). Read on the node's queue: must not wait on it.
public protocol RuntimeFacts: Sendable {
    func runtimeInfo() -> RuntimeInfo
    /// Linking a device (PROTOCOL.md §13.8): sends this node's offer on every peer link (nil
    /// withdraws it). Called on the node's queue: must not wait on it.
    func offerLink(_ offer: LinkOffer?)
    /// The live offers the node's peers sent under `codeID`. Called off the node's queue.
    func linkOffers(codeID: UInt16) -> [LinkOffer]
}

extension RuntimeFacts {
    /// Without a peer manager (tests, tools): no offer goes anywhere, none arrives.
    public func offerLink(_ offer: LinkOffer?) {}
    public func linkOffers(codeID: UInt16) -> [LinkOffer] { [] }
}

/// The node's changes, as a stream others subscribe to: the records it applied (written here,
/// received from peers, or released when due), and its set of local accounts changing. Made
/// before the node and the peer manager and given to both: the node publishes, the peer
/// manager subscribes (it pushes the records on and tells its peers the accounts).
///
/// Subscribers are called on the publishing queue, in the order changes happened: they must
/// not block (hop to a queue of their own).
public final class NodeChanges: Sendable {
    public enum Change: Sendable {
        /// Records applied (outcome `.applied` only), in (author, seq) order.
        case applied([AppliedRecord])
        /// A local account was added (signup).
        case accountsChanged
    }

    private let subscribers = Mutex<[@Sendable (Change) -> Void]>([])

    public init() {}

    /// Calls `body` with every later change.
    public func subscribe(_ body: @escaping @Sendable (Change) -> Void) {
        subscribers.withLock { $0.append(body) }
    }

    func publish(_ change: Change) {
        for body in subscribers.withLock({ $0 }) { body(change) }
    }
}

/// A sink for a node nobody listens to (tests, tools): notifications are dropped and
/// subscriptions always granted.
public struct DroppingNotifications: NotificationSink {
    public init() {}
    public func deliver(_ notification: RPCNotification, to connection: UInt64) {}
    public func claimSubscription(_ connection: UInt64) -> Bool { true }
}

/// The facts of a node run without a daemon around it (tests, tools): no socket, no peers,
/// discovery off.
public struct NoRuntime: RuntimeFacts {
    public init() {}
    public func runtimeInfo() -> RuntimeInfo {
        RuntimeInfo(socketPath: "", listen: nil, discovery: .off, peers: [], startedAt: 0)
    }
}
