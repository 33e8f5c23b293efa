// mentormate-dnssd-probe register NAME PORT [--retry SECONDS]
// mentormate-dnssd-probe browse SECONDS
//
// Drives MentorNet's `Discovery` for the lab tests (Tests/EndToEndTests/DiscoveryLabTests.swift):
// run on a lab host with `scripts/lab exec N mentormate-dnssd-probe ...`.
//
// - `register` advertises NAME (`_mentormate._tcp`, PORT, TXT `v=1`) and browses; it runs until
//   SIGTERM or SIGINT, or until its stdin closes when stdin is a pipe or socket (not /dev/null).
//   After `failed` it exits with status 3, or with `--retry S` starts again S seconds later.
// - `browse` only browses, for SECONDS, then exits 0.
//
// Each event is one JSON line on stdout, written with one write(2) as it happens:
//
//     {"event":"registered","name":"mm-a","ms":812}
//     {"event":"found","name":"mm-a","host":"mml-host1.local.","port":47001,
//      "addresses":["169.254.77.1"],"txt":{"v":"1"},"ms":95}
//     {"event":"lost","name":"mm-a","ms":20113}
//     {"event":"failed","code":-65537,"codeName":"kDNSServiceErr_Unknown","message":"...","ms":3}
//     {"event":"stopped","ms":20200}
//
// `ms` counts from the program's start. Log lines (MentorNet's logger) go to stderr.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import MentorNet
import MentorSystem

let started = ContinuousClock.now

func fail(_ message: String, status: Int32 = 2) -> Never {
    let bytes = Array("mentormate-dnssd-probe: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

/// Writes one JSON object as a line with a single write(2): a reader never sees part of one.
func emit(_ fields: [String: Any]) {
    var fields = fields
    let elapsed = ContinuousClock.now - started
    fields["ms"] = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    guard let json = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else {
        fail("cannot encode \(fields)", status: 1)
    }
    let bytes = Array(json) + [UInt8(ascii: "\n")]
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        if written <= 0 { exit(1) }  // the reader is gone
        offset += written
    }
}

struct StderrLogger: MentorSystem.Logger {
    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let bytes = Array("probe [\(level)] \(message) \(fields)\n".utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

// MARK: Arguments

struct Options {
    var settings: Discovery.Settings
    /// `browse`: how long.
    var browseSeconds: Double?
    /// `register --retry`: the delay before starting again after a failure.
    var retrySeconds: Double?

    /// `register-only`: a bare `DNSSDService.register`, no `Discovery` around it.
    var registerOnly = false

    static let usage = "usage: mentormate-dnssd-probe register NAME PORT [--retry SECONDS] | register-only NAME PORT | browse SECONDS"

    init(_ arguments: [String]) {
        guard let command = arguments.first else { fail(Self.usage) }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "register":
            guard rest.count >= 2, let port = UInt16(rest[1]) else { fail(Self.usage) }
            settings = Discovery.Settings(advertisement: .init(name: rest[0], port: port, txt: ["v": "1"]))
            if rest.count == 4, rest[2] == "--retry", let seconds = Double(rest[3]), seconds > 0 {
                retrySeconds = seconds
            } else if rest.count != 2 {
                fail(Self.usage)
            }
        case "register-only":
            guard rest.count == 2, let port = UInt16(rest[1]) else { fail(Self.usage) }
            settings = Discovery.Settings(advertisement: .init(name: rest[0], port: port, txt: ["v": "1"]))
            registerOnly = true
        case "browse":
            guard rest.count == 1, let seconds = Double(rest[0]), seconds > 0 else { fail(Self.usage) }
            settings = Discovery.Settings(advertisement: nil)
            browseSeconds = seconds
        default:
            fail(Self.usage)
        }
    }
}

// MARK: Running

/// `@unchecked Sendable`: `discovery` is set once before anything runs; all else happens on `queue`.
final class Probe: @unchecked Sendable {
    let options: Options
    let queue: DispatchQueue
    private var discovery: Discovery!
    private var sources: [any DispatchSourceProtocol] = []

    init(options: Options, queue: DispatchQueue) {
        self.options = options
        self.queue = queue
        discovery = Discovery(settings: options.settings, queue: queue, logger: StderrLogger()) { [unowned self] event in
            self.handle(event)
        }
    }

    func run() -> Never {
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler { [self] in finish() }
            source.resume()
            sources.append(source)
        }
        var status = stat()
        if fstat(STDIN_FILENO, &status) == 0,
           (status.st_mode & S_IFMT) == S_IFIFO || (status.st_mode & S_IFMT) == S_IFSOCK {
            let source = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO, queue: queue)
            source.setEventHandler { [self] in
                var buffer = [UInt8](repeating: 0, count: 4096)
                if read(STDIN_FILENO, &buffer, buffer.count) == 0 { finish() }
            }
            source.resume()
            sources.append(source)
        }
        if let seconds = options.browseSeconds {
            queue.asyncAfter(deadline: .now() + seconds) { [self] in finish() }
        }
        if options.registerOnly {
            startRegistrationOnly()
        } else {
            discovery.start()
        }
        dispatchMain()
    }

    private var registration: DNSSDService?

    /// `register-only`: what a single registration reports by itself (e.g. when avahi-daemon
    /// stops under it).
    private func startRegistrationOnly() {
        let advertisement = options.settings.advertisement!
        queue.async { [self] in
            do throws(DNSSDError) {
                registration = try DNSSDService.register(
                    name: advertisement.name, type: Discovery.serviceType, port: advertisement.port,
                    txt: advertisement.txt, queue: queue) { [self] event in
                    switch event {
                    case .registered(let name): handle(.registered(name: name))
                    case .failed(let error): handle(.failed(error))
                    }
                }
            } catch {
                handle(.failed(error))
            }
        }
    }

    private func handle(_ event: Discovery.Event) {
        switch event {
        case .registered(let name):
            emit(["event": "registered", "name": name])
        case .found(let instance):
            var txt: [String: String] = [:]
            for entry in instance.txt.entries {
                txt[entry.key] = entry.value.map { String(decoding: $0, as: UTF8.self) } ?? ""
            }
            emit(["event": "found", "name": instance.name, "host": instance.host, "port": Int(instance.port),
                  "addresses": instance.addresses, "txt": txt])
        case .lost(let name):
            emit(["event": "lost", "name": name])
        case .failed(let error):
            emit(["event": "failed", "code": Int(error.code.rawValue), "codeName": error.code.name,
                  "message": "\(error)"])
            guard let seconds = options.retrySeconds else { exit(3) }
            queue.asyncAfter(deadline: .now() + seconds) { [self] in discovery.start() }
        }
    }

    /// Stops discovery (withdrawing our service: Avahi sends the goodbye), then exits.
    private func finish() {
        if let registration {
            registration.cancel {
                emit(["event": "stopped"])
                exit(0)
            }
            return
        }
        discovery.stop {
            emit(["event": "stopped"])
            exit(0)
        }
    }
}

Probe(options: Options(Array(CommandLine.arguments.dropFirst())), queue: DispatchQueue(label: "mentormate-dnssd-probe")).run()
