#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorCore
import MentorCrypto
import MentorSystem

/// The settings of one CA (`ca.conf`): the domain it certifies, where it listens, its mail relay
/// and its limits. Defaults are the plan's; `ca.conf` may change each.
public struct CAConfig: Sendable, Equatable {
    public var domain: String
    /// Accept addresses at any subdomain of `domain` too (certificates still name `domain`).
    public var allowSubdomains = false
    public var listen = "[::]:4712"
    /// The mail relay, HOST:PORT.
    public var smtp = "127.0.0.1:25"
    /// The sender of the code mail; default `mentormate-ca@DOMAIN`.
    public var from: String
    /// The name in SMTP `EHLO`; default this machine's host name.
    public var helo: String?
    public var validityDays: UInt64 = 365
    public var codeTTLSeconds: UInt64 = 900
    public var codeLength = 6
    public var attemptsPerCode = 5
    public var requestsPerAddressPerHour = 3
    public var requestsPerClientPerHour = 20
    public var maxPendingCodes = 10_000
    /// Connections served at once; more are answered `busy`.
    public var maxConnections = 8

    public init(domain: String) {
        self.domain = domain
        self.from = "mentormate-ca@" + domain
    }

    /// The keys `ca.conf` may set, in the order `fileText` writes them.
    public static let keys = ["domain", "allow_subdomains", "listen", "smtp", "from", "helo", "validity_days",
                              "code_ttl_minutes", "attempts_per_code", "requests_per_address_per_hour",
                              "requests_per_client_per_hour", "max_pending_codes", "max_connections"]

