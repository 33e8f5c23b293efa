import Testing
import MentorCore
@testable import MentorCrypto

@Suite struct ReconHashTests {
    static func id(_ i: Int) -> [UInt8] { BLAKE2b.hash(Array("id \(i)".utf8)) }

    @Test func theTreeIsAFunctionOfTheSetNotOfTheOrderIDsArrivedIn() {
        let ids = (0..<500).map(Self.id)
        let a = MemoryReconTree(ids)
        let b = MemoryReconTree(ids.reversed())
        #expect(a.node(depth: 0, prefix: 0) == b.node(depth: 0, prefix: 0))
        #expect(a.node(depth: 0, prefix: 0)?.count == 500)
        #expect(a.ids(depth: 0, prefix: 0) == ids.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func oneIDMoreOrLessChangesTheRootAndOnlyItsPath() {
        let ids = (0..<300).map(Self.id)
        var t = MemoryReconTree(ids)
        let before = t.node(depth: 0, prefix: 0)
        let extra = Self.id(9999)
        t.insert(extra)
        #expect(t.node(depth: 0, prefix: 0) != before)
        #expect(t.contains(extra))
        let other = (0..<16).map { UInt8($0) }.first { $0 != extra[0] >> 4 }!
        let untouched = ReconTree.child(depth: 0, prefix: 0, nibble: other)
        #expect(t.node(depth: 1, prefix: untouched) == MemoryReconTree(ids).node(depth: 1, prefix: untouched))
        t.remove(extra)
        #expect(t.node(depth: 0, prefix: 0) == before)
    }

    @Test func prefixesAndRangesFollowTheTopSixteenBits() {
        let id: [UInt8] = [0xab, 0xcd] + [UInt8](repeating: 7, count: 30)
        #expect(ReconTree.prefix(of: id, depth: 0) == 0)
        #expect(ReconTree.prefix(of: id, depth: 1) == 0xa000)
        #expect(ReconTree.prefix(of: id, depth: 3) == 0xabc0)
        #expect(ReconTree.prefix(of: id, depth: 4) == 0xabcd)
        #expect(ReconTree.child(depth: 1, prefix: 0xa000, nibble: 0xb) == 0xab00)
        let r = ReconTree.idRange(depth: 2, prefix: 0xab00)
        #expect(r.low.prefix(2) == [0xab, 0x00] && r.high.prefix(2) == [0xab, 0xff])
    }

    @Test func theSaltIsTheSameForBothSidesAndKeysEveryFingerprint() {
        let a = [UInt8](repeating: 1, count: 16), b = [UInt8](repeating: 2, count: 16)
        #expect(ReconHash.sessionSalt(a, b) == ReconHash.sessionSalt(b, a))
        let h = Self.id(1)
        #expect(ReconHash.fingerprint(h, salt: ReconHash.sessionSalt(a, b)) != ReconHash.fingerprint(h, salt: ReconHash.sessionSalt(a, a)))
    }
}
