import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 19 items 3 (IPv6) and 4 (roaming) in the multi-host lab (`scripts/lab`, see
/// `Support/LabHosts.swift`): real `mentormated` daemons on hosts that each have their own network
/// namespace, D-Bus and avahi-daemon, driven by the real `mentormate` client. Each test builds its
/// own lab under its own prefix and tears it down in a `defer` — every daemon by its PID, then
/// `scripts/lab down` for the lab's own processes, links, bridges and namespaces — also when it
/// fails. Needs root; fails (never skips) without it or without network namespaces, saying why.
@Suite(.serialized, .tags(.multiProcess, .root)) struct IPv6RoamingLabTests {
    // MARK: Helpers

    func peers(_ e2e: E2E, _ socket: String) throws -> [JSON] {
        try mmJSON(e2e, ["peers"], socket)["peers"]?.arrayValue ?? []
    }

    func described(_ list: [JSON]) -> String {
        list.map { "\($0["node"]?.stringValue?.prefix(12) ?? "?") via \($0["via"]?.stringValue ?? "?") at \($0["address"]?.stringValue ?? "?")" }
            .joined(separator: "; ")
    }

    func signup(_ e2e: E2E, _ socket: String, name: String, role: String, courses: String) throws -> String {
        let account = try mmJSON(e2e, ["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", role], socket)
        try e2e.mm(["profile", "set", "--courses", courses], socket: socket)
        return try #require(account["id"]?.stringValue)
    }

    /// Whether `id`'s card, with `courses`, is readable on the node at `socket`.
    func hasCard(_ e2e: E2E, _ socket: String, _ id: String, courses: [String]) -> Bool {
        (try? e2e.run(["profile", "show", id, "--json"], socket: socket))?.json?["courses"]?.strings == courses
    }

    func logs(_ daemons: [Int: Daemon]) -> String {
        daemons.keys.sorted().map { "\n--- log of host \($0):\n\(daemons[$0]!.log)" }.joined()
    }

    /// Starts a daemon on each of `hosts`, waits until each serves, and reads each node's ID.
    func startDaemons(_ lab: LabHosts, _ e2e: E2E, hosts: ClosedRange<Int>, listen: String? = nil) throws -> (daemons: [Int: Daemon], nodes: [Int: String]) {
        var daemons: [Int: Daemon] = [:], nodes: [Int: String] = [:]
        for host in hosts { daemons[host] = try listen.map { try lab.spawnDaemon(on: host, listen: $0) } ?? lab.spawnDaemon(on: host) }
        for host in hosts { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        for host in hosts { nodes[host] = try #require(try mmJSON(e2e, ["status"], lab.socket(host))["node"]?.stringValue) }
        return (daemons, nodes)
    }

    /// The fe80:: address of host `host`'s eth0, read inside its namespace.
    func linkLocal(_ lab: LabHosts, _ host: Int) throws -> String {
        let out = try lab.lab(["exec", "\(host)", "ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"])
        let words = out.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard let i = words.firstIndex(of: "inet6"), i + 1 < words.count, words[i + 1].hasPrefix("fe80:") else {
            throw E2EError("host \(host) has no fe80:: address on eth0: \(out)")
        }
        return String(words[i + 1].split(separator: "/")[0])
    }

    // MARK: IPv6

    /// An IPv6-only segment (no IPv4 address anywhere, Avahi with use-ipv4=no). Hosts 1 and 2
    /// have only their fe80:: addresses: they find each other over mDNS and link at
    /// `[fe80::…%eth0]:7000` (the scope from the interface the instance was resolved on), and
    /// `peers` shows that same text in JSON and in its table. Host 1 then gains a ULA: its
    /// daemon sees the network change and keeps the link to host 2 (its address did not go).
    /// Host 3, with a ULA and no mDNS, dials `--peer [fd00:77::1]:7000` (a global address,
    /// bracketed). A card written on host 2 reaches hosts 1 and 3.
    @Test func ipv6OnlySegmentLinksOverScopedLinkLocalAndULAAndCarriesACard() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "six")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3, options: ["--ipv6-only", "--link-local-only", "1,2"])

        let started = ContinuousClock.now
        var (daemons, nodes) = try startDaemons(lab, e2e, hosts: 1...2, listen: "[::]:7000")
        let fe80 = [1: try linkLocal(lab, 1), 2: try linkLocal(lab, 2)]

        // Each lists the other via mdns at its scoped link-local address (the one that dialled
        // shows port 7000; both dial, and one of the two links survives).
        for (host, other) in [(1, 2), (2, 1)] {
            let (list, after, ok) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(host)) }, until: { list in
                list.count == 1 && list.first?["node"]?.stringValue == nodes[other] && list.first?["via"]?.stringValue == "mdns"
            })
            #expect(ok, "host \(host) should list host \(other) via mdns: \(described(list))\(logs(daemons))")
            let address = try #require(list.first?["address"]?.stringValue)
            #expect(address.hasPrefix("[\(fe80[other]!)%eth0]:"), "host \(host) reaches host \(other) at \(address), not at [\(fe80[other]!)%eth0]")
            // The table shows the address exactly as the JSON does.
            let table = try e2e.mm(["peers"], socket: lab.socket(host)).stdout
            #expect(table.contains(address), "the table should show \(address) as the JSON does:\n\(table)")
            print("ipv6 lab: host \(host) lists host \(other) at \(address) \(ContinuousClock.now - started) after the daemons started (\(after) polling)")
        }
        let linkedSince = try peers(e2e, lab.socket(1)).first?["since"]?.intValue

        // Host 1 gains a ULA: a network change, but the link over fe80:: stays.
        try lab.lab(["exec", "1", "ip", "-6", "addr", "add", "fd00:77::1/64", "dev", "eth0", "nodad"])
        let (status1, _, changed) = try labPoll(timeout: .seconds(10), { try mmJSON(e2e, ["status"], lab.socket(1)) }, until: {
            ($0["network"]?["changes"]?.intValue ?? 0) >= 1
        })
        #expect(changed, "host 1's status should show the network change: \(status1)")
        let addresses1 = (status1["network"]?["interfaces"]?.arrayValue ?? []).flatMap { $0["addresses"]?.strings ?? [] }
        #expect(addresses1.contains("fd00:77::1") && addresses1.contains("\(fe80[1]!)%eth0"), "host 1's addresses: \(addresses1)")
        usleep(500_000)
        let after = try peers(e2e, lab.socket(1))
        #expect(after.count == 1 && after.first?["since"]?.intValue == linkedSince,
                "the link over fe80:: must survive an address being added: \(described(after))")

        // Host 3: a ULA, no mDNS, a bracketed global --peer.
        daemons[3] = try lab.startDaemon(on: 3, listen: "[::]:7000", extra: ["--no-mdns", "--peer", "[fd00:77::1]:7000"])
        nodes[3] = try #require(try mmJSON(e2e, ["status"], lab.socket(3))["node"]?.stringValue)
        let (list3, _, ok3) = try labPoll(timeout: .seconds(30), { try peers(e2e, lab.socket(3)) }, until: { list in
            list.contains { $0["node"]?.stringValue == nodes[1] && $0["address"]?.stringValue == "[fd00:77::1]:7000" && $0["via"]?.stringValue == "config" }
        })
        #expect(ok3, "host 3 should link to host 1 at [fd00:77::1]:7000 via config: \(described(list3))\(logs(daemons))")
        let (list1, _, ok1) = try labPoll(timeout: .seconds(10), { try peers(e2e, lab.socket(1)) }, until: { list in
            list.contains { $0["node"]?.stringValue == nodes[3] && ($0["address"]?.stringValue ?? "").hasPrefix("[fd00:77::3]:") }
        })
        #expect(ok1, "host 1 should list host 3 at [fd00:77::3]:PORT: \(described(list1))")

        // A card written on host 2 reaches host 1 (over fe80::) and host 3 (over the ULA, relayed by host 1).
        let written = ContinuousClock.now
        let ana = try signup(e2e, lab.socket(2), name: "Ana", role: "student", courses: "CS 490")
        for host in [1, 3] {
            let (_, after, ok) = labPoll(timeout: .seconds(30), { hasCard(e2e, lab.socket(host), ana, courses: ["CS 490"]) }, until: { $0 })
            #expect(ok, "Ana's card (host 2) should reach host \(host)\(logs(daemons))")
            print("ipv6 lab: Ana's card from host 2 readable on host \(host) \(ContinuousClock.now - written) after signup began (\(after) polling)")
        }
    }

    /// `--peer` with an IPv6 address not in brackets is refused with a message that says how to
    /// write it (no lab needed: the daemon stops before it listens).
    @Test func unbracketedIPv6PeerIsRefusedWithTheBracketedForm() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let process = try ChildProcess([e2e.binaries.daemon, "--state-dir", e2e.stateDir, "--socket", e2e.socket,
                                        "--listen", "127.0.0.1:0", "--no-mdns", "--peer", "fd00:77::1:7000"],
                                       environment: ChildProcess.baseEnvironment, stdout: .file(e2e.path("out")), stderr: .file(e2e.path("err")))
        let status = process.wait(timeout: .seconds(20))
        if status == nil { process.kill() }   // it should have refused at once; never leave it running
        let err = e2e.read(e2e.path("err"))
        #expect(status?.exitCode == 2, "a usage error: \(String(describing: status)): \(err)")
        #expect(err.contains("[fd00:77::1]:7000") && err.contains("brackets"), "\(err)")
    }

    // MARK: Roaming

    /// Two segments with nothing between them: host 1 on a, host 2 on b, host 3 (the laptop) on
    /// a. Host 3 syncs with host 1; Ben writes his card on host 2, alone on b. `scripts/lab move
    /// 3 b`: host 3's link loses carrier, joins b's bridge, its 169.254.77.3 goes and
    /// 169.254.78.3 comes. Host 3 drops its link to host 1 at once (its local address vanished),
    /// finds host 2 and has Ben's card within a few seconds, and `status` shows the new address
    /// and when the network changed; host 2 gets Ana's card from host 3.
    @Test func laptopMovedToAnotherSegmentDropsTheOldLinkAndCatchesUpWithTheNewOne() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "ro")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3, options: ["--segment-b", "2"])

        let (daemons, nodes) = try startDaemons(lab, e2e, hosts: 1...3)

        let (before, _, linked) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(3)) }, until: { list in
            list.count == 1 && list.first?["node"]?.stringValue == nodes[1]
        })
        #expect(linked, "host 3 should be linked to host 1 (segment a): \(described(before))\(logs(daemons))")
        #expect(try peers(e2e, lab.socket(2)).isEmpty, "host 2 is alone on segment b")

        let ana = try signup(e2e, lab.socket(1), name: "Ana", role: "student", courses: "CS 490")
        let ben = try signup(e2e, lab.socket(2), name: "Ben", role: "tutor", courses: "CS 490")
        let (_, _, anaOn3) = labPoll(timeout: .seconds(30), { hasCard(e2e, lab.socket(3), ana, courses: ["CS 490"]) }, until: { $0 })
        #expect(anaOn3, "Ana's card should reach host 3 on segment a\(logs(daemons))")
        #expect(!hasCard(e2e, lab.socket(3), ben, courses: ["CS 490"]), "Ben's card cannot reach segment a")
        let statusBefore = try mmJSON(e2e, ["status"], lab.socket(3))
        #expect(statusBefore["network"]?["changedAt"] == .null && statusBefore["network"]?["changes"]?.intValue == 0, "\(statusBefore)")

        try lab.lab(["move", "3", "b"])
        let moved = ContinuousClock.now

        // Ben's card (host 2) reaches host 3 within a few seconds.
        let (_, benAfter, benOn3) = labPoll(timeout: .seconds(30), interval: .milliseconds(100),
                                            { hasCard(e2e, lab.socket(3), ben, courses: ["CS 490"]) }, until: { $0 })
        let caughtUp = ContinuousClock.now - moved
        #expect(benOn3, "Ben's card should reach host 3 after it moved to segment b\(logs(daemons))")
        #expect(caughtUp < .seconds(10), "host 3 caught up \(caughtUp) after the move; the goal is a few seconds")
        print("roaming lab: host 3 moved to segment b -> Ben's card (host 2) readable on host 3 after \(caughtUp) (\(benAfter) polling)")

        // The old link is gone, the new one is up, and the peers list says so.
        let (after, _, swapped) = try labPoll(timeout: .seconds(10), { try peers(e2e, lab.socket(3)) }, until: { list in
            list.count == 1 && list.first?["node"]?.stringValue == nodes[2]
        })
        #expect(swapped, "host 3 should list host 2 only: \(described(after))\(logs(daemons))")
        #expect((after.first?["address"]?.stringValue ?? "").hasPrefix("169.254.78.2:"), "\(described(after))")
        #expect(!logLines(daemons[3]!, level: "info", containing: ["sync with a peer ended", "the network changed", "169.254.77.3"]).isEmpty,
                "host 3 should close its link to host 1 because its address vanished\(logs([3: daemons[3]!]))")

        // status shows the change: the new address, when, how many.
        let status = try mmJSON(e2e, ["status"], lab.socket(3))
        let addresses = (status["network"]?["interfaces"]?.arrayValue ?? []).flatMap { $0["addresses"]?.strings ?? [] }
        #expect(addresses.contains("169.254.78.3") && !addresses.contains("169.254.77.3"), "\(status)")
        #expect((status["network"]?["changes"]?.intValue ?? 0) >= 1 && status["network"]?["changedAt"]?.intValue != nil, "\(status)")
        let text = try e2e.mm(["status"], socket: lab.socket(3)).stdout
        #expect(text.contains("169.254.78.3") && text.contains("network changed"), "\(text)")

        // And the laptop carried Ana's card to segment b.
        let (_, _, anaOn2) = labPoll(timeout: .seconds(30), { hasCard(e2e, lab.socket(2), ana, courses: ["CS 490"]) }, until: { $0 })
        #expect(anaOn2, "Ana's card should reach host 2 through host 3\(logs(daemons))")
    }

    /// Roaming on an IPv6-only network where the laptop has only its fe80:: address, which it
    /// keeps across the move: its link to host 1 cannot be told apart by address, but the carrier
    /// loss takes eth0's addresses away in the first reading, so the link is closed then (not
    /// 15–20 s later by keep-alives), and host 2 is found at `[fe80::…%eth0]` on segment b.
    @Test func laptopWithOnlyALinkLocalAddressMovedDropsTheOldLinkOnTheCarrierLoss() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "rol")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3, options: ["--ipv6-only", "--link-local-only", "1,2,3", "--segment-b", "2"])

        let (daemons, nodes) = try startDaemons(lab, e2e, hosts: 1...3, listen: "[::]:7000")
        let (before, _, linked) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(3)) }, until: { list in
            list.count == 1 && list.first?["node"]?.stringValue == nodes[1]
        })
        #expect(linked, "host 3 should be linked to host 1 (segment a): \(described(before))\(logs(daemons))")
        let ben = try signup(e2e, lab.socket(2), name: "Ben", role: "tutor", courses: "CS 490")
        let fe80of3 = try linkLocal(lab, 3)

        try lab.lab(["move", "3", "b"])
        let moved = ContinuousClock.now
        let (_, _, benOn3) = labPoll(timeout: .seconds(30), interval: .milliseconds(100),
                                     { hasCard(e2e, lab.socket(3), ben, courses: ["CS 490"]) }, until: { $0 })
        let caughtUp = ContinuousClock.now - moved
        #expect(benOn3 && caughtUp < .seconds(10), "Ben's card should reach host 3 within a few seconds of the move (\(caughtUp))\(logs(daemons))")
        print("roaming lab (fe80:: only): host 3 moved to segment b -> Ben's card readable on host 3 after \(caughtUp)")

        let (after, _, swapped) = try labPoll(timeout: .seconds(5), { try peers(e2e, lab.socket(3)) }, until: { list in
            list.count == 1 && list.first?["node"]?.stringValue == nodes[2]
        })
        #expect(swapped && (after.first?["address"]?.stringValue ?? "").hasPrefix("[fe80:") && (after.first?["address"]?.stringValue ?? "").contains("%eth0]:"),
                "host 3 should list host 2 only, at its scoped fe80:: address, well before keep-alives would end the old link: \(described(after))\(logs([3: daemons[3]!]))")
        #expect(!logLines(daemons[3]!, level: "info", containing: ["sync with a peer ended", "the network changed", fe80of3]).isEmpty,
                "the old link should be closed for the network change\(logs([3: daemons[3]!]))")
        let status = try mmJSON(e2e, ["status"], lab.socket(3))
        let addresses = (status["network"]?["interfaces"]?.arrayValue ?? []).flatMap { $0["addresses"]?.strings ?? [] }
        #expect(addresses == ["\(fe80of3)%eth0"] && (status["network"]?["changes"]?.intValue ?? 0) >= 1, "\(status)")
    }
}
