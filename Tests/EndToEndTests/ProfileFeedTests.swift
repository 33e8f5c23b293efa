import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// Issue 16 through the real client on three daemons over loopback. Node A (config:
    /// `min_age = 18`, `areas = Library, Science Hall`) holds Ana, a student; node B dials A and
    /// holds the tutors Ben (root), Cy and Dee; node C dials B only and holds Eve — so from A, Ben,
    /// Cy and Dee are nearby now and Eve is not. Ana's feed is ordered by the compatibility score,
    /// each score part checked in `--json` field by field; each filter keeps exactly who passes it;
    /// bad values fail with the reason and change nothing; `profile show` gives the score to
    /// another and the counts to oneself; a default filter, `--no-defaults`, pausing, and the sun
    /// sign opt-in through `settings`.
    @Test func theFeedIsOrderedByScoreAndEachFilterAndPartHoldsAcrossNodes() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let config = try e2e.write("a.conf", Array("min_age = 18\nareas = Library, Science Hall\n".utf8))
        let socketA = e2e.socket, socketB = e2e.path("b.sock"), socketC = e2e.path("c.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA, extra: ["--config", config])
        defer { a.kill() }
        let b = try e2e.startDaemon(stateDir: e2e.path("state-b"), socket: socketB, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketA))"])
        defer { b.kill() }
        let c = try e2e.startDaemon(stateDir: e2e.path("state-c"), socket: socketC, extra: ["--peer", "127.0.0.1:\(try listenPort(e2e, socketB))"])
        defer { c.kill() }
        let (kid, cy, dee) = (try e2e.makeUser("kid"), try e2e.makeUser("cy"), try e2e.makeUser("dee"))
        func logs() -> String { "\nlog A:\n\(a.log)\nlog B:\n\(b.log)\nlog C:\n\(c.log)" }
        let timeout: Duration = .seconds(30)

        try step("min_age: no birth date, or one under 18, is refused on A with the reason; nothing is made") {
            let none = try e2e.run(["signup", "--email", "kid@uni.edu", "--name", "Kid", "--role", "student"], as: kid, socket: socketA)
            #expect(!none.ok && none.stderr.contains("min_age") && none.stderr.contains("--birthdate"), "\(none)")
            let young = try e2e.run(["signup", "--email", "kid@uni.edu", "--name", "Kid", "--role", "student", "--birthdate", "2010-03-01"],
                                    as: kid, socket: socketA)
            #expect(!young.ok && young.stderr.contains("18 or over") && young.stderr.contains("you are 16"), "\(young)")
            let who = try e2e.run(["whoami"], as: kid, socket: socketA)
            #expect(!who.ok && who.stderr.contains("no account"), "no account was made: \(who)")
        }

        let (anaID, benID, cyID, deeID, eveID) = try step("sign-ups and cards: Ana on A; Ben, Cy, Dee on B; Eve on C") {
            try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student", "--birthdate", "2004-05-17"], socket: socketA)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30", "--available", "mon 15-18", "--area", "science  hall",
                        "--prefer-gender", "Woman", "--prefer-max-wage", "30"], socket: socketA)
            try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "CS 490,MATH 221", "--wage", "25", "--available", "Mon 14-17, Wed 9-12",
                        "--gender", "man", "--languages", "English, Portuguese", "--birthdate", "1999-01-01"], socket: socketB)
            try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "tutor"], as: cy, socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "ART 100", "--wage", "40", "--available", "Tue 9-10", "--gender", "woman",
                        "--birthdate", "2003-06-01"], as: cy, socket: socketB)
            try e2e.mm(["signup", "--email", "dee@uni.edu", "--name", "Dee", "--role", "tutor"], as: dee, socket: socketB)
            try e2e.mm(["profile", "set", "--courses", "cs 490", "--wage", "20", "--gender", "woman"], as: dee, socket: socketB)
            try e2e.mm(["signup", "--email", "eve@uni.edu", "--name", "Eve", "--role", "tutor"], socket: socketC)
            try e2e.mm(["profile", "set", "--courses", "CS 490", "--wage", "30"], socket: socketC)
            func id(_ user: TestUser?, _ socket: String) throws -> String {
                try #require(try e2e.mm(["whoami", "--json"], as: user, socket: socket).json?["id"]?.stringValue)
            }
            return (try id(nil, socketA), try id(nil, socketB), try id(cy, socketB), try id(dee, socketB), try id(nil, socketC))
        }

        func feed(_ extra: [String] = [], socket: String? = nil) throws -> [JSON] {
            try mmJSON(e2e, ["feed"] + extra, socket ?? socketA)["cards"]?.arrayValue ?? []
        }
        func ids(_ cards: [JSON]) -> [String] { cards.compactMap { $0["id"]?.stringValue } }
        func byID(_ cards: [JSON]) -> [String: JSON] {
            Dictionary(cards.compactMap { card in card["id"]?.stringValue.map { ($0, card) } }, uniquingKeysWith: { x, _ in x })
        }
        /// Each part of a feed entry's score: part → "points: reason".
        func parts(_ card: JSON?) -> [String: String] {
            Dictionary((card?["compatibility"]?.arrayValue ?? []).compactMap { p -> (String, String)? in
                guard let name = p["part"]?.stringValue, let points = p["points"]?.doubleValue else { return nil }
                let shown = points == points.rounded() ? "\(Int(points))" : "\(points)"
                return (name, "\(shown): \(p["reason"]?.stringValue ?? "")")
            }, uniquingKeysWith: { x, _ in x })
        }

        try step("Ana's feed: Ben 90, Dee 80, Eve 60, Cy 20 — each part as the rules say") {
            let cards = try poll(timeout: timeout, { try feed() }, until: { cards in
                cards.count == 4 && byID(cards)[benID]?["score"]?.intValue == 90
            })
            #expect(ids(cards) == [benID, deeID, eveID, cyID], "ordered by score: \(cards)\(logs())")
            #expect(cards.compactMap { $0["score"]?.intValue } == [90, 80, 60, 20], "\(cards)")
            let ben = byID(cards)[benID], dee = byID(cards)[deeID], eve = byID(cards)[eveID], cyCard = byID(cards)[cyID]
            let benParts = parts(ben)
            #expect(benParts["courses"] == "35: 1 shared course: CS 490")
            #expect(benParts["availability"] == "20: free at the same time 2 h a week")
            #expect(benParts["money"] == "15: wage 25 within budget 30")
            #expect(benParts["preferences"] == "10: gender not met, max wage met")
            #expect(benParts["nearby"] == "10: nearby now")
            #expect(benParts["sign"] == nil, "no sign part: neither opted in")
            #expect(ben?["slots"]?.stringValue == "Mon 14-17, Wed 9-12" && ben?["gender"]?.stringValue == "man"
                    && ben?["languages"]?.strings == ["english", "portuguese"] && ben?["age"]?.intValue == 27 && ben?["sign"] == .null,
                    "Ben's new fields, normalized: \(String(describing: ben))")
            #expect(parts(dee)["availability"] == "0: they give no availability slots" && parts(dee)["preferences"] == "20: gender met, max wage met")
            #expect(parts(eve)["nearby"] == "0: not nearby now" && eve?["nearby"] == false, "Eve's node C is linked to B, not to A")
            #expect(parts(eve)["preferences"] == "10: gender not met, max wage met", "no gender given does not meet a preference")
            #expect(parts(cyCard)["money"] == "0: wage 40 over budget 30" && parts(cyCard)["courses"] == "0: no shared course")
            let table = try e2e.mm(["feed"], socket: socketA).stdout
            #expect(table.contains("SCORE") && table.contains(" 90 "), "the table shows the score: \(table)")
        }

        try step("each filter keeps exactly the cards that pass it") {
            let cases: [([String], [String])] = [
                (["--available", "Mon"], [benID]),
                (["--available", "Mon-16"], [benID]),
                (["--available", "Mon-17"], []),
                (["--available", "tue 9:30"], [cyID]),
                (["--max-wage", "25"], [benID, deeID]),
                (["--min-budget", "1"], []),
                (["--nearby"], [benID, deeID, cyID]),
                (["--gender", "Woman"], [deeID, cyID]),
                (["--min-age", "25"], [benID]),
                (["--max-age", "24"], [cyID]),
                (["--min-age", "18", "--max-age", "30"], [benID, cyID]),
                (["--min-score", "60"], [benID, deeID, eveID]),
                (["--min-score", "61", "--max-wage", "20"], [deeID]),
                (["--course", "cs 490", "--nearby"], [benID, deeID]),
            ]
            for (flags, expected) in cases {
                let got = ids(try feed(flags))
                #expect(got == expected, "feed \(flags.joined(separator: " ")): \(got)")
            }
            // The other side: Ben's feed has Ana (budget 30).
            #expect(ids(try feed(["--min-budget", "30"], socket: socketB)) == [anaID])
            #expect(ids(try feed(["--min-budget", "31"], socket: socketB)) == [])
        }

        try step("bad values fail naming the problem and change nothing") {
            let before = try mmJSON(e2e, ["profile", "show"], socketA)
            let bad: [([String], String)] = [
                (["feed", "--available", "Funday 25-26"], "\"Funday\" is not a day"),
                (["feed", "--available", "Mon-25"], "25 is not an hour"),
                (["feed", "--max-wage", "-3"], "--max-wage"),
                (["feed", "--min-score", "101"], "--min-score"),
                (["feed", "--min-age", "30", "--max-age", "20"], "above --max-age"),
                (["profile", "set", "--available", "Funday 25-26"], "\"Funday\" is not a day"),
                (["profile", "set", "--available", "Mon 17-14"], "ends before it starts"),
                (["profile", "set", "--area", "Mars"], "not an area of this campus"),
                (["profile", "set", "--birthdate", "2004-02-30"], "not a day of the calendar"),
                (["profile", "set", "--prefer-max-wage", "-3"], "--prefer-max-wage"),
                (["profile", "set", "--languages", "a,b,c,d,e,f,g,h,i"], "at most 8"),
            ]
            for (args, reason) in bad {
                let r = try e2e.run(args, socket: socketA)
                #expect(!r.ok && r.stderr.contains(reason), "\(args.joined(separator: " ")) should fail with \(reason): \(r)")
            }
            let after = try mmJSON(e2e, ["profile", "show"], socketA)
            #expect(after["updatedAt"] == before["updatedAt"] && after["slots"]?.stringValue == "Mon 15-18"
                    && after["area"]?.stringValue == "Science Hall" && after["age"]?.intValue == 22, "unchanged: \(after)")
            #expect(after["preferences"]?["genders"]?.strings == ["woman"] && after["preferences"]?["maxWage"]?.intValue == 30, "\(after)")
        }

        try step("profile show: another's card has the score and its parts; one's own the counts") {
            let ben = try mmJSON(e2e, ["profile", "show", String(benID.prefix(16))], socketA)
            #expect(ben["score"]?.intValue == 90 && parts(ben).count == 5, "\(ben)")
            let text = try e2e.mm(["profile", "show", String(benID.prefix(16))], socket: socketA).stdout
            #expect(text.contains("90/100") && text.contains("courses 35/35: 1 shared course: CS 490"), "\(text)")
            try e2e.mm(["like", anaID], as: cy, socket: socketB)
            try e2e.mm(["like", benID], socket: socketA)
            try e2e.mm(["like", anaID], socket: socketB)
            let me = try poll(timeout: timeout, { try mmJSON(e2e, ["profile", "show"], socketA) },
                              until: { $0["matches"]?.intValue == 1 && $0["pendingLikes"]?.intValue == 1 })
            #expect(me["matches"]?.intValue == 1 && me["pendingLikes"]?.intValue == 1 && me["score"] == .null,
                    "one match (Ben), one like waiting (Cy's), no score for oneself: \(me)\(logs())")
            #expect(ids(try feed()) == [deeID, eveID, cyID], "Ben, liked and matched, leaves the feed")
        }

        try step("settings: a default filter, --no-defaults, pause, the sun sign") {
            try e2e.mm(["settings", "set", "feed.max_wage", "25"], socket: socketA)
            let defaulted = try feed()
            #expect(ids(defaulted) == [deeID], "the default max wage applies: \(defaulted)")
            #expect(ids(try feed(["--max-wage", "40"])) == [deeID, eveID, cyID], "a flag given wins over the default")
            #expect(ids(try feed(["--no-defaults"])) == [deeID, eveID, cyID])
            try e2e.mm(["settings", "set", "feed.max_wage", "--unset"], socket: socketA)
            try e2e.mm(["settings", "set", "paused", "true"], as: dee, socket: socketB)
            let paused = try poll(timeout: timeout, { try feed() }, until: { !ids($0).contains(deeID) })
            #expect(ids(paused) == [eveID, cyID], "Dee paused: gone from new feeds: \(paused)")
            try e2e.mm(["settings", "set", "paused", "false"], as: dee, socket: socketB)
            _ = try poll(timeout: timeout, { try feed() }, until: { ids($0).contains(deeID) })
            try e2e.mm(["settings", "set", "show_sign", "true"], socket: socketA)
            try e2e.mm(["settings", "set", "birthdate", "2003-06-01"], as: dee, socket: socketB)
            try e2e.mm(["settings", "set", "show_sign", "true"], as: dee, socket: socketB)
            let signed = try poll(timeout: timeout, { try feed() }, until: { parts(byID($0)[deeID])["sign"] != nil })
            let deeCard = byID(signed)[deeID]
            #expect(deeCard?["sign"]?.stringValue == "Gemini" && deeCard?["age"]?.intValue == 23, "\(String(describing: deeCard))")
            #expect(parts(deeCard)["sign"] == "5: Taurus and Gemini: earth and air, neutral", "\(String(describing: deeCard))")
            #expect(deeCard?["score"]?.intValue == 77, "round((80 + 5) / 110 × 100): \(String(describing: deeCard))")
        }

        try step("follows (issue 17): counted the same on every node") {
            try e2e.mm(["follow", String(benID.prefix(16))], socket: socketA)
            try e2e.mm(["follow", benID], as: cy, socket: socketB)
            try e2e.mm(["follow", anaID], socket: socketC)
            for socket in [socketA, socketB, socketC] {
                let ben = try poll(timeout: timeout, { try mmJSON(e2e, ["profile", "show", benID], socket) },
                                   until: { $0["followers"]?.intValue == 2 })
                #expect(ben["followers"]?.intValue == 2 && ben["following"]?.intValue == 0, "\(socket): \(ben)\(logs())")
                let list = try mmJSON(e2e, ["followers", benID], socket)
                #expect(Set((list["accounts"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }) == [anaID, cyID], "\(list)")
            }
            let again = try e2e.run(["follow", benID], socket: socketA)
            #expect(!again.ok && again.stderr.contains("you follow"), "\(again)")
            let text = try e2e.mm(["following"], socket: socketA).stdout
            #expect(text.contains("Ben") && text.contains("1 account"), "\(text)")
        }
    }
}
