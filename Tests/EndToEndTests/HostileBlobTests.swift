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

    /// A peer that names a photo and never answers the `wantBlob` for it
    /// (`mentormate-hostile-peer silent-blob`, which keeps the link alive): the daemon ends the
    /// link after `blobAnswerTimeout` (30 s) so the photo can be asked of another peer, and does
    /// not count it as an offence. The old daemon waited on that peer for as long as the link
    /// lived, so nobody else was ever asked for that photo.
    @Test func aPeerThatNeverAnswersAPhotoRequestLosesTheLinkButIsNotPunished() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let hostilePeer = try Binaries.tool("mentormate-hostile-peer")
        let socketA = e2e.path("a.sock")
        let a = try e2e.startDaemon(stateDir: e2e.path("state-a"), socket: socketA)
        defer { a.kill() }
        let portA = try listenPort(e2e, socketA)
        let address = "127.0.0.52"
        let (status, output) = try e2e.tool([hostilePeer, "127.0.0.1", "\(portA)", "silent-blob", "--from", address, "--wait", "60"],
                                            timeout: .seconds(90))
        let after = output.split(separator: "\n").first { $0.hasPrefix("result silent-blob closed=true after=") }
            .flatMap { Int($0.split(separator: "=").last ?? "") }
        #expect(status.exitCode == 0 && after != nil, "A should close the link of a peer that ignores its photo request: \(output)\nlog A:\n\(a.log)")
        if let after { #expect((25...45).contains(after), "closed \(after) s after asking; the timeout is 30 s") }
        let named = a.log.split(separator: "\n").filter { $0.contains("peer.address=\(address):") }
        #expect(named.contains { $0.contains("no answer to a photo request") }, "A's log should say why: \(named)")
        #expect(!named.contains { $0.contains("peer refused for a while") }, "ignoring a photo request is no offence: \(named)")
        a.kill()
    }
}
