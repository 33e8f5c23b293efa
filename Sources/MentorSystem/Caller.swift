/// The process at the other end of a connected Unix socket, as `SO_PEERCRED` gives it
/// (`Syscall.peerCredentials`). The kernel vouches for it: it cannot be forged by the peer.
///
/// The API server reads it once when it accepts a connection (who is calling); the client
/// reads the server's before it sends a byte (`RPCClient`).
public struct Caller: Sendable, Hashable, CustomStringConvertible {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid \(pid), uid \(uid), gid \(gid)" }
}
