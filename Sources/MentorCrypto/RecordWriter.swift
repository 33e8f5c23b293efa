import MentorCore

/// Writes an account's records: signs each with the account key and numbers them 1, 2, 3…
/// (the caller persists `lastSeq` — the replica's contiguous seq of the author is the truth).
///
/// The account's first record must be its profile card carrying the network's proof of work
/// (PROTOCOL.md §6.1). Given `accountWork`, the writer searches for it itself when it writes
/// seq 1 (2^bits hashes on the calling thread: tools and tests); the node instead searches on
/// its work queue and hands the nonce in with the card (`ProfileCard.work`).
public struct RecordWriter: Sendable {
    public let keys: SigningKeyPair
    /// The account the records belong to: the signing key itself, or the account that
    /// certified it as a device (then every record is format version 2).
    public let account: PublicKey
    public private(set) var lastSeq: UInt64
    /// The network's requirement, when this writer is to meet it itself.
    public var accountWork: AccountWork.Requirement?
    /// The account's newest encryption key: with it, likes, messages and unmatches are sealed
    /// with version 2 (PROTOCOL.md §7.5), as every device must; without it, with the account's
    /// Ed25519 key (version 1: only the account key can).
    public var sealingKey: SealingKey?

    public init(keys: SigningKeyPair, account: PublicKey? = nil, lastSeq: UInt64 = 0, accountWork: AccountWork.Requirement? = nil) {
        self.keys = keys
        self.account = account ?? keys.publicKey.key
        self.lastSeq = lastSeq
        self.accountWork = accountWork
    }

    public var author: PublicKey { keys.publicKey.key }
    /// Whether this writer signs with a device key.
    public var isDevice: Bool { account != author }

    /// A card edit. `clock`: the account's other keys' writes the edit had seen (the clocks of
    /// the account's current card entries, PROTOCOL.md §8.3); the author itself is left out.
    public mutating func profile(_ card: ProfileCard, clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        var card = card
        if lastSeq == 0, !isDevice, card.work == nil, let requirement = accountWork, requirement.bits > 0 {
            card.work = AccountWork.solve(account: author, requirement: requirement)
        }
        let seen = VectorClock(clock.entries.filter { $0.key != author }.map { ($0.key, $0.seq) })
        return try next(.profile, body: card.validated().body, clock: seen, at: timestamp)
    }

    /// A like (or a withdrawal) of `target`; `peerSeq` is the highest seq of the target's records
    /// this account had applied. `to`: the target's newest encryption key, for version-2 sealing
    /// (nil: the X25519 form of its account key).
    /// `clock`: the clocks of the account's like entries for `target` the writer holds, so the
    /// new one supersedes them (§8.4); its own key is left out.
    public mutating func like(_ target: PublicKey, liked: Bool = true, peerSeq: UInt64 = 0, to key: [UInt8]? = nil,
                              clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(Like.self, LikePayload(target: target, liked: liked, peerSeq: peerSeq), to: key, clock: clock, at: timestamp)
    }

    /// A message to `recipient`, answering the recipient's like `answers` (its record ID), with
    /// `peerSeq` the highest seq of the recipient's records this account had applied.
    public mutating func chat(to recipient: PublicKey, peerSeq: UInt64, answers: [UInt8]?, mine: [UInt8]? = nil, text: String,
                              key: [UInt8]? = nil, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(ChatMessage.self, ChatPayload(recipient: recipient, peerSeq: peerSeq, answers: answers, mine: mine, text: text),
                   to: key, at: timestamp)
    }

    /// Ends the match of the likes `answers` (the target's) and `mine` (this account's).
    public mutating func unmatch(_ target: PublicKey, peerSeq: UInt64, answers: [UInt8]? = nil, mine: [UInt8]? = nil,
                                 to key: [UInt8]? = nil, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(Unmatch.self, UnmatchPayload(target: target, peerSeq: peerSeq, answers: answers, mine: mine), to: key, at: timestamp)
    }

    /// This account's contact text (empty: cleared) for `recipient`, in the match of the likes
    /// `answers` (the recipient's) and `mine` (this account's), whose purge tag it carries.
    public mutating func contact(to recipient: PublicKey, text: String, answers: [UInt8], mine: [UInt8],
                                 key: [UInt8]? = nil, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try sealed(Contact.self, ContactPayload(recipient: recipient, text: text, answers: answers, mine: mine), to: key, at: timestamp)
    }

    /// Certifies `device` as one of this account's devices (the account key only).
    public mutating func certify(_ certificate: DeviceCertificate, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        try next(.device, body: certificate.body, at: timestamp)
    }

