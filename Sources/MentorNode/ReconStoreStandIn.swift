import MentorCore
import MentorCrypto
import MentorStore

// STAND-IN, deleted when the "recon-store" branch (the SQLite tree, migration 8) is merged: the
// same names over a scan of every stored record (O(n) a call; records held back are not in it).
extension Replica {
    private func reconEntries() throws(StoreError) -> [(id: [UInt8], author: PublicKey, seq: UInt64, bytes: [UInt8])] {
        var out: [(id: [UInt8], author: PublicKey, seq: UInt64, bytes: [UInt8])] = []
        for author in try knownAuthors() {
            for bytes in try records(of: author, seqs: 1...Limits.maxSeq) {
                guard let p = try? RecordPosition.peek(bytes) else { continue }
                out.append((VerifiedRecord.id(of: bytes), author, p.seq, bytes))
            }
        }
        return out.sorted { ($0.author, $0.seq) < ($1.author, $1.seq) || (($0.author, $0.seq) == ($1.author, $1.seq) && $0.id.lexicographicallyPrecedes($1.id)) }
    }

    public func withReconView<T>(_ body: (any ReconView) throws -> T) throws -> T {
        try body(MemoryReconTree(try reconEntries().map(\.id)))
    }

    public func reconRecords(ids: [[UInt8]]) throws(StoreError) -> [[UInt8]] {
        let wanted = Set(ids)
        return try reconEntries().filter { wanted.contains($0.id) }.map(\.bytes)
    }

    public func reconRecords(depth: Int, prefix: UInt16, after: ReconCursor?, limit: Int) throws(StoreError)
        -> (records: [[UInt8]], next: ReconCursor?) {
        let under = try reconEntries().filter { ReconTree.prefix(of: $0.id, depth: depth) == prefix }
        var rest = under[...]
        if let after {
            rest = rest.drop { e in
                (e.author, e.seq) < (after.author, after.seq)
                    || ((e.author, e.seq) == (after.author, after.seq) && !after.id.lexicographicallyPrecedes(e.id))
            }
        }
        let page = Array(rest.prefix(limit))
        let next = rest.count > limit ? page.last.map { ReconCursor(author: $0.author, seq: $0.seq, id: $0.id) } : nil
        return (page.map(\.bytes), next)
    }

    public func reconSetSize() throws(StoreError) -> Int { try reconEntries().count }
}
