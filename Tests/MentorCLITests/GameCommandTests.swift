import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `games`, `game show` and `people`: what they parse, refuse and send, and how they print.
@Suite struct GameCommandTests {
    @Test func gamesFiltersAreParsedAndSent() throws {
        let (cmd, json, _) = try cliParsed(["games", "--players", "4", "--time", "45", "--search", "trains", "--json"], as: MentormateCLI.Games.self)
        #expect(json)
        #expect(cmd.request == GamesRequest(search: "trains", players: 4, time: 45))
        let (none, _, _) = try cliParsed(["games"], as: MentormateCLI.Games.self)
        #expect(none.request == GamesRequest())
        let (show, _, _) = try cliParsed(["game", "show", "ticket to ride"], as: MentormateCLI.Game.Show.self)
        #expect(show.name == "ticket to ride")
        let (people, _, _) = try cliParsed(["people", "--role", "Tutor", "--course", "CS 490", "--search", "ana", "--limit", "5"],
                                           as: MentormateCLI.People.self)
        #expect(people.request == PeopleRequest(role: "tutor", search: "ana", course: "CS 490", limit: 5))
    }

    @Test func badValuesAreUsageErrors() {
        #expect(cliUsageError(["games", "--players", "0"])?.message.contains("--players") == true)
        #expect(cliUsageError(["games", "--players", "four"])?.message.contains("--players") == true)
        #expect(cliUsageError(["games", "--time", "1441"])?.message.contains("--time") == true)
        #expect(cliUsageError(["games", "--search", " "])?.message == "--search needs a word")
        #expect(cliUsageError(["games", "catan"])?.message.contains("takes no arguments") == true)
        #expect(cliUsageError(["game", "show"])?.message.contains("needs NAME") == true)
        let unquoted = cliUsageError(["game", "show", "ticket", "to", "ride"])
        #expect(unquoted?.hint?.contains("quote a name of several words") == true)
        #expect(cliUsageError(["game", "show", ""])?.message == "the game's name is empty")
        #expect(cliUsageError(["people", "--role", "teacher"])?.message.contains("student") == true)
        #expect(cliUsageError(["people", "--limit", "201"])?.message.contains("--limit") == true)
        #expect(cliUsageError(["people", "--course", ""])?.message == "--course needs a course")
    }

    static let catan: JSON = ["name": "Catan", "year": 1995, "players_min": 3, "players_max": 4, "time_min": 60, "time_max": 120,
                              "min_age": 10, "description": "Settlers trade and build."]
    static let pandemic: JSON = ["name": "Pandemic", "year": 2008, "players_min": 2, "players_max": 4, "time_min": 45, "time_max": 45,
                                 "min_age": 8, "description": "Cooperative."]

    @Test func gamesPrintAsATableAndOneAsABlock() {
        let text = ClientFormat.games(["games": [Self.catan, Self.pandemic], "count": 2])
        #expect(text == """
            NAME      YEAR  PLAYERS  MINUTES  AGE
            Catan     1995      3–4   60–120  10+
            Pandemic  2008      2–4       45   8+
            2 games. `mentormate game show NAME` for one.
            """)
        #expect(ClientFormat.games(["games": [], "count": 0]) == "No game of the catalogue matches.")
        let one = ClientFormat.game(Self.catan)
        #expect(one.hasPrefix("Catan\n  year     1995\n  players  3–4\n  time     60–120 minutes\n  age      10 and over\n"))
        #expect(one.contains("  about    Settlers trade and build.") && one.contains("  source   BoardGameGeek"))
        #expect(ClientFormat.game(Self.pandemic).contains("time     45 minutes"))
        let withMeetup: JSON = ["name": "Catan", "meetups": [["id": "0123456789ab", "start": 1_800_000_000_000, "title": "Settlers",
                                                              "left": 2, "seats": 4]]]
        #expect(ClientFormat.game(withMeetup).contains("Open meetups:\n  0123456789ab  2027-01-15 08:00  Settlers  2 of 4 seats left"))
        // Text from the daemon is shown, never obeyed.
        #expect(!ClientFormat.game(["name": "A\u{1B}[2J", "description": "x"]).contains("\u{1B}"))
    }

    @Test func peoplePrintAsATableWithAMoreLine() {
        let utc = TimeZone(identifier: "UTC")!
        let json: JSON = ["people": [["id": .string(cliAna), "name": "Ana", "role": "student", "courses": ["CS 490", "MATH 101"],
                                      "updated_at": 1_764_400_000_000],
                                     ["id": .string(cliBen), "name": .null, "role": "tutor", "courses": [], "updated_at": 1_764_300_000_000]],
                          "count": 2, "more": true]
        let text = ClientFormat.people(json, in: utc)
        #expect(text.hasPrefix("ID            NAME  ROLE     UPDATED           COURSES\n\(cliAna.prefix(12))  Ana   student  2025-11-29 07:06  CS 490, MATH 101\n"))
        #expect(text.contains("\(cliBen.prefix(12))        tutor    2025-11-28 03:20"))
        #expect(text.hasSuffix("More people match: narrow the filters, or raise --limit (at most 200)."))
        #expect(!ClientFormat.people(["people": [], "count": 0, "more": false], in: utc).contains("More"))
        #expect(ClientFormat.people(["people": [], "count": 0, "more": false], in: utc).hasPrefix("Nobody matches"))
    }

    @Test func helpOfTheGameGroupSaysWhatItIs() throws {
        guard case .print(let text) = try MentormateCLI.parse(["help", "game"]) else { Issue.record("not help"); return }
        #expect(text.hasPrefix("One board game of the catalogue (`mentormate games` lists them).\n\nUSAGE: mentormate game show NAME"))
    }

    @Test func gameShowErrorsHintAtTheCatalogueNotAtIDs() {
        let ambiguous = ClientError.daemon(RPCError(.ambiguous, "\"ticket\" starts 2 games: Ticket to Ride, Ticket to Ride: Europe; give more of the name",
                                                    data: ["names": ["Ticket to Ride", "Ticket to Ride: Europe"]]), method: "game.show")
        #expect(ambiguous.hint?.contains("mentormate game show \"ticket to ride\"") == true)
        let unknown = ClientError.daemon(RPCError(.notFound, "no game \"x\" in the catalogue"), method: "game.show")
        #expect(unknown.hint == "`mentormate games` lists the catalogue; `mentormate games --search WORD` searches it")
        // Other methods keep their hints.
        #expect(ClientError.daemon(RPCError(.notFound, "no account"), method: "like").hint?.contains("mentormate feed") == true)
        #expect(ClientError.daemon(RPCError(.ambiguous, "x"), method: "like").hint == "give more characters of the ID")
    }
}
