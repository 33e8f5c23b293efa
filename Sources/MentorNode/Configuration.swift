import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorSystem

/// The daemon's settings: defaults, then the config file, then the command-line flags (flags
/// win). Documented key by key in docs/OPERATIONS.md.
public struct DaemonConfiguration: Sendable, Equatable {
    public var stateDirectory: String
    public var socketPath: String
    public var listen: String = "[::]:0"
    public var peers: [String] = []
    public var mdns: Bool = true
    public var networkKeyFile: String?
    /// The network's difficulty: leading zero bits of proof of work an account's first record
    /// must carry (PROTOCOL.md §6.1); 0 asks for none. A parameter of the network like its key:
    /// every node of a network must use the same value.
    public var networkWorkBits = AccountWork.defaultBits
    public var logLevel: LogLevel = .info
    public var emailDomains: [String] = []
    /// The youngest age a person may sign up at here (nil: no limit); signup then needs a birth date.
    public var minAge: Int?
    /// Campus areas (buildings, zones) a card's area may name; empty: any.
    public var areas: [String] = []
    /// Records per second one peer may make us apply (sustained; the burst is one second's worth).
    public var peerRecordsPerSecond = 20_000
    /// API connections one Unix user may hold at once.
    public var apiConnectionsPerUser = 32
    /// API connections with a subscription one Unix user may hold (exempt from the idle timeout).
    public var apiSubscriptionsPerUser = 8
    /// Seconds after which an idle API connection is closed; 0 = never.
    public var apiIdleTimeout = 300
    /// Passphrase checks (Argon2id, 256 MiB each) that may run at once; more wait their turn.
    public var passphraseChecksAtOnce = 1
    /// Storage budgets (§13.4 of PROTOCOL.md), in MiB: one author's records and photos, and all photos.
    public var authorStorageMiB = 64
    public var photoStorageMiB = 2048
    /// The node-wide budget (issue 13 item 4): foreign accounts held, and MiB of their records.
    /// Past it the node degrades — keeps its own accounts, partners, nearby accounts and those
    /// it holds, declines new strangers — and never stops syncing (OPERATIONS.md).
    public var foreignAccountsMax = 1_000_000
    public var foreignStorageMiB = 2048
    /// Runs as a hub (PROTOCOL.md §13.5): no accounts, many links, advertised with TXT `hub=1`.
    public var hub = false
    /// Unicast DNS domains browsed for `_mentormate._tcp` besides those Avahi is configured for
    /// (wide-area DNS-SD, OPERATIONS.md); at most `maxBrowseDomains`.
    public var browseDomains: [String] = []
    public static let maxBrowseDomains = 8
    /// Peer links accepted in all, and from one IP address (nil: the default, larger on a hub).
    public var maxPeerLinks: Int?
    public var maxPeerLinksPerAddress: Int?
    /// The default of `max_peer_links`: 256, or on a hub 2,500 (a building of 2,000 nodes and room).
    public var effectiveMaxPeerLinks: Int { maxPeerLinks ?? (hub ? 2_500 : 256) }
    public var effectiveMaxPeerLinksPerAddress: Int { maxPeerLinksPerAddress ?? 8 }
    /// The campus certifying authority's key (`mentormate-ca key`, PROTOCOL.md §6.8): cards
    /// carrying a current certificate it signed are shown as its campus's members.
    public var campusCAKey: PublicKey?
    /// Show, store and relay only the records of accounts the campus CA certified (this node's
    /// own accounts aside). Needs `campus_ca_key`.
    public var requireMembership = false
    /// Where `mentormate member request` reaches the campus CA (host:port), shown in `status`.
    public var campusCA: String?
    /// Set by the config file only when the file named it (so flags can tell what to override).
    public var configFile: String?

