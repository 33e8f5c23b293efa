import Testing
@testable import MentorCore

@Suite struct Bech32Tests {
    @Test func bip173ValidVectorsDecode() throws {
        // From BIP-173 "Test vectors" (valid bech32 strings).
        #expect(try Bech32.decode("A12UEL5L", expectedHRP: "a") == [])
        #expect(try Bech32.decode("a12uel5l", expectedHRP: "a") == [])
        #expect(throws: Bech32.DecodeError.mixedCase) { try Bech32.decode("A12uEL5L", expectedHRP: "a") }
    }

    @Test func everySingleCharacterTypoIsCaught() throws {
        let key = PublicKey(bytes: Array(0..<32))!
        let id = Array(key.id)
        let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l")
        for i in 3..<id.count {
            for c in alphabet where c != id[i] {
                var typo = id
                typo[i] = c
                #expect(throws: (any Error).self) { try AccountID.parse(String(typo)) }
            }
        }
    }

    @Test func adjacentSwapsAreCaught() {
        let key = PublicKey(bytes: (0..<32).map { UInt8($0 * 7 % 256) })!
        let id = Array(key.id)
        for i in 3..<(id.count - 1) where id[i] != id[i + 1] {
            var typo = id
            typo.swapAt(i, i + 1)
            #expect(throws: AccountID.ParseError.self) { try AccountID.parse(String(typo)) }
        }
    }
}

@Suite struct AccountIDTests {
    let keys = (0..<5).map { i in PublicKey(bytes: (0..<32).map { UInt8(($0 * 31 + i * 97) % 256) })! }

    @Test func idsStartWithMm1AndRoundTrip() throws {
        for k in keys {
            #expect(k.id.hasPrefix("mm1"))
            #expect(k.id.count == AccountID.fullLength)
            #expect(try AccountID.parse(k.id) == .exact(k))
            #expect(try AccountID.parse(k.id.uppercased()) == .exact(k))
        }
    }

    @Test func uniquePrefixOfSixCharactersResolves() throws {
        let k = keys[2]
        let q = try AccountID.parse(String(k.id.prefix(3 + 12)))
        #expect(AccountID.resolve(q, among: keys) == .found(k))
        // Without the mm1 prefix too.
        let q2 = try AccountID.parse(String(k.id.dropFirst(3).prefix(12)))
        #expect(AccountID.resolve(q2, among: keys) == .found(k))
    }

    @Test func shortPrefixIsRefusedWithHowManyCharactersAreNeeded() {
        #expect { try AccountID.parse("mm1qpz") } throws: { e in
            (e as? AccountID.ParseError)?.description.contains("at least 6") == true
        }
    }

    @Test func ambiguousPrefixListsAllCandidates() throws {
        // Two keys sharing their first 4 bytes share a long ID prefix.
        let a = PublicKey(bytes: [1, 2, 3, 4] + [UInt8](repeating: 0, count: 28))!
        let b = PublicKey(bytes: [1, 2, 3, 4] + [UInt8](repeating: 255, count: 28))!
        let common = zip(a.id, b.id).prefix { $0 == $1 }.count
        #expect(common >= 9)
        let q = try AccountID.parse(String(a.id.prefix(common)))
        #expect(AccountID.resolve(q, among: [a, b, keys[0]]) == .ambiguous([a, b].sorted()))
    }

    @Test func unknownAndInvalidInputs() throws {
        let q = try AccountID.parse(keys[0].id)
        #expect(AccountID.resolve(q, among: keys.dropFirst()) == .notFound)
        #expect(throws: AccountID.ParseError.self) { try AccountID.parse("mm1bbbbbbbbbb") } // 'b' never appears
        #expect(throws: AccountID.ParseError.self) { try AccountID.parse(keys[0].id + "q") }
    }
}

@Suite struct VectorClockTests {
    let a = PublicKey(bytes: [UInt8](repeating: 1, count: 32))!
    let b = PublicKey(bytes: [UInt8](repeating: 2, count: 32))!

    @Test func compareCoversAllFourOrders() {
        let c1 = VectorClock([(a, 1), (b, 2)])
        #expect(c1.compare(VectorClock([(a, 1), (b, 2)])) == .equal)
        #expect(c1.compare(VectorClock([(a, 2), (b, 2)])) == .before)
        #expect(c1.compare(VectorClock([(a, 1)])) == .after)
        #expect(c1.compare(VectorClock([(a, 2), (b, 1)])) == .concurrent)
        #expect(VectorClock().compare(VectorClock()) == .equal)
    }

    @Test func mergeIsPointwiseMaximumAndDropsZeros() {
        let m = VectorClock([(a, 3), (b, 0)]).merged(with: VectorClock([(a, 1), (b, 5)]))
        #expect(m == VectorClock([(a, 3), (b, 5)]))
        #expect(VectorClock([(a, 0)]).isEmpty)
    }

    @Test func decodeRefusesUnsortedZeroAndOversizedClocks() throws {
        func bytes(_ entries: [(PublicKey, UInt64)], count: UInt8? = nil) -> [UInt8] {
            var w = ByteWriter()
            w.u8(count ?? UInt8(entries.count))
            for (k, s) in entries { w.raw(k.bytes); w.u64(s) }
            return w.bytes
        }
        var ok = ByteReader(bytes([(a, 1), (b, 2)]))
        #expect(try VectorClock.decode(from: &ok, maxEntries: 4) == VectorClock([(a, 1), (b, 2)]))
        var unsorted = ByteReader(bytes([(b, 1), (a, 2)]))
        #expect(throws: RecordError.self) { try VectorClock.decode(from: &unsorted, maxEntries: 4) }
        var zero = ByteReader(bytes([(a, 0)]))
        #expect(throws: RecordError.self) { try VectorClock.decode(from: &zero, maxEntries: 4) }
        var big = ByteReader(bytes([(a, 1), (b, 1)]))
        #expect { try VectorClock.decode(from: &big, maxEntries: 1) } throws: { ($0 as? RecordError)?.code == .clockTooLarge }
    }
}
