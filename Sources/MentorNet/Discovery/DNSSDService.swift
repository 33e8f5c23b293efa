#if canImport(Glibc)
import Glibc
#endif
import CDNSSD
import Dispatch
import Synchronization

/// One running DNS-SD operation — a registration, a browse, a resolve or an address query — over
/// Avahi's `dns_sd` compatibility library. It owns one `DNSServiceRef`: a read source on
/// `DNSServiceRefSockFD` calls `DNSServiceProcessResult` on `queue` whenever the library has
/// something, so callbacks and `handler` always run there. No polling, no global registry: each
/// C callback finds its Swift side through the `context` pointer.
///
/// ```swift
/// let registration = try DNSSDService.register(name: nil, type: "_mentormate._tcp", port: 7000,
///                                              txt: ["v": "1"], queue: queue) { event in ... }
/// ...
/// registration.cancel()   // the service is withdrawn (Avahi sends its goodbye)
/// ```
///
/// `cancel()` (or letting go of the object) ends the operation: the source is cancelled, and its
/// cancel handler, on `queue`, deallocates the `DNSServiceRef`. No event is delivered after
/// `cancel()` returns when it was called on `queue`; called elsewhere, one event already being
/// delivered may still finish.
///
/// A failure is delivered once, as the operation's `.failed` event, and ends the operation as
/// `cancel()` does; start a new one later (with backoff: see `DNSSDError`).
///
/// `@unchecked Sendable`: the reference and callbacks are touched only on `queue` (the source's
/// handlers) and in the creating call before the source is resumed; `cancel()` only cancels the
/// source (thread-safe) and sets an atomic flag.
public final class DNSSDService: @unchecked Sendable {
    /// What this operation is ("register _mentormate._tcp"), for errors and logs.
    public let what: String
    private let context: Context
    private let source: DispatchSourceRead
    private let queue: DispatchQueue

    /// Starts an operation: `start` makes the `DNSServiceRef` with the given context pointer.
    private init(what: String, queue: DispatchQueue, deliver: @escaping (Reply) -> Void,
                 start: (UnsafeMutablePointer<DNSServiceRef?>, UnsafeMutableRawPointer) -> DNSServiceErrorType) throws(DNSSDError) {
        DNSSDService.silenceCompatibilityWarning
        let context = Context(deliver: deliver)
        // One retain for the C side; released by the source's cancel handler, after the
        // reference (and so every callback) is gone, or right here when nothing started.
        let pointer = Unmanaged.passRetained(context).toOpaque()
        var ref: DNSServiceRef?
        let status = start(&ref, pointer)
        guard status == kDNSServiceErr_NoError, let ref else {
            Unmanaged<Context>.fromOpaque(pointer).release()
            throw DNSSDError(DNSSDError.Code(rawValue: status == kDNSServiceErr_NoError ? Int32(kDNSServiceErr_Unknown) : status), what)
        }
        let fd = DNSServiceRefSockFD(ref)
        guard fd >= 0 else {
            DNSServiceRefDeallocate(ref)
            Unmanaged<Context>.fromOpaque(pointer).release()
            throw DNSSDError(.badReference, what + ": no descriptor to watch")
        }
        context.ref = ref
        self.what = what
        self.context = context
        self.queue = queue
        self.source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        context.source = source
        source.setEventHandler { [context] in
            guard let ref = context.ref, !context.cancelled.load(ordering: .acquiring) else { return }
            let status = DNSServiceProcessResult(ref)
            if status != kDNSServiceErr_NoError {
                // The library's worker is gone or failed: its descriptor will not become
                // readable in a useful way again (it may stay readable at end of file).
                Context.deliver(.processingFailed(status), to: Unmanaged.passUnretained(context).toOpaque())
            }
        }
        source.setCancelHandler { [context] in
            context.cancelled.store(true, ordering: .releasing)
            // The source no longer watches the descriptor: the library may close it now.
            if let ref = context.ref { DNSServiceRefDeallocate(ref) }
            context.ref = nil
            context.source = nil
            let completions = context.finish()
            Unmanaged.passUnretained(context).release()
            completions.forEach { $0() }
        }
        source.resume()
    }

    deinit { source.cancel() }

    /// Ends the operation (idempotent). The `DNSServiceRef` is deallocated on `queue` right after;
    /// then `completion`, if given, runs there.
    public func cancel(completion: (@Sendable () -> Void)? = nil) {
        context.cancelled.store(true, ordering: .releasing)
        if let completion, !context.addCompletion(completion) {
            queue.async(execute: completion)  // already deallocated
        }
        source.cancel()
    }

