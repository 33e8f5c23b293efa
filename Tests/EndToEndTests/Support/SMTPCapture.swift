import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A mail relay for tests: an SMTP server on 127.0.0.1 (port chosen by the kernel) that takes
/// every message and keeps its DATA (dot-stuffing undone). One connection at a time, on its own
/// Thread with blocking sockets; `stop()` closes it and waits for the thread.
final class SMTPCapture: @unchecked Sendable {
    let port: Int
    private let listenFD: Int32
    private let lock = NSLock()
    private var stopped = false
    private var messages: [String] = []
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        (listenFD, port) = try loopbackListener(backlog: 8, what: "smtp")
        Thread { [self] in serve(); finished.signal() }.start()
    }

    deinit { stop() }

    /// The messages taken so far (headers and body, CRLF line ends).
    var received: [String] { lock.withLock { messages } }

    func stop() {
        guard lock.withLock({ () -> Bool in defer { stopped = true }; return !stopped }) else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 10)
    }

    private func serve() {
        defer { close(listenFD) }
        while !lock.withLock({ stopped }) {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 200) > 0 else { continue }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            converse(client)
            close(client)
        }
    }

    /// 220, then 250 to everything but DATA (354, then the message up to "." and 250) and QUIT (221).
    private func converse(_ fd: Int32) {
        var buffer: [UInt8] = []
        func send(_ line: String) { let bytes = Array((line + "\r\n").utf8); _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        func readLine() -> String? {
            while true {
                if let end = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<end], as: UTF8.self)
                    buffer.removeFirst(end + 1)
                    return line.hasSuffix("\r") ? String(line.dropLast()) : line
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(fd, &chunk, chunk.count)
                guard n > 0 else { return nil }
                buffer += chunk[..<n]
            }
        }
        send("220 capture.test ESMTP")
        while let line = readLine() {
            let verb = line.prefix(4).uppercased()
            if verb == "QUIT" { send("221 bye"); return }
            guard verb == "DATA" else { send("250 ok"); continue }
            send("354 go on")
            var data: [String] = []
            while let l = readLine(), l != "." { data.append(l.hasPrefix("..") ? String(l.dropFirst()) : l) }
            lock.withLock { messages.append(data.joined(separator: "\r\n")) }
            send("250 taken")
        }
    }
}
