import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 19 item 2 in the multi-host lab (`scripts/lab`, `Support/LabHosts.swift`): hubs
/// (`mentormated --hub`) and wide-area DNS-SD, with real daemons, real Avahi and a real
/// authoritative DNS server (nsd, `scripts/lab up --wide-area`). Each test builds its own lab under
/// its own prefix and tears it down in a `defer` — every daemon by its PID, then `scripts/lab down`
/// — also when it fails. Needs root and nsd; fails (never skips) without them, saying why.
@Suite(.serialized, .tags(.multiProcess, .root)) struct HubLabTests {
    static let domain = "campus.test"

    /// The zone a campus DNS administrator writes for two hubs (the example of OPERATIONS.md,
    /// "Wide-area DNS-SD"): hub-a on segment a (host 1), hub-b on segment b (host 3).
    static let zone = """
        $ORIGIN campus.test.
        $TTL 60
        @                       IN SOA ns.campus.test. hostmaster.campus.test. ( 1 3600 600 86400 60 )
                                IN NS  ns.campus.test.
        ns                      IN A   169.254.77.254
        ; DNS-SD (RFC 6763 §11): browse this domain.
        b._dns-sd._udp          IN PTR @
        lb._dns-sd._udp         IN PTR @
        ; The MentorMate hubs: one PTR each, then its SRV (port, host), TXT and address.
        _mentormate._tcp        IN PTR hub-a._mentormate._tcp
        _mentormate._tcp        IN PTR hub-b._mentormate._tcp
        hub-a._mentormate._tcp  IN SRV 0 0 7000 hub-a
        hub-a._mentormate._tcp  IN TXT "v=1" "hub=1"
        hub-b._mentormate._tcp  IN SRV 0 0 7000 hub-b
        hub-b._mentormate._tcp  IN TXT "v=1" "hub=1"
        hub-a                   IN A   169.254.77.1
        hub-b                   IN A   169.254.78.3

        """

    func peers(_ e2e: E2E, _ socket: String) throws -> [JSON] {
        try mmJSON(e2e, ["peers"], socket)["peers"]?.arrayValue ?? []
    }

    func described(_ list: [JSON]) -> String {
        list.map { "\($0["node"]?.stringValue?.prefix(12) ?? "?") via \($0["via"]?.stringValue ?? "?") at \($0["address"]?.stringValue ?? "?")\($0["hub"]?.boolValue == true ? " (hub)" : "")" }
            .joined(separator: "; ")
    }

    func logs(_ daemons: [Int: Daemon]) -> String {
        daemons.keys.sorted().map { "\n--- log of host \($0):\n\(daemons[$0]!.log.split(separator: "\n").suffix(60).joined(separator: "\n"))" }.joined()
    }

    func hasCard(_ e2e: E2E, _ socket: String, _ id: String, courses: [String]) -> Bool {
        (try? e2e.run(["profile", "show", id, "--json"], socket: socket))?.json?["courses"]?.strings == courses
    }

    /// Two segments with no multicast between them (a router forwards unicast only), a hub on
    /// each, and the campus DNS publishing both hubs in campus.test. No `--peer` anywhere:
    /// - the hubs find each other only through wide-area DNS-SD (mDNS does not cross) and link;
    /// - the ordinary nodes find their own segment's hub over mDNS and the other by DNS, list them
    ///   as hubs, and `status` shows the hubs linked and the domain browsed (host 2 from Avahi's
    ///   browse-domains, host 4 — whose Avahi recommends none — from `--browse-domain` only);
    /// - a hub refuses sign-up, naming --hub;
    /// - a card written on segment a (host 2) reaches segment b (host 4).
    @Test func aCardCrossesSegmentsThroughHubsFoundByWideAreaDNSSD() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "hwa")
        defer { #expect(throws: Never.self) { try lab.down() } }
        let zonePath = e2e.path("campus.test.zone")
        try Self.zone.write(toFile: zonePath, atomically: true, encoding: .utf8)
        // Host 4's Avahi recommends no domain (no browse-domains=, no search domain): only its
        // --browse-domain makes it browse campus.test.
        try lab.up(4, options: ["--segment-b", "3,4", "--wide-area", Self.domain, zonePath, "--wide-area-bare", "4"])

        var daemons: [Int: Daemon] = [:]
        let started = ContinuousClock.now
        let extra: [Int: [String]] = [1: ["--hub"], 2: [], 3: ["--hub"], 4: ["--browse-domain", Self.domain]]
        for host in 1...4 { daemons[host] = try lab.spawnDaemon(on: host, extra: extra[host]!) }
        for host in 1...4 { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        var nodes: [Int: String] = [:]
        for host in 1...4 { nodes[host] = try #require(try mmJSON(e2e, ["status"], lab.socket(host))["node"]?.stringValue) }

        // The hubs: each lists the other as a hub (found in campus.test: nothing else crosses).
        for (host, other) in [(1, 3), (3, 1)] {
            let (list, after, ok) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(host)) }, until: { list in
                list.contains { $0["node"]?.stringValue == nodes[other] && $0["hub"]?.boolValue == true }
            })
            #expect(ok, "hub \(host) should link to hub \(other) (wide-area DNS-SD): \(described(list))\(logs(daemons))")
            print("hub lab: hub \(host) linked to hub \(other) \(ContinuousClock.now - started) after the daemons started (\(after) polling)")
            let status = try mmJSON(e2e, ["status"], lab.socket(host))
            #expect(status["hub"]?["isHub"]?.boolValue == true, "\(status)")
        }
        // The ordinary nodes: linked to hubs, at most two, and they say so.
        for host in [2, 4] {
            let (list, _, ok) = try labPoll(timeout: .seconds(60), { try peers(e2e, lab.socket(host)) }, until: { list in
                list.contains { $0["hub"]?.boolValue == true }
            })
            #expect(ok, "node \(host) should link to a hub: \(described(list))\(logs(daemons))")
            let hubs = list.filter { $0["hub"]?.boolValue == true }
            #expect(hubs.count <= 2, "node \(host) links to at most 2 hubs: \(described(list))")
            let status = try mmJSON(e2e, ["status"], lab.socket(host))
            #expect((status["hub"]?["linked"]?.intValue ?? 0) >= 1 && status["hub"]?["isHub"]?.boolValue == false, "\(status)")
            #expect((status["browseDomains"]?.strings ?? []).contains("\(Self.domain)."), "node \(host) browses \(Self.domain): \(status)")
            let table = try e2e.mm(["peers"], socket: lab.socket(host)).stdout
            #expect(table.contains("ROLE") && table.contains(" hub "), "\(table)")
        }

        // Each ordinary node also reaches the other segment's hub, found only in campus.test:
        // host 2 through the domain its Avahi recommends, host 4 (whose Avahi recommends none,
        // checked here) through --browse-domain alone.
        let recommended = try lab.lab(["exec", "4", "avahi-browse", "-ptD"])
        #expect(!recommended.contains(Self.domain), "host 4's Avahi should recommend no domain: \(recommended)")
        for (host, far) in [(2, 3), (4, 1)] {
            let (list, _, ok) = try labPoll(timeout: .seconds(30), { try peers(e2e, lab.socket(host)) }, until: { list in
                list.contains { $0["node"]?.stringValue == nodes[far] && $0["hub"]?.boolValue == true }
            })
            #expect(ok, "node \(host) should link to hub \(far) on the other segment (wide-area DNS-SD): \(described(list))\(logs(daemons))")
        }

        // A hub holds no accounts.
        let refused = try e2e.run(["signup", "--email", "x@uni.edu", "--name", "X", "--role", "student"], socket: lab.socket(1))
        #expect(!refused.ok && refused.stderr.contains("--hub"), "\(refused)")

        // A card from segment a reaches segment b, relayed by the hubs.
        let written = ContinuousClock.now
        let account = try mmJSON(e2e, ["signup", "--email", "ana@uni.edu", "--name", "Ana", "--role", "student"], lab.socket(2))
        let ana = try #require(account["id"]?.stringValue)
        try e2e.mm(["profile", "set", "--courses", "CS 490"], socket: lab.socket(2))
        let (_, after, ok) = labPoll(timeout: .seconds(30), { hasCard(e2e, lab.socket(4), ana, courses: ["CS 490"]) }, until: { $0 })
        #expect(ok, "Ana's card (host 2, segment a) should reach host 4 (segment b)\(logs(daemons))")
        print("hub lab: Ana's card from segment a readable on segment b \(ContinuousClock.now - written) after signup began (\(after) polling)")
        // Both hubs hold it (they store and forward everything).
        for host in [1, 3] {
            #expect(hasCard(e2e, lab.socket(host), ana, courses: ["CS 490"]), "hub \(host) should hold Ana's card")
        }
    }

    /// One segment, one hub, eight ordinary nodes, all over mDNS. With the hub linked, each node
    /// keeps at most 2 links it dialled to other nodes (PROTOCOL.md §13.5): at most 16 links
    /// between ordinary nodes instead of the full mesh's 28, and `status` shows the nodes held
    /// back. When the hub stops, the nodes fall back to their own mesh (what was held is dialled)
    /// and a card still reaches every node.
    @Test func nodesPreferTheHubOverTheirOwnMeshAndFallBackWhenItGoes() throws {
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let lab = try LabHosts(e2e: e2e, tag: "hpr")
        defer { #expect(throws: Never.self) { try lab.down() } }
        let ordinary = Array(2...9)
        try lab.up(9)
        var daemons: [Int: Daemon] = [:]
        daemons[1] = try lab.spawnDaemon(on: 1, extra: ["--hub"])
        for host in ordinary { daemons[host] = try lab.spawnDaemon(on: host) }
        for host in 1...9 { try daemons[host]!.waitUntilServing(timeout: .seconds(60)) }
        let hubNode = try #require(try mmJSON(e2e, ["status"], lab.socket(1))["node"]?.stringValue)

        /// Links between ordinary nodes (each counted once) and whether every node lists the hub.
        func mesh() throws -> (links: Int, allOnHub: Bool, lists: [Int: [JSON]]) {
            var lists: [Int: [JSON]] = [:]
            for host in ordinary { lists[host] = try peers(e2e, lab.socket(host)) }
            let ends = lists.values.map { $0.filter { $0["hub"]?.boolValue != true }.count }.reduce(0, +)
            let allOnHub = lists.values.allSatisfy { $0.contains { $0["node"]?.stringValue == hubNode && $0["hub"]?.boolValue == true } }
            return (ends / 2, allOnHub, lists)
        }
        // Settled: every node on the hub, and the mesh no larger than the rule allows, for 3 s running.
        var settledSince: ContinuousClock.Instant?
        let (last, after, settled) = try labPoll(timeout: .seconds(90), interval: .milliseconds(500), { try mesh() }, until: { m in
            guard m.allOnHub && m.links <= 2 * ordinary.count else { settledSince = nil; return false }
            settledSince = settledSince ?? .now
            return ContinuousClock.now - settledSince! >= .seconds(3)
        })
        let lastLists = last.lists.keys.sorted().map { "\n  host \($0): \(described(last.lists[$0]!))" }.joined()
        #expect(settled, "with a hub, ordinary nodes should keep at most \(2 * ordinary.count) links among themselves (full mesh: 28); last: \(last.links) links, all on the hub: \(last.allOnHub); \(lastLists)\(logs(daemons))")
        print("hub lab: 8 nodes and a hub settled in \(after): \(last.links) links between ordinary nodes")
        var held: Int64 = 0
        for host in ordinary { held += try mmJSON(e2e, ["status"], lab.socket(host))["hub"]?["held"]?.intValue ?? 0 }
        #expect(held > 0, "some nodes found over mDNS should be held back while the hub is linked")
        #expect(!logLines(daemons[2]!, level: "info", containing: ["peer connected"]).isEmpty)

        // The hub goes: the nodes fall back to a mesh of their own and still carry a card everywhere.
        #expect(daemons[1]!.terminate() != nil, "the hub should stop on SIGTERM")
        let (fallback, _, meshAgain) = try labPoll(timeout: .seconds(60), interval: .milliseconds(500), { try mesh() }, until: { m in
            m.links > 2 * ordinary.count && m.lists.values.allSatisfy { !$0.contains { $0["hub"]?.boolValue == true } }
        })
        #expect(meshAgain, "without the hub the nodes should dial those they held: \(fallback.links) links\(logs(daemons))")
        let account = try mmJSON(e2e, ["signup", "--email", "ben@uni.edu", "--name", "Ben", "--role", "tutor"], lab.socket(2))
        let ben = try #require(account["id"]?.stringValue)
        try e2e.mm(["profile", "set", "--courses", "MA 101"], socket: lab.socket(2))
        for host in ordinary.dropFirst() {
            let (_, _, ok) = labPoll(timeout: .seconds(30), { hasCard(e2e, lab.socket(host), ben, courses: ["MA 101"]) }, until: { $0 })
            #expect(ok, "Ben's card should reach host \(host) over the mesh\(logs(daemons))")
        }
    }
}
