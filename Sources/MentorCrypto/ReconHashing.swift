import MentorCore

extension ReconHash {
    /// The salted hashes of a sync session (`ReconHashing` for `SyncSession`), from the two
    /// hellos' salts: fingerprints and short IDs under `sessionSalt(mine, theirs)`.
    public static func hashing(mine: [UInt8], theirs: [UInt8]) -> ReconHashing {
        let salt = sessionSalt(mine, theirs)
        return ReconHashing(fingerprint: { fingerprint($0, salt: salt) }, shortID: { shortID($0, salt: salt) })
    }
}