    /// Defaults for user mode (XDG directories) or system mode (/var/lib, /run).
    public static func defaults(systemMode: Bool, environment: [String: String]) -> DaemonConfiguration {
        let state: String
        if systemMode {
            state = environment["STATE_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) } ?? "/var/lib/mentormate"
        } else if let x = environment["XDG_STATE_HOME"], !x.isEmpty {
            state = x + "/mentormate"
        } else {
            state = (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state/mentormate"
        }
        return DaemonConfiguration(stateDirectory: state,
                                   socketPath: SocketPath.resolve(flag: nil, environment: environment, systemMode: systemMode))
    }

    public struct FileError: Error, Equatable, Sendable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var message: String
        public var description: String { line > 0 ? "\(path):\(line): \(message)" : "\(path): \(message)" }
    }

    public static let keys = ["state_dir", "socket", "listen", "peer", "peers", "mdns", "network_key_file", "network_work_bits", "log_level", "email_domains", "min_age", "areas",
                              "peer_records_per_second", "api_connections_per_user", "api_subscriptions_per_user", "api_idle_timeout",
                              "passphrase_checks_at_once", "author_storage_mb", "photo_storage_mb",
                              "foreign_accounts_max", "foreign_storage_mb",
                              "hub", "browse_domain", "max_peer_links", "max_peer_links_per_address",
                              "campus_ca_key", "require_membership", "campus_ca"]

    /// Applies a config file's `key = value` lines (`#` starts a comment; values may be quoted).
    public mutating func apply(file text: String, path: String) throws(FileError) {
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let eq = trimmed.firstIndex(of: "=") else {
                throw FileError(path: path, line: index + 1, message: "expected `key = value`, got \"\(trimmed)\"")
            }
            let key = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            var value = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            do {
                try set(key, value)
            } catch {
                throw FileError(path: path, line: index + 1, message: error.message)
            }
        }
        configFile = path
    }

    public struct ValueError: Error, Sendable { public var message: String }

