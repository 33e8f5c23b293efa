import Dispatch
import Foundation
import Synchronization
import MentorStore
import Testing

/// Runs `body` with a fresh directory that is removed afterwards.
private func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("mentorstore-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory.path)
}

private struct Boom: Error, Equatable {}

private func rowCount(_ db: Database, _ table: String) throws -> Int64? {
    try db.queryOne("SELECT count(*) FROM \(table)")?.int64(0)
}

// MARK: Values

@Test func everyValueTypeRoundTripsIncludingEmptyBlobEmptyTextAndNull() throws {
    let db = try Database(path: ":memory:")
    // A column without a declared type keeps every value in the storage class it was bound with.
    try db.execute("CREATE TABLE value(id INTEGER PRIMARY KEY, v)")
    let values: [SQLValue] = [
        .null,
        .integer(0), .integer(Int64.min), .integer(Int64.max),
        .real(3.25), .real(-0.5e-300),
        .text(""), .text("héllo, 世界 🌍"), .text("nul\u{0}inside"),
        .blob([]), .blob([0, 1, 2, 0xFF]),
    ]
    for value in values {
        try db.execute("INSERT INTO value(v) VALUES (?)", [value])
    }
    let rows = try db.query("SELECT v, typeof(v) FROM value ORDER BY id")
    #expect(rows.map { $0[0] } == values)
    // The empty blob is stored as a blob, not as NULL, and reads back as [] rather than nil.
    #expect(rows[9].text(1) == "blob")
    #expect(rows[9].blob(0) == [])
    #expect(rows[0].blob(0) == nil)
    #expect(rows[0].text(1) == "null")
    #expect(rows[6].text(0) == "")
    #expect(rows[6].text(1) == "text")
}

@Test func bindableSwiftValuesConvertToTheirSQLiteForm() throws {
    let db = try Database(path: ":memory:")
    let missing: String? = nil
    let row = try #require(try db.queryOne(
        "SELECT ?, ?, ?, ?, ?, ?, ?",
        [42.sqlValue, true.sqlValue, 1.5.sqlValue, "x".sqlValue, [UInt8]([7]).sqlValue, missing.sqlValue,
         try SQLValue(checked: UInt64(Int64.max))]))
    #expect(row.int(0) == 42)
    #expect(row.bool(1) == true)
    #expect(row.double(2) == 1.5)
    #expect(row.text(3) == "x")
    #expect(row.blob(4) == [7])
    #expect(row[5] == .null)
    #expect(row.uint64(6) == UInt64(Int64.max))
}

@Test func unsignedValueAboveInt64MaxIsRefusedInsteadOfWrapping() {
    let error = #expect(throws: StoreError.self) { try SQLValue(checked: UInt64.max) }
    #expect(error?.extendedCode == .valueOutOfRange)
}

// MARK: Errors

@Test func constraintViolationIsReportedByNameAndCarriesTheStatement() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE peer(id TEXT PRIMARY KEY NOT NULL, name TEXT UNIQUE)")
    let insert = "INSERT INTO peer(id, name) VALUES (?, ?)"
    try db.execute(insert, ["a", "ann"])

    let error = #expect(throws: StoreError.self) { try db.execute(insert, ["b", "ann"]) }
    #expect(error?.isConstraint == true)
    #expect(error?.primaryCode == .constraint)
    #expect(error?.extendedCode == .constraintUnique)
    #expect(error?.sql == insert)
    #expect(error?.message.contains("UNIQUE constraint failed: peer.name") == true)

    // The same failure is catchable by name in a catch clause.
    var caughtByName = false
    do {
        try db.execute(insert, ["c", "ann"])
    } catch StoreError.Code.constraint {
        caughtByName = true
    } catch {
        Issue.record("expected a constraint error, got \(error)")
    }
    #expect(caughtByName)
    #expect(try rowCount(db, "peer") == 1)
}

