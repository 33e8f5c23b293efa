import Dispatch
import MentorAPI
import Synchronization
import MentorSystem

/// What the daemon plugs into `APIServer`.
public protocol APIHandler: Sendable {
    /// Answers one request (the server has already checked the JSON-RPC envelope; unknown
    /// methods are the handler's to refuse with -32601).
    ///
    /// Runs in a child task of `APIServer.run()`. Requests of one connection are handed over one
    /// at a time, in order; different connections run concurrently. The result is discarded for
    /// a request without `id` (a JSON-RPC notification) and when the client has gone away.
    /// After the shutdown deadline the task is cancelled.
    ///
    /// Work that blocks for long (not a quick SQLite transaction) belongs on a thread of its own:
    /// on Linux, tasks and Dispatch queues (this server's included) share one small thread pool
    /// that grows only slowly when its threads block.
    func handle(_ request: RPCRequest, from caller: Caller, on connection: ConnectionHandle) async
        -> Result<JSON, RPCError>

    /// The connection closed (the client left, broke a limit, or the server stopped); `send` on it
    /// does nothing from now on. Drop its subscriptions and unfinished uploads here. Called on the
    /// server's queue: do not block.
    func connectionClosed(_ connection: ConnectionHandle)
}

extension APIHandler {
    public func connectionClosed(_ connection: ConnectionHandle) {}
}

/// A client connection as the daemon sees it: who is calling, and a way to push notifications.
/// Usable from any thread. Equal only to itself.
public final class ConnectionHandle: Sendable, Hashable, CustomStringConvertible {
    /// Unique among this server's connections (for logs and dictionary keys).
    public let id: UInt64
    public let caller: Caller
    private weak let server: APIServer?
    private let limit: Int
    private let counters = Mutex(Counters())

    private struct Counters {
        var open = true
        /// Notifications accepted by `send` and not yet written to the socket.
        var queued = 0
        /// Dropped since the last `event.overflow` was queued.
        var unreported = 0
        /// Dropped since the connection opened.
        var dropped = 0
        /// It subscribed: exempt from the idle timeout, counted against the per-user limit.
        var subscriber = false
    }

    init(id: UInt64, caller: Caller, server: APIServer, limit: Int) {
        self.id = id
        self.caller = caller
        self.server = server
        self.limit = limit
    }

    /// Queues a notification for this connection. Returns false when it was dropped: the
    /// connection is closed, or `maxQueuedNotifications` are already waiting because the client
    /// does not read (it gets one `event.overflow {"dropped": N}` once it has caught up).
    @discardableResult
    public func send(_ notification: RPCNotification) -> Bool {
        let admitted = counters.withLock { c -> Bool in
            guard c.open else { return false }
            guard c.queued < limit else {
                c.unreported += 1
                c.dropped += 1
                return false
            }
            c.queued += 1
            return true
        }
        guard admitted, let server else { return false }
        server.deliver(notification.line, to: self)
        return true
    }

    /// False once the connection has closed.
    public var isOpen: Bool { counters.withLock { $0.open } }

    /// Marks this connection as a subscriber, for `subscribe`: it stays open however long it is
    /// idle. Returns false (nothing changed) when the caller's user already holds
    /// `maxSubscriptionsPerUser` subscribed connections, or the connection has closed; true
    /// at once when it is a subscriber already.
    public func claimSubscription() -> Bool {
        guard let server else { return false }
        return server.claimSubscriber(self)
    }

    /// Whether `claimSubscription()` succeeded on this connection.
    public var isSubscriber: Bool { counters.withLock { $0.subscriber } }
    /// Notifications accepted and not yet written to the socket (at most `maxQueuedNotifications`).
    public var queuedNotifications: Int { counters.withLock { $0.queued } }
    /// Notifications dropped since the connection opened because the client did not read.
    public var droppedNotifications: Int { counters.withLock { $0.dropped } }

    // Bookkeeping for the server.

    func notificationsWritten(_ count: Int) {
        counters.withLock { $0.queued -= count }
    }

    /// The number of drops to report in an `event.overflow`, once every notification accepted
    /// before has been written (the report itself then counts as a queued notification).
    func takeUnreportedDrops() -> Int? {
        counters.withLock { c -> Int? in
            guard c.open, c.unreported > 0, c.queued == 0 else { return nil }
            defer { c.unreported = 0 }
            c.queued += 1
            return c.unreported
        }
    }