    /// Sets one setting by its config-file key (flags use the same checks).
    public mutating func set(_ key: String, _ value: String) throws(ValueError) {
        switch key {
        case "state_dir": stateDirectory = try nonEmpty(key, value)
        case "socket": socketPath = try nonEmpty(key, value)
        case "listen": listen = try Self.checkAddress(key, value)
        case "peer": peers.append(try Self.checkAddress(key, value))
        case "peers":
            for part in value.split(separator: ",") { peers.append(try Self.checkAddress(key, part.trimmingCharacters(in: .whitespaces))) }
        case "mdns":
            switch value.lowercased() {
            case "true", "yes", "on", "1": mdns = true
            case "false", "no", "off", "0": mdns = false
            default: throw ValueError(message: "mdns must be true or false, not \"\(value)\"")
            }
        case "network_key_file": networkKeyFile = try nonEmpty(key, value)
        case "network_work_bits":
            networkWorkBits = try Self.wholeNumber(key, value, 0...AccountWork.maxBits,
                unit: " (leading zero bits of an account's proof of work; 0 asks for none, the default is \(AccountWork.defaultBits); every node of a network must use the same value)")
        case "log_level":
            guard let l = LogLevel(configured: value) else {
                throw ValueError(message: "log_level must be one of \(LogLevel.configurable.map(\.description).joined(separator: ", ")), not \"\(value)\"")
            }
            logLevel = l
        case "peer_records_per_second":
            guard let n = Int(value), (1...1_000_000).contains(n) else {
                throw ValueError(message: "peer_records_per_second must be a whole number from 1 to 1000000, not \"\(value)\"")
            }
            peerRecordsPerSecond = n
        case "api_connections_per_user":
            apiConnectionsPerUser = try Self.wholeNumber(key, value, 1...4096)
        case "api_subscriptions_per_user":
            apiSubscriptionsPerUser = try Self.wholeNumber(key, value, 1...4096)
        case "api_idle_timeout":
            apiIdleTimeout = try Self.wholeNumber(key, value, 0...86_400, unit: " (seconds; 0 keeps idle connections)")
        case "passphrase_checks_at_once":
            // Each run holds 256 MiB; MemoryMax= of the unit is sized for at most 2.
            passphraseChecksAtOnce = try Self.wholeNumber(key, value, 1...4, unit: " (each run takes 256 MiB; the unit's MemoryMax= allows 2)")
        case "author_storage_mb", "photo_storage_mb":
            guard let n = Int(value), (1...1_048_576).contains(n) else {
                throw ValueError(message: "\(key) must be a whole number of MiB from 1 to 1048576, not \"\(value)\"")
            }
            if key == "author_storage_mb" { authorStorageMiB = n } else { photoStorageMiB = n }
        case "foreign_accounts_max":
            foreignAccountsMax = try Self.wholeNumber(key, value, 1...100_000_000,
                                                      unit: " (accounts of other nodes kept; past it new strangers are not stored)")
        case "foreign_storage_mb":
            foreignStorageMiB = try Self.wholeNumber(key, value, 1...1_048_576,
                                                     unit: " MiB (records of other nodes' accounts kept; past it strangers' records are not stored)")
        case "email_domains":
            emailDomains = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
            if let bad = emailDomains.first(where: { !$0.contains(".") || $0.contains("@") || $0.contains(" ") }) {
                throw ValueError(message: "email_domains: \"\(bad)\" is not a domain like uni.edu")
            }
        case "min_age":
            minAge = try Self.wholeNumber(key, value, 13...120, unit: " (years; signup below it is refused)")
        case "areas":
            areas = value.split(separator: ",").map { ProfileCard.normalizeSpaces(String($0)) }.filter { !$0.isEmpty }
            if let bad = areas.first(where: { $0.utf8.count > ProfileCard.maxAreaBytes }) {
                throw ValueError(message: "areas: \"\(bad.prefix(40))…\" is longer than \(ProfileCard.maxAreaBytes) bytes")
            }
        case "hub":
            switch value.lowercased() {
            case "true", "yes", "on", "1": hub = true
            case "false", "no", "off", "0": hub = false
            default: throw ValueError(message: "hub must be true or false, not \"\(value)\"")
            }
        case "browse_domain":
            guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValueError(message: "browse_domain is empty") }
            for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                let domain = try Self.checkDomain(part.trimmingCharacters(in: .whitespaces))
                guard !browseDomains.contains(domain) else { continue }
                guard browseDomains.count < Self.maxBrowseDomains else {
                    throw ValueError(message: "browse_domain: at most \(Self.maxBrowseDomains) domains")
                }
                browseDomains.append(domain)
            }
        case "max_peer_links":
            maxPeerLinks = try Self.wholeNumber(key, value, 1...65_536, unit: " (peer links accepted in all)")
        case "max_peer_links_per_address":
            maxPeerLinksPerAddress = try Self.wholeNumber(key, value, 1...65_536, unit: " (peer links accepted from one IP address)")
        case "campus_ca_key":
            guard let key = MembershipCertificate.parseKey(value) else {
                throw ValueError(message: "campus_ca_key must be a CA key as `mentormate-ca key` prints it (mmca1…), not \"\(value.prefix(70))\"")
            }
            campusCAKey = key
        case "require_membership":
            switch value.lowercased() {
            case "true", "yes", "on", "1": requireMembership = true
            case "false", "no", "off", "0": requireMembership = false
            default: throw ValueError(message: "require_membership must be true or false, not \"\(value)\"")
            }
        case "campus_ca":
            campusCA = try Self.checkAddress(key, value)
        default:
            throw ValueError(message: "unknown setting \"\(key)\"; known settings: \(Self.keys.joined(separator: ", "))")
        }
    }

    private static func wholeNumber(_ key: String, _ value: String, _ range: ClosedRange<Int>, unit: String = "") throws(ValueError) -> Int {
        guard let n = Int(value), range.contains(n) else {
            throw ValueError(message: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)\(unit), not \"\(value)\"")
        }
        return n
    }

    private func nonEmpty(_ key: String, _ value: String) throws(ValueError) -> String {
        guard !value.isEmpty else { throw ValueError(message: "\(key) is empty") }
        return value
    }

    /// A DNS domain to browse (`campus.example.edu`, a trailing dot allowed): labels of letters,
    /// digits, `-` and `_`, 1-63 bytes each, 253 in all; not `local` (mDNS is browsed anyway).
    /// Returned lowercased with a trailing dot.
    public static func checkDomain(_ value: String) throws(ValueError) -> String {
        var name = value.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let okLabel: (Substring) -> Bool = { label in
            (1...63).contains(label.utf8.count) && label.utf8.allSatisfy { c in
                (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
            }
        }
        guard !name.isEmpty, name.utf8.count <= 253, labels.allSatisfy(okLabel) else {
            throw ValueError(message: "browse_domain must be a DNS domain like campus.example.edu, not \"\(value)\"")
        }
        guard name != "local" else {
            throw ValueError(message: "browse_domain: local is browsed over mDNS anyway; name a unicast DNS domain like campus.example.edu")
        }
        return name + "."
    }

    /// HOST:PORT, with [v6]:PORT; port 0...65535.
    public static func checkAddress(_ key: String, _ value: String) throws(ValueError) -> String {
        do { _ = try HostPort.parse(value) } catch {
            throw ValueError(message: "\(key) must be HOST:PORT (e.g. 0.0.0.0:4711, [::]:4711 or [fe80::2%eth0]:4711), not \"\(value)\": \(error.reason)")
        }
        return value
    }

    /// `HostPort.parse`, nil for text that is not HOST:PORT.
    public static func splitAddress(_ value: String) -> (host: String, port: UInt16)? {
        try? HostPort.parse(value)
    }
}

