import CSQLite

/// One SQLite connection (`sqlite3*`).
///
/// Not Sendable: it is opened with `SQLITE_OPEN_NOMUTEX`, so it must be used by one thread at a
/// time. Share it through a `DatabaseQueue`, which confines it to one serial queue.
///
/// Every SQLite return code is checked; failures throw a `StoreError` carrying the code,
/// `sqlite3_errmsg` and the SQL.
public final class Database {
    public struct Options: Sendable {
        public enum Synchronous: String, Sendable {
            /// No fsync: fastest; a power loss may corrupt the database.
            case off = "OFF"
            /// With WAL: durable against application crashes; a power loss may lose the last
            /// commits but never corrupts.
            case normal = "NORMAL"
            /// fsync on every commit.
            case full = "FULL"
        }

        /// Open with `SQLITE_OPEN_READONLY`; the journal mode is then left as the file has it.
        public var readOnly: Bool
        /// Switch a file database to WAL (checked: opening fails with `walUnavailable` if SQLite
        /// answers anything but "wal"). When false the journal mode is left as it is.
        public var walMode: Bool
        public var synchronous: Synchronous
        /// How long to wait for another connection's lock before failing with `busy`.
        public var busyTimeout: Duration
        public var foreignKeys: Bool
        /// The page cache, in KiB (`PRAGMA cache_size = -N`); nil: SQLite's default (2 MiB).
        public var cacheKiB: Int?
        /// WAL pages between automatic checkpoints (`PRAGMA wal_autocheckpoint`); nil: SQLite's
        /// default (1,000).
        public var walAutocheckpointPages: Int?
        /// Keep temporary files in memory (`PRAGMA temp_store = MEMORY`). Inside a transaction,
        /// every statement that writes a table with triggers (or a foreign key, or a multi-row
        /// write) keeps the pages it changes in a statement journal, to undo it alone if it
        /// fails. With the default, that journal is a temporary file once it has grown past
        /// 64 KiB, and stays a file for the rest of the transaction: applying 15,000 records of
        /// 10,000 new accounts wrote it 122,000 times (`strace -e pwrite64`), about a sixth of
        /// the apply time. In memory it holds one statement's pages at a time. Sorts too large for
        /// the page cache would stay in memory too; the replica's reads of every record follow
        /// an index, never a sort (EXPLAIN QUERY PLAN of `digest` and of the tree's rebuild).
        public var tempStoreInMemory: Bool

        public init(readOnly: Bool = false, walMode: Bool = true, synchronous: Synchronous = .normal,
                    busyTimeout: Duration = .seconds(5), foreignKeys: Bool = true, cacheKiB: Int? = nil,
                    walAutocheckpointPages: Int? = nil, tempStoreInMemory: Bool = true) {
            self.readOnly = readOnly
            self.walMode = walMode
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
            self.foreignKeys = foreignKeys
            self.cacheKiB = cacheKiB
            self.walAutocheckpointPages = walAutocheckpointPages
            self.tempStoreInMemory = tempStoreInMemory
        }
    }

    public enum TransactionKind: String, Sendable {
        /// Takes locks as statements need them; a later write may fail with `busy`.
        case deferred = "DEFERRED"
        /// Takes the write lock at BEGIN, so a writing transaction waits there, not halfway.
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// The path given to `init`.
    public let path: String
    /// Nil once closed.
    private var connection: OpaquePointer?
    private var statementCache: [String: Statement] = [:]

    /// Whether statements may write, shared with every statement of the connection.
    ///
    /// `DatabaseQueue.read` sets `readOnly` for its body. Not `PRAGMA query_only`: setting a
    /// flag pragma expires every prepared statement of the connection, so each read made every
    /// cached statement re-prepare on its next use (a third of the CPU of a missing-photo
    /// listing, and of every read-heavy path).
    final class Access {
        var readOnly = false
    }
    let access = Access()
    /// How many `transaction` calls are running as savepoints inside an outer transaction.
    private var savepointDepth = 0