@Test func malformedSQLGivesAClearErrorContainingTheSQL() throws {
    let db = try Database(path: ":memory:")
    let sql = "SELEC id FROM nowhere"
    let error = #expect(throws: StoreError.self) { try db.query(sql) }
    #expect(error?.primaryCode == .error)
    #expect(error?.sql == sql)
    #expect(error?.message.contains("syntax error") == true)
    #expect(error?.description.contains(sql) == true)
}

@Test func executeRefusesASecondStatementAndPointsToExecuteScript() throws {
    let db = try Database(path: ":memory:")
    let error = #expect(throws: StoreError.self) {
        try db.execute("CREATE TABLE a(x); CREATE TABLE b(x)")
    }
    #expect(error?.extendedCode == .misuse)
    #expect(error?.message.contains("executeScript") == true)
    // Nothing ran; trailing comments and semicolons are fine.
    #expect(try db.query("SELECT name FROM sqlite_master").isEmpty)
    try db.execute("CREATE TABLE a(x); -- a comment")
    try db.executeScript("CREATE TABLE b(x); CREATE TABLE c(x);")
    #expect(try db.query("SELECT name FROM sqlite_master ORDER BY name").compactMap { $0.text(0) } == ["a", "b", "c"])
}

@Test func wrongArgumentCountIsRefused() throws {
    let db = try Database(path: ":memory:")
    let error = #expect(throws: StoreError.self) { try db.query("SELECT ?, ?", [1]) }
    #expect(error?.primaryCode == .range)
    #expect(error?.message.contains("expected 2 arguments, got 1") == true)
}

// MARK: Transactions

@Test func transactionRollsBackEverythingWhenTheBodyThrows() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE item(n INTEGER)")
    #expect(throws: Boom()) {
        try db.transaction {
            try db.execute("INSERT INTO item VALUES (1)")
            try db.execute("INSERT INTO item VALUES (2)")
            throw Boom()
        }
    }
    #expect(try rowCount(db, "item") == 0)
    // The connection is usable again: no transaction was left open.
    try db.transaction { try db.execute("INSERT INTO item VALUES (3)") }
    #expect(try rowCount(db, "item") == 1)
}

@Test func nestedTransactionRollsBackOnlyItsOwnSavepoint() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE item(n INTEGER)")
    try db.transaction {
        try db.execute("INSERT INTO item VALUES (1)")
        #expect(throws: Boom()) {
            try db.transaction {
                try db.execute("INSERT INTO item VALUES (2)")
                throw Boom()
            }
        }
        try db.transaction { try db.execute("INSERT INTO item VALUES (3)") }
    }
    #expect(try db.query("SELECT n FROM item ORDER BY n").map { $0.int(0) } == [1, 3])
}

@Test func committedTransactionSurvivesCloseAndReopen() throws {
    try withTemporaryDirectory { directory in
        let path = directory + "/store.sqlite"
        let db = try Database(path: path)
        try db.execute("CREATE TABLE note(body TEXT)")
        try db.transaction { try db.execute("INSERT INTO note VALUES (?)", ["kept"]) }
        try db.close()

        let reopened = try Database(path: path)
        #expect(try reopened.query("SELECT body FROM note").map { $0.text(0) } == ["kept"])
    }
}

/// Compiles only if the closure-taking APIs keep `StoreError` typed for typed callers.
private func copyEvens(_ store: DatabaseQueue) throws(StoreError) -> [Int] {
    try store.write { db throws(StoreError) in
        try db.executeScript("CREATE TABLE n(v); CREATE TABLE even(v); INSERT INTO n VALUES (1), (2), (3), (4);")
        var evens: [Int] = []
        try db.forEachRow("SELECT v FROM n ORDER BY v") { row in
            if let v = row.int(0), v % 2 == 0 { evens.append(v) }
        }
        try db.transaction { () throws(StoreError) in
            for v in evens { try db.execute("INSERT INTO even VALUES (?)", [v.sqlValue]) }
        }
    }
    return try store.read { db throws(StoreError) in try db.query("SELECT v FROM even").compactMap { $0.int(0) } }
}

