import Dispatch
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorSystem
import Testing
@testable import MentorNode

/// Hubs (PROTOCOL.md §13.5): which links an ordinary node and a hub keep and dial
/// (`HubPreference`), the redialer holding and releasing instances for it, and the TXT key
/// that says an instance is a hub.
@Suite struct HubPreferenceTests {
    typealias Link = HubPreference.Link
    let t0 = ContinuousClock.now

    static func direct(_ serial: UInt64, established: Bool = true) -> Link {
        Link(serial: serial, hub: false, established: established, dialledInstance: true)
    }
    static func hub(_ serial: UInt64, established: Bool = true) -> Link {
        Link(serial: serial, hub: true, established: established, dialledInstance: true)
    }

    // MARK: The rule

    @Test func withoutAHubEveryInstanceIsDialledAndNothingIsSurplus() {
        let rule = HubPreference()
        let links = (1...6).map { Self.direct($0) }
        #expect(rule.mayDial(hub: false, links: links))
        #expect(rule.surplus(links).isEmpty)
    }

    @Test func aHubThatIsOnlyDialledDoesNotCountYet() {
        let rule = HubPreference()
        let links = [Self.hub(1, established: false)] + (2...5).map { Self.direct($0) }
        #expect(rule.mayDial(hub: false, links: links))
        #expect(rule.surplus(links).isEmpty)
    }

    @Test func withAHubLinkedTheTwoOldestDirectLinksStayAndTheRestAreSurplus() {
        let rule = HubPreference()
        let links = [Self.direct(4), Self.hub(9), Self.direct(2), Self.direct(7), Self.direct(3)]
        #expect(rule.surplus(links) == [4, 7])
        #expect(!rule.mayDial(hub: false, links: links))
        #expect(rule.mayDial(hub: true, links: links), "a second hub is dialled")
    }

    @Test func withAHubLinkedADirectLinkIsDialledWhileFewerThanTheLimitAreOpen() {
        let rule = HubPreference(maxDirect: 2)
        #expect(rule.mayDial(hub: false, links: [Self.hub(1), Self.direct(2)]))
        #expect(!rule.mayDial(hub: false, links: [Self.hub(1), Self.direct(2), Self.direct(3, established: false)]))
        #expect(HubPreference(maxDirect: 0).surplus([Self.hub(1), Self.direct(2)]) == [2])
    }

    @Test func staticAndIncomingLinksAreNeverSurplusNorCounted() {
        let rule = HubPreference()
        let incoming = (10...20).map { Link(serial: $0, hub: false, established: true, dialledInstance: false) }
        let links = [Self.hub(1), Self.direct(2)] + incoming
        #expect(rule.surplus(links).isEmpty)
        #expect(rule.mayDial(hub: false, links: links))
    }

    static func wideHub(_ serial: UInt64, established: Bool = true) -> Link {
        Link(serial: serial, hub: true, established: established, dialledInstance: true, local: false)
    }