    /// Opens (creating if needed, unless read-only) the database at `path`; ":memory:" opens a
    /// private in-memory database. Sets the busy timeout, journal mode, synchronous and
    /// foreign-key PRAGMAs; if any step fails the connection is closed before throwing.
    public init(path: String, options: Options = .init()) throws(StoreError) {
        self.path = path
        self.connection = try Self.open(path: path, options: options)
    }

    deinit {
        for statement in statementCache.values { statement.finalize() }
        // close_v2 never fails with "busy": if a statement were still alive the connection would
        // close when it is finalized.
        sqlite3_close_v2(connection)
    }

    private static func open(path: String, options: Options) throws(StoreError) -> OpaquePointer {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= options.readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var handle: OpaquePointer?
        let resultCode = sqlite3_open_v2(path, &handle, flags, nil)
        // Even a failed open usually allocates a handle, which must be closed.
        guard resultCode == SQLITE_OK, let connection = handle else {
            let error = handle == nil
                ? StoreError(.noMemory, "could not allocate an SQLite connection for \(path)")
                : StoreError.sqlite(resultCode, handle, sql: nil)
            sqlite3_close_v2(handle)
            throw StoreError(error.extendedCode, "cannot open database at \(path): \(error.message)")
        }
        do {
            try configure(connection, path: path, options: options)
        } catch {
            sqlite3_close_v2(connection)
            throw error
        }
        return connection
    }

    private static func configure(_ connection: OpaquePointer, path: String, options: Options) throws(StoreError) {
        // Clamped to 0...Int32.max milliseconds (about 24 days) before multiplying, so no overflow.
        let timeout = options.busyTimeout.components
        let seconds = min(max(timeout.seconds, 0), Int64(Int32.max) / 1000)
        let milliseconds = seconds * 1000 + max(timeout.attoseconds, 0) / 1_000_000_000_000_000
        let resultCode = sqlite3_busy_timeout(connection, Int32(clamping: milliseconds))
        guard resultCode == SQLITE_OK else { throw StoreError.sqlite(resultCode, connection, sql: nil) }

        if options.walMode && !options.readOnly {
            let sql = "PRAGMA journal_mode = WAL"
            let mode = try Statement(connection: connection, sql: sql).queryOne()?.text(0)?.lowercased()
            // In-memory and temporary databases have no file name and never use WAL.
            let isFile = sqlite3_db_filename(connection, "main").map { $0.pointee != 0 } ?? false
            if isFile && mode != "wal" {
                throw StoreError(.walUnavailable,
                                 "SQLite answered journal mode '\(mode ?? "nothing")' instead of 'wal' for \(path); "
                                     + "the file system may not support the shared memory WAL needs",
                                 sql: sql)
            }
        }
        try Statement(connection: connection, sql: "PRAGMA synchronous = \(options.synchronous.rawValue)").run()
        // Deleted content is overwritten, not left in free pages: a purged post's or message's
        // words must leave the file (PROTOCOL.md §6.6, §8.8).
        try Statement(connection: connection, sql: "PRAGMA secure_delete = ON").run()
        try Statement(connection: connection, sql: "PRAGMA foreign_keys = \(options.foreignKeys ? "ON" : "OFF")").run()
        if options.tempStoreInMemory {
            try Statement(connection: connection, sql: "PRAGMA temp_store = MEMORY").run()
        }
        if let kib = options.cacheKiB {
            try Statement(connection: connection, sql: "PRAGMA cache_size = \(-Int64(max(kib, 1)))").run()
        }
        if let pages = options.walAutocheckpointPages, !options.readOnly {
            _ = try Statement(connection: connection, sql: "PRAGMA wal_autocheckpoint = \(max(pages, 1))").queryOne()
        }
    }

    private func liveConnection(_ sql: String? = nil) throws(StoreError) -> OpaquePointer {
        guard let connection else {
            throw StoreError(.misuse, "database \(path) is closed", sql: sql)
        }
        return connection
    }

