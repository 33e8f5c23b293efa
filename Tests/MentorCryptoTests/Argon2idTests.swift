import Testing
import MentorCrypto

@Suite struct Argon2idTests {
    let salt = [UInt8](repeating: 0x42, count: Argon2id.saltLength)

    @Test func sameInputsGiveTheSameKey() throws {
        let one = try Argon2id.deriveKey(passphrase: Array("correct horse".utf8), salt: salt, parameters: .testing)
        let two = try Argon2id.deriveKey(passphrase: Array("correct horse".utf8), salt: salt, parameters: .testing)
        #expect(one.count == 32)
        #expect(one == two)
    }

    @Test func passphraseSaltParametersAndLengthEachChangeTheKey() throws {
        let passphrase = Array("correct horse".utf8)
        let base = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: .testing)
        var otherSalt = salt
        otherSalt[0] ^= 1
        var slower = Argon2id.Parameters.testing
        slower.opsLimit += 1
        #expect(try Argon2id.deriveKey(passphrase: passphrase + [0], salt: salt, parameters: .testing) != base)
        #expect(try Argon2id.deriveKey(passphrase: passphrase, salt: otherSalt, parameters: .testing) != base)
        #expect(try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: slower) != base)
        #expect(try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: .testing, length: 64).count == 64)
        #expect(try Argon2id.deriveKey(passphrase: [], salt: salt, parameters: .testing) != base)
    }

    @Test func presetParametersAreTheDocumentedLevels() {
        #expect(Argon2id.Parameters.testing == .init(opsLimit: 1, memLimit: 8 << 20))
        #expect(Argon2id.Parameters.interactive == .init(opsLimit: 2, memLimit: 64 << 20))
        #expect(Argon2id.Parameters.moderate == .init(opsLimit: 3, memLimit: 256 << 20))
    }

    @Test func badSaltLengthOrParametersAreRefused() {
        let cases: [([UInt8], Argon2id.Parameters, Int)] = [
            ([UInt8](repeating: 0, count: 15), .testing, 32),
            (salt, .init(opsLimit: 0, memLimit: 8 << 20), 32),
            (salt, .init(opsLimit: 1, memLimit: 1024), 32),
            (salt, .testing, 8),
        ]
        for (salt, parameters, length) in cases {
            do {
                _ = try Argon2id.deriveKey(passphrase: [1], salt: salt, parameters: parameters, length: length)
                Issue.record("accepted salt \(salt.count) bytes, \(parameters), length \(length)")
            } catch {
                #expect(error.code == .invalidParameters)
            }
        }
    }
}
