/// An account's certificate for one of its device keys (PROTOCOL.md §6.2). Signed by the
/// account key itself (format version 1): only the account key makes a key speak for the
/// account. A device key then signs the account's everyday records (format version 2, which
/// names the account), until it is revoked or its certificate expires.
public struct DeviceCertificate: RecordSchema, Equatable {
    public static let type = RecordType.device
    public static let name = "device"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.devices

    public enum Tag: UInt8, CaseIterable { case device = 1, label = 2, created = 3, expires = 4, encryptionKey = 5, keyring = 6 }
    public static let maxLabelBytes = 64
    /// A box of a keyring for one device: 72 bytes of box around 1 + 36 × epochs.
    public static let keyringBoxRange = (72 + 1 + 36)...(72 + 1 + 36 * EncryptionKey.maxEpochs)

    /// The certified device key.
    public var device: PublicKey
    /// What the person calls the machine ("lab-3", "laptop"): 1 … 64 bytes of text.
    public var label: String
    /// When the account certified it (ms since the Unix epoch, the account's clock).
    public var created: UInt64
    /// After this time (ms) the device's records are refused everywhere; nil: never.
    public var expires: UInt64?
    /// The account's newest encryption key (PROTOCOL.md §7.5): what likes and messages to the
    /// account are sealed to.
    public var encryptionKey: EncryptionKey
    /// Every encryption key of the account, in a box only the device opens (`DeviceBox`).
    public var keyring: [UInt8]

    public init(device: PublicKey, label: String, created: UInt64, expires: UInt64? = nil,
                encryptionKey: EncryptionKey, keyring: [UInt8]) {
        self.device = device; self.label = label; self.created = created; self.expires = expires
        self.encryptionKey = encryptionKey; self.keyring = keyring
    }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "device certificate"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        device = try f.require(f.key(Tag.device.rawValue, "device key", what: what), "device key", what: what)
        label = try f.require(f.text(Tag.label.rawValue, "label", maxBytes: Self.maxLabelBytes, what: what), "label", what: what)
        guard !label.isEmpty else { throw RecordError(.invalidBody, "\(what) label is empty") }
        created = try f.require(f.u64(Tag.created.rawValue, "created", what: what), "created", what: what)
        expires = try f.u64(Tag.expires.rawValue, "expires", what: what)
        if let expires, expires <= created {
            throw RecordError(.invalidBody, "\(what) expires (\(expires)) no later than it was created (\(created))")
        }
        encryptionKey = try EncryptionKey(f.require(f[Tag.encryptionKey.rawValue], "encryption key", what: what), what: what)
        keyring = try f.require(f[Tag.keyring.rawValue], "keyring", what: what)
        guard Self.keyringBoxRange.contains(keyring.count), (keyring.count - 73) % 36 == 0 else {
            throw RecordError(.invalidBody, "\(what) keyring box is \(keyring.count) bytes; it must be 73 + 36 × epochs (1 … \(EncryptionKey.maxEpochs)) + 36")
        }
    }

    public static func validate(record: Record) throws(RecordError) {
        guard !record.isDeviceSigned else {
            throw RecordError(.invalidBody, "a device certificate must be signed by the account key itself, not by the device \(record.author.shortID)…")
        }
        let cert = try DeviceCertificate(body: record.body)
        guard cert.device != record.account else {
            throw RecordError(.invalidBody, "an account cannot certify its own key as one of its devices")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.device.rawValue, device.bytes)
        f.set(Tag.label.rawValue, text: label)
        f.set(Tag.created.rawValue, u64: created)
        if let expires { f.set(Tag.expires.rawValue, u64: expires) }
        f.set(Tag.encryptionKey.rawValue, encryptionKey.encoded)
        f.set(Tag.keyring.rawValue, keyring)
        return f.encoded
    }
}

/// One of an account's encryption keys, as records publish it: its epoch (1, 2, … — a new one
/// at each revocation that rotates) and its X25519 public key (PROTOCOL.md §7.5).
public struct EncryptionKey: Hashable, Sendable {
    public static let maxEpochs = 64
    public var epoch: UInt32
    public var publicKey: [UInt8]

    public init(epoch: UInt32, publicKey: [UInt8]) { self.epoch = epoch; self.publicKey = publicKey }

