import Dispatch
import MentorAPI
import MentorNet
import MentorNode
import Synchronization
import MentorSystem

/// Bridges the API server to the node: each request runs on the node's queue as the caller's
/// Unix user; notifications go back to the connections that subscribed.
final class NodeAPIHandler: APIHandler {
    let node: Node
    /// Open connections by ID, so the node can push to them (the node's `NotificationSink`).
    private let registry: ConnectionRegistry

    init(node: Node, connections: ConnectionRegistry) {
        self.node = node
        registry = connections
    }

    /// The node runs the request on threads of its own, not on Swift's few cooperative ones (a
    /// passphrase check blocks one for about half a second); requests that need Argon2id wait
    /// for their turn at the node's passphrase gate without holding a thread.
    func handle(_ request: RPCRequest, from caller: Caller, on connection: ConnectionHandle) async -> Result<JSON, RPCError> {
        registry.add(connection)
        return await node.respond(request.method, request.params, caller: Requester(uid: caller.uid, connection: connection.id))
    }

    func connectionClosed(_ connection: ConnectionHandle) {
        registry.remove(connection.id)
        node.connectionClosed(connection.id)
    }
}

/// Open connections by ID: where the node's notifications go. Made before the node and given
/// to it (`NotificationSink`) and to the API handler, which adds and removes connections.
final class ConnectionRegistry: NotificationSink {
    private let connections = Mutex<[UInt64: ConnectionHandle]>([:])
    func add(_ c: ConnectionHandle) { connections.withLock { $0[c.id] = c } }
    func remove(_ id: UInt64) { _ = connections.withLock { $0.removeValue(forKey: id) } }
    func connection(_ id: UInt64) -> ConnectionHandle? { connections.withLock { $0[id] } }

    func deliver(_ notification: RPCNotification, to connection: UInt64) {
        _ = self.connection(connection)?.send(notification)
    }

    func claimSubscription(_ connection: UInt64) -> Bool {
        self.connection(connection)?.claimSubscription() ?? false
    }
}
