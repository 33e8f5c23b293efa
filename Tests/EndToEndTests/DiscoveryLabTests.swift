import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `Discovery` over real Avahi on a real (virtual) LAN: `scripts/lab` builds hosts as network
/// namespaces on a bridge, each with its own D-Bus and avahi-daemon, and
/// `mentormate-dnssd-probe` (Tests/Tools) runs `Discovery` on them, printing its events as JSON
/// lines. The lab needs root; without it, or when the lab cannot be built, these tests fail and
/// say why — they never skip.
@Suite(.serialized, .tags(.multiProcess, .root)) struct DiscoveryLabTests {
    /// The probe, or a failure naming the build step that makes it.
    func probe() throws -> String { try Binaries.tool("mentormate-dnssd-probe") }

    /// A lab of `hosts` hosts (`LabHosts`: it fails, saying why, without root or namespaces).
    func lab(_ hosts: Int) throws -> LabHosts {
        let lab = try LabHosts(e2e: try E2E(), tag: "dl")
        try lab.up(hosts)
        return lab
    }

    /// Tears the lab down and removes the test's directory.
    func finish(_ lab: LabHosts) {
        #expect(throws: Never.self) { try lab.down() }
        lab.e2e.cleanup()
    }

    @Test func serviceRegisteredOnOneHostIsFoundOnAnotherWithAddressPortAndTXTAndLostAfterItsGoodbye() throws {
        let probe = try probe()
        let lab = try lab(2)
        defer { finish(lab) }

        // The browser runs first, so this measures how long a new service takes to appear.
        let browsing = try lab.start(on: 2, [probe, "browse", "60"], name: "browse2")
        browsing.readToEnd(timeout: .milliseconds(500))
        let registerStarted = ContinuousClock.now
        let registering = try lab.start(on: 1, [probe, "register", "mm-lab-a", "47001"], name: "register1")
        let registered = try #require(registering.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("registered")),
                                      "host 1 never registered: \(registering.transcript)")
        #expect(ProbeEvent(registered)?.name == "mm-lab-a")
        let registeredAfter = ContinuousClock.now - registerStarted

        let foundLine = try #require(browsing.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("found", name: "mm-lab-a")),
                                     "host 2 never found host 1's service: \(browsing.transcript)")
        let foundAfter = ContinuousClock.now - registerStarted
        let found = try #require(ProbeEvent(foundLine))
        #expect(found.ipv4Addresses == ["169.254.77.1"] && found.addresses.first == "169.254.77.1", "IPv4 first: \(foundLine)")
        // Avahi also publishes the host's fe80:: address over IPv4 (publish-aaaa-on-ipv4): it
        // comes scoped with the interface it was resolved on.
        #expect(found.addresses.dropFirst().allSatisfy { $0.hasPrefix("fe80:") && $0.hasSuffix("%eth0") }, "\(foundLine)")
        #expect(found.port == 47001)
        #expect(found.txt == ["v": "1"], "the TXT record carries the protocol version and nothing else")
        #expect(found.host == "\(lab.prefix)-host1.local.")
        print("discovery lab: register started -> registered \(registeredAfter), found (host, port, TXT, address) on the other host \(foundAfter)")

        // A browser started now gets it from its host's avahi-daemon, which cached the announcement.
        let late = try lab.start(on: 2, [probe, "browse", "10"], name: "browse2late")
        let lateLine = late.waitForLine(timeout: .seconds(5), where: ProbeEvent.matching("found", name: "mm-lab-a"))
        #expect(lateLine.flatMap(ProbeEvent.init)?.ipv4Addresses == ["169.254.77.1"], "\(late.transcript)")
        print("discovery lab: a browser started later found it \(lateLine.flatMap(ProbeEvent.init)?.ms ?? -1) ms after the probe started")

        // Host 1 browses too (Discovery always does): it must not report its own instance.
        registering.readToEnd(timeout: .milliseconds(500))
        #expect(!registering.lines.contains(where: ProbeEvent.matching("found", name: "mm-lab-a")),
                "host 1 reported its own instance: \(registering.transcript)")

        // SIGTERM: the probe stops Discovery, the registration is withdrawn, Avahi sends a goodbye.
        let stopSent = ContinuousClock.now
        registering.send(SIGTERM)
        let status = registering.wait(timeout: .seconds(5))
        #expect(status?.exitCode == 0, "the registering probe did not stop cleanly (\(String(describing: status))): \(registering.transcript)")
        let lostLine = browsing.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("lost", name: "mm-lab-a"))
        #expect(lostLine != nil, "host 2 never saw host 1's service go: \(browsing.transcript)")
        print("discovery lab: goodbye seen on the other host \(ContinuousClock.now - stopSent) after SIGTERM to the registering process")
    }

    @Test func stoppingAvahiUnderARegistrationReportsTheNamedFailureAndItRegistersAgainWhenAvahiIsBack() throws {
        let probe = try probe()
        let lab = try lab(2)
        defer { finish(lab) }

        let registering = try lab.start(on: 1, [probe, "register", "mm-lab-b", "47002", "--retry", "1"], name: "register1")
        try #require(registering.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("registered", name: "mm-lab-b")) != nil,
                     "host 1 never registered: \(registering.transcript)")
        let browsing = try lab.start(on: 2, [probe, "browse", "90"], name: "browse2")
        try #require(browsing.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("found", name: "mm-lab-b")) != nil,
                     "host 2 never found host 1's service: \(browsing.transcript)")

        let stopped = ContinuousClock.now
        try lab.lab(["avahi-stop", "1"])
        let failedLine = try #require(registering.waitForLine(timeout: .seconds(5), where: ProbeEvent.matching("failed")),
                                      "the registration did not report avahi-daemon going away: \(registering.transcript)")
        let failed = try #require(ProbeEvent(failedLine))
        #expect(failed.code == -65537)
        #expect(failed.codeName == "kDNSServiceErr_Unknown")
        #expect(failed.message?.contains("Avahi/D-Bus unreachable") == true, "\(failedLine)")
        print("discovery lab: avahi-daemon stopped -> registering process reported \(failed.codeName ?? "?") after \(ContinuousClock.now - stopped)")
        let lost = browsing.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("lost", name: "mm-lab-b"))
        #expect(lost != nil, "host 2 still lists the service of a host whose avahi-daemon stopped: \(browsing.transcript)")
        print("discovery lab: the other host saw the service go \(ContinuousClock.now - stopped) after avahi-daemon was stopped")

        // While Avahi is away the probe retries (every second) and must neither crash nor exit.
        registering.readToEnd(timeout: .seconds(2))
        #expect(registering.status == nil && registering.wait(timeout: .zero) == nil,
                "the registering probe ended while Avahi was away: \(registering.transcript)")

        let seen = registering.lines.count
        let restarted = ContinuousClock.now
        try lab.lab(["avahi-start", "1"])
        #expect(registering.waitForLine(timeout: .seconds(15), after: seen, where: ProbeEvent.matching("registered", name: "mm-lab-b")) != nil,
                "the service was not registered again once avahi-daemon was back: \(registering.transcript)")
        let foundAgain = browsing.waitForLine(timeout: .seconds(15), where: { line in
            ProbeEvent.matching("found", name: "mm-lab-b")(line) && line != browsing.lines.first(where: ProbeEvent.matching("found", name: "mm-lab-b"))
        })
        #expect(foundAgain.flatMap(ProbeEvent.init)?.ipv4Addresses == ["169.254.77.1"],
                "host 2 did not find the service again: \(browsing.transcript)")
        print("discovery lab: avahi-daemon started again -> registered and found on the other host after \(ContinuousClock.now - restarted)")

        registering.send(SIGTERM)
        #expect(registering.wait(timeout: .seconds(5))?.exitCode == 0, "\(registering.transcript)")
    }

    @Test func twoHostsAskingForTheSameNameEndUpWithDistinctNamesAndFindEachOther() throws {
        let probe = try probe()
        let lab = try lab(2)
        defer { finish(lab) }

        let first = try lab.start(on: 1, [probe, "register", "mm-lab-same", "47010"], name: "register1")
        try #require(first.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("registered", name: "mm-lab-same")) != nil,
                     "host 1 never registered: \(first.transcript)")
        let second = try lab.start(on: 2, [probe, "register", "mm-lab-same", "47020"], name: "register2")
        let renamedLine = try #require(second.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("registered")),
                                       "host 2 never registered: \(second.transcript)")
        let renamed = try #require(ProbeEvent(renamedLine)?.name)
        #expect(renamed != "mm-lab-same" && renamed.hasPrefix("mm-lab-same"), "Avahi should have renamed the second one: \(renamedLine)")
        print("discovery lab: the same name asked for on a second host was registered as \"\(renamed)\"")

        let foundByFirst = first.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("found", name: renamed))
        #expect(foundByFirst.flatMap(ProbeEvent.init)?.ipv4Addresses == ["169.254.77.2"], "host 1: \(first.transcript)")
        let foundBySecond = second.waitForLine(timeout: .seconds(10), where: ProbeEvent.matching("found", name: "mm-lab-same"))
        #expect(foundBySecond.flatMap(ProbeEvent.init)?.ipv4Addresses == ["169.254.77.1"], "host 2: \(second.transcript)")
        // Neither reports itself, under either name.
        first.readToEnd(timeout: .milliseconds(300))
        second.readToEnd(timeout: .milliseconds(300))
        #expect(!first.lines.contains(where: ProbeEvent.matching("found", name: "mm-lab-same")), "\(first.transcript)")
        #expect(!second.lines.contains(where: ProbeEvent.matching("found", name: renamed)), "\(second.transcript)")
    }

    @Test func withoutAvahiRegisteringFailsAtOnceWithTheNamedErrorAndNothingCrashes() throws {
        let probe = try probe()
        let e2e = try E2E()  // only for its directory: this runs outside any lab host
        defer { e2e.cleanup() }
        var environment = ChildProcess.baseEnvironment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent"

        // Without --retry the probe exits (status 3) right after reporting the failure.
        let started = ContinuousClock.now
        let once = try ChildProcess([probe, "register", "mm-lab-none", "47003"], environment: environment,
                                    stdout: .pipe, stderr: .file(e2e.path("once.err")))
        let line = try #require(once.waitForLine(timeout: .seconds(3), where: ProbeEvent.matching("failed")),
                                "no failure reported without Avahi: \(once.transcript)")
        let elapsed = ContinuousClock.now - started
        let failed = try #require(ProbeEvent(line))
        #expect(failed.code == -65537 && failed.codeName == "kDNSServiceErr_Unknown", "\(line)")
        #expect(failed.message?.contains("Avahi/D-Bus unreachable") == true, "\(line)")
        #expect(elapsed < .seconds(2), "the failure took \(elapsed)")
        #expect(once.wait(timeout: .seconds(3))?.exitCode == 3, "it should exit with status 3, not crash: \(once.transcript)")
        print("discovery lab: without Avahi, register reported \(failed.codeName ?? "?") after \(elapsed)")

        // With --retry it keeps trying (each failure reported once per attempt) and stops cleanly.
        let retrying = try ChildProcess([probe, "register", "mm-lab-none", "47003", "--retry", "0.2"], environment: environment,
                                        stdout: .pipe, stderr: .file(e2e.path("retrying.err")))
        retrying.readToEnd(timeout: .seconds(1.5))
        let failures = retrying.lines.filter(ProbeEvent.matching("failed")).count
        #expect(failures >= 3, "expected a failure per retry: \(retrying.transcript)")
        #expect(retrying.wait(timeout: .zero) == nil, "the retrying probe ended by itself: \(retrying.transcript)")
        retrying.send(SIGTERM)
        #expect(retrying.wait(timeout: .seconds(3))?.exitCode == 0, "\(retrying.transcript)")
        // Repeated failures are logged once at info, then at debug (the log is not flooded).
        let infoLines = retrying.errorOutput.split(separator: "\n").filter { $0.contains("[info] service discovery is off") }
        #expect(infoLines.count == 1, "\(retrying.errorOutput)")
    }
}

/// One JSON line of `mentormate-dnssd-probe`.
struct ProbeEvent {
    let fields: [String: Any]

    init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        fields = object
    }

    var event: String { fields["event"] as? String ?? "" }
    var name: String? { fields["name"] as? String }
    var port: Int? { fields["port"] as? Int }
    var host: String? { fields["host"] as? String }
    var addresses: [String] { fields["addresses"] as? [String] ?? [] }
    /// The IPv4 ones (Avahi may add the host's fe80:: address, even on an IPv4-only lab).
    var ipv4Addresses: [String] { addresses.filter { !$0.contains(":") } }
    var txt: [String: String] { fields["txt"] as? [String: String] ?? [:] }
    var code: Int? { fields["code"] as? Int }
    var codeName: String? { fields["codeName"] as? String }
    var message: String? { fields["message"] as? String }
    /// Milliseconds since the probe started.
    var ms: Int { fields["ms"] as? Int ?? -1 }

    /// Matches `event` (and `name`, when given) in a probe's stdout line.
    static func matching(_ event: String, name: String? = nil) -> (String) -> Bool {
        { line in
            guard let parsed = ProbeEvent(line), parsed.event == event else { return false }
            return name == nil || parsed.name == name
        }
    }
}
