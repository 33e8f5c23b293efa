import MentorCrypto

/// Two links to one node collapse to one (PROTOCOL.md §13.3; both ends of a pair dial, and an
/// mDNS instance may be found at two addresses). Both ends must close the same link without a
/// word between them: the link whose initiator has the smaller node key is kept; when both
/// were dialled by the same side, the older one is kept.
enum DuplicateLinks {
    enum Loser: Sendable, Equatable {
        /// The link just established closes.
        case new
        /// The link that was there first closes.
        case old
    }

    /// Which of two links to the node `peer` closes, as seen by the node `me`: the one just
    /// established and the one that was there, each with whether `me` dialled it.
    static func loser(me: SigningPublicKey, peer: SigningPublicKey, newDialledByMe: Bool, oldDialledByMe: Bool) -> Loser {
        let newInitiator = newDialledByMe ? me : peer
        let oldInitiator = oldDialledByMe ? me : peer
        return newInitiator < oldInitiator ? .old : .new
    }
}
