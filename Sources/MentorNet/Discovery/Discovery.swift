import Dispatch
import MentorSystem

/// Finds the other instances of our service type on the local network, and (unless it only
/// browses) advertises ours: register, browse, and for each instance found a resolve and an
/// address lookup, all `DNSSDService` operations on one serial queue.
///
/// ```swift
/// let discovery = Discovery(settings: .init(advertisement: .init(port: 7000)), queue: queue, logger: logger) { event in
///     switch event {
///     case .registered(let name): ...        // we are on the air as `name`
///     case .found(let instance): ...         // instance.addresses, instance.port, instance.txt["v"]
///     case .lost(let name): ...              // goodbye or expiry
///     case .failed(let error): ...           // everything stopped: start() again after a backoff
///     }
/// }
/// discovery.start()
/// ```
///
/// - `.found` comes once per instance name, once its host name, port, TXT record and at least
///   one address are known (A and AAAA records are both asked for on the interface the instance
///   was resolved on; what arrives within `addressSettle` of the first goes into one `.found`;
///   a link-local IPv6 address carries that interface as its scope, `fe80::1%eth0`); `.lost`
///   comes when it has gone from every interface. Our own instance (the name we registered,
///   after any rename) is never reported; when a rename shows that an instance already
///   reported was ours, a `.lost` for it follows.
/// - An instance that cannot be resolved within `resolveTimeout` is logged and left alone until
///   it goes away and comes back.
/// - `.failed` (Avahi or D-Bus unreachable, avahi-daemon stopped or restarted, ...) stops
///   everything first: a `.lost` comes for each instance reported, then `.failed`. Nothing is
///   retried here; the owner calls `start()` again, with backoff.
/// - Nothing here knows about peers: whoever consumes `.found` decides who an instance is.
///
/// Events run on `queue`. `start()` and `stop()` may be called from any thread; no event is
/// delivered after `stop()` (once it runs on `queue`).
///
/// `@unchecked Sendable`: every mutable property is touched only on `queue`; the public methods
/// hop there.
public final class Discovery: @unchecked Sendable {
    /// What we advertise.
    public struct Advertisement: Sendable, Equatable {
        /// The instance name; nil for the host name. Avahi renames it on a conflict.
        public var name: String?
        /// The TCP port peers connect to.
        public var port: UInt16
        /// The TXT record: the protocol version (`v=1`), and `hub=1` on a hub (PROTOCOL.md §13.5);
        /// nothing that identifies a person.
        public var txt: TXTRecord

        public init(name: String? = nil, port: UInt16, txt: TXTRecord = ["v": "1"]) {
            self.name = name
            self.port = port
            self.txt = txt
        }
    }

    public struct Settings: Sendable, Equatable {
        public var serviceType = Discovery.serviceType
        /// nil: browse only, advertise nothing.
        public var advertisement: Advertisement?
        /// From an instance being found to its address being known.
        public var resolveTimeout: Duration = .seconds(5)
        /// From the first address of an instance to its `.found`: the other family's answer
        /// (A or AAAA) usually comes within milliseconds, and both go into one report.
        public var addressSettle: Duration = .milliseconds(150)
        /// Unicast DNS domains browsed besides "local." (wide-area DNS-SD, `--browse-domain`),
        /// as "campus.example.edu.".
        public var domains: [String] = []
        /// Also browse the domains Avahi recommends (`DNSServiceEnumerateDomains`: its
        /// `browse-domains=` and what the network's DNS announces).
        public var enumerateDomains = true
        /// Wide-area domains browsed at most (configured and enumerated together): each is one
        /// browse Avahi keeps querying.
        public var maxDomains = 8

        public init(advertisement: Advertisement?, domains: [String] = []) {
            self.advertisement = advertisement
            self.domains = domains
        }
    }

