/// How many of something (connections, subscriptions) each Unix user holds, against one limit
/// per user. A value type without locking: its owner confines or locks it.
///
/// ```swift
/// var open = PerUserCount(limit: 32)
/// guard open.take(caller.uid) else { refuse() }
/// ...
/// open.release(caller.uid)       // once per successful take
/// ```
public struct PerUserCount: Sendable, Equatable {
    public let limit: Int
    private var counts: [UInt32: Int] = [:]

    public init(limit: Int) { self.limit = limit }

    /// What `uid` holds now.
    public func count(_ uid: UInt32) -> Int { counts[uid, default: 0] }

    /// Users holding at least one (only those are stored, so this stays small).
    public var users: Int { counts.count }

    /// Takes one for `uid` if it holds fewer than `limit`; false (nothing changed) otherwise.
    public mutating func take(_ uid: UInt32) -> Bool {
        let held = counts[uid, default: 0]
        guard held < limit else { return false }
        counts[uid] = held + 1
        return true
    }

    /// Gives back one that `take` handed out (a release without a take is ignored).
    public mutating func release(_ uid: UInt32) {
        guard let held = counts[uid] else { return }
        counts[uid] = held > 1 ? held - 1 : nil
    }
}
