import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem
import Synchronization

/// The CA's TCP server: accepts on one listening socket, serves up to `maxConnections`
/// connections at once (each on a Dispatch worker, each with a 10 s deadline and a 4 KiB line
/// limit: one request line, one answer line, then it closes), and answers `busy` beyond that.
/// Logs one line per request: the op, the client, the outcome and a masked address — never a
/// code, never a whole address.
///
/// `run()` blocks until `stop()` (from any thread, e.g. a signal handler's queue); it then
/// stops accepting and waits for the connections in progress to finish.
///
/// `@unchecked Sendable`: the listening descriptor is used only by the thread in `run()`; the
/// wake pipe's write end is only written by `stop()` (a `write(2)` of one byte, safe from any
/// thread); both are closed in `deinit`, when no thread can use them any more.
public final class CAServer: @unchecked Sendable {
    public let service: CAService
    /// The port listened on (the one picked by the system when 0 was asked).
    public let port: UInt16
    public let host: String
    private let listener: FileDescriptor
    private let wakeRead: FileDescriptor
    private let wakeWrite: FileDescriptor
    private let logger: any Logger
    private let maxConnections: Int
    private let deadline: Duration
    private let active = Atomic<Int>(0)
    private let work = DispatchGroup()

    public init(service: CAService, host: String, port: UInt16, logger: any Logger,
                maxConnections: Int? = nil, deadline: Duration = CAWire.connectionDeadline) throws(CASetupError) {
        self.service = service
        self.host = host
        self.logger = logger
        self.maxConnections = maxConnections ?? service.config.maxConnections
        self.deadline = deadline
        let name = HostPort.format(host: host, port: port)
        do {
            guard let address = try Syscall.resolve(host: host, port: port, passive: true).first else {
                throw CASetupError("cannot listen on \(name): the host has no address")
            }
            let fd = try Syscall.tcpSocket(family: address.family)
            try Syscall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
            if address.family == AF_INET6 {
                // [::] takes IPv4 clients too.
                try Syscall.setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "IPV6_V6ONLY")
            }
            try Syscall.bind(fd, address, what: name)
            try Syscall.blocking("listen on \(name)") { Glibc.listen(fd.raw, 64) }
            listener = fd
            self.port = try Syscall.socketAddress(fd, peer: false).port
            var ends: [Int32] = [-1, -1]
            try Syscall.blocking("pipe") { pipe(&ends) }
            for end in ends { try Syscall.setNonBlockingCloseOnExec(end) }
            wakeRead = FileDescriptor(ends[0])
            wakeWrite = FileDescriptor(ends[1])
        } catch let error as CASetupError {
            throw error
        } catch {
            throw CASetupError("cannot listen on \(name): \(error); pick a free address with `listen` in ca.conf")
        }
    }

    /// Serves until `stop()`, then waits for the connections in progress.
    public func run() {
        logger.log(.notice, "mentormate-ca serving", ["listen": HostPort.format(host: host, port: port),
                                                     "domain": service.config.domain])
        var fds = [pollfd(fd: listener.raw, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeRead.raw, events: Int16(POLLIN), revents: 0)]
        loop: while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                logger.log(.error, "poll failed; the CA stops", ["errno": "\(errno)"])
                break
            }
            if fds[1].revents != 0 { break loop }
            if fds[0].revents != 0 { acceptAll() }
        }
        try? listener.close()
        work.wait()
        logger.log(.notice, "mentormate-ca stopped", [:])
    }

    /// Ends `run()`: no new connections; those in progress finish.
    public func stop() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite.raw, &byte, 1)
    }

    private func acceptAll() {
        while true {
            let accepted: IOResult<FileDescriptor>
            do { accepted = try Syscall.accept(listener) } catch {
                // EMFILE, ECONNABORTED...: try again at the next readiness.
                logger.log(.warning, "accept failed", ["error": error.description])
                return
            }
            guard case .done(let fd) = accepted else { return }
            let client = (try? Syscall.socketAddress(fd, peer: true).host) ?? "?"
            let connection = LineSocket(fd: fd, peer: client, maxLine: CAWire.maxLine)
            guard active.add(1, ordering: .relaxed).newValue <= maxConnections else {
                active.subtract(1, ordering: .relaxed)
                let busy = CAResponse.failure(CAError(.busy, "the CA is serving \(maxConnections) clients at once; try again in a few seconds"))
                try? connection.send(busy.line, deadline: .now + .milliseconds(100))
                connection.close()
                logger.log(.info, "refused: busy", ["client": client])
                continue
            }
            let job = Job(connection: connection)
            work.enter()
            DispatchQueue.global().async { [self] in
                serve(job.connection)
                work.leave()
            }
        }
    }

    /// `@unchecked Sendable`: the connection moves to the worker, and only the worker uses it.
    private struct Job: @unchecked Sendable { let connection: LineSocket }

    /// Serves one connection; its slot is free again before the client sees the close.
    private func serve(_ connection: LineSocket) {
        defer {
            active.subtract(1, ordering: .relaxed)
            connection.close()
        }
        let end = ContinuousClock.now + deadline
        let line: [UInt8]
        do { line = try connection.readLine(deadline: end) } catch {
            logger.log(.info, "closed without a request", ["client": connection.peer, "reason": error.reason])
            return
        }
        var metadata = ["client": connection.peer]
        let response: CAResponse
        do {
            let request = try CARequest(line: line)
            metadata["op"] = request.op
            if case .request(_, let email) = request { metadata["address"] = CAService.mask(email) }
            if case .request(let account, _) = request { metadata["account"] = account.shortID }
            if case .verify(let account, _) = request { metadata["account"] = account.shortID }
            response = service.handle(request, client: connection.peer)
        } catch {
            response = .failure(error)
        }
        switch response {
        case .failure(let error): metadata["result"] = error.code.rawValue
        default: metadata["result"] = "ok"
        }
        logger.log(.info, "request", metadata)
        // The answer gets its own short deadline: a slow mail relay may have used the connection's.
        try? connection.send(response.line, deadline: max(end, .now + .seconds(2)))
    }
}
