import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

/// `meetup …` and `meetups`: what they parse, refuse, send and print.
@Suite struct MeetupCommandTests {
    static let info: JSON = ["id": "0123456789ab", "host": "mm1host", "host_name": "Ana", "title": "Catan night", "kind": "game",
                             "topic": "Catan", "start": 1_800_000_000_000, "ends": 1_800_007_200_000, "place": "Library room 2",
                             "seats": 4, "taken": 2, "left": 2, "min_age": 18, "max_age": 120, "about": "", "status": "open",
                             "you": "seat 2", "attendees": [["id": "mm1ana", "name": "Ben", "place": "seat 1", "joined": 5],
                                                            ["id": "mm1cy", "name": "Cy", "place": "waitlist 1", "joined": 6]]]

    @Test func createSendsUTCFromLocalTimeAndTheDetails() {
        let host = CLIFakeHost(CLIFakeDaemon { _, _ in Self.info })
        host.timeZone = TimeZone(identifier: "Europe/Berlin")!
        #expect(runCLI(["meetup", "create", "--title", "Catan night", "--game", "Catan", "--at", "2027-01-15 09:00",
                        "--duration", "1h30m", "--place", "Library room 2", "--seats", "4", "--adults-only"], host) == .success, "\(host.stderr)")
        let sent = host.transport.calls.last?.params ?? [:]
        // 09:00 in Berlin (UTC+1 in January) is 08:00 UTC.
        let midnight: Int64 = 1_800_000_000_000 - 1_800_000_000_000 % 86_400_000
        let expectedStart = JSON.int(midnight + 8 * 3_600_000)
        #expect(sent["start"] == expectedStart)
        let details: [JSON?] = [sent["duration"], sent["min_age"], sent["max_age"], sent["game"], sent["seats"]]
        let expectedDetails: [JSON?] = [.int(90), .int(18), .int(120), .string("Catan"), .int(4)]
        #expect(details == expectedDetails)
        #expect(host.stdout.contains("Meetup 0123456789ab created.") && host.stdout.contains("seat 1  Ben") && host.stdout.contains("waitlist 1  Cy"))
    }

    @Test func badDetailsAreUsageErrorsAndNothingIsSent() {
        let cases: [([String], String)] = [
            (["meetup", "create", "--title", "x", "--game", "Go", "--course", "CS 1", "--at", "2027-01-15 09:00", "--place", "p", "--seats", "2"], "exclude each other"),
            (["meetup", "create", "--title", "x", "--game", "Go", "--place", "p", "--seats", "2"], "needs --title, --game or --course, --at"),
            (["meetup", "create", "--title", "x", "--game", "Go", "--at", "2027-01-15 09:00", "--place", "p", "--seats", "2", "--age", "10-99"], "age range from 13"),
            (["meetup", "create", "--title", "x", "--game", "Go", "--at", "2027-01-15 09:00", "--place", "p", "--seats", "2", "--duration", "5m"], "15 minutes to 24 hours"),
            (["meetup", "create", "--title", "x", "--game", "Go", "--at", "2027-01-15 09:00", "--place", "p", "--seats", "0"], "--seats"),
            (["meetup", "edit", "0123", "--no-age-limit", "--adults-only"], "--no-age-limit excludes"),
            (["meetups", "--game", "Go", "--course", "CS 1"], "exclude each other"),
            (["meetups", "--day", "2027-1-5"], "not a time written"),
        ]
        for (argv, reason) in cases {
            #expect(cliUsageError(argv)?.message.contains(reason) == true, "\(argv): \(String(describing: cliUsageError(argv)))")
        }
        let host = CLIFakeHost(CLIFakeDaemon { _, _ in Self.info })
        #expect(runCLI(["meetup", "create", "--title", "x", "--game", "Go", "--at", "2027-02-30 09:00", "--place", "p", "--seats", "2"], host) != .success)
        #expect(host.transport.calls.isEmpty, "an impossible date sends nothing")
    }

    @Test func listingTurnsALocalDayIntoARangeAndPrintsRows() {
        let host = CLIFakeHost(CLIFakeDaemon { _, _ in ["meetups": [Self.info]] })
        host.timeZone = TimeZone(identifier: "UTC")!
        #expect(runCLI(["meetups", "--day", "2027-01-15", "--course", "CS 490", "--mine"], host) == .success, "\(host.stderr)")
        let sent = host.transport.calls.last?.params ?? [:]
        let midnight: Int64 = 1_800_000_000_000 - 1_800_000_000_000 % 86_400_000
        let range: [JSON?] = [sent["from"], sent["to"], sent["course"], sent["mine"]]
        let expectedRange: [JSON?] = [.int(midnight), .int(midnight + 86_400_000), .string("CS 490"), .bool(true)]
        #expect(range == expectedRange)
        #expect(host.stdout.contains("0123456789ab") && host.stdout.contains("2027-01-15 08:00") && host.stdout.contains("2/4"))
        let empty = CLIFakeHost(CLIFakeDaemon { _, _ in ["meetups": []] })
        #expect(runCLI(["meetups"], empty) == .success && empty.stdout.hasPrefix("No open meetups."))
    }

    @Test func commentSendsTheMeetupAndTextAndShowPrintsTheComments() {
        let comment: JSON = ["id": "aabbccddeeff", "meetup": "0123456789ab", "author": "mm1ben", "name": "Ben", "created": 5,
                             "text": "Can we go over problem 3?", "hidden": false]
        let host = CLIFakeHost(CLIFakeDaemon { method, _ in method == "meetup.comment" ? comment : Self.info })
        #expect(runCLI(["meetup", "comment", "0123", "Can we go over problem 3?"], host) == .success, "\(host.stderr)")
        #expect(host.transport.calls.last?.method == "meetup.comment")
        #expect(host.transport.calls.last?.params == ["id": "0123", "text": "Can we go over problem 3?"])
        #expect(host.stdout.contains("Comment aabbccddeeff added."))
        #expect(cliUsageError(["meetup", "comment", "0123", "  "])?.message.contains("empty") == true)

        var shown = Self.info.objectValue ?? [:]
        shown["comments"] = [comment, ["id": "112233445566", "meetup": "0123456789ab", "author": "mm1cy", "name": "Cy", "created": 6,
                                       "text": "spam", "hidden": true]]
        let show = CLIFakeHost(CLIFakeDaemon { [shown] _, _ in JSON.object(shown) })
        #expect(runCLI(["meetup", "show", "0123"], show) == .success, "\(show.stderr)")
        #expect(show.stdout.contains("Comments:\n  [aabbccddeeff] Ben: Can we go over problem 3?"), "\(show.stdout)")
        #expect(show.stdout.contains("[112233445566] Cy: spam (hidden by the host; only you see it)"), "\(show.stdout)")
    }

    @Test func profileShowListsTheMeetupsHostedAndAttended() {
        var past = Self.info.objectValue ?? [:]
        past["status"] = "ended"
        let card: JSON = ["id": "mm1ana", "name": "Ana", "role": "student", "courses": [], "conflicts": [:], "forked": false,
                          "updatedAt": 5, "hosted": [Self.info], "attended": [JSON.object(past)]]
        let host = CLIFakeHost(CLIFakeDaemon { _, _ in card })
        host.timeZone = TimeZone(identifier: "UTC")!
        #expect(runCLI(["profile", "show"], host) == .success, "\(host.stderr)")
        #expect(host.stdout.contains("hosts") && host.stdout.contains("0123456789ab  2027-01-15 08:00  Catan night"), "\(host.stdout)")
        #expect(host.stdout.contains("attends") && host.stdout.contains("(ended)"), "\(host.stdout)")
    }
}
