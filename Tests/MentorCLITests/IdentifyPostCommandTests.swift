import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `identify --post ID`: parsed, checked, sent, and the tags read printed first.
@Suite struct IdentifyPostCommandTests {
    @Test func postAloneOrWithTraitsIsSent() throws {
        let (cmd, _, _) = try cliParsed(["identify", "--post", "3fa9c0"], as: MentormateCLI.Identify.self)
        #expect(cmd.request == IdentifyRequest(post: "3fa9c0"))
        let (both, _, _) = try cliParsed(["identify", "--post", "3fa9c0", "--hardness", "2"], as: MentormateCLI.Identify.self)
        #expect(both.request == IdentifyRequest(hardness: 2, post: "3fa9c0"))
        #expect(cliUsageError(["identify", "--post", "zz"])?.message.contains("is not a post ID") == true)
        #expect(cliUsageError(["identify", "--post", "abc"])?.message.contains("is not a post ID") == true)
        #expect(cliUsageError(["identify", "--post"]) != nil)
    }

    @Test func theTagsReadAndNotUsedArePrintedBeforeTheEntries() {
        let json: JSON = ["matches": [["name": "pyrite", "kind": "mineral", "score": 100, "reasons": ["hardness 6 is within 6–6.5"],
                                       "colors": ["brass-yellow"], "luster": ["metallic"], "streak": "black", "hardness": "6–6.5",
                                       "cleavage": "none", "specific_gravity": "5.0", "crystal_system": "cubic", "note": "Fool's gold."]],
                          "post": "3fa9c0d1e2f3", "tags_read": ["hardness-6: hardness 6", "metallic: luster metallic"],
                          "tags_ignored": ["hardness-2: a second hardness (6 was read first)"]]
        let lines = ClientFormat.identify(json).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "Traits from post 3fa9c0d1e2f3's tags: hardness-6: hardness 6; metallic: luster metallic")
        #expect(lines[1] == "Not used: hardness-2: a second hardness (6 was read first)")
        #expect(lines[2] == "")
        #expect(lines[3] == "1. pyrite (mineral) — 100/100")
        // Without a post the output starts with the entries, as before.
        #expect(ClientFormat.identify(["matches": []]) == "No entry of the catalogue matches.")
    }
}
