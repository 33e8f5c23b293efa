#if canImport(Glibc)
import Glibc
#endif
import MentorSystem
import Testing

/// `HostPort`: how `--peer`, `--listen`, `peers` and `status` read and write addresses — IPv6 in
/// brackets with its `%scope`, IPv4-mapped addresses shown as IPv4, link-local answers scoped.
@Suite struct HostPortTests {
    @Test func hostsAndPortsAreSplitWithIPv6InBrackets() throws {
        #expect(try HostPort.parse("169.254.77.1:7000") == ("169.254.77.1", 7000))
        #expect(try HostPort.parse("[fd00:77::1]:7000") == ("fd00:77::1", 7000))
        #expect(try HostPort.parse("[fe80::1%eth0]:4711") == ("fe80::1%eth0", 4711))
        #expect(try HostPort.parse("[fe80::1%2]:4711") == ("fe80::1%2", 4711))
        #expect(try HostPort.parse("[::]:0") == ("::", 0))
        #expect(try HostPort.parse("lab-7.uni.edu:4711") == ("lab-7.uni.edu", 4711))
    }

    @Test func malformedAddressesAreRefusedSayingWhatToWrite() {
        func reason(_ text: String) -> String {
            do { _ = try HostPort.parse(text); return "accepted" } catch { return error.description }
        }
        #expect(reason("fd00:77::1:7000").contains("in brackets, e.g. [fd00:77::1]:7000"))
        #expect(reason("fe80::1%eth0:7000").contains("in brackets"))
        #expect(reason("[fe80::1%eth0]").contains("port is missing"))
        #expect(reason("[fe80::1%eth0]7000").contains("port is missing"))
        #expect(reason("[10.0.0.1]:7000").contains("only an IPv6 address goes in brackets"))
        #expect(reason("[fe80::1%]:7000").contains("interface name"))
        #expect(reason("[fe80::1%a/b]:7000").contains("interface name"))
        #expect(reason("[fe80::1%averyveryverylongname]:7000").contains("interface name"))
        #expect(reason("[fe80::1:7000").contains("without its ']'"))
        #expect(reason("10.0.0.1:70000").contains("0 to 65535"))
        #expect(reason("10.0.0.1:+7").contains("0 to 65535"))
        #expect(reason("10.0.0.1").contains("port is missing"))
        #expect(reason(":7000").contains("host is missing"))
        #expect(reason("10.0.0.1:").contains("0 to 65535"))
    }

    @Test func addressesAreWrittenOneWay() {
        #expect(HostPort.format(host: "169.254.77.1", port: 7000) == "169.254.77.1:7000")
        #expect(HostPort.format(host: "fe80::1%eth0", port: 7000) == "[fe80::1%eth0]:7000")
        #expect(HostPort.format(host: "::", port: 0) == "[::]:0")
        #expect(HostPort.format(host: "peer.example", port: 1) == "peer.example:1")
    }

    @Test func canonicalFormShowsMappedIPv4AsIPv4AndShortensIPv6() {
        #expect(HostPort.canonical("::ffff:169.254.77.1") == "169.254.77.1")
        #expect(HostPort.canonical("FD00:0077:0000:0000:0000:0000:0000:0001") == "fd00:77::1")
        #expect(HostPort.canonical("fe80::1%eth0") == "fe80::1%eth0")
        #expect(HostPort.canonical("169.254.77.1") == "169.254.77.1")
        #expect(HostPort.canonical("peer.example") == "peer.example")
        // A numeric scope becomes the interface's name (index 1 is the loopback's, "lo" here).
        if let lo = HostPort.interfaceName(1) { #expect(HostPort.canonical("fe80::1%1") == "fe80::1%\(lo)") }
        #expect(HostPort.canonical("fe80::1%999999") == "fe80::1%999999", "no such interface: kept as written")
    }

    @Test func linkLocalAnswersGetTheInterfaceTheyCameOn() {
        let lo = HostPort.interfaceName(1) ?? "1"
        #expect(HostPort.scoped("fe80::1", interfaceIndex: 1) == "fe80::1%\(lo)")
        #expect(HostPort.scoped("fe80::1%eth0", interfaceIndex: 1) == "fe80::1%eth0", "a scope given stays")
        #expect(HostPort.scoped("fd00:77::1", interfaceIndex: 1) == "fd00:77::1", "a global address needs none")
        #expect(HostPort.scoped("169.254.77.1", interfaceIndex: 1) == "169.254.77.1")
        #expect(HostPort.scoped("fe80::1", interfaceIndex: 0) == "fe80::1", "no interface known")
        #expect(HostPort.scoped("fe80::1", interfaceIndex: 999_999) == "fe80::1%999999")
        #expect(HostPort.isLinkLocalIPv6("fe80::1%eth0") && HostPort.isLinkLocalIPv6("febf::1") && !HostPort.isLinkLocalIPv6("fec0::1"))
        #expect(HostPort.isIPv6("::1") && !HostPort.isIPv6("10.0.0.1") && !HostPort.isIPv6("host"))
    }

    @Test func theMachinesAddressesIncludeTheLoopbackMarkedAsSuch() throws {
        let addresses = try Syscall.interfaceAddresses()
        #expect(addresses.contains { $0.loopback && $0.address == "127.0.0.1" && $0.running }, "\(addresses)")
    }
}
