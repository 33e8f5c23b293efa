/// The requests of `profile.photo.add|remove|order` (docs/API.md): each edits the caller's
/// photo list as the node holds it when the request runs, and answers with the card.

/// Appends an uploaded photo (`blob.put`'s hash) to the end of the list.
public struct PhotoAddRequest: APIRequest, Equatable {
    public var hash: String
    public enum CodingKeys: String, CodingKey, CaseIterable { case hash }
    public init(hash: String) { self.hash = hash }
}

/// Removes the photo at `index` (1-based, as `profile show` numbers them).
public struct PhotoRemoveRequest: APIRequest, Equatable {
    public var index: Int64
    public enum CodingKeys: String, CodingKey, CaseIterable { case index }
    public init(index: Int64) { self.index = index }
}

/// Reorders the photos: `order` lists the current 1-based positions in their new order (a
/// permutation of 1...count); the first becomes the main photo.
public struct PhotoOrderRequest: APIRequest, Equatable {
    public var order: [Int64]
    public enum CodingKeys: String, CodingKey, CaseIterable { case order }
    public init(order: [Int64]) { self.order = order }
}
