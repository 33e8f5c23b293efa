import Foundation

/// Helpers shared by the MentorCrypto tests (namespaced so they cannot clash with other files
/// in this test target).
enum CryptoTestSupport {
    /// Bytes from hex; whitespace is ignored so long vectors can be split over lines.
    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace }.utf8)
        precondition(digits.count % 2 == 0, "odd number of hex digits")
        return stride(from: 0, to: digits.count, by: 2).map { i in
            UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16)!
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// A fresh empty directory for one test; `body` runs with its path and the directory is
    /// removed afterwards, whatever happens.
    static func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("mentorcrypto-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: url) }
        try body(url.path)
    }

    /// The permission bits of the file at `path`.
    static func permissions(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as! NSNumber).intValue & 0o777
    }

    static func setPermissions(_ mode: Int, of path: String) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    static func contents(of path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes raw bytes with mode 0600, for hand-made (often broken) key files.
    static func writeOwnerOnly(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try setPermissions(0o600, of: path)
    }
}
