#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorAPI
@testable import MentorNet
import Synchronization
import MentorSystem
import Testing

// The API server's per-user limits with distinct, non-zero users. Under root, `getuid()` is 0 for
// every connection of the test process, so a server that saw every caller as root (or counted
// every user as one) would pass a test that compares with it. Here the server's `identify` gives
// each connection the next user of a list — the test connects one at a time, and the server
// accepts in connection order — and one test (`PeerCredentialTests`) keeps the real `SO_PEERCRED`
// with forked children running as uid 1001 and 1002.

/// The users accepted connections get, in order; a connection beyond the list is `nobody`.
final class UserQueue: Sendable {
    private let uids: Mutex<[UInt32]>
    init(_ uids: [UInt32]) { self.uids = Mutex(uids) }

    /// `settings` with this queue as the server's `identify`.
    func settings(_ settings: APIServer.Settings = .init()) -> APIServer.Settings {
        var settings = settings
        settings.identify = { _ in
            let uid = self.uids.withLock { $0.isEmpty ? 65534 : $0.removeFirst() }
            return Caller(pid: Int32(100_000 + uid), uid: uid, gid: uid)
        }
        return settings
    }
}

@Suite struct PerUserTests {
    /// Echo's answer: the uid the handler was given for the connection.
    static func uid(of client: RawClient) -> Int64? {
        client.request(1, "echo")
        return client.readJSON()?["result"]?["uid"]?.intValue
    }

    @Test func eachUserHasItsOwnConnectionLimitAndIsToldItsOwnUid() async throws {
        var limits = APIServer.Settings()
        limits.maxConnectionsPerUser = 2
        let users = UserQueue([1001, 1001, 1001, 1002, 1002, 1002, 1001, 1002])
        try await withServer(settings: users.settings(limits)) { env in
            let clients = try await offPool { try (0..<6).map { _ in try RawClient(path: env.path) } }
            #expect(await eventually { env.server.connectionCount == 4 }, "two connections for each of two users")
            let seen = try await offPool { [0, 1, 3, 4].map { Self.uid(of: clients[$0]) } }
            #expect(seen == [1001, 1001, 1002, 1002], "each connection is its own user's")
            let refusals = try await offPool { [clients[2].readJSON(), clients[5].readJSON()] }
            for (refusal, uid) in zip(refusals, [1001, 1002]) {
                #expect(refusal?.errorCode == -32010
                            && refusal?.errorMessage?.contains("2 connections of your user (uid \(uid))") == true,
                        "the third of user \(uid): \(String(describing: refusal))")
            }
            let logged = env.logger.lines.withLock { $0.filter { $0.1.contains("per-user limit reached") }.map { $0.2["peer.uid"] } }
            #expect(logged == ["1001", "1002"], "one line per user refused")

            // One of 1001's leaves: 1001 may connect again, 1002 is still at its limit.
            clients[0].close()
            #expect(await eventually { env.server.connectionCount == 3 })
            let (again, stillRefused) = try await offPool { () -> (Int64?, JSON?) in
                let again = try RawClient(path: env.path)
                let uid = Self.uid(of: again)
                return (uid, try RawClient(path: env.path).readJSON())
            }
            #expect(again == 1001)
            #expect(stillRefused?.errorMessage?.contains("(uid 1002)") == true, "\(String(describing: stillRefused))")
            clients.forEach { $0.close() }
        }
    }

    @Test func aReservedUserPassesTheNodeWideLimitThatRefusesOtherUsers() async throws {
        var limits = APIServer.Settings()
        limits.maxConnections = 2
        limits.reservedUsers = [0]
        let users = UserQueue([1001, 1002, 1003, 0])
        try await withServer(settings: users.settings(limits)) { env in
            let clients = try await offPool { try (0..<4).map { _ in try RawClient(path: env.path) } }
            #expect(await eventually { env.server.connectionCount == 3 })
            let (refusal, root) = try await offPool { (clients[2].readJSON(), Self.uid(of: clients[3])) }
            #expect(refusal?.errorCode == -32010 && refusal?.errorMessage?.contains("2 connections, its limit") == true,
                    "user 1003 is over the node-wide limit: \(String(describing: refusal))")
            #expect(root == 0, "the reserved user (root) is served all the same")
            clients.forEach { $0.close() }
        }
    }

    @Test func subscriptionsAreCountedPerUser() async throws {
        var limits = APIServer.Settings()
        limits.maxSubscriptionsPerUser = 1
        let users = UserQueue([1001, 1001, 1002])
        try await withServer(settings: users.settings(limits)) { env in
            let claims = try await offPool { () -> [JSON?] in
                let clients = try (0..<3).map { _ in try RawClient(path: env.path) }
                return clients.map { client in
                    client.request(1, "subscribe")
                    return client.readJSON()?["result"]?["claimed"]
                }
            }
            #expect(claims == [true, false, true], "1001's second is over its limit; 1002 has a limit of its own")
        }
    }
}

