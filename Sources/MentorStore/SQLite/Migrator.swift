/// A versioned schema. Migrations are numbered 1, 2, 3, ...; `PRAGMA user_version` holds the
/// number of migrations applied, so a database knows its own schema version.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register(1, "records", "CREATE TABLE record(...); CREATE INDEX ...;")
/// try migrator.migrate(db)
/// ```
///
/// A migration's SQL runs inside a transaction, so it must not contain BEGIN/COMMIT, and
/// PRAGMAs that have no effect in a transaction (`foreign_keys`, `journal_mode`) do nothing there.
public struct Migrator: Sendable {
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    public private(set) var migrations: [Migration] = []

    public init() {}

    /// Adds migration `version`. Versions must run 1, 2, 3, ... in registration order; a gap or a
    /// repeat is reported by `migrate` as `invalidMigrations`, before anything is applied.
    public mutating func register(_ version: Int, _ name: String, _ sql: String) {
        migrations.append(Migration(version: version, name: name, sql: sql))
    }

    /// The schema version the registered migrations lead to.
    public var latestVersion: Int { migrations.count }

    /// Applies every migration newer than the database's `user_version`, each in its own
    /// IMMEDIATE transaction that also sets `user_version`, so a failing migration leaves the
    /// schema and version exactly as before it. Running again is a no-op.
    ///
    /// A database whose version is newer than `latestVersion` was written by a newer MentorMate;
    /// it is refused with `schemaTooNew` and left untouched.
    public func migrate(_ db: Database) throws(StoreError) {
        try validate()
        let current = try currentVersion(db)
        guard current <= latestVersion else {
            throw StoreError(.schemaTooNew,
                             "the database \(db.path) has schema version \(current), but this MentorMate "
                                 + "knows versions up to \(latestVersion); upgrade MentorMate to open it "
                                 + "(the database was not changed)")
        }
        for migration in migrations where migration.version > current {
            try db.transaction(.immediate) { () throws(StoreError) in
                // Another process may have migrated while we waited for the write lock.
                guard try currentVersion(db) < migration.version else { return }
                do throws(StoreError) {
                    try db.executeScript(migration.sql)
                } catch {
                    throw StoreError(error.extendedCode,
                                     "migration \(migration.version) (\(migration.name)) failed: \(error.message)",
                                     sql: migration.sql)
                }
                try db.execute("PRAGMA user_version = \(migration.version)")
            }
        }
    }

    /// The database's schema version: how many migrations have been applied to it.
    public func currentVersion(_ db: Database) throws(StoreError) -> Int {
        try db.queryOne("PRAGMA user_version")?.int(0) ?? 0
    }

    private func validate() throws(StoreError) {
        for (offset, migration) in migrations.enumerated() where migration.version != offset + 1 {
            throw StoreError(.invalidMigrations,
                             "migration '\(migration.name)' is registered as version \(migration.version) "
                                 + "but must be \(offset + 1): versions run 1, 2, 3, ... in order")
        }
    }
}
