import Dispatch
import Foundation
import MentorAPI
import MentorCore
import MentorCrypto
import MentorNet
import MentorNode
import MentorStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// mentormated: parse flags, load settings, take the state directory, open the replica, serve
// the API socket until SIGTERM/SIGINT. Everything else lives in the library modules.
@main
struct Mentormated {
    static func main() async {
        let environment = ProcessInfo.processInfo.environment
        let systemMode = geteuid() == 0 || environment["STATE_DIRECTORY"] != nil

        let command: DaemonCommand
        do {
            command = try DaemonCommand.parse(ArgumentLexer.lex(CommandLine.arguments.dropFirst()))
        } catch {
            fail(error.message, hint: error.hint, status: 2)
        }
        if command.help {
            StandardStream.output(DaemonCommand.helpText())
            exit(0)
        }
        if command.version {
            StandardStream.output("mentormated \(MentorMateVersion.string) (record format \(MentorMateVersion.recordFormat))")
            exit(0)
        }

        let settings: DaemonConfiguration
        do {
            settings = try command.configuration(systemMode: systemMode, environment: environment) { path in
                try String(contentsOfFile: path, encoding: .utf8)
            }
        } catch {
            fail(error.message, hint: error.hint, status: 2)
        }

        let logger = DaemonLogger(minimum: settings.logLevel.netLevel, environment: environment)

        // The state directory: created 0700, then locked against a second daemon.
        do {
            try FileManager.default.createDirectory(atPath: settings.stateDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            fail("cannot create the state directory \(settings.stateDirectory): \(error.localizedDescription)",
                 hint: "choose a writable directory with --state-dir")
        }
        let stateLock: StateLock
        do { stateLock = try StateLock(stateDirectory: settings.stateDirectory) } catch {
            fail(error.message, hint: error.hint)
        }

        let nodeKeys: SigningKeyPair
        do {
            let (keys, created) = try NodeIdentity.loadOrCreate(at: settings.stateDirectory + "/" + NodeIdentity.fileName)
            nodeKeys = keys
            if created { logger.notice("created a new node key", ["node": keys.publicKey.key.shortID]) }
        } catch {
            fail("node key: \(error.message)")
        }

        if let file = settings.networkKeyFile {
            guard let data = FileManager.default.contents(atPath: file), data.count == 32 else {
                fail("the network key file \(file) must exist and hold exactly 32 bytes",
                     hint: "create one with: head -c 32 /dev/urandom > \(file) && chmod 600 \(file)")
            }
        }

        let replica: Replica
        do {
            replica = try Replica(path: settings.stateDirectory + "/replica.db")
        } catch {
            fail("cannot open the replica: \(error)", hint: error.code == StoreError.Code.schemaTooNew.rawValue
                 ? "this replica was written by a newer MentorMate; upgrade" : "run `mentormate doctor`, or restore the state directory from a backup")
        }

        var linkSettings = PeerLink.Settings()
        if let file = settings.networkKeyFile, let data = FileManager.default.contents(atPath: file) {
            do { linkSettings.networkKey = try NetworkKey(bytes: Array(data)) } catch { fail("network key: \(error)") }
        }
        guard let listenAt = PeerManager.StaticPeer(parsing: settings.listen) else {
            fail("--listen \(settings.listen) is not HOST:PORT", hint: "e.g. --listen 0.0.0.0:4711 (port 0 picks a free one)")
        }
        let tcpListener: TCPListener
        do { tcpListener = try TCPListener(host: listenAt.host, port: listenAt.port) } catch {
            fail("cannot listen on \(settings.listen): \(error)",
                 hint: "pick another port with --listen HOST:PORT (port 0 picks a free one)")
        }
        var staticPeers: [PeerManager.StaticPeer] = []
        for text in settings.peers {
            guard let peer = PeerManager.StaticPeer(parsing: text) else { fail("--peer \(text) is not HOST:PORT") }
            staticPeers.append(peer)
        }

        let started = Clock.wallMillis()
        let node = Node(config: NodeConfig(stateDirectory: settings.stateDirectory, emailDomains: settings.emailDomains,
                                           now: { Clock.wallMillis() }),
                        replica: replica, nodeKeys: nodeKeys)
        node.logger = logger
        var socketPath = settings.socketPath
        var peerSettings = PeerManager.Settings()
        peerSettings.link = linkSettings
        peerSettings.now = { Clock.wallMillis() }
        peerSettings.recordsPerSecond = settings.peerRecordsPerSecond
        peerSettings.recordsBurst = settings.peerRecordsPerSecond
        peerSettings.authorBudget = Int64(settings.authorStorageMiB) << 20
        peerSettings.photoBudget = Int64(settings.photoStorageMiB) << 20
        let peerManager = PeerManager(node: node, listener: tcpListener, staticPeers: staticPeers,
                                      settings: peerSettings, logger: logger)
        let listenAddress = (host: peerManager.listenAddress.host, port: peerManager.listenAddress.port)
        let discovery = settings.mdns
            ? DiscoveryController(peers: peerManager, port: listenAddress.port, nodeKey: nodeKeys.publicKey, logger: logger)
            : nil
        let runtimeSocket = Mutex(socketPath)
        node.runtimeInfo = { [weak peerManager] in
            RuntimeInfo(socketPath: runtimeSocket.withLock { $0 }, listen: listenAddress, discovery: discovery?.status ?? "off",
                        peers: peerManager?.peers ?? [], startedAt: started,
                        discoveryName: discovery?.registeredName, discoveryVisible: discovery?.isVisible ?? false)
        }
        do { try node.start() } catch { fail("cannot load the local accounts: \(error)") }
        peerManager.start()
        discovery?.start()

        // The API socket: inherited from systemd (socket activation) or created here.
        let listener: UnixListener
        do {
            if let fds = environment["LISTEN_FDS"].flatMap(Int32.init), fds >= 1,
               environment["LISTEN_PID"].flatMap(Int32.init) == getpid() {
                // sd_listen_fds: the first inherited descriptor is 3; nothing we start inherits them.
                for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { unsetenv(name) }
                let path = SocketActivation.boundPath(of: 3)
                listener = try UnixListener(adopting: 3, path: path)
                if let path { socketPath = path }
                logger.info("API socket inherited from systemd", ["fd": "3", "socket": path ?? "(unnamed)", "fds": "\(fds)"])
            } else {
                // In system mode other users must reach the socket (access is checked per call
                // with SO_PEERCRED); a user-mode socket stays in a private directory.
                listener = try UnixListener(path: socketPath, directoryMode: systemMode ? 0o755 : 0o700)
            }
        } catch {
            fail("API socket \(socketPath): \(error)", hint: "another mentormated may be running; `mentormate status` tells")
        }

        runtimeSocket.withLock { $0 = socketPath }
        let handler = NodeAPIHandler(node: node)
        let server = APIServer(listener: listener, handler: handler, logger: logger)
        // Under systemd (NOTIFY_SOCKET): READY=1 once the API serves, STATUS=, WATCHDOG=1.
        let serviceWatch = ServiceWatch(environment: environment, node: node, server: server, replica: replica,
                                        peers: { [weak peerManager] in peerManager?.peers.count ?? 0 }, logger: logger)
        let faults = TestFaults(environment: environment, node: node, server: server, logger: logger)

        // Signals: TERM/INT stop gracefully, HUP reloads the config file.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let signalSources = installSignalHandlers(
            stop: { sig in
                logger.notice("stopping", ["signal": sig == SIGTERM ? "TERM" : "INT"])
                serviceWatch?.stopping()
                server.shutdown()
            },
            reload: {
                guard let file = settings.configFile ?? command.config else {
                    logger.notice("SIGHUP: no config file to reload", [:])
                    return
                }
                do {
                    let fresh = try command.configuration(systemMode: systemMode, environment: environment) {
                        try String(contentsOfFile: $0, encoding: .utf8)
                    }
                    logger.setMinimum(fresh.logLevel.netLevel)
                    node.reload(emailDomains: fresh.emailDomains)
                    logger.notice("configuration reloaded", ["file": file, "log_level": fresh.logLevel.rawValue])
                } catch {
                    logger.error("configuration not reloaded; keeping the old one", ["file": file, "error": "\(error)"])
                }
            })

        logger.notice("mentormated started", [
            "version": MentorMateVersion.string, "node": nodeKeys.publicKey.key.shortID, "socket": socketPath,
            "listen": "\(peerManager.listenAddress)", "state_dir": settings.stateDirectory,
        ])

        serviceWatch?.start()
        do {
            try await server.run()
        } catch {
            fail("API server: \(error)")
        }
        discovery?.stop()    // withdraws our service: goodbye packets go out
        peerManager.stop()   // no sync touches the replica after this
        do { try replica.close() } catch { logger.error("closing the replica failed", ["error": "\(error)"]) }
        logger.notice("mentormated stopped", [:])
        withExtendedLifetime((stateLock, peerManager, discovery, signalSources, serviceWatch, faults)) {}
        exit(0)
    }

    static func fail(_ message: String, hint: String? = nil, status: Int32 = 1) -> Never {
        StandardStream.error("mentormated: \(message)")
        if let hint { StandardStream.error("hint: \(hint)") }
        exit(status)
    }

    /// Signal sources on their own queue (not the main actor): TERM/INT call `stop`, HUP `reload`.
    nonisolated static func installSignalHandlers(stop: @escaping @Sendable (Int32) -> Void,
                                                  reload: @escaping @Sendable () -> Void) -> [DispatchSourceSignal] {
        let queue = DispatchQueue(label: "mentormated.signals")
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { if sig == SIGHUP { reload() } else { stop(sig) } }
            source.resume()
            sources.append(source)
        }
        return sources
    }
}
