import Foundation
import MentorAPI
import Testing
@testable import MentorCLI

/// `peers` and `status` say which peers are hubs and whether this node is one (PROTOCOL.md §13.5).
@Suite struct HubFormatTests {
    @Test func peersShowTheRoleOfEachPeer() {
        let json: JSON = ["peers": [["node": "n1aaaaaaaaaaaaaaaa", "address": "169.254.77.9:7000", "via": "mdns", "since": 1_764_400_000_000, "hub": true],
                                    ["node": "n2bbbbbbbbbbbbbbbb", "address": "169.254.77.3:7000", "via": "incoming", "since": 1_764_400_000_000, "hub": false],
                                    ["node": "n3cccccccccccccccc", "address": "169.254.77.4:7000", "via": "config", "since": 1_764_400_000_000]]]
        let lines = ClientFormat.peers(json, in: TimeZone(identifier: "UTC")!).split(separator: "\n").map(String.init)
        #expect(lines[0].contains("ROLE"), "\(lines)")
        #expect(lines[1].contains("169.254.77.9:7000") && lines[1].contains(" hub "), "\(lines)")
        #expect(lines[2].contains(" node ") && !lines[2].contains(" hub "), "\(lines)")
        #expect(lines[3].contains(" node "), "an older daemon's peer (no hub field) is an ordinary node: \(lines)")
    }

    @Test func statusSaysWhenThisNodeIsAHubAndWhichHubsItUses() {
        let hub: JSON = ["node": "n1", "peers": 3, "hub": ["isHub": true, "linked": 1, "held": 0], "browseDomains": ["campus.test."]]
        let text = ClientFormat.status(hub)
        #expect(text.contains("role") && text.contains("hub (no accounts"), "\(text)")
        #expect(text.contains("hubs") && text.contains("1 linked"), "\(text)")
        #expect(text.contains("browse domains") && text.contains("campus.test."), "\(text)")
        let node: JSON = ["node": "n2", "peers": 3, "hub": ["isHub": false, "linked": 1, "held": 4]]
        let plain = ClientFormat.status(node)
        #expect(!plain.contains("role"), "\(plain)")
        #expect(plain.contains("1 linked; 4 nearby nodes not dialled"), "\(plain)")
        let mesh: JSON = ["node": "n3", "peers": 3, "hub": ["isHub": false, "linked": 0, "held": 0]]
        #expect(!ClientFormat.status(mesh).contains("hubs"))
    }
}
