import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorArguments
import MentorCA
import MentorCore
import MentorCrypto
import MentorSystem

// mentormate-ca: parse the subcommand, run it. The CA's logic lives in MentorCA.

/// Exit statuses (mentormate-ca(8)).
enum ExitStatus {
    static let failure: Int32 = 1
    static let usage: Int32 = 64
}

func fail(_ message: String, status: Int32 = ExitStatus.failure) -> Never {
    StandardStream.error("mentormate-ca: " + message)
    exit(status)
}

func usageFail(_ error: UsageError) -> Never {
    fail(error.description, status: ExitStatus.usage)
}

/// Log lines on stderr (the journal under systemd): level, message, then key=value metadata.
struct StderrLogger: Logger {
    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        let fields = metadata.keys.sorted().map { "\($0)=\(metadata[$0] ?? "")" }
        StandardStream.error(([level.description, message] + fields).joined(separator: " "))
    }
}

func wallMillis() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
}

func parse<C: ParsableCommand>(_ type: C.Type, _ tokens: [ArgumentToken]) -> C {
    if tokens.contains(where: { if case .option(let name, _) = $0 { return name == "--help" || name == "-h" }; return false }) {
        StandardStream.output(C.helpText())
        exit(0)
    }
    do { return try C.parse(tokens) } catch { usageFail(error) }
}

func open(_ dir: String?) -> (CADirectory, CAConfig) {
    let directory = CADirectory(path: dir ?? ".")
    do { return (directory, try directory.readConfig()) } catch { fail(error.message) }
}

func account(_ text: String) -> PublicKey {
    let query: AccountID.Query
    do { query = try AccountID.parse(text) } catch {
        usageFail(UsageError("--account: \(error.description)", hint: "give the whole ID that `mentormate whoami` prints (mm1…)"))
    }
    guard case .exact(let key) = query else {
        usageFail(UsageError("--account needs the whole account ID, not the prefix '\(text)'", hint: "copy it from `mentormate whoami`"))
    }
    return key
}

/// The service over DIR's files, mailing through the configured relay.
func service(_ directory: CADirectory, _ config: CAConfig) -> CAService {
    do {
        let relay = try HostPort.parse(config.smtp)
        let mailer = SMTPClient(host: relay.host, port: relay.port, from: config.from, heloName: config.helo)
        return try CAService(keys: directory.readKeys(), secret: directory.readSecret(), config: config,
                             store: directory.stateFile, mailer: mailer, now: { wallMillis() })
    } catch let error as CASetupError {
        fail(error.message)
    } catch {
        fail("\(directory.configPath): smtp: \(error)")
    }
}

// MARK: Subcommands

func runInit(_ c: InitCommand) {
    guard let domain = c.domain else { fail("--domain is missing", status: ExitStatus.usage) }
    var config: CAConfig
    do {
        try MembershipCertificate.checkDomain(domain)
        config = CAConfig(domain: domain)
        if let smtp = c.smtp { try config.set("smtp", smtp, at: "--smtp") }
        if let from = c.from { try config.set("from", from, at: "--from") }
        if let listen = c.listen { try config.set("listen", listen, at: "--listen") }
        if let days = c.validityDays { try config.set("validity_days", String(days), at: "--validity-days") }
    } catch let error as RecordError {
        usageFail(UsageError("--domain: \(error.message)", hint: "give the mail domain in lower case, e.g. --domain campus.edu"))
    } catch let error as CASetupError {
        usageFail(UsageError(error.message))
    } catch {
        fail("\(error)")
    }
    let directory = CADirectory(path: c.dir ?? ".")
    let keys: SigningKeyPair
    do { keys = try directory.create(config: config) } catch { fail(error.message) }
    StandardStream.output("""
        made the CA in \(directory.path) for \(config.domain)
        its key, for every node's campus_ca_key: \(MembershipCertificate.printKey(keys.publicKey.key))
        next: check \(directory.configPath) (smtp, from, listen), back up \(directory.path), then `mentormate-ca serve --dir \(directory.path)`
        """)
}

