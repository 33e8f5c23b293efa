import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// A peer that names a photo in a valid card and then serves other bytes under that photo's
    /// hash (`mentormate-hostile-peer wrong-blob`): the daemon checks the bytes against the hash,
    /// ends the session as a violation, refuses the address, and stores no photo for that hash.
    @Test func aPhotoServedWithBytesThatDoNotMatchItsHashIsRefusedAndNotStored() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let address = "127.0.0.51"
        let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "wrong-blob", "--from", address, "--wait", "10"],
                                            timeout: .seconds(60))
        #expect(status.exitCode == 0 && output.contains("result wrong-blob closed=true"),
                "A should ask for the photo and close the peer that served wrong bytes: \(output)\nlog A:\n\(a.log)")
        let named = try poll({ a.log.split(separator: "\n").filter { $0.contains("peer.address=\(address):") } },
                             until: { $0.contains { $0.contains("peer refused for a while") } })
        #expect(named.contains { $0.contains("does not match its hash") } && named.contains { $0.contains("peer refused for a while") },
                "A's log should name \(address) with the hash mismatch and its refusal: \(named)\nlog A:\n\(a.log)")
        #expect(!a.log.contains("a fetched photo was not stored"), "A should not have tried to store the wrong bytes")
        a.kill()
    }
}
