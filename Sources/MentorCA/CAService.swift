import MentorCore
import MentorCrypto
import Synchronization

/// Sends the code mail. `SMTPClient` in production; tests record or refuse.
public protocol CAMailer: Sendable {
    func sendCode(_ code: String, to address: String, validForSeconds: UInt64, date: UInt64) throws(SMTPError)
}

extension SMTPClient: CAMailer {
    public func sendCode(_ code: String, to address: String, validForSeconds: UInt64, date: UInt64) throws(SMTPError) {
        let minutes = max(1, validForSeconds / 60)
        let body = """
            Your MentorMate code is \(code)

            It is valid for \(minutes) minute\(minutes == 1 ? "" : "s"). Type it into MentorMate on the device
            that asked for it. The code certifies one MentorMate account as belonging to someone
            with an address at your campus; the certificate names the account and the domain,
            never your address.

            If you did not ask for a code, ignore this mail: nothing happens without it.
            """
        try send(to: address, subject: "Your MentorMate code", body: body, date: date)
    }
}

/// The CA's logic, without sockets (CAServer carries its requests in and its answers out):
/// checks addresses and limits, makes and mails codes, trades a right code for a certificate,
/// and keeps its state in `CAStateFile`. Time comes from `now` (Unix ms), so tests move it.
///
/// Thread-safe: the state is behind one mutex; the mail goes out with the mutex released, so a
/// slow relay holds up only the request that waits for it.
public final class CAService: Sendable {
    public let config: CAConfig
    public let caKey: PublicKey
    private let keys: SigningKeyPair
    private let secret: [UInt8]
    private let store: CAStateFile
    private let mailer: any CAMailer
    private let now: @Sendable () -> UInt64
    private let state: Mutex<Mutable>

    /// Rate-limit windows are kept in memory (a restart forgets them); at most this many
    /// addresses and clients are tracked at once — beyond it, new ones are refused.
    public static let maxTrackedSenders = 100_000
    static let hour: UInt64 = 3_600_000

    struct Mutable {
        var saved: CAState
        var byAddress: [[UInt8]: [UInt64]] = [:]
        var byClient: [String: [UInt64]] = [:]
    }

    public init(keys: SigningKeyPair, secret: [UInt8], config: CAConfig, store: CAStateFile,
                mailer: any CAMailer, now: @escaping @Sendable () -> UInt64) throws(CASetupError) {
        guard secret.count >= 16, secret.count <= 64 else {
            throw CASetupError("the code-hashing secret is \(secret.count) bytes; it must be 16 to 64 (restore \(CADirectory.secretName) from the backup, or run `mentormate-ca init` in a new directory)")
        }
        self.config = config
        self.keys = keys
        self.caKey = keys.publicKey.key
        self.secret = secret
        self.store = store
        self.mailer = mailer
        self.now = now
        self.state = Mutex(Mutable(saved: try store.load()))
    }

    public var info: CAInfo { CAInfo(key: caKey, domain: config.domain, codeTTL: config.codeTTLSeconds) }

    /// Answers one request; `client` is the peer's address (for the per-client limit).
    public func handle(_ request: CARequest, client: String) -> CAResponse {
        do throws(CAError) {
            switch request {
            case .info: return .info(info)
            case .request(let account, let email): return .requested(try self.request(account: account, email: email, client: client))
            case .verify(let account, let code): return .certificate(try verify(account: account, code: code))
            }
        } catch {
            return .failure(error)
        }
    }

    // MARK: request

