import CSQLite

/// An error from the store: a `code` to match on, a `message` that says what happened, and the
/// SQL that was running, if any.
///
/// `code` is SQLite's result code (extended codes are on, so a unique-constraint failure is
/// `SQLITE_CONSTRAINT_UNIQUE`, whose primary code is `SQLITE_CONSTRAINT`), or a negative
/// MentorStore code for failures that are not SQLite's (`Code.schemaTooNew`, ...).
///
/// Match by name, never by message:
///
/// ```swift
/// do { try db.execute("INSERT INTO peer(id) VALUES (?)", [.blob(id)]) }
/// catch StoreError.Code.constraint { /* already known */ }
///
/// if error.isBusy { retryLater() }
/// ```
///
/// End such a chain with a plain `catch`: Swift 6.3.1 crashes compiling a pattern-only `catch`
/// around a `throws(StoreError)` call when the clause assigns a variable declared outside the `do`.
public struct StoreError: Error, Equatable, CustomStringConvertible, Sendable {
    /// SQLite's result code (possibly extended), or a negative MentorStore code.
    public let code: Int32
    /// What happened: `sqlite3_errmsg`, or MentorStore's own explanation.
    public let message: String
    /// The statement (or script) that failed, if any.
    public let sql: String?

    public init(_ code: Code, _ message: String, sql: String? = nil) {
        self.code = code.rawValue
        self.message = message
        self.sql = sql
    }

    /// The code as a value to compare with the named codes.
    public var extendedCode: Code { Code(rawValue: code) }
    /// The primary SQLite code (`SQLITE_CONSTRAINT` for `SQLITE_CONSTRAINT_UNIQUE`); MentorStore
    /// codes are returned unchanged.
    public var primaryCode: Code { extendedCode.primary }

    /// A UNIQUE, NOT NULL, CHECK, PRIMARY KEY or FOREIGN KEY constraint failed.
    public var isConstraint: Bool { primaryCode == .constraint }
    /// Another connection holds a lock and the busy timeout ran out.
    public var isBusy: Bool { primaryCode == .busy }
    /// The disk (or the database's size limit) is full.
    public var isFull: Bool { primaryCode == .full }
    /// A write was attempted on a read-only database or connection.
    public var isReadOnly: Bool { primaryCode == .readOnly }
    /// The database file is damaged, or is not a database at all.
    public var isCorrupt: Bool { primaryCode == .corrupt || primaryCode == .notADatabase }

    public var description: String {
        var text = "\(extendedCode): \(message)"
        if let sql { text += " (SQL: \(sql))" }
        return text
    }

    /// Builds the error for a failed SQLite call on `connection`. The message is the
    /// connection's `sqlite3_errmsg` when it describes this failure, `sqlite3_errstr` otherwise.
    static func sqlite(_ resultCode: Int32, _ connection: OpaquePointer?, sql: String?) -> StoreError {
        let message: String
        if let connection, sqlite3_extended_errcode(connection) == resultCode,
           let cMessage = sqlite3_errmsg(connection) {
            message = String(cString: cMessage)
        } else {
            message = String(cString: sqlite3_errstr(resultCode))
        }
        return StoreError(Code(rawValue: resultCode), message, sql: sql)
    }
}

extension StoreError {
    /// A result code. Non-negative values are SQLite's; negative values are MentorStore's own.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// True for SQLite's codes, false for MentorStore's own (negative) codes.
        public var isSQLite: Bool { rawValue >= 0 }
        /// The primary code: the low byte of an extended SQLite code; MentorStore codes unchanged.
        public var primary: Code { isSQLite ? Code(rawValue: rawValue & 0xFF) : self }

        public var description: String {
            switch self {
            case .schemaTooNew: "schemaTooNew"
            case .reentrantAccess: "reentrantAccess"
            case .invalidMigrations: "invalidMigrations"
            case .valueOutOfRange: "valueOutOfRange"
            case .walUnavailable: "walUnavailable"
            default:
                isSQLite
                    ? "SQLite error \(rawValue) (\(String(cString: sqlite3_errstr(rawValue))))"
                    : "MentorStore error \(rawValue)"
            }
        }

        // SQLite primary codes: these match any extended code with the same primary code.
        public static let error = Code(rawValue: SQLITE_ERROR)
        public static let `internal` = Code(rawValue: SQLITE_INTERNAL)
        public static let permission = Code(rawValue: SQLITE_PERM)
        public static let abort = Code(rawValue: SQLITE_ABORT)
        public static let busy = Code(rawValue: SQLITE_BUSY)
        public static let locked = Code(rawValue: SQLITE_LOCKED)
        public static let noMemory = Code(rawValue: SQLITE_NOMEM)
        public static let readOnly = Code(rawValue: SQLITE_READONLY)
        public static let interrupted = Code(rawValue: SQLITE_INTERRUPT)
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        public static let full = Code(rawValue: SQLITE_FULL)
        public static let cantOpen = Code(rawValue: SQLITE_CANTOPEN)
        public static let schemaChanged = Code(rawValue: SQLITE_SCHEMA)
        public static let tooBig = Code(rawValue: SQLITE_TOOBIG)
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        public static let mismatch = Code(rawValue: SQLITE_MISMATCH)
        public static let misuse = Code(rawValue: SQLITE_MISUSE)
        public static let range = Code(rawValue: SQLITE_RANGE)
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)

        // SQLite extended codes: these match only themselves. (sqlite3.h defines them as
        // `(SQLITE_CONSTRAINT | (n<<8))`, a macro form Swift does not import.)
        public static let constraintCheck = Code(rawValue: SQLITE_CONSTRAINT | (1 << 8))
        public static let constraintForeignKey = Code(rawValue: SQLITE_CONSTRAINT | (3 << 8))
        public static let constraintNotNull = Code(rawValue: SQLITE_CONSTRAINT | (5 << 8))
        public static let constraintPrimaryKey = Code(rawValue: SQLITE_CONSTRAINT | (6 << 8))
        public static let constraintUnique = Code(rawValue: SQLITE_CONSTRAINT | (8 << 8))

        // MentorStore's own codes (negative, so they never collide with SQLite's).
        /// The database was written by a newer MentorMate: its schema version is higher than any
        /// migration this build knows. Upgrade MentorMate; nothing was changed.
        public static let schemaTooNew = Code(rawValue: -1)
        /// `DatabaseQueue.read`/`write`/`inDatabase` was called from inside a closure already
        /// running on the same queue; waiting would deadlock, so it is refused.
        public static let reentrantAccess = Code(rawValue: -2)
        /// The registered migrations are not numbered 1, 2, 3, ... without gaps or repeats.
        public static let invalidMigrations = Code(rawValue: -3)
        /// A value does not fit the column type (for example a UInt64 above Int64.max).
        public static let valueOutOfRange = Code(rawValue: -4)
        /// A file database could not be switched to WAL journal mode.
        public static let walUnavailable = Code(rawValue: -5)

        /// Whether `error` has this code. A primary SQLite code matches all its extended codes
        /// (`.constraint` matches `.constraintUnique`); any other code must match exactly.
        public func matches(_ error: StoreError) -> Bool {
            isSQLite && self == primary ? error.primaryCode == self : error.extendedCode == self
        }

        /// Lets a `catch` clause match on a code: `catch StoreError.Code.constraint { ... }`.
        public static func ~= (pattern: Code, error: StoreError) -> Bool {
            pattern.matches(error)
        }

        /// Lets a `catch` clause match on a code when the thrown type is `any Error`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            guard let error = error as? StoreError else { return false }
            return pattern.matches(error)
        }
    }
}
