#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MentorAPI
import Synchronization
import MentorSystem

/// The daemon's JSON-RPC server on a Unix socket (docs/API.md): one JSON object per line,
/// requests of a connection answered in order, notifications pushed with
/// `ConnectionHandle.send`.
///
/// ```swift
/// let server = APIServer(listener: try UnixListener(path: path), handler: node, logger: log)
/// try await server.run()        // until shutdown() (graceful) or cancellation (quick)
/// ```
///
/// How it runs: all connection state lives on one serial dispatch queue, fed by readiness
/// sources (an accept source on the listener, a read and a write source per connection; the
/// write source is resumed only while output waits). The queue does only cheap work — read,
/// split lines, write — so one queue for every connection stays responsive and keeps the state
/// simple. Decoding a request, the handler, and encoding its response run in child tasks of
/// `run()`, one request at a time per connection, so a slow request delays only its own
/// connection.
///
/// Limits, so that no client can grow the daemon's memory or exhaust its descriptors:
/// a request line is at most `maxLine` bytes (a longer one is answered -32600, then the
/// connection closes); a connection is not read while `maxInboxBytes` of requests or
/// `outputHighWater` bytes of output wait; at most `maxQueuedNotifications` notifications wait
/// per connection (then they are dropped and counted, reported once by `event.overflow`); at most
/// `maxConnections` connections (further ones get an error line and are closed).
///
/// Limits, so that no local user can deny the API to the others: at most
/// `maxConnectionsPerUser` connections per Unix user (counted by SO_PEERCRED uid; further ones
/// get a -32010 line and are closed, while other users are served); `reservedUsers` (root and
/// the daemon's own user) do not count against `maxConnections`, so a node full of other users'
/// connections can still be inspected and stopped; a connection that has been idle for
/// `idleTimeout` — no request running or waiting, nothing read or written — gets a -32010 line
/// and is closed, unless it subscribed (`ConnectionHandle.claimSubscription()`, at most
/// `maxSubscriptionsPerUser` per user).
///
/// `@unchecked Sendable`: the mutable state below the `// Confined to queue` mark is touched
/// only on `queue`; the rest is immutable or synchronized itself (`Mutex`, `AsyncStream`).
public final class APIServer: @unchecked Sendable {
    public struct Settings: Sendable {
        public var maxConnections = 256
        /// Connections one Unix user may hold at once (config `api_connections_per_user`).
        public var maxConnectionsPerUser = 32
        /// Subscribed connections one Unix user may hold (config `api_subscriptions_per_user`);
        /// they are exempt from `idleTimeout`.
        public var maxSubscriptionsPerUser = 8
        /// A connection with no request running or waiting and nothing read or written for this
        /// long is closed; nil keeps idle connections (config `api_idle_timeout`, 0 = never).
        public var idleTimeout: Duration? = .seconds(300)
        /// Users whose connections do not count against `maxConnections` (only against
        /// `maxConnectionsPerUser`): the daemon names root and its own user.
        public var reservedUsers: Set<UInt32> = []
        /// Longest request line, in bytes before the newline (docs/API.md: 1 MiB).
        public var maxLine = LineFramer.defaultMaxLine
        /// Stop reading a connection while this many bytes of requests wait for the handler.
        public var maxInboxBytes = 1 << 20
        /// Notifications that may wait per connection before new ones are dropped.
        public var maxQueuedNotifications = 1000
        /// Stop reading a connection's requests while this much output waits for it.
        public var outputHighWater = 4 << 20
        /// How long `shutdown()` lets running requests finish and their responses drain.
        public var shutdownGrace: Duration = .seconds(10)
        /// The clock idleness and the accept-failure log rate are measured by (tests hold a
        /// manual one; the idle sweep still runs on Dispatch's clock).
        public var now: @Sendable () -> ContinuousClock.Instant = { .now }
        /// Who is at the other end of an accepted connection: `SO_PEERCRED`, always, in the
        /// daemon. Internal so that unit tests can give connections of one process distinct
        /// users (the per-user limits); one test keeps the real lookup with other users.
        var identify: @Sendable (FileDescriptor) throws(SystemError) -> Caller = { fd throws(SystemError) in
            try Syscall.peerCredentials(fd)
        }

