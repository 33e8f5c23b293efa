// mentormate-api-hog SOCKET N
//
// A local user hogging the daemon's API socket, for the API limit tests
// (Tests/EndToEndTests/APILimitTests.swift), which run it as another Unix user with setpriv.
// It opens N connections to SOCKET one after another and holds them open without sending a
// byte. Once all are open it waits until the daemon's answers hold still for a second, then
// looks at each: one on which the daemon wrote something (a refusal line) or which it closed
// counts as refused. It prints
//
//   held=H refused=R
//   refusal=<the first refusal line, or none>
//
// and then holds the rest open until it is killed. Exit status: 1 when a connection could not
// be made at all (message on stderr), 2 for bad arguments.
#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorSystem

func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = Array("mentormate-api-hog: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

func say(_ text: String) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2, let count = Int(arguments[1]), count > 0, let address = UnixSocketAddress(path: arguments[0]) else {
    fail("usage: mentormate-api-hog SOCKET N", status: 2)
}

var descriptors: [Int32] = []
for n in 1...count {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket (connection \(n)): \(String(cString: strerror(errno)))") }
    var result: Int32
    repeat { result = address.withSockaddr { connect(fd, $0, $1) } } while result != 0 && errno == EINTR
    guard result == 0 else { fail("connect \(arguments[0]) (connection \(n)): \(String(cString: strerror(errno)))") }
    descriptors.append(fd)
}

/// Connections on which the daemon has written or which it closed.
@MainActor func answered() -> Int {
    descriptors.filter { fd in
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0
    }.count
}

// A busy daemon may still be accepting: wait until the count holds still for a second (at most 20 s).
var last = -1, steady = 0
for _ in 0..<40 where steady < 2 {
    usleep(500_000)
    let now = answered()
    steady = now == last ? steady + 1 : 0
    last = now
}
var held = 0, refused = 0
var refusal = "none"
var buffer = [UInt8](repeating: 0, count: 4096)
for fd in descriptors {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, 0) > 0 else {
        held += 1
        continue
    }
    refused += 1
    let n = read(fd, &buffer, buffer.count)
    if refusal == "none", n > 0 {
        refusal = String(decoding: buffer[..<n], as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }
    close(fd)
}
say("held=\(held) refused=\(refused)")
say("refusal=\(refusal)")
while true { pause() }
