/// Following someone (type 12, PROTOCOL.md §6.5): public, one register per (follower, target).
/// The newest record of an account about a target says whether it follows (by timestamp, then
/// record ID, so every replica agrees in any order of arrival); counts are the same everywhere.
public struct Follow: RecordSchema, Equatable {
    public static let type = RecordType.follow
    public static let name = "follow"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.follow
    public enum Tag: UInt8, CaseIterable { case target = 1, following = 2 }

    public var target: PublicKey
    /// false: the account stops following `target`.
    public var following: Bool

    public init(target: PublicKey, following: Bool) { self.target = target; self.following = following }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "follow"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        target = try f.require(f.key(Tag.target.rawValue, "target", what: what), "target", what: what)
        let flag = try f.require(f.bytes(Tag.following.rawValue, "following", length: 1, what: what), "following", what: what)
        guard flag[0] <= 1 else { throw RecordError(.malformed, "follow flag must be 0 or 1, is \(flag[0])") }
        following = flag[0] == 1
    }

    /// An account does not follow itself.
    public static func validate(record: Record) throws(RecordError) {
        guard let follow = try? Follow(body: record.body), follow.target != record.account else {
            throw RecordError(.invalidBody, "an account cannot follow itself")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.target.rawValue, target.bytes)
        f.set(Tag.following.rawValue, [following ? 1 : 0])
        return f.encoded
    }
}