@Test func typedCallersKeepStoreErrorThroughClosures() throws {
    let store = try DatabaseQueue(path: ":memory:")
    #expect(try copyEvens(store) == [2, 4])
    // Running it again fails inside the typed write (the table exists) and the error stays a StoreError.
    let error = #expect(throws: StoreError.self) { try copyEvens(store) }
    #expect(error?.message.contains("table n already exists") == true)
    #expect(try store.read { db in try rowCount(db, "even") } == 2)
}

// MARK: Connection

@Test func fileDatabaseIsOpenedInWALModeWithTheRequestedPragmas() throws {
    try withTemporaryDirectory { directory in
        let db = try Database(path: directory + "/wal.sqlite")
        #expect(try db.queryOne("PRAGMA journal_mode")?.text(0) == "wal")
        #expect(try db.queryOne("PRAGMA synchronous")?.int(0) == 1)  // NORMAL
        #expect(try db.queryOne("PRAGMA foreign_keys")?.int(0) == 1)
        #expect(try db.queryOne("PRAGMA busy_timeout")?.int(0) == 5000)
    }
}

@Test func foreignKeysAreEnforced() throws {
    let db = try Database(path: ":memory:")
    try db.executeScript("""
        CREATE TABLE parent(id INTEGER PRIMARY KEY);
        CREATE TABLE child(parent INTEGER NOT NULL REFERENCES parent(id));
        """)
    let error = #expect(throws: StoreError.self) { try db.execute("INSERT INTO child VALUES (7)") }
    #expect(error?.extendedCode == .constraintForeignKey)
}

@Test func readOnlyConnectionRefusesWrites() throws {
    try withTemporaryDirectory { directory in
        let path = directory + "/ro.sqlite"
        try Database(path: path).execute("CREATE TABLE t(x)")
        let readOnly = try Database(path: path, options: .init(readOnly: true))
        #expect(try rowCount(readOnly, "t") == 0)
        let error = #expect(throws: StoreError.self) { try readOnly.execute("INSERT INTO t VALUES (1)") }
        #expect(error?.isReadOnly == true)
    }
}

@Test func cachedStatementIsReusedAndReturnsTheRowsOfEachBinding() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE word(n INTEGER, w TEXT)")
    let insert = try db.cachedStatement("INSERT INTO word VALUES (?, ?)")
    for (n, w) in [(1, "one"), (2, "two"), (2, "deux"), (3, "three")] {
        try insert.run([n.sqlValue, w.sqlValue])
    }
    let sql = "SELECT w FROM word WHERE n = ? ORDER BY w"
    let first = try db.cachedStatement(sql)
    #expect(try first.query([2]).map { $0.text(0) } == ["deux", "two"])
    let again = try db.cachedStatement(sql)
    #expect(again === first)
    #expect(try again.query([3]).map { $0.text(0) } == ["three"])
    #expect(try again.queryOne([1])?.text(0) == "one")
    // Stepping by hand, abandoned halfway, then fetched again: it starts from the first row.
    try again.bind([2])
    #expect(try again.step()?.text(0) == "deux")
    #expect(try db.cachedStatement(sql).query([2]).count == 2)
}

@Test func forEachRowStreamsRowsAndStopsOnABodyError() throws {
    let db = try Database(path: ":memory:")
    try db.executeScript("CREATE TABLE n(v); INSERT INTO n VALUES (1), (2), (3);")
    var seen: [Int] = []
    try db.forEachRow("SELECT v FROM n WHERE v >= ? ORDER BY v", [2]) { seen.append($0.int(0) ?? -1) }
    #expect(seen == [2, 3])
    seen = []
    #expect(throws: Boom()) {
        try db.forEachRow("SELECT v FROM n ORDER BY v") { row in
            seen.append(row.int(0) ?? -1)
            throw Boom()
        }
    }
    #expect(seen == [1])
}

