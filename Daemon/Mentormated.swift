import Dispatch
import Foundation
import MentorAPI
import MentorArguments
import MentorCore
import MentorCrypto
import MentorNet
import MentorNode
import MentorStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

// mentormated: parse flags, load settings, take the state directory, open the replica, serve
// the API socket until SIGTERM/SIGINT. Everything else lives in the library modules.
@main
struct Mentormated {
    static func main() async {
        // Everything the daemon creates (replica.db and its -wal/-shm, keys, the lock) is private:
        // 0600 files, 0700 directories, whatever umask it was started with. The two things
        // others must reach get their modes set explicitly (the API socket, a system socket
        // directory).
        umask(0o077)
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
            StandardStream.output("mentormated \(MentorMateVersion.string) (record formats \(MentorMateVersion.recordFormats), sync protocol v\(SyncMessage.protocolVersion))")
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

        let logger = DaemonLogger(minimum: settings.logLevel, environment: environment)
        // Every peer link is a file descriptor: take all the process may have (a hub needs
        // thousands; `doctor` says when the hard limit is too low).
        let openFiles = FileLimit.raiseSoftToHard()
        // The daemon's one wall clock (Unix ms), shifted only by the test-only flag.
        let clockOffset: Int64
        do { clockOffset = try command.clockOffsetMillis() } catch { fail(error.message, hint: error.hint, status: 2) }
        let wallMillis: @Sendable () -> UInt64 = {
            UInt64(clamping: max(0, Int64(clamping: WallClock.millis()) &+ clockOffset))
        }
        if clockOffset != 0 {
            logger.warning("test clock offset in force: this node's wall clock runs shifted (never use this in production)",
                           ["offset_seconds": "\(clockOffset / 1000)"])
        }

        // Refusals that need nothing created come first, so a refused start changes nothing: a
        // network key others may read, a socket directory others control.
        var networkKeyBytes: [UInt8]?
        if let file = settings.networkKeyFile {
            do { networkKeyBytes = try PrivateFiles.readNetworkKey(file) } catch { fail(error.message, hint: error.hint) }
        }
        let socketActivated = environment["LISTEN_FDS"].flatMap(Int32.init).map { $0 >= 1 } == true
            && environment["LISTEN_PID"].flatMap(Int32.init) == getpid()
        if !socketActivated {
            do { try UnixListener.checkExistingDirectory(forSocket: settings.socketPath) } catch {
                fail("API socket \(settings.socketPath): \(error)")
            }
        }

        // The state directory: created 0700 (an existing one must be ours and private), then
        // locked against a second daemon.
        do { try PrivateFiles.prepareStateDirectory(settings.stateDirectory) } catch {
            fail(error.message, hint: error.hint)
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

        var linkSettings = PeerLink.Settings()
        if networkKeyBytes != nil {
            do { linkSettings.networkKey = try NetworkKey(bytes: networkKeyBytes ?? []) } catch { fail("network key: \(error)") }
            networkKeyBytes?.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
            networkKeyBytes = nil
        }
        // The network's two parameters, side by side: its key and the work a new account proves.
        let accountWork = AccountWork.Requirement(bits: settings.networkWorkBits, network: linkSettings.networkKey)

        let replica: Replica
        do {
            var replicaSettings = Replica.Settings()
            replicaSettings.now = wallMillis
            replicaSettings.accountWork = accountWork
            replica = try Replica(path: settings.stateDirectory + "/replica.db", settings: replicaSettings)
        } catch {
            if error.code == StoreError.Code.schemaTooNew.rawValue {
                fail("the replica in \(settings.stateDirectory) was written by a newer MentorMate than this one (\(MentorMateVersion.string)): \(error.message)",
                     hint: "run the newer mentormated on it again, or start this one with its own empty --state-dir; the replica was not changed")
            }
            fail("cannot open the replica: \(error)", hint: "run `mentormate doctor`, or restore the state directory from a backup")
        }

        let listenAt: PeerManager.StaticPeer
        do { listenAt = try PeerManager.StaticPeer(host: HostPort.parse(settings.listen)) } catch {
            fail("--listen: \(error)", hint: "e.g. --listen [::]:4711 (every address, IPv4 and IPv6; port 0 picks a free one)")
        }
        let tcpListener: TCPListener
        // A hub's clients all redial at once after it restarts: a longer accept queue (the kernel
        // caps it at net.core.somaxconn) spares them SYN retries.
        do { tcpListener = try TCPListener(host: listenAt.host, port: listenAt.port, backlog: settings.hub ? 1024 : 128) } catch {
            fail("cannot listen on \(settings.listen): \(error)",
                 hint: "pick another port with --listen HOST:PORT (port 0 picks a free one)")
        }
        var staticPeers: [PeerManager.StaticPeer] = []
        for text in settings.peers {
            do { staticPeers.append(try PeerManager.StaticPeer(host: HostPort.parse(text))) } catch {
                fail("--peer: \(error)", hint: "e.g. --peer 10.0.0.2:4711, --peer [fd00::2]:4711, --peer [fe80::2%eth0]:4711")
            }
        }

        let started = wallMillis()
        var nodeConfig = NodeConfig(stateDirectory: settings.stateDirectory, emailDomains: settings.emailDomains,
                                    now: wallMillis)
        nodeConfig.passphraseChecksAtOnce = settings.passphraseChecksAtOnce
        nodeConfig.minAge = settings.minAge
        nodeConfig.areas = settings.areas
        nodeConfig.hub = settings.hub
        nodeConfig.campus = Campus.Settings(caKey: settings.campusCAKey, requireMembership: settings.requireMembership,
                                            caAddress: settings.campusCA)
        var socketPath = settings.socketPath
        let connections = ConnectionRegistry()
        let facts = DaemonFacts(socketPath: socketPath, started: started, networkKeyFile: settings.networkKeyFile,
                                systemMode: systemMode)
        let node = Node(config: nodeConfig, replica: replica, nodeKeys: nodeKeys,
                        notifications: connections, runtime: facts, logger: logger)
        var peerSettings = PeerManager.Settings()
        peerSettings.link = linkSettings
        peerSettings.now = wallMillis
        peerSettings.recordsPerSecond = settings.peerRecordsPerSecond
        peerSettings.recordsBurst = settings.peerRecordsPerSecond
        peerSettings.authorBudget = Int64(settings.authorStorageMiB) << 20
        peerSettings.photoBudget = Int64(settings.photoStorageMiB) << 20
        peerSettings.foreignAccountsMax = settings.foreignAccountsMax
        peerSettings.foreignBytesMax = Int64(settings.foreignStorageMiB) << 20
        // For measurements only (`mentormate-bench reconcile` (f) --eager): push every body on
        // every link, as before lazy push (OPERATIONS.md).
        peerSettings.lazyPush = environment["MENTORMATE_EAGER_PUSH"] != "1"
        peerSettings.hub = settings.hub
        peerSettings.listener.maxLinks = settings.effectiveMaxPeerLinks
        peerSettings.listener.maxLinksPerAddress = settings.effectiveMaxPeerLinksPerAddress
        if let openFiles, !FileLimit.suffices(soft: openFiles, links: settings.effectiveMaxPeerLinks) {
            logger.warning("the open files limit is too low for the peer links allowed; `mentormate doctor` says how to raise it",
                           ["limit": "\(openFiles)", "max_peer_links": "\(settings.effectiveMaxPeerLinks)"])
        }
        let peerManager = PeerManager(node: node, listener: tcpListener, staticPeers: staticPeers,
                                      settings: peerSettings, logger: logger)
        let listenAddress = (host: peerManager.listenAddress.host, port: peerManager.listenAddress.port)
        var discoverySettings = DiscoveryController.Settings()
        discoverySettings.hub = settings.hub
        discoverySettings.browseDomains = settings.browseDomains
        let discovery = settings.mdns
            ? DiscoveryController(peers: peerManager, port: listenAddress.port, nodeKey: nodeKeys.publicKey,
                                  settings: discoverySettings, logger: logger)
            : nil
        facts.attach(peerManager: peerManager, discovery: discovery)
        do { try node.start() } catch { fail("cannot load the local accounts: \(error)") }
        peerManager.start()
        discovery?.start()
        // Roaming: address changes close the links that depended on a vanished address and
        // make discovery browse afresh.
        let networkWatch = NetworkWatch(peers: peerManager, discovery: discovery, now: wallMillis, logger: logger)
        networkWatch.start()
        facts.attach(network: networkWatch)

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
            fail("API socket \(socketPath): \(error)",
                 hint: error.code == .socketInUse ? "another mentormated may be running; `mentormate status` tells" : nil)
        }

        facts.serving(at: socketPath)
        let handler = NodeAPIHandler(node: node, connections: connections)
        var apiSettings = APIServer.Settings()
        apiSettings.maxConnectionsPerUser = settings.apiConnectionsPerUser
        apiSettings.maxSubscriptionsPerUser = settings.apiSubscriptionsPerUser
        apiSettings.idleTimeout = settings.apiIdleTimeout > 0 ? .seconds(settings.apiIdleTimeout) : nil
        // Root and the daemon's own user can always connect (up to their per-user limit), so a
        // node full of other users' connections can still be inspected and stopped.
        apiSettings.reservedUsers = [0, getuid()]
        let server = APIServer(listener: listener, handler: handler, logger: logger, settings: apiSettings)
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
                    logger.setMinimum(fresh.logLevel)
                    node.reload(emailDomains: fresh.emailDomains)
                    logger.notice("configuration reloaded", ["file": file, "log_level": fresh.logLevel.description])
                } catch {
                    logger.error("configuration not reloaded; keeping the old one", ["file": file, "error": "\(error)"])
                }
            })

        logger.notice("mentormated started", [
            "version": MentorMateVersion.string, "node": nodeKeys.publicKey.key.shortID, "socket": socketPath,
            "listen": "\(peerManager.listenAddress)", "state_dir": settings.stateDirectory,
            "network_work_bits": "\(accountWork.bits)", "hub": "\(settings.hub)",
        ])

        serviceWatch?.start()
        do {
            try await server.run()
        } catch {
            fail("API server: \(error)")
        }
        networkWatch.stop()
        discovery?.stop()    // withdraws our service: goodbye packets go out
        peerManager.stop()   // no sync touches the replica after this
        do { try replica.close() } catch { logger.error("closing the replica failed", ["error": "\(error)"]) }
        logger.notice("mentormated stopped", [:])
        withExtendedLifetime((stateLock, peerManager, discovery, networkWatch, signalSources, serviceWatch, faults)) {}
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