    /// One resolved instance of the service on the network.
    public struct Instance: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        /// "mml-host1.local."
        public var host: String
        public var port: UInt16
        /// Addresses of `host`, in text form: IPv4 first, then IPv6 (a link-local one with the
        /// interface it was resolved on as its scope: `fe80::1%eth0`).
        public var addresses: [String]
        public var txt: TXTRecord
        /// The interface it was resolved on (0 for a wide-area instance).
        public var interfaceIndex: UInt32
        /// The domain it was browsed in: "local." over mDNS, else a unicast DNS domain (wide-area).
        public var domain: String

        public init(name: String, host: String, port: UInt16, addresses: [String], txt: TXTRecord, interfaceIndex: UInt32,
                    domain: String = "local.") {
            self.domain = domain
            self.name = name
            self.host = host
            self.port = port
            self.addresses = addresses
            self.txt = txt
            self.interfaceIndex = interfaceIndex
        }

        /// Found over mDNS on this machine's segment (not in a wide-area domain).
        public var isLocal: Bool { Discovery.normalDomain(domain) == "local." }

        /// The instance advertises a hub (TXT `hub=1`, PROTOCOL.md §13.5).
        public var isHub: Bool { txt.advertisesHub }

        /// Where to connect: each address with the port.
        public var peerAddresses: [PeerAddress] { addresses.map { PeerAddress(host: $0, port: port) } }

