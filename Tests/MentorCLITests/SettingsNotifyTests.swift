import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

// `settings show|set` and `notify`: parsing, what they send, what they print, and which events
// become which notifications by which way, against the fake daemon and host.

extension CommandLineTests {
    @Suite struct SettingsCommandTests {
        @Test func setTakesAKeyAndAValueOrUnset() throws {
            let set = try cliParsed(["settings", "set", "notify.message", "off"], as: MentormateCLI.Settings.Set.self).0
            #expect(set.key == "notify.message" && set.value == "off" && !set.unset)
            let unset = try cliParsed(["settings", "set", "notify.message", "--unset"], as: MentormateCLI.Settings.Set.self).0
            #expect(unset.key == "notify.message" && unset.value == nil && unset.unset)
            let show = try cliParsed(["settings", "show", "--json"], as: MentormateCLI.Settings.Show.self)
            #expect(show.json)
            #expect(MentormateCLI.Settings.Set.usage == "mentormate settings set [--unset] KEY [VALUE]")
        }

        @Test func setNeedsExactlyOneOfValueAndUnset() {
            #expect(cliUsageError(["settings", "set", "notify.match"])?.message
                    == "give the new VALUE of notify.match, or --unset to put it back to its default")
            #expect(cliUsageError(["settings", "set", "notify.match", "on", "--unset"])?.message
                    == "--unset puts notify.match back to its default; a VALUE cannot go with it")
            #expect(cliUsageError(["settings", "set"])?.message == "`settings set` needs KEY")
            #expect(cliUsageError(["settings"])?.message == "`settings` needs a subcommand: show or set")
            #expect(cliUsageError(["settings", "set", "a", "b", "c"]) != nil)
        }

        @Test func setSendsTheValueOrNullAndPrintsTheResult() {
            let transport = CLIFakeDaemon { _, params in
                let off = params["value"] == "off"
                return ["key": "notify.match", "value": off ? "false" : "true", "isDefault": .bool(!off), "defaultValue": "true",
                        "kind": "bool", "accepts": "true or false", "description": "d"]
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["settings", "set", "notify.match", "off"], host) == .success)
            #expect(runCLI(["settings", "set", "notify.match", "--unset"], host) == .success)
            #expect(transport.methods == ["settings.set", "settings.set"])
            #expect(transport.calls[0].params == ["key": "notify.match", "value": "off"])
            #expect(transport.calls[1].params == ["key": "notify.match", "value": nil])
            #expect(host.out == ["notify.match = false", "notify.match = true (default)"])
        }

        @Test func showPrintsOneLinePerKeyWithTheDefaultsMarked() {
            let transport = CLIFakeDaemon { _, _ in
                ["settings": [
                    ["key": "notify.match", "value": "true", "isDefault": true, "description": "Match notifications."],
                    ["key": "notify.message", "value": "false", "isDefault": false, "description": "Message notifications."],
                    ["key": "feed.gender", "value": nil, "isDefault": true, "description": "Only this gender.\u{1B}[2J"],
                ]]
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["settings", "show"], host) == .success)
            #expect(host.stdout == """
                notify.match    true (default)     Match notifications.
                notify.message  false              Message notifications.
                feed.gender     (unset) (default)  Only this gender.?[2J
                """)
            let json = CLIFakeHost(transport)
            #expect(runCLI(["settings", "show", "--json"], json) == .success)
            #expect(json.stdout.contains("\"notify.message\""))
        }

        @Test func aRefusalIsReportedWithTheDaemonsWords() {
            let transport = CLIFakeDaemon { _, _ in
                throw RPCError(.invalidValue, "there is no setting \"notify.chat\"; the settings are notify.match, notify.message, notify.unmatch")
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["settings", "set", "notify.chat", "on"], host) == .failure)
            #expect(host.stderr.contains("there is no setting \"notify.chat\"; the settings are notify.match"))
            #expect(host.stderr.hasSuffix("\nhint: `mentormate settings show` lists the settings and what each accepts"))
        }
    }

    @Suite struct NotifyCommandTests {
        static let me = cliAna, ben = cliBen

        static func message(_ text: String, mine: Bool = false) -> RPCNotification {
            RPCNotification(method: "event.message", params: ["with": .string(ben), "message": [
                "id": "m1", "from": .string(mine ? me : ben), "text": .string(text), "sentAt": 1, "mine": .bool(mine)]])
        }

        /// A daemon that answers whoami, subscribe, profile.show (Ben's card) and settings.show
        /// with `off` turned off, then hands out `events` and closes.
        static func daemon(_ events: [RPCNotification], off: Set<String> = []) -> CLIFakeDaemon {
            let transport = CLIFakeDaemon { method, _ in
                switch method {
                case "account.whoami": return cliAnaInfo
                case "profile.show": return ["id": .string(ben), "name": "Ben"]
                case "settings.show":
                    return ["settings": .array(["notify.match", "notify.message", "notify.unmatch", "notify.meetup"].map {
                        ["key": .string($0), "value": off.contains($0) ? "false" : "true"]
                    })]
                default: return ["events": ["match", "message", "unmatch", "meetup"]]
                }
            }
            transport.notifications = events
            return transport
        }

        static let events = [
            RPCNotification(method: "event.match", params: ["id": .string(ben), "name": "Ben"]),
            message("Hi Ana! Shall we meet at the library tomorrow at ten to go over CS 490 problem set four together?"),
            message("my own words", mine: true),
            RPCNotification(method: "event.unmatch", params: ["id": .string(ben), "by": .string(ben)]),
            RPCNotification(method: "event.unmatch", params: ["id": .string(ben), "by": .string(me)]),
            RPCNotification(method: "event.meetup", params: ["id": "0123456789ab", "title": "Catan night", "what": "reminder",
                                                             "start": 1_800_000_000_000, "place": "Library room 2"]),
            RPCNotification(method: "event.meetup", params: ["id": "0123456789ab", "title": "Catan night", "what": "cancelled",
                                                             "start": 1_800_000_000_000, "place": "Library room 2"]),
        ]

        @Test func eachEventIsALineWithoutASessionBusAndTheDaemonGoingAwayExits3() {
            let transport = Self.daemon(Self.events)
            let host = CLIFakeHost(transport)
            host.programs = ["notify-send": "/usr/bin/notify-send"]
            #expect(runCLI(["notify"], host) == .unreachable)
            #expect(host.out == [
                "New match: Ben — You both liked each other. Say hello: mentormate chat \(String(cliBen.prefix(12)))",
                "Message from Ben — Hi Ana! Shall we meet at the library tomorrow at ten to go over CS 490 problem…",
                "Ben ended the match — The conversation with Ben is closed.",
                "Starting soon: Catan night — 2027-01-15 08:00 at Library room 2",
                "Cancelled: Catan night — The meetup at 2027-01-15 08:00 will not take place.",
            ])
            #expect(host.ran.isEmpty && host.interruptArmed)
            #expect(Array(transport.methods.prefix(2)) == ["account.whoami", "subscribe"])
            #expect(transport.calls[1].params == ["events": ["match", "message", "unmatch", "meetup"]])
            #expect(host.stderr.contains("lost the connection to mentormated"))
        }

        @Test func settingsTurnedOffAreReadAsEachEventArrives() {
            let transport = Self.daemon(Self.events, off: ["notify.message", "notify.unmatch", "notify.meetup"])
            let host = CLIFakeHost(transport)
            host.environmentValues = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"]
            host.programs = ["gdbus": "/usr/bin/gdbus"]
            #expect(runCLI(["notify"], host) == .unreachable)
            #expect(host.ran.count == 1 && host.ran.first?.contains("\"New match: Ben\"") == true)
            // One settings.show per event that would be shown (the own message and unmatch are not).
            #expect(transport.methods.filter { $0 == "settings.show" }.count == 5)
        }

        @Test func notifySendComesFirstThenGdbusAndStdoutOrNoBusMeansTheTerminal() {
            let host = CLIFakeHost()
            host.programs = ["notify-send": "/usr/bin/notify-send", "gdbus": "/usr/bin/gdbus"]
            #expect(NotifyVia.choose(host, stdout: false) == .terminal)
            host.environmentValues = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"]
            #expect(NotifyVia.choose(host, stdout: false) == .notifySend("/usr/bin/notify-send"))
            #expect(NotifyVia.choose(host, stdout: true) == .terminal)
            host.programs["notify-send"] = nil
            #expect(NotifyVia.choose(host, stdout: false) == .gdbus("/usr/bin/gdbus"))
            host.programs = [:]
            #expect(NotifyVia.choose(host, stdout: false) == .terminal)
        }

        @Test func argumentsAreArgvWithTheTextQuotedForGVariantAndEscapedForMarkup() {
            let note = DesktopNotification(event: .message, id: cliBen, summary: "Message from \"Ben\"", body: "a\\b <i>\n'x' & y")
            #expect(NotifyVia.notifySend("/usr/bin/notify-send").argv(note)
                    == ["/usr/bin/notify-send", "--app-name=MentorMate", "--", "Message from \"Ben\"", "a\\b &lt;i&gt;\n'x' &amp; y"])
            let gdbus = NotifyVia.gdbus("/usr/bin/gdbus").argv(note) ?? []
            #expect(gdbus.count == 19 && gdbus.prefix(3) == ["/usr/bin/gdbus", "call", "--session"])
            #expect(Array(gdbus.suffix(8)) == ["\"MentorMate\"", "uint32 0", "\"\"", "\"Message from \\\"Ben\\\"\"",
                                               "\"a\\\\b &lt;i&gt;\\u000a'x' &amp; y\"", "@as []", "@a{sv} {}", "int32 -1"])
            #expect(NotifyVia.terminal.argv(note) == nil)
        }

        @Test func aFailingProgramFallsBackToTheLineAndSaysSoOnce() {
            let transport = Self.daemon(Array(Self.events.prefix(2)))
            let host = CLIFakeHost(transport)
            host.environmentValues = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"]
            host.programs = ["notify-send": "/usr/bin/notify-send"]
            host.programStatus = 1
            #expect(runCLI(["notify"], host) == .unreachable)
            #expect(host.ran.count == 2 && host.out.count == 2)
            #expect(host.err.filter { $0.contains("failed; showing notifications on the terminal") }.count == 1)
        }

        @Test func aLockedAccountIsToldNotificationsStartAtLogin() {
            let transport = Self.daemon([])
            let answer = transport.answer
            transport.answer = { method, params in
                method == "account.whoami" ? ["id": .string(cliAna), "email": "ana@uni.edu", "protected": true, "unlocked": false]
                    : try answer(method, params)
            }
            let host = CLIFakeHost(transport)
            #expect(runCLI(["notify"], host) == .unreachable)
            #expect(host.stderr.contains("your account is locked: notifications start once you run `mentormate login`"))
            #expect(transport.methods == ["account.whoami", "subscribe"])
        }

        @Test func jsonLinesCarryTheEventAndItsText() {
            let host = CLIFakeHost(Self.daemon([Self.events[0]]))
            #expect(runCLI(["notify", "--stdout", "--json"], host) == .unreachable)
            let line = JSON.parse(Array((host.out.first ?? "").utf8))
            #expect(line?["event"] == "match" && line?["summary"] == "New match: Ben" && line?["id"] == .string(cliBen))
        }

        @Test func firstWordsCutAtAWordAndKeepOneLine() {
            #expect(DesktopNotification.firstWords("  see\nyou   at noon ") == "see you at noon")
            #expect(DesktopNotification.firstWords("one two three", limit: 10) == "one two…")
            #expect(DesktopNotification.firstWords(String(repeating: "x", count: 20), limit: 10) == String(repeating: "x", count: 9) + "…")
            #expect(DesktopNotification.firstWords("evil\u{1B}[2J text") == "evil?[2J text")
        }
    }
}
