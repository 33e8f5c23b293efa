/// Byte helpers shared by every codec: big-endian writer and a bounds-checked reader.

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes lower- or upper-case hex; nil on odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Appends big-endian integers and raw bytes.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    public mutating func u32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }
    public mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
    public mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }
    public mutating func raw(_ b: ArraySlice<UInt8>) { bytes.append(contentsOf: b) }
}

/// Reads big-endian integers; every read is bounds-checked and throws `.malformed` naming
/// what was being read.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset == bytes.count }

    public mutating func u8(_ what: @autoclosure () -> String) throws(RecordError) -> UInt8 {
        try need(1, what())
        defer { offset += 1 }
        return bytes[offset]
    }
    public mutating func u16(_ what: @autoclosure () -> String) throws(RecordError) -> UInt16 {
        try need(2, what())
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
    public mutating func u32(_ what: @autoclosure () -> String) throws(RecordError) -> UInt32 {
        try need(4, what())
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return v
    }
    public mutating func u64(_ what: @autoclosure () -> String) throws(RecordError) -> UInt64 {
        try need(8, what())
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += 8
        return v
    }
    public mutating func raw(_ count: Int, _ what: @autoclosure () -> String) throws(RecordError) -> [UInt8] {
        try need(count, what())
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private func need(_ n: Int, _ what: @autoclosure () -> String) throws(RecordError) {
        guard n >= 0, remaining >= n else {
            throw RecordError(.malformed, "truncated while reading \(what()) at byte \(offset) (need \(n), have \(remaining))")
        }
    }
}
