/// A DNS-SD call failed: the `DNSServiceErrorType` as a named `code`, and `what` was being done
/// ("register _mentormate._tcp", "browse _mentormate._tcp").
///
/// Match by code, never by message:
///
/// ```swift
/// case .failed(let error) where error.code == .unknown:  // Avahi or D-Bus is not reachable
/// ```
///
/// With Avahi's compatibility library most failures arrive as `.unknown` (-65537): it is what a
/// missing D-Bus system bus, a stopped avahi-daemon, or a daemon that went away all map to. A
/// caller retries those with backoff.
public struct DNSSDError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Code
    /// What was being done, naming the service type or instance.
    public let what: String

    public init(_ code: Code, _ what: String) {
        self.code = code
        self.what = what
    }

    /// "register _mentormate._tcp: kDNSServiceErr_Unknown (-65537), Avahi/D-Bus unreachable; fix".
    public var description: String {
        var text = "\(what): \(code.name) (\(code.rawValue)), \(code.meaning)"
        if let fix = code.fix { text += "; " + fix }
        return text
    }

    /// A `DNSServiceErrorType` value, with its name from `dns_sd.h`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let unknown = Code(rawValue: -65537)
        public static let noSuchName = Code(rawValue: -65538)
        public static let noMemory = Code(rawValue: -65539)
        public static let badParam = Code(rawValue: -65540)
        public static let badReference = Code(rawValue: -65541)
        public static let badState = Code(rawValue: -65542)
        public static let badFlags = Code(rawValue: -65543)
        public static let unsupported = Code(rawValue: -65544)
        public static let notInitialized = Code(rawValue: -65545)
        public static let alreadyRegistered = Code(rawValue: -65547)
        public static let nameConflict = Code(rawValue: -65548)
        public static let invalid = Code(rawValue: -65549)
        public static let firewall = Code(rawValue: -65550)
        public static let incompatible = Code(rawValue: -65551)
        public static let badInterfaceIndex = Code(rawValue: -65552)
        public static let refused = Code(rawValue: -65553)
        public static let noSuchRecord = Code(rawValue: -65554)
        public static let noAuth = Code(rawValue: -65555)
        public static let noSuchKey = Code(rawValue: -65556)
        public static let natTraversal = Code(rawValue: -65557)
        public static let doubleNAT = Code(rawValue: -65558)
        public static let badTime = Code(rawValue: -65559)
        /// Apple's mDNSResponder only (not in Avahi's header): the daemon is not running.
        public static let serviceNotRunning = Code(rawValue: -65563)

        private static let names: [Code: (name: String, meaning: String)] = [
            .unknown: ("kDNSServiceErr_Unknown", "Avahi/D-Bus unreachable"),
            .noSuchName: ("kDNSServiceErr_NoSuchName", "no such name"),
            .noMemory: ("kDNSServiceErr_NoMemory", "out of memory"),
            .badParam: ("kDNSServiceErr_BadParam", "a parameter was refused (name, type, port or TXT)"),
            .badReference: ("kDNSServiceErr_BadReference", "bad service reference"),
            .badState: ("kDNSServiceErr_BadState", "Avahi is in the wrong state for this call"),
            .badFlags: ("kDNSServiceErr_BadFlags", "flags refused"),
            .unsupported: ("kDNSServiceErr_Unsupported", "not supported by Avahi's compatibility library"),
            .notInitialized: ("kDNSServiceErr_NotInitialized", "not initialized"),
            .alreadyRegistered: ("kDNSServiceErr_AlreadyRegistered", "already registered"),
            .nameConflict: ("kDNSServiceErr_NameConflict", "the name is taken"),
            .invalid: ("kDNSServiceErr_Invalid", "invalid operation"),
            .firewall: ("kDNSServiceErr_Firewall", "blocked by a firewall"),
            .incompatible: ("kDNSServiceErr_Incompatible", "client library and daemon versions do not match"),
            .badInterfaceIndex: ("kDNSServiceErr_BadInterfaceIndex", "no such interface"),
            .refused: ("kDNSServiceErr_Refused", "refused by Avahi (too many clients or objects, or access denied)"),
            .noSuchRecord: ("kDNSServiceErr_NoSuchRecord", "no such record"),
            .noAuth: ("kDNSServiceErr_NoAuth", "not authorized"),
            .noSuchKey: ("kDNSServiceErr_NoSuchKey", "no such key"),
            .natTraversal: ("kDNSServiceErr_NATTraversal", "NAT traversal failed"),
            .doubleNAT: ("kDNSServiceErr_DoubleNAT", "double NAT"),
            .badTime: ("kDNSServiceErr_BadTime", "bad time"),
            .serviceNotRunning: ("kDNSServiceErr_ServiceNotRunning", "the mDNS daemon is not running"),
        ]

        /// The constant's name in `dns_sd.h`, e.g. "kDNSServiceErr_Unknown".
        public var name: String { Self.names[self]?.name ?? "DNSServiceErrorType" }
        /// What it means here, e.g. "Avahi/D-Bus unreachable".
        public var meaning: String { Self.names[self]?.meaning ?? "unknown error code" }
        /// What a user can do about it, where there is something.
        public var fix: String? {
            switch self {
            case .unknown, .serviceNotRunning:
                "check that the D-Bus system bus and avahi-daemon run (systemctl status dbus avahi-daemon)"
            case .refused:
                "check avahi-daemon's limits and D-Bus policy (/etc/avahi/avahi-daemon.conf, avahi-dbus.conf)"
            case .incompatible:
                "install matching avahi-daemon and libavahi-compat-libdnssd1 versions"
            default: nil
            }
        }

        public var description: String { "\(name) (\(rawValue))" }

        /// Lets a `catch` clause match on a code: `catch DNSSDError.Code.unknown { ... }`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? DNSSDError)?.code == pattern
        }
    }
}
