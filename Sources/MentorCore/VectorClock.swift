/// A version vector: for each writer, the highest sequence number of that writer's records
/// that are known. Entries are kept sorted by key and never hold a zero counter, so equal
/// clocks have equal encodings.
public struct VectorClock: Hashable, Sendable {
    public private(set) var entries: [(key: PublicKey, seq: UInt64)]

    public init() { entries = [] }

    /// Builds a clock from arbitrary pairs: zero counters are dropped, duplicates keep the maximum.
    public init(_ pairs: [(PublicKey, UInt64)]) {
        var byKey: [PublicKey: UInt64] = [:]
        for (k, s) in pairs where s > 0 { byKey[k] = max(byKey[k] ?? 0, s) }
        entries = byKey.sorted { $0.key < $1.key }.map { (key: $0.key, seq: $0.value) }
    }

    public subscript(_ key: PublicKey) -> UInt64 {
        entries.first { $0.key == key }?.seq ?? 0
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// Raises `key`'s counter to at least `seq`.
    public mutating func advance(_ key: PublicKey, to seq: UInt64) {
        guard seq > 0 else { return }
        if let i = entries.firstIndex(where: { $0.key == key }) {
            entries[i].seq = max(entries[i].seq, seq)
        } else {
            entries.append((key, seq))
            entries.sort { $0.key < $1.key }
        }
    }

    /// Pointwise maximum.
    public func merged(with other: VectorClock) -> VectorClock {
        var out = self
        for e in other.entries { out.advance(e.key, to: e.seq) }
        return out
    }

    public enum Order: Sendable, Equatable { case before, after, equal, concurrent }

    /// Causal order of two clocks: `.before` means self happened before other.
    public func compare(_ other: VectorClock) -> Order {
        // Both entry lists are sorted by key: walk them side by side.
        var less = false, greater = false
        var i = 0, j = 0
        let a = entries, b = other.entries
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].key < b[j].key) {
                greater = true; i += 1                      // only we know this writer
            } else if i == a.count || b[j].key < a[i].key {
                less = true; j += 1                         // only they know this writer
            } else {
                if a[i].seq < b[j].seq { less = true } else if a[i].seq > b[j].seq { greater = true }
                i += 1; j += 1
            }
            if less && greater { return .concurrent }
        }
        switch (less, greater) {
        case (false, false): return .equal
        case (true, false): return .before
        case (false, true): return .after
        default: return .concurrent
        }
    }

    /// True if every counter of `other` is at most ours.
    public func dominates(_ other: VectorClock) -> Bool {
        other.entries.allSatisfy { self[$0.key] >= $0.seq }
    }

    public static func == (a: VectorClock, b: VectorClock) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key && $0.seq == $1.seq }
    }

    public func hash(into h: inout Hasher) {
        for e in entries { h.combine(e.key); h.combine(e.seq) }
    }

    /// Canonical bytes: count (u8), then per entry key (32) ‖ seq (u64 BE), keys ascending.
    public func encode(into w: inout ByteWriter) {
        w.u8(UInt8(entries.count))
        for e in entries { w.raw(e.key.bytes); w.u64(e.seq) }
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 1 + entries.count * 40)
        encode(into: &w)
        return w.bytes
    }

    /// Decodes and enforces canonical form: at most `maxEntries`, keys strictly ascending, counters > 0.
    public static func decode(from r: inout ByteReader, maxEntries: Int) throws(RecordError) -> VectorClock {
        let n = Int(try r.u8("clock entry count"))
        guard n <= maxEntries else {
            throw RecordError(.clockTooLarge, "clock has \(n) entries; at most \(maxEntries) allowed (clocks name only the writers of the object)")
        }
        var clock = VectorClock()
        var previous: PublicKey?
        for i in 0..<n {
            guard let key = PublicKey(bytes: try r.raw(32, "clock key \(i)")) else {
                throw RecordError(.malformed, "clock key \(i) has the wrong length")
            }
            let seq = try r.u64("clock counter \(i)")
            guard seq > 0 else { throw RecordError(.malformed, "clock counter \(i) is zero (zero entries are omitted)") }
            guard seq <= Limits.maxSeq else { throw RecordError(.malformed, "clock counter \(i) is above the maximum \(Limits.maxSeq)") }
            if let p = previous, !(p < key) {
                throw RecordError(.malformed, "clock keys are not in strictly ascending order at entry \(i)")
            }
            previous = key
            clock.entries.append((key, seq))
        }
        return clock
    }
}