@Test func changesAndLastInsertRowIDDescribeTheLastWrite() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, x)")
    try db.execute("INSERT INTO t(x) VALUES (1), (2), (3)")
    #expect(db.changes == 3)
    #expect(db.lastInsertRowID == 3)
    try db.execute("UPDATE t SET x = 0 WHERE id < 3")
    #expect(db.changes == 2)
}

@Test func integrityCheckOfASoundDatabaseIsOk() throws {
    try withTemporaryDirectory { directory in
        let db = try Database(path: directory + "/sound.sqlite")
        try db.executeScript("CREATE TABLE t(x UNIQUE); INSERT INTO t VALUES (1), (2);")
        #expect(try db.integrityCheck() == ["ok"])
    }
}

@Test func closedDatabaseAndItsCachedStatementsRefuseUse() throws {
    let db = try Database(path: ":memory:")
    let statement = try db.cachedStatement("SELECT 1")
    try db.close()
    try db.close()  // closing twice is harmless
    #expect(throws: StoreError.self) { try db.query("SELECT 1") }
    let error = #expect(throws: StoreError.self) { try statement.step() }
    #expect(error?.extendedCode == .misuse)
}

@Test func closingTheDatabaseInsideATransactionFailsTheCommitCleanly() throws {
    let db = try Database(path: ":memory:")
    let error = #expect(throws: StoreError.self) { try db.transaction { try db.close() } }
    #expect(error?.extendedCode == .misuse)
    #expect(error?.message.contains("is closed") == true)
}

@Test func openingAnImpossiblePathFailsWithCantOpen() {
    let error = #expect(throws: StoreError.self) {
        try Database(path: "/nonexistent-directory-for-mentorstore/x.sqlite")
    }
    #expect(error?.primaryCode == .cantOpen)
    #expect(error?.message.contains("/nonexistent-directory-for-mentorstore/x.sqlite") == true)
}

// MARK: Migrations

private func threeMigrations() -> Migrator {
    var migrator = Migrator()
    migrator.register(1, "peers", "CREATE TABLE peer(id TEXT PRIMARY KEY);")
    migrator.register(2, "records", "CREATE TABLE record(seq INTEGER); CREATE INDEX record_seq ON record(seq);")
    migrator.register(3, "seed", "INSERT INTO peer VALUES ('self');")
    return migrator
}

@Test func migratorAppliesEachMigrationOnceAndRerunningIsANoOp() throws {
    let db = try Database(path: ":memory:")
    let migrator = threeMigrations()
    #expect(try migrator.currentVersion(db) == 0)
    try migrator.migrate(db)
    #expect(try migrator.currentVersion(db) == 3)
    #expect(try rowCount(db, "peer") == 1)
    #expect(try rowCount(db, "record") == 0)

    // Applying any migration twice would fail (table exists) or duplicate the seed row.
    try migrator.migrate(db)
    #expect(try migrator.currentVersion(db) == 3)
    #expect(try rowCount(db, "peer") == 1)
}

@Test func migratorAppliesOnlyTheMigrationsThatArePending() throws {
    let db = try Database(path: ":memory:")
    var older = Migrator()
    older.register(1, "peers", "CREATE TABLE peer(id TEXT PRIMARY KEY);")
    try older.migrate(db)
    try db.execute("INSERT INTO peer VALUES ('kept')")

    try threeMigrations().migrate(db)
    #expect(try threeMigrations().currentVersion(db) == 3)
    #expect(try db.query("SELECT id FROM peer ORDER BY id").map { $0.text(0) } == ["kept", "self"])
}

@Test func databaseFromANewerMentorMateIsRefusedAndLeftUnchanged() throws {
    let db = try Database(path: ":memory:")
    try db.executeScript("CREATE TABLE future(x); PRAGMA user_version = 7;")
    let migrator = threeMigrations()

    let error = #expect(throws: StoreError.self) { try migrator.migrate(db) }
    #expect(error?.extendedCode == .schemaTooNew)
    #expect(error?.message.contains("upgrade MentorMate") == true)
    #expect(try migrator.currentVersion(db) == 7)
    #expect(try db.query("SELECT name FROM sqlite_master").compactMap { $0.text(0) } == ["future"])
}

