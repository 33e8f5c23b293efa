import Foundation
import Testing
@testable import MentorCore

/// The sync-message vectors of docs/PROTOCOL.md §13.3: fenced blocks with the info string
/// `mm-sync`, each a `name` line and a `hex` line. Every documented vector must decode to the
/// message this file names for it and encode back to the same bytes, and every message here must
/// be documented. `MM_PRINT_SYNC_VECTORS=1` prints the blocks to paste after a format change.
@Suite struct SyncVectorTests {
    static let author = PublicKey(bytes: [UInt8](repeating: 0x11, count: 32))!
    static let other = PublicKey(bytes: [UInt8](repeating: 0x22, count: 32))!
    static let hash = [UInt8](repeating: 0xAB, count: 32)

    /// The documented messages, by name.
    static let messages: [(name: String, message: SyncMessage)] = [
        ("hello", .hello(salt: Array(0x00...0x0F), held: 1_000)),
        ("records", .records([[0x4D, 0x4D, 0x52], [0x01]])),
        ("ack", .ack(count: 2)),
        ("want", .want(author: author, from: 7)),
        ("wantBlob", .wantBlob(hash: hash)),
        ("blob-part", .blob(hash: hash, total: 10, offset: 4, bytes: [0xFF, 0xD8])),
        ("blob-not-held", .blob(hash: hash, total: 0, offset: 0, bytes: [])),
        ("here", .here([author, other])),
        ("recon-fingerprint", .recon([ReconItem(depth: 0, prefix: 0, .fingerprint(count: 3, fingerprint: 0x0123_4567_89AB_CDEF))])),
        ("recon-split-ids-need", .recon([
            ReconItem(depth: 1, prefix: 0xA000, .split([.init(nibble: 0, count: 20, fingerprint: 1), .init(nibble: 15, count: 1, fingerprint: 0xFFFF_FFFF_FFFF_FFFF)])),
            ReconItem(depth: 4, prefix: 0xABCD, .ids([2, 0x8000_0000_0000_0000])),
            ReconItem(depth: 2, prefix: 0xA100, .ids([])),
            ReconItem(depth: 4, prefix: 0xABCD, .need([5])),
        ])),
        ("recon-empty", .recon([])),
        ("caughtUp", .caughtUp),
        ("ihave", .ihave([[UInt8](repeating: 0x01, count: 32), [UInt8](repeating: 0x02, count: 32)])),
        ("prune", .prune),
        ("graft", .graft([[UInt8](repeating: 0x03, count: 32)])),
        ("link", .link(Hex.decode(linkOffer)!)),
        ("link-withdraw", .link([])),
    ]
    /// The offer of PROTOCOL.md §13.8's `mm-link` vector (checked there by `LinkOfferTests`).
    static let linkOffer = "037b4444444444444444444444444444444444444444444444444444444444444444056c61622d33000102030405060708090a0b0c0d0e0f0000018bcfee8fc0000070808320fe123c7314680a96a5d89f19eeb883e0dece9def9f28eed26a212a6f8e04"

    static func documented() throws -> [String: String] {
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        var out: [String: String] = [:]
        var name: String?, inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "```mm-sync" { inBlock = true; name = nil; continue }
            guard inBlock else { continue }
            if line == "```" { inBlock = false; continue }
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            if parts[0] == "name" { name = parts[1] }
            if parts[0] == "hex", let name { out[name] = parts[1] }
        }
        return out
    }

    @Test func printWhenAsked() {
        guard ProcessInfo.processInfo.environment["MM_PRINT_SYNC_VECTORS"] == "1" else { return }
        for (name, message) in Self.messages {
            print("```mm-sync\nname \(name)\nhex \(Hex.encode(message.encoded))\n```")
        }
    }

    @Test func everyDocumentedVectorDecodesToItsMessageAndBack() throws {
        let documented = try Self.documented()
        #expect(Set(documented.keys) == Set(Self.messages.map(\.name)), "documented: \(documented.keys.sorted())")
        for (name, message) in Self.messages {
            guard let hex = documented[name], let bytes = Hex.decode(hex) else {
                Issue.record("vector \(name) is missing from docs/PROTOCOL.md or not hex")
                continue
            }
            #expect(try SyncMessage.decode(bytes) == message, "vector \(name) decodes to something else")
            #expect(message.encoded == bytes, "vector \(name): the encoder gives \(Hex.encode(message.encoded))")
        }
    }
}
