import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore

/// One person, many machines (PROTOCOL.md §6.2): the caller's devices, revoking one, leaving a
/// shared machine, and moving the account key between machines with an export file.
extension Node {
    /// Which of the caller's keys signs a record (`write`).
    enum Signer: Equatable, Sendable {
        /// This machine's device key: card edits.
        case everyday
        /// The account key: certificates and revocations.
        case account
        /// The account key too, for now: likes, withdrawals, unmatches and messages are sealed
        /// with it (PROTOCOL.md §7).
        case sealing
    }

    /// The key `other`'s likes and messages are sealed to: its newest encryption key (nil: the
    /// X25519 form of its account key, for an account that published none).
    func sealTo(_ other: PublicKey) throws -> [UInt8]? {
        try replica.encryptionKey(of: other)?.publicKey
    }

    /// A device key's printed ID: its first 8 bytes in hex.
    static func deviceID(_ key: PublicKey) -> String { Hex.encode(Array(key.bytes.prefix(8))) }

    static func state(of d: DeviceState, at now: UInt64) -> String {
        d.revokedAfter != nil ? "revoked" : (d.expires.map { now > $0 } ?? false) ? "expired" : "current"
    }

    /// Refuses to sign with a device the account revoked or whose certificate expired: every
    /// node would refuse the record (`device-revoked`, `device-expired`).
    func checkStanding(of writer: RecordWriter) throws {
        let devices = try replica.devices(of: writer.account)
        guard let d = devices.first(where: { $0.device == writer.author }) else {
            throw RPCError(.notAllowed, "this machine's device key has no certificate from your account yet; finish `mentormate device link` first")
        }
        switch Self.state(of: d, at: config.now()) {
        case "revoked":
            throw RPCError(.notAllowed, "this device (\(d.label), \(Self.deviceID(d.device))) was revoked: every node refuses what it signs. To use this machine again, `mentormate logout --forget`, then `mentormate device link`; or use another of your devices")
        case "expired":
            throw RPCError(.notAllowed, "this device's certificate (\(d.label), \(Self.deviceID(d.device))) expired: every node refuses what it signs now. To use this machine again, `mentormate logout --forget`, then `mentormate device link`")
        default:
            return
        }
    }

    /// This machine's device, as `whoami` shows it.
    func deviceFacts(_ uid: UInt32, account: PublicKey) throws -> (id: String?, label: String?, state: String?) {
        guard let writer = writers[uid], writer.isDevice else { return (nil, nil, nil) }
        let id = Self.deviceID(writer.author)
        guard let d = try replica.devices(of: account).first(where: { $0.device == writer.author }) else {
            return (id, nil, "unconfirmed")
        }
        return (id, d.label, Self.state(of: d, at: config.now()))
    }

    func deviceList(_ caller: Requester) throws -> DevicesResult {
        let me = try me(caller)
        let this = writers[caller.uid]?.author
        let now = config.now()
        let devices = try replica.devices(of: me).map { d in
            DeviceInfo(id: Self.deviceID(d.device), label: d.label, created: Int64(clamping: d.created),
                       expires: d.expires.map { Int64(clamping: $0) }, state: Self.state(of: d, at: now),
                       lastSeen: d.lastSeen.map { Int64(clamping: $0) }, this: d.device == this)
        }
        return DevicesResult(devices: devices, accountKey: accountKeys[caller.uid] != nil)
    }

    /// The caller's device named by a hex prefix of its ID (at least 4 digits).
    func resolveDevice(_ text: String, of account: PublicKey) throws -> DeviceState {
        let prefix = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard prefix.count >= 4, prefix.count <= 64, prefix.allSatisfy({ $0.isHexDigit }) else {
            throw RPCError(.invalidValue, "\"\(text)\" is not a device ID: give at least 4 hex digits of one (`mentormate device list` shows them)")
        }
        let matches = try replica.devices(of: account).filter { Hex.encode($0.device.bytes).hasPrefix(prefix) }
        guard let d = matches.first else {
            throw RPCError(.notFound, "your account has no device \(prefix); `mentormate device list` shows them")
        }
        guard matches.count == 1 else {
            throw RPCError(.ambiguous, "\(prefix) matches \(matches.count) of your devices; give more digits")
        }
        return d
    }

