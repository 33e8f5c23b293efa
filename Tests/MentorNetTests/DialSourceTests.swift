#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
@testable import MentorNet
import Synchronization
import Testing
import MentorSystem

/// The dialler binds its socket to the node's listen address when that is one specific
/// address, so a listener sees the link come from there (daemons on 127.0.0.N of one machine,
/// multi-homed hosts), and leaves the source to the kernel for 0.0.0.0.
@Suite struct DialSourceTests {
    /// Dials the listener from `source`; the remote address the listener accepted.
    func acceptedFrom(listener: TCPListener, source: String?) async throws -> String {
        let queue = DispatchQueue(label: "DialSourceTests")
        let stream: UncheckedBox<TCPStream> = try await withCheckedThrowingContinuation { continuation in
            TCPDialer.connect(host: listener.host, port: listener.boundPort, source: source, timeout: .seconds(10), queue: queue) { result in
                switch result {
                case .failure(let error): continuation.resume(throwing: error)
                case .success(let s): continuation.resume(returning: UncheckedBox(s))
                }
            }
        }
        defer { stream.value.close() }
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            if case .done(let accepted) = try listener.accept() {
                defer { accepted.close() }
                return accepted.remote.host
            }
            usleep(5_000)
        }
        throw SystemError(.system, errno: ETIMEDOUT, "no connection accepted")
    }

    @Test func aSpecificListenAddressIsTheSourceOfDials() async throws {
        let listener = try TCPListener(host: "127.0.0.4", port: 0)
        defer { listener.close() }
        #expect(try await acceptedFrom(listener: listener, source: "127.0.0.5") == "127.0.0.5")
        #expect(try await acceptedFrom(listener: listener, source: "127.0.0.6") == "127.0.0.6")
    }

    @Test func anUnspecifiedListenAddressLeavesTheSourceToTheKernel() async throws {
        let listener = try TCPListener(host: "127.0.0.4", port: 0)
        defer { listener.close() }
        #expect(try await acceptedFrom(listener: listener, source: "0.0.0.0") == "127.0.0.1")
        #expect(try await acceptedFrom(listener: listener, source: nil) == "127.0.0.1")
        #expect(!TCPDialer.isSpecific("::") && !TCPDialer.isSpecific("") && TCPDialer.isSpecific("10.0.0.2"))
    }
}
