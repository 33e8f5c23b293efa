import Testing
@testable import MentorCore

/// The games catalogue (GameCatalogueData.swift): every row, the facts of a few well-known
/// games, the filters of `games` and the name matching of `game show`.
@Suite struct GameCatalogueTests {
    @Test func everyRowParsesCompleteAndInRange() throws {
        let parsed = try GameCatalogue.parse(GameCatalogue.table)
        #expect(parsed == GameCatalogue.standard, "the standard catalogue is the parsed table")
        #expect(GameCatalogue.loaded.error == nil)
        #expect(parsed.games.count >= 80)
        #expect(parsed.games.count == GameCatalogue.table.split(separator: "\n").count, "no row dropped")
        #expect(Set(parsed.games.map { GameCatalogue.fold($0.name) }).count == parsed.games.count, "names unique once folded")
        for g in parsed.games {
            #expect((1900...2026).contains(g.year), "\(g.name): \(g.year)")
            #expect(g.players.lowerBound >= 1 && g.players.upperBound <= 100, "\(g.name)")
            #expect(g.minutes.lowerBound >= 10 && g.minutes.upperBound <= 480, "\(g.name): \(g.minutes)")
            #expect((5...18).contains(g.minAge), "\(g.name): \(g.minAge)")
            #expect(!g.description.isEmpty && g.description.count <= 160 && g.description.hasSuffix("."), "\(g.name)")
            #expect(!g.description.contains("\t") && g.name.trimmingCharacters(in: .whitespaces) == g.name, "\(g.name)")
        }
        // Rows in the order of their names (folded), as the data file says.
        let folded = parsed.games.map { GameCatalogue.fold($0.name) }
        #expect(folded == folded.sorted())
        // A spread: games for two, party games, long ones.
        #expect(parsed.games.filter { $0.players == 2...2 }.count >= 10)
        #expect(parsed.games.contains { $0.players.upperBound >= 8 })
        #expect(parsed.games.contains { $0.minutes.upperBound >= 240 })
    }

    /// Figures checked against the sources named in GameCatalogueData.swift.
    @Test func wellKnownGamesHaveTheirBoxFigures() throws {
        func g(_ n: String) throws -> GameCatalogue.Game {
            guard case .found(let game) = GameCatalogue.standard.lookup(n) else { throw LookupFailed(name: n) }
            return game
        }
        let catan = try g("Catan")
        #expect(catan.year == 1995 && catan.players == 3...4 && catan.minutes == 60...120 && catan.minAge == 10)
        let carcassonne = try g("Carcassonne")
        #expect(carcassonne.year == 2000 && carcassonne.players == 2...5 && carcassonne.minAge == 7)
        let pandemic = try g("Pandemic")
        #expect(pandemic.year == 2008 && pandemic.players == 2...4 && pandemic.minutes == 45...45)
        let ttr = try g("Ticket to Ride")
        #expect(ttr.year == 2004 && ttr.players == 2...5 && ttr.minutes == 30...60 && ttr.minAge == 8)
        let diplomacy = try g("Diplomacy")
        #expect(diplomacy.year == 1959 && diplomacy.players == 2...7 && diplomacy.minutes == 360...360)
        let wingspan = try g("Wingspan")
        #expect(wingspan.year == 2019 && wingspan.players == 1...5 && wingspan.minutes == 40...70)
        let twilight = try g("Twilight Struggle")
        #expect(twilight.players == 2...2 && twilight.year == 2005)
        // Corrected when the rows were checked (issue 18).
        #expect(try g("Kingdom Builder").year == 2011 && g("Monopoly").year == 1933)
        #expect(try g("San Juan").minutes == 45...60 && g("Tsuro").minutes == 15...20 && g("The Mind").minutes == 15...15)
    }

    struct LookupFailed: Error { var name: String }

