import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The socket under the tests' raw clients (Unix API socket, TCP peer port): one owner of the
/// descriptor, a 10 s send timeout so a send never blocks a test for ever, and whole sends.
final class RawSocket {
    private(set) var fd: Int32

    /// A connected stream socket of `domain`; `connect` gets the descriptor and returns its rc.
    init(domain: Int32, describing target: String, connect: (Int32) -> Int32) throws {
        fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw E2EError("socket: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd) == 0 else {
            let why = String(cString: strerror(errno))
            close()
            throw E2EError("connect \(target): \(why)")
        }
    }

    deinit { close() }

    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    /// Half-closes: the daemon sees the end of what we send.
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Sends all of `bytes`; returns 0, or the errno that stopped it (EPIPE, ECONNRESET, EAGAIN
    /// after the send timeout).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n >= 0 { offset += n; continue }
            if errno == EINTR { continue }
            return errno
        }
        return 0
    }
}