        public init() {}
    }

    public let settings: Settings
    /// The socket path, if the listener has one.
    public let socketPath: String?
    private let handler: any APIHandler
    private let logger: any Logger
    private let queue = DispatchQueue(label: "MentorNet.APIServer")
    private let jobs: AsyncStream<Job>
    private let jobSink: AsyncStream<Job>.Continuation
    private let openConnections = Mutex(0)
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    private let tooLongLine: [UInt8]
    private let tooManyLine: [UInt8]
    private let idleLine: [UInt8]
    /// Subscribed connections per user (taken from any thread by `claimSubscription`).
    private let subscribers: Mutex<PerUserCount>

    private enum Phase { case idle, running, stopping, stopped }

    /// One request line of one connection, for a child task of `run()`.
    private struct Job: Sendable {
        let connection: ConnectionHandle
        let line: [UInt8]
    }

    // Confined to queue:
    private var phase = Phase.idle
    private var listener: UnixListener?
    private var acceptSource: DispatchSourceRead?
    private var acceptPaused = false
    private var connections: [UInt64: Connection] = [:]
    /// Open connections per user.
    private var perUser: PerUserCount
    /// Connections of users not in `reservedUsers` (the ones `maxConnections` limits).
    private var unreservedCount = 0
    private var idleTimer: DispatchSourceTimer?
    private var refusedUsersLogged: Set<UInt32> = []
    private var nextID: UInt64 = 1
    private var refusingLogged = false
    private var acceptFailure = RecurringFailure()
    private var shutdownDeadline: DispatchWorkItem?
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    private var servingWaiters: [@Sendable () -> Void] = []

    public init(listener: UnixListener, handler: some APIHandler, logger: some Logger = DiscardingLogger(),
                settings: Settings = Settings()) {
        self.listener = listener
        self.socketPath = listener.path
        self.handler = handler
        self.logger = logger
        self.settings = settings
        (jobs, jobSink) = AsyncStream.makeStream(of: Job.self)
        tooLongLine = RPCResponse(id: .null, outcome: .failure(RPCError(
            .invalidRequest,
            "request line longer than \(Self.size(settings.maxLine)); send one JSON object per line, each at most that long (the connection is closed)"
        ))).line
        tooManyLine = RPCResponse(id: .null, outcome: .failure(RPCError(
            .limitReached,
            "mentormated already serves \(settings.maxConnections) connections, its limit; close other clients (such as `mentormate chat --follow`) and retry"
        ))).line
        let idle = settings.idleTimeout.map { Self.seconds($0) } ?? "long"
        idleLine = RPCResponse(id: .null, outcome: .failure(RPCError(
            .limitReached,
            "mentormated closed this connection: idle for \(idle) with no request (api_idle_timeout); connect again to send more"
        ))).line
        perUser = PerUserCount(limit: settings.maxConnectionsPerUser)
        subscribers = Mutex(PerUserCount(limit: settings.maxSubscriptionsPerUser))
    }

    deinit { readBuffer.deallocate() }

    /// Connections open now.
    public var connectionCount: Int { openConnections.withLock { $0 } }