    /// Set before the first `DNSService*` call so the compatibility library does not print its
    /// three-line warning. `setenv` is not thread-safe, so it happens once (a lazy global).
    private static let silenceCompatibilityWarning: Void = {
        setenv("AVAHI_COMPAT_NOWARN", "1", 0)
    }()
}

// MARK: - The four operations

/// An instance of a service type as browsing reports it: what resolving it needs.
public struct DNSSDInstanceName: Hashable, Sendable, CustomStringConvertible {
    /// The instance name, as people read it ("mml-host1", "Ada's laptop #2").
    public var name: String
    /// "_mentormate._tcp."
    public var type: String
    /// "local."
    public var domain: String
    /// The interface it was seen on (an `if_nametoindex` value).
    public var interfaceIndex: UInt32

    public init(name: String, type: String, domain: String, interfaceIndex: UInt32) {
        self.name = name
        self.type = type
        self.domain = domain
        self.interfaceIndex = interfaceIndex
    }

    public var description: String { "\(name).\(type)\(domain) (interface \(interfaceIndex))" }
}

extension DNSSDService {
    public enum RegisterEvent: Sendable, Equatable {
        /// The service is on the air under `name` — not always the name asked for: Avahi picks
        /// "name #2" when another host has it. Comes again after a later rename, or (with the
        /// same name) after Avahi put it on the air again, e.g. after a host-name conflict.
        case registered(name: String)
        case failed(DNSSDError)
    }

    public enum BrowseEvent: Sendable, Equatable {
        /// An instance appeared on an interface (one event per interface it is seen on).
        case found(DNSSDInstanceName)
        /// It said goodbye or its records expired, on that interface.
        case lost(DNSSDInstanceName)
        case failed(DNSSDError)
    }

    public enum ResolveEvent: Sendable, Equatable {
        /// `host` is the target host name ("mml-host1.local."); look up its addresses with
        /// `queryAddresses`. May come again when the service's records change.
        case resolved(host: String, port: UInt16, txt: TXTRecord, interfaceIndex: UInt32)
        case failed(DNSSDError)
    }

    public enum AddressEvent: Sendable, Equatable {
        /// An address of the host, in text form ("169.254.77.1", "fe80::1").
        case added(String)
        /// An address went away (goodbye or expiry).
        case removed(String)
        case failed(DNSSDError)
    }

    public enum AddressFamily: Sendable {
        case ipv4, ipv6
    }

