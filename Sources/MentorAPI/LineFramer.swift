/// Splits a byte stream into lines ending in "\n", refusing any line longer than `maxLine`
/// bytes before it is complete — so a peer that never sends a newline cannot grow memory.
public struct LineFramer: Sendable {
    public static let defaultMaxLine = 1 << 20

    public let maxLine: Int
    private var buffer: [UInt8] = []
    private var scanned = 0

    public init(maxLine: Int = LineFramer.defaultMaxLine) { self.maxLine = maxLine }

    public enum Failure: Error, Equatable, Sendable { case lineTooLong(limit: Int) }

    /// Appends received bytes and returns the complete lines (without "\n"; a trailing "\r" is
    /// removed too). Throws when a line exceeds the limit; the framer is then unusable.
    public mutating func append(_ bytes: some Sequence<UInt8>) throws(Failure) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var lines: [[UInt8]] = []
        var start = 0
        var i = scanned
        while i < buffer.count {
            if buffer[i] == 0x0A {
                var end = i
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                guard end - start <= maxLine else { throw .lineTooLong(limit: maxLine) }
                lines.append(Array(buffer[start..<end]))
                start = i + 1
            }
            i += 1
        }
        if start > 0 { buffer.removeFirst(start) }
        scanned = buffer.count
        guard buffer.count <= maxLine else { throw .lineTooLong(limit: maxLine) }
        return lines
    }

    /// Bytes of an unfinished line held.
    public var pending: Int { buffer.count }
}
