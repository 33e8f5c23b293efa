/// One SQLite value, as bound to a statement parameter or read from a result column.
///
/// Literals work where a `SQLValue` is expected: `try db.execute("... VALUES (?, ?, ?)", [1, "x", nil])`.
/// Other values convert with `.sqlValue` (see `SQLBindable`).
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    /// An unsigned 64-bit value (a sequence number, a timestamp) stored as SQLite's signed
    /// INTEGER. Throws `valueOutOfRange` above `Int64.max` rather than wrapping around, which
    /// would break ordering and comparisons in SQL. Read back with `Row.uint64(_:)`.
    public init(checked value: UInt64) throws(StoreError) {
        guard let signed = Int64(exactly: value) else {
            throw StoreError(.valueOutOfRange,
                             "\(value) does not fit an SQLite INTEGER (at most \(Int64.max))")
        }
        self = .integer(signed)
    }
}

extension SQLValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// A Swift value that has an SQLite representation. `nil` optionals become `.null`,
/// `Bool` becomes 0 or 1, `[UInt8]` becomes a blob (an empty array an empty blob, not NULL).
///
/// `UInt64` deliberately does not conform: values above `Int64.max` cannot be stored without
/// losing order, so use the throwing `SQLValue(checked:)` instead.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int32: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Array: SQLBindable where Element == UInt8 {
    public var sqlValue: SQLValue { .blob(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
