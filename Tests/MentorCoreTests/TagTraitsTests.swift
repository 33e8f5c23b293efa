import Testing
@testable import MentorCore

/// `identify --post`: the tag vocabulary (TagTraits.swift, API.md `identify`).
@Suite struct TagTraitsTests {
    @Test func everyTraitIsReadFromItsTags() {
        let t = TagTraits.read(["pyrite", "metallic", "streak-black", "hardness-6", "cleavage-none", "brass-yellow", "quarry"])
        #expect(t.luster == "metallic" && t.streak == "black" && t.hardness == "6" && t.cleavage == "none" && t.colour == "brass-yellow")
        #expect(t.read == ["metallic: luster metallic", "streak-black: streak black", "hardness-6: hardness 6",
                           "cleavage-none: cleavage none", "brass-yellow: color brass-yellow"])
        #expect(t.ignored.isEmpty, "a mineral's name and other words are not the vocabulary's")
        let traits = t.traits
        #expect(traits.hardness == 6 && traits.streak == "black" && traits.cleavage == Catalogue.Cleavage.none)
        // The best match of those traits is pyrite, as the golden identify case.
        #expect(Catalogue.standard.identify(traits, limit: 1).first?.entry.name == "pyrite")
    }

    @Test func theOtherSpellingsOfTheVocabulary() {
        #expect(TagTraits.read(["hardness-5.5"]).hardness == "5.5")
        #expect(TagTraits.read(["hardness-5-5"]).hardness == "5.5")
        #expect(TagTraits.read(["hardness-5,5"]).hardness == "5.5")
        #expect(TagTraits.read(["mohs-3"]).hardness == "3")
        #expect(TagTraits.read(["no-cleavage"]).cleavage == "none")
        #expect(TagTraits.read(["cleavage-perfect"]).cleavage == "perfect")
        #expect(TagTraits.read(["luster-vitreous"]).luster == "vitreous")
        #expect(TagTraits.read(["lustre-pearly"]).luster == "pearly")
        #expect(TagTraits.read(["earthy"]).luster == "earthy")
        #expect(TagTraits.read(["non-metallic"]).luster == "non-metallic")
        #expect(TagTraits.read(["dark"]).colour == "dark")
        #expect(TagTraits.read(["colour-green"]).colour == "green")
        #expect(TagTraits.read(["color-steel-grey"]).colour == "steel-grey")
        #expect(TagTraits.read(["streak-red-brown"]).streak == "red-brown")
        #expect(TagTraits.read(["gray"]).colour == "gray", "the catalogue's other spelling")
    }

    @Test func theFirstTagOfATraitCountsAndWrongValuesAreReportedNotRead() {
        let t = TagTraits.read(["black", "green", "hardness-12", "hardness-7", "streak-sparkly", "cleavage-great", "luster-shiny"])
        #expect(t.colour == "black" && t.hardness == "7" && t.streak == nil && t.cleavage == nil && t.luster == nil)
        #expect(t.read == ["black: color black", "hardness-7: hardness 7"])
        #expect(t.ignored.count == 5)
        #expect(t.ignored[0] == "green: a second color (black was read first)")
        #expect(t.ignored[1].hasPrefix("hardness-12: hardness \"12\" is not a Mohs hardness"))
        #expect(t.ignored[2].hasPrefix("streak-sparkly: unknown streak colour"))
        #expect(t.ignored[3].hasPrefix("cleavage-great: unknown cleavage"))
        #expect(t.ignored[4].hasPrefix("luster-shiny: unknown luster"))
        #expect(TagTraits.read(["quartz", "field-trip", "hardness-"]).read.isEmpty)
        #expect(TagTraits.read([]).traits.isEmpty)
    }
}
