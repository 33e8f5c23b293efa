/// Typed access to a request's named parameters; each failure is an -32602 error naming the
/// parameter and the expected type.
public struct Params: Sendable {
    public let values: [String: JSON]
    public let method: String

    public init(_ values: [String: JSON], method: String) {
        self.values = values
        self.method = method
    }

    /// Refuses parameters the method does not take (a typo must not pass silently).
    public func allow(_ names: Set<String>) throws(RPCError) {
        try Self.allow(values, names, method: method)
    }

    // The -32602 errors, for `Params` and for `APICall`'s decoding alike.

    static func allow(_ values: [String: JSON], _ names: Set<String>, method: String) throws(RPCError) {
        if let unknown = values.keys.sorted().first(where: { !names.contains($0) }) {
            let list = names.isEmpty ? "none" : names.sorted().joined(separator: ", ")
            throw RPCError(.invalidParams, "\(method) has no parameter \"\(unknown)\" (it takes: \(list))")
        }
    }

    static func missing(_ name: String, method: String) -> RPCError {
        RPCError(.invalidParams, "\(method): missing parameter \"\(name)\"")
    }

    static func wrong(_ name: String, _ type: String, method: String) -> RPCError {
        RPCError(.invalidParams, "\(method): parameter \"\(name)\" must be \(type)")
    }

    public func has(_ name: String) -> Bool { values[name] != nil }

    private func wrong(_ name: String, _ type: String) -> RPCError { Self.wrong(name, type, method: method) }

    public func string(_ name: String) throws(RPCError) -> String {
        guard let v = values[name] else { throw Self.missing(name, method: method) }
        guard let s = v.stringValue else { throw wrong(name, "a string") }
        return s
    }

    public func optionalString(_ name: String) throws(RPCError) -> String? {
        guard let v = values[name], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw wrong(name, "a string") }
        return s
    }

    public func int(_ name: String) throws(RPCError) -> Int64 {
        guard let v = values[name] else { throw Self.missing(name, method: method) }
        guard let i = v.intValue else { throw wrong(name, "an integer") }
        return i
    }

    public func optionalInt(_ name: String) throws(RPCError) -> Int64? {
        guard let v = values[name], !v.isNull else { return nil }
        guard let i = v.intValue else { throw wrong(name, "an integer") }
        return i
    }

    public func bool(_ name: String) throws(RPCError) -> Bool {
        guard let v = values[name] else { throw Self.missing(name, method: method) }
        guard let b = v.boolValue else { throw wrong(name, "true or false") }
        return b
    }

    public func optionalBool(_ name: String) throws(RPCError) -> Bool? {
        guard let v = values[name], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw wrong(name, "true or false") }
        return b
    }

    public func optionalStrings(_ name: String) throws(RPCError) -> [String]? {
        guard let v = values[name], !v.isNull else { return nil }
        guard let a = v.arrayValue else { throw wrong(name, "a list of strings") }
        var out: [String] = []
        for e in a {
            guard let s = e.stringValue else { throw wrong(name, "a list of strings") }
            out.append(s)
        }
        return out
    }
}
