import Foundation
import MentorAPI

/// What the peer manager shows without waiting on its queue (`runtimeInfo().peers`, `status`):
/// the connected peers as last published (`PeerStatus.connected`), the records received over
/// every link since start (duplicates included), and lazy push's counters (a copy of
/// `PushLinks.counts`), and the instances held back for a hub. Written on the manager's queue, read from anywhere.
///
/// `@unchecked Sendable`: every field is read and written under `lock` only.
final class StatusBoard: @unchecked Sendable {
    private let lock = NSLock()
    private var connected: [PeerInfo] = []
    private var received = 0
    private var pushCounts = PushLinks.Counts()
    private var held_ = 0

    /// The connected peers now (replacing the list published before).
    func publish(_ peers: [PeerInfo]) { lock.withLock { connected = peers } }
    /// Lazy push's counters now.
    func publish(_ counts: PushLinks.Counts) { lock.withLock { pushCounts = counts } }
    /// A batch of `count` records arrived over some link.
    func received(_ count: Int) { lock.withLock { received += count } }

    /// Instances held back because a hub is linked (PROTOCOL.md §13.5), as the dialler last said.
    func publish(held: Int) { lock.withLock { held_ = held } }

    var peers: [PeerInfo] { lock.withLock { connected } }
    var held: Int { lock.withLock { held_ } }
    var recordsReceived: Int { lock.withLock { received } }
    /// Bodies received (as `recordsReceived`), those of them already held, and IDs announced —
    /// read together.
    var pushCounters: (bodies: Int, duplicates: Int, announced: Int) {
        lock.withLock { (received, pushCounts.duplicates, pushCounts.announced) }
    }
}