    func deviceRevoke(_ request: DeviceRequest, _ caller: Requester) throws -> DeviceInfo {
        let me = try me(caller)
        let d = try resolveDevice(request.id, of: me)
        if d.revokedAfter != nil { throw RPCError(.notAllowed, "device \(d.label) (\(Self.deviceID(d.device))) is revoked already") }
        // What this node holds of the device stays valid; anything it signs after is refused.
        let last = try replica.contiguousSeq(of: d.device)
        // A new encryption key for the devices that stay: the revoked one never receives it
        // (PROTOCOL.md §7.5).
        let now = config.now()
        let keeping = try replica.devices(of: me).filter { $0.device != d.device && Self.state(of: $0, at: now) == "current" }.map(\.device)
        let epoch = try replica.encryptionEpoch(of: me) + 1
        guard epoch <= UInt32(EncryptionKey.maxEpochs) else {
            throw RPCError(.limitReached, "this account has rotated its encryption key \(EncryptionKey.maxEpochs - 1) times, the most it can")
        }
        try write(caller.uid, as: .account) { w, now throws(RecordError) in
            try w.revoke(d.device, lastSeq: last, rotateTo: epoch, keeping: keeping, at: now)
        }
        logger.info("device revoked", ["uid": "\(caller.uid)", "device": Self.deviceID(d.device), "last_seq": "\(last)"])
        guard let after = try deviceList(caller).devices.first(where: { $0.id == Self.deviceID(d.device) }) else {
            throw RPCError(.internalError, "the device is missing after its revocation")
        }
        return after
    }

    /// `logout --forget`: this machine's device revokes itself, its key file is deleted and the
    /// user's account leaves this node (the public records stay, as on every node).
    func forget(_ caller: Requester) throws -> AccountInfo {
        guard let a = try replica.nodeAccount(uid: caller.uid) else { throw noAccount() }
        guard accountKeys[caller.uid] == nil, !FileManager.default.fileExists(atPath: config.accountKeyPath(uid: caller.uid)) else {
            throw RPCError(.notAllowed, "this node holds your account key: forgetting it here would lose the account. Export it first (`mentormate account export FILE`), import it on another machine, then revoke this device from there (`mentormate device revoke ID`)")
        }
        // Locked (a forgotten passphrase): the key cannot sign its own revocation; it is wiped
        // all the same, and a machine holding the account key revokes it (`device revoke`).
        var facts: (id: String?, label: String?, state: String?) = (nil, nil, nil)
        if let writer = writers[caller.uid] {
            guard writer.isDevice else {
                throw RPCError(.notAllowed, "this account has no device keys (it was made before they existed): its only key is here")
            }
            facts = try deviceFacts(caller.uid, account: a.account)
            if facts.state == "current" {
                try write(caller.uid) { w, now throws(RecordError) in try w.revoke(w.author, lastSeq: 0, at: now) }
                facts.state = "revoked"
            }
        }
        try replica.lock(a.account)
        writers[caller.uid] = nil
        accountKeys[caller.uid] = nil
        localKeys.remove(a.account)
        try replica.removeNodeAccount(uid: caller.uid)
        let path = config.keyPath(uid: caller.uid)
        do { try FileManager.default.removeItem(atPath: path) } catch {
            logger.log(.error, "could not delete a forgotten device key", ["path": path, "error": "\(error)"])
            throw RPCError(.internalError, "the device was revoked but its key file \(path) could not be deleted: \(error)")
        }
        logger.info("device forgotten", ["uid": "\(caller.uid)", "device": facts.id ?? "?"])
        changes.publish(.accountsChanged)
        let card = try replica.card(of: a.account)
        return AccountInfo(id: a.account.id, name: card?.card.name, email: a.email, role: card?.card.role?.rawValue,
                           protected: a.protected, unlocked: false, device: facts.id, deviceLabel: facts.label,
                           deviceState: facts.state ?? "forgotten", accountKey: false)
    }

    // MARK: Moving the account key

