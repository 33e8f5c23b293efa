import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `mentormate swipe` with the real daemon: in a pseudo-terminal (scripts/pty-drive.py plays the
/// keys: like, pass, undo, the whole card, a resize, quit) and, without a terminal, its line prompt.
extension EndToEndTests {
    /// Ana (root) is a student in CS 490; Ben (tutor, CS 490) has liked her already; Cy (tutor,
    /// ART 100) has not. Returns the IDs.
    static func swipeCampus(_ e2e: E2E) throws -> (ben: String, cy: String) {
        let ben = try e2e.makeUser("ben"), cy = try e2e.makeUser("cy")
        try e2e.mm(["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"])
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--budget", "30"])
        try e2e.mm(["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], as: ben)
        try e2e.mm(["profile", "set", "--courses", "CS 490,MATH 221", "--wage", "25", "--availability", "Mon-Wed afternoons",
                    "--bio", "PhD student, I TA'd CS 490"], as: ben)
        try e2e.mm(["signup", "--email", "cy@uni.edu", "--name", "Cy", "--role", "tutor"], as: cy)
        try e2e.mm(["profile", "set", "--courses", "ART 100", "--wage", "15"], as: cy)
        let anaID = try #require(try e2e.mmJSON(["whoami"])["id"]?.stringValue)
        try e2e.mm(["like", String(anaID.prefix(12))], as: ben)
        let benID = try #require(try e2e.mmJSON(["whoami"], as: ben)["id"]?.stringValue)
        let cyID = try #require(try e2e.mmJSON(["whoami"], as: cy)["id"]?.stringValue)
        return (benID, cyID)
    }

    @Test func swipeInAPseudoTerminalLikesPassesUndoesAnnouncesTheMatchAndRedrawsOnResize() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }
        let (benID, cyID) = try Self.swipeCampus(e2e)

        let rule80 = String(repeating: "─", count: 80), rule100 = String(repeating: "─", count: 100)
        let steps: [[String: Any]] = [
            ["expect": "Ben"], ["expect": "shares CS 490, nearby now"], ["expect": "Mon-Wed afternoons"], ["expect": "25 per hour"],
            ["send": "i"], ["expect": "updated"],
            ["send": "h"], ["expect": "Passed on Ben."],
            ["send": "u"], ["expect": "Took back your pass on Ben."],
            ["send": "\u{1B}[C"], ["expect": "It's a match with Ben!"],
            // The frame after a resize: the next card (Cy), drawn 100 columns wide.
            ["resize": [30, 100]], ["expect": "\u{1B}[2J"], ["expect": "Cy"], ["expect": rule100], ["expect": "ART 100"],
            ["send": "\u{1B}[D"], ["expect": "Passed on Cy."],
            ["send": "q"], ["exit": true],
        ]
        let stepsFile = try e2e.write("steps.json", Array(try JSONSerialization.data(withJSONObject: steps)))
        let out = e2e.path("pty.json")
        let driver = try ChildProcess(["/usr/bin/python3", LabHosts.repository + "/scripts/pty-drive.py", "24", "80", stepsFile, "--",
                                       e2e.binaries.client, "--socket", e2e.socket, "swipe"],
                                      stdout: .file(out), stderr: .file(out + ".err"))
        #expect(driver.wait(timeout: .seconds(120))?.exitCode == 0, "\(e2e.read(out + ".err"))")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(e2e.read(out).utf8)) as? [String: Any], "\(e2e.read(out))")
        let screen = result["output"] as? String ?? ""
        #expect(result["ok"] as? Bool == true, "step failed: \(String(describing: result["failed"]))\n\(screen.suffix(3000))")
        #expect(result["status"] as? Int == 0)
        // Drawn for 80 columns until the resize, then for 100; the terminal is put back at the end.
        let beforeResize = screen.components(separatedBy: rule100).first ?? ""
        #expect(beforeResize.contains(rule80) && !beforeResize.contains(rule80 + "─"), "the first frames are 80 columns wide")
        #expect(screen.hasPrefix("\u{1B}[?1049h"), "the alternate screen")
        #expect(screen.contains("\u{1B}[?25h\u{1B}[?1049l"), "cursor shown and the screen restored at the end")
        #expect(screen.contains("Liked 1, passed 1, 1 new match."), "the summary after quitting")

        // The daemon saw the same: a match with Ben, Cy passed.
        #expect(try e2e.mmJSON(["matches"])["matches"]?.arrayValue?.map { $0["id"]?.stringValue } == [benID])
        #expect(try e2e.mmJSON(["feed"])["cards"]?.arrayValue?.isEmpty == true, "Ben matched and Cy passed: nobody left")
        #expect(try e2e.mmJSON(["undo", String(cyID.prefix(12))])["undone"] == "pass")
    }

    @Test func swipeWithoutATerminalAsksOnALineAndReadsAnswersFromStdin() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }
        let (benID, _) = try Self.swipeCampus(e2e)

        let run = try e2e.run(["swipe"], stdin: "i\nl\nh\nq\n")
        #expect(run.ok, "\(run)")
        let out = run.stdout
        #expect(!out.contains("\u{1B}["), "no escape sequences when stdout is not a terminal")
        for part in ["Ben\n  role       tutor", "why        shares CS 490, nearby now", "available  Mon-Wed afternoons",
                     "[l]ike, [h] or [p]ass, [u]ndo, [i] whole card, [q]uit?", "Ben (tutor)\n  id            \(benID)",
                     "It's a match with Ben!", "Cy\n  role     tutor", "Passed on Cy.", "Liked 1, passed 1, 1 new match."] {
            #expect(out.contains(part), "missing \(part):\n\(out)")
        }
        #expect(try e2e.mmJSON(["matches"])["matches"]?.arrayValue?.map { $0["id"]?.stringValue } == [benID])
    }
}