    /// `epoch u32 ‖ X25519 public 32`.
    public init(_ bytes: [UInt8], what: String) throws(RecordError) {
        guard bytes.count == 36 else { throw RecordError(.malformed, "\(what) encryption key must be 36 bytes, is \(bytes.count)") }
        var r = ByteReader(bytes)
        epoch = try r.u32("epoch")
        publicKey = try r.raw(32, "encryption key")
        guard epoch >= 1, epoch <= UInt32(Self.maxEpochs) else {
            throw RecordError(.invalidBody, "\(what) encryption key epoch \(epoch) is outside 1 … \(Self.maxEpochs)")
        }
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 36)
        w.u32(epoch); w.raw(publicKey)
        return w.bytes
    }
}

/// The end of a device key (PROTOCOL.md §6.2): the device's records with a seq above
/// `lastSeq` are refused everywhere, and any of them a replica already holds are removed.
/// Signed by the account key (any of its devices, `lastSeq` = the highest seq of the device the
/// account had seen), or by the device itself (`logout --forget`: `lastSeq` is the seq of this
/// very record).
public struct DeviceRevocation: RecordSchema, Equatable {
    public static let type = RecordType.revoke
    public static let name = "revoke"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.devices

    public enum Tag: UInt8, CaseIterable { case device = 1, lastSeq = 2, encryptionKey = 3, grants = 4 }
    /// A grant: the device key and a `DeviceBox` of `epoch u32 ‖ secret 32`.
    public static let grantLength = 32 + 72 + 36

    public var device: PublicKey
    /// The device's records up to this seq stay valid; later ones are refused.
    public var lastSeq: UInt64
    /// The account's next encryption key, which the revoked device never receives, and its
    /// secret boxed for each of the account's other current devices (account-signed only).
    public var rotation: (key: EncryptionKey, grants: [(device: PublicKey, box: [UInt8])])?

    public init(device: PublicKey, lastSeq: UInt64, rotation: (key: EncryptionKey, grants: [(device: PublicKey, box: [UInt8])])? = nil) {
        self.device = device; self.lastSeq = lastSeq; self.rotation = rotation
    }

    public static func == (a: DeviceRevocation, b: DeviceRevocation) -> Bool { a.body == b.body }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "revocation"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        device = try f.require(f.key(Tag.device.rawValue, "device key", what: what), "device key", what: what)
        lastSeq = try f.require(f.u64(Tag.lastSeq.rawValue, "last seq", what: what), "last seq", what: what)
        guard lastSeq <= Limits.maxSeq else {
            throw RecordError(.invalidBody, "\(what) last seq \(lastSeq) is above the maximum \(Limits.maxSeq)")
        }
        switch (f[Tag.encryptionKey.rawValue], f[Tag.grants.rawValue]) {
        case (nil, nil):
            rotation = nil
        case (let key?, let grants?):
            guard !grants.isEmpty, grants.count % Self.grantLength == 1,
                  Int(grants[0]) * Self.grantLength + 1 == grants.count, grants[0] <= UInt8(Limits.maxDevicesPerAccount) else {
                throw RecordError(.invalidBody, "\(what) grants must be a count (≤ \(Limits.maxDevicesPerAccount)) and that many \(Self.grantLength)-byte grants")
            }
            var list: [(device: PublicKey, box: [UInt8])] = []
            var offset = 1
            while offset < grants.count {
                guard let device = PublicKey(bytes: Array(grants[offset..<offset + 32])) else { throw RecordError(.malformed, "\(what) grant device") }
                guard list.last.map({ $0.device < device }) ?? true else {
                    throw RecordError(.malformed, "\(what) grants must be sorted by device key, each device once")
                }
                list.append((device, Array(grants[offset + 32..<offset + Self.grantLength])))
                offset += Self.grantLength
            }
            rotation = (try EncryptionKey(key, what: what), list)
        default:
            throw RecordError(.malformed, "\(what) has an encryption key without grants, or grants without a key")
        }
    }

    public static func validate(record: Record) throws(RecordError) {
        let revocation = try DeviceRevocation(body: record.body)
        guard revocation.device != record.account else {
            throw RecordError(.invalidBody, "an account key cannot be revoked; certify new devices and keep the account key safe instead")
        }
        if record.isDeviceSigned {
            guard revocation.rotation == nil else {
                throw RecordError(.invalidBody, "a device revoking itself cannot rotate the account's encryption key; the account key does that")
            }
            guard revocation.device == record.author else {
                throw RecordError(.invalidBody, "a device may revoke only itself; the account key revokes other devices")
            }
            guard revocation.lastSeq == record.seq else {
                throw RecordError(.invalidBody, "a device revoking itself at seq \(record.seq) must name that seq as its last, not \(revocation.lastSeq)")
            }
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.device.rawValue, device.bytes)
        f.set(Tag.lastSeq.rawValue, u64: lastSeq)
        if let rotation {
            f.set(Tag.encryptionKey.rawValue, rotation.key.encoded)
            f.set(Tag.grants.rawValue, [UInt8(rotation.grants.count)] + rotation.grants.sorted { $0.device < $1.device }.flatMap { $0.device.bytes + $0.box })
        }
        return f.encoded
    }
}