/// The real `SO_PEERCRED`: children forked from the test process switch to another user and
/// connect; the server must see that user, not root. Needs root (to switch users).
@Suite(.tags(.root, .multiProcess)) struct PeerCredentialTests {
    @Test func theServerSeesTheUidGidAndPidOfAForkedChildRunningAsAnotherUser() async throws {
        guard getuid() == 0 else {
            Issue.record("needs root (a child switches to uid 1001 and 1002); run as root, or use scripts/test --fast")
            return
        }
        try await withServer(directoryMode: 0o755) { env in
            // The temporary directory is the test's: let the other users through it.
            chmod(env.directory, 0o755)
            for uid: UInt32 in [1001, 1002] {
                let (pid, answer) = try await offPool { try Self.echo(asUser: uid, path: env.path) }
                let result = try #require(JSON.parse(answer)?["result"], "user \(uid)'s answer: \(String(decoding: answer, as: UTF8.self))")
                #expect(result["uid"]?.intValue == Int64(uid) && result["gid"]?.intValue == Int64(uid),
                        "the server saw \(result), not user \(uid)")
                #expect(result["pid"]?.intValue == Int64(pid) && pid != getpid())
            }
            // And the test process itself is root.
            let root = try await offPool { PerUserTests.uid(of: try RawClient(path: env.path)) }
            #expect(root == 0)
        }
    }

    struct ChildFailed: Error, CustomStringConvertible {
        let status: Int32
        var description: String {
            "the child exited with status \(status) (10: setgroups/setgid/setuid, 11: socket/connect, 12: send, 13: read)"
        }
    }

    /// Forks a child that becomes `uid` (gid the same, no groups), connects to `path`, sends an
    /// `echo` request and writes back the first line it reads. Everything the child uses is
    /// made before the fork: it only makes system calls, then `_exit`s.
    static func echo(asUser uid: UInt32, path: String) throws -> (pid: pid_t, line: [UInt8]) {
        guard let address = UnixSocketAddress(path: path) else { throw TestSocketError(what: "path \(path)", code: ENAMETOOLONG) }
        let request = RPCRequest(id: .int(1), method: "echo", params: [:]).line
        let capacity = 1 << 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestSocketError(what: "pipe", code: errno) }
        let pid = fork()
        if pid == 0 {
            close(ends[0])
            guard setgroups(0, nil) == 0, setgid(uid) == 0, setuid(uid) == 0 else { _exit(10) }   // as root: real, effective and saved
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0, address.withSockaddr({ connect(fd, $0, $1) }) == 0 else { _exit(11) }
            let sent = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent == request.count else { _exit(12) }
            var got = 0
            while got < capacity {
                let n = read(fd, buffer + got, capacity - got)
                if n <= 0 { break }
                got += n
                if buffer.load(fromByteOffset: got - 1, as: UInt8.self) == 0x0A { break }
            }
            guard got > 0 else { _exit(13) }
            _ = write(ends[1], buffer, got)
            _exit(0)
        }
        close(ends[1])
        guard pid > 0 else {
            close(ends[0])
            throw TestSocketError(what: "fork", code: errno)
        }
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            line += chunk[..<n]
        }
        close(ends[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exit = (status >> 8) & 0xFF
        guard status & 0x7F == 0, exit == 0 else { throw ChildFailed(status: status & 0x7F == 0 ? exit : -(status & 0x7F)) }
        return (pid, line)
    }
}
