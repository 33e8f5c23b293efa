/// A multi-value register (the CRDT behind card fields and likes).
///
/// It keeps every write that no other write causally dominates. Applying the same writes in
/// any order, with duplicates, leaves the same set. The winner among concurrent writes is
/// chosen deterministically (later timestamp, then larger record ID); the others stay visible
/// as conflicts until a write that dominates them all arrives.
public struct RegisterEntry<Value: Sendable & Equatable>: Sendable, Equatable {
    public var clock: VectorClock
    public var timestamp: UInt64
    /// The record's ID (BLAKE2b of its encoding): the last tie-break, unique per record.
    public var recordID: [UInt8]
    public var value: Value

    public init(clock: VectorClock, timestamp: UInt64, recordID: [UInt8], value: Value) {
        self.clock = clock; self.timestamp = timestamp; self.recordID = recordID; self.value = value
    }

    /// Deterministic order among concurrent entries: true if `self` loses to `other`.
    @inlinable
    public func losesTo(_ other: RegisterEntry) -> Bool {
        if timestamp != other.timestamp { return timestamp < other.timestamp }
        return recordID.lexicographicallyPrecedes(other.recordID)
    }
}

public enum MVRegister {
    /// Folds `new` into the current maximal entries. Returns nil when nothing changes
    /// (a duplicate, or a write that an existing entry dominates).
    @inlinable
    public static func merge<V>(_ current: [RegisterEntry<V>], _ new: RegisterEntry<V>) -> [RegisterEntry<V>]? {
        var kept: [RegisterEntry<V>] = []
        for e in current {
            if e.recordID == new.recordID { return nil }
            switch new.clock.compare(e.clock) {
            case .before: return nil                 // an existing write already supersedes it
            case .after: continue                    // the new write supersedes this one
            case .equal, .concurrent: kept.append(e)  // equal clocks: same seq forked (equivocation)
            }
        }
        kept.append(new)
        return sorted(kept)
    }

    /// Canonical order: winner first, then the conflicts from strongest to weakest.
    @inlinable
    public static func sorted<V>(_ entries: [RegisterEntry<V>]) -> [RegisterEntry<V>] {
        entries.sorted { $1.losesTo($0) }
    }

    /// The winning entry of a register (nil if empty).
    @inlinable
    public static func winner<V>(_ entries: [RegisterEntry<V>]) -> RegisterEntry<V>? {
        sorted(entries).first
    }
}
