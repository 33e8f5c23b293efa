import Dispatch

/// One `Database` confined to one serial dispatch queue (GRDB's DatabaseQueue): every access runs
/// synchronously on that queue, one at a time, from whichever thread calls.
///
/// ```swift
/// let store = try DatabaseQueue(path: path)
/// try store.write { db in try db.execute("INSERT ...", [...]) }
/// let rows = try store.read { db in try db.query("SELECT ...") }
/// ```
///
/// Do not let the `Database` (or a `Statement`) escape the closure: outside it, nothing
/// serializes access.
///
/// `@unchecked Sendable` is safe because the only mutable state, `database`, is touched only
/// inside `queue.sync` blocks, and the queue is serial, so those blocks never overlap and each
/// happens-after the previous one. `queue` and `key` are immutable and thread-safe themselves.
public final class DatabaseQueue: @unchecked Sendable {
    private let database: Database
    private let queue: DispatchQueue
    /// Set on `queue` only, so finding it means we are already running on `queue`.
    private let key = DispatchSpecificKey<Void>()

    public init(path: String, options: Database.Options = .init()) throws(StoreError) {
        database = try Database(path: path, options: options)
        queue = DispatchQueue(label: "MentorStore.DatabaseQueue")
        queue.setSpecific(key: key, value: ())
    }

    /// Runs `body` on the queue inside an IMMEDIATE transaction: committed if it returns, rolled
    /// back if it throws. Nested calls on the same queue are refused with `reentrantAccess`.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try inWriteTransaction(body, convert: { $0 })
    }

    /// Runs `body` on the queue inside a DEFERRED transaction with the connection read-only, so
    /// it sees one consistent snapshot and any statement in it that would write fails with
    /// `readOnly` before it runs (`sqlite3_stmt_readonly`).
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try inReadTransaction(body, convert: { $0 })
    }

    /// Runs `body` on the queue with no transaction around it (for PRAGMAs, VACUUM, or work that
    /// manages its own transactions, such as `Migrator.migrate`).
    public func inDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        try onQueue("inDatabase", body, convert: { $0 })
    }

    // The same three for bodies that throw only `StoreError` (or nothing), so callers with
    // `throws(StoreError)` keep their typed error. A throwing closure picks these when written
    // `{ db throws(StoreError) in ... }`.

    public func write<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try inWriteTransaction(body, convert: { $0 })
    }

    public func read<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try inReadTransaction(body, convert: { $0 })
    }

    public func inDatabase<T>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try onQueue("inDatabase", body, convert: { $0 })
    }

    /// `read`, after `prepare` ran on the queue (with no transaction around it: it makes its
    /// own), with nothing in between: for a structure kept behind the tables that must be
    /// brought up to date before it is read.
    public func read<T>(after prepare: (Database) throws(StoreError) -> Void, _ body: (Database) throws -> T) throws -> T {
        try inReadTransaction(after: prepare, body, convert: { $0 })
    }

    public func read<T>(after prepare: (Database) throws(StoreError) -> Void,
                        _ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try inReadTransaction(after: prepare, body, convert: { $0 })
    }

    /// Closes the connection on the queue; later accesses throw `misuse`.
    public func close() throws(StoreError) {
        try onQueue("close", { (database) throws(StoreError) in try database.close() }, convert: { $0 })
    }

    private func inWriteTransaction<T, E: Error>(_ body: (Database) throws(E) -> T,
                                                 convert: (StoreError) -> E) throws(E) -> T {
        try onQueue("write", { (database) throws(E) in
            try database.inTransaction(.immediate, { () throws(E) in try body(database) }, convert: convert)
        }, convert: convert)
    }

    /// `prepare` runs first, outside the read transaction (nothing by default).
    private func inReadTransaction<T, E: Error>(after prepare: (Database) throws(StoreError) -> Void = { _ in },
                                                _ body: (Database) throws(E) -> T,
                                                convert: (StoreError) -> E) throws(E) -> T {
        try onQueue("read", { (database) throws(E) in
            do throws(StoreError) { try prepare(database) } catch { throw convert(error) }
            database.access.readOnly = true
            defer { database.access.readOnly = false }
            return try database.inTransaction(.deferred, { () throws(E) in try body(database) }, convert: convert)
        }, convert: convert)
    }

    /// Runs `body` synchronously on the queue, keeping its error type.
    private func onQueue<T, E: Error>(_ method: String, _ body: (Database) throws(E) -> T,
                                      convert: (StoreError) -> E) throws(E) -> T {
        // A synchronous call from the queue onto itself waits for itself forever.
        guard DispatchQueue.getSpecific(key: key) == nil else {
            throw convert(StoreError(
                .reentrantAccess,
                "DatabaseQueue.\(method) was called from inside a DatabaseQueue closure on the same queue, "
                    + "which would deadlock; use the Database the outer closure was given"))
        }
        let database = self.database
        return try queue.sync { Result { () throws(E) in try body(database) } }.get()
    }
}
