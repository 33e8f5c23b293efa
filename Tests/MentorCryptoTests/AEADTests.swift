import Testing
import MentorCrypto

@Suite struct XChaCha20Poly1305Tests {
    typealias T = CryptoTestSupport
    typealias AEAD = XChaCha20Poly1305

    @Test func draftXChaChaVectorSealsToPublishedBytes() throws {
        // draft-irtf-cfrg-xchacha-03 appendix A.3.1.
        let key = T.bytes(hex: "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        let nonce = T.bytes(hex: "404142434445464748494a4b4c4d4e4f5051525354555657")
        let associatedData = T.bytes(hex: "50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let expected = T.bytes(hex: """
            bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb
            731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452
            2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9
            21f9664c97637da9768812f615c68b13b52e
            c0875924c1c7987947deafd8780acf49
            """)
        let box = try AEAD.seal(plaintext, key: key, associatedData: associatedData, nonce: nonce)
        #expect(box == nonce + expected)
        #expect(try AEAD.open(box, key: key, associatedData: associatedData) == plaintext)
    }

    @Test func sealedBoxOpensToThePlaintext() throws {
        let key = SecureRandom.bytes(AEAD.keyLength)
        for plaintext in [[], [0], Array("a secret note".utf8), [UInt8](repeating: 7, count: 5000)] as [[UInt8]] {
            let box = try AEAD.seal(plaintext, key: key, associatedData: [1, 2, 3])
            #expect(box.count == plaintext.count + AEAD.nonceLength + AEAD.tagLength)
            #expect(try AEAD.open(box, key: key, associatedData: [1, 2, 3]) == plaintext)
        }
    }

    @Test func randomNoncesDifferAndGivenNonceIsThePrefix() throws {
        let key = SecureRandom.bytes(AEAD.keyLength)
        let first = try AEAD.seal([1, 2, 3], key: key)
        let second = try AEAD.seal([1, 2, 3], key: key)
        #expect(first.prefix(AEAD.nonceLength) != second.prefix(AEAD.nonceLength))
        #expect(first != second)

        let nonce = [UInt8](repeating: 9, count: AEAD.nonceLength)
        let fixed = try AEAD.seal([1, 2, 3], key: key, nonce: nonce)
        #expect(Array(fixed.prefix(AEAD.nonceLength)) == nonce)
        #expect(try AEAD.seal([1, 2, 3], key: key, nonce: nonce) == fixed)
    }

    @Test func anyAlteredByteIsRefused() throws {
        let key = SecureRandom.bytes(AEAD.keyLength)
        let box = try AEAD.seal(Array("pay 10 to bob".utf8), key: key, associatedData: [7])
        // Every byte of nonce, ciphertext and tag.
        for index in box.indices {
            var altered = box
            altered[index] ^= 0x01
            expectDecryptionFailure { try AEAD.open(altered, key: key, associatedData: [7]) }
        }
    }

    @Test func wrongKeyOrAssociatedDataIsRefused() throws {
        let key = SecureRandom.bytes(AEAD.keyLength)
        let box = try AEAD.seal([1, 2, 3], key: key, associatedData: [7])
        expectDecryptionFailure { try AEAD.open(box, key: SecureRandom.bytes(AEAD.keyLength), associatedData: [7]) }
        expectDecryptionFailure { try AEAD.open(box, key: key, associatedData: [8]) }
        expectDecryptionFailure { try AEAD.open(box, key: key) }
        #expect(try AEAD.open(box, key: key, associatedData: [7]) == [1, 2, 3])
    }

    @Test func truncatedBoxIsRefused() throws {
        let key = SecureRandom.bytes(AEAD.keyLength)
        let box = try AEAD.seal([1, 2, 3], key: key)
        for length in [0, 1, AEAD.nonceLength, AEAD.nonceLength + AEAD.tagLength - 1, box.count - 1] {
            expectDecryptionFailure { try AEAD.open(Array(box.prefix(length)), key: key) }
        }
        expectDecryptionFailure { try AEAD.open(Array(box.dropFirst()), key: key) }
    }

    @Test func keyAndNonceOfWrongLengthAreRefused() {
        do {
            _ = try AEAD.seal([1], key: [UInt8](repeating: 0, count: 31))
            Issue.record("31-byte key accepted")
        } catch { #expect(error.code == .invalidKeyLength) }
        do {
            _ = try AEAD.open([UInt8](repeating: 0, count: 64), key: [UInt8](repeating: 0, count: 33))
            Issue.record("33-byte key accepted")
        } catch { #expect(error.code == .invalidKeyLength) }
        do {
            _ = try AEAD.seal([1], key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12))
            Issue.record("12-byte nonce accepted")
        } catch { #expect(error.code == .invalidNonceLength) }
    }

    private func expectDecryptionFailure(sourceLocation: SourceLocation = #_sourceLocation,
                                         _ body: () throws -> [UInt8]) {
        let error = #expect(throws: CryptoError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == .decryptionFailed, sourceLocation: sourceLocation)
    }
}
