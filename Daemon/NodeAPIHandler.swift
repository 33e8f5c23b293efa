import Dispatch
import MentorAPI
import MentorNet
import MentorNode
import Synchronization

/// Bridges the API server to the node: each request runs on the node's queue as the caller's
/// Unix user; notifications go back to the connections that subscribed.
final class NodeAPIHandler: APIHandler {
    let node: Node
    /// Open connections by ID, so the node can push to them.
    private let registry = ConnectionRegistry()

    init(node: Node) {
        self.node = node
        let registry = self.registry
        node.deliver = { id, notification in _ = registry.connection(id)?.send(notification) }
    }

    /// The node's work runs here, not on Swift's few cooperative threads: a passphrase
    /// (Argon2id) takes about half a second, and blocking the cooperative pool would stall every
    /// connection. Concurrent, so one login's key derivation runs beside other requests (the
    /// node serializes its own state).
    private let work = DispatchQueue(label: "mentormated.requests", attributes: .concurrent)

    func handle(_ request: RPCRequest, from caller: Caller, on connection: ConnectionHandle) async -> Result<JSON, RPCError> {
        registry.add(connection)
        let node = self.node
        let requester = Requester(uid: caller.uid, connection: connection.id)
        return await withCheckedContinuation { continuation in
            work.async { continuation.resume(returning: node.handle(request.method, request.params, caller: requester)) }
        }
    }

    func connectionClosed(_ connection: ConnectionHandle) {
        registry.remove(connection.id)
        node.connectionClosed(connection.id)
    }
}

/// Open connections by ID (a class, so the node's delivery closure can share it).
final class ConnectionRegistry: Sendable {
    private let connections = Mutex<[UInt64: ConnectionHandle]>([:])
    func add(_ c: ConnectionHandle) { connections.withLock { $0[c.id] = c } }
    func remove(_ id: UInt64) { _ = connections.withLock { $0.removeValue(forKey: id) } }
    func connection(_ id: UInt64) -> ConnectionHandle? { connections.withLock { $0[id] } }
}
