import Testing
@testable import MentorCore

/// The mineral catalogue (CatalogueData.swift) and `identify`'s matcher.
@Suite struct CatalogueTests {
    @Test func everyRowParsesCompleteAndInRange() throws {
        let parsed = try Catalogue.parse(Catalogue.table)
        #expect(parsed == Catalogue.standard, "the standard catalogue is the parsed table")
        #expect(parsed.entries.count >= 60)
        #expect(parsed.entries.count == Catalogue.table.split(separator: "\n").count, "no row dropped")
        #expect(Set(parsed.entries.map(\.name)).count == parsed.entries.count)
        for e in parsed.entries {
            #expect(!e.colours.isEmpty && !e.lusters.isEmpty && !e.note.isEmpty, "\(e.name)")
            #expect(e.hardness.lowerBound >= 1 && e.hardness.upperBound <= 10, "\(e.name)")
            #expect(e.specificGravity.lowerBound > 0, "\(e.name)")
            #expect(Catalogue.crystalSystems.contains(e.crystalSystem), "\(e.name)")
            #expect(e.kind == .mineral || e.crystalSystem == "none", "\(e.name)")
        }
        #expect(parsed.entries.contains { $0.kind == .rock })
    }

    /// The well-known values, checked against the references named in CatalogueData.swift.
    @Test func wellKnownMineralsHaveTheirTextbookValues() throws {
        let c = Catalogue.standard
        func e(_ n: String) throws -> Catalogue.Entry { try #require(c.entry(named: n)) }
        let mohs: [(String, Double)] = [("talc", 1), ("gypsum", 2), ("calcite", 3), ("fluorite", 4), ("apatite", 5),
                                        ("orthoclase", 6), ("quartz", 7), ("topaz", 8), ("corundum", 9), ("diamond", 10)]
        for (name, h) in mohs { #expect(try e(name).hardness.contains(h), "Mohs scale: \(name) \(h)") }
        let quartz = try e("quartz")
        #expect(quartz.lusters == [.vitreous] && quartz.cleavage == .none && quartz.streak == "white")
        let pyrite = try e("pyrite")
        #expect(pyrite.hardness == 6...6.5 && pyrite.lusters == [.metallic] && pyrite.streak == "greenish-black")
        let magnetite = try e("magnetite")
        #expect(magnetite.hardness == 5.5...6.5 && magnetite.streak == "black" && magnetite.lusters.contains(.metallic))
        let hematite = try e("hematite")
        #expect(hematite.hardness == 5.5...6.5 && hematite.streak == "red-brown")
        let galena = try e("galena")
        #expect(galena.hardness.contains(2.5) && galena.cleavage == .perfect && galena.streak == "lead-grey")
        #expect(galena.specificGravity.lowerBound > 7)
    }

    @Test func malformedRowsAreRefusedNamingTheLine() {
        func error(_ text: String) -> String {
            do { _ = try Catalogue.parse(text); return "" } catch { return error.description }
        }
        let good = "quartz\tmineral\twhite\tvitreous\twhite\t7-7\tnone\t2.65-2.65\ttrigonal\tNote."
        #expect(error(good) == "")
        #expect(error(good + "\n" + good).contains("line 2: quartz appears twice"))
        #expect(error(good.replacingOccurrences(of: "7-7", with: "7-6")).contains("hardness"))
        #expect(error(good.replacingOccurrences(of: "7-7", with: "7-11")).contains("hardness"))
        #expect(error(good.replacingOccurrences(of: "\tvitreous", with: "\tshiny")).contains("unknown luster \"shiny\""))
        #expect(error(good.replacingOccurrences(of: "\tnone\t", with: "\tgreat\t")).contains("cleavage"))
        #expect(error(good.replacingOccurrences(of: "\twhite\tvitreous", with: "\tmauve\tvitreous")).contains("unknown colour"))
        #expect(error(good.replacingOccurrences(of: "trigonal", with: "round")).contains("crystal system"))
        #expect(error(good.replacingOccurrences(of: "\tNote.", with: "")).contains("9 fields"))
        #expect(error(good.replacingOccurrences(of: "mineral", with: "rock")).contains("a rock has no crystal system"))
    }

    // MARK: Identify

    private func top(_ t: Traits, _ n: Int = 5) -> [String] {
        Catalogue.standard.identify(t, limit: n).map(\.entry.name)
    }

    @Test func metallicBlackStreakHardnessSixFindsTheIronMinerals() throws {
        let t = try Traits.parse(luster: "metallic", hardness: "6", streak: "black")
        let found = Catalogue.standard.identify(t)
        let names = found.map(\.entry.name)
        #expect(found.count == 5)
        for n in ["pyrite", "magnetite", "hematite"] { #expect(names.contains(n), "\(names)") }
        let magnetite = try #require(found.first { $0.entry.name == "magnetite" })
        #expect(magnetite.score == 100 && magnetite.reasons.count == 3)
        // Hematite's red-brown streak is near black (both dark): half the streak's credit.
        let hematite = try #require(found.first { $0.entry.name == "hematite" })
        #expect(hematite.score == 87, "(30 + 25 + 20 × ½) / 75")
        #expect(hematite.reasons.contains { $0.contains("near red-brown") })
        #expect(found.map(\.score) == found.map(\.score).sorted(by: >))
    }

    @Test func moreGoldenCases() throws {
        // Colourless, vitreous, perfect cleavage, hardness 3, white streak: calcite and barite
        // both score 100 (only acid or heft tells them apart), ties by name.
        let calcite = Catalogue.standard.identify(try Traits.parse(colour: "colourless", luster: "vitreous", cleavage: "perfect", hardness: "3", streak: "white"), limit: 3)
        #expect(calcite.prefix(2).map(\.entry.name) == ["barite", "calcite"])
        #expect(calcite.prefix(2).map(\.score) == [100, 100])
        #expect(calcite.last?.score ?? 100 < 100)
        // Hardness 7, no cleavage, glassy, light: quartz (or a quartz rock) leads.
        let q = top(try Traits.parse(colour: "light", luster: "non-metallic", cleavage: "none", hardness: "7"))
        #expect(q.contains("quartz"), "\(q)")
        // Metallic lead-grey with perfect cleavage, soft: galena and stibnite.
        let g = top(try Traits.parse(colour: "lead-grey", luster: "metallic", cleavage: "perfect", hardness: "2.5", streak: "grey"), 2)
        #expect(Set(g) == ["galena", "stibnite"], "\(g)")
        // Hardness 1, pearly: talc.
        #expect(top(try Traits.parse(luster: "pearly", hardness: "1"), 1) == ["talc"])
        // Red streak, adamantine: cinnabar.
        #expect(top(try Traits.parse(luster: "adamantine", streak: "red"), 1) == ["cinnabar"])
        // Brass-yellow, metallic, hardness 3.5: chalcopyrite, not pyrite (too hard).
        let cp = top(try Traits.parse(colour: "brass-yellow", luster: "metallic", hardness: "3.5", streak: "greenish-black"), 1)
        #expect(cp == ["chalcopyrite"], "\(cp)")
        let py = top(try Traits.parse(colour: "brass-yellow", luster: "metallic", hardness: "6", streak: "greenish-black"), 1)
        #expect(py == ["pyrite"], "\(py)")
    }

    @Test func scoringRules() {
        #expect(Catalogue.hardnessCredit(6, 5.5...6.5).0 == 1)
        #expect(Catalogue.hardnessCredit(7, 5.5...6.5).0 == 0.75)
        #expect(Catalogue.hardnessCredit(3, 4...5).0 == 0.5)
        #expect(Catalogue.hardnessCredit(9, 5...6).0 == 0)
        #expect(Catalogue.lusterCredit(.metallic, [.submetallic]).0 == 0.5)
        #expect(Catalogue.lusterCredit(.nonMetallic, [.metallic]).0 == 0)
        #expect(Catalogue.lusterCredit(.specific(.vitreous), [.resinous]).0 == 0.5)
        #expect(Catalogue.lusterCredit(.specific(.vitreous), [.metallic]).0 == 0)
        #expect(Catalogue.colourCredit("black", ["greenish-black"]).0 == 1)
        #expect(Catalogue.colourCredit("black", ["red-brown"]).0 == 0.5)
        #expect(Catalogue.colourCredit("black", ["white"]).0 == 0)
        #expect(Catalogue.cleavageCredit(.good, .perfect).0 == 0.5)
        #expect(Catalogue.cleavageCredit(.none, .perfect).0 == 0)
        #expect(Catalogue.bodyColourCredit(.dark, ["white", "black"]).0 == 1)
        #expect(Catalogue.bodyColourCredit(.light, ["black"]).0 == 0)
        // No trait: every score 0, ordered by name.
        let none = Catalogue.standard.identify(Traits(), limit: 2)
        #expect(none.map(\.score) == [0, 0])
    }

    @Test func badTraitValuesNameTheAcceptedOnes() {
        func error(_ f: () throws(Traits.InvalidValue) -> Traits) -> String {
            do { _ = try f(); return "" } catch { return error.message }
        }
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(colour: "mauve") }.contains("use light, dark or one of: black"))
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(luster: "shiny") }.contains("metallic, non-metallic, submetallic, vitreous"))
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(cleavage: "great") }.contains("none, poor, good or perfect"))
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(hardness: "11") }.contains("from 1 to 10"))
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(hardness: "hard") }.contains("from 1 to 10"))
        #expect(error { () throws(Traits.InvalidValue) in try Traits.parse(streak: "light") }.contains("unknown streak colour"))
        let ok = (try? Traits.parse(colour: "Gray", luster: "earthy", cleavage: "Perfect", hardness: " 5.5 ", streak: "colorless"))
        #expect(ok == Traits(colour: .named("grey"), luster: .specific(.dull), cleavage: .perfect, hardness: 5.5, streak: "colourless"))
    }
}