@Test func failingMigrationRollsBackAndLeavesTheVersionUnchanged() throws {
    let db = try Database(path: ":memory:")
    var migrator = Migrator()
    migrator.register(1, "peers", "CREATE TABLE peer(id TEXT PRIMARY KEY);")
    migrator.register(2, "broken", "CREATE TABLE half(x); INSERT INTO missing VALUES (1);")

    let error = #expect(throws: StoreError.self) { try migrator.migrate(db) }
    #expect(error?.message.contains("migration 2 (broken)") == true)
    #expect(error?.message.contains("no such table: missing") == true)
    #expect(try migrator.currentVersion(db) == 1)
    #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'half'").isEmpty)
    #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'peer'").count == 1)
}

@Test func misnumberedMigrationsAreRefusedBeforeAnythingRuns() throws {
    let db = try Database(path: ":memory:")
    var migrator = Migrator()
    migrator.register(1, "peers", "CREATE TABLE peer(id TEXT);")
    migrator.register(3, "skipped two", "CREATE TABLE other(id TEXT);")
    let error = #expect(throws: StoreError.self) { try migrator.migrate(db) }
    #expect(error?.extendedCode == .invalidMigrations)
    #expect(try migrator.currentVersion(db) == 0)
    #expect(try db.query("SELECT name FROM sqlite_master").isEmpty)
}

// MARK: DatabaseQueue

@Test func concurrentWritersThroughTheQueueLandExactlyOnceEach() throws {
    try withTemporaryDirectory { directory in
        let store = try DatabaseQueue(path: directory + "/queue.sqlite")
        try store.write { db in try db.execute("CREATE TABLE hit(worker INTEGER, n INTEGER)") }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 10) { worker in
            for n in 0..<100 {
                do {
                    try store.write { db in
                        try db.cachedStatement("INSERT INTO hit VALUES (?, ?)").run([worker.sqlValue, n.sqlValue])
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try store.read { db in try rowCount(db, "hit") } == 1000)
        #expect(try store.read { db in try rowCount(db, "(SELECT DISTINCT worker, n FROM hit)") } == 1000)
    }
}

@Test func reentrantQueueAccessIsRefusedInsteadOfDeadlocking() throws {
    let store = try DatabaseQueue(path: ":memory:")
    let inner = try store.write { _ in
        (
            write: #expect(throws: StoreError.self) { try store.write { _ in } },
            read: #expect(throws: StoreError.self) { try store.read { _ in } }
        )
    }
    #expect(inner.write?.extendedCode == .reentrantAccess)
    #expect(inner.read?.extendedCode == .reentrantAccess)
    #expect(inner.write?.message.contains("deadlock") == true)
    // The queue still works afterwards.
    #expect(try store.inDatabase { db in try db.queryOne("SELECT 1")?.int(0) } == 1)
}

@Test func queueWriteRollsBackWhenTheBodyThrows() throws {
    let store = try DatabaseQueue(path: ":memory:")
    try store.write { db in try db.execute("CREATE TABLE t(x)") }
    #expect(throws: Boom()) {
        try store.write { db in
            try db.execute("INSERT INTO t VALUES (1)")
            throw Boom()
        }
    }
    #expect(try store.read { db in try rowCount(db, "t") } == 0)
}

/// A cached statement used in read after read stays prepared. Before: each read set and reset
/// `PRAGMA query_only`, which expires every statement of the connection, so each use re-prepared.
@Test func cachedStatementsAreNotPreparedAgainByEachRead() throws {
    let store = try DatabaseQueue(path: ":memory:")
    try store.write { db in try db.execute("CREATE TABLE t(x)"); try db.execute("INSERT INTO t VALUES (1)") }
    let sql = "SELECT x FROM t WHERE x = ?"
    for _ in 0..<5 {
        #expect(try store.read { db in try db.cachedStatement(sql).queryOne([.integer(1)])?.int64(0) } == 1)
    }
    let count = try store.read { db in try db.cachedStatement(sql).reprepareCount }
    #expect(count == 0, "re-prepared \(count) times")
}

/// The read-only guard refuses writes of every kind inside a read and leaves reads working.
@Test func queueReadRefusesScriptsAndWritingStatements() throws {
    let store = try DatabaseQueue(path: ":memory:")
    try store.write { db in try db.execute("CREATE TABLE t(x)") }
    for body in [{ (db: Database) throws in try db.executeScript("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)") },
                 { (db: Database) throws in try db.cachedStatement("DELETE FROM t").run() },
                 { (db: Database) throws in try db.execute("CREATE TABLE u(y)") }] {
        let error = #expect(throws: StoreError.self) { try store.read(body) }
        #expect(error?.isReadOnly == true)
    }
    #expect(try store.read { db in try rowCount(db, "t") } == 0)
    #expect(try store.read { db in try db.queryOne("SELECT count(*) FROM sqlite_schema WHERE name = 'u'")?.int64(0) } == 0)
}

@Test func queueReadRefusesWritesAndLeavesTheConnectionWritable() throws {
    let store = try DatabaseQueue(path: ":memory:")
    try store.write { db in try db.execute("CREATE TABLE t(x)") }
    let error = #expect(throws: StoreError.self) {
        try store.read { db in try db.execute("INSERT INTO t VALUES (1)") }
    }
    #expect(error?.isReadOnly == true)
    try store.write { db in try db.execute("INSERT INTO t VALUES (2)") }
    #expect(try store.read { db in try rowCount(db, "t") } == 1)
}