        public var description: String {
            "\"\(name)\" \(host) \(addresses.joined(separator: ",")) port \(port) txt \(txt)"
        }
    }

    public enum Event: Sendable, Equatable {
        /// Our service is on the air under `name` (again with the new name after a rename).
        case registered(name: String)
        case found(Instance)
        /// The instance `name` said goodbye or expired everywhere.
        case lost(name: String)
        /// Discovery stopped: D-Bus or avahi-daemon is unreachable or went away, or a call was
        /// refused. Call `start()` again later.
        case failed(DNSSDError)
    }

    /// "_mentormate._tcp".
    public static let serviceType = "_mentormate._tcp"

    public let settings: Settings
    private let queue: DispatchQueue
    private let logger: any Logger
    private let handler: (Event) -> Void
    private static let onQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// An instance the browser reports, by name.
    private struct Tracked {
        /// What to resolve (the first interface it was seen on).
        var instance: DNSSDInstanceName
        /// The interfaces it is seen on now.
        var interfaces: Set<UInt32> = []
        /// Tells this round of resolving from an earlier one whose callbacks may still be queued.
        var token: UInt64 = 0
        var resolver: DNSSDService?
        var query: DNSSDService?
        var query6: DNSSDService?
        var deadline: DispatchWorkItem?
        var resolved: (host: String, port: UInt16, txt: TXTRecord, interfaceIndex: UInt32)?
        var addresses: [String] = []
        var reportScheduled = false
        var reported = false

        init(instance: DNSSDInstanceName) { self.instance = instance }

        /// Ends any resolving in progress.
        mutating func stopResolving() {
            resolver?.cancel()
            query?.cancel()
            query6?.cancel()
            deadline?.cancel()
            resolver = nil
            query = nil
            query6 = nil
            deadline = nil
            resolved = nil
            addresses = []
            reportScheduled = false
        }
    }

    // Confined to queue:
    private var running = false
    private var registration: DNSSDService?
    private var browser: DNSSDService?
    /// Wide-area browses, by domain ("campus.example.edu."), and the enumeration of the domains
    /// Avahi recommends.
    private var domainBrowsers: [String: DNSSDService] = [:]
    private var domainEnumerator: DNSSDService?
    private var ownName: String?
    /// Since the last failure, with no successful start after it.
    private var failing = false
    /// Repeated failures of a streak: logged at info once, then at a slowing rate, else at debug.
    private var failure = RecurringFailure()
    private var tracked: [String: Tracked] = [:]
    private var nextToken: UInt64 = 1

    public init(settings: Settings, queue: DispatchQueue, logger: some Logger = DiscardingLogger(),
                handler: @escaping (Event) -> Void) {
        self.settings = settings
        self.queue = queue
        self.logger = logger
        self.handler = handler
        queue.setSpecific(key: Self.onQueueKey, value: ObjectIdentifier(queue))
    }

    deinit {
        registration?.cancel()
        browser?.cancel()
        domainEnumerator?.cancel()
        for service in domainBrowsers.values { service.cancel() }
        for entry in tracked.values {
            entry.resolver?.cancel()
            entry.query?.cancel()
            entry.query6?.cancel()
            entry.deadline?.cancel()
        }
    }

    /// Registers (if advertising) and browses. Does nothing while running. A failure to start is
    /// delivered as `.failed` (on `queue`), e.g. `.unknown` at once when Avahi is unreachable.
    public func start() {
        perform { self.startOnQueue() }
    }

    /// Stops everything: every `DNSServiceRef` is deallocated (our service is withdrawn with a
    /// goodbye) and every source cancelled; then `completion`, if given, runs on `queue`.
    /// Safe to call twice, or when not running.
    public func stop(completion: (@Sendable () -> Void)? = nil) {
        perform {
            let group = DispatchGroup()
            self.tearDown(reportingLost: false, group: group)
            if let completion { group.notify(queue: self.queue, execute: completion) }
        }
    }

    /// Browses afresh (the machine's network changed: a new segment, new addresses): the browse
    /// and every resolve in progress end, a `.lost` comes for each instance reported, and a new
    /// browse asks the network at once, so the instances of the new segment are found without
    /// waiting for the old browse's next query. The registration stays (Avahi announces it on
    /// the new addresses by itself). Does nothing while not running.
    public func rebrowse() {
        perform { self.rebrowseOnQueue() }
    }

    /// Whether register and browse are running (false after `.failed` or `stop()`).
    public var isRunning: Bool { onQueue { self.running } }

    /// The name we are registered under, once `.registered` came.
    public var registeredName: String? { onQueue { self.ownName } }
    /// Whether browsing shows our own registered instance (we are visible on the network).
    public var isOwnInstanceVisible: Bool {
        onQueue { self.ownName.map { self.tracked[$0]?.interfaces.isEmpty == false } ?? false }
    }

    // MARK: On queue

    private func startOnQueue() {
        guard !running else { return }
        let type = settings.serviceType
        do throws(DNSSDError) {
            if let advertisement = settings.advertisement {
                registration = try DNSSDService.register(
                    name: advertisement.name, type: type, port: advertisement.port, txt: advertisement.txt,
                    queue: queue) { [weak self] event in self?.registrationEvent(event) }
            }
            browser = try DNSSDService.browse(type: type, queue: queue) { [weak self] event in self?.browseEvent(event) }
        } catch {
            registration?.cancel()
            registration = nil
            logFailure(error)
            handler(.failed(error))
            return
        }
        running = true
        startWideArea()
        if failing {
            failing = false
            failure.recovered()
            logger.info("service discovery is back on", ["dnssd.type": type])
        } else {
            logger.debug("service discovery started", ["dnssd.type": type])
        }
    }

    /// The domains browsed now besides "local." (for `status` and tests).
    public var browsedDomains: [String] { onQueue { self.domainBrowsers.keys.sorted() } }

    /// Wide-area DNS-SD: a browse for each configured domain, and the enumeration of the
    /// domains Avahi recommends (each added one browsed too). Failures here leave mDNS alone:
    /// a domain whose browse fails is logged and left out until discovery starts again.
    private func startWideArea() {
        for domain in settings.domains { browseDomain(domain) }
        guard settings.enumerateDomains else { return }
        do throws(DNSSDError) {
            domainEnumerator = try DNSSDService.enumerateBrowseDomains(queue: queue) { [weak self] event in self?.domainEvent(event) }
        } catch {
            logger.info("browse domains cannot be enumerated; only those configured are browsed", ["dnssd.error": "\(error)"])
        }
    }

    private func domainEvent(_ event: DNSSDService.DomainEvent) {
        guard running else { return }
        switch event {
        case .added(let domain):
            browseDomain(domain)
        case .removed(let domain):
            let normal = Self.normalDomain(domain)
            guard !settings.domains.contains(normal), let service = domainBrowsers.removeValue(forKey: normal) else { return }
            service.cancel()
            logger.info("browse domain withdrawn", ["dnssd.domain": normal])
        case .failed(let error):
            domainEnumerator?.cancel()
            domainEnumerator = nil
            logger.info("enumerating browse domains failed; only those configured are browsed", ["dnssd.error": "\(error)"])
        }
    }

    /// "Campus.Example.EDU" → "campus.example.edu." (the form browses are keyed by).
    static func normalDomain(_ domain: String) -> String {
        let lower = domain.lowercased()
        return lower.hasSuffix(".") ? lower : lower + "."
    }

    private func browseDomain(_ domain: String) {
        let normal = Self.normalDomain(domain)
        guard normal != "local.", normal != ".", domainBrowsers[normal] == nil else { return }
        guard domainBrowsers.count < settings.maxDomains else {
            logger.info("browse domain not browsed: too many", ["dnssd.domain": normal, "limit": "\(settings.maxDomains)"])
            return
        }
        do throws(DNSSDError) {
            domainBrowsers[normal] = try DNSSDService.browse(type: settings.serviceType, domain: normal, queue: queue) { [weak self] event in
                self?.domainBrowseEvent(event, domain: normal)
            }
            logger.info("browsing a wide-area domain", ["dnssd.domain": normal, "dnssd.type": settings.serviceType])
        } catch {
            logger.info("browsing a wide-area domain failed", ["dnssd.domain": normal, "dnssd.error": "\(error)"])
        }
    }

    /// A wide-area browse's events are the local browse's, but its failure ends that browse only.
    private func domainBrowseEvent(_ event: DNSSDService.BrowseEvent, domain: String) {
        guard running else { return }
        if case .failed(let error) = event {
            domainBrowsers.removeValue(forKey: domain)?.cancel()
            logger.info("browsing a wide-area domain stopped", ["dnssd.domain": domain, "dnssd.error": "\(error)"])
            return
        }
        browseEvent(event)
    }

    /// Logs the first failure at info, and the failures after it (retries) at info once in a
    /// slowing while (1 min, then doubling up to 1 h), else at debug, until a start works.
    private func logFailure(_ error: DNSSDError) {
        if let missed = failure.failed(now: .now) {
            logger.log(.info, failing ? "service discovery is still off" : "service discovery is off",
                       ["dnssd.error": "\(error)", "failures": "\(failure.streak)", "unreported": "\(missed)"])
        } else {
            logger.log(.debug, "service discovery is off", ["dnssd.error": "\(error)"])
        }
        failing = true
    }

    private func rebrowseOnQueue() {
        guard running else { return }
        browser?.cancel()
        browser = nil
        domainEnumerator?.cancel()
        domainEnumerator = nil
        for service in domainBrowsers.values { service.cancel() }
        domainBrowsers = [:]
        let lost = tracked.filter { $0.value.reported }.map(\.key).sorted()
        for name in tracked.keys { tracked[name]?.stopResolving() }
        tracked = [:]
        lost.forEach { handler(.lost(name: $0)) }
        do throws(DNSSDError) {
            browser = try DNSSDService.browse(type: settings.serviceType, queue: queue) { [weak self] event in self?.browseEvent(event) }
            startWideArea()
            logger.debug("browsing again after a network change", ["dnssd.type": settings.serviceType, "lost": "\(lost.count)"])
        } catch {
            fail(error)
        }
    }

    private func registrationEvent(_ event: DNSSDService.RegisterEvent) {
        guard running else { return }
        switch event {
        case .registered(let name):
            logger.info("service registered", ["dnssd.instance": name])
            let previous = ownName
            ownName = name
            if var entry = tracked[name] {
                // That instance is us: forget what we resolved of it.
                let wasReported = entry.reported
                entry.stopResolving()
                entry.reported = false
                tracked[name] = entry
                if wasReported { handler(.lost(name: name)) }
            }
            handler(.registered(name: name))
            // After a rename, an instance with our old name is somebody else's.
            if let previous, previous != name, tracked[previous]?.interfaces.isEmpty == false {
                startResolving(previous)
            }
        case .failed(let error):
            fail(error)
        }
    }

    private func browseEvent(_ event: DNSSDService.BrowseEvent) {
        guard running else { return }
        switch event {
        case .found(let instance):
            var entry = tracked[instance.name] ?? Tracked(instance: instance)
            let isNew = entry.interfaces.isEmpty
            if isNew { entry.instance = instance }
            entry.interfaces.insert(instance.interfaceIndex)
            tracked[instance.name] = entry
            if isNew && instance.name != ownName { startResolving(instance.name) }
        case .lost(let instance):
            guard var entry = tracked[instance.name] else { return }
            entry.interfaces.remove(instance.interfaceIndex)
            guard entry.interfaces.isEmpty else {
                tracked[instance.name] = entry
                return
            }
            entry.stopResolving()
            tracked[instance.name] = nil
            if entry.reported {
                logger.debug("instance lost", ["dnssd.instance": instance.name])
                handler(.lost(name: instance.name))
            }
        case .failed(let error):
            fail(error)
        }
    }

    private func startResolving(_ name: String) {
        guard var entry = tracked[name] else { return }
        entry.stopResolving()
        let token = nextToken
        nextToken += 1
        entry.token = token
        do throws(DNSSDError) {
            entry.resolver = try DNSSDService.resolve(entry.instance, queue: queue) { [weak self] event in
                self?.resolveEvent(event, name: name, token: token)
            }
        } catch {
            tracked[name] = entry
            giveUp(name, token: token, error)
            return
        }
        let timeout = settings.resolveTimeout
        let deadline = DispatchWorkItem { [weak self] in
            self?.giveUp(name, token: token, "not resolved within \(timeout)")
        }
        entry.deadline = deadline
        tracked[name] = entry
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds)), execute: deadline)
    }

    private func resolveEvent(_ event: DNSSDService.ResolveEvent, name: String, token: UInt64) {
        guard var entry = tracked[name], entry.token == token, entry.resolved == nil else { return }
        switch event {
        case .resolved(let host, let port, let txt, let interfaceIndex):
            entry.resolver?.cancel()
            entry.resolver = nil
            entry.resolved = (host, port, txt, interfaceIndex)
            do throws(DNSSDError) {
                entry.query = try DNSSDService.queryAddresses(host: host, family: .ipv4, interfaceIndex: interfaceIndex,
                                                              queue: queue) { [weak self] event in
                    self?.addressEvent(event, name: name, token: token, family: .ipv4, interfaceIndex: interfaceIndex)
                }
                entry.query6 = try DNSSDService.queryAddresses(host: host, family: .ipv6, interfaceIndex: interfaceIndex,
                                                               queue: queue) { [weak self] event in
                    self?.addressEvent(event, name: name, token: token, family: .ipv6, interfaceIndex: interfaceIndex)
                }
                tracked[name] = entry
            } catch {
                tracked[name] = entry
                giveUp(name, token: token, error)
            }
        case .failed(let error):
            giveUp(name, token: token, error)
        }
    }

    private func addressEvent(_ event: DNSSDService.AddressEvent, name: String, token: UInt64,
                              family: DNSSDService.AddressFamily, interfaceIndex: UInt32) {
        guard var entry = tracked[name], entry.token == token, !entry.reported else { return }
        switch event {
        case .added(let address):
            // The scope comes from the interface the instance was resolved (and asked) on.
            let address = HostPort.scoped(address, interfaceIndex: interfaceIndex)
            if !entry.addresses.contains(address) { entry.addresses.append(address) }
            // Addresses that come within `addressSettle` (both families) go into one `.found`.
            if !entry.reportScheduled {
                entry.reportScheduled = true
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(settings.addressSettle.nanoseconds))) { [weak self] in
                    self?.report(name, token: token)
                }
            }
            tracked[name] = entry
        case .removed(let address):
            let address = HostPort.scoped(address, interfaceIndex: interfaceIndex)
            entry.addresses.removeAll { $0 == address }
            tracked[name] = entry
        case .failed(let error):
            // One family's lookup failing leaves the other's; the instance is given up when both failed.
            if family == .ipv4 { entry.query?.cancel(); entry.query = nil } else { entry.query6?.cancel(); entry.query6 = nil }
            tracked[name] = entry
            guard entry.query == nil && entry.query6 == nil else { return }
            giveUp(name, token: token, error)
        }
    }

    private func report(_ name: String, token: UInt64) {
        guard var entry = tracked[name], entry.token == token, !entry.reported else { return }
        entry.reportScheduled = false
        guard let resolved = entry.resolved, !entry.addresses.isEmpty else {
            tracked[name] = entry  // the address went again: wait for the next one
            return
        }
        // IPv4 first, then IPv6, each in the order they came.
        let addresses = entry.addresses.filter { !HostPort.isIPv6($0) } + entry.addresses.filter { HostPort.isIPv6($0) }
        let instance = Instance(name: name, host: resolved.host, port: resolved.port, addresses: addresses,
                                txt: resolved.txt, interfaceIndex: resolved.interfaceIndex, domain: entry.instance.domain)
        entry.stopResolving()
        entry.reported = true
        tracked[name] = entry
        logger.debug("instance found", ["dnssd.instance": name, "dnssd.host": instance.host,
                                        "dnssd.addresses": instance.addresses.joined(separator: ","),
                                        "dnssd.port": "\(instance.port)"])
        handler(.found(instance))
    }

    private func giveUp(_ name: String, token: UInt64, _ reason: any Error) {
        giveUp(name, token: token, "\(reason)")
    }

    private func giveUp(_ name: String, token: UInt64, _ reason: String) {
        guard var entry = tracked[name], entry.token == token, !entry.reported else { return }
        entry.stopResolving()
        tracked[name] = entry
        logger.info("instance found but not resolved; ignored until it leaves and returns",
                    ["dnssd.instance": name, "dnssd.error": reason])
    }

    private func fail(_ error: DNSSDError) {
        guard running else { return }
        logFailure(error)
        tearDown(reportingLost: true, group: nil)
        handler(.failed(error))
    }

    /// Cancels every operation; with `reportingLost`, sends `.lost` for each instance reported.
    private func tearDown(reportingLost: Bool, group: DispatchGroup?) {
        func cancel(_ service: DNSSDService?) {
            guard let service else { return }
            if let group {
                group.enter()
                service.cancel { group.leave() }
            } else {
                service.cancel()
            }
        }
        cancel(registration)
        cancel(browser)
        cancel(domainEnumerator)
        for service in domainBrowsers.values { cancel(service) }
        registration = nil
        browser = nil
        domainEnumerator = nil
        domainBrowsers = [:]
        let lost = tracked.filter { $0.value.reported }.map(\.key).sorted()
        for entry in tracked.values {
            cancel(entry.resolver)
            cancel(entry.query)
            cancel(entry.query6)
            entry.deadline?.cancel()
        }
        tracked = [:]
        ownName = nil
        running = false
        if reportingLost { lost.forEach { handler(.lost(name: $0)) } }
    }

    private var isOnQueue: Bool { DispatchQueue.getSpecific(key: Self.onQueueKey) == ObjectIdentifier(queue) }

    private func onQueue<T>(_ body: () -> T) -> T {
        isOnQueue ? body() : queue.sync(execute: body)
    }

    private func perform(_ body: @escaping @Sendable () -> Void) {
        if isOnQueue { body() } else { queue.async(execute: body) }
    }
}
