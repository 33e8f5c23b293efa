import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 5's tests in the multi-host lab (`scripts/lab`, see `Support/LabHosts.swift`): real
/// `mentormated` daemons on hosts that each have their own network namespace, D-Bus and
/// avahi-daemon, given no `--peer` at all, and driven by the real `mentormate` client. Each test
/// builds its own lab under its own prefix and tears it down in a `defer`, also when it fails.
/// Every wait is a poll with a generous timeout (the machine is shared and loaded); the figures
/// seen are printed. Needs root; fails (never skips) without it or without network namespaces.
@Suite(.serialized, .tags(.multiProcess, .root)) struct MDNSLabTests {
    // MARK: Helpers

    struct Digest: Hashable, CustomStringConvertible {
        let digest: String, records: Int64
        var description: String { "\(digest.prefix(12))… (\(records) records)" }
    }

    func digest(_ socket: String) throws -> Digest {
        let client = try RPCClient(path: socket, timeout: .seconds(15))
        defer { client.close() }
        let r = try client.call("replica.digest")
        return Digest(digest: r["digest"]?.stringValue ?? "", records: r["records"]?.intValue ?? -1)
    }

    /// `mentormate peers --json` on `socket`: the list.
    func peers(_ e2e: E2E, _ socket: String) throws -> [JSON] {
        try mmJSON(e2e, ["peers"], socket)["peers"]?.arrayValue ?? []
    }

    /// Peer entries as "NODE via VIA from HOST" (the address's port differs for incoming links).
    func described(_ list: [JSON]) -> [String] {
        list.map { p in
            "\(p["node"]?.stringValue?.prefix(12) ?? "?") via \(p["via"]?.stringValue ?? "?") at \(p["address"]?.stringValue ?? "?")"
        }
    }

    func host(of peer: JSON) -> String { String(peer["address"]?.stringValue?.split(separator: ":").first ?? "") }

    /// `mentormate feed --json` on `socket`: the cards.
    func feed(_ e2e: E2E, _ socket: String) throws -> [JSON] {
        try mmJSON(e2e, ["feed"], socket)["cards"]?.arrayValue ?? []
    }

    func card(_ cards: [JSON], _ id: String) -> JSON? { cards.first { $0["id"]?.stringValue == id } }

    func signup(_ e2e: E2E, _ socket: String, name: String, role: String, courses: String) throws -> String {
        let account = try mmJSON(e2e, ["signup", "--email", "\(name.lowercased())@uni.edu", "--name", name, "--role", role], socket)
        try e2e.mm(["profile", "set", "--courses", courses], socket: socket)
        return try #require(account["id"]?.stringValue)
    }

    func logs(_ daemons: [Int: Daemon]) -> String {
        daemons.keys.sorted().map { "\n--- log of host \($0):\n\(daemons[$0]!.log)" }.joined()
    }

    // MARK: Tests

    /// Four hosts, no `--peer`: each node lists the other three as found by mDNS (at their
    /// addresses); a card made on host 1 reaches the other three; Ana (host 1) and Ben (host 3)
    /// like each other and both nodes show the match; Ana's message reaches Ben, while Cy (host
    /// 2) and Dee (host 4), whose nodes hold the same sealed record, cannot read it.
    @Test func fourHostsWithoutPeersFindEachOtherOverMDNSAndCarryACardAMatchAndAChat() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "mdf")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(4)

        let started = ContinuousClock.now
        var daemons: [Int: Daemon] = [:]
        for host in 1...4 { daemons[host] = try lab.spawnDaemon(on: host) }
        for host in 1...4 { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        var nodes: [Int: String] = [:]
        for host in 1...4 {
            let status = try mmJSON(e2e, ["status"], lab.socket(host))
            nodes[host] = try #require(status["node"]?.stringValue)
            #expect(status["discovery"]?.stringValue == "on" || status["discovery"]?.stringValue == "starting", "host \(host): \(status)")
        }

        // Every node lists the other three, via mdns, each at its host's address. (A link that
        // another node dialled before this node's own browsing found that node shows as
        // "incoming" until it does, a moment later: so this waits for all three to say mdns.)
        for host in 1...4 {
            let expected = Set((1...4).filter { $0 != host }.map { nodes[$0]! })
            let (list, after, ok) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(host)) }, until: { list in
                Set(list.compactMap { $0["node"]?.stringValue }) == expected && list.count == 3
                    && list.allSatisfy { $0["via"]?.stringValue == "mdns" }
            })
            #expect(ok, "host \(host) should list the other three nodes, via mdns: \(described(list))\(logs(daemons))")
            for peer in list {
                let other = try #require(nodes.first { $0.value == peer["node"]?.stringValue }?.key)
                #expect(peer["via"]?.stringValue == "mdns", "host \(host): \(described([peer]))")
                #expect(self.host(of: peer) == LabHosts.address(other), "host \(host) reaches host \(other) at \(described([peer]))")
            }
            print("mdns lab: host \(host) lists the other three (via mdns) \(ContinuousClock.now - started) after the daemons started (\(after) of polling)")
        }

        // Ana (student) on host 1, Cy (tutor) on host 2, Ben (tutor) on host 3, Dee (student) on host 4: root on each.
        let ana = try signup(e2e, lab.socket(1), name: "Ana", role: "student", courses: "CS 490")
        let cy = try signup(e2e, lab.socket(2), name: "Cy", role: "tutor", courses: "ART 100")
        let ben = try signup(e2e, lab.socket(3), name: "Ben", role: "tutor", courses: "CS 490")
        let dee = try signup(e2e, lab.socket(4), name: "Dee", role: "student", courses: "MATH 221")

        // Ana's card (made on host 1) is readable on every other host.
        for host in 2...4 {
            let (shown, after, ok) = labPoll(timeout: .seconds(30), { (try? e2e.run(["profile", "show", ana, "--json"], socket: lab.socket(host)))?.json },
                                             until: { $0?["courses"]?.strings == ["CS 490"] })
            #expect(ok && shown?["name"]?.stringValue == "Ana", "Ana's card should reach host \(host): \(String(describing: shown))\(logs(daemons))")
            print("mdns lab: Ana's card readable on host \(host) after \(after) of polling")
        }
        // Ana's feed ranks Ben (shared course) before Cy, both nearby now (their nodes are linked).
        let (anaFeed, _, feedOK) = try labPoll(timeout: .seconds(30), { try feed(e2e, lab.socket(1)) }, until: { $0.count == 2 })
        #expect(feedOK && anaFeed.compactMap { $0["id"]?.stringValue } == [ben, cy], "Ana's feed: \(anaFeed)")
        #expect(anaFeed.allSatisfy { $0["nearby"]?.boolValue == true }, "Ben and Cy are on linked nodes: \(anaFeed)")

        // The like-match: both like; each node shows the match.
        try e2e.mm(["like", String(ben.prefix(12))], socket: lab.socket(1))
        let (_, _, benSeesAna) = labPoll(timeout: .seconds(30), { (try? e2e.run(["profile", "show", ana], socket: lab.socket(3)))?.ok == true },
                                         until: { $0 })
        #expect(benSeesAna)
        try e2e.mm(["like", String(ana.prefix(12))], socket: lab.socket(3))
        func matchIDs(_ host: Int) throws -> [String] {
            try mmJSON(e2e, ["matches"], lab.socket(host))["matches"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        let (onHost1, _, matched1) = try labPoll(timeout: .seconds(30), { try matchIDs(1) }, until: { $0 == [ben] })
        #expect(matched1, "Ana's matches on host 1: \(onHost1)\(logs(daemons))")
        let (onHost3, _, matched3) = try labPoll(timeout: .seconds(30), { try matchIDs(3) }, until: { $0 == [ana] })
        #expect(matched3, "Ben's matches on host 3: \(onHost3)\(logs(daemons))")
        #expect(try matchIDs(2).isEmpty && matchIDs(4).isEmpty, "Cy and Dee matched nobody")

        // Ana's message reaches Ben on host 3.
        let text = "Hi Ben, this is Ana on host 1: CS 490 on Monday?"
        try e2e.mm(["chat", String(ben.prefix(12)), text], socket: lab.socket(1))
        let (history, after, delivered) = try labPoll(timeout: .seconds(30), {
            try mmJSON(e2e, ["chat", String(ana.prefix(12))], lab.socket(3))["messages"]?.arrayValue ?? []
        }, until: { $0.contains { $0["text"]?.stringValue == text } })
        #expect(delivered, "Ben on host 3 should read Ana's message: \(history)\(logs(daemons))")
        #expect(history.first { $0["text"]?.stringValue == text }?["mine"]?.boolValue == false)
        print("mdns lab: Ana's message read by Ben on host 3 after \(after) of polling")

        // Every node holds the same records (the sealed ones too)...
        let (digests, _, converged) = try labPoll(timeout: .seconds(30), { try (1...4).map { try digest(lab.socket($0)) } },
                                                  until: { Set($0).count == 1 })
        #expect(converged, "digests: \(digests)")
        // ...but nobody else can read the conversation.
        for (host, who) in [(2, cy), (4, dee)] {
            let peek = try e2e.run(["chat", String(ana.prefix(12))], socket: lab.socket(host))
            #expect(!peek.stdout.contains(text) && !peek.stderr.contains(text), "account \(who.prefix(12)) on host \(host) read the chat: \(peek)")
            let feedThere = try feed(e2e, lab.socket(host))
            #expect(!feedThere.description.contains(text), "host \(host)'s feed shows the message: \(feedThere)")
        }
    }

    /// python-zeroconf on a host without Avahi browses and resolves our daemons' services (name,
    /// address, port 7000, TXT exactly `v=1`); then it advertises an impostor `_mentormate._tcp`
    /// service whose port answers with garbage: both daemons dial it, fail the handshake, store
    /// nothing (digests unchanged, no peer added), log it once at info and later attempts only
    /// at debug, redialling with growing delays.
    @Test func zeroconfWithoutAvahiResolvesOurServiceAndAnImpostorIsRefusedAndLoggedOnce() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let python = "/usr/bin/python3", helper = LabHosts.repository + "/scripts/lab-zeroconf.py"
        let check = try e2e.tool([python, "-c", "import zeroconf; print(zeroconf.__version__)"])
        try #require(check.status.exitCode == 0, "python-zeroconf is missing (\(check.output)); run `bash scripts/deps` (it installs python3-zeroconf)")
        let lab = try LabHosts(e2e: e2e, tag: "mdi")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3)
        try lab.lab(["avahi-stop", "2"])   // host 2: no Avahi, only python-zeroconf

        var daemons: [Int: Daemon] = [:]
        for host in [1, 3] { daemons[host] = try lab.spawnDaemon(on: host, extra: ["--log-level", "debug"]) }
        var names: [Int: String] = [:], nodes: [Int: String] = [:]
        for host in [1, 3] {
            try daemons[host]!.waitUntilServing(timeout: .seconds(60))
            let (status, _, on) = try labPoll(timeout: .seconds(30), { try mmJSON(e2e, ["status"], lab.socket(host)) },
                                              until: { $0["discovery"]?.stringValue == "on" && $0["mdnsName"]?.stringValue != nil })
            #expect(on, "host \(host)'s discovery: \(status)")
            names[host] = try #require(status["mdnsName"]?.stringValue)
            nodes[host] = try #require(status["node"]?.stringValue)
        }

        // Browse from host 2 with python-zeroconf.
        let browser = try lab.start(on: 2, [python, helper, "browse", "30", "--expect", "2"], name: "zeroconf-browse")
        for host in [1, 3] {
            let line = browser.waitForLine(timeout: .seconds(35)) { $0.contains("\"found\"") && $0.contains("\"\(names[host]!)\"") }
            let found = try #require(line.flatMap { JSON.parse(Array($0.utf8)) },
                                     "python-zeroconf on host 2 did not resolve host \(host)'s \"\(names[host]!)\": \(browser.outputSoFar)\nstderr: \(e2e.read(lab.errorPath("zeroconf-browse")))")
            #expect(found["addresses"]?.strings == [LabHosts.address(host)], "\(line!)")
            #expect(found["port"]?.intValue == 7000, "\(line!)")
            #expect(found["txt"] == ["v": "1"], "the TXT record is the protocol version and nothing else: \(line!)")
            print("mdns lab: python-zeroconf resolved \(line!)")
        }
        #expect(browser.wait(timeout: .seconds(10))?.exitCode == 0, "the zeroconf browser: \(browser.outputSoFar)")

        // Accounts on hosts 1 and 3, linked to each other; their digests, before the impostor.
        _ = try signup(e2e, lab.socket(1), name: "Ana", role: "student", courses: "CS 490")
        _ = try signup(e2e, lab.socket(3), name: "Ben", role: "tutor", courses: "CS 490")
        let (before, _, converged) = try labPoll(timeout: .seconds(30), { try [digest(lab.socket(1)), digest(lab.socket(3))] },
                                                 until: { $0[0] == $0[1] && $0[0].records == 6 })
        #expect(converged, "hosts 1 and 3 should sync: \(before)\(logs(daemons))")
        let peersBefore = try [1, 3].map { try peers(e2e, lab.socket($0)) }
        #expect(peersBefore.map(\.count) == [1, 1], "\(peersBefore.map(described))")

        // The impostor on host 2: a python socket server sending garbage, advertised as ours.
        let impostorAddress = LabHosts.address(2) + ":7100"
        let impostor = try lab.start(on: 2, [python, helper, "impostor", "MentorMate impostor", LabHosts.address(2), "7100", "garbage"],
                                     name: "impostor")
        #expect(impostor.waitForLine(timeout: .seconds(20)) { $0.contains("\"registered\"") } != nil, "impostor: \(impostor.outputSoFar)")
        // Each daemon tries it three times (refused for 2 s, then 4 s in between).
        let attempts = ContinuousClock.now
        func connections(from host: Int) -> Int {
            impostor.lines.filter { $0.contains("\"connection\"") && $0.contains("\"\(LabHosts.address(host)):") }.count
        }
        _ = impostor.waitForLine(timeout: .seconds(60)) { _ in connections(from: 1) >= 3 && connections(from: 3) >= 3 }
        #expect(connections(from: 1) >= 3 && connections(from: 3) >= 3,
                "both daemons should keep trying the impostor with backoff: \(impostor.outputSoFar)\(logs(daemons))")
        print("mdns lab: the impostor saw \(connections(from: 1)) and \(connections(from: 3)) connections from hosts 1 and 3 in \(ContinuousClock.now - attempts)")
        let times = impostor.lines.filter { $0.contains("\"connection\"") && $0.contains("\"\(LabHosts.address(1)):") }
            .compactMap { JSON.parse(Array($0.utf8))?["ms"]?.intValue }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 1500 }, "host 1 redialled the impostor in a tight loop: at \(times) ms")

        for host in [1, 3] {
            let daemon = daemons[host]!
            // The attempts after the first are logged at debug. (The third connection may be
            // seen before the daemon has read the garbage and logged it.)
            let (debug, _, _) = labPoll(timeout: .seconds(20), { logLines(daemon, level: "debug", containing: ["peer refused for a while", impostorAddress]) },
                                        until: { $0.count >= 2 })
            #expect(debug.count >= 2, "the repeated refusals should be logged at debug: \(debug)")
            // Only the first at info.
            let info = logLines(daemon, level: "info", containing: [impostorAddress])
            #expect(info.count == 1, "host \(host) should log the impostor once at info: \(info)\(logs(daemons))")
            #expect(info.allSatisfy { $0.contains("peer refused for a while") || $0.contains("peer handshake did not complete") }, "\(info)")
            #expect(logLines(daemon, level: "info", containing: ["peer connected", LabHosts.address(2)]).isEmpty)
        }
        // Nothing stored, no peer added.
        let after = try [digest(lab.socket(1)), digest(lab.socket(3))]
        #expect(after == before, "the impostor changed a replica: \(before) -> \(after)")
        let peersAfter = try [1, 3].map { try peers(e2e, lab.socket($0)) }
        #expect(peersAfter.map { $0.compactMap { $0["node"]?.stringValue } } == [[nodes[3]!], [nodes[1]!]],
                "\(peersAfter.map(described))")
        #expect(try mmJSON(e2e, ["status"], lab.socket(1))["health"]?.stringValue == "ok")

        impostor.send(SIGTERM)
        #expect(impostor.wait(timeout: .seconds(10))?.exitCode == 0, "the impostor did not stop cleanly: \(impostor.outputSoFar)")
    }

    /// Avahi on host 1 is stopped and started again: the links of hosts 1 and 2 stay (same peers,
    /// same `since`), host 1 logs the outage once at info while it retries (at debug), `status`
    /// says discovery is unavailable then on again, it registers under the same name, and a
    /// daemon started afterwards on a new host finds it over mDNS.
    @Test func avahiStoppedAndStartedAgainKeepsLinksLogsOnceReRegistersAndANewHostFindsIt() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "mda")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3)

        var daemons: [Int: Daemon] = [:]
        for host in [1, 2] { daemons[host] = try lab.spawnDaemon(on: host, extra: ["--log-level", "debug"]) }
        for host in [1, 2] { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        let node1 = try #require(try mmJSON(e2e, ["status"], lab.socket(1))["node"]?.stringValue)
        let node2 = try #require(try mmJSON(e2e, ["status"], lab.socket(2))["node"]?.stringValue)
        func linked(_ list: [JSON], _ node: String) -> Bool { list.contains { $0["node"]?.stringValue == node && $0["via"]?.stringValue == "mdns" } }
        // Linked both ways, and settled: both ends dial, and the duplicate link is closed within
        // a moment; take the lists once they stayed the same for 2 s.
        var history: [[[JSON]]] = []
        func reading() throws -> [[[JSON]]] {
            let now: [[JSON]] = [try peers(e2e, lab.socket(1)), try peers(e2e, lab.socket(2))]
            history.append(now)
            return Array(history.suffix(5))
        }
        func steady(_ last: [[[JSON]]]) -> Bool {
            guard last.count == 5, let first = last.first else { return false }
            return last.allSatisfy { $0 == first } && linked(first[0], node2) && linked(first[1], node1)
        }
        let (settled, _, ok) = try labPoll(timeout: .seconds(60), interval: .milliseconds(500), reading, until: steady)
        let p1: [JSON] = settled.last?[0] ?? [], p2: [JSON] = settled.last?[1] ?? []
        try #require(ok, "hosts 1 and 2 should link over mDNS and stay linked: \(described(p1)) / \(described(p2))\(logs(daemons))")
        let name1 = try #require(try mmJSON(e2e, ["status"], lab.socket(1))["mdnsName"]?.stringValue)
        // (Both ends dial each other at first and one duplicate link is closed: count from here.)
        let disconnects = [1, 2].map { logLines(daemons[$0]!, level: "info", containing: ["peer disconnected"]).count }

        // Avahi goes away on host 1.
        let stopped = ContinuousClock.now
        try lab.lab(["avahi-stop", "1"])
        let (down, downAfter, unavailable) = try labPoll(timeout: .seconds(20), { try mmJSON(e2e, ["status"], lab.socket(1)) },
                                                         until: { $0["discovery"]?.stringValue?.hasPrefix("unavailable") == true })
        #expect(unavailable, "host 1's status should say discovery is unavailable: \(down)")
        #expect(down["health"]?.stringValue == "degraded", "\(down)")
        print("mdns lab: host 1's status said \"\(down["discovery"]?.stringValue ?? "?")\" \(downAfter) after avahi-stop")
        // It retries (1 s, then 2 s later): the retries' failures are at debug only.
        let (_, _, retried) = labPoll(timeout: .seconds(30), { logLines(daemons[1]!, level: "debug", containing: ["service discovery is off"]).count },
                                      until: { $0 >= 2 })
        #expect(retried, "host 1 should retry while Avahi is away\(logs(daemons))")
        #expect(try peers(e2e, lab.socket(1)) == p1, "host 1's links changed while its Avahi was away")
        #expect(try peers(e2e, lab.socket(2)) == p2, "host 2's links changed while host 1's Avahi was away")

        // Avahi comes back: discovery on again, the same name registered.
        try lab.lab(["avahi-start", "1"])
        let (up, upAfter, on) = try labPoll(timeout: .seconds(90), { try mmJSON(e2e, ["status"], lab.socket(1)) },
                                            until: { $0["discovery"]?.stringValue == "on" && $0["mdnsName"]?.stringValue != nil })
        #expect(on, "host 1's discovery should be on again: \(up)\(logs(daemons))")
        #expect(up["mdnsName"]?.stringValue == name1 && up["health"]?.stringValue == "ok", "\(up)")
        print("mdns lab: host 1's discovery on again \(upAfter) after avahi-start (outage \(ContinuousClock.now - stopped) in all)")
        let off = logLines(daemons[1]!, level: "info", containing: ["service discovery is off"])
        #expect(off.count == 1, "the outage should be logged once at info: \(off)")
        #expect(logLines(daemons[1]!, level: "info", containing: ["service discovery is back on"]).count == 1)
        #expect(logLines(daemons[1]!, level: "info", containing: ["service registered", name1]).count == 2, "registered at start and again")
        #expect(try peers(e2e, lab.socket(1)) == p1, "host 1's links (and their since) should be unchanged")
        #expect(try peers(e2e, lab.socket(2)) == p2, "host 2's links (and their since) should be unchanged")
        #expect([1, 2].map { logLines(daemons[$0]!, level: "info", containing: ["peer disconnected"]).count } == disconnects,
                "a link closed during the outage\(logs(daemons))")

        // A daemon started now on host 3 finds host 1's (re-registered) service.
        let newStart = ContinuousClock.now
        let d3 = try lab.startDaemon(on: 3, extra: ["--log-level", "debug"])
        daemons[3] = d3
        let (p3, foundAfter, found) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(3)) }, until: { linked($0, node1) })
        #expect(found, "host 3 should find host 1: \(described(p3))\(logs(daemons))")
        #expect(!logLines(d3, level: "debug", containing: ["peer found over mDNS", "dnssd.instance=\"\(name1)\""]).isEmpty,
                "host 3 should have found host 1's instance \"\(name1)\" over mDNS\(logs(daemons))")
        print("mdns lab: a daemon started on host 3 linked to host 1 \(ContinuousClock.now - newStart) after its start (\(foundAfter) of polling)")
    }

    /// Host 3's link goes down: within the keep-alive silence timeout (15 s, ~20 s with the
    /// checks) it is no longer in `peers` on hosts 1 and 2 and Ben (who lives there) is no longer
    /// `nearby` in their feeds; records are written on both sides meanwhile; once its link is up
    /// it is linked again (via mdns), nearby again, and all three replicas converge.
    @Test func aHostWhoseLinkGoesDownLeavesPeersAndNearbyThenReturnsAndCatchesUp() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "mdl")
        defer { #expect(throws: Never.self) { try lab.down() } }
        try lab.up(3)

        var daemons: [Int: Daemon] = [:]
        for host in 1...3 { daemons[host] = try lab.spawnDaemon(on: host) }
        for host in 1...3 { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        var nodes: [Int: String] = [:]
        for host in 1...3 { nodes[host] = try #require(try mmJSON(e2e, ["status"], lab.socket(host))["node"]?.stringValue) }
        let ana = try signup(e2e, lab.socket(1), name: "Ana", role: "student", courses: "CS 490")
        let cy = try signup(e2e, lab.socket(2), name: "Cy", role: "student", courses: "CS 490")
        let ben = try signup(e2e, lab.socket(3), name: "Ben", role: "tutor", courses: "CS 490")
        _ = (ana, cy)

        func lists(_ host: Int, _ node: String) throws -> Bool {
            try peers(e2e, lab.socket(host)).contains { $0["node"]?.stringValue == node && $0["via"]?.stringValue == "mdns" }
        }
        func benNearby(_ host: Int) throws -> Bool? { card(try feed(e2e, lab.socket(host)), ben)?["nearby"]?.boolValue }
        for host in [1, 2] {
            let (_, _, linked) = try labPoll(timeout: .seconds(60), { try lists(host, nodes[3]!) }, until: { $0 })
            #expect(linked, "host \(host) should list host 3\(logs(daemons))")
            let (nearby, _, ok) = try labPoll(timeout: .seconds(30), { try benNearby(host) }, until: { $0 == true })
            #expect(ok, "Ben should be nearby in host \(host)'s feed: \(String(describing: nearby))")
        }

        // Host 3 leaves without a word.
        let left = ContinuousClock.now
        try lab.lab(["link-down", "3"])
        for host in [1, 2] {
            let (_, _, gone) = try labPoll(timeout: .seconds(45), { try lists(host, nodes[3]!) }, until: { !$0 })
            let elapsed = ContinuousClock.now - left
            #expect(gone, "host \(host) still lists host 3 \(elapsed) after its link went down\(logs(daemons))")
            #expect(elapsed < .seconds(30), "host \(host) noticed host 3 leaving only after \(elapsed)")
            let nearby = try benNearby(host)
            #expect(nearby == false, "Ben should no longer be nearby on host \(host): \(String(describing: nearby))")
            print("mdns lab: host \(host) dropped host 3 \(elapsed) after link-down; Ben nearby now: \(String(describing: nearby))")
        }
        #expect(try peers(e2e, lab.socket(1)).compactMap { $0["node"]?.stringValue } == [nodes[2]!], "hosts 1 and 2 stay linked")

        // Records written on both sides of the partition.
        try e2e.mm(["profile", "set", "--bio", "written on host 1 while host 3 was away"], socket: lab.socket(1))
        try e2e.mm(["profile", "set", "--bio", "written on host 3 while it was away"], socket: lab.socket(3))
        try e2e.mm(["profile", "set", "--wage", "30"], socket: lab.socket(3))

        // It comes back: found again, nearby again, caught up.
        let back = ContinuousClock.now
        try lab.lab(["link-up", "3"])
        for host in [1, 2] {
            let (_, _, linked) = try labPoll(timeout: .seconds(90), { try lists(host, nodes[3]!) }, until: { $0 })
            #expect(linked, "host \(host) should list host 3 again\(logs(daemons))")
            print("mdns lab: host \(host) linked to host 3 again \(ContinuousClock.now - back) after link-up")
        }
        let (digests, _, converged) = try labPoll(timeout: .seconds(60), { try (1...3).map { try digest(lab.socket($0)) } },
                                                  until: { Set($0).count == 1 && $0[0].records == 12 })
        #expect(converged, "all three should hold the same 12 records (3 accounts × 3 — the card, the device certificate, the courses — then 3 more): \(digests)\(logs(daemons))")
        print("mdns lab: all three replicas equal (\(digests[0])) \(ContinuousClock.now - back) after link-up")
        for host in [1, 2] {
            let (nearby, _, ok) = try labPoll(timeout: .seconds(30), { try benNearby(host) }, until: { $0 == true })
            #expect(ok, "Ben should be nearby again on host \(host): \(String(describing: nearby))")
        }
        let benOn1 = try mmJSON(e2e, ["profile", "show", ben], lab.socket(1))
        #expect(benOn1["bio"]?.stringValue == "written on host 3 while it was away" && benOn1["wage"]?.intValue == 30, "\(benOn1)")
        let anaOn3 = try mmJSON(e2e, ["profile", "show", ana], lab.socket(3))
        #expect(anaOn3["bio"]?.stringValue == "written on host 1 while host 3 was away", "\(anaOn3)")
    }
}
