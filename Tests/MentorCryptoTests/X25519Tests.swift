import Testing
import MentorCrypto

@Suite struct X25519Tests {
    @Test func sharedSecretFromEd25519KeysIsTheSameOnBothSides() throws {
        let alice = SigningKeyPair.generate()
        let bob = SigningKeyPair.generate()
        let aliceSide = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: alice),
                                                publicKey: X25519.publicKey(fromEd25519: bob.publicKey))
        let bobSide = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: bob),
                                              publicKey: X25519.publicKey(fromEd25519: alice.publicKey))
        #expect(aliceSide.count == 32)
        #expect(aliceSide == bobSide)

        let carol = SigningKeyPair.generate()
        let carolSide = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: carol),
                                                publicKey: X25519.publicKey(fromEd25519: alice.publicKey))
        #expect(carolSide != aliceSide)
    }

    @Test func convertedSecretKeyMatchesConvertedPublicKey() throws {
        // X25519 public key = scalarmult_base(secret); check via a DH with a fresh key pair.
        let pair = SigningKeyPair.generate()
        let ephemeral = X25519.generateKeyPair()
        let one = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: pair), publicKey: ephemeral.publicKey)
        let other = try X25519.sharedSecret(secretKey: ephemeral.secretKey,
                                            publicKey: X25519.publicKey(fromEd25519: pair.publicKey))
        #expect(one == other)
    }

    @Test func ephemeralKeyPairsAgree() throws {
        let a = X25519.generateKeyPair()
        let b = X25519.generateKeyPair()
        #expect(a.publicKey.count == 32 && a.secretKey.count == 32)
        #expect(a.publicKey != b.publicKey)
        #expect(try X25519.sharedSecret(secretKey: a.secretKey, publicKey: b.publicKey)
                == X25519.sharedSecret(secretKey: b.secretKey, publicKey: a.publicKey))
    }

    @Test func smallOrderEd25519PublicKeyIsRefused() throws {
        // The Ed25519 identity point (y = 1) has order 1.
        let identity = try SigningPublicKey(bytes: [1] + [UInt8](repeating: 0, count: 31))
        do {
            _ = try X25519.publicKey(fromEd25519: identity)
            Issue.record("a small-order point was converted")
        } catch {
            #expect(error.code == .invalidPublicKey)
        }
    }

    @Test func lowOrderPeerKeyGivingAllZeroSecretIsRefused() {
        let mine = X25519.generateKeyPair()
        for peer in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            do {
                _ = try X25519.sharedSecret(secretKey: mine.secretKey, publicKey: peer)
                Issue.record("an all-zero shared secret was returned")
            } catch {
                #expect(error.code == .invalidPublicKey)
            }
        }
    }

    @Test func keysOfWrongLengthAreRefused() {
        let mine = X25519.generateKeyPair()
        do {
            _ = try X25519.sharedSecret(secretKey: mine.secretKey, publicKey: Array(mine.publicKey.dropLast()))
            Issue.record("a 31-byte public key was accepted")
        } catch {
            #expect(error.code == .invalidKeyLength)
        }
    }
}
