/// A DNS-SD TXT record (RFC 6763 §6): an ordered list of `key=value` strings.
///
/// Keys are printable ASCII without `=`, compared without regard to case; the first occurrence
/// of a key wins. MentorMate advertises `v=1` (the protocol version) and, on a hub, `hub=1`
/// (PROTOCOL.md §13.5): nothing that identifies a person or an account belongs here, since any
/// host on the network can read it.
///
/// ```swift
/// let txt: TXTRecord = ["v": "1"]
/// let bytes = try txt.encoded()        // [3, 0x76, 0x3D, 0x31]
/// TXTRecord(decoding: bytes)["v"]      // "1"
/// ```
public struct TXTRecord: Sendable, Hashable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public struct Entry: Sendable, Hashable {
        public var key: String
        /// nil for a bare `key` (a boolean attribute), empty for `key=`.
        public var value: [UInt8]?

        public init(key: String, value: [UInt8]?) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (key, value) in elements { self[key] = value }
    }

    /// Parses the wire form; strings that are empty or start with `=` are skipped (RFC 6763 §6.4),
    /// and so is a later string whose key came before, or a length running past the end.
    public init(decoding bytes: [UInt8]) {
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            guard index + length <= bytes.count else { break }
            let string = bytes[index..<index + length]
            index += length
            guard let first = string.first, first != UInt8(ascii: "=") else { continue }
            let key: String
            let value: [UInt8]?
            if let equals = string.firstIndex(of: UInt8(ascii: "=")) {
                key = String(decoding: string[..<equals], as: UTF8.self)
                value = Array(string[(equals + 1)...])
            } else {
                key = String(decoding: string, as: UTF8.self)
                value = nil
            }
            if position(of: key) == nil { entries.append(Entry(key: key, value: value)) }
        }
    }

    /// The value of `key` as UTF-8 text; nil when absent or bare. Setting nil removes the key.
    public subscript(key: String) -> String? {
        get {
            guard let index = position(of: key), let value = entries[index].value else { return nil }
            return String(decoding: value, as: UTF8.self)
        }
        set {
            let entry = newValue.map { Entry(key: key, value: Array($0.utf8)) }
            switch (position(of: key), entry) {
            case (let index?, let entry?): entries[index] = entry
            case (let index?, nil): entries.remove(at: index)
            case (nil, let entry?): entries.append(entry)
            case (nil, nil): break
            }
        }
    }

    /// Whether `key` is present, with or without a value.
    public func contains(_ key: String) -> Bool { position(of: key) != nil }

    /// The wire form: each entry as a length byte and `key=value`. An empty record is one zero
    /// byte (RFC 6763 §6.1). Throws `.badParam` for an empty key, a key with `=` or a byte
    /// outside printable ASCII, an entry over 255 bytes, or a record over 65,535 bytes.
    public func encoded() throws(DNSSDError) -> [UInt8] {
        guard !entries.isEmpty else { return [0] }
        var bytes: [UInt8] = []
        for entry in entries {
            let key = Array(entry.key.utf8)
            guard !key.isEmpty, key.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }) else {
                throw DNSSDError(.badParam, "TXT key \"\(entry.key)\": must be printable ASCII without '='")
            }
            var string = key
            if let value = entry.value { string += [UInt8(ascii: "=")] + value }
            guard string.count <= 255 else {
                throw DNSSDError(.badParam, "TXT entry \"\(entry.key)\": \(string.count) bytes, over 255")
            }
            bytes.append(UInt8(string.count))
            bytes += string
        }
        guard bytes.count <= Int(UInt16.max) else {
            throw DNSSDError(.badParam, "TXT record: \(bytes.count) bytes, over 65535")
        }
        return bytes
    }

    /// "v=1 flag" (bare keys without `=`).
    public var description: String {
        entries.map { entry in
            entry.value.map { "\(entry.key)=\(String(decoding: $0, as: UTF8.self))" } ?? entry.key
        }.joined(separator: " ")
    }

    private func position(of key: String) -> Int? {
        let wanted = key.lowercased()
        return entries.firstIndex { $0.key.lowercased() == wanted }
    }
}

extension TXTRecord {
    /// The TXT key a hub adds (`hub=1`, PROTOCOL.md §13.5).
    public static let hubKey = "hub"

    /// The TXT record a node advertises: `v=1`, and `hub=1` on a hub.
    public static func advertisement(hub: Bool) -> TXTRecord {
        var txt: TXTRecord = ["v": "1"]
        if hub { txt[hubKey] = "1" }
        return txt
    }

    /// Whether the record says its instance is a hub: the key `hub` (any case) with the value
    /// `1` exactly; a bare `hub`, `hub=0`, `hub=yes` or anything else is not.
    public var advertisesHub: Bool { self[Self.hubKey] == "1" }
}