    func accountExport(_ caller: Requester) throws -> AccountKeyExport {
        let me = try me(caller)
        guard let keys = accountKeys[caller.uid] else {
            if writers[caller.uid] == nil { throw try lockedError(caller.uid) }
            throw RPCError(.notAllowed, "this node does not hold your account key (this machine is a linked device); export from the machine you signed up on")
        }
        return AccountKeyExport(id: me.id, key: Data(keys.seed).base64EncodedString())
    }

    /// Every free check of an import (before Argon2id): the key, the e-mail, and that this
    /// node knows the account's records (a certificate written before they arrived would take
    /// a seq the account already used elsewhere).
    func importedKeys(_ request: ImportRequest, _ caller: Requester) throws -> SigningKeyPair {
        guard try replica.nodeAccount(uid: caller.uid) == nil else {
            throw RPCError(.alreadyExists, "you already have an account on this node (one per user); see `mentormate whoami`")
        }
        guard let seed = Data(base64Encoded: request.key).map(Array.init), seed.count == 32,
              let keys = try? SigningKeyPair(seed: seed) else {
            throw RPCError(.invalidValue, "key must be the base64 of a 32-byte account key seed (the client reads it from an export file)")
        }
        try checkEmail(request.email.trimmingCharacters(in: .whitespaces))
        if let passphrase = request.passphrase, passphrase.isEmpty { throw RPCError(.invalidValue, "the passphrase is empty") }
        guard try replica.contiguousSeq(of: keys.publicKey.key) > 0 else {
            throw RPCError(.notFound, "this node has not received account \(keys.publicKey.key.shortID)…'s records yet: wait until it has synced with a node that has them (`mentormate status`), then import again")
        }
        return keys
    }

    /// `signup --import FILE`: the account key from an export file, and a new device key for
    /// this machine that it certifies.
    func accountImport(_ request: ImportRequest, _ caller: Requester, prepared: PreparedKey?) throws -> AccountInfo {
        _ = try importedKeys(request, caller)
        let path = config.keyPath(uid: caller.uid), accountPath = config.accountKeyPath(uid: caller.uid)
        guard let prepared, let keys = prepared.keys, let accountKeys = prepared.accountKeys,
              let temporary = prepared.temporaryPath, let accountTemporary = prepared.accountTemporaryPath else {
            throw RPCError(.internalError, "the keys were not prepared; import again")
        }
        guard rename(temporary, path) == 0, rename(accountTemporary, accountPath) == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw RPCError(.internalError, "could not put the account key in place at \(accountPath)")
        }
        let account = accountKeys.publicKey.key
        let label = try deviceLabel(request.label)
        do {
            try replica.addNodeAccount(NodeAccount(uid: caller.uid, account: account, email: request.email.trimmingCharacters(in: .whitespaces),
                                                   protected: request.passphrase != nil, created: config.now()))
            try unlock(uid: caller.uid, keys: keys, account: account, accountKeys: accountKeys)
            localKeys.insert(account)
            let epoch = max(try replica.encryptionEpoch(of: account), 1)
            try write(caller.uid, as: .account) { w, now throws(RecordError) in
                try w.certify(keys.publicKey.key, label: label, epoch: epoch, at: now)
            }
        } catch {
            writers[caller.uid] = nil
            self.accountKeys[caller.uid] = nil
            localKeys.remove(account)
            try? replica.lock(account)
            try? replica.removeNodeAccount(uid: caller.uid)
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: accountPath)
            throw error
        }
        logger.info("account imported", ["uid": "\(caller.uid)", "account": account.shortID, "device": Self.deviceID(keys.publicKey.key)])
        changes.publish(.accountsChanged)
        return try accountInfo(caller.uid)
    }

    /// A device label as given (1 … 64 bytes of text, no control characters), or this node's.
    func deviceLabel(_ given: String?) throws -> String {
        guard let given else { return config.deviceLabel }
        let label = given.trimmingCharacters(in: .whitespaces)
        guard !label.isEmpty, label.utf8.count <= DeviceCertificate.maxLabelBytes,
              !label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw RPCError(.invalidValue, "a device label is 1 to \(DeviceCertificate.maxLabelBytes) bytes of text without control characters")
        }
        return label
    }
}

