#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MentorSystem

/// A numeric host and a port, as a peer's address is logged and counted.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// "127.0.0.1:7000", "[::1]:7000", "[fe80::1%eth0]:7000" (`HostPort.format`).
    public var description: String { HostPort.format(host: host, port: port) }
}

/// One connected TCP socket (non-blocking, close-on-exec), handed from `TCPListener` or
/// `TCPDialer` to the `PeerLink` that will own it.
///
/// `@unchecked Sendable`: it is handed over exactly once (a value in flight between queues), and
/// only its single owner touches the descriptor afterwards.
public final class TCPStream: @unchecked Sendable {
    let descriptor: FileDescriptor
    public let remote: PeerAddress
    /// Our end: the address the link depends on (when it leaves this machine, the link is dead).
    public let local: PeerAddress

    init(descriptor: FileDescriptor, remote: PeerAddress) {
        self.descriptor = descriptor
        self.remote = remote
        let local = (try? Syscall.socketAddress(descriptor, peer: false)) ?? (host: "?", port: 0)
        self.local = PeerAddress(host: local.host, port: local.port)
    }

    /// Closes the socket without any goodbye (a refused or abandoned connection).
    public func close() { try? descriptor.close() }
}

/// A listening TCP socket, IPv4 or IPv6 (whatever `getaddrinfo` gives first for `host`),
/// `SO_REUSEADDR`, non-blocking and close-on-exec. Port 0 picks a free port: see `boundPort`.
/// `::` listens dual-stack (`IPV6_V6ONLY` off, whatever the sysctl says: IPv4 peers arrive as
/// `::ffff:a.b.c.d`, shown as `a.b.c.d`); on a machine without IPv6 it falls back to `0.0.0.0`.
///
/// Not `Sendable`: hand it to `PeerListener`, which keeps it on its queue.
public final class TCPListener {
    public let host: String
    /// The port actually bound (the chosen one when `port` was 0).
    public let boundPort: UInt16
    let descriptor: FileDescriptor

    public init(host: String, port: UInt16, backlog: Int32 = 128) throws(SystemError) {
        var host = host
        if host == "::", (try? Syscall.tcpSocket(family: AF_INET6)) == nil { host = "0.0.0.0" }
        let addresses = try Syscall.resolve(host: host, port: port, passive: true)
        var lastError = SystemError(.system, errno: EADDRNOTAVAIL, "listen on \(host):\(port): no address")
        for address in addresses {
            do throws(SystemError) {
                let fd = try Syscall.tcpSocket(family: address.family)
                try Syscall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
                if address.family == AF_INET6 && host == "::" {
                    try Syscall.setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "IPV6_V6ONLY")
                }
                try Syscall.bind(fd, address, what: HostPort.format(host: host, port: port))
                try Syscall.listen(fd, backlog: backlog, path: "\(host):\(port)")
                self.boundPort = try Syscall.socketAddress(fd, peer: false).port
                self.host = host
                self.descriptor = fd
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The address to dial this listener on.
    public var address: PeerAddress { PeerAddress(host: host, port: boundPort) }

    /// Stops listening. Idempotent.
    public func close() { try? descriptor.close() }

    /// Accepts one pending connection.
    func accept() throws(SystemError) -> IOResult<TCPStream> {
        switch try Syscall.accept(descriptor) {
        case .wouldBlock: return .wouldBlock
        case .done(let fd):
            // Frames are small and latency matters (a push waits behind Nagle for the peer's
            // delayed ACK otherwise: ~40 ms); the dialer sets it too.
            try? Syscall.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1, "TCP_NODELAY")
            let remote = (try? Syscall.socketAddress(fd, peer: true)) ?? (host: "?", port: 0)
            return .done(TCPStream(descriptor: fd, remote: PeerAddress(host: remote.host, port: remote.port)))
        }
    }
}

/// Connects to a peer without blocking any thread: each address of the host is tried in turn,
/// on a write source, until one connects or `timeout` has passed (then `SystemError` `ETIMEDOUT`).
///
/// `source`: the host the node listens on. When it is a specific address (not 0.0.0.0, ::
/// or empty), the socket is bound to it (port 0) before connecting, so the link comes from the
/// address peers know us by — on a multi-homed machine, and for daemons on 127.0.0.N of one
/// machine, whose links would otherwise all come from 127.0.0.1 and meet the listener's limit
/// of links per address. Not bound when the families differ, or when the source is loopback
/// and the destination is not (it could not reach it).
///
/// ```swift
/// TCPDialer.connect(host: "10.0.0.2", port: 7000, timeout: .seconds(5), queue: queue) { result in ... }
/// ```
///
/// `@unchecked Sendable`: its state is touched only on `queue` (name lookup runs on a global
/// queue and hops back with its result).
public final class TCPDialer: @unchecked Sendable {
    private let host: String
    private let port: UInt16
    private let queue: DispatchQueue
    private var completion: ((Result<TCPStream, SystemError>) -> Void)?
    private var addresses: [ResolvedAddress] = []
    private var pending: FileDescriptor?
    private var source: DispatchSourceWrite?
    private var timer: DispatchWorkItem?
    private var lastError: SystemError?
    private let sourceHost: String?
    private var sources: [ResolvedAddress] = []

