import CSQLite

/// One prepared statement (`sqlite3_stmt`), finalized in `deinit`.
///
/// Get one from `Database.cachedStatement(_:)`. Like its `Database`, a statement is confined to
/// the connection's queue. Once the database is closed the statement is finalized and every use
/// throws `misuse`.
public final class Statement {
    /// The SQL this statement was prepared from.
    public let sql: String
    /// Nil once finalized.
    private var handle: OpaquePointer?
    /// The connection's access mode: while it is read-only, a statement that would write is
    /// refused before it runs.
    private let access: Database.Access?

    /// Prepares exactly one statement. Empty SQL and SQL holding a second statement are refused
    /// with `misuse` (several statements go through `Database.executeScript`).
    init(connection: OpaquePointer, sql: String, access: Database.Access? = nil) throws(StoreError) {
        var statement: OpaquePointer?
        var trailing = false
        let resultCode = sql.withCString { cSQL in
            var tail: UnsafePointer<CChar>?
            let resultCode = sqlite3_prepare_v2(connection, cSQL, -1, &statement, &tail)
            if resultCode == SQLITE_OK, let tail, tail.pointee != 0 {
                // What follows may be only whitespace and comments; preparing it tells.
                var next: OpaquePointer?
                if sqlite3_prepare_v2(connection, tail, -1, &next, nil) != SQLITE_OK || next != nil {
                    trailing = true
                }
                sqlite3_finalize(next)
            }
            return resultCode
        }
        guard resultCode == SQLITE_OK else {
            sqlite3_finalize(statement)
            throw StoreError.sqlite(resultCode, connection, sql: sql)
        }
        guard let statement else {
            throw StoreError(.misuse, "no SQL statement to prepare", sql: sql)
        }
        guard !trailing else {
            sqlite3_finalize(statement)
            throw StoreError(.misuse,
                             "more than one SQL statement; run several statements with executeScript",
                             sql: sql)
        }
        self.sql = sql
        self.handle = statement
        self.access = access
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// How many times SQLite re-prepared this statement (after a schema change or anything
    /// that expired it): a cached statement that stays valid keeps this at 0.
    public var reprepareCount: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0))
    }

    /// Finalizes now; later uses throw. Called by `Database.close()` for cached statements.
    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    private func liveHandle() throws(StoreError) -> OpaquePointer {
        guard let handle else {
            throw StoreError(.misuse, "statement used after its database was closed", sql: sql)
        }
        return handle
    }

    /// Resets the statement and replaces all parameter bindings with `arguments`, one per `?`.
    /// A count that does not match the statement's parameters throws `range`.
    public func bind(_ arguments: [SQLValue]) throws(StoreError) {
        let statement = try liveHandle()
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard arguments.count == expected else {
            throw StoreError(.range, "expected \(expected) arguments, got \(arguments.count)", sql: sql)
        }
        for (offset, value) in arguments.enumerated() {
            let resultCode = Self.bind(value, at: Int32(offset + 1), in: statement)
            guard resultCode == SQLITE_OK else {
                throw StoreError.sqlite(resultCode, sqlite3_db_handle(statement), sql: sql)
            }
        }
    }

    private static func bind(_ value: SQLValue, at index: Int32, in statement: OpaquePointer) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(statement, index)
        case .integer(let integer):
            return sqlite3_bind_int64(statement, index, integer)
        case .real(let real):
            return sqlite3_bind_double(statement, index, real)
        case .text(var text):
            return text.withUTF8 { utf8 in
                // A nil pointer would bind NULL; an empty string must stay an empty string.
                guard let base = utf8.baseAddress, !utf8.isEmpty else {
                    return sqlite3_bind_text(statement, index, "", 0, csqlite_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { chars in
                    sqlite3_bind_text64(statement, index, chars, UInt64(utf8.count),
                                        csqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            // A nil pointer would bind NULL; an empty blob must stay an empty blob.
            guard !bytes.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
            return bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob64(statement, index, raw.baseAddress, UInt64(raw.count), csqlite_transient())
            }
        }
    }

    /// Advances one row: the row, or nil when the statement is done. On error the statement is
    /// reset, so it can be bound and run again.
    public func step() throws(StoreError) -> Row? {
        let statement = try liveHandle()
        if let access, access.readOnly, sqlite3_stmt_readonly(statement) == 0 {
            throw StoreError(.readOnly, "a statement that writes was run inside a read; use DatabaseQueue.write", sql: sql)
        }
        switch sqlite3_step(statement) {
        case SQLITE_ROW:
            return Self.currentRow(of: statement)
        case SQLITE_DONE:
            return nil
        case let resultCode:
            let error = StoreError.sqlite(resultCode, sqlite3_db_handle(statement), sql: sql)
            sqlite3_reset(statement)
            throw error
        }
    }

    /// Binds `arguments`, steps until done (ignoring any rows), then resets.
    public func run(_ arguments: [SQLValue] = []) throws(StoreError) {
        try bind(arguments)
        defer { reset() }
        while try step() != nil {}
    }

    /// Binds `arguments` and returns every row, then resets.
    public func query(_ arguments: [SQLValue] = []) throws(StoreError) -> [Row] {
        try bind(arguments)
        defer { reset() }
        var rows: [Row] = []
        while let row = try step() { rows.append(row) }
        return rows
    }

    /// Binds `arguments` and returns the first row (nil if none), then resets.
    public func queryOne(_ arguments: [SQLValue] = []) throws(StoreError) -> Row? {
        try bind(arguments)
        defer { reset() }
        return try step()
    }

    /// Rewinds to before the first row, keeping the bindings. Ends any read the statement held.
    public func reset() {
        if let handle { sqlite3_reset(handle) }
    }

    private static func currentRow(of statement: OpaquePointer) -> Row {
        let count = sqlite3_data_count(statement)
        var values: [SQLValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            values.append(value(at: column, of: statement))
        }
        return Row(values)
    }

    private static func value(at column: Int32, of statement: OpaquePointer) -> SQLValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // Pointer first, then length: that is the order SQLite documents.
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let length = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            // A zero-length blob comes back as a NULL pointer; it is still a blob, not NULL.
            guard let blob = sqlite3_column_blob(statement, column) else { return .blob([]) }
            let length = Int(sqlite3_column_bytes(statement, column))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: length)))
        default:
            return .null
        }
    }
}

/// A statement belongs to its connection's queue; it must not cross threads on its own.
@available(*, unavailable)
extension Statement: Sendable {}
