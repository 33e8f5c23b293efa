/// The canonical body encoding shared by every record type: a list of fields, each
/// `tag u8 ‖ length u16 BE ‖ value`, tags strictly ascending, no tag twice. A schema names the
/// tags it knows; an unknown tag is refused (the format version, not silent extension, carries
/// new fields).
public struct FieldList: Equatable, Sendable {
    public private(set) var fields: [(tag: UInt8, value: [UInt8])] = []

    public init() {}

    public static func == (a: FieldList, b: FieldList) -> Bool {
        a.fields.count == b.fields.count && zip(a.fields, b.fields).allSatisfy { $0.tag == $1.tag && $0.value == $1.value }
    }

    public subscript(_ tag: UInt8) -> [UInt8]? { fields.first { $0.tag == tag }?.value }

    /// Sets a field (keeps tags sorted).
    public mutating func set(_ tag: UInt8, _ value: [UInt8]) {
        fields.removeAll { $0.tag == tag }
        fields.append((tag, value))
        fields.sort { $0.tag < $1.tag }
    }
    public mutating func set(_ tag: UInt8, text: String) { set(tag, Array(text.utf8)) }
    public mutating func set(_ tag: UInt8, u64: UInt64) {
        var w = ByteWriter(capacity: 8); w.u64(u64); set(tag, w.bytes)
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: fields.reduce(0) { $0 + 3 + $1.value.count })
        for f in fields {
            w.u8(f.tag)
            w.u16(UInt16(truncatingIfNeeded: f.value.count))
            w.raw(f.value)
        }
        return w.bytes
    }

    /// Decodes and checks canonical form against the tags a schema knows.
    public static func decode(_ bytes: [UInt8], known: Set<UInt8>, what: String) throws(RecordError) -> FieldList {
        var r = ByteReader(bytes)
        var list = FieldList()
        var last: Int = -1
        while !r.isAtEnd {
            let tag = try r.u8("\(what) field tag")
            guard Int(tag) > last else {
                throw RecordError(.malformed, "\(what) field \(tag) is out of order or repeated (tags must ascend)")
            }
            guard known.contains(tag) else {
                throw RecordError(.malformed, "\(what) has unknown field \(tag)")
            }
            last = Int(tag)
            let length = Int(try r.u16("\(what) field \(tag) length"))
            list.fields.append((tag, try r.raw(length, "\(what) field \(tag)")))
        }
        return list
    }

    // Typed readers: each throws `.malformed` naming the field.

    public func text(_ tag: UInt8, _ name: String, maxBytes: Int, what: String) throws(RecordError) -> String? {
        guard let v = self[tag] else { return nil }
        guard v.count <= maxBytes else {
            throw RecordError(.invalidBody, "\(what) \(name) is \(v.count) bytes; at most \(maxBytes) allowed")
        }
        guard let s = String(validating: v, as: UTF8.self) else {
            throw RecordError(.malformed, "\(what) \(name) is not valid UTF-8")
        }
        guard !s.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\t" }) else {
            throw RecordError(.invalidBody, "\(what) \(name) contains control characters")
        }
        return s
    }

    public func u64(_ tag: UInt8, _ name: String, what: String) throws(RecordError) -> UInt64? {
        guard let v = self[tag] else { return nil }
        guard v.count == 8 else { throw RecordError(.malformed, "\(what) \(name) must be 8 bytes, is \(v.count)") }
        var r = ByteReader(v)
        return try r.u64(name)
    }

    public func bytes(_ tag: UInt8, _ name: String, length: Int, what: String) throws(RecordError) -> [UInt8]? {
        guard let v = self[tag] else { return nil }
        guard v.count == length else { throw RecordError(.malformed, "\(what) \(name) must be \(length) bytes, is \(v.count)") }
        return v
    }

    public func key(_ tag: UInt8, _ name: String, what: String) throws(RecordError) -> PublicKey? {
        guard let v = try bytes(tag, name, length: PublicKey.length, what: what) else { return nil }
        return PublicKey(bytes: v)
    }

    public func require<T>(_ value: T?, _ name: String, what: String) throws(RecordError) -> T {
        guard let value else { throw RecordError(.malformed, "\(what) lacks its \(name) field") }
        return value
    }
}