    @Test func malformedRowsAreRefusedNamingTheLine() {
        func error(_ text: String) -> String {
            do { _ = try GameCatalogue.parse(text); return "" } catch { return error.description }
        }
        let good = "Catan\t1995\t3-4\t60-120\t10\tSettle an island."
        #expect(error(good) == "")
        #expect(error(good + "\n" + good).contains("line 2: Catan appears twice"))
        #expect(error(good + "\n" + good.replacingOccurrences(of: "Catan", with: "CATAN!")).contains("line 2: CATAN! appears twice"),
                "names unique once folded")
        #expect(error(good.replacingOccurrences(of: "1995", with: "95")).contains("year"))
        #expect(error(good.replacingOccurrences(of: "3-4", with: "4-3")).contains("players"))
        #expect(error(good.replacingOccurrences(of: "3-4", with: "0-4")).contains("players"))
        #expect(error(good.replacingOccurrences(of: "3-4", with: "3")).contains("players"))
        #expect(error(good.replacingOccurrences(of: "60-120", with: "60-2000")).contains("playing time"))
        #expect(error(good.replacingOccurrences(of: "60-120", with: "sixty")).contains("playing time"))
        #expect(error(good.replacingOccurrences(of: "\t10\t", with: "\t2\t")).contains("minimum age"))
        #expect(error(good.replacingOccurrences(of: "\tSettle an island.", with: "\t ")).contains("no description"))
        #expect(error(good.replacingOccurrences(of: "\tSettle an island.", with: "")).contains("5 fields, 6 expected"))
        #expect(error(good.replacingOccurrences(of: "Settle an island.", with: String(repeating: "x", count: 161))).contains("at most 160"))
        #expect(error(" Catan\t1995\t3-4\t60-120\t10\tX.").contains("line 1: the name"))
    }

    @Test func filtersCombineAndTheListIsByName() {
        let c = GameCatalogue.standard
        #expect(c.filter().count == c.games.count)
        let four = c.filter(players: 4)
        #expect(!four.isEmpty && four.allSatisfy { $0.players.contains(4) })
        #expect(!four.contains { $0.name == "Patchwork" } && four.contains { $0.name == "Catan" })
        let short = c.filter(minutes: 30)
        #expect(short.allSatisfy { $0.minutes.upperBound <= 30 })
        #expect(short.contains { $0.name == "Splendor" } && !short.contains { $0.name == "Azul" }, "Azul takes up to 45")
        let both = c.filter(players: 6, minutes: 45)
        #expect(both == c.games.filter { $0.players.contains(6) && $0.minutes.upperBound <= 45 }.sorted { GameCatalogue.fold($0.name) < GameCatalogue.fold($1.name) })
        #expect(!both.isEmpty)
        // Search: name or description, case and accents not counting.
        #expect(c.filter(search: "TICKET").map(\.name) == ["Ticket to Ride", "Ticket to Ride: Europe"])
        #expect(c.filter(search: "orleans").map(\.name) == ["Orléans"])
        #expect(c.filter(search: "cooperative").count >= 5)
        #expect(c.filter(search: "zzzz").isEmpty)
        #expect(c.filter(search: "   ").count == c.games.count, "an empty search filters nothing")
        #expect(c.filter(players: 100).allSatisfy { $0.players.upperBound == 100 })
    }

    @Test func namesMatchWithoutCaseOrPunctuationByUniquePrefix() {
        let c = GameCatalogue.standard
        #expect(c.lookup("catan") == .found(c.games.first { $0.name == "Catan" }!))
        #expect(c.lookup("  CATAN ") == .found(c.games.first { $0.name == "Catan" }!))
        #expect(c.lookup("tigris and euphrates") == .found(c.games.first { $0.name == "Tigris & Euphrates" }!))
        #expect(c.lookup("sushi go") == .found(c.games.first { $0.name == "Sushi Go!" }!))
        #expect(c.lookup("orleans") == .found(c.games.first { $0.name == "Orléans" }!))
        #expect(c.lookup("wingsp") == .found(c.games.first { $0.name == "Wingspan" }!), "a unique prefix")
        // An exact name wins over the longer names it starts.
        #expect(c.lookup("Pandemic") == .found(c.games.first { $0.name == "Pandemic" }!))
        #expect(c.lookup("ticket to ride") == .found(c.games.first { $0.name == "Ticket to Ride" }!))
        #expect(c.lookup("ticket to ride europe") == .found(c.games.first { $0.name == "Ticket to Ride: Europe" }!))
        #expect(c.lookup("ticket") == .ambiguous(["Ticket to Ride", "Ticket to Ride: Europe"]))
        #expect(c.lookup("the res") == .ambiguous(["The Resistance", "The Resistance: Avalon"]))
        // Unknown: the nearest names.
        guard case .notFound(let near) = c.lookup("catann") else { Issue.record("catann found"); return }
        #expect(near.first == "Catan")
        guard case .notFound(let near2) = c.lookup("wingspam") else { Issue.record("wingspam found"); return }
        #expect(near2 == ["Wingspan"])
        guard case .notFound(let near3) = c.lookup("resistance") else { Issue.record("resistance found"); return }
        #expect(near3 == ["The Resistance", "The Resistance: Avalon"], "a name it is inside of")
        #expect(c.lookup("qqqqqqqqqq") == .notFound(near: []))
        // Every game found back by its key (what a meetup will store).
        for g in c.games { #expect(c.game(key: g.key) == g && c.lookup(g.key) == .found(g), "\(g.name)") }
        #expect(c.game(key: "Catan") == nil, "keys are folded")
        // A meetup's topic (record type 14, field 2) holds a game's name in at most 64 bytes:
        // every name and every key fits.
        for g in c.games {
            #expect(g.name.utf8.count <= Meetup.maxTopicBytes && g.key.utf8.count <= Meetup.maxTopicBytes, "\(g.name)")
        }
        #expect(c.lookup("!!!") == .notFound(near: []))
        // A long query costs no edit counting: only names it is inside of.
        #expect(c.lookup(String(repeating: "x", count: 100_000)) == .notFound(near: []))
    }

    @Test func foldingAndDistance() {
        #expect(GameCatalogue.fold("Tigris & Euphrates") == "tigris and euphrates")
        #expect(GameCatalogue.fold("  Tzolk'in:  The Mayan Calendar ") == "tzolk in the mayan calendar")
        #expect(GameCatalogue.fold("Orléans") == "orleans")
        #expect(GameCatalogue.fold("CAFÉ&co. — Ñandú 2") == "cafe and co nandu 2")
        #expect(GameCatalogue.fold("") == "" && GameCatalogue.fold("!?") == "")
        #expect(GameCatalogue.distance("catan", "catan") == 0)
        #expect(GameCatalogue.distance("catann", "catan") == 1)
        #expect(GameCatalogue.distance("", "abc") == 3)
        #expect(GameCatalogue.distance("kitten", "sitting") == 3)
    }
}