    /// Registers (advertises) an instance of `type` on every interface.
    ///
    /// - Parameters:
    ///   - name: the instance name; nil for the host name. On a conflict Avahi renames it
    ///     ("name #2") and `.registered` says the final name.
    ///   - type: "_mentormate._tcp".
    ///   - port: the TCP port peers connect to.
    ///   - txt: what goes in the TXT record (MentorMate: `v=1`, nothing else).
    ///
    /// When avahi-daemon stops or restarts under it, the registration reports `.failed(.unknown)`
    /// at once (Avahi 0.8) and is gone for good: cancel it and register again later.
    public static func register(name: String?, type: String, port: UInt16, txt: TXTRecord = TXTRecord(),
                                queue: DispatchQueue, handler: @escaping (RegisterEvent) -> Void) throws(DNSSDError) -> DNSSDService {
        let what = "register \(name.map { "\"\($0)\" " } ?? "")\(type) port \(port)"
        let txtBytes = try txt.encoded()
        return try DNSSDService(what: what, queue: queue, deliver: { reply in
            switch reply {
            case .register(let status, let registered) where status == kDNSServiceErr_NoError:
                guard let registered else { return }
                handler(.registered(name: registered))
            case .processingFailed(let status):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what + " (processing results)")))
            case .register(let status, _):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what)))
            default: break
            }
        }, start: { ref, context in
            txtBytes.withUnsafeBytes { txt in
                DNSServiceRegister(ref, 0, 0, name, type, nil, nil, port.bigEndian, UInt16(txt.count), txt.baseAddress,
                                   { _, _, status, name, _, _, context in
                                       Context.deliver(.register(status, name.map { String(cString: $0) }), to: context)
                                   }, context)
            }
        })
    }

    /// An interface index as Avahi's compatibility layer reports it, made usable in the next call.
    /// Wide-area (unicast DNS) answers come on no interface: Avahi's `AVAHI_IF_UNSPEC` (-1), which
    /// the layer hands over as 0xFFFFFFFF — `kDNSServiceInterfaceIndexLocalOnly`, which its
    /// `DNSServiceResolve` refuses with `kDNSServiceErr_Unsupported` (seen in the lab, Avahi
    /// 0.8). Any interface (0) is what it means.
    static func anyIfUnspecified(_ interface: UInt32) -> UInt32 { interface == UInt32.max ? 0 : interface }

    /// Browses for instances of `type` in `domain` — "" for the default domain ("local.", over
    /// mDNS on every interface), or a unicast DNS domain ("campus.example.edu."), which Avahi
    /// asks its DNS servers for (wide-area DNS-SD: `enable-wide-area=yes` in avahi-daemon.conf).
    public static func browse(type: String, domain: String = "", queue: DispatchQueue,
                              handler: @escaping (BrowseEvent) -> Void) throws(DNSSDError) -> DNSSDService {
        let what = domain.isEmpty ? "browse \(type)" : "browse \(type) in \(domain)"
        return try DNSSDService(what: what, queue: queue, deliver: { reply in
            switch reply {
            case .browse(let flags, let status, let instance) where status == kDNSServiceErr_NoError:
                guard let instance else { return }
                handler(flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 ? .found(instance) : .lost(instance))
            case .processingFailed(let status):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what + " (processing results)")))
            case .browse(_, let status, _):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what)))
            default: break
            }
        }, start: { ref, context in
            DNSServiceBrowse(ref, 0, 0, type, domain, { _, flags, interface, status, name, type, domain, context in
                let instance = name.flatMap { name in type.flatMap { type in domain.map { domain in
                    DNSSDInstanceName(name: String(cString: name), type: String(cString: type),
                                      domain: String(cString: domain), interfaceIndex: DNSSDService.anyIfUnspecified(interface))
                } } }
                Context.deliver(.browse(flags, status, instance), to: context)
            }, context)
        })
    }

    public enum DomainEvent: Sendable, Equatable {
        /// A domain recommended for browsing ("campus.example.edu.", and "local.").
        case added(String)
        case removed(String)
        case failed(DNSSDError)
    }

    /// The domains Avahi recommends for browsing: its `browse-domains=` (avahi-daemon.conf,
    /// `[wide-area]` enabled) and those the network's DNS announces (`b._dns-sd._udp`), and "local.".
    public static func enumerateBrowseDomains(queue: DispatchQueue,
                                              handler: @escaping (DomainEvent) -> Void) throws(DNSSDError) -> DNSSDService {
        let what = "enumerate browse domains"
        return try DNSSDService(what: what, queue: queue, deliver: { reply in
            switch reply {
            case .domain(let flags, let status, let domain) where status == kDNSServiceErr_NoError:
                guard let domain else { return }
                handler(flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 ? .added(domain) : .removed(domain))
            case .processingFailed(let status):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what + " (processing results)")))
            case .domain(_, let status, _):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what)))
            default: break
            }
        }, start: { ref, context in
            DNSServiceEnumerateDomains(ref, DNSServiceFlags(kDNSServiceFlagsBrowseDomains), 0, { _, flags, _, status, domain, context in
                Context.deliver(.domain(flags, status, domain.map { String(cString: $0) }), to: context)
            }, context)
        })
    }

    /// Resolves an instance to its host name, port and TXT record. Avahi gives up after about
    /// five seconds with `.failed(.unknown)` when the instance does not answer.
    public static func resolve(_ instance: DNSSDInstanceName, queue: DispatchQueue,
                               handler: @escaping (ResolveEvent) -> Void) throws(DNSSDError) -> DNSSDService {
        let what = "resolve \"\(instance.name)\".\(instance.type)\(instance.domain)"
        return try DNSSDService(what: what, queue: queue, deliver: { reply in
            switch reply {
            case .resolve(let status, let interface, let host, let port, let txt) where status == kDNSServiceErr_NoError:
                guard let host else { return }
                handler(.resolved(host: host, port: port, txt: TXTRecord(decoding: txt), interfaceIndex: interface))
            case .processingFailed(let status):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what + " (processing results)")))
            case .resolve(let status, _, _, _, _):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what)))
            default: break
            }
        }, start: { ref, context in
            DNSServiceResolve(ref, 0, instance.interfaceIndex, instance.name, instance.type, instance.domain,
                              { _, _, interface, status, _, host, port, txtLength, txt, context in
                let bytes = txt.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(txtLength))) } ?? []
                Context.deliver(.resolve(status, DNSSDService.anyIfUnspecified(interface), host.map { String(cString: $0) }, UInt16(bigEndian: port), bytes),
                                to: context)
            }, context)
        })
    }

    /// Looks up the addresses of `host` ("mml-host1.local.") over mDNS: its A records (`.ipv4`)
    /// or AAAA records (`.ipv6`). Avahi's library has no `DNSServiceGetAddrInfo`, so this is
    /// `DNSServiceQueryRecord`; it keeps reporting additions and removals until cancelled.
    public static func queryAddresses(host: String, family: AddressFamily = .ipv4, interfaceIndex: UInt32 = 0,
                                      queue: DispatchQueue, handler: @escaping (AddressEvent) -> Void) throws(DNSSDError) -> DNSSDService {
        let what = "look up \(family == .ipv4 ? "IPv4" : "IPv6") addresses of \(host)"
        let (recordType, addressFamily, length) = family == .ipv4
            ? (UInt16(kDNSServiceType_A), AF_INET, 4) : (UInt16(kDNSServiceType_AAAA), AF_INET6, 16)
        return try DNSSDService(what: what, queue: queue, deliver: { reply in
            switch reply {
            case .record(let flags, let status, let type, let data) where status == kDNSServiceErr_NoError:
                guard type == recordType, data.count == length, let text = addressText(data, family: addressFamily) else { return }
                handler(flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 ? .added(text) : .removed(text))
            case .processingFailed(let status):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what + " (processing results)")))
            case .record(_, let status, _, _):
                handler(.failed(DNSSDError(DNSSDError.Code(rawValue: status), what)))
            default: break
            }
        }, start: { ref, context in
            DNSServiceQueryRecord(ref, 0, interfaceIndex, host, recordType, UInt16(kDNSServiceClass_IN),
                                  { _, flags, _, status, _, type, _, length, data, _, context in
                let bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
                Context.deliver(.record(flags, status, type, bytes), to: context)
            }, context)
        })
    }

    private static func addressText(_ bytes: [UInt8], family: Int32) -> String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let converted = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        guard converted != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

