import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 18's meetups through the real client on four daemons (B, C and D link A, the host's
    /// node). Ana hosts two seats: Ben and Cy take them, Dee goes to the waitlist, Ben leaves and
    /// Dee is seated — the same on every node. A non-host's edit and cancel are refused. Then a
    /// partition: with A stopped, Ben and Cy both join a one-seat meetup (pending everywhere);
    /// when A is back, its node seats one and puts the other first on the waitlist, and all four
    /// nodes show the same. Ana cancels: every node shows it cancelled and no longer open.
    @Test func meetupsSeatJoinsInTheHostsOrderAndAPartitionResolvesToOneSeat() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let names = ["a", "b", "c", "d"]
        let sockets = names.map { e2e.path("\($0).sock") }, states = names.map { e2e.path("state-\($0)") }
        var daemons: [Daemon] = []
        defer { for d in daemons { d.kill() } }
        daemons.append(try e2e.startDaemon(stateDir: states[0], socket: sockets[0]))
        let portA = try listenPort(e2e, sockets[0])
        for i in 1...3 {
            daemons.append(try e2e.startDaemon(stateDir: states[i], socket: sockets[i], extra: ["--peer", "127.0.0.1:\(portA)"]))
        }
        func logs() -> String { zip(names, daemons).map { "\nlog \($0):\n\($1.log)" }.joined() }
        for (i, name) in ["Ana", "Ben", "Cy", "Dee"].enumerated() {
            try e2e.mm(["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", "student"], socket: sockets[i])
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        let tomorrow = formatter.string(from: Date().addingTimeInterval(86_400))

        let created = try mmJSON(e2e, ["meetup", "create", "--title", "Catan night", "--game", "Catan", "--at", tomorrow,
                                       "--place", "Library room 2", "--seats", "2", "--duration", "2h"], sockets[0])
        let id = try #require(created["id"]?.stringValue)
        func show(_ node: Int, _ meetup: String) throws -> JSON? {
            let run = try e2e.run(["meetup", "show", meetup, "--json"], socket: sockets[node])
            return run.ok ? run.json : nil
        }
        func places(_ node: Int, _ meetup: String) throws -> [String] {
            (try show(node, meetup)?["attendees"]?.arrayValue ?? []).map { "\($0["name"]?.stringValue ?? "?") \($0["place"]?.stringValue ?? "?")" }
        }
        /// Waits until every node shows `expected` for `meetup`.
        func everywhere(_ meetup: String, _ expected: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let seen = try poll(timeout: .seconds(30), { try (0..<4).map { try places($0, meetup) } }, until: { $0.allSatisfy { $0 == expected } })
            #expect(seen.allSatisfy { $0 == expected }, "\(what): \(seen)\(logs())", sourceLocation: sourceLocation)
        }

        try step("Ben and Cy take the two seats, Dee waits; Ben leaves and Dee is seated") {
            _ = try poll(timeout: .seconds(30), { try (1...3).map { try show($0, id) != nil } }, until: { $0.allSatisfy { $0 } })
            try e2e.mm(["meetup", "join", id], socket: sockets[1])
            try everywhere(id, ["Ben seat 1"], "Ben's join seated by A's node")
            try e2e.mm(["meetup", "join", id], socket: sockets[2])
            try everywhere(id, ["Ben seat 1", "Cy seat 2"], "Cy's join seated")
            let dee = try e2e.mm(["meetup", "join", id], socket: sockets[3])
            #expect(dee.stdout.contains("Joined"), "\(dee)")
            try everywhere(id, ["Ben seat 1", "Cy seat 2", "Dee waitlist 1"], "full: Dee waits")
            let open = try mmJSON(e2e, ["meetups"], sockets[3])["meetups"]?.arrayValue ?? []
            #expect(open.isEmpty, "a full meetup is not open: \(open)")
            try e2e.mm(["meetup", "leave", id], socket: sockets[1])
            try everywhere(id, ["Cy seat 1", "Dee seat 2"], "Ben's leave seats Dee")
        }

        try step("a non-host's edit and cancel are refused and change nothing") {
            let edit = try e2e.run(["meetup", "edit", id, "--title", "Mine now"], socket: sockets[1])
            #expect(!edit.ok && edit.stderr.contains("only the meetup's host"), "\(edit)")
            let cancel = try e2e.run(["meetup", "cancel", id], socket: sockets[2])
            #expect(!cancel.ok && cancel.stderr.contains("only the meetup's host"), "\(cancel)")
            #expect(try show(0, id)?["title"]?.stringValue == "Catan night" && show(0, id)?["status"]?.stringValue == "full")
        }

        try step("comments: everyone sees them, only the host hides, a writer's deletion leaves every node") {
            let dee = try #require(try mmJSON(e2e, ["meetup", "comment", id, "Can I bring a friend?"], sockets[3])["id"]?.stringValue)
            let cy = try #require(try mmJSON(e2e, ["meetup", "comment", id, "buy cheap dice at example.com"], sockets[2])["id"]?.stringValue)
            func comments(_ node: Int) throws -> [String] {
                (try show(node, id)?["comments"]?.arrayValue ?? []).map {
                    ($0["text"]?.stringValue ?? "?") + ($0["hidden"]?.boolValue == true ? " (hidden)" : "")
                }
            }
            let both = ["Can I bring a friend?", "buy cheap dice at example.com"]
            var seen = try poll(timeout: .seconds(30), { try (0..<4).map(comments) }, until: { $0.allSatisfy { $0 == both } })
            #expect(seen.allSatisfy { $0 == both }, "both comments on every node: \(seen)\(logs())")
            let forged = try e2e.run(["comment", "hide", cy], socket: sockets[1])
            #expect(!forged.ok && forged.stderr.contains("meetup's host"), "Ben is not the host: \(forged)")
            try e2e.mm(["comment", "hide", cy], socket: sockets[0])
            try e2e.mm(["comment", "delete", dee], socket: sockets[3])
            seen = try poll(timeout: .seconds(30), { try (0..<4).map(comments) },
                            until: { $0[0].isEmpty && $0[1].isEmpty && $0[2] == ["buy cheap dice at example.com (hidden)"] && $0[3].isEmpty })
            #expect(seen[0].isEmpty && seen[1].isEmpty && seen[3].isEmpty, "hidden for all but Cy, Dee's deleted: \(seen)\(logs())")
            #expect(seen[2] == ["buy cheap dice at example.com (hidden)"], "Cy still sees her hidden comment: \(seen)")
            let text = try e2e.mm(["meetup", "show", id], socket: sockets[2]).stdout
            #expect(text.contains("Comments:") && text.contains("hidden by the host"), "\(text)")
        }

        try step("profile show: the meetups Ana hosts and those Cy holds a seat in") {
            let cyID = try #require(try mmJSON(e2e, ["profile", "show"], sockets[2])["id"]?.stringValue)
            let anaID = try #require(try mmJSON(e2e, ["profile", "show"], sockets[0])["id"]?.stringValue)
            let cy = try mmJSON(e2e, ["profile", "show", cyID], sockets[1])
            #expect((cy["attended"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue } == ["Catan night"], "\(cy)")
            #expect(cy["hosted"]?.arrayValue?.isEmpty == true, "\(cy)")
            let ben = try mmJSON(e2e, ["profile", "show", try #require(try mmJSON(e2e, ["profile", "show"], sockets[1])["id"]?.stringValue)], sockets[3])
            #expect(ben["attended"]?.arrayValue?.isEmpty == true, "Ben left: no seat, \(ben)")
            let ana = try e2e.mm(["profile", "show", anaID], socket: sockets[3]).stdout
            #expect(ana.contains("hosts") && ana.contains("Catan night"), "\(ana)")
        }

        let last = try #require(try mmJSON(e2e, ["meetup", "create", "--title", "Last seat", "--course", "CS 490", "--at", tomorrow,
                                                 "--place", "Room 5", "--seats", "1"], sockets[0])["id"]?.stringValue)
        _ = try poll(timeout: .seconds(30), { try (1...3).map { try show($0, last) != nil } }, until: { $0.allSatisfy { $0 } })

        try step("a partition: with the host's node down, Ben and Cy both join the one-seat meetup") {
            #expect(daemons[0].terminate() != nil, "A stops")
            try e2e.mm(["meetup", "join", last], socket: sockets[1])
            try e2e.mm(["meetup", "join", last], socket: sockets[2])
            #expect(try places(1, last) == ["Ben pending"] && places(2, last) == ["Cy pending"], "each side sees only its own join, pending")
        }

        try step("the host's node is back: one seat, one waitlist place, the same on every node") {
            daemons[0] = try e2e.startDaemon(stateDir: states[0], socket: sockets[0], listen: "127.0.0.1:\(portA)")
            func settled(_ views: [[String]]) -> Bool {
                guard let first = views.first, first.count == 2 else { return false }
                let decided = !first.contains { $0.hasSuffix("pending") }
                return decided && views.allSatisfy { $0 == first }
            }
            let seen = try poll(timeout: .seconds(45), { try (0..<4).map { try places($0, last) } }, until: settled)
            let final = seen[0]
            #expect(seen.allSatisfy { $0 == final }, "all four nodes agree: \(seen)\(logs())")
            let who = Set(final.map { String($0.split(separator: " ")[0]) })
            let shape = final.count == 2 && final[0].hasSuffix("seat 1") && final[1].hasSuffix("waitlist 1")
            #expect(shape && who == ["Ben", "Cy"], "one seat and one waitlist place: \(final)")
        }

        try step("Ana cancels; every node shows it cancelled and not open, and Ben's node tells him") {
            // Ben listens for meetup events on his node (B) before the cancellation.
            let watch = try RawConnection(sockets[1])
            defer { watch.close() }
            let subscribed = watch.call("subscribe", ["events": ["meetup"]])
            #expect(subscribed?["result"] != nil, "subscribe: \(String(describing: subscribed))")
            try e2e.mm(["meetup", "cancel", last], socket: sockets[0])
            var heard: [String] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, !heard.contains("cancelled"), let line = watch.readJSON(timeout: deadline - .now) {
                if line["method"]?.stringValue == "event.meetup", line["params"]?["title"]?.stringValue == "Last seat",
                   let what = line["params"]?["what"]?.stringValue { heard.append(what) }
            }
            #expect(heard.contains("cancelled"), "Ben's node announces the cancellation: \(heard)\(logs())")
            let statuses = try poll(timeout: .seconds(30), { try (0..<4).map { try show($0, last)?["status"]?.stringValue ?? "" } },
                                    until: { $0.allSatisfy { $0 == "cancelled" } })
            #expect(statuses.allSatisfy { $0 == "cancelled" }, "\(statuses)")
            let text = try e2e.mm(["meetups", "--all"], socket: sockets[3]).stdout
            #expect(text.contains("cancelled") && text.contains("Last seat"), "\(text)")
            let join = try e2e.run(["meetup", "join", last], socket: sockets[3])
            #expect(!join.ok && join.stderr.contains("cancelled"), "\(join)")
        }
    }
}