    @Test func anOrdinaryNodeLinksToTwoHubsPreferringThoseOnItsSegment() {
        let rule = HubPreference(maxHubs: 2)
        #expect(rule.mayDial(hub: true, local: false, links: [Self.wideHub(1)]))
        #expect(!rule.mayDial(hub: true, local: false, links: [Self.hub(1), Self.wideHub(2)]), "a third hub is not dialled")
        #expect(!rule.mayDial(hub: true, local: true, links: [Self.hub(1), Self.hub(2)]))
        #expect(rule.mayDial(hub: true, local: true, links: [Self.hub(1), Self.wideHub(2)]),
                "a hub on this segment may displace one found by wide-area DNS-SD")
        // Three established: the wide-area one goes first, then the newest.
        #expect(rule.surplus([Self.wideHub(1), Self.hub(5), Self.hub(3)]) == [1])
        #expect(rule.surplus([Self.hub(1), Self.hub(5), Self.hub(3)]) == [5])
        // One only dialled does not push an established one out.
        #expect(rule.surplus([Self.wideHub(1), Self.wideHub(2), Self.hub(3, established: false)]).isEmpty)
    }

    @Test func hubsThatNeverCompleteAHandshakeDoNotKeepTheRealOnesAway() {
        let rule = HubPreference(maxHubs: 2)
        let fakes = [Self.hub(1, established: false), Self.hub(2, established: false), Self.wideHub(3, established: false)]
        #expect(rule.mayDial(hub: true, local: false, links: fakes))
        #expect(!HubPreference.hubLinked(fakes), "no hub counts until its handshake completes")
        #expect(rule.mayDial(hub: false, links: fakes + [Self.direct(4), Self.direct(5)]), "nor does the mesh rule start")
    }

    @Test func whenOneOfTwoHubsGoesOnlyTheHeldHubsAreReleased() {
        var r = Redialer(staticPeers: [])
        let hubSlot = try! #require(r.found(name: "hub3", peer: .init(host: "10.9.0.3", port: 7000), hub: true, now: t0).dial)
        let nodeSlot = try! #require(r.found(name: "node", peer: .init(host: "10.9.0.2", port: 7000), now: t0).dial)
        r.hold(hubSlot)
        r.hold(nodeSlot)
        let released = r.releaseHeld(now: t0, onlyHubs: true)
        #expect(released == [hubSlot])
        #expect(r.heldCount == 1, "the ordinary instance stays held while a hub remains")
    }

    @Test func aHubDialsEveryHub() {
        let rule = HubPreference(isHub: true)
        #expect(rule.mayDial(hub: true, local: false, links: (1...9).map { Self.wideHub($0) }))
        #expect(rule.surplus((1...9).map { Self.wideHub($0) }).isEmpty)
    }

    @Test func aHubDialsOnlyHubs() {
        let rule = HubPreference(isHub: true)
        #expect(!rule.mayDial(hub: false, links: []))
        #expect(rule.mayDial(hub: true, links: []))
        #expect(rule.surplus([Self.direct(3), Self.hub(1)]) == [3])
    }

    // MARK: The redialer holds and releases

    @Test func aHeldInstanceIsNotRedialledUntilReleasedAndThenAtOnce() {
        var r = Redialer(staticPeers: [])
        var random = SystemRandomNumberGenerator()
        let found = r.found(name: "peer", peer: .init(host: "169.254.77.3", port: 7000), now: t0)
        let slot = try! #require(found.dial)
        #expect(r.startDial(slot) != nil)
        r.adopted(slot, link: 1, host: "169.254.77.3")
        r.established(slot, link: 1, key: try! SigningPublicKey(bytes: [UInt8](repeating: 3, count: 32)), now: t0)
        r.hold(slot)
        r.closed(slot, link: 1, key: nil, wasEstablished: true, keyStillLinked: false, now: t0, refusedUntil: { _ in nil },
                 random: &random)
        #expect(r.targets[slot].dialAt == nil, "a held instance gets no redial when its link closes")
        #expect(r.heldCount == 1)
        // Found again (an mDNS re-announcement) while held and unchanged: still not dialled.
        let again = r.found(name: "peer", peer: .init(host: "169.254.77.3", port: 7000), now: t0)
        #expect(again.dial == nil)
        let released = r.releaseHeld(now: t0 + .seconds(1))
        #expect(released == [slot])
        #expect(r.targets[slot].dialAt == t0 + .seconds(1))
        #expect(r.heldCount == 0)
    }

    @Test func aLostInstanceIsNotReleased() {
        var r = Redialer(staticPeers: [])
        let slot = try! #require(r.found(name: "peer", peer: .init(host: "169.254.77.3", port: 7000), now: t0).dial)
        r.hold(slot)
        let lost = r.lost(name: "peer")
        #expect(lost)
        let released = r.releaseHeld(now: t0)
        #expect(released.isEmpty)
    }

    @Test func theHubFlagFollowsTheInstanceAndItsAddress() {
        var r = Redialer(staticPeers: [])
        let hubSlot = try! #require(r.found(name: "hub", peer: .init(host: "10.9.0.1", port: 7000), hub: true, now: t0).dial)
        let nodeSlot = try! #require(r.found(name: "node", peer: .init(host: "10.9.0.2", port: 7000), now: t0).dial)
        #expect(r.isHub(hubSlot) && !r.isHub(nodeSlot))
        #expect(r.isHubHost("10.9.0.1") && !r.isHubHost("10.9.0.2"))
        _ = r.lost(name: "hub")
        #expect(!r.isHubHost("10.9.0.1"), "an instance gone is no longer a hub's address")
    }

    // MARK: The scheduler asks the shell

    final class Shell: DialShell {
        var isStopped = false
        var allowDirect = true
        var connects: [Int] = []
        func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) {}
        func connect(_ peer: PeerManager.StaticPeer, slot: Int) { connects.append(slot) }
        func refusedUntil(_ host: String) -> ContinuousClock.Instant? { nil }
        func isLinked(_ key: SigningPublicKey) -> Bool { false }
        func mayDialInstance(hub: Bool, local: Bool) -> Bool { hub || allowDirect }
    }

    @Test func theSchedulerHoldsWhatTheRuleForbidsAndDialsItWhenReleased() {
        let shell = Shell()
        let dials = DialScheduler(staticPeers: [], settings: .init(), random: SystemRandomNumberGenerator(), logger: DiscardingLogger())
        dials.shell = shell
        shell.allowDirect = false
        _ = dials.found(name: "hub", address: PeerAddress(host: "10.9.0.1", port: 7000), hub: true)
        _ = dials.found(name: "node", address: PeerAddress(host: "10.9.0.2", port: 7000))
        #expect(shell.connects == [0], "the hub is dialled, the ordinary instance held")
        #expect(dials.heldCount == 1)
        shell.allowDirect = true
        #expect(dials.releaseHeld() == 1)
        #expect(shell.connects == [0, 1])
    }

    // MARK: TXT

    @Test func theHubKeyIsReadExactly() {
        #expect(TXTRecord.advertisement(hub: true).advertisesHub)
        #expect(!TXTRecord.advertisement(hub: false).advertisesHub)
        #expect(try! TXTRecord.advertisement(hub: true).encoded() == [3] + Array("v=1".utf8) + [5] + Array("hub=1".utf8))
        #expect(TXTRecord(decoding: [3] + Array("v=1".utf8) + [5] + Array("HUB=1".utf8)).advertisesHub, "keys ignore case")
        for other in ["hub=0", "hub", "hub=yes", "hub=", "hub=11", "hubs=1"] {
            #expect(!TXTRecord(decoding: [UInt8(other.utf8.count)] + Array(other.utf8)).advertisesHub, "\(other)")
        }
        // The first occurrence wins (RFC 6763 §6.4): a later hub=1 does not make a hub.
        #expect(!TXTRecord(decoding: [5] + Array("hub=0".utf8) + [5] + Array("hub=1".utf8)).advertisesHub)
        let instance = Discovery.Instance(name: "x", host: "h.", port: 1, addresses: [], txt: ["v": "1", "hub": "1"], interfaceIndex: 0)
        #expect(instance.isHub)
    }
}

