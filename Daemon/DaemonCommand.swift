import MentorAPI
import MentorArguments
import MentorCrypto
import MentorNet
import MentorNode
import MentorSystem

/// `mentormated`'s flags (SPEC §5). Flags win over the config file.
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: "mentormated", path: [],
        abstract: "the MentorMate peer-to-peer sync daemon",
        discussion: """
            Without root it runs in user mode: state in $XDG_STATE_HOME/mentormate, the API socket in
            $XDG_RUNTIME_DIR/mentormate/api.sock. As root (or under systemd) it uses /var/lib/mentormate
            and /run/mentormate/api.sock. Every config-file key is described in docs/OPERATIONS.md.
            Signals: SIGTERM/SIGINT stop gracefully, SIGHUP reloads the config file.
            """)

    var stateDir: String?
    var socket: String?
    var listen: String?
    var peers: [String] = []
    var noMDNS = false
    var hub = false
    var browseDomains: [String] = []
    var config: String?
    var networkKey: String?
    var networkWorkBits: String?
    var logLevel: String?
    /// Tests only: the daemon's wall clock runs this many seconds ahead (negative: behind).
    var testClockOffset: String?
    var help = false
    var version = false

    static var options: [CommandOption<DaemonCommand>] { [
        .string("--state-dir", value: "DIR", \.stateDir, help: "where the replica and keys live"),
        .string("--socket", value: "PATH", \.socket, help: "the API socket (also MENTORMATE_SOCKET)"),
        .string("--listen", value: "HOST:PORT", \.listen, help: "address for peers; port 0 picks a free port (see `mentormate status`)"),
        .appending("--peer", value: "HOST:PORT", \.peers, help: "a static peer; repeat for more"),
        .flag("--no-mdns", \.noMDNS, help: "do not discover peers over mDNS"),
        .flag("--hub", \.hub, help: "run as a hub: no accounts, links for a building (2,500), advertised as a hub (PROTOCOL.md §13.5)"),
        .appending("--browse-domain", value: "DOMAIN", \.browseDomains,
                   help: "also browse this unicast DNS domain for peers (wide-area DNS-SD); repeat for more"),
        .string("--config", value: "FILE", \.config, help: "read settings from FILE (key = value lines)"),
        .string("--network-key", value: "FILE", \.networkKey, help: "a 32-byte network key file (default: the built-in key)"),
        .string("--network-work-bits", value: "N", \.networkWorkBits,
                help: "the network's proof-of-work difficulty for new accounts, 0-\(AccountWork.maxBits) bits (default \(AccountWork.defaultBits); the same on every node)"),
        .choice("--log-level", LogLevel.configurable.map(\.description), \.logLevel, help: "the least important level logged"),
        .string("--test-clock-offset", value: "SECONDS", \.testClockOffset,
                help: "FOR TESTS ONLY: run the wall clock SECONDS ahead (negative: behind), e.g. 10800 for a clock 3 h fast"),
        .flag("--help", short: "-h", \.help, help: "show this help"),
        .flag("--version", \.version, help: "print the version"),
    ] }

    /// Defaults, then the config file, then these flags.
    func configuration(systemMode: Bool, environment: [String: String], readFile: (String) throws -> String) throws(DaemonError) -> DaemonConfiguration {
        var c = DaemonConfiguration.defaults(systemMode: systemMode, environment: environment)
        if let socket = SocketPath.resolve(flag: socket, environment: environment, systemMode: systemMode) as String? {
            c.socketPath = socket
        }
        if let config {
            let text: String
            do { text = try readFile(config) } catch {
                throw DaemonError("cannot read the config file \(config): \(error)", hint: "check the path given to --config")
            }
            do { try c.apply(file: text, path: config) } catch {
                throw DaemonError("bad config file: \(error)", hint: "docs/OPERATIONS.md lists every setting")
            }
            // A socket given by flag or environment still wins over the file.
            if self.socket != nil || environment["MENTORMATE_SOCKET"] != nil {
                c.socketPath = SocketPath.resolve(flag: self.socket, environment: environment, systemMode: systemMode)
            }
        }
        do {
            if let stateDir { try c.set("state_dir", stateDir) }
            if let listen { try c.set("listen", listen) }
            for p in peers { try c.set("peer", p) }
            if noMDNS { c.mdns = false }
            if hub { c.hub = true }
            for d in browseDomains { try c.set("browse_domain", d) }
            if let networkKey { try c.set("network_key_file", networkKey) }
            if let networkWorkBits { try c.set("network_work_bits", networkWorkBits) }
            if let logLevel { try c.set("log_level", logLevel) }
        } catch {
            throw DaemonError(error.message, hint: "`mentormated --help` lists the flags")
        }
        if c.requireMembership && c.campusCAKey == nil {
            throw DaemonError("require_membership = true needs campus_ca_key: without the campus CA's key no account can be a member",
                              hint: "set campus_ca_key to what `mentormate-ca key` prints (docs/OPERATIONS.md, \"A campus CA\")")
        }
        return c
    }
}

extension DaemonCommand {
    /// `--test-clock-offset` in milliseconds (0 without it): a whole number of seconds within
    /// ±10 years. The one wall clock of the daemon (record timestamps, the replica's "is it
    /// due", `status` times) is read through it, so a test can run a node whose clock is wrong.
    func clockOffsetMillis() throws(DaemonError) -> Int64 {
        guard let text = testClockOffset else { return 0 }
        guard let seconds = Int64(text), abs(seconds) <= 10 * 366 * 86_400 else {
            throw DaemonError("--test-clock-offset must be a whole number of seconds (at most ten years either way), not \"\(text)\"",
                              hint: "e.g. --test-clock-offset 10800 runs the clock 3 h ahead; the flag is for tests only")
        }
        return seconds * 1000
    }
}

struct DaemonError: Error, CustomStringConvertible {
    var message: String
    var hint: String?
    init(_ message: String, hint: String? = nil) { self.message = message; self.hint = hint }
    var description: String { message }
}