    /// Checks the address and the limits, mails a new code and keeps its hash (replacing any
    /// code pending for the address or the account). Nothing is kept when the mail fails.
    public func request(account: PublicKey, email: String, client: String) throws(CAError) -> CARequestReceipt {
        let address = try checkAddress(email)
        let addressHash = hashAddress(address)
        let at = now()
        let code = SecureRandom.decimalCode(digits: config.codeLength)
        let ttl = config.codeTTLSeconds * 1000

        try state.withLock { (s: inout Mutable) throws(CAError) in
            try Self.count(&s.byClient, key: client, at: at, limit: config.requestsPerClientPerHour,
                           refusal: "this client (\(client)) asked for \(config.requestsPerClientPerHour) codes within the hour; wait, then try again")
            try Self.count(&s.byAddress, key: addressHash, at: at, limit: config.requestsPerAddressPerHour,
                           refusal: "\(Self.mask(address)) was sent \(config.requestsPerAddressPerHour) codes within the hour; use the last code mailed, or wait an hour")
            if let holder = s.saved.certified[addressHash], holder.account != account, holder.expires > at {
                throw CAError(.addressTaken, "\(Self.mask(address)) already certifies another account (until \(holder.expires / 1000) s after 1970); one address certifies one account. If it is yours and you moved, ask the CA's operator to run `mentormate-ca release ADDRESS`")
            }
            let replaced = s.saved.pending.filter { $0.value.addressHash == addressHash || $0.value.account == account }.count
            if s.saved.pending.count - replaced >= config.maxPendingCodes {
                s.saved.dropExpiredPending(at: at, toFit: config.maxPendingCodes - 1 + replaced)
                if s.saved.pending.count - replaced >= config.maxPendingCodes {
                    throw CAError(.rateLimited, "the CA holds \(config.maxPendingCodes) unused codes, its limit; try again in \(config.codeTTLSeconds / 60) minutes")
                }
            }
        }

        do {
            try mailer.sendCode(code, to: address, validForSeconds: config.codeTTLSeconds, date: at)
        } catch {
            throw CAError(.mailFailed, "the code could not be mailed to \(Self.mask(address)): \(error.description). Try again later; if it keeps failing, tell the CA's operator (the mail relay is set by `smtp` in ca.conf)")
        }

        let pending = PendingCode(addressHash: addressHash, account: account,
                                  codeHash: hashCode(code, addressHash: addressHash, account: account),
                                  expires: at + ttl, attempts: 0)
        try state.withLock { (s: inout Mutable) throws(CAError) in
            var next = s.saved
            next.pending = next.pending.filter { $0.value.addressHash != addressHash && $0.value.account != account }
            next.pending[addressHash] = pending
            try save(next)
            s.saved = next
        }
        return CARequestReceipt(sentTo: Self.mask(address), expiresIn: config.codeTTLSeconds)
    }

    // MARK: verify