    /// Reads `ca.conf`: `key = value` lines, `#` comments, values optionally "quoted". An unknown
    /// key, a missing `domain` or a bad value is an error naming the file, the line and the fix.
    public static func parse(_ text: String, path: String) throws(CASetupError) -> CAConfig {
        var values: [String: (String, Int)] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            var line = Substring(raw)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = String(line).caTrimmed
            if trimmed.isEmpty { continue }
            guard let eq = trimmed.firstIndex(of: "=") else {
                throw CASetupError("\(path):\(lineNumber): '\(trimmed)' is not `key = value`; fix or remove the line")
            }
            let key = String(trimmed[..<eq]).caTrimmed
            var value = String(trimmed[trimmed.index(after: eq)...]).caTrimmed
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard keys.contains(key) else {
                throw CASetupError("\(path):\(lineNumber): unknown key '\(key)'; the keys are \(keys.joined(separator: ", ")) (mentormate-ca(8))")
            }
            guard values[key] == nil else {
                throw CASetupError("\(path):\(lineNumber): '\(key)' is set twice; keep one line")
            }
            values[key] = (value, lineNumber)
        }
        guard let (domain, domainLine) = values["domain"] else {
            throw CASetupError("\(path): no `domain = …` line; add the mail domain the CA certifies, e.g. domain = campus.edu")
        }
        do { try MembershipCertificate.checkDomain(domain) } catch {
            throw CASetupError("\(path):\(domainLine): \(error.message)")
        }
        var config = CAConfig(domain: domain)
        for (key, (value, line)) in values where key != "domain" {
            try config.set(key, value, at: "\(path):\(line)")
        }
        return config
    }

    /// Sets one key from its text; `place` names the file and line (or the flag) in errors.
    public mutating func set(_ key: String, _ value: String, at place: String) throws(CASetupError) {
        func number(_ range: ClosedRange<UInt64>) throws(CASetupError) -> UInt64 {
            guard let n = UInt64(value), range.contains(n) else {
                throw CASetupError("\(place): \(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(value)'")
            }
            return n
        }
        switch key {
        case "domain":
            do { try MembershipCertificate.checkDomain(value) } catch { throw CASetupError("\(place): \(error.message)") }
            domain = value
        case "allow_subdomains":
            guard value == "true" || value == "false" else {
                throw CASetupError("\(place): allow_subdomains must be true or false, not '\(value)'")
            }
            allowSubdomains = value == "true"
        case "listen", "smtp":
            do { _ = try HostPort.parse(value) } catch {
                throw CASetupError("\(place): \(error.description) (e.g. \(key == "listen" ? "[::]:4712" : "127.0.0.1:25"))")
            }
            if key == "listen" { listen = value } else { smtp = value }
        case "from":
            guard MembershipCertificate.domain(ofAddress: value) != nil, SMTPClient.isHeaderSafe(value), !value.contains(" ") else {
                throw CASetupError("\(place): from must be one mail address (e.g. mentormate-ca@\(domain)), not '\(value)'")
            }
            from = value
        case "helo":
            guard !value.isEmpty, SMTPClient.isHeaderSafe(value), !value.contains(" ") else {
                throw CASetupError("\(place): helo must be a host name without spaces, not '\(value)'")
            }
            helo = value
        case "validity_days": validityDays = try number(1...3650)
        case "code_ttl_minutes": codeTTLSeconds = try number(1...1440) * 60
        case "attempts_per_code": attemptsPerCode = Int(try number(1...100))
        case "requests_per_address_per_hour": requestsPerAddressPerHour = Int(try number(1...1000))
        case "requests_per_client_per_hour": requestsPerClientPerHour = Int(try number(1...100_000))
        case "max_pending_codes": maxPendingCodes = Int(try number(1...1_000_000))
        case "max_connections": maxConnections = Int(try number(1...256))
        default:
            throw CASetupError("\(place): unknown key '\(key)'; the keys are \(Self.keys.joined(separator: ", "))")
        }
    }

    /// `ca.conf` as `init` writes it: every key, the chosen ones set, the rest commented out
    /// at their defaults.
    public var fileText: String {
        let d = CAConfig(domain: domain)
        func line(_ key: String, _ value: String, _ isDefault: Bool) -> String { (isDefault ? "#" : "") + "\(key) = \(value)\n" }
        let rates = line("requests_per_address_per_hour", String(requestsPerAddressPerHour), requestsPerAddressPerHour == d.requestsPerAddressPerHour)
            + line("requests_per_client_per_hour", String(requestsPerClientPerHour), requestsPerClientPerHour == d.requestsPerClientPerHour)
        return """
            # ca.conf — settings of mentormate-ca (mentormate-ca(8), docs/OPERATIONS.md "A campus CA").
            # One `key = value` a line; `#` starts a comment. An unknown key or a bad value stops
            # `mentormate-ca serve` with the line and what is wrong. Restart the CA after a change.

            # The mail domain whose addresses the CA certifies; certificates name it.
            \(line("domain", domain, false))
            # Accept addresses at subdomains too (ana@cs.\(domain)); certificates still name \(domain).
            \(line("allow_subdomains", String(allowSubdomains), allowSubdomains == d.allowSubdomains))
            # Where clients reach the CA (`campus_ca` in each node's mentormated.conf), HOST:PORT.
            \(line("listen", listen, listen == d.listen))
            # The campus mail relay, HOST:PORT: plain SMTP, no TLS, no AUTH — a relay on this host
            # or a trusted network (for a TLS relay, a local postfix or stunnel in between).
            \(line("smtp", smtp, smtp == d.smtp))
            # The sender of the code mail.
            \(line("from", from, from == d.from))
            # The name given in SMTP EHLO (default: this machine's host name).
            \(line("helo", helo ?? "localhost", helo == nil))
            # How long a certificate counts, in days.
            \(line("validity_days", String(validityDays), validityDays == d.validityDays))
            # How long a mailed code can be used, in minutes.
            \(line("code_ttl_minutes", String(codeTTLSeconds / 60), codeTTLSeconds == d.codeTTLSeconds))
            # Wrong tries a code survives; the next try voids it.
            \(line("attempts_per_code", String(attemptsPerCode), attemptsPerCode == d.attemptsPerCode))
            # Codes mailed to one address, and asked for by one client IP, per hour.
            \(rates)
            # Unused codes held at once; when full of live ones, requests are refused (rate-limited).
            \(line("max_pending_codes", String(maxPendingCodes), maxPendingCodes == d.maxPendingCodes))
            # Connections served at once; more are answered "busy".
            \(line("max_connections", String(maxConnections), maxConnections == d.maxConnections))
            """
    }
}

