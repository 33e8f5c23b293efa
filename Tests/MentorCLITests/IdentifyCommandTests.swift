import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `identify`: what it parses, refuses and sends, and how it prints.
@Suite struct IdentifyCommandTests {
    @Test func traitsAreParsedAndSent() throws {
        let (cmd, json, _) = try cliParsed(["identify", "--luster", "metallic", "--streak", "black", "--hardness", "6", "--json"],
                                           as: MentormateCLI.Identify.self)
        #expect(json)
        #expect(cmd.request == IdentifyRequest(luster: "metallic", hardness: 6, streak: "black"))
        let (all, _, _) = try cliParsed(["identify", "--color", "dark", "--luster", "Vitreous", "--cleavage", "perfect", "--hardness", "5.5"],
                                        as: MentormateCLI.Identify.self)
        #expect(all.request == IdentifyRequest(color: "dark", luster: "vitreous", cleavage: "perfect", hardness: 5.5))
    }

    @Test func badValuesAreUsageErrors() {
        #expect(cliUsageError(["identify"])?.message.contains("at least one trait") == true)
        #expect(cliUsageError(["identify", "--hardness", "11"])?.message.contains("number from 1 to 10") == true)
        #expect(cliUsageError(["identify", "--hardness", "hard"])?.message.contains("number from 1 to 10") == true)
        #expect(cliUsageError(["identify", "--luster", "shiny"])?.message.contains("metallic") == true)
        #expect(cliUsageError(["identify", "--cleavage", "great"])?.message.contains("perfect") == true)
        #expect(cliUsageError(["identify", "--hardness", "6", "extra"]) != nil)
    }

    @Test func matchesPrintWithScoreFactsAndReasons() {
        let json: JSON = ["matches": [["name": "hematite", "kind": "mineral", "score": 87,
                                       "reasons": ["hardness 6 is within 5.5–6.5", "streak: black is near red-brown (both dark), half credit"],
                                       "colors": ["steel-grey", "black"], "luster": ["metallic"], "streak": "red-brown",
                                       "hardness": "5.5–6.5", "cleavage": "none", "specific_gravity": "5.26",
                                       "crystal_system": "trigonal", "note": "Red-brown streak."]]]
        let text = ClientFormat.identify(json)
        #expect(text.hasPrefix("1. hematite (mineral) — 87/100"))
        #expect(text.contains("streak    red-brown"))
        #expect(text.contains("   · streak: black is near red-brown (both dark), half credit"))
        #expect(ClientFormat.identify(["matches": []]) == "No entry of the catalogue matches.")
    }
}
