#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket address (`sockaddr_un`) for a path. Shared by the client (`RPCClient`) and the
/// daemon's listener (MentorNet), so the path rules live in one place.
public struct UnixSocketAddress: Sendable {
    /// `sun_path` holds 108 bytes including the terminating NUL.
    public static let maxPathBytes = 107

    public let path: String
    private let pathBytes: [UInt8]

    /// Nil when `path` is empty, contains a NUL byte, or is longer than `maxPathBytes`.
    public init?(path: String) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxPathBytes, !bytes.contains(0) else { return nil }
        self.path = path
        self.pathBytes = bytes
    }

    /// Calls `body` with the address and its length, for `bind` and `connect`.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}

/// One resolved socket address (IPv4 or IPv6), as `getaddrinfo` gave it.
public struct ResolvedAddress: Sendable {
    public var storage = sockaddr_storage()
    public var length: socklen_t = 0
    public init() {}
    public var family: Int32 { Int32(storage.ss_family) }
    /// 127.0.0.0/8 or ::1 (a source address there reaches only this machine).
    public var isLoopback: Bool {
        withUnsafePointer(to: storage) { pointer in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127 }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    withUnsafeBytes(of: a.pointee.sin6_addr) { b in b.prefix(15).allSatisfy { $0 == 0 } && b[15] == 1 }
                }
            default:
                return false
            }
        }
    }

    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

/// Host and port as people write them and as MentorMate shows them: `169.254.77.1:7000`,
/// `[fd00:77::1]:7000`, `[fe80::1%eth0]:7000` (an IPv6 address always in brackets, a link-local
/// one with its interface after `%`), `peer.example:7000`. One place for the rules, so `--peer`,
/// `--listen`, `peers`, `status` and the logs agree.
public enum HostPort {
    /// Why a `HOST:PORT` text was refused; `description` says what to write instead.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let text: String
        public let reason: String
        public var description: String { "'\(text)' is not HOST:PORT: \(reason)" }
    }

    /// Splits `HOST:PORT`. An IPv6 address must be in brackets (`[fe80::1%eth0]:7000`): without
    /// them its last group could be read as the port. The scope (`%eth0` or `%2`) is kept as
    /// written; the interface need not exist yet (dialling says so when it does not).
    public static func parse(_ text: String) throws(ParseError) -> (host: String, port: UInt16) {
        func fail(_ reason: String) -> ParseError { ParseError(text: text, reason: reason) }
        let host: String
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw fail("a '[' without its ']'") }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw fail("the port is missing after ']' (e.g. [\(host)]:7000)") }
            portText = rest.dropFirst()
            guard isIPv6(host) else { throw fail("only an IPv6 address goes in brackets, not '\(host)'") }
            if let scope = scope(of: host), !isValidScope(scope) {
                throw fail("'\(scope)' is not an interface name or index (after '%', e.g. %eth0)")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw fail("the port is missing (e.g. \(text):7000)") }
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.contains(":") {
                throw fail("an IPv6 address with a port goes in brackets, e.g. [\(host)]:\(portText.isEmpty ? "7000" : String(portText))")
            }
        }
        guard !host.isEmpty else { throw fail("the host is missing") }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber), let port = UInt16(portText) else {
            throw fail("the port must be a number from 0 to 65535, not '\(portText)'")
        }
        return (host, port)
    }

    /// `host:port`, with an IPv6 host in brackets.
    public static func format(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether `host` is a numeric IPv6 address (a `%scope` after it allowed).
    public static func isIPv6(_ host: String) -> Bool { ipv6Bytes(withoutScope(host)) != nil }

    /// Whether `host` is an IPv6 link-local address (fe80::/10), which needs an interface.
    public static func isLinkLocalIPv6(_ host: String) -> Bool {
        guard let bytes = ipv6Bytes(withoutScope(host)) else { return false }
        return bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
    }

    /// The `%scope` part of an IPv6 address, if any.
    public static func scope(of host: String) -> String? {
        guard let percent = host.firstIndex(of: "%") else { return nil }
        return String(host[host.index(after: percent)...])
    }

    /// `host` without its `%scope`.
    public static func withoutScope(_ host: String) -> String {
        host.firstIndex(of: "%").map { String(host[..<$0]) } ?? host
    }

    /// An address as MentorMate shows and compares it: an IPv4-mapped IPv6 address
    /// (`::ffff:169.254.77.1`, what a dual-stack listener sees of an IPv4 peer) as plain IPv4,
    /// IPv6 in its short form (RFC 5952, lower case) with a numeric scope turned into the
    /// interface's name when it has one. Names and anything else come back unchanged.
    public static func canonical(_ host: String) -> String {
        let bare = withoutScope(host)
        guard let bytes = ipv6Bytes(bare) else { return host }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        var text = ipv6Text(bytes) ?? bare
        if let scope = scope(of: host), !scope.isEmpty {
            if let index = UInt32(scope), let name = interfaceName(index) { text += "%" + name } else { text += "%" + scope }
        }
        return text
    }

    /// `address` (numeric IPv6 from an mDNS answer) with the interface it was found on, when it
    /// is link-local and has none: `fe80::1` on interface 2 → `fe80::1%eth0` (the index when
    /// the interface has no name any more). Other addresses come back unchanged.
    public static func scoped(_ address: String, interfaceIndex: UInt32) -> String {
        guard interfaceIndex != 0, scope(of: address) == nil, isLinkLocalIPv6(address) else { return address }
        return address + "%" + (interfaceName(interfaceIndex) ?? String(interfaceIndex))
    }

    /// The name of interface `index` (`if_indextoname`), nil when there is none.
    public static func interfaceName(_ index: UInt32) -> String? {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return nil }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An interface name (at most 15 bytes, no '/', no space) or a decimal index.
    static func isValidScope(_ scope: String) -> Bool {
        let bytes = Array(scope.utf8)
        return !bytes.isEmpty && bytes.count < Int(IF_NAMESIZE)
            && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "%") }
    }

    static func ipv6Bytes(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard text.contains(":"), inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address) { Array($0) }
    }

    static func ipv6Text(_ bytes: [UInt8]) -> String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let done = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
        guard done != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
