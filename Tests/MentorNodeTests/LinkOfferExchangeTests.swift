import Foundation
import Testing
import MentorCore
import MentorCrypto
@testable import MentorNode

/// Device offers between two peer managers linked on loopback (PROTOCOL.md §13.8): an offer
/// made before the link comes up reaches the peer after its hello, a withdrawal reaches it, an
/// offer made while the link is up reaches it at once, and the link stays up throughout.
@Suite(.serialized) struct LinkOfferExchangeTests {
    typealias LinkedNode = PeerManagerWorkTests.LinkedNode

    /// Polls `condition` until it holds or 30 s pass; whether it held.
    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition(), ContinuousClock.now < deadline { usleep(10_000) }
        return condition()
    }

    @Test func anOfferReachesTheLinkedPeerBeforeAndWhileTheLinkIsUpAndItsWithdrawalToo() throws {
        let settings = PeerManager.Settings()
        let newMachine = try LinkedNode(settings: settings)
        let code = LinkCode.generate()
        let device = PublicKey(bytes: SigningKeyPair.generate().publicKey.bytes)!
        let offer = try LinkOffer.make(code: code, device: device, label: "laptop", expires: settings.now() + 300_000)
        newMachine.peers.offerLink(offer)

        let approver = try LinkedNode(dialing: [.init(host: "127.0.0.1", port: newMachine.port)], settings: settings)
        #expect(eventually { approver.peers.linkOffers(codeID: code.codeID) == [offer] }, "sent after the hello of a link that came up")
        #expect(try approver.peers.linkOffers(codeID: code.codeID).first?.matches(code) == true)
        #expect(newMachine.peers.linkOffers(codeID: code.codeID).isEmpty, "not echoed back")

        newMachine.peers.offerLink(nil)
        #expect(eventually { approver.peers.linkOffers(codeID: code.codeID).isEmpty }, "withdrawn")

        let second = LinkCode.generate()
        let again = try LinkOffer.make(code: second, device: device, label: "laptop", expires: settings.now() + 300_000)
        newMachine.peers.offerLink(again)
        #expect(eventually { approver.peers.linkOffers(codeID: second.codeID) == [again] }, "sent at once on the link that is up")
        #expect(approver.peers.peers.count == 1 && newMachine.peers.peers.count == 1, "no offence: the link stays")
    }
}
