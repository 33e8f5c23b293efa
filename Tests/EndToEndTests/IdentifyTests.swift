import Foundation
import MentorAPI
import Testing

extension EndToEndTests {
    /// `identify` through the real client against a real daemon, with no account: the golden
    /// case (metallic, black streak, hardness 6 → pyrite, magnetite and hematite among the five),
    /// the printed reasons, and bad values refused with the accepted ones named.
    @Test func identifyThroughTheClient() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let socket = e2e.path("a.sock")
        let daemon = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socket)
        defer { daemon.kill() }

        let json = try mmJSON(e2e, ["identify", "--luster", "metallic", "--streak", "black", "--hardness", "6"], socket)
        let names = (json["matches"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        #expect(names.count == 5, "\(json)")
        for n in ["pyrite", "magnetite", "hematite"] { #expect(names.contains(n), "\(names)") }

        let text = try e2e.mm(["identify", "--luster", "metallic", "--streak", "black", "--hardness", "6"], socket: socket)
        #expect(text.stdout.contains("hematite (mineral) — 87/100"), "\(text)")
        #expect(text.stdout.contains("streak: black is near red-brown (both dark), half credit"), "\(text)")

        let badColour = try e2e.run(["identify", "--color", "mauve"], socket: socket)
        #expect(!badColour.ok && badColour.stderr.contains("use light, dark or one of:"), "\(badColour)")
        let badLuster = try e2e.run(["identify", "--luster", "shiny"], socket: socket)
        #expect(!badLuster.ok && badLuster.stderr.contains("metallic"), "\(badLuster)")
        let none = try e2e.run(["identify"], socket: socket)
        #expect(!none.ok && none.stderr.contains("at least one trait"), "\(none)")
    }
}
