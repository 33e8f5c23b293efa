/// `Codable` over the `JSON` value, in the shape of Foundation's JSONEncoder/JSONDecoder: the API
/// types (APITypes.swift) are plain Codable structs, and the bytes are still read and written by
/// `JSONCodec` in one pass. There is no text in between: encoding builds a `JSON` value,
/// decoding reads one.

/// Encodes an `Encodable` value as a `JSON` value.
public struct JSONValueEncoder: Sendable {
    /// What a nil optional becomes. Results say `null` (docs/API.md: absent fields are null);
    /// requests leave the parameter out.
    public enum NilEncoding: Sendable { case null, omit }

    public var nilEncoding: NilEncoding

    public init(nilEncoding: NilEncoding = .null) {
        self.nilEncoding = nilEncoding
    }

    public func encode<T: Encodable>(_ value: T) throws -> JSON {
        try ValueEncoder.box(value, codingPath: [], nilEncoding: nilEncoding)
    }
}

/// Decodes a `Decodable` value from a `JSON` value. Keys the type does not read are ignored
/// (`APICall` refuses unknown request parameters before decoding).
public struct JSONValueDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSON) throws -> T {
        if T.self == JSON.self, let json = value as? T { return json }
        return try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

/// A type whose decoding sees an explicit `null` (instead of treating it as absent), such as
/// `profile.set`'s `photo`, where null means "remove".
public protocol DecodesExplicitNull: Decodable {}

// MARK: - Encoding

/// What an encoder or container has written so far; containers share it by reference. Finished
/// values are kept as JSON, so an object of plain fields becomes its `JSON` without a copy; only
/// containers still being written (`nestedContainer`, `superEncoder`) are kept apart until the end.
final class EncodingStorage {
    enum Content {
        case empty
        case value(JSON)
        case object([String: JSON], nested: [String: EncodingStorage])
        /// `nested` fills the placeholders at its indices.
        case array([JSON], nested: [Int: EncodingStorage])
    }

    var content: Content = .empty

    init() {}

    var resolved: JSON {
        switch content {
        case .empty: return .object([:])
        case .value(let v): return v
        case .object(var o, let nested):
            for (key, storage) in nested { o[key] = storage.resolved }
            return .object(o)
        case .array(var a, let nested):
            for (index, storage) in nested { a[index] = storage.resolved }
            return .array(a)
        }
    }
}

struct ValueEncoder: Encoder {
    let storage = EncodingStorage()
    var codingPath: [any CodingKey]
    let nilEncoding: JSONValueEncoder.NilEncoding
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(codingPath: [any CodingKey], nilEncoding: JSONValueEncoder.NilEncoding) {
        self.codingPath = codingPath
        self.nilEncoding = nilEncoding
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A second request for a keyed container adds to the same object (a flattened subtype).
        if case .object = storage.content {} else { storage.content = .object([:], nested: [:]) }
        return KeyedEncodingContainer(KeyedEncoder<Key>(storage: storage, codingPath: codingPath, nilEncoding: nilEncoding))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = storage.content {} else { storage.content = .array([], nested: [:]) }
        return UnkeyedEncoder(storage: storage, codingPath: codingPath, nilEncoding: nilEncoding)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueEncoder(storage: storage, codingPath: codingPath, nilEncoding: nilEncoding)
    }

    /// Encodes a nested value, which is finished when its `encode(to:)` returns. JSON values are
    /// taken as they are, lists of strings (courses) and a card's conflicts directly: the feed's
    /// hot path.
    static func box<T: Encodable>(_ value: T, codingPath: [any CodingKey], nilEncoding: JSONValueEncoder.NilEncoding) throws -> JSON {
        if T.self == JSON.self, let json = value as? JSON { return json }
        if T.self == [String].self, let strings = value as? [String] { return .array(strings.map(JSON.string)) }
        if T.self == [String: [JSON]].self, let lists = value as? [String: [JSON]] { return .object(lists.mapValues(JSON.array)) }
        let encoder = ValueEncoder(codingPath: codingPath, nilEncoding: nilEncoding)
        try value.encode(to: encoder)
        return encoder.storage.resolved
    }
}

struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: EncodingStorage
    var codingPath: [any CodingKey]
    let nilEncoding: JSONValueEncoder.NilEncoding