    func makeStatement(_ sql: String) throws(StoreError) -> Statement {
        try Statement(connection: liveConnection(sql), sql: sql, access: access)
    }

    // MARK: Running SQL

    /// Runs one statement with `arguments` bound to its `?` parameters; any rows are ignored.
    public func execute(_ sql: String, _ arguments: [SQLValue] = []) throws(StoreError) {
        try makeStatement(sql).run(arguments)
    }

    /// Runs several `;`-separated statements without arguments (`sqlite3_exec`). Statements
    /// before a failing one stay applied unless the script runs inside a transaction.
    public func executeScript(_ sql: String) throws(StoreError) {
        let connection = try liveConnection(sql)
        guard !access.readOnly else {
            throw StoreError(.readOnly, "a script was run inside a read; use DatabaseQueue.write", sql: sql)
        }
        var cMessage: UnsafeMutablePointer<CChar>?
        let resultCode = sqlite3_exec(connection, sql, nil, nil, &cMessage)
        defer { sqlite3_free(cMessage) }
        guard resultCode == SQLITE_OK else {
            let message = cMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(resultCode))
            throw StoreError(StoreError.Code(rawValue: resultCode), message, sql: sql)
        }
    }

    /// Runs one statement and returns all its rows.
    public func query(_ sql: String, _ arguments: [SQLValue] = []) throws(StoreError) -> [Row] {
        try makeStatement(sql).query(arguments)
    }

    /// Runs one statement and returns its first row, or nil if there is none.
    public func queryOne(_ sql: String, _ arguments: [SQLValue] = []) throws(StoreError) -> Row? {
        try makeStatement(sql).queryOne(arguments)
    }

    /// Runs one statement and hands each row to `body` as it is stepped, without collecting them.
    /// An error thrown by `body` stops the iteration and is rethrown.
    public func forEachRow(_ sql: String, _ arguments: [SQLValue] = [], _ body: (Row) throws -> Void) throws {
        try forEachRow(sql, arguments, body, convert: { $0 })
    }

    /// `forEachRow` for a body that throws only `StoreError` (or nothing), so callers with
    /// `throws(StoreError)` keep their typed error. A throwing closure picks this overload when
    /// written `{ row throws(StoreError) in ... }`.
    public func forEachRow(_ sql: String, _ arguments: [SQLValue] = [],
                           _ body: (Row) throws(StoreError) -> Void) throws(StoreError) {
        try forEachRow(sql, arguments, body, convert: { $0 })
    }

    private func forEachRow<E: Error>(_ sql: String, _ arguments: [SQLValue], _ body: (Row) throws(E) -> Void,
                                      convert: (StoreError) -> E) throws(E) {
        let statement: Statement
        do throws(StoreError) {
            statement = try makeStatement(sql)
            try statement.bind(arguments)
        } catch {
            throw convert(error)
        }
        defer { statement.reset() }
        while true {
            let row: Row?
            do throws(StoreError) { row = try statement.step() } catch { throw convert(error) }
            guard let row else { return }
            try body(row)
        }
    }

    /// How many times SQLite prepared the cached statements again since they were first
    /// prepared: 0 while nothing expires them (a schema change, a flag pragma, or a bound
    /// parameter SQLite marked as shaping the plan would).
    public var cachedStatementsReprepared: Int {
        statementCache.values.reduce(0) { $0 + $1.reprepareCount }
    }

    /// The cached statements prepared again, with how often: what to fix when the sum is not 0.
    public var repreparedStatements: [String: Int] {
        statementCache.filter { $0.value.reprepareCount > 0 }.mapValues(\.reprepareCount)
    }

