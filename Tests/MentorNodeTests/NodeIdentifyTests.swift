import Testing
import MentorAPI
@testable import MentorNode

/// `identify` (docs/API.md): the catalogue's closest entries, no account needed, every word checked.
@Suite struct NodeIdentifyTests {
    @Test func identifyAnswersWithoutAnAccount() throws {
        let t = try TestNode()
        let r = try t.call(1001, "identify", ["luster": "metallic", "streak": "black", "hardness": 6])
        let matches = r["matches"]?.arrayValue ?? []
        #expect(matches.count == 5)
        let names = matches.compactMap { $0["name"]?.stringValue }
        for n in ["pyrite", "magnetite", "hematite"] { #expect(names.contains(n), "\(names)") }
        #expect(matches.first?["score"]?.intValue == 100)
        #expect(matches.first?["reasons"]?.arrayValue?.count == 3)
        #expect(matches.first?["specific_gravity"]?.stringValue != nil)
        let three = try t.call(1001, "identify", ["hardness": .int(1), "limit": 3])
        #expect(three["matches"]?.arrayValue?.count == 3)
        // Graphite (1–2), molybdenite (1–1.5) and talc (1) all score 100: ties by name.
        let threeNames = (three["matches"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        #expect(threeNames == ["graphite", "molybdenite", "talc"])
    }

    @Test func badTraitsAreRefusedNamingTheAcceptedValues() throws {
        let t = try TestNode()
        #expect(t.error(1001, "identify", [:])?.message == "identify: give at least one trait: color, luster, cleavage, hardness or streak")
        #expect(t.error(1001, "identify", ["luster": "shiny"])?.message.contains("use one of: metallic, non-metallic") == true)
        #expect(t.error(1001, "identify", ["color": "mauve"])?.message.contains("use light, dark or one of:") == true)
        #expect(t.error(1001, "identify", ["cleavage": "great"])?.message.contains("none, poor, good or perfect") == true)
        #expect(t.error(1001, "identify", ["streak": "dark"])?.code == -32602)
        #expect(t.error(1001, "identify", ["hardness": 11])?.message.contains("from 1 to 10") == true)
        #expect(t.error(1001, "identify", ["hardness": "six"])?.message == "identify: parameter \"hardness\" must be a number")
        #expect(t.error(1001, "identify", ["hardness": 6, "limit": 0])?.message == "identify: limit must be from 1 to 20")
    }
}