    private func set(_ value: JSON, _ key: String) {
        guard case .object(var o, let nested) = storage.content else { return }
        storage.content = .empty   // keeps `o` uniquely referenced while it changes
        o[key] = value
        storage.content = .object(o, nested: nested)
    }

    private func set(_ child: EncodingStorage, _ key: String) {
        guard case .object(let o, var nested) = storage.content else { return }
        storage.content = .empty
        nested[key] = child
        storage.content = .object(o, nested: nested)
    }

    private func set(_ value: JSON, _ key: Key) { set(value, key.stringValue) }
    private func set(_ child: EncodingStorage, _ key: Key) { set(child, key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.int(Int64(clamping: value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.int(Int64(clamping: value)), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try ValueEncoder.box(value, codingPath: codingPath + [key], nilEncoding: nilEncoding), key)
    }

    // Synthesized Codable writes optionals with these: nil becomes null or is left out.
    private mutating func absent(_ key: Key) { if nilEncoding == .null { set(.null, key) } }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingStorage()
        child.content = .object([:], nested: [:])
        set(child, key)
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(storage: child, codingPath: codingPath + [key], nilEncoding: nilEncoding))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = EncodingStorage()
        child.content = .array([], nested: [:])
        set(child, key)
        return UnkeyedEncoder(storage: child, codingPath: codingPath + [key], nilEncoding: nilEncoding)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = ValueEncoder(codingPath: codingPath, nilEncoding: nilEncoding)
        set(encoder.storage, "super")
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = ValueEncoder(codingPath: codingPath + [key], nilEncoding: nilEncoding)
        set(encoder.storage, key)
        return encoder
    }
}

struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { guard let i = Int(stringValue) else { return nil }; intValue = i }
    init?(intValue: Int) { self.intValue = intValue }
}

struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let storage: EncodingStorage
    var codingPath: [any CodingKey]
    let nilEncoding: JSONValueEncoder.NilEncoding

    var count: Int {
        if case .array(let a, _) = storage.content { return a.count }
        return 0
    }

    private func append(_ value: JSON) {
        guard case .array(var a, let nested) = storage.content else { return }
        storage.content = .empty   // keeps `a` uniquely referenced while it changes
        a.append(value)
        storage.content = .array(a, nested: nested)
    }

    private func append(_ child: EncodingStorage) {
        guard case .array(var a, var nested) = storage.content else { return }
        storage.content = .empty
        nested[a.count] = child
        a.append(.null)
        storage.content = .array(a, nested: nested)
    }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(.double(value)) }
    mutating func encode(_ value: Float) throws { append(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(.int(Int64(clamping: value))) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(.int(Int64(clamping: value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try ValueEncoder.box(value, codingPath: codingPath + [IndexKey(count)], nilEncoding: nilEncoding))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingStorage()
        child.content = .object([:], nested: [:])
        let path = codingPath + [IndexKey(count)]
        append(child)
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(storage: child, codingPath: path, nilEncoding: nilEncoding))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = EncodingStorage()
        child.content = .array([], nested: [:])
        let path = codingPath + [IndexKey(count)]
        append(child)
        return UnkeyedEncoder(storage: child, codingPath: path, nilEncoding: nilEncoding)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = ValueEncoder(codingPath: codingPath + [IndexKey(count)], nilEncoding: nilEncoding)
        append(encoder.storage)
        return encoder
    }
}

struct SingleValueEncoder: SingleValueEncodingContainer {
    let storage: EncodingStorage
    var codingPath: [any CodingKey]
    let nilEncoding: JSONValueEncoder.NilEncoding

    private func set(_ value: JSON) { storage.content = .value(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(.double(value)) }
    mutating func encode(_ value: Float) throws { set(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(.int(Int64(clamping: value))) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(.int(Int64(clamping: value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        storage.content = .value(try ValueEncoder.box(value, codingPath: codingPath, nilEncoding: nilEncoding))
    }
}

// MARK: - Decoding

struct ValueDecoder: Decoder {
    let value: JSON
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let o) = value else {
            throw DecodingError.typeMismatch([String: JSON].self, .init(codingPath: codingPath, debugDescription: "not an object"))
        }
        return KeyedDecodingContainer(KeyedDecoder<Key>(object: o, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let a) = value else {
            throw DecodingError.typeMismatch([JSON].self, .init(codingPath: codingPath, debugDescription: "not an array"))
        }
        return UnkeyedDecoder(array: a, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueDecoder(value: value, codingPath: codingPath)
    }

    /// One value of a primitive type, or a mismatch naming the expected type.
    static func unbox<T>(_ value: JSON, as type: T.Type, _ path: [any CodingKey], _ read: (JSON) -> T?) throws -> T {
        if let v = read(value) { return v }
        if value.isNull { throw DecodingError.valueNotFound(T.self, .init(codingPath: path, debugDescription: "null")) }
        throw DecodingError.typeMismatch(T.self, .init(codingPath: path, debugDescription: "found \(value)"))
    }

    static func integer<T: FixedWidthInteger>(_ value: JSON, _ path: [any CodingKey]) throws -> T {
        try unbox(value, as: T.self, path) { $0.intValue.flatMap { T(exactly: $0) } }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ value: JSON, _ path: [any CodingKey]) throws -> T {
        if T.self == JSON.self, let json = value as? T { return json }
        return try T(from: ValueDecoder(value: value, codingPath: path))
    }
}

struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSON]
    var codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSON {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return v
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try ValueDecoder.unbox(value(key), as: type, path(key), \.boolValue) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try ValueDecoder.unbox(value(key), as: type, path(key), \.stringValue) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try ValueDecoder.unbox(value(key), as: type, path(key)) { v in
            if case .double(let d) = v { return d }
            return v.intValue.map(Double.init)
        }
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try decode(Double.self, forKey: key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try ValueDecoder.integer(value(key), path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try ValueDecoder.integer(value(key), path(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ValueDecoder.decode(type, value(key), path(key))
    }

    /// Absent and null are both nil, except for types that decode null themselves.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let v = object[key.stringValue] else { return nil }
        if v.isNull && !(T.self is any DecodesExplicitNull.Type) { return nil }
        return try ValueDecoder.decode(type, v, path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: value(key), codingPath: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: value(key), codingPath: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: object[key.stringValue] ?? .null, codingPath: path(key))
    }
}

struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let array: [JSON]
    var codingPath: [any CodingKey]
    var currentIndex = 0

    init(array: [JSON], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private mutating func next<T>(_ type: T.Type) throws -> (JSON, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "at the end"))
        }
        defer { currentIndex += 1 }
        return (array[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let (v, p) = try next(type); return try ValueDecoder.unbox(v, as: type, p, \.boolValue) }
    mutating func decode(_ type: String.Type) throws -> String { let (v, p) = try next(type); return try ValueDecoder.unbox(v, as: type, p, \.stringValue) }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (v, p) = try next(type)
        return try ValueDecoder.decode(type, v, p)
    }
    mutating func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    mutating func decode(_ type: Int.Type) throws -> Int { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (v, p) = try next(type); return try ValueDecoder.integer(v, p) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, p) = try next(type)
        return try ValueDecoder.decode(type, v, p)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (v, p) = try next([String: JSON].self)
        return try ValueDecoder(value: v, codingPath: p).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([JSON].self)
        return try ValueDecoder(value: v, codingPath: p).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next(JSON.self)
        return ValueDecoder(value: v, codingPath: p)
    }
}

struct SingleValueDecoder: SingleValueDecodingContainer {
    let value: JSON
    var codingPath: [any CodingKey]

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try ValueDecoder.unbox(value, as: type, codingPath, \.boolValue) }
    func decode(_ type: String.Type) throws -> String { try ValueDecoder.unbox(value, as: type, codingPath, \.stringValue) }
    func decode(_ type: Double.Type) throws -> Double {
        try ValueDecoder.unbox(value, as: type, codingPath) { v in
            if case .double(let d) = v { return d }
            return v.intValue.map(Double.init)
        }
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try ValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try ValueDecoder.integer(value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try ValueDecoder.decode(type, value, codingPath) }
}
