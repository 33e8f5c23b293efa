// MARK: - Encrypted frames
//
// After the handshake every byte on the connection is a frame:
//
//   offset 0   4   L, u32 big-endian: the length of what follows (ciphertext ‖ tag)
//   offset 4   L   XChaCha20-Poly1305 (IETF) of the plaintext, empty associated data:
//                  ciphertext (L - 16 bytes) ‖ Poly1305 tag (16 bytes)
//
// Key: the session's k_ir for initiator → responder frames, k_ri for the other direction.
// Nonce: implicit, never on the wire: 16 zero bytes ‖ u64 big-endian counter. The counter is 0
// for the first frame in each direction and goes up by one per frame. So a replayed, reordered,
// dropped or altered frame, or a frame reflected back from the other direction, fails to open:
// `FrameError.authenticationFailed`, and the opener is dead (every later call fails too).
//
// Limits: 16 <= L <= maximumLength (default 1 MiB of plaintext + 16). The decoder checks L as
// soon as the 4 header bytes are in, before it allocates or waits for any of the body: a larger
// L fails with `.tooLarge(L)`, a smaller one (an empty frame carries at least the tag) with
// `.malformed(L)`. An empty plaintext is a valid frame (L = 16), usable as a keepalive.

/// Why a frame was refused. Every one of them ends the connection.
public enum FrameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The length header is over the limit. Nothing was allocated for the body.
    case tooLarge(UInt32)
    /// The length header is under 16, the size of the tag alone.
    case malformed(UInt32)
    /// The frame does not open with the expected key and counter: altered, replayed, reordered,
    /// dropped before, or from the other direction. Also thrown by a dead opener.
    case authenticationFailed

    public var description: String {
        switch self {
        case .tooLarge(let length):
            "frame length \(length) is over the \(Frames.maximumLength)-byte limit; the peer is broken or hostile"
        case .malformed(let length):
            "frame length \(length) is under the \(Frames.tagLength)-byte minimum; the peer is broken or hostile"
        case .authenticationFailed:
            "frame failed authentication: altered, replayed, reordered, or sealed with another key"
        }
    }
}

public enum Frames {
    public static let headerLength = 4
    public static let tagLength = XChaCha20Poly1305.tagLength
    /// Largest plaintext one frame may carry: 1 MiB.
    public static let maximumPlaintextLength = 1 << 20
    /// Largest value of the length header: 1 MiB + 16.
    public static let maximumLength = maximumPlaintextLength + tagLength

    /// The implicit nonce of frame number `counter`: 16 zero bytes ‖ u64 big-endian counter.
    static func nonce(_ counter: UInt64) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: XChaCha20Poly1305.nonceLength)
        for i in 0..<8 { nonce[16 + i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
        return nonce
    }

    static func checkKey(_ key: [UInt8]) {
        precondition(key.count == XChaCha20Poly1305.keyLength,
                     "a frame key is \(XChaCha20Poly1305.keyLength) bytes (a handshake session key), got \(key.count)")
    }
}

/// Seals outgoing frames for one direction of a session.
public struct FrameSealer: Sendable {
    private let key: [UInt8]
    /// The counter of the next frame.
    public private(set) var counter: UInt64 = 0

    /// Seals with the session's send key.
    public init(session: Handshake.Session) { self.init(key: session.sendKey) }

    public init(key: [UInt8]) {
        Frames.checkKey(key)
        self.key = key
    }

    /// The whole frame, header included, ready to write. Throws `.tooLarge` for a plaintext over
    /// `Frames.maximumPlaintextLength` (split it first).
    public mutating func seal(_ plaintext: [UInt8]) throws(FrameError) -> [UInt8] {
        guard plaintext.count <= Frames.maximumPlaintextLength else {
            throw .tooLarge(UInt32(clamping: plaintext.count + Frames.tagLength))
        }
        precondition(counter < UInt64.max, "frame counter exhausted; 2^64 frames on one connection")
        let box: [UInt8]
        do {
            box = try XChaCha20Poly1305.seal(plaintext, key: key, nonce: Frames.nonce(counter))
        } catch {
            preconditionFailure("sealing with a 32-byte key and a 24-byte nonce cannot fail: \(error)")
        }
        counter += 1
        let length = UInt32(box.count - XChaCha20Poly1305.nonceLength)
        var frame = [UInt8]()
        frame.reserveCapacity(Frames.headerLength + Int(length))
        frame += [UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16),
                  UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        frame += box[XChaCha20Poly1305.nonceLength...]   // the nonce is implicit
        return frame
    }
}

/// Opens incoming frame bodies (as `FrameDecoder` yields them) for one direction of a session.
public struct FrameOpener: Sendable {
    private let key: [UInt8]
    /// The counter the next frame must carry.
    public private(set) var counter: UInt64 = 0
    public private(set) var isDead = false

    /// Opens with the session's receive key.
    public init(session: Handshake.Session) { self.init(key: session.receiveKey) }

    public init(key: [UInt8]) {
        Frames.checkKey(key)
        self.key = key
    }

    /// The plaintext of the next frame's body (ciphertext ‖ tag, without the length header).
    public mutating func open(_ body: [UInt8]) throws(FrameError) -> [UInt8] {
        guard !isDead, body.count >= Frames.tagLength, counter < UInt64.max else {
            isDead = true
            throw .authenticationFailed
        }
        do {
            let plaintext = try XChaCha20Poly1305.open(Frames.nonce(counter) + body, key: key)
            counter += 1
            return plaintext
        } catch {
            isDead = true
            throw .authenticationFailed
        }
    }
}

/// Splits a byte stream into frame bodies. Feed it whatever the socket gave, in any pieces.
public struct FrameDecoder: Sendable {
    public let maximumLength: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: FrameError?

    public init(maximumLength: Int = Frames.maximumLength) {
        precondition(maximumLength >= Frames.tagLength && maximumLength <= Int(UInt32.max))
        self.maximumLength = maximumLength
    }

    /// Bytes held back waiting for the rest of a frame.
    public var bufferedCount: Int { buffer.count - start }

    /// The bodies of all frames completed by `bytes`, in order. A bad length header throws at
    /// once — as soon as its 4 bytes are in — and the decoder stays failed.
    public mutating func feed(_ bytes: [UInt8]) throws(FrameError) -> [[UInt8]] {
        if let failure { throw failure }
        buffer += bytes
        var frames: [[UInt8]] = []
        while bufferedCount >= Frames.headerLength {
            let length = UInt32(buffer[start]) << 24 | UInt32(buffer[start + 1]) << 16
                | UInt32(buffer[start + 2]) << 8 | UInt32(buffer[start + 3])
            guard Int(length) <= maximumLength else { return try fail(.tooLarge(length)) }
            guard Int(length) >= Frames.tagLength else { return try fail(.malformed(length)) }
            guard bufferedCount >= Frames.headerLength + Int(length) else { break }
            let bodyStart = start + Frames.headerLength
            frames.append(Array(buffer[bodyStart..<bodyStart + Int(length)]))
            start = bodyStart + Int(length)
        }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.count <= 64 * 1024)
            start = 0
        } else if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        return frames
    }

    private mutating func fail(_ error: FrameError) throws(FrameError) -> [[UInt8]] {
        failure = error
        buffer = []
        start = 0
        throw error
    }
}