    /// Trades the pending code of `account` for a certificate. A wrong code costs a try; the
    /// try after the last one ends the code.
    public func verify(account: PublicKey, code: String) throws(CAError) -> MembershipCertificate {
        guard code.utf8.count == config.codeLength, code.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw CAError(.badRequest, "the code must be the \(config.codeLength) digits from the mail, not '\(code.prefix(40))'")
        }
        let at = now()
        return try state.withLock { (s: inout Mutable) throws(CAError) -> MembershipCertificate in
            guard let entry = s.saved.pending.first(where: { $0.value.account == account }) else {
                throw CAError(.noCode, "no code is waiting for \(account.shortID)…; ask for one first (request), then give the code from the mail")
            }
            let (key, pending) = (entry.key, entry.value)
            var next = s.saved
            if pending.expires <= at {
                next.pending[key] = nil
                try save(next)
                s.saved = next
                throw CAError(.noCode, "the code for \(account.shortID)… expired (codes last \(config.codeTTLSeconds / 60) minutes); ask for a new one")
            }
            if pending.attempts >= config.attemptsPerCode {
                next.pending[key] = nil
                try save(next)
                s.saved = next
                throw CAError(.tooManyAttempts, "the code was tried \(config.attemptsPerCode) times without success and is now void; ask for a new code")
            }
            guard ConstantTime.equal(hashCode(code, addressHash: pending.addressHash, account: account), pending.codeHash) else {
                var tried = pending
                tried.attempts += 1
                next.pending[key] = tried
                try save(next)
                s.saved = next
                let left = config.attemptsPerCode - tried.attempts
                throw CAError(.wrongCode, left > 0
                    ? "that is not the code mailed; \(left) tr\(left == 1 ? "y" : "ies") left. Check the latest mail (a new request replaces the code)"
                    : "that is not the code mailed, and no tries are left; ask for a new code")
            }
            next.pending[key] = nil
            if let holder = next.certified[pending.addressHash], holder.account != account, holder.expires > at {
                try save(next)
                s.saved = next
                throw CAError(.addressTaken, "the address already certifies another account; one address certifies one account. If it is yours, ask the CA's operator to run `mentormate-ca release ADDRESS`")
            }
            let certificate = try sign(account: account, domain: config.domain, at: at)
            next.certified[pending.addressHash] = Certified(account: account, expires: certificate.expires)
            try save(next)
            s.saved = next
            return certificate
        }
    }

    // MARK: Operator

    /// A certificate signed without mail or record (`mentormate-ca issue`).
    public func issue(account: PublicKey, domain: String) throws(CAError) -> MembershipCertificate {
        do { try MembershipCertificate.checkDomain(domain) } catch {
            throw CAError(.badRequest, "\(error.message); give the mail domain in lower case, e.g. --domain \(config.domain)")
        }
        return try sign(account: account, domain: domain, at: now())
    }

    /// Forgets the account certified for `address` and any code pending for it; false when
    /// there was neither.
    public func release(address text: String) throws(CAError) -> Bool {
        let address = try checkAddress(text, anyDomain: true)
        let addressHash = hashAddress(address)
        return try state.withLock { (s: inout Mutable) throws(CAError) -> Bool in
            var next = s.saved
            let hadCertificate = next.certified.removeValue(forKey: addressHash) != nil
            let hadCode = next.pending.removeValue(forKey: addressHash) != nil
            guard hadCertificate || hadCode else { return false }
            try save(next)
            s.saved = next
            return true
        }
    }

    /// How many codes are pending and how many addresses hold a current certificate.
    public var counts: (pending: Int, certified: Int) {
        let at = now()
        return state.withLock { s in
            (s.saved.pending.values.filter { $0.expires > at }.count, s.saved.certified.values.filter { $0.expires > at }.count)
        }
    }

    // MARK: Helpers

    private func sign(account: PublicKey, domain: String, at: UInt64) throws(CAError) -> MembershipCertificate {
        do {
            return try MembershipCertificate.sign(by: keys, account: account, domain: domain, issued: at,
                                                  expires: at + config.validityDays * 86_400_000)
        } catch {
            throw CAError(.internal, "cannot sign the certificate: \(error.message)")
        }
    }

    private func save(_ next: CAState) throws(CAError) {
        do { try store.save(next, now: now()) } catch {
            throw CAError(.internal, "the CA could not record this (\(error.message)); nothing changed, try again later and tell the CA's operator")
        }
    }

    /// One more event for `key` in the last hour, or `.rateLimited` when it had `limit` already.
    private static func count<Key: Hashable>(_ windows: inout [Key: [UInt64]], key: Key, at: UInt64, limit: Int,
                                             refusal: String) throws(CAError) {
        var times = (windows[key] ?? []).filter { $0 + hour > at }
        guard times.count < limit else {
            windows[key] = times
            throw CAError(.rateLimited, refusal)
        }
        if windows[key] == nil && windows.count >= maxTrackedSenders {
            windows = windows.filter { $0.value.contains { $0 + hour > at } }
            guard windows.count < maxTrackedSenders else {
                throw CAError(.rateLimited, "the CA is answering too many different senders this hour; try again later")
            }
        }
        times.append(at)
        windows[key] = times
    }

    func hashAddress(_ address: String) -> [UInt8] {
        BLAKE2b.hash(Array("mentormate-ca address v1\0".utf8) + Array(address.lowercased().utf8), key: secret)
    }

    func hashCode(_ code: String, addressHash: [UInt8], account: PublicKey) -> [UInt8] {
        BLAKE2b.hash(Array("mentormate-ca code v1\0".utf8) + addressHash + account.bytes + Array(code.utf8), key: secret)
    }

    /// The address, checked (one '@', a local part of printable ASCII without spaces or
    /// `<>()[]\,;:"`, a canonical domain) and at the CA's domain (or a subdomain, if allowed).
    func checkAddress(_ text: String, anyDomain: Bool = false) throws(CAError) -> String {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        let forbidden = Set("<>()[]\\,;:\"".utf8)
        guard parts.count == 2, let local = parts.first, !local.isEmpty, local.utf8.count <= 64,
              local.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && !forbidden.contains($0) }),
              text.utf8.count <= CARequest.maxEmailBytes,
              let domain = MembershipCertificate.domain(ofAddress: text) else {
            throw CAError(.badRequest, "'\(SMTPClient.printable(String(text.prefix(80))))' is not a mail address; give one address like ana@\(config.domain)")
        }
        if anyDomain { return String(local) + "@" + domain }
        guard domain == config.domain || (config.allowSubdomains && domain.hasSuffix("." + config.domain)) else {
            throw CAError(.wrongDomain, "this CA certifies addresses at \(config.allowSubdomains ? "\(config.domain) and its subdomains" : config.domain), not at \(domain); use your \(config.domain) address")
        }
        return String(local) + "@" + domain
    }

    /// "a…@campus.edu": the first character of the local part, never more.
    public static func mask(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@"), let first = address.first, first != "@" else { return "…" }
        return "\(first)…\(address[at...])"
    }
}

/// A configuration or file problem found before the CA serves (exit status 1 in the tool).
public struct CASetupError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