/// The files of a CA directory (mode 0700): `ca.key` (the signing key, KeyFile format, 0600),
/// `code.secret` (32 random bytes keying the hashes of codes and addresses, 0600), `ca.conf`
/// and `state.json` (pending code hashes and certified address hashes, 0600).
public struct CADirectory: Sendable {
    public static let keyName = "ca.key"
    public static let secretName = "code.secret"
    public static let configName = "ca.conf"
    public static let stateName = "state.json"
    public static let secretLength = 32

    public let path: String
    public init(path: String) { self.path = path }

    public var keyPath: String { path + "/" + Self.keyName }
    public var secretPath: String { path + "/" + Self.secretName }
    public var configPath: String { path + "/" + Self.configName }
    public var statePath: String { path + "/" + Self.stateName }

    /// Creates the directory (0700; an existing one must be a directory, and is made 0700), a new
    /// key, a new secret and `ca.conf`. Refuses when a key is already there: a second `init`
    /// would replace the key every node trusts.
    public func create(config: CAConfig) throws(CASetupError) -> SigningKeyPair {
        do {
            if !(try Syscall.mkdir(path, mode: 0o700)) {
                guard let st = try Syscall.status(path, followLinks: true), st.st_mode & S_IFMT == S_IFDIR else {
                    throw CASetupError("\(path) exists and is not a directory; give a new directory to --dir")
                }
            }
            try Syscall.blocking("chmod \(path)") { chmod(path, 0o700) }
            if try Syscall.status(keyPath) != nil {
                throw CASetupError("\(keyPath) already exists: this directory holds a CA already, and a new key would void every certificate it signed. Use it as it is (`mentormate-ca key --dir \(path)`), or give a new directory")
            }
            if try Syscall.status(secretPath) != nil || Syscall.status(statePath) != nil {
                throw CASetupError("\(path) holds a CA's \(Self.secretName) or \(Self.stateName) but no \(Self.keyName): restore the key from the backup of this directory, or give a new directory to --dir")
            }
        } catch let error as CASetupError {
            throw error
        } catch {
            throw CASetupError("cannot prepare \(path): \(error); check the path and its parent's permissions")
        }
        let keys = SigningKeyPair.generate()
        do {
            try PrivateFile.write(SecureRandom.bytes(Self.secretLength), to: secretPath)
            try PrivateFile.write(Array(config.fileText.utf8), to: configPath)
            // The key last: a directory with a key is a finished one.
            try KeyFile.write(keys, to: keyPath)
        } catch let error as CASetupError {
            throw error
        } catch let error as CryptoError {
            throw CASetupError(error.message)
        } catch {
            throw CASetupError("cannot write the CA's files in \(path): \(error)")
        }
        return keys
    }

    public func readKeys() throws(CASetupError) -> SigningKeyPair {
        do { return try KeyFile.read(from: keyPath) } catch {
            if error.code == .keyFileMissing {
                throw CASetupError("no CA key at \(keyPath); make the CA first with `mentormate-ca init --dir \(path) --domain DOMAIN`")
            }
            throw CASetupError(error.message)
        }
    }

    public func readSecret() throws(CASetupError) -> [UInt8] {
        let bytes = try PrivateFile.read(secretPath, maxBytes: 64)
        guard bytes.count == Self.secretLength else {
            throw CASetupError("\(secretPath) is \(bytes.count) bytes, not \(Self.secretLength); restore it from the backup of this CA directory")
        }
        return bytes
    }

