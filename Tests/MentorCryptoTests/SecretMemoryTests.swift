import Foundation
import Testing
@testable import MentorCrypto

/// Key memory is left out of core dumps (issue 11 item 7): a watchdog abort must not write the
/// node's or the accounts' secret keys to disk.
@Suite struct SecretMemoryTests {
    /// The VmFlags of the mapping in /proc/self/smaps that holds `address`.
    static func mappingFlags(of address: UInt) throws -> [Substring] {
        // /proc files report size 0; read them to the end through a FileHandle.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let start = UInt(line[..<dash], radix: 16), let end = UInt(line[line.index(after: dash)..<space], radix: 16) {
                inside = (start..<end).contains(address)
                continue
            }
            if inside, line.hasPrefix("VmFlags:") { return line.dropFirst(8).split(separator: " ") }
        }
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no mapping holds \(String(address, radix: 16))"])
    }

    @Test func aSigningKeysSecretLivesInMemoryThatCoreDumpsLeaveOut() throws {
        let pair = SigningKeyPair.generate()
        let address = pair.secretKey.withUnsafePointer { UInt(bitPattern: $0) }
        let flags = try Self.mappingFlags(of: address)
        #expect(flags.contains("dd"), "the secret key's mapping has VmFlags \(flags.joined(separator: " ")); it needs dd (MADV_DONTDUMP)")
        // And it still signs.
        let signature = pair.signature(for: Array("hello".utf8))
        #expect(pair.publicKey.isValidSignature(signature, for: Array("hello".utf8)))
    }
}