    /// Certifies `device` with the account's encryption keys of epochs 1 … `epoch` (derived
    /// from the account key, PROTOCOL.md §7.5) in a box for it.
    public mutating func certify(_ device: PublicKey, label: String, expires: UInt64? = nil, epoch: UInt32, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let keyring = AccountKeyring.derived(from: keys, epochs: 1...max(epoch, 1))
        let cert: DeviceCertificate
        do {
            guard let current = keyring.current else { throw CryptoError(.invalidParameters, "no encryption key") }
            cert = DeviceCertificate(device: device, label: label, created: timestamp, expires: expires,
                                     encryptionKey: EncryptionKey(epoch: current.epoch, publicKey: current.publicKey),
                                     keyring: try keyring.box(for: device, of: account))
        } catch {
            throw RecordError(.invalidBody, "cannot certify device \(device.shortID)…: its key is not a usable Ed25519 key (\(error))")
        }
        return try certify(cert, at: timestamp)
    }

    /// Revokes `device` (the account key), or — with `device` this writer's own key — itself,
    /// naming this record's seq as its last. The account key rotates the encryption key: with
    /// `rotateTo` (the next epoch) and the devices that stay, each gets the new key in a grant.
    public mutating func revoke(_ device: PublicKey, lastSeq: UInt64, rotateTo epoch: UInt32? = nil, keeping devices: [PublicKey] = [],
                                at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        let last = device == author ? self.lastSeq + 1 : lastSeq
        var revocation = DeviceRevocation(device: device, lastSeq: last)
        if let epoch, !isDevice {
            let keyring = AccountKeyring.derived(from: keys, epochs: epoch...epoch)
            do {
                guard let current = keyring.current else { throw CryptoError(.invalidParameters, "no encryption key") }
                var grants: [(device: PublicKey, box: [UInt8])] = []
                for d in devices where d != device && grants.count < Limits.maxDevicesPerAccount {
                    grants.append((d, try keyring.grant(epoch: epoch, for: d, of: account)))
                }
                revocation.rotation = (EncryptionKey(epoch: epoch, publicKey: current.publicKey), grants)
            } catch {
                throw RecordError(.invalidBody, "cannot rotate the encryption key: \(error)")
            }
        }
        return try next(.revoke, body: revocation.body, at: timestamp)
    }

    /// A note to this account itself (a pass, or its undoing), sealed with its encryption key.
    /// Follows `target`, or stops following it (public, PROTOCOL.md §6.5).
    public mutating func follow(_ target: PublicKey, following: Bool = true, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        guard target != account else { throw RecordError(.invalidBody, "an account cannot follow itself") }
        return try next(.follow, body: Follow(target: target, following: following).body, at: timestamp)
    }

    public mutating func note(_ payload: NotePayload, at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        guard let sealingKey else {
            throw RecordError(.invalidBody, "a note is sealed with the account's encryption key, and this writer has none")
        }
        let note: Note
        do { note = try NoteBox.seal(payload, with: sealingKey) } catch {
            throw RecordError(.invalidBody, "cannot seal a note: \(error.message)")
        }
        return try next(.note, body: note.body, at: timestamp)
    }

    public mutating func sealed<S: SealedRecordSchema>(_ schema: S.Type, _ payload: S.Payload, to key: [UInt8]? = nil,
                                                       clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        guard payload.counterpart != account else {
            throw RecordError(.invalidBody, "an account cannot send a \(S.name) to itself")
        }
        let body: S
        do {
            if let sealingKey {
                let theirKey = try key ?? X25519.publicKey(fromEd25519: SigningPublicKey(bytes: payload.counterpart.bytes))
                body = try S.seal(payload, with: sealingKey, to: theirKey)
            } else {
                guard !isDevice else {
                    throw CryptoError(.invalidParameters, "a device seals with the account's encryption key, and this writer has none")
                }
                body = try S.seal(payload, from: keys)
            }
        } catch {
            throw RecordError(.invalidBody, "cannot seal a \(S.name) to \(payload.counterpart.shortID)…: \((error as? CryptoError)?.message ?? "\(error)")")
        }
        let seen = VectorClock(clock.entries.filter { $0.key != author }.map { ($0.key, $0.seq) })
        return try next(S.type, body: body.body, clock: seen, at: timestamp)
    }

    /// Signs the next record; `lastSeq` advances only if signing succeeded.
    public mutating func next(_ type: RecordType, body: [UInt8], clock: VectorClock = VectorClock(), at timestamp: UInt64) throws(RecordError) -> VerifiedRecord {
        if lastSeq == 0, !isDevice, type != .profile, let requirement = accountWork, requirement.bits > 0 {
            throw RecordError(.insufficientWork, "an account's first record must be its profile card, with proof of work; write the card first")
        }
        let v = try VerifiedRecord.sign(type: type, by: keys, for: isDevice ? account : nil, seq: lastSeq + 1,
                                        timestamp: timestamp, clock: clock, body: body)
        lastSeq += 1
        return v
    }
}
