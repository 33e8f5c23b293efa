import Foundation
import MentorCore
import MentorCrypto
import MentorSystem
import Synchronization
import Testing
@testable import MentorCA
#if canImport(Glibc)
import Glibc
#endif

/// A tiny SMTP server on 127.0.0.1 (a free port) that records each message it takes; it can be
/// told to refuse every recipient. Serves one connection at a time on its own thread until
/// `stop()`.
final class SMTPSink: Sendable {
    struct Message: Sendable, Equatable {
        var from: String
        var to: [String]
        /// The message as received, dot-stuffing undone, CRLF line ends.
        var data: String
        /// The lines of the body (after the blank line), without line ends.
        var bodyLines: [String] {
            guard let split = data.range(of: "\r\n\r\n") else { return [] }
            return data[split.upperBound...].components(separatedBy: "\r\n")
        }
    }

    let port: UInt16
    private let listener: Int32
    private let received = Mutex<[Message]>([])
    private let refuseRecipients: Bool
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(refuseRecipients: Bool = false) throws {
        self.refuseRecipients = refuseRecipients
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw TestFailure("SMTP sink cannot listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var messages: [Message] { received.withLock { $0 } }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
    }

    private func serve() {
        defer { finished.signal() }
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            if connection < 0 { if errno == EINTR { continue } else { return } }
            session(connection)
            close(connection)
        }
    }

    private func session(_ fd: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer: [UInt8] = []
        func reply(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        func line() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    var bytes = Array(buffer[..<newline])
                    buffer.removeFirst(newline + 1)
                    if bytes.last == 0x0D { bytes.removeLast() }
                    return String(decoding: bytes, as: UTF8.self)
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = recv(fd, &chunk, chunk.count, 0)
                guard n > 0 else { return nil }
                buffer += chunk[..<n]
            }
        }
        reply("220 sink ESMTP ready\r\n")
        var message = Message(from: "", to: [], data: "")
        while let command = line() {
            let upper = command.uppercased()
            if upper.hasPrefix("EHLO") {
                reply("250-sink greets you\r\n250-8BITMIME\r\n250 SIZE 100000\r\n")
            } else if upper.hasPrefix("MAIL FROM:") {
                message = Message(from: String(command.dropFirst(10)), to: [], data: "")
                reply("250 sender ok\r\n")
            } else if upper.hasPrefix("RCPT TO:") {
                if refuseRecipients { reply("550 5.1.1 no such user here\r\n"); continue }
                message.to.append(String(command.dropFirst(8)))
                reply("250 recipient ok\r\n")
            } else if upper == "DATA" {
                reply("354 go ahead\r\n")
                var lines: [String] = []
                while let text = line(), text != "." { lines.append(text.hasPrefix(".") ? String(text.dropFirst()) : text) }
                message.data = lines.joined(separator: "\r\n")
                received.withLock { $0.append(message) }
                reply("250 queued\r\n")
            } else if upper == "QUIT" {
                reply("221 bye\r\n")
                return
            } else {
                reply("500 what?\r\n")
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A clock the test moves (Unix ms).
final class TestClock: Sendable {
    private let value = Atomic<UInt64>(1_780_000_000_000)
    var now: UInt64 { value.load(ordering: .relaxed) }
    func advance(seconds: UInt64) { value.add(seconds * 1000, ordering: .relaxed) }
    var read: @Sendable () -> UInt64 { { [self] in now } }
}

/// A fresh private directory, removed by `cleanup`.
struct TemporaryDirectory {
    let path: String
    init() throws {
        var template = Array((NSTemporaryDirectory() + "/mentormate-ca-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        path = String(cString: made)
    }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// A CA over a sink (or `relayPort`), a test clock and a state file in a temporary directory.
struct Fixture {
    let directory: TemporaryDirectory
    let clock = TestClock()
    let keys = SigningKeyPair.generate()
    let secret = SecureRandom.bytes(32)
    let sink: SMTPSink?
    let service: CAService
    var statePath: String { directory.path + "/state.json" }

    init(domain: String = "campus.edu", sink: SMTPSink? = nil, relayPort: UInt16? = nil,
         configure: (inout CAConfig) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory()
        let sink = try sink ?? (relayPort == nil ? SMTPSink() : nil)
        self.sink = sink
        var config = CAConfig(domain: domain)
        configure(&config)
        let mailer = SMTPClient(host: "127.0.0.1", port: relayPort ?? sink?.port ?? 0, from: "mentormate-ca@\(domain)",
                                heloName: "ca.test", stepTimeout: .seconds(5))
        service = try CAService(keys: keys, secret: secret, config: config,
                                store: CAStateFile(path: directory.path + "/state.json"), mailer: mailer, now: clock.read)
    }

    func cleanup() {
        sink?.stop()
        directory.cleanup()
    }

    /// The code in the last mail to `address`.
    func lastCode(to address: String) throws -> String {
        let mail = try #require(sink?.messages.last { $0.to == ["<\(address)>"] }, "no mail to \(address)")
        let line = try #require(mail.bodyLines.first { $0.hasPrefix("Your MentorMate code is ") }, "no code line in \(mail.data)")
        return String(line.dropFirst("Your MentorMate code is ".count))
    }

    var stateBytes: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: statePath)))) ?? [] }
}

/// A port nothing listens on (bound, then closed).
func closedPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    close(fd)
    return UInt16(bigEndian: address.sin_port)
}

extension Array where Element == UInt8 {
    func contains(bytes needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        for start in 0...(count - needle.count) where self[start..<start + needle.count].elementsEqual(needle) { return true }
        return false
    }
}

func account() -> PublicKey { SigningKeyPair.generate().publicKey.key }

func refusal<T>(_ body: () throws -> T) -> CAError? {
    do { _ = try body(); return nil } catch let error as CAError { return error } catch { return CAError(.internal, "\(error)") }
}