    public func readConfig() throws(CASetupError) -> CAConfig {
        let bytes = try PrivateFile.read(configPath, maxBytes: 1 << 16, ownerOnly: false)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CASetupError("\(configPath) is not UTF-8 text; fix or restore it")
        }
        return try CAConfig.parse(text, path: configPath)
    }

    public var stateFile: CAStateFile { CAStateFile(path: statePath) }

    public static let lockName = "lock"

    /// Takes `flock` on DIR/lock, held until the descriptor is closed (or the process ends,
    /// even by kill -9): `serve` holds it while it runs, `release` while it changes the state,
    /// so the two never overwrite each other's `state.json`. `what` is the fix said when another
    /// process holds it.
    public func lock(ifBusy what: String) throws(CASetupError) -> FileDescriptor {
        let path = self.path + "/" + Self.lockName
        let file: FileDescriptor
        do { file = try Syscall.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600) } catch {
            throw CASetupError("cannot open \(path): \(error); is --dir the directory `mentormate-ca init` made?")
        }
        guard flock(file.raw, LOCK_EX | LOCK_NB) == 0 else {
            throw CASetupError("the CA directory \(self.path) is in use: another mentormate-ca (a running `serve`) holds \(path); \(what)")
        }
        return file
    }
}

// MARK: - State

/// A code waiting to be typed: only hashes of the address and the code, keyed by the CA's secret.
struct PendingCode: Sendable, Equatable {
    var addressHash: [UInt8]
    var account: PublicKey
    var codeHash: [UInt8]
    var expires: UInt64
    var attempts: Int
}

/// The account an address certifies, until when.
struct Certified: Sendable, Equatable {
    var account: PublicKey
    var expires: UInt64
}

/// What the CA remembers between requests, keyed by the keyed hash of the lower-cased address.
public struct CAState: Sendable, Equatable {
    var pending: [[UInt8]: PendingCode] = [:]
    var certified: [[UInt8]: Certified] = [:]

    public init() {}

    /// Drops expired codes, the oldest first, until at most `limit` remain (or none is expired).
    mutating func dropExpiredPending(at now: UInt64, toFit limit: Int) {
        let expired = pending.filter { $0.value.expires <= now }.sorted { $0.value.expires < $1.value.expires }
        for (key, _) in expired where pending.count > limit { pending[key] = nil }
    }

    /// The state as stored: JSON, hashes and keys in hex. Expired codes and certificates that
    /// no longer count are left out (they decide nothing any more).
    func json(now: UInt64) -> JSON {
        let codes = pending.values.filter { $0.expires > now }.sorted { $0.expires < $1.expires }.map { p -> JSON in
            ["address": .string(Hex.encode(p.addressHash)), "account": .string(Hex.encode(p.account.bytes)),
             "code": .string(Hex.encode(p.codeHash)), "expires": .int(Int64(clamping: p.expires)), "attempts": .int(Int64(p.attempts))]
        }
        let certificates = certified.filter { $0.value.expires > now }.sorted { $0.value.expires < $1.value.expires }.map { entry -> JSON in
            ["address": .string(Hex.encode(entry.key)), "account": .string(Hex.encode(entry.value.account.bytes)),
             "expires": .int(Int64(clamping: entry.value.expires))]
        }
        return ["version": 1, "pending": .array(codes), "certified": .array(certificates)]
    }

    init(json: JSON, path: String) throws(CASetupError) {
        func bad(_ why: String) -> CASetupError {
            CASetupError("\(path) is damaged (\(why)); restore it from a backup, or remove it to start with no pending codes and no certified addresses")
        }
        guard json["version"]?.intValue == 1, let codes = json["pending"]?.arrayValue, let certificates = json["certified"]?.arrayValue else {
            throw bad("not a version 1 state file")
        }
        func hash(_ value: JSON?) throws(CASetupError) -> [UInt8] {
            guard let text = value?.stringValue, let bytes = Hex.decode(text), bytes.count == 32 else { throw bad("a hash is not 32 bytes of hex") }
            return bytes
        }
        func key(_ value: JSON?) throws(CASetupError) -> PublicKey {
            guard let key = PublicKey(bytes: try hash(value)) else { throw bad("an account is not a key") }
            return key
        }
        func time(_ value: JSON?) throws(CASetupError) -> UInt64 {
            guard let n = value?.intValue, n >= 0 else { throw bad("a time is not a number") }
            return UInt64(n)
        }
        for entry in codes {
            let p = PendingCode(addressHash: try hash(entry["address"]), account: try key(entry["account"]),
                                codeHash: try hash(entry["code"]), expires: try time(entry["expires"]),
                                attempts: Int(try time(entry["attempts"])))
            pending[p.addressHash] = p
        }
        for entry in certificates {
            certified[try hash(entry["address"])] = Certified(account: try key(entry["account"]), expires: try time(entry["expires"]))
        }
    }
}

