import Foundation
import Testing
import MentorCore
@testable import MentorCrypto

/// The worked reconciliation vector of docs/PROTOCOL.md §13.3 (a fenced block with the info
/// string `mm-recon`, `key value` lines): from two hello salts and two record IDs, the session
/// salt, the leaf and root hashes, their fingerprints and the IDs' short IDs — what a second
/// implementation checks its hashing against. `MM_PRINT_SYNC_VECTORS=1` prints the block.
@Suite struct ReconVectorTests {
    /// 16 hex digits, zero-padded (as the u64 travels, big-endian).
    static func hex64(_ v: UInt64) -> String { Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) }) }

    static func computed() -> [(String, String)] {
        let saltA = Array(UInt8(0x00)...UInt8(0x0f)), saltB = Array(UInt8(0x10)...UInt8(0x1f))
        let id1 = [0xab, 0xcd] + [UInt8](repeating: 0x01, count: 30)
        let id2 = [0xab, 0xcd] + [UInt8](repeating: 0x02, count: 30)
        let salt = ReconHash.sessionSalt(saltA, saltB)
        let tree = MemoryReconTree([id2, id1])
        let leaf = tree.node(depth: 4, prefix: 0xabcd)!, root = tree.node(depth: 0, prefix: 0)!
        let h = ReconHash.hashing(mine: saltB, theirs: saltA)
        return [
            ("salt-a", Hex.encode(saltA)), ("salt-b", Hex.encode(saltB)),
            ("id-1", Hex.encode(id1)), ("id-2", Hex.encode(id2)),
            ("session-salt", Hex.encode(salt)),
            ("leaf-abcd-hash", Hex.encode(leaf.hash)),
            ("leaf-abcd-fingerprint", hex64(h.fingerprint(leaf.hash))),
            ("root-hash", Hex.encode(root.hash)),
            ("root-fingerprint", hex64(h.fingerprint(root.hash))),
            ("short-id-1", hex64(h.shortID(id1))),
            ("short-id-2", hex64(h.shortID(id2))),
            ("recon-root", Hex.encode(SyncMessage.recon([ReconItem(depth: 0, prefix: 0, .fingerprint(count: 2, fingerprint: h.fingerprint(root.hash)))]).encoded)),
        ]
    }

    @Test func theDocumentedWorkedVectorMatches() throws {
        let values = Self.computed()
        if ProcessInfo.processInfo.environment["MM_PRINT_SYNC_VECTORS"] == "1" {
            print("```mm-recon\n" + values.map { "\($0.0) \($0.1)" }.joined(separator: "\n") + "\n```")
        }
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        guard let start = text.range(of: "```mm-recon\n"), let end = text.range(of: "```", range: start.upperBound..<text.endIndex) else {
            Issue.record("no mm-recon block in docs/PROTOCOL.md")
            return
        }
        var documented: [String: String] = [:]
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { documented[parts[0]] = parts[1] }
        }
        #expect(documented.count == values.count)
        for (key, value) in values { #expect(documented[key] == value, "\(key): documented \(documented[key] ?? "nothing"), computed \(value)") }
    }
}
