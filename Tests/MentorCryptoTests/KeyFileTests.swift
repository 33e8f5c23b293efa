import Foundation
import Testing
import MentorCrypto

/// Serialized because one test changes the process-wide umask.
@Suite(.serialized) struct KeyFileTests {
    typealias T = CryptoTestSupport
    let passphrase = Array("hunter2 but longer".utf8)

    @Test func plainKeyFileRoundTrips() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            let pair = SigningKeyPair.generate()
            try KeyFile.write(pair, to: path)

            let bytes = try T.contents(of: path)
            #expect(bytes.count == 71)
            #expect(Array(bytes.prefix(7)) == Array("MMKEY".utf8) + [0x01, 0x00])
            #expect(Array(bytes[7..<39]) == pair.seed)
            #expect(Array(bytes[39..<71]) == pair.publicKey.bytes)

            let read = try KeyFile.read(from: path)
            #expect(read.publicKey == pair.publicKey)
            #expect(read.seed == pair.seed)
            #expect(try KeyFile.isProtected(at: path) == false)
            #expect(try KeyFile.publicKey(at: path) == pair.publicKey)
        }
    }

    @Test func protectedKeyFileRoundTripsAndKeepsTheSeedOutOfTheFile() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            let pair = SigningKeyPair.generate()
            try KeyFile.write(pair, to: path, passphrase: passphrase, parameters: .testing)

            let bytes = try T.contents(of: path)
            #expect(bytes.count == 143)
            #expect(Array(bytes.prefix(7)) == Array("MMKEY".utf8) + [0x01, 0x01])
            #expect(Array(bytes[7..<39]) == pair.publicKey.bytes)
            #expect(Array(bytes[55..<63]) == [0, 0, 0, 0, 0, 0, 0, 1])            // opsLimit 1
            #expect(Array(bytes[63..<71]) == [0, 0, 0, 0, 0, 0x80, 0, 0])         // memLimit 8 MiB
            #expect(!T.hex(bytes).contains(T.hex(pair.seed)))

            let read = try KeyFile.read(from: path, passphrase: passphrase)
            #expect(read.publicKey == pair.publicKey)
            #expect(read.seed == pair.seed)
            #expect(try KeyFile.isProtected(at: path))
        }
    }

    @Test func publicKeyOfProtectedFileIsReadableWithoutThePassphrase() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            let pair = SigningKeyPair.generate()
            try KeyFile.write(pair, to: path, passphrase: passphrase, parameters: .testing)
            #expect(try KeyFile.publicKey(at: path) == pair.publicKey)
        }
    }

    @Test func writtenFileHasMode0600EvenWithPermissiveUmask() throws {
        try T.withTemporaryDirectory { directory throws in
            let plainPath = directory + "/plain.key"
            let protectedPath = directory + "/protected.key"
            let previous = umask(0)
            defer { umask(previous) }
            try KeyFile.write(SigningKeyPair.generate(), to: plainPath)
            try KeyFile.write(SigningKeyPair.generate(), to: protectedPath, passphrase: passphrase, parameters: .testing)
            #expect(try T.permissions(of: plainPath) == 0o600)
            #expect(try T.permissions(of: protectedPath) == 0o600)
        }
    }

    @Test func writeReplacesAnExistingFileAndLeavesNoTemporaryFiles() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try T.writeOwnerOnly(Array("old contents".utf8), to: path)
            try T.setPermissions(0o644, of: path)
            let pair = SigningKeyPair.generate()
            try KeyFile.write(pair, to: path)
            #expect(try T.permissions(of: path) == 0o600)
            #expect(try KeyFile.read(from: path).publicKey == pair.publicKey)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["identity.key"])
        }
    }

    @Test func groupOrWorldReadableFileIsRefusedWithTheFix() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try KeyFile.write(SigningKeyPair.generate(), to: path)
            for mode in [0o644, 0o640, 0o604, 0o660, 0o606] {
                try T.setPermissions(mode, of: path)
                let error = expectError(.insecureKeyFileMode) { _ = try KeyFile.read(from: path) }
                #expect(error?.message.contains("chmod 600 \(path)") == true)
                #expect(error?.message.contains("0" + String(mode, radix: 8)) == true)
                expectError(.insecureKeyFileMode) { _ = try KeyFile.publicKey(at: path) }
            }
            try T.setPermissions(0o400, of: path)
            #expect(throws: Never.self) { try KeyFile.read(from: path) }
        }
    }

    @Test func wrongPassphraseIsRefused() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try KeyFile.write(SigningKeyPair.generate(), to: path, passphrase: passphrase, parameters: .testing)
            expectError(.wrongPassphrase) { _ = try KeyFile.read(from: path, passphrase: Array("hunter3".utf8)) }
            expectError(.wrongPassphrase) { _ = try KeyFile.read(from: path, passphrase: passphrase.dropLast() + []) }
        }
    }

    @Test func swappedPublicKeyInProtectedFileDoesNotOpen() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try KeyFile.write(SigningKeyPair.generate(), to: path, passphrase: passphrase, parameters: .testing)
            var bytes = try T.contents(of: path)
            bytes.replaceSubrange(7..<39, with: SigningKeyPair.generate().publicKey.bytes)
            try T.writeOwnerOnly(bytes, to: path)
            expectError(.wrongPassphrase) { _ = try KeyFile.read(from: path, passphrase: passphrase) }
        }
    }

    @Test func protectedFileWithoutPassphraseAsksForIt() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try KeyFile.write(SigningKeyPair.generate(), to: path, passphrase: passphrase, parameters: .testing)
            expectError(.passphraseRequired) { _ = try KeyFile.read(from: path) }
        }
    }

    @Test func passphraseForPlainFileIsAnError() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            try KeyFile.write(SigningKeyPair.generate(), to: path)
            expectError(.passphraseNotExpected) { _ = try KeyFile.read(from: path, passphrase: passphrase) }
        }
    }

    @Test func missingFileNamesThePath() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/absent.key"
            let error = expectError(.keyFileMissing) { _ = try KeyFile.read(from: path) }
            #expect(error?.message.contains(path) == true)
            expectError(.keyFileMissing) { _ = try KeyFile.publicKey(at: path) }
            expectError(.keyFileMissing) { _ = try KeyFile.isProtected(at: path) }
        }
    }

    @Test func writeIntoMissingDirectoryFailsWithoutCreatingAnything() throws {
        try T.withTemporaryDirectory { directory throws in
            expectError(.keyFileIO) { try KeyFile.write(SigningKeyPair.generate(), to: directory + "/no/such/dir/k.key") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func writeRefusesEmptyPassphraseAndOutOfBoundParameters() throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            let pair = SigningKeyPair.generate()
            expectError(.invalidParameters) { try KeyFile.write(pair, to: path, passphrase: [], parameters: .testing) }
            expectError(.invalidParameters) {
                try KeyFile.write(pair, to: path, passphrase: passphrase, parameters: .init(opsLimit: 21, memLimit: 8 << 20))
            }
            expectError(.invalidParameters) {
                try KeyFile.write(pair, to: path, passphrase: passphrase, parameters: .init(opsLimit: 1, memLimit: (1 << 30) + 1))
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func directoryInsteadOfFileIsRefused() throws {
        try T.withTemporaryDirectory { directory throws in
            expectError(.malformedKeyFile) { _ = try KeyFile.read(from: directory) }
        }
    }

    /// A way to break a valid key file's bytes.
    struct Corruption: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let protected: Bool
        let apply: @Sendable ([UInt8]) -> [UInt8]
    }

    static let corruptions: [Corruption] = [
        Corruption(testDescription: "empty file", protected: false) { _ in [] },
        Corruption(testDescription: "garbage text", protected: false) { _ in Array("not a key file at all\n".utf8) },
        Corruption(testDescription: "garbage of plain length", protected: false) { _ in [UInt8](repeating: 0xa5, count: 71) },
        Corruption(testDescription: "bad magic", protected: false) { var b = $0; b[0] = UInt8(ascii: "X"); return b },
        Corruption(testDescription: "unknown version", protected: false) { var b = $0; b[5] = 2; return b },
        Corruption(testDescription: "unknown kind", protected: false) { var b = $0; b[6] = 2; return b },
        Corruption(testDescription: "header only", protected: false) { Array($0.prefix(7)) },
        Corruption(testDescription: "truncated plain", protected: false) { Array($0.dropLast()) },
        Corruption(testDescription: "plain with trailing byte", protected: false) { $0 + [0] },
        Corruption(testDescription: "plain with foreign public key", protected: false) { var b = $0; b[40] ^= 1; return b },
        Corruption(testDescription: "plain marked protected", protected: false) { var b = $0; b[6] = 1; return b },
        Corruption(testDescription: "truncated protected", protected: true) { Array($0.dropLast()) },
        Corruption(testDescription: "protected with trailing byte", protected: true) { $0 + [0] },
        Corruption(testDescription: "protected marked plain", protected: true) { var b = $0; b[6] = 0; return b },
        Corruption(testDescription: "opsLimit 21", protected: true) { setUInt64(21, at: 55, in: $0) },
        Corruption(testDescription: "opsLimit 0", protected: true) { setUInt64(0, at: 55, in: $0) },
        Corruption(testDescription: "opsLimit 2^64-1", protected: true) { setUInt64(.max, at: 55, in: $0) },
        Corruption(testDescription: "memLimit 1 GiB + 1", protected: true) { setUInt64((1 << 30) + 1, at: 63, in: $0) },
        Corruption(testDescription: "memLimit 1 TiB", protected: true) { setUInt64(1 << 40, at: 63, in: $0) },
        Corruption(testDescription: "memLimit 1 KiB", protected: true) { setUInt64(1 << 10, at: 63, in: $0) },
        Corruption(testDescription: "oversized file", protected: true) { $0 + [UInt8](repeating: 0, count: 10_000) },
    ]

    static func setUInt64(_ value: UInt64, at offset: Int, in bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (56 - 8 * i)) }
        return bytes
    }

    @Test(arguments: corruptions)
    func corruptedFileIsMalformed(_ corruption: Corruption) throws {
        try T.withTemporaryDirectory { directory throws in
            let path = directory + "/identity.key"
            if corruption.protected {
                try KeyFile.write(SigningKeyPair.generate(), to: path, passphrase: passphrase, parameters: .testing)
            } else {
                try KeyFile.write(SigningKeyPair.generate(), to: path)
            }
            try T.writeOwnerOnly(corruption.apply(try T.contents(of: path)), to: path)
            let error = expectError(.malformedKeyFile) {
                _ = try KeyFile.read(from: path, passphrase: corruption.protected ? passphrase : nil)
            }
            #expect(error?.message.contains(path) == true)
            expectError(.malformedKeyFile) { _ = try KeyFile.publicKey(at: path) }
            expectError(.malformedKeyFile) { _ = try KeyFile.isProtected(at: path) }
        }
    }

    /// Expects `body` to throw a `CryptoError` with `code`, and returns it.
    @discardableResult
    private func expectError(_ code: CryptoError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                             _ body: () throws -> Void) -> CryptoError? {
        let error = #expect(throws: CryptoError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == code, "\(error.map(String.init(describing:)) ?? "no error")", sourceLocation: sourceLocation)
        return error
    }
}
