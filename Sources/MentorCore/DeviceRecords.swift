/// An account's certificate for one of its device keys (PROTOCOL.md §6.2). Signed by the
/// account key itself (format version 1): only the account key makes a key speak for the
/// account. A device key then signs the account's everyday records (format version 2, which
/// names the account), until it is revoked or its certificate expires.
public struct DeviceCertificate: RecordSchema, Equatable {
    public static let type = RecordType.device
    public static let name = "device"
    public static let maxClockEntries = 0
    public static let publicMerge = PublicMerge.devices

    public enum Tag: UInt8, CaseIterable { case device = 1, label = 2, created = 3, expires = 4 }
    public static let maxLabelBytes = 64

    /// The certified device key.
    public var device: PublicKey
    /// What the person calls the machine ("lab-3", "laptop"): 1 … 64 bytes of text.
    public var label: String
    /// When the account certified it (ms since the Unix epoch, the account's clock).
    public var created: UInt64
    /// After this time (ms) the device's records are refused everywhere; nil: never.
    public var expires: UInt64?

    public init(device: PublicKey, label: String, created: UInt64, expires: UInt64? = nil) {
        self.device = device; self.label = label; self.created = created; self.expires = expires
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
        return f.encoded
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

    public enum Tag: UInt8, CaseIterable { case device = 1, lastSeq = 2 }

    public var device: PublicKey
    /// The device's records up to this seq stay valid; later ones are refused.
    public var lastSeq: UInt64

    public init(device: PublicKey, lastSeq: UInt64) {
        self.device = device; self.lastSeq = lastSeq
    }

    public init(body: [UInt8]) throws(RecordError) {
        let what = "revocation"
        let f = try FieldList.decode(body, known: Set(Tag.allCases.map(\.rawValue)), what: what)
        device = try f.require(f.key(Tag.device.rawValue, "device key", what: what), "device key", what: what)
        lastSeq = try f.require(f.u64(Tag.lastSeq.rawValue, "last seq", what: what), "last seq", what: what)
        guard lastSeq <= Limits.maxSeq else {
            throw RecordError(.invalidBody, "\(what) last seq \(lastSeq) is above the maximum \(Limits.maxSeq)")
        }
    }

    public static func validate(record: Record) throws(RecordError) {
        let revocation = try DeviceRevocation(body: record.body)
        guard revocation.device != record.account else {
            throw RecordError(.invalidBody, "an account key cannot be revoked; certify new devices and keep the account key safe instead")
        }
        if record.isDeviceSigned {
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
        return f.encoded
    }
}