    /// For the server, under its subscriber count's lock: becomes a subscriber if open and
    /// `take()` agrees.
    func becomeSubscriber(_ take: () -> Bool) -> Bool {
        counters.withLock { c in
            if c.subscriber { return true }
            guard c.open, take() else { return false }
            c.subscriber = true
            return true
        }
    }

    /// Returns whether it was a subscriber (its place in the per-user count is to be given back).
    func markClosed() -> Bool {
        counters.withLock {
            $0.open = false
            $0.queued = 0
            return $0.subscriber
        }
    }

    public static func == (a: ConnectionHandle, b: ConnectionHandle) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "connection \(id) (\(caller))" }
}

/// One client connection's state inside `APIServer`.
///
/// `@unchecked Sendable` only so that Dispatch handlers (which are `@Sendable`) can carry it:
/// every property is read and written on the server's serial queue alone — the sources deliver
/// their events there, and all other access goes through `queue.async`.
final class Connection: @unchecked Sendable {
    enum Inbound {
        case line([UInt8])
        /// The client sent a line over the limit: answer -32600 in turn, then close.
        case tooLong
    }

    let handle: ConnectionHandle
    let descriptor: FileDescriptor
    let readSource: DispatchSourceRead
    let writeSource: DispatchSourceWrite
    var framer: LineFramer
    /// Complete request lines not handed to the handler yet.
    var inbox = FIFO<Inbound>()
    var inboxBytes = 0
    var output = OutputBuffer()
    /// A request of this connection is with the handler.
    var busy = false
    /// No more requests will be read: end of stream, a line over the limit, or shutdown.
    var inputClosed = false
    var closed = false
    /// `readSource` is resumed (else suspended).
    var reading = false
    /// `writeSource` is resumed (else suspended, or never activated).
    var writing = false
    /// When a whole request line last arrived, a request finished or output was written.
    var lastActivity = ContinuousClock.now
    /// Sources not yet cancelled; the descriptor closes when the last is, never under epoll's feet.
    private var liveSources = 2

    init(handle: ConnectionHandle, descriptor: FileDescriptor, queue: DispatchQueue, maxLine: Int) {
        self.handle = handle
        self.descriptor = descriptor
        self.framer = LineFramer(maxLine: maxLine)
        readSource = DispatchSource.makeReadSource(fileDescriptor: descriptor.raw, queue: queue)
        writeSource = DispatchSource.makeWriteSource(fileDescriptor: descriptor.raw, queue: queue)
        readSource.setCancelHandler { self.sourceCancelled() }
        writeSource.setCancelHandler { self.sourceCancelled() }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 { try? descriptor.close() }
    }
}

/// Bytes waiting to be written to one connection, line by line, so the server knows how many
/// of them are notifications.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    /// `bytes[..<head]` are written already.
    private var head = 0
    /// Stream position of `bytes[0]` (positions only grow).
    private var base = 0
    /// Stream position just past each queued line, and whether it is a notification.
    private var lineEnds = FIFO<(end: Int, notification: Bool)>()

    /// Bytes not yet written.
    var count: Int { bytes.count - head }
    var isEmpty: Bool { head == bytes.count }

    mutating func append(_ line: [UInt8], notification: Bool) {
        bytes.append(contentsOf: line)
        lineEnds.append((base + bytes.count, notification))
    }

    func withPending<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[head...])) }
    }

    /// Records that `written` more bytes went out; returns how many notifications were completed.
    mutating func consume(_ written: Int) -> Int {
        head += written
        let position = base + head
        var notifications = 0
        while let first = lineEnds.first, first.end <= position {
            _ = lineEnds.popFirst()
            if first.notification { notifications += 1 }
        }
        if head == bytes.count {
            base += head
            bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 16)
            head = 0
        } else if head >= 1 << 16 && head * 2 >= bytes.count {
            base += head
            bytes.removeFirst(head)
            head = 0
        }
        return notifications
    }
}

/// A first-in first-out queue with O(1) amortized removal at the front.
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.capacity <= 1024)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func removeAll() {
        items.removeAll()
        head = 0
    }
}
