import Foundation
import Testing
import MentorAPI
@testable import MentorCLI

/// `block`, `unblock`, `blocked` and `profile set --contact`: what they parse and send.
@Suite struct BlockCommandTests {
    @Test func blockAndUnblockTakeAnIDAndBlockedNothing() throws {
        #expect(try cliParsed(["block", cliBen], as: MentormateCLI.Block.self).0.id == cliBen)
        #expect(try cliParsed(["unblock", "zg69v7"], as: MentormateCLI.Unblock.self).0.id == "zg69v7")
        let (_, json, _) = try cliParsed(["blocked", "--json"], as: MentormateCLI.Blocked.self)
        #expect(json)
        #expect(cliUsageError(["block"]) != nil)
        #expect(cliUsageError(["block", "mm1qq"])?.message.contains("too short") == true)
        #expect(cliUsageError(["blocked", cliBen]) != nil)
    }

    @Test func contactIsSentAloneOrClearedAndRefusedOver200Bytes() throws {
        #expect(try cliParsed(["profile", "set", "--contact", "+1 555 0100"], as: MentormateCLI.Profile.Set.self).0.params
                == ["contact": "+1 555 0100"])
        #expect(try cliParsed(["profile", "set", "--contact", ""], as: MentormateCLI.Profile.Set.self).0.params == ["contact": ""])
        let long = cliUsageError(["profile", "set", "--contact", String(repeating: "x", count: 201)])
        #expect(long?.message.contains("at most 200") == true)
    }

    @Test func blockedListsIDNameAndSince() {
        let json: JSON = ["blocked": [["id": .string(cliBen), "name": "Ben", "since": 1_767_225_600_000]]]
        let text = ClientFormat.blocked(json, in: TimeZone(identifier: "UTC") ?? .current)
        #expect(text.contains("ID") && text.contains("NAME") && text.contains("SINCE") && text.contains("Ben") && text.contains("2026-01-01"))
        #expect(ClientFormat.blocked(["blocked": []], in: .current) == "You block nobody.")
    }
}