    /// Starts connecting; `completion` runs once, on `queue`.
    public static func connect(host: String, port: UInt16, source: String? = nil, timeout: Duration, queue: DispatchQueue,
                               completion: @escaping @Sendable (Result<TCPStream, SystemError>) -> Void) {
        let dialer = TCPDialer(host: host, port: port, source: source, queue: queue, completion: completion)
        queue.async { dialer.start(timeout: timeout) }
    }

    private init(host: String, port: UInt16, source: String?, queue: DispatchQueue,
                 completion: @escaping (Result<TCPStream, SystemError>) -> Void) {
        self.host = host
        self.port = port
        self.queue = queue
        self.completion = completion
        self.sourceHost = source.flatMap { Self.isSpecific($0) ? $0 : nil }
    }

    /// Whether a listen host names one address (not "every address").
    static func isSpecific(_ host: String) -> Bool {
        !["", "0.0.0.0", "::", "*", "[::]"].contains(host)
    }

    private var what: String { PeerAddress(host: host, port: port).description }

    private func start(timeout: Duration) {
        let timer = DispatchWorkItem { [self] in
            finish(.failure(SystemError(.system, errno: ETIMEDOUT, "connect to \(what)",
                                     fix: "check that the peer is running and reachable")))
        }
        self.timer = timer
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds)), execute: timer)
        DispatchQueue.global().async { [self] in
            let result = Result { () throws(SystemError) in try Syscall.resolve(host: host, port: port, passive: false) }
            // A source that does not resolve is not bound (the dial goes on from any address).
            let sources = sourceHost.flatMap { try? Syscall.resolve(host: $0, port: 0, passive: false) } ?? []
            queue.async { [self] in
                switch result {
                case .failure(let error): finish(.failure(error))
                case .success(let list):
                    addresses = list
                    self.sources = sources
                    tryNext()
                }
            }
        }
    }

    private func tryNext() {
        guard completion != nil else { return }
        guard !addresses.isEmpty else {
            finish(.failure(lastError ?? SystemError(.system, errno: EADDRNOTAVAIL, "connect to \(what): no address")))
            return
        }
        let address = addresses.removeFirst()
        do throws(SystemError) {
            let fd = try Syscall.tcpSocket(family: address.family)
            if let from = sources.first(where: { $0.family == address.family && (!$0.isLoopback || address.isLoopback) }) {
                try Syscall.bind(fd, from, what: "the dial's source address \(sourceHost ?? "")")
            }
            switch try Syscall.connect(fd, address, what: what) {
            case .done: connected(fd)
            case .wouldBlock:
                pending = fd
                let source = DispatchSource.makeWriteSource(fileDescriptor: fd.raw, queue: queue)
                source.setEventHandler { [self] in
                    guard let fd = pending else { return cancelSource() }
                    pending = nil
                    do throws(SystemError) {
                        let code = try Syscall.pendingError(fd)
                        guard code == 0 else { throw SystemError(.system, errno: code, "connect to \(what)") }
                        // The stream is handed over only once this source is gone: its owner may
                        // close the descriptor at once, and a number closed under a source still
                        // being cancelled can leave the next socket given that number deaf to
                        // epoll (seen as a dial from a test timing out about once in five).
                        let done = self.source
                        self.source = nil
                        done?.setCancelHandler { [self] in connected(fd) }
                        done?.cancel()
                    } catch {
                        cancelSource()
                        lastError = error   // the cancel handler lets go of the descriptor
                        tryNext()
                    }
                }
                // The descriptor stays open until the source is cancelled, never under epoll's feet.
                source.setCancelHandler { _ = fd }
                self.source = source
                source.resume()
            }
        } catch {
            lastError = error
            tryNext()
        }
    }

    private func connected(_ fd: FileDescriptor) {
        try? Syscall.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1, "TCP_NODELAY")
        let remote = (try? Syscall.socketAddress(fd, peer: true)) ?? (host: host, port: port)
        finish(.success(TCPStream(descriptor: fd, remote: PeerAddress(host: remote.host, port: remote.port))))
    }

    private func cancelSource() {
        source?.cancel()
        source = nil
    }

    private func finish(_ result: Result<TCPStream, SystemError>) {
        guard let completion else {
            if case .success(let stream) = result { stream.close() }
            return
        }
        self.completion = nil
        timer?.cancel()
        timer = nil
        cancelSource()
        pending = nil   // closed when the cancelled source lets go of it
        addresses = []
        completion(result)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
