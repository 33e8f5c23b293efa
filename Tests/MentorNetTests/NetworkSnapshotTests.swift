import Dispatch
import Synchronization
import MentorNet
import MentorSystem
import Testing

/// `NetworkSnapshot` and `NetworkMonitor`: which addresses count (up, with carrier, not loopback),
/// what vanished and appeared between two readings, and the first reading of the monitor.
@Suite struct NetworkSnapshotTests {
    static let reading = [
        InterfaceAddress(interface: "lo", address: "127.0.0.1", running: true, loopback: true),
        InterfaceAddress(interface: "eth0", address: "169.254.77.3", running: true, loopback: false),
        InterfaceAddress(interface: "eth0", address: "fe80::1%eth0", running: true, loopback: false),
        InterfaceAddress(interface: "wlan0", address: "10.1.2.3", running: false, loopback: false),
    ]

    @Test func onlyRunningNonLoopbackInterfacesCount() {
        let snapshot = NetworkSnapshot(Self.reading)
        #expect(snapshot.interfaces == ["eth0": ["169.254.77.3", "fe80::1%eth0"]])
        #expect(snapshot.description == "eth0 169.254.77.3 fe80::1%eth0")
        #expect(NetworkSnapshot().description == "no network")
    }

    @Test func aMoveShowsTheOldAddressVanishedAndTheNewOneAppeared() {
        let old = NetworkSnapshot(Self.reading)
        let new = NetworkSnapshot(interfaces: ["eth0": ["169.254.78.3", "fe80::1%eth0"]])
        let change = NetworkSnapshot.Change(old: old, new: new)
        #expect(change.vanished == ["169.254.77.3"])
        #expect(change.appeared == ["169.254.78.3"])
        // A link over the link-local address survives the move; one over the old address does not.
        #expect(new.holds("fe80::1%eth0") && !new.holds("169.254.77.3"))
        // Loopback and wildcard links never depend on the network.
        #expect(NetworkSnapshot().holds("127.0.0.5") && NetworkSnapshot().holds("::1") && NetworkSnapshot().holds("::"))
        // Carrier lost: every address of the interface vanishes.
        let offline = NetworkSnapshot.Change(old: old, new: NetworkSnapshot(interfaces: ["eth0": []]))
        #expect(offline.vanished == ["169.254.77.3", "fe80::1%eth0"] && offline.new.interfaces.isEmpty)
    }

    @Test func anAddressAddedIsAChangeButNotAMoveWhileAVanishedOneOrANewInterfaceIs() {
        let old = NetworkSnapshot(interfaces: ["eth0": ["fe80::1%eth0"]])
        #expect(!NetworkSnapshot.Change(old: old, new: NetworkSnapshot(interfaces: ["eth0": ["fd00::1", "fe80::1%eth0"]])).mayHaveMoved)
        #expect(NetworkSnapshot.Change(old: old, new: NetworkSnapshot(interfaces: ["eth0": ["fd00::1"]])).mayHaveMoved)
        #expect(NetworkSnapshot.Change(old: old, new: NetworkSnapshot(interfaces: ["eth0": ["fe80::1%eth0"], "wlan0": ["10.0.0.2"]])).mayHaveMoved)
    }

    @Test func theMonitorReportsEachDifferentReadingOnce() {
        let queue = DispatchQueue(label: "test.NetworkMonitor.changes")
        let readings = Mutex(Self.reading)
        nonisolated(unsafe) var changes: [NetworkSnapshot.Change] = []
        let read: @Sendable () throws(SystemError) -> [InterfaceAddress] = { readings.withLock { $0 } }
        let monitor = NetworkMonitor(queue: queue, read: read) { changes.append($0) }
        queue.sync {
            monitor.start()
            monitor.checkNow()
            readings.withLock { $0 = [InterfaceAddress(interface: "eth0", address: "169.254.78.3", running: true, loopback: false)] }
            monitor.checkNow()
            monitor.checkNow()
            monitor.stop()
        }
        #expect(changes.count == 1, "the same reading twice is one change")
        #expect(changes.first?.vanished == ["169.254.77.3", "fe80::1%eth0"] && changes.first?.appeared == ["169.254.78.3"])
    }

    @Test func theMonitorsFirstReadingIsItsStartingPointNotAChange() {
        let queue = DispatchQueue(label: "test.NetworkMonitor")
        nonisolated(unsafe) var changes = 0
        let monitor = NetworkMonitor(queue: queue, read: { Self.reading }) { _ in changes += 1 }
        let first = queue.sync { monitor.start() }
        #expect(first == NetworkSnapshot(Self.reading))
        queue.sync { monitor.stop() }
        #expect(changes == 0)
    }
}