// MARK: Temporary files

/// SQLite's temporary files this process holds open (they are unlinked at once, so only
/// /proc shows them: "…/etilqs_… (deleted)").
private func openTemporaryFiles() -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.filter { fd in
        ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "").contains("etilqs_")
    }.count
}

/// Writes, in one transaction, a statement that journals more than 64 KiB (SQLite's limit for
/// a statement journal in memory) and then single rows into a table with a trigger; returns
/// how many temporary files were open before the commit.
private func temporaryFilesDuringAWriteTransaction(options: Database.Options) throws -> Int {
    try withTemporaryDirectory { dir in
        let db = try Database(path: dir + "/t.sqlite", options: options)
        try db.executeScript("""
            CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT NULL);
            CREATE TABLE total(n INTEGER NOT NULL);
            INSERT INTO total VALUES (0);
            CREATE TRIGGER t_in AFTER INSERT ON t BEGIN UPDATE total SET n = n + 1; END;
            """)
        try db.execute("INSERT INTO t(v) SELECT zeroblob(1000) FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500) SELECT i FROM c)")
        return try db.transaction {
            try db.execute("UPDATE t SET v = zeroblob(1001)")   // every page of t: far past 64 KiB
            for _ in 0..<10 { try db.execute("INSERT INTO t(v) VALUES (zeroblob(10))") }
            return openTemporaryFiles()
        }
    }
}

@Test func statementJournalsStayInMemoryWithNoTemporaryFile() throws {
    // With SQLite's default, the journal that lets each statement be undone alone becomes a
    // file once a statement journals past 64 KiB, and every later statement of the transaction
    // writes to it: a sixth of the time of applying a sync batch of new accounts.
    #expect(try temporaryFilesDuringAWriteTransaction(options: .init()) == 0)
    #expect(try temporaryFilesDuringAWriteTransaction(options: .init(tempStoreInMemory: false)) > 0)
    let db = try Database(path: ":memory:")
    #expect(try db.queryOne("PRAGMA temp_store")?.int64(0) == 2)   // MEMORY
}