// MARK: - What the C callbacks hand over

extension DNSSDService {
    /// One C callback's arguments, copied out of the library's buffers.
    enum Reply {
        case register(DNSServiceErrorType, String?)
        case browse(DNSServiceFlags, DNSServiceErrorType, DNSSDInstanceName?)
        case resolve(DNSServiceErrorType, UInt32, String?, UInt16, [UInt8])
        case record(DNSServiceFlags, DNSServiceErrorType, UInt16, [UInt8])
        case domain(DNSServiceFlags, DNSServiceErrorType, String?)
        /// `DNSServiceProcessResult` itself failed.
        case processingFailed(DNSServiceErrorType)

        var status: DNSServiceErrorType {
            switch self {
            case .register(let status, _), .browse(_, let status, _), .resolve(let status, _, _, _, _),
                 .record(_, let status, _, _), .domain(_, let status, _), .processingFailed(let status):
                status
            }
        }
    }

    /// The Swift side of one `DNSServiceRef`, passed to C as `context`.
    ///
    /// `@unchecked Sendable`: `ref`, `source` and `deliver` are used only on the operation's
    /// queue (callbacks run inside `DNSServiceProcessResult`, which only the read source calls,
    /// and the cancel handler runs there too) and while it is made; `cancelled` is atomic and the
    /// completions are locked.
    final class Context: @unchecked Sendable {
        var ref: DNSServiceRef?
        /// The source that drives `ref`, until its cancel handler ran (which breaks this cycle).
        var source: DispatchSourceRead?
        let deliver: (Reply) -> Void
        let cancelled = Atomic<Bool>(false)
        /// Run once the reference is deallocated; nil from then on.
        private let completions = Mutex<[@Sendable () -> Void]?>([])

        init(deliver: @escaping (Reply) -> Void) { self.deliver = deliver }

        /// False when the reference is deallocated already.
        func addCompletion(_ completion: @escaping @Sendable () -> Void) -> Bool {
            completions.withLock { list in
                guard list != nil else { return false }
                list!.append(completion)
                return true
            }
        }

        /// The completions to run now that the reference is gone.
        func finish() -> [@Sendable () -> Void] {
            completions.withLock { list in
                defer { list = nil }
                return list ?? []
            }
        }

        /// Called from the C callbacks (inside `DNSServiceProcessResult`, on the queue): hands
        /// `reply` to the operation unless it was cancelled (later callbacks of the same batch are
        /// dropped then). A failure ends the operation: nothing is delivered after it.
        static func deliver(_ reply: Reply, to pointer: UnsafeMutableRawPointer?) {
            guard let pointer else { return }
            let context = Unmanaged<Context>.fromOpaque(pointer).takeUnretainedValue()
            guard !context.cancelled.load(ordering: .acquiring) else { return }
            if reply.status != kDNSServiceErr_NoError {
                context.cancelled.store(true, ordering: .releasing)
                context.source?.cancel()  // its cancel handler runs after this batch
            }
            context.deliver(reply)
        }
    }
}
