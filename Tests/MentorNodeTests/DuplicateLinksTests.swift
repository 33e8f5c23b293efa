import MentorCrypto
import Testing
@testable import MentorNode

/// Two links between the same two nodes: both ends close the same one, whatever order they see
/// them established in (PROTOCOL.md §13.3).
@Suite struct DuplicateLinksTests {
    let a = try! SigningPublicKey(bytes: [UInt8](repeating: 1, count: 32))
    let b = try! SigningPublicKey(bytes: [UInt8](repeating: 2, count: 32))

    /// The link `node` closes of the two between `node` and `peer`: "dialled by a" or "dialled by b".
    func closed(at node: SigningPublicKey, peer: SigningPublicKey, firstDialledBy first: SigningPublicKey) -> SigningPublicKey {
        let second = first == node ? peer : node
        let loser = DuplicateLinks.loser(me: node, peer: peer, newDialledByMe: second == node, oldDialledByMe: first == node)
        return loser == .new ? second : first   // the dialler of the closed link
    }

    @Test func bothEndsCloseTheLinkWhoseInitiatorHasTheLargerKey() {
        #expect(a < b)
        for first in [a, b] {
            #expect(closed(at: a, peer: b, firstDialledBy: first) == b)
            #expect(closed(at: b, peer: a, firstDialledBy: first) == b)
        }
    }

    @Test func twoLinksDialledByTheSameSideKeepTheOlder() {
        #expect(DuplicateLinks.loser(me: a, peer: b, newDialledByMe: true, oldDialledByMe: true) == .new)
        #expect(DuplicateLinks.loser(me: a, peer: b, newDialledByMe: false, oldDialledByMe: false) == .new)
        #expect(DuplicateLinks.loser(me: b, peer: a, newDialledByMe: true, oldDialledByMe: true) == .new)
    }
}
