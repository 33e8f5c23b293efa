/// The request and result types of `settings.show` and `settings.set` (docs/API.md, "Settings").
/// Like APITypes.swift, their coding keys are the wire names.

/// `settings.set`'s `value`: a setting's text, or null for "back to the default". The key must
/// be given (a request that leaves it out is refused, not taken as null). A JSON boolean or
/// integer is taken as its text ("true", "30"), so scripts can send either.
public enum SettingValue: Codable, Sendable, Equatable, DecodesExplicitNull {
    case unset
    case set(String)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .unset }
        else if let b = try? c.decode(Bool.self) { self = .set(b ? "true" : "false") }
        else if let n = try? c.decode(Int64.self) { self = .set(String(n)) }
        else { self = .set(try c.decode(String.self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .unset: try c.encodeNil()
        case .set(let text): try c.encode(text)
        }
    }
}

public struct SettingsSetRequest: APIRequest, Equatable {
    /// A key `settings.show` lists (dotted, lower-case).
    public var key: String
    public var value: SettingValue
    public enum CodingKeys: String, CodingKey, CaseIterable { case key, value }
    public init(key: String, value: SettingValue) { (self.key, self.value) = (key, value) }
}

/// One setting of the caller's account.
public struct SettingInfo: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case key, value, isDefault, defaultValue, kind, accepts, description }
    public var key: String
    /// The value in its canonical text ("true", "30", "2001-04-05"); nil: unset (no value).
    public var value: String?
    /// Whether `value` is the default (nothing was set, or it was unset).
    public var isDefault: Bool
    public var defaultValue: String?
    /// "bool", "unsigned", "text", "date", …
    public var kind: String
    /// What `settings.set` accepts for it, in words.
    public var accepts: String
    /// One line: what it does.
    public var description: String

    public init(key: String, value: String?, isDefault: Bool, defaultValue: String?, kind: String, accepts: String, description: String) {
        (self.key, self.value, self.isDefault, self.defaultValue) = (key, value, isDefault, defaultValue)
        (self.kind, self.accepts, self.description) = (kind, accepts, description)
    }
}

public struct SettingsResult: APIObject, Equatable {
    public enum CodingKeys: String, CodingKey { case settings }
    /// Every key, sorted by name.
    public var settings: [SettingInfo]
    public init(settings: [SettingInfo]) { self.settings = settings }
}
