import Foundation
import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

/// `games`, `game.show` and `people` through the node's API (docs/API.md "Games", "People").
@Suite struct NodeGamesPeopleTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002, cy: UInt32 = 1003, dee: UInt32 = 1004, eve: UInt32 = 1005

    private func names(_ r: JSON, _ key: String = "games") -> [String] {
        (r[key]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
    }

    @Test func gamesListAndFilterWithoutAnAccount() throws {
        let t = try TestNode()
        let all = try t.call(ana, "games")
        #expect(all["count"]?.intValue == Int64(GameCatalogue.standard.games.count))
        #expect(names(all).count >= 80 && names(all).first == "6 nimmt!")
        let catan = try #require(all["games"]?.arrayValue?.first { $0["name"] == "Catan" })
        #expect(catan == ["name": "Catan", "year": 1995, "players_min": 3, "players_max": 4, "time_min": 60, "time_max": 120,
                          "min_age": 10, "description": catan["description"] ?? .null, "meetups": .null], "meetups only in game.show")
        let forTwoQuick = try t.call(ana, "games", ["players": 2, "time": 20])
        for g in forTwoQuick["games"]?.arrayValue ?? [] {
            #expect((g["players_min"]?.intValue ?? 99) <= 2 && (g["players_max"]?.intValue ?? 0) >= 2 && (g["time_max"]?.intValue ?? 99) <= 20)
        }
        #expect(names(forTwoQuick).contains("Hive") && !names(forTwoQuick).contains("Catan"))
        #expect(names(try t.call(ana, "games", ["search": "euphrates"])) == ["Tigris & Euphrates"])
        #expect(try t.call(ana, "games", ["search": "no such game at all"]) == ["games": [], "count": 0])
    }

    @Test func badGameFiltersAreRefused() throws {
        let t = try TestNode()
        #expect(t.error(ana, "games", ["players": 0])?.message == "games: players must be from 1 to 100")
        #expect(t.error(ana, "games", ["time": 2000])?.message == "games: time must be from 1 to 1440 minutes")
        #expect(t.error(ana, "games", ["time": "long"])?.code == -32602)
        #expect(t.error(ana, "games", ["genre": "euro"])?.code == -32602)
    }

    @Test func gameShowMatchesNamesAndListsNearOnes() throws {
        let t = try TestNode()
        let azul = try t.call(ana, "game.show", ["name": "AZUL"])
        #expect(azul["name"] == "Azul" && azul["year"] == 2017 && azul["players_max"] == 4)
        #expect(try t.call(ana, "game.show", ["name": "brass"])["name"] == "Brass: Birmingham", "a unique prefix")
        let ambiguous = try #require(t.error(ana, "game.show", ["name": "ticket"]))
        #expect(ambiguous.code == RPCError.Code.ambiguous.rawValue)
        #expect(ambiguous.message == "\"ticket\" starts 2 games: Ticket to Ride, Ticket to Ride: Europe; give more of the name")
        #expect(ambiguous.data == ["names": ["Ticket to Ride", "Ticket to Ride: Europe"]])
        let unknown = try #require(t.error(ana, "game.show", ["name": "Wingspam"]))
        #expect(unknown.code == RPCError.Code.notFound.rawValue)
        #expect(unknown.message == "no game \"Wingspam\" in the catalogue; did you mean: Wingspan?")
        #expect(unknown.data == ["names": ["Wingspan"]])
        let nothingNear = try #require(t.error(ana, "game.show", ["name": "qqqqqqqqqq"]))
        #expect(nothingNear.message.contains("`mentormate games --search WORD`"))
        #expect(t.error(ana, "game.show", ["name": " "])?.code == -32602)
        #expect(t.error(ana, "game.show", [:])?.code == -32602)
        #expect(t.error(ana, "game.show", ["name": .string(String(repeating: "catan", count: 41))])?.message
                == "game.show: name has 205 characters, at most 200")
    }

    @Test func peopleListsCardsNewestFirstLeavingOutSelfBlockedAndPaused() throws {
        let t = try TestNode()
        for (uid, name, role) in [(ana, "Ana Lima", "student"), (ben, "Ben", "tutor"), (cy, "Cy", "tutor"), (dee, "Dee", "student"), (eve, "Eve", "tutor")] {
            try t.call(uid, "account.signup", ["email": .string("\(name.prefix(3))@uni.edu"), "name": .string(name), "role": .string(role)])
        }
        func id(_ uid: UInt32) throws -> String { try #require(try t.call(uid, "account.whoami")["id"]?.stringValue) }
        try t.call(ben, "profile.set", ["courses": ["CS 490", "MATH 101"]])
        try t.call(cy, "profile.set", ["courses": ["cs 490"]])

        // Without an account: everyone who has not paused, newest card first (Cy changed last).
        let everyone = try t.call(2000, "people")
        #expect(names(everyone, "people") == ["Cy", "Ben", "Eve", "Dee", "Ana Lima"])
        #expect(everyone["count"] == 5 && everyone["more"] == false)
        let benRow = try #require(everyone["people"]?.arrayValue?.first { $0["name"] == "Ben" })
        #expect(benRow["id"]?.stringValue == (try id(ben)) && benRow["role"] == "tutor" && benRow["courses"] == ["CS 490", "MATH 101"])
        #expect(benRow["updated_at"]?.intValue != nil)

        // The caller is left out, and whom it blocks; those who paused for everyone.
        try t.call(ana, "block", ["id": .string(try id(eve))])
        try t.call(dee, "settings.set", ["key": "paused", "value": "true"])
        #expect(names(try t.call(ana, "people"), "people") == ["Cy", "Ben"])
        #expect(names(try t.call(ben, "people"), "people") == ["Cy", "Eve", "Ana Lima"])

        // Filters.
        #expect(names(try t.call(ben, "people", ["role": "tutor"]), "people") == ["Cy", "Eve"])
        #expect(names(try t.call(2000, "people", ["role": "STUDENT"]), "people") == ["Ana Lima"])
        #expect(names(try t.call(2000, "people", ["course": "CS 490"]), "people") == ["Cy", "Ben"], "a course without regard to case")
        #expect(names(try t.call(2000, "people", ["course": "PHYS 1"]), "people") == [])
        #expect(names(try t.call(2000, "people", ["search": "lima"]), "people") == ["Ana Lima"])
        #expect(names(try t.call(2000, "people", ["search": "math"]), "people") == ["Ben"], "search reads the courses too")
        let one = try t.call(2000, "people", ["limit": 1])
        #expect(names(one, "people") == ["Cy"] && one["count"] == 1 && one["more"] == true)

        // A pause ended: back in the list.
        try t.call(dee, "settings.set", ["key": "paused", "value": "false"])
        #expect(names(try t.call(2000, "people"), "people").first == "Dee")
    }

    @Test func badPeopleFiltersAreRefused() throws {
        let t = try TestNode()
        #expect(t.error(ana, "people", ["role": "teacher"])?.message == "people: role must be student or tutor, not \"teacher\"")
        #expect(t.error(ana, "people", ["limit": 0])?.message == "people: limit must be from 1 to 200")
        #expect(t.error(ana, "people", ["limit": 201])?.code == -32602)
        #expect(t.error(ana, "people", ["course": "  "])?.message == "people: course is empty")
        #expect(t.error(ana, "people", ["name": "x"])?.code == -32602)
        #expect(try t.call(ana, "people") == ["people": [], "count": 0, "more": false])
    }
}
