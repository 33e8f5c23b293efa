import Testing
import MentorCrypto

@Suite struct BLAKE2bTests {
    typealias T = CryptoTestSupport

    @Test func knownVectorsMatch() {
        // RFC 7693 appendix A.
        #expect(T.hex(BLAKE2b.hash(Array("abc".utf8), outputLength: 64))
                == "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923")
        #expect(T.hex(BLAKE2b.hash([]))
                == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
        // blake2b-kat.txt, first keyed vector: key 00..3f, empty input.
        #expect(T.hex(BLAKE2b.hash([], key: (0..<64).map(UInt8.init), outputLength: 64))
                == "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568")
    }

    @Test func incrementalHashEqualsOneShot() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let key = [UInt8](repeating: 0x5a, count: 32)
        for (key, length) in [(nil, 32), (key, 32), (nil, 64), (key, 16)] as [([UInt8]?, Int)] {
            var hasher = BLAKE2b.Hasher(key: key, outputLength: length)
            var offset = 0
            for size in [0, 1, 127, 128, 129, 300, 0] {
                hasher.update(Array(data[offset..<offset + size]))
                offset += size
            }
            hasher.update(Array(data[offset...]))
            #expect(hasher.finalize() == BLAKE2b.hash(data, key: key, outputLength: length))
        }
    }

    @Test func emptyHasherGivesHashOfEmptyInput() {
        let hasher = BLAKE2b.Hasher()
        #expect(T.hex(hasher.finalize()) == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
    }

    @Test func keyAndOutputLengthChangeTheHash() {
        let data = Array("row".utf8)
        let plain = BLAKE2b.hash(data)
        let keyed = BLAKE2b.hash(data, key: [UInt8](repeating: 1, count: 32))
        let otherKey = BLAKE2b.hash(data, key: [UInt8](repeating: 2, count: 32))
        #expect(plain != keyed && keyed != otherKey)
        #expect(BLAKE2b.hash(data, outputLength: 64).count == 64)
        // The output length is a parameter of BLAKE2b, not a truncation.
        #expect(Array(BLAKE2b.hash(data, outputLength: 64).prefix(32)) != plain)
    }
}
