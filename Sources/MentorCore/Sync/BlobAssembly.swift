/// A blob (a photo) being received from one peer in `blob` parts, checked part by part against
/// what was asked for: the hash, the size the profile card names, and parts that follow on from
/// each other without gaps or overlap. The caller checks the finished bytes' hash (the content
/// address) and format before storing them.
public struct BlobAssembly: Sendable {
    public enum Progress: Equatable, Sendable {
        case incomplete
        case complete([UInt8])
        /// The peer does not hold the blob (ask another).
        case notHeld
    }

    public let hash: [UInt8]
    public let size: Int
    public private(set) var received: [UInt8] = []

    public init(hash: [UInt8], size: Int) {
        self.hash = hash
        self.size = size
    }

    /// Adds one part. Throws `protocol-violation` for a part of another blob, the wrong total, or
    /// one that does not start where the last ended.
    public mutating func add(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8]) throws(SyncError) -> Progress {
        guard hash == self.hash else {
            throw SyncError(.protocolViolation, "a blob part of \(Hex.encode(hash).prefix(16)) that was not asked for")
        }
        if total == 0 {
            guard received.isEmpty else { throw SyncError(.protocolViolation, "a blob said not held after parts of it") }
            return .notHeld
        }
        guard Int(total) == size else {
            throw SyncError(.protocolViolation, "blob \(Hex.encode(hash).prefix(16)) is \(total) bytes; the card says \(size)")
        }
        guard Int(offset) == received.count else {
            throw SyncError(.protocolViolation, "blob part at \(offset); expected \(received.count)")
        }
        received += bytes
        return received.count == size ? .complete(received) : .incomplete
    }
}
