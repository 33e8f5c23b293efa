/// One result row, copied out of SQLite when the statement stepped, so it stays valid after the
/// statement moves on and may cross threads.
///
/// Column indexes start at 0; an index past the end traps, as with an array (it is a bug in the
/// query code, not something input can cause). The typed accessors return nil for NULL and for a
/// value of another storage class, except that `double` also reads integers.
public struct Row: Hashable, Sendable, CustomStringConvertible {
    /// The column values, in SELECT order.
    public let values: [SQLValue]

    public init(_ values: [SQLValue]) { self.values = values }

    public var count: Int { values.count }

    public subscript(_ index: Int) -> SQLValue { values[index] }

    public func int64(_ index: Int) -> Int64? {
        if case .integer(let value) = values[index] { return value }
        return nil
    }

    public func int(_ index: Int) -> Int? {
        int64(index).flatMap { Int(exactly: $0) }
    }

    /// An INTEGER stored with `SQLValue(checked:)`; nil if NULL, not an integer, or negative.
    public func uint64(_ index: Int) -> UInt64? {
        int64(index).flatMap { UInt64(exactly: $0) }
    }

    public func double(_ index: Int) -> Double? {
        switch values[index] {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    public func text(_ index: Int) -> String? {
        if case .text(let value) = values[index] { return value }
        return nil
    }

    /// The bytes of a BLOB column: `[]` for an empty blob, nil for NULL.
    public func blob(_ index: Int) -> [UInt8]? {
        if case .blob(let value) = values[index] { return value }
        return nil
    }

    /// An INTEGER as a flag: 0 is false, anything else true.
    public func bool(_ index: Int) -> Bool? {
        int64(index).map { $0 != 0 }
    }

    public var description: String { "Row\(values)" }
}