    /// Accepts connections and serves requests until `shutdown()` has finished: the listener
    /// is closed (its socket file removed), running requests have completed and their responses
    /// have been written (or `shutdownGrace` passed), and every connection is closed. Cancelling
    /// the calling task starts the same shutdown, but running handlers are cancelled at once
    /// (their responses are still written if the client reads them within `shutdownGrace`).
    ///
    /// Returns at once if `shutdown()` came first; throws `SystemError` `.alreadyRunning` if called
    /// while running.
    public func run() async throws {
        let started = try queue.sync { () throws(SystemError) -> Bool in
            switch phase {
            case .idle:
                phase = .running
                startAccepting()
                startIdleTimer()
                for waiter in servingWaiters { waiter() }
                servingWaiters = []
                return true
            case .stopped:
                return false
            case .running, .stopping:
                throw SystemError(.alreadyRunning, "the API server is already running")
            }
        }
        guard started else { return }
        logger.info("API server listening", ["socket": socketPath ?? "(adopted)"])
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for await job in jobs {
                    group.addTask { await self.perform(job) }
                }
                // Every connection is closed; handlers still running missed the deadline.
                group.cancelAll()
            }
        } onCancel: {
            shutdown()
        }
        // After a cancellation the loop above ends early; the connections close meanwhile.
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            queue.async {
                if self.phase == .stopped { stopped.resume() } else { self.stopWaiters.append(stopped) }
            }
        }
        logger.info("API server stopped", [:])
    }

    /// Graceful shutdown, from any thread, any number of times: stop accepting, let running
    /// requests finish and their responses drain (up to `shutdownGrace`), then close every
    /// connection; `run()` returns when that is done. Requests a client pipelined behind the
    /// running one are not started.
    public func shutdown() {
        queue.async { self.beginShutdown() }
    }

    /// Runs `body` on the server's queue once `run()` accepts connections (at once if it does
    /// already; never if the server stopped first). For the service manager's readiness: a
    /// client that connects after `body` ran is served. `body` must not block.
    public func whenServing(_ body: @escaping @Sendable () -> Void) {
        queue.async {
            switch self.phase {
            case .idle: self.servingWaiters.append(body)
            case .running: body()
            case .stopping, .stopped: break
            }
        }
    }

    /// Runs `body` on the server's queue after the work queued before it: a watchdog's probe of
    /// the event loop (while the loop is stuck, `body` does not run). `body` must not block.
    public func probe(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    // MARK: Requests (child tasks of run)

    private func perform(_ job: Job) async {
        let reply: [UInt8]?
        switch RPCIncoming.parse(job.line) {
        case .single(let parsed):
            reply = await answer(parsed, job).map { $0.line }
        case .batch(let items):
            // In order, one at a time, as the same requests on separate lines would run. The
            // answers go out as one line, so once they pass `outputHighWater` (what a client not
            // reading may leave waiting) the rest of the batch is not run: its requests are
            // answered -32010, its notifications dropped.
            var responses: [JSON] = [], bytes = 0
            for item in items {
                if bytes > settings.outputHighWater {
                    if case .success(let request) = item, let id = request.id {
                        responses.append(RPCResponse(id: id, outcome: .failure(RPCError(.limitReached,
                            "not run: the batch's earlier answers passed \(Self.size(settings.outputHighWater)); send this request again in another line"))).json)
                    }
                    continue
                }
                if let response = await answer(item, job) {
                    let json = response.json
                    bytes += json.encoded.count
                    responses.append(json)
                }
            }
            reply = responses.isEmpty ? nil : JSON.array(responses).encoded + [0x0A]
        }
        queue.async { self.requestFinished(job.connection.id, reply: reply) }
    }

    /// Runs one request (nil: a notification, answered by nothing) or answers its error.
    private func answer(_ parsed: Result<RPCRequest, RPCRequest.Invalid>, _ job: Job) async -> RPCResponse? {
        switch parsed {
        case .failure(let invalid):
            logger.debug("invalid request", ["conn.id": "\(job.connection.id)", "rpc.code": "\(invalid.error.code)"])
            return RPCResponse(id: invalid.id, outcome: .failure(invalid.error))
        case .success(let request):
            let outcome = await handler.handle(request, from: job.connection.caller, on: job.connection)
            return request.id.map { RPCResponse(id: $0, outcome: outcome) }
        }
    }

    // MARK: Accepting (on queue)

    private func startAccepting() {
        guard let listener else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: listener.descriptor.raw, queue: queue)
        source.setEventHandler { [weak self] in self?.acceptPending() }
        // Close the listener only once the source has let go of its descriptor.
        source.setCancelHandler { self.closeListener() }
        acceptSource = source
        source.resume()
    }

    private func stopAccepting() {
        // The socket file goes at once (the descriptor closes when the source lets go of it),
        // so `run()` never returns with the file still there.
        listener?.removeSocketFile()
        guard let source = acceptSource else {
            closeListener()
            return
        }
        acceptSource = nil
        if acceptPaused {
            acceptPaused = false
            source.resume()
        }
        source.cancel()
    }

    private func closeListener() {
        listener?.close()
        listener = nil
    }

    /// Accepts until the backlog is empty (64 at a time, then other work gets a turn).
    private func acceptPending() {
        for _ in 0..<64 {
            guard phase == .running, let listener else { return }
            do throws(SystemError) {
                switch try listener.accept() {
                case .wouldBlock: return
                case .done(let fd):
                    if acceptFailure.recovered() > 0 { logger.info("accepting API connections again", [:]) }
                    admit(fd)
                }
            } catch {
                switch error.errno {
                case ECONNABORTED, EPROTO:
                    continue  // the client gave up before we accepted
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // The listener stays readable; wait a little instead of spinning on it.
                    // Retried every 100 ms: logged once, then at a slowing rate.
                    if let missed = acceptFailure.failed(now: settings.now()) {
                        logger.info("cannot accept API connections for now", ["error": "\(error)", "unreported": "\(missed)"])
                    }
                    pauseAccepting()
                    return
                default:
                    if let missed = acceptFailure.failed(now: settings.now()) {
                        logger.info("accepting an API connection failed", ["error": "\(error)", "unreported": "\(missed)"])
                    }
                    pauseAccepting()
                    return
                }
            }
        }
        queue.async { [weak self] in self?.acceptPending() }
    }

    private func pauseAccepting() {
        guard let source = acceptSource, !acceptPaused else { return }
        acceptPaused = true
        source.suspend()
        queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
            guard let self, self.acceptPaused, let source = self.acceptSource else { return }
            self.acceptPaused = false
            source.resume()
            self.acceptPending()
        }
    }

    private func admit(_ fd: FileDescriptor) {
        let caller: Caller
        do throws(SystemError) {
            caller = try settings.identify(fd)
        } catch {
            logger.info("API connection without peer credentials closed", ["error": "\(error)"])
            try? fd.close()
            return
        }
        let reserved = settings.reservedUsers.contains(caller.uid)
        guard reserved || unreservedCount < settings.maxConnections else {
            if !refusingLogged {
                refusingLogged = true
                logger.info("refusing API connections: limit reached", ["limit": "\(settings.maxConnections)"])
            }
            _ = tooManyLine.withUnsafeBytes { try? Syscall.send(fd, $0) }
            try? fd.close()
            return
        }
        guard perUser.take(caller.uid) else {
            // Logged once per user until that user is under the limit again.
            if refusedUsersLogged.insert(caller.uid).inserted {
                logger.info("refusing API connections of a user: per-user limit reached",
                            ["peer.uid": "\(caller.uid)", "limit": "\(settings.maxConnectionsPerUser)"])
            }
            let line = RPCResponse(id: .null, outcome: .failure(RPCError(
                .limitReached,
                "mentormated already serves \(settings.maxConnectionsPerUser) connections of your user (uid \(caller.uid)), the limit per user (api_connections_per_user); close some of your clients (such as `mentormate chat --follow`) and retry"
            ))).line
            _ = line.withUnsafeBytes { try? Syscall.send(fd, $0) }
            try? fd.close()
            return
        }
        if !reserved { unreservedCount += 1 }
        let id = nextID
        nextID += 1
        let handle = ConnectionHandle(id: id, caller: caller, server: self, limit: settings.maxQueuedNotifications)
        let connection = Connection(handle: handle, descriptor: fd, queue: queue, maxLine: settings.maxLine)
        connection.readSource.setEventHandler { [weak self, weak connection] in
            guard let self, let connection else { return }
            self.readable(connection)
        }
        connection.writeSource.setEventHandler { [weak self, weak connection] in
            guard let self, let connection else { return }
            self.flush(connection)
        }
        connections[id] = connection
        openConnections.withLock { $0 = connections.count }
        connection.lastActivity = settings.now()
        connection.reading = true
        connection.readSource.resume()
        logger.debug("API client connected", ["conn.id": "\(id)", "peer.uid": "\(caller.uid)", "peer.pid": "\(caller.pid)"])
    }

    // MARK: Reading (on queue)

    /// Reads until the socket is drained (or 16 chunks, then yields to other connections).
    /// Draining matters: libdispatch on Linux does not report an end of stream that arrived
    /// together with the last data once that data has been read, so the handler must see
    /// `read` return 0 itself.
    private func readable(_ connection: Connection) {
        for _ in 0..<16 {
            guard !connection.closed, !connection.inputClosed, connection.reading else { return }
            let count: Int
            do throws(SystemError) {
                switch try Syscall.read(connection.descriptor, into: readBuffer) {
                case .wouldBlock: return
                case .done(let n): count = n
                }
            } catch {
                close(connection, reason: "read failed: \(error)")
                return
            }
            if count == 0 {
                // End of stream: answer what was read (a client may half-close and wait), then close.
                if connection.framer.pending > 0 {
                    logger.debug("client left mid-line; the partial request is discarded", ["conn.id": "\(connection.handle.id)"])
                }
                connection.inputClosed = true
                updateReading(connection)
                finishIfIdle(connection)
                return
            }
            received(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]), on: connection)
        }
        queue.async { [weak self] in self?.readable(connection) }
    }

    private func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        do throws(LineFramer.Failure) {
            for line in try connection.framer.append(bytes)
            where !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {  // blank lines (socat users) are skipped
                connection.inbox.append(.line(line))
                connection.inboxBytes += line.count
                // Only whole requests count: bytes of an unfinished line never keep a connection open.
                connection.lastActivity = settings.now()
            }
        } catch {
            logger.info("API request line over the limit; closing the connection",
                        ["conn.id": "\(connection.handle.id)", "limit": "\(settings.maxLine)"])
            connection.inbox.append(.tooLong)
            connection.inputClosed = true
        }
        startNextRequest(connection)
        updateReading(connection)
    }

    /// Reads while the connection can take more: not closed for input, not stopping, and
    /// neither its waiting requests nor its waiting output over their limits.
    private func updateReading(_ connection: Connection) {
        guard !connection.closed else { return }
        let wanted = !connection.inputClosed && phase == .running
            && connection.inboxBytes < settings.maxInboxBytes && connection.inbox.count < 256
            && connection.output.count < settings.outputHighWater
        if wanted && !connection.reading {
            connection.reading = true
            connection.readSource.resume()
            // What arrived while suspended may not be reported again (see `readable`): look now.
            queue.async { [weak self] in self?.readable(connection) }
        } else if !wanted && connection.reading {
            connection.reading = false
            connection.readSource.suspend()
        }
    }

    /// Hands the next waiting request to a child task of `run()`, unless one is running or the
    /// client is not reading its earlier responses.
    private func startNextRequest(_ connection: Connection) {
        while !connection.busy && !connection.closed && connection.output.count < settings.outputHighWater,
              let item = connection.inbox.popFirst() {
            switch item {
            case .line(let line):
                connection.inboxBytes -= line.count
                connection.busy = true
                if case .terminated = jobSink.yield(Job(connection: connection.handle, line: line)) {
                    connection.busy = false
                    connection.inbox.removeAll()
                    connection.inboxBytes = 0
                }
            case .tooLong:
                connection.output.append(tooLongLine, notification: false)
                flush(connection)
            }
        }
    }

    private func requestFinished(_ id: UInt64, reply: [UInt8]?) {
        guard let connection = connections[id] else { return }  // the client left: discard
        connection.busy = false
        connection.lastActivity = settings.now()
        if let reply {
            connection.output.append(reply, notification: false)
            if !connection.writing { flush(connection) }
        }
        startNextRequest(connection)
        updateReading(connection)
        finishIfIdle(connection)
    }

    // MARK: Writing (on queue)

    /// Called by `ConnectionHandle.send` from any thread.
    func deliver(_ line: [UInt8], to handle: ConnectionHandle) {
        queue.async {
            guard self.phase == .running, let connection = self.connections[handle.id], !connection.closed else { return }
            connection.output.append(line, notification: true)
            if !connection.writing { self.flush(connection) }
        }
    }

    /// Writes what the socket takes; waits on the write source for the rest.
    private func flush(_ connection: Connection) {
        guard !connection.closed else { return }
        while true {
            while !connection.output.isEmpty {
                let sent = connection.output.withPending { bytes in
                    Result { () throws(SystemError) in try Syscall.send(connection.descriptor, bytes) }
                }
                switch sent {
                case .failure(let error):
                    close(connection, reason: "write failed: \(error)")
                    return
                case .success(.wouldBlock):
                    if !connection.writing {
                        connection.writing = true
                        connection.writeSource.resume()
                    }
                    startNextRequest(connection)
                    updateReading(connection)
                    return
                case .success(.done(let n)):
                    if n > 0 { connection.lastActivity = settings.now() }
                    let notifications = connection.output.consume(n)
                    if notifications > 0 { connection.handle.notificationsWritten(notifications) }
                }
            }
            // Caught up: tell the client what it missed, once.
            guard phase == .running, let dropped = connection.handle.takeUnreportedDrops() else { break }
            guard let overflow = try? RPCNotification(OverflowEvent(dropped: Int64(dropped))) else { break }
            connection.output.append(overflow.line, notification: true)
        }
        if connection.writing {
            connection.writing = false
            connection.writeSource.suspend()
        }
        startNextRequest(connection)
        updateReading(connection)
        finishIfIdle(connection)
    }

    // MARK: Closing (on queue)

    /// Closes a connection that will read no more requests once it has nothing left to do.
    private func finishIfIdle(_ connection: Connection) {
        guard !connection.closed, connection.inputClosed, !connection.busy,
              connection.inbox.isEmpty, connection.output.isEmpty else { return }
        close(connection, reason: phase == .running ? "client finished" : "server stopping")
    }

    private func close(_ connection: Connection, reason: String) {
        guard !connection.closed else { return }
        connection.closed = true
        connections[connection.handle.id] = nil
        openConnections.withLock { $0 = connections.count }
        let uid = connection.handle.caller.uid
        perUser.release(uid)
        if perUser.count(uid) < settings.maxConnectionsPerUser { refusedUsersLogged.remove(uid) }
        if !settings.reservedUsers.contains(uid) { unreservedCount -= 1 }
        if connection.handle.markClosed() { subscribers.withLock { $0.release(uid) } }
        // A source must be resumed to be cancelled; its cancel handler closes the descriptor.
        if !connection.reading { connection.readSource.resume() }
        connection.readSource.cancel()
        if !connection.writing { connection.writeSource.resume() }
        connection.writeSource.cancel()
        logger.debug("API client disconnected", ["conn.id": "\(connection.handle.id)", "reason": reason])
        handler.connectionClosed(connection.handle)
        if unreservedCount < settings.maxConnections { refusingLogged = false }
        if phase == .stopping && connections.isEmpty { finishStopping() }
    }

    private func beginShutdown() {
        switch phase {
        case .idle:
            phase = .stopped
            closeListener()
            jobSink.finish()
            return
        case .stopping, .stopped:
            return
        case .running:
            break
        }
        phase = .stopping
        logger.info("API server stopping", ["connections": "\(connections.count)"])
        stopAccepting()
        idleTimer?.cancel()
        idleTimer = nil
        for connection in Array(connections.values) {
            connection.inbox.removeAll()
            connection.inboxBytes = 0
            connection.inputClosed = true
            updateReading(connection)
            finishIfIdle(connection)
        }
        if connections.isEmpty {
            finishStopping()
            return
        }
        let deadline = DispatchWorkItem { [weak self] in self?.shutdownDeadlinePassed() }
        shutdownDeadline = deadline
        queue.asyncAfter(deadline: .now() + Self.interval(settings.shutdownGrace), execute: deadline)
    }

    private func shutdownDeadlinePassed() {
        guard phase == .stopping else { return }
        logger.info("API shutdown deadline passed; closing the remaining connections",
                    ["connections": "\(connections.count)"])
        for connection in Array(connections.values) {
            close(connection, reason: "shutdown deadline")
        }
    }

    private func finishStopping() {
        phase = .stopped
        shutdownDeadline?.cancel()
        shutdownDeadline = nil
        jobSink.finish()
        for waiter in stopWaiters { waiter.resume() }
        stopWaiters = []
    }

    // MARK: Idle connections (on queue)

    /// Sweeps for idle connections a few times per `idleTimeout` (at most every 10 s), so one
    /// closes between `idleTimeout` and a quarter more after its last activity.
    private func startIdleTimer() {
        guard let timeout = settings.idleTimeout, timeout > .zero else { return }
        let period = min(max(timeout / 4, .milliseconds(50)), .seconds(10))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.interval(period), repeating: Self.interval(period), leeway: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.closeIdleConnections(after: timeout) }
        idleTimer = timer
        timer.resume()
    }

    /// The idle sweep, run now (tests that move the clock by hand call it after moving it).
    func sweepIdleConnections() {
        queue.sync {
            guard let timeout = settings.idleTimeout, timeout > .zero else { return }
            closeIdleConnections(after: timeout)
        }
    }

    /// Idle: no request with the handler or waiting, nothing read as a whole request line or
    /// written for `timeout`, and not a subscriber. A client that stopped reading its answers is
    /// idle too (its output does not move).
    private func closeIdleConnections(after timeout: Duration) {
        guard phase == .running else { return }
        let now = settings.now()
        for connection in Array(connections.values)
        where !connection.closed && !connection.busy && connection.inbox.isEmpty
            && now - connection.lastActivity >= timeout && !connection.handle.isSubscriber {
            // Said only between lines: a half-written answer would garble it.
            if connection.output.isEmpty { _ = idleLine.withUnsafeBytes { try? Syscall.send(connection.descriptor, $0) } }
            logger.debug("closing an idle API connection", ["conn.id": "\(connection.handle.id)", "peer.uid": "\(connection.handle.caller.uid)"])
            close(connection, reason: "idle for \(Self.seconds(timeout))")
        }
    }

    /// Called by `ConnectionHandle.claimSubscription` from any thread.
    func claimSubscriber(_ handle: ConnectionHandle) -> Bool {
        subscribers.withLock { count in
            handle.becomeSubscriber { count.take(handle.caller.uid) }
        }
    }

    // MARK: Helpers

    private static func seconds(_ duration: Duration) -> String {
        let (s, atto) = duration.components
        return atto == 0 ? "\(s) s" : "\(Double(s) + Double(atto) / 1e18) s"
    }

    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow else { return .never }
        return .nanoseconds(Int(clamping: nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }

    private static func size(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : bytes % (1 << 10) == 0 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
    }
}