    /// The prepared statement for `sql`, prepared on first use and kept until `close()`.
    /// Returned reset (bindings kept). For fixed SQL text that runs often (every distinct string
    /// stays cached); do not use one cached statement in two places at once (for example the same
    /// SQL inside its own row loop).
    public func cachedStatement(_ sql: String) throws(StoreError) -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let statement = try makeStatement(sql)
        statementCache[sql] = statement
        return statement
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: BEGIN (of `kind`), then COMMIT; if `body` throws, or COMMIT
    /// fails, rolls back and rethrows.
    ///
    /// Called while a transaction is already open (by an outer `transaction`, or a manual BEGIN),
    /// it runs `body` in a SAVEPOINT instead and `kind` is ignored: an error rolls back only the
    /// changes `body` made, and the outer transaction decides what is finally committed.
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        try inTransaction(kind, body, convert: { $0 })
    }

    /// `transaction` for a body that throws only `StoreError` (or nothing), so callers with
    /// `throws(StoreError)` keep their typed error. A throwing closure picks this overload when
    /// written `{ () throws(StoreError) in ... }`.
    public func transaction<T>(_ kind: TransactionKind = .immediate,
                               _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try inTransaction(kind, body, convert: { $0 })
    }

    /// The one transaction implementation behind both overloads and `DatabaseQueue`; `convert`
    /// turns SQLite's own failures (BEGIN, COMMIT) into the body's error type.
    func inTransaction<T, E: Error>(_ kind: TransactionKind, _ body: () throws(E) -> T,
                                    convert: (StoreError) -> E) throws(E) -> T {
        let connection: OpaquePointer
        do throws(StoreError) { connection = try liveConnection() } catch { throw convert(error) }

        let begin: String
        let commit, rollback: [String]
        let nested = sqlite3_get_autocommit(connection) == 0
        if nested {
            let name = "mentorstore_savepoint_\(savepointDepth)"
            begin = "SAVEPOINT \(name)"
            commit = ["RELEASE \(name)"]
            rollback = ["ROLLBACK TO \(name)", "RELEASE \(name)"]
        } else {
            begin = "BEGIN \(kind.rawValue) TRANSACTION"
            commit = ["COMMIT TRANSACTION"]
            rollback = ["ROLLBACK TRANSACTION"]
        }

        do throws(StoreError) { try cachedStatement(begin).run() } catch { throw convert(error) }
        if nested { savepointDepth += 1 }
        defer { if nested { savepointDepth -= 1 } }

        let result: T
        do {
            result = try body()
        } catch {
            rollBack(rollback)
            throw error
        }
        do throws(StoreError) {
            try runCached(commit)
        } catch {
            rollBack(rollback)
            throw convert(error)
        }
        return result
    }

    private func runCached(_ statements: [String]) throws(StoreError) {
        for sql in statements { try cachedStatement(sql).run() }
    }

    /// Best effort: the original error is what the caller needs to see. If SQLite already rolled
    /// the transaction back by itself (it does on some I/O and full-disk errors), or the body
    /// closed the connection, there is nothing left to roll back.
    private func rollBack(_ statements: [String]) {
        guard let connection, sqlite3_get_autocommit(connection) == 0 else { return }
        try? runCached(statements)
    }

    // MARK: Connection state

    /// Rows changed by the last INSERT, UPDATE or DELETE (`sqlite3_changes`).
    public var changes: Int {
        connection.map { Int(sqlite3_changes($0)) } ?? 0
    }

    /// The rowid of the last successful INSERT on this connection.
    public var lastInsertRowID: Int64 {
        connection.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// `PRAGMA integrity_check`: `["ok"]` for a sound database, otherwise one line per problem.
    public func integrityCheck() throws(StoreError) -> [String] {
        try query("PRAGMA integrity_check").map { $0.text(0) ?? "\($0[0])" }
    }

    /// Finalizes the cached statements and closes the connection. Closing twice is harmless.
    /// Later uses throw `misuse`.
    public func close() throws(StoreError) {
        guard let connection else { return }
        for statement in statementCache.values { statement.finalize() }
        statementCache = [:]
        let resultCode = sqlite3_close(connection)
        guard resultCode == SQLITE_OK else {
            throw StoreError.sqlite(resultCode, connection, sql: nil)
        }
        self.connection = nil
    }
}

/// A connection is confined to one thread at a time; share it through `DatabaseQueue`.
@available(*, unavailable)
extension Database: Sendable {}