// MARK: Linking a machine (PROTOCOL.md §13.8)

/// A `device link` waiting for its approval: this machine's new device key (its file waits
/// under `.link` beside where it goes), the code and the offer sent to the peers.
struct PendingLink: Sendable {
    var device: SigningKeyPair
    var code: LinkCode
    var offer: LinkOffer
    var label: String
    var protected: Bool
    var path: String
}

extension Node {
    /// The free checks of `device link` (before its Argon2id).
    func linkCheck(_ request: LinkRequest, _ caller: Requester) throws -> PassphraseCheck {
        guard try replica.nodeAccount(uid: caller.uid) == nil else {
            throw RPCError(.alreadyExists, "you already have an account on this node: `device link` is for a machine that does not have it yet")
        }
        let label = try deviceLabel(request.label)
        guard label.unicodeScalars.allSatisfy({ $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) }) else {
            throw RPCError(.invalidValue, "a device label has no control characters")
        }
        var lifetime: UInt32 = 0
        if let seconds = request.expires {
            guard seconds >= 60, seconds <= 365 * 86_400 else {
                throw RPCError(.invalidValue, "expires is 60 … \(365 * 86_400) seconds (1 minute … 365 days), not \(seconds)")
            }
            lifetime = UInt32(seconds)
        }
        if let passphrase = request.passphrase, passphrase.isEmpty { throw RPCError(.invalidValue, "the passphrase is empty") }
        if let other = pendingLinks.first(where: { $0.key != caller.uid && $0.value.offer.expires > config.now() }) {
            throw RPCError(.limitReached, "another user of this machine (uid \(other.key)) is linking a device; a node offers one at a time — try again when theirs is done (at most 10 minutes)")
        }
        return .link(label: label, lifetime: lifetime, passphrase: request.passphrase)
    }

    /// Off the queue: the new device key (written under a temporary name), a code and the offer.
    func prepareLink(_ caller: Requester, label: String, lifetime: UInt32, passphrase: String?) -> PreparedKey {
        let keys = SigningKeyPair.generate()
        let path = config.keyPath(uid: caller.uid) + ".new-" + Hex.encode(SecureRandom.bytes(6))
        do {
            try writeKeyFiles([(keys, path)], passphrase: passphrase)
            let code = LinkCode.generate()
            let offer = try LinkOffer.make(code: code, device: keys.publicKey.key, label: label,
                                           expires: config.now() + Self.linkLifetimeMillis, lifetime: lifetime)
            var prepared = PreparedKey(keys: keys, temporaryPath: path)
            prepared.linkCode = code
            prepared.linkOffer = offer
            return prepared
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            return PreparedKey(failure: RPCError(.internalError, "could not make this machine's device key: \(error)"))
        }
    }

    static let linkLifetimeMillis: UInt64 = 600_000

    func deviceLink(_ request: LinkRequest, _ caller: Requester, prepared: PreparedKey?) throws -> LinkStart {
        _ = try linkCheck(request, caller)
        guard let prepared, let keys = prepared.keys, let code = prepared.linkCode, let offer = prepared.linkOffer,
              let temporary = prepared.temporaryPath else {
            throw RPCError(.internalError, "the device key was not prepared; run `mentormate device link` again")
        }
        if let old = pendingLinks[caller.uid] { try? FileManager.default.removeItem(atPath: old.path) }
        let path = config.keyPath(uid: caller.uid) + ".link"
        guard rename(temporary, path) == 0 else {
            throw RPCError(.internalError, "could not keep the new device key at \(path)")
        }
        pendingLinks[caller.uid] = PendingLink(device: keys, code: code, offer: offer, label: offer.label,
                                               protected: request.passphrase != nil, path: path)
        runtime.offerLink(offer)
        logger.info("device link offered", ["uid": "\(caller.uid)", "device": Self.deviceID(keys.publicKey.key),
                                            "code_id": "\(code.codeID)", "lifetime_s": "\(offer.lifetime)"])
        return LinkStart(code: code.description, device: Self.deviceID(keys.publicKey.key), label: offer.label,
                         until: Int64(clamping: offer.expires))
    }

    func deviceLinkStatus(_ caller: Requester) throws -> LinkStatus {
        try finishLinks()
        if let pending = pendingLinks[caller.uid] {
            guard pending.offer.expires > config.now() else {
                abandonLink(caller.uid)
                return LinkStatus(state: "expired", device: Self.deviceID(pending.device.publicKey.key))
            }
            return LinkStatus(state: "waiting", device: Self.deviceID(pending.device.publicKey.key))
        }
        if let a = try replica.nodeAccount(uid: caller.uid), let writer = writers[caller.uid], writer.isDevice {
            return LinkStatus(state: "linked", account: a.account.id, device: Self.deviceID(writer.author))
        }
        return LinkStatus(state: "none")
    }

    /// A pending link whose code expired: its offer withdrawn, its key deleted.
    func abandonLink(_ uid: UInt32) {
        guard let pending = pendingLinks.removeValue(forKey: uid) else { return }
        try? FileManager.default.removeItem(atPath: pending.path)
        runtime.offerLink(nil)
        logger.info("device link expired", ["uid": "\(uid)", "device": Self.deviceID(pending.device.publicKey.key)])
    }

    /// Pending links whose certificate has arrived become the user's account on this node:
    /// the key goes in place, the account is unlocked with it, the offer is withdrawn. Called
    /// after every applied batch that holds a certificate, and by `device.link.status`.
    func finishLinks() throws {
        for (uid, pending) in pendingLinks {
            guard let account = try replica.account(ofDevice: pending.device.publicKey.key) else { continue }
            let path = config.keyPath(uid: uid)
            guard rename(pending.path, path) == 0 else {
                logger.log(.error, "a linked device's key could not be put in place", ["path": path])
                continue
            }
            pendingLinks[uid] = nil
            runtime.offerLink(nil)
            try replica.addNodeAccount(NodeAccount(uid: uid, account: account, email: "", protected: pending.protected, created: config.now()))
            try unlock(uid: uid, keys: pending.device, account: account, accountKeys: nil)
            localKeys.insert(account)
            logger.info("device linked", ["uid": "\(uid)", "account": account.shortID, "device": Self.deviceID(pending.device.publicKey.key)])
            changes.publish(.accountsChanged)
        }
    }

    /// The free checks of `device approve` (before trying the offers): the account key is here,
    /// this device still stands, the code has the right form.
    func approveCheck(_ request: ApproveRequest, _ caller: Requester) throws -> LinkCode {
        let me = try me(caller)
        guard accountKeys[caller.uid] != nil else {
            if writers[caller.uid] == nil { throw try lockedError(caller.uid) }
            throw RPCError(.notAllowed, "approving a device needs your account key, which is not on this node: run `mentormate device approve` on the machine you signed up on or imported the account to")
        }
        if let writer = writers[caller.uid], writer.isDevice {
            let standing = try deviceFacts(caller.uid, account: me).state
            if standing == "revoked" || standing == "expired" {
                throw RPCError(.notAllowed, "this machine's device was \(standing == "revoked" ? "revoked" : "expired"): it cannot approve another. Use a device that still stands")
            }
        }
        do { return try LinkCode.parse(request.code) } catch {
            throw RPCError(.invalidValue, "\(error.message) — type the code `mentormate device link` printed on the new machine")
        }
    }

    /// Off the queue: the peers' offers under the code's ID, tried with the code.
    func findOffer(_ code: LinkCode) -> PreparedKey {
        for offer in runtime.linkOffers(codeID: code.codeID) {
            if (try? offer.matches(code)) == true {
                var prepared = PreparedKey()
                prepared.linkOffer = offer
                return prepared
            }
        }
        return PreparedKey(failure: RPCError(.notFound, "no machine on this network is offering a device under this code: check the code, that it is under 10 minutes old, and that both machines are on the same network (`mentormate peers`)"))
    }

    func deviceApprove(_ request: ApproveRequest, _ caller: Requester, prepared: PreparedKey?) throws -> ApproveResult {
        let me = try me(caller)
        _ = try approveCheck(request, caller)
        guard let offer = prepared?.linkOffer else {
            throw RPCError(.internalError, "the code was not checked; run `mentormate device approve` again")
        }
        let now = config.now()
        guard offer.expires > now else {
            throw RPCError(.notAllowed, "this code expired; run `mentormate device link` again on the new machine for a new one")
        }
        let certified = try replica.devices(of: me)
        guard certified.count < Limits.maxDevicesPerAccount else {
            throw RPCError(.limitReached, "your account has certified \(Limits.maxDevicesPerAccount) devices, the most it can (revoked and expired ones count): a new machine can use an export of the account key instead (`mentormate account export FILE`, then `signup --import FILE` there)")
        }
        if certified.contains(where: { $0.device == offer.device }) {
            throw RPCError(.alreadyExists, "this code was used already: device \(Self.deviceID(offer.device)) (\(offer.label)) is linked. A new machine runs `mentormate device link` for a new code")
        }
        let lifetime: Int64? = offer.lifetime > 0 ? Int64(offer.lifetime) : nil
        guard request.confirm == true else {
            return ApproveResult(device: Self.deviceID(offer.device), label: offer.label, expires: lifetime, approved: false)
        }
        let epoch = max(try replica.encryptionEpoch(of: me), 1)
        try write(caller.uid, as: .account) { w, now throws(RecordError) in
            try w.certify(offer.device, label: offer.label, expires: lifetime.map { now + UInt64($0) * 1000 }, epoch: epoch, at: now)
        }
        logger.info("device approved", ["uid": "\(caller.uid)", "device": Self.deviceID(offer.device), "lifetime_s": "\(offer.lifetime)"])
        return ApproveResult(device: Self.deviceID(offer.device), label: offer.label, expires: lifetime, approved: true)
    }
}