func runKey(_ c: KeyCommand) {
    let directory = CADirectory(path: c.dir ?? ".")
    do { StandardStream.output(MembershipCertificate.printKey(try directory.readKeys().publicKey.key)) } catch { fail(error.message) }
}

func runServe(_ c: ServeCommand) {
    let (directory, config) = open(c.dir)
    let lock: FileDescriptor
    do { lock = try directory.lock(ifBusy: "one CA directory is served by one process; stop the other or give another --dir") } catch {
        fail(error.message)
    }
    let listen: (host: String, port: UInt16)
    do { listen = try HostPort.parse(c.listen ?? config.listen) } catch {
        usageFail(UsageError("--listen: \(error.description)", hint: "e.g. --listen [::]:4712 (port 0 picks a free one)"))
    }
    let server: CAServer
    do { server = try CAServer(service: service(directory, config), host: listen.host, port: listen.port, logger: StderrLogger()) } catch {
        fail(error.message)
    }
    StandardStream.output("listening on \(HostPort.format(host: listen.host, port: server.port))")
    signal(SIGPIPE, SIG_IGN)
    var sources: [DispatchSourceSignal] = []
    for number in [SIGTERM, SIGINT] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { server.stop() }
        source.resume()
        sources.append(source)
    }
    server.run()
    sources.forEach { $0.cancel() }
    try? lock.close()
}

func runIssue(_ c: IssueCommand) {
    let key = account(c.account ?? "")
    let (directory, config) = open(c.dir)
    do {
        let certificate = try service(directory, config).issue(account: key, domain: c.domain ?? "")
        StandardStream.output(Hex.encode(certificate.encoded))
    } catch {
        if error.code == .badRequest { usageFail(UsageError("--domain: \(error.message)")) }
        fail(error.message)
    }
}

func runRelease(_ c: ReleaseCommand) {
    let (directory, config) = open(c.dir)
    let lock: FileDescriptor
    do { lock = try directory.lock(ifBusy: "stop it first (systemctl stop mentormate-ca), run `release` again, then start it") } catch {
        fail(error.message)
    }
    defer { try? lock.close() }
    do {
        let released = try service(directory, config).release(address: c.address)
        StandardStream.output(released ? "released \(CAService.mask(c.address)): it may certify another account now"
                                       : "nothing was recorded for \(CAService.mask(c.address)); nothing to release")
    } catch {
        if error.code == .badRequest { usageFail(UsageError("ADDRESS: \(error.message)")) }
        fail(error.message)
    }
}

func runList(_ c: ListCommand) {
    let (directory, config) = open(c.dir)
    let counts = service(directory, config).counts
    StandardStream.output("domain: \(config.domain)\npending codes: \(counts.pending)\ncertified addresses: \(counts.certified)")
}

// MARK: Main

umask(0o077)
let tokens = ArgumentLexer.lex(CommandLine.arguments.dropFirst())
guard let first = tokens.first else {
    StandardStream.error(CAProgram.helpText)
    exit(ExitStatus.usage)
}
let rest = Array(tokens.dropFirst())
switch first {
case .option(name: "--version", value: nil):
    StandardStream.output("mentormate-ca \(MentorMateVersion.string)")
case .option(name: "--help", value: nil), .option(name: "-h", value: nil):
    StandardStream.output(CAProgram.helpText)
case .argument("init"): runInit(parse(InitCommand.self, rest))
case .argument("key"): runKey(parse(KeyCommand.self, rest))
case .argument("serve"): runServe(parse(ServeCommand.self, rest))
case .argument("issue"): runIssue(parse(IssueCommand.self, rest))
case .argument("release"): runRelease(parse(ReleaseCommand.self, rest))
case .argument("list"): runList(parse(ListCommand.self, rest))
case .argument(let word):
    let guess = Suggestion.closest(to: word, among: CAProgram.subcommands.map(\.name)).map { "; did you mean \($0)?" } ?? ""
    usageFail(UsageError("unknown subcommand '\(word)'\(guess)", hint: "`mentormate-ca --help` lists them: \(CAProgram.subcommands.map(\.name).joined(separator: ", "))"))
case .option(let name, _):
    usageFail(UsageError("unknown option \(name)", hint: "give a subcommand first; `mentormate-ca --help` lists them"))
}
