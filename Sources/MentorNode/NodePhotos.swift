import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

// `profile.photo.add|remove|order` (docs/API.md): each reads the caller's photo list as this
// node holds it and writes the changed list, on the node's queue, so two edits through this
// node never lose each other (a client computing the list from `profile.show` and sending it
// back could). A concurrent edit on another device of the account is a register conflict as
// for every card field (PROTOCOL.md §8.3): one list wins, the other shows in `conflicts`.
extension Node {
    func profilePhotoAdd(_ request: PhotoAddRequest, _ caller: Requester) throws -> Card {
        let ref = try uploadedPhoto(request.hash)
        var photos = try currentPhotos(caller)
        if let i = photos.firstIndex(where: { $0.hash == ref.hash }) {
            throw RPCError(.invalidValue, "that photo is already photo \(i + 1) of your card; each photo appears once")
        }
        guard photos.count < ProfileCard.maxPhotos else {
            throw RPCError(.limitReached, "your card has \(photos.count) photos, the most a card may have; "
                           + "remove one first (mentormate profile photo remove N)")
        }
        photos.append(ref)
        return try writePhotos(photos, caller)
    }

    func profilePhotoRemove(_ request: PhotoRemoveRequest, _ caller: Requester) throws -> Card {
        var photos = try currentPhotos(caller)
        guard let i = Int(exactly: request.index), photos.indices.contains(i - 1) else {
            throw RPCError(.invalidValue, "there is no photo \(request.index): \(Self.photoCount(photos.count))")
        }
        photos.remove(at: i - 1)
        return try writePhotos(photos, caller)
    }

    func profilePhotoOrder(_ request: PhotoOrderRequest, _ caller: Requester) throws -> Card {
        let photos = try currentPhotos(caller)
        guard !photos.isEmpty else {
            throw RPCError(.invalidValue, "your card has no photos to order; add some first (mentormate profile photo add FILE)")
        }
        let wanted = (1...photos.count).map(Int64.init)
        guard request.order.count == photos.count, request.order.sorted() == wanted else {
            let given = request.order.map(String.init).joined(separator: ",")
            throw RPCError(.invalidValue, "the order \"\(given)\" must list each of 1 to \(photos.count) once "
                           + "(\(Self.photoCount(photos.count))), e.g. \(wanted.reversed().map(String.init).joined(separator: ","))")
        }
        return try writePhotos(request.order.map { photos[Int($0) - 1] }, caller)
    }

    /// A photo the caller uploaded (`blob.put`) and this node holds, by its hex hash.
    func uploadedPhoto(_ hex: String) throws -> PhotoRef {
        guard let hash = Hex.decode(hex), hash.count == 32, let blob = try replica.blob(hash: hash) else {
            throw RPCError(.notFound, "no uploaded photo \(hex.prefix(16)); upload it first with blob.put (the client's `profile photo add` does)")
        }
        return blob.ref
    }

    /// The caller's photo list as the card's winning value holds it ([] when none).
    private func currentPhotos(_ caller: Requester) throws -> [PhotoRef] {
        try replica.card(of: try me(caller))?.card.photos ?? []
    }

    /// Writes a card edit that sets only the photo list, and returns the card.
    private func writePhotos(_ photos: [PhotoRef], _ caller: Requester) throws -> Card {
        let me = try me(caller)
        // The edit has seen every current entry of the card (PROTOCOL.md §8.3), as `profile.set`.
        let seen = try replica.cardClock(of: me)
        let card = ProfileCard(photos: photos)
        try write(caller.uid) { w, now throws(RecordError) in try w.profile(card, clock: seen, at: now) }
        guard let state = try replica.card(of: me) else { throw RPCError(.internalError, "card missing after write") }
        return shownCard(state)
    }

    private static func photoCount(_ n: Int) -> String {
        switch n {
        case 0: "your card has no photos"
        case 1: "your card has 1 photo"
        default: "your card has \(n) photos, numbered 1 to \(n)"
        }
    }
}

/// `Card.photo` and `Card.photos` (docs/API.md).
func apiPhoto(_ ref: PhotoRef) -> PhotoInfo {
    PhotoInfo(hash: Hex.encode(ref.hash), size: Int64(ref.size), type: ref.format.mimeType)
}