// MARK: Unmatches (PROTOCOL.md §8.7, §8.8)

extension Node {
    /// The other account ended a match: this account writes its own unmatch of it, whose
    /// purge tag removes this account's messages of that match from every replica (only this
    /// account can compute the tag). Once per match.
    func acknowledgeUnmatches(_ uid: UInt32, me: PublicKey, other: PublicKey) {
        guard writers[uid] != nil else { return }
        do {
            let entries = try replica.pairEntries(account: me, other: other)
            func ended(by author: PublicKey) -> [(theirs: [UInt8], mine: [UInt8])] {
                entries.compactMap { e in
                    guard e.author == author, case .unmatch(_, let answers?, let own?) = e.kind else { return nil }
                    return (answers, own)
                }
            }
            let mine = ended(by: me)
            for match in ended(by: other) {
                // The other's unmatch names my like as "answers" and theirs as "mine".
                let myLike = match.theirs, theirLike = match.mine
                guard !mine.contains(where: { $0.theirs == theirLike && $0.mine == myLike }) else { continue }
                let key = try sealTo(other)
                let seen = try replica.contiguousSeq(of: other)
                try write(uid, as: .sealing) { w, now throws(RecordError) in
                    try w.unmatch(other, peerSeq: seen, answers: theirLike, mine: myLike, to: key, at: now)
                }
                logger.info("unmatch acknowledged", ["uid": "\(uid)", "other": other.shortID])
            }
        } catch {
            logger.log(.error, "could not acknowledge an unmatch", ["uid": "\(uid)", "other": other.shortID, "error": "\(error)"])
        }
    }
}

// MARK: Passes follow the person (PROTOCOL.md §7.6)

extension Node {
    /// A pass (or its undoing) is a note sealed to the account itself, so every one of its
    /// devices leaves that person out of the feed and nobody else learns of it. An account with
    /// no encryption key yet (made before devices existed, on its own machine) keeps it here.
    func notePass(_ caller: Requester, me: PublicKey, other: PublicKey, passed: Bool) throws {
        guard replica.sealingKey(for: me) != nil else {
            if passed { try replica.setPass(account: me, target: other, at: config.now()) } else { _ = try replica.removePass(account: me, target: other) }
            return
        }
        try write(caller.uid, as: .sealing) { w, now throws(RecordError) in
            try w.note(NotePayload(target: other, passed: passed), at: now)
        }
    }
}
