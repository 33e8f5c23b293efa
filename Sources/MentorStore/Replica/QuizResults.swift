import MentorCrypto
import MentorCore

/// Quiz results (record type 13, PROTOCOL.md §15.4; migration 19): each result's entry holds the
/// score this node computed from its answers; per (account, day) the earliest entry — by
/// timestamp, then record ID — is the one that counts.
extension Replica {
    /// One account's counting result of a day.
    public struct QuizStanding: Equatable, Sendable {
        public var account: PublicKey
        public var day: String
        public var score: Int
        /// When the result was written (ms since the Unix epoch).
        public var timestamp: UInt64
        public var recordID: [UInt8]
    }

    /// An account's results summed over every day it played.
    public struct QuizTotal: Equatable, Sendable {
        public var account: PublicKey
        public var score: Int
        public var days: Int
        /// The newest day played.
        public var lastDay: String
    }

    /// The entries that count: the earliest of each (account, day).
    static let countingQuizResults = """
        SELECT q.account, q.day, q.score, q.timestamp, q.record_id FROM quiz_results q
        WHERE NOT EXISTS (
            SELECT 1 FROM quiz_results p WHERE p.account = q.account AND p.day = q.day
              AND (p.timestamp < q.timestamp OR (p.timestamp = q.timestamp AND p.record_id < q.record_id)))
        """

    /// The results of `day`: best score first, then the earliest written, then the account key.
    public func quizStandings(day: String) throws(StoreError) -> [QuizStanding] {
        try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT * FROM (\(Self.countingQuizResults)) WHERE day = ?
                ORDER BY score DESC, timestamp, account
                """).query([.text(day)]).compactMap(Self.standing)
        }
    }

    /// The counting result of `account` on `day`, if it played.
    public func quizStanding(of account: PublicKey, day: String) throws(StoreError) -> QuizStanding? {
        try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT account, day, score, timestamp, record_id FROM quiz_results WHERE account = ? AND day = ?
                ORDER BY timestamp, record_id LIMIT 1
                """).query([.blob(account.bytes), .text(day)]).compactMap(Self.standing).first
        }
    }

    /// Every player's total over the days it played: best total first, then fewer days (the
    /// better average), then the account key.
    public func quizTotals() throws(StoreError) -> [QuizTotal] {
        try read { db throws(StoreError) in
            try db.cachedStatement("""
                SELECT account, SUM(score), COUNT(*), MAX(day) FROM (\(Self.countingQuizResults))
                GROUP BY account ORDER BY 2 DESC, 3, account
                """).query([]).compactMap { row in
                    guard let account = row.blob(0).flatMap(PublicKey.init(bytes:)), let total = row.int64(1),
                          let days = row.int64(2), let last = row.text(3) else { return nil }
                    return QuizTotal(account: account, score: Int(total), days: Int(days), lastDay: last)
                }
        }
    }

    /// The answers of a stored quiz result (nil when the record is not held).
    public func quizAnswers(recordID: [UInt8]) throws(StoreError) -> [Int?]? {
        try read { db throws(StoreError) in
            guard let bytes = try db.cachedStatement("SELECT bytes FROM records INDEXED BY records_by_id WHERE id = ?")
                    .queryOne([.blob(recordID)])?.blob(0),
                  let v = try? VerifiedRecord(alreadyVerified: bytes), v.record.type == .quizResult,
                  let result = try? QuizResult(body: v.record.body) else { return nil }
            return result.answers
        }
    }

    private static func standing(_ row: Row) -> QuizStanding? {
        guard let account = row.blob(0).flatMap(PublicKey.init(bytes:)), let day = row.text(1), let score = row.int64(2),
              let at = row.int64(3), let id = row.blob(4) else { return nil }
        return QuizStanding(account: account, day: day, score: Int(score), timestamp: UInt64(max(at, 0)), recordID: id)
    }
}