/// A hub holds no accounts (PROTOCOL.md §13.5), and `hub`/`browse_domain` parse as documented.
@Suite struct HubNodeTests {
    @Test func aHubRefusesEveryAccountMethodNamingTheFlag() throws {
        let t = try TestNode { $0.hub = true }
        let calls: [(String, [String: JSON])] = [
            ("account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"]),
            ("account.login", [:]), ("account.login", ["passphrase": "x"]),
            ("account.import", ["file": "/nonexistent"]),
            ("device.link", [:]), ("device.approve", ["code": "ABCD-EFGH"]),
        ]
        for (method, params) in calls {
            let e = t.error(1001, method, params)
            #expect(e?.code == RPCError.Code.notAllowed.rawValue, "\(method): \(e?.message ?? "no error")")
            #expect(e?.message.contains("--hub") == true, "\(method): \(e?.message ?? "no error")")
        }
        #expect(try t.node.replica.nodeAccounts().isEmpty)
        // Everything else is as on any node.
        #expect((try t.call(1001, "status", [:]))["records"] != nil)
    }

    @Test func anOrdinaryNodeStillSignsUp() throws {
        let t = try TestNode()
        _ = try t.call(1001, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(try t.node.replica.nodeAccounts().count == 1)
    }

    /// `doctor` checks the open-files limit against the peer links allowed (a hub's 2,500), and
    /// `status` shows the hub facts the daemon reports.
    @Test func doctorChecksTheOpenFilesLimitAndStatusShowsTheHub() throws {
        let t = try TestNode { $0.hub = true }
        func check() throws -> JSON? {
            let checks = try t.call(0, "doctor", [:])["checks"]?.arrayValue ?? []
            return checks.first { $0["name"]?.stringValue == "open files limit" }
        }
        #expect(try check() == nil, "no check without a peer manager (max_peer_links 0)")
        let limit = try #require(FileLimit.current())
        var info = t.runtime.info
        info.maxPeerLinks = 16
        info.isHub = true
        info.heldInstances = 3
        info.browseDomains = ["campus.test."]
        t.runtime.info = info
        let ok = try #require(try check())
        #expect(ok["ok"]?.boolValue == (limit.soft >= 16 + 256), "\(ok)")
        info.maxPeerLinks = Int(min(limit.hard, 1 << 40)) + 1   // more than any limit allows
        t.runtime.info = info
        let low = try #require(try check())
        #expect(low["ok"]?.boolValue == false && (low["fix"]?.stringValue ?? "").contains("LimitNOFILE"), "\(low)")
        let status = try t.call(0, "status", [:])
        #expect(status["hub"]?["isHub"]?.boolValue == true && status["hub"]?["held"]?.intValue == 3, "\(status)")
        #expect(status["browseDomains"]?.arrayValue?.first?.stringValue == "campus.test.", "\(status)")
    }

    static func fresh(_ key: String, _ value: String) throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        try c.set(key, value)
    }

    @Test func hubAndBrowseDomainsParse() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        #expect(!c.hub && c.effectiveMaxPeerLinks == 256)
        try c.apply(file: "hub = yes\nbrowse_domain = Campus.Example.EDU\nbrowse_domain = lab.test., campus.example.edu\n", path: "x.conf")
        #expect(c.hub && c.effectiveMaxPeerLinks == 2_500)
        #expect(c.browseDomains == ["campus.example.edu.", "lab.test."])
        try c.set("max_peer_links", "3000")
        try c.set("max_peer_links_per_address", "600")
        #expect(c.effectiveMaxPeerLinks == 3000 && c.effectiveMaxPeerLinksPerAddress == 600)
        for bad in ["local", "local.", "", "a..b", "x y.edu", "-ok.but@no", String(repeating: "a", count: 64) + ".edu"] {
            #expect(throws: DaemonConfiguration.ValueError.self, "\(bad)") { try Self.fresh("browse_domain", bad) }
        }
        #expect(throws: DaemonConfiguration.ValueError.self) { try Self.fresh("hub", "maybe") }
        for n in 0..<10 { try? c.set("browse_domain", "d\(n).example.org") }
        #expect(c.browseDomains.count == DaemonConfiguration.maxBrowseDomains)
    }
}
