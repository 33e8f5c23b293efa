import Foundation
import Testing
@testable import MentorCrypto

@Suite struct NodeIdentityTests {
    func tempPath() throws -> (dir: String, file: String) {
        let dir = NSTemporaryDirectory() + "mm-node-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return (dir, dir + "/" + NodeIdentity.fileName)
    }

    @Test func firstStartCreatesA0600KeyAndLaterStartsLoadTheSameKey() throws {
        let (dir, file) = try tempPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try NodeIdentity.loadOrCreate(at: file)
        #expect(first.created)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let second = try NodeIdentity.loadOrCreate(at: file)
        #expect(!second.created)
        #expect(second.keys.publicKey == first.keys.publicKey)
    }

    @Test func aLooseOrDamagedKeyIsRefusedNotReplaced() throws {
        let (dir, file) = try tempPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = try NodeIdentity.loadOrCreate(at: file).keys
        chmod(file, 0o644)
        #expect { try NodeIdentity.loadOrCreate(at: file) } throws: {
            ($0 as? CryptoError)?.code == .insecureKeyFileMode && "\($0)".contains("chmod 600")
        }
        chmod(file, 0o600)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        try Data(bytes.prefix(20)).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        #expect { try NodeIdentity.loadOrCreate(at: file) } throws: { ($0 as? CryptoError)?.code == .malformedKeyFile }
        // Nothing replaced the damaged file with a fresh identity.
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).count == 20)
        _ = original
    }
}