/// A note an account writes to itself (type 7, PROTOCOL.md §7.6): sealed with the account's
/// own encryption key, so only its devices read it. It carries passes ("swipe left") and blocks,
/// which must follow the person to every machine and reach nobody else.
public struct Note: RecordSchema, Equatable {
    public static let type = RecordType.note
    public static let name = "note"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.note
    public enum Tag: UInt8, CaseIterable { case senderKey = 1, box = 2 }
    /// nonce 24 ‖ ciphertext ‖ tag 16 around a payload of at most 64 bytes.
    public static let boxRange = (24 + 16 + 1)...(24 + 16 + 64)

    /// The account's encryption key (X25519 public) whose secret sealed it.
    public var senderKey: [UInt8]
    public var box: [UInt8]

    public init(senderKey: [UInt8], box: [UInt8]) { self.senderKey = senderKey; self.box = box }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "note"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        senderKey = try f.require(f.bytes(Tag.senderKey.rawValue, "sender key", length: 32, what: what), "sender key", what: what)
        box = try f.require(f[Tag.box.rawValue], "box", what: what)
        guard Self.boxRange.contains(box.count) else {
            throw RecordError(.invalidBody, "note box is \(box.count) bytes; must be \(Self.boxRange.lowerBound)...\(Self.boxRange.upperBound)")
        }
    }

    public var body: [UInt8] {
        var f = FieldList()
        f.set(Tag.senderKey.rawValue, senderKey)
        f.set(Tag.box.rawValue, box)
        return f.encoded
    }
}

/// What a note says (inside its box): a pass of `target` (field 2, `passed`) or a block of it
/// (field 3, `blocked`), or the undoing of either — exactly one of the two fields (§7.6).
public struct NotePayload: Equatable, Sendable {
    /// Which register of the account's about `target` the note writes: the field that carries
    /// its flag.
    public enum Kind: UInt8, Sendable { case pass = 2, block = 3, hidePost = 4 }
    public var target: PublicKey
    public var kind: Kind
    /// Passed (or blocked) when true; the undoing when false.
    public var flag: Bool

    public init(target: PublicKey, passed: Bool) { self.target = target; self.kind = .pass; self.flag = passed }
    public init(target: PublicKey, blocked: Bool) { self.target = target; self.kind = .block; self.flag = blocked }
    /// A post (field 1: its 32-byte ID) taken out of the account's own lists (field 4, §7.6).
    public init?(hidingPost post: [UInt8], hidden: Bool = true) {
        guard let id = PublicKey(bytes: post) else { return nil }
        self.target = id; self.kind = .hidePost; self.flag = hidden
    }

    public var passed: Bool { kind == .pass && flag }
    public var blocked: Bool { kind == .block && flag }

    public init(plaintext: [UInt8]) throws(RecordError) {
        let w = "note payload"
        let f = try FieldList.decode(plaintext, known: [1, 2, 3, 4], what: w)
        target = try f.require(f.key(1, "target", what: w), "target", what: w)
        let passed = try f.bytes(Kind.pass.rawValue, "passed", length: 1, what: w)
        let blocked = try f.bytes(Kind.block.rawValue, "blocked", length: 1, what: w)
        let hidden = try f.bytes(Kind.hidePost.rawValue, "hidden post", length: 1, what: w)
        let present = [passed, blocked, hidden].compactMap { $0 }
        guard present.count == 1, let value = present.first else {
            throw RecordError(.malformed, "a note payload carries exactly one of field 2 (passed), field 3 (blocked) and field 4 (hidden post)")
        }
        guard value[0] <= 1 else { throw RecordError(.malformed, "note payload flag must be 0 or 1") }
        kind = passed != nil ? .pass : blocked != nil ? .block : .hidePost
        flag = value[0] == 1
    }

    public var plaintext: [UInt8] {
        var f = FieldList(); f.set(1, target.bytes); f.set(kind.rawValue, [flag ? 1 : 0]); return f.encoded
    }
}