/// `state.json`, read once at start and replaced atomically after every change.
public struct CAStateFile: Sendable {
    public let path: String
    /// A state file larger than this is refused (10,000 codes take about 2.5 MB).
    public static let maxBytes = 64 << 20

    public init(path: String) { self.path = path }

    /// The stored state; a missing file is the empty state.
    public func load() throws(CASetupError) -> CAState {
        let exists: Bool
        do { exists = try Syscall.status(path) != nil } catch { throw CASetupError("cannot look at \(path): \(error)") }
        guard exists else { return CAState() }
        let bytes = try PrivateFile.read(path, maxBytes: Self.maxBytes)
        guard let json = JSON.parse(bytes) else {
            throw CASetupError("\(path) is not JSON; restore it from a backup, or remove it to start with no pending codes and no certified addresses")
        }
        return try CAState(json: json, path: path)
    }

    public func save(_ state: CAState, now: UInt64) throws(CASetupError) {
        try PrivateFile.write(state.json(now: now).encoded + [0x0A], to: path)
    }
}

// MARK: - Private files

/// Files only their owner may read: written atomically with mode 0600 (a new file in the same
/// directory, fsynced, renamed over the old one, the directory fsynced), read after checking
/// with `fstat` that they are regular and not open to group or others.
enum PrivateFile {
    static func write(_ bytes: [UInt8], to path: String) throws(CASetupError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory)/.\(name).\(Hex.encode(SecureRandom.bytes(6))).tmp"
        var renamed = false
        defer { if !renamed { try? Syscall.unlink(temporary) } }
        do {
            let file = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: 0o600)
            try Syscall.blocking("chmod \(temporary)") { fchmod(file.raw, 0o600) }
            try Syscall.writeAll(file.raw, bytes, what: "write \(temporary)")
            try Syscall.blocking("fsync \(temporary)") { fsync(file.raw) }
            try file.close()
            try Syscall.blocking("rename to \(path)") { rename(temporary, path) }
            renamed = true
            let dir = try Syscall.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try Syscall.blocking("fsync \(directory)") { fsync(dir.raw) }
            try dir.close()
        } catch {
            throw CASetupError("cannot write \(path): \(error); check that \(directory) exists, is writable and the disk has room")
        }
    }

    static func read(_ path: String, maxBytes: Int, ownerOnly: Bool = true) throws(CASetupError) -> [UInt8] {
        let file: FileDescriptor
        do { file = try Syscall.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } catch {
            throw CASetupError(error.errno == ENOENT
                ? "\(path) is missing; is --dir the directory `mentormate-ca init` made?"
                : "cannot open \(path): \(error.errnoDescription)")
        }
        let info: stat
        do { info = try Syscall.status(file) } catch { throw CASetupError("cannot stat \(path): \(error.errnoDescription)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw CASetupError("\(path) is not a regular file") }
        if ownerOnly && info.st_mode & 0o077 != 0 {
            throw CASetupError("\(path) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users can read it; run `chmod 600 \(path)` (and if others may have copied it, make a new CA)")
        }
        guard info.st_size <= maxBytes else { throw CASetupError("\(path) is \(info.st_size) bytes, more than the \(maxBytes) allowed") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var filled = 0
        while filled < bytes.count {
            let result: IOResult<Int>
            do { result = try Syscall.read(file, into: &bytes, from: filled) } catch {
                throw CASetupError("cannot read \(path): \(error.errnoDescription)")
            }
            guard case .done(let n) = result, n > 0 else { break }
            filled += n
        }
        return Array(bytes[..<min(filled, Int(info.st_size))])
    }
}

extension String {
    /// Without spaces and tabs at either end.
    var caTrimmed: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
