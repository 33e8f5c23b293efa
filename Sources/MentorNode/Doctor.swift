import Foundation
import MentorAPI
import MentorSystem
#if canImport(Glibc)
import Glibc
#endif

/// `doctor`: each check says what it found and, when it fails, the fix.
extension Node {
    typealias Check = DoctorCheck

    /// The state files whose modes `doctor` checks (those that exist; the WAL files come and go).
    static let stateFiles = ["replica.db", "replica.db-wal", "replica.db-shm", "node.key", "lock"]

    /// Open files: every peer link is a descriptor; the soft limit must hold `max_peer_links`
    /// and the headroom (the daemon raised its soft limit to the hard one at start).
    func fileLimitCheck(_ info: RuntimeInfo) -> Check {
        guard let limit = FileLimit.current() else {
            return Check(name: "open files limit", ok: false, detail: "getrlimit(RLIMIT_NOFILE) failed", fix: nil)
        }
        let needed = info.maxPeerLinks + FileLimit.headroom
        let ok = FileLimit.suffices(soft: limit.soft, links: info.maxPeerLinks)
        return Check(name: "open files limit", ok: ok,
                     detail: "\(limit.soft) (hard \(limit.hard)); \(info.maxPeerLinks) peer links need \(needed)",
                     fix: ok ? nil : "raise it: LimitNOFILE=\(needed) in the unit (systemctl edit mentormated), or `ulimit -n \(needed)` before starting; or lower max_peer_links")
    }

    /// The checks, for `caller`: an ordinary user sees their own account only (never which other
    /// uids have one); root sees every account's key.
    func doctor(_ caller: Requester) throws -> DoctorResult {
        let info = runtime.runtimeInfo()
        var checks: [Check] = []
        checks.append(modeCheck("state directory", config.stateDirectory, maxMode: 0o700, directory: true))
        for name in Self.stateFiles {
            let path = config.stateDirectory + "/" + name
            var st = stat()
            if name != "replica.db" && name != "node.key", lstat(path, &st) != 0 { continue }
            checks.append(modeCheck(name, path, maxMode: 0o600, directory: false))
        }
        checks.append(modeCheck("accounts directory", config.accountsDirectory, maxMode: 0o700, directory: true))
        for account in try replica.nodeAccounts() where caller.uid == 0 || account.uid == caller.uid {
            let name = account.uid == caller.uid ? "your key" : "key of uid \(account.uid)"
            checks.append(modeCheck(name, config.keyPath(uid: account.uid), maxMode: 0o600, directory: false))
            let accountPath = config.accountKeyPath(uid: account.uid)
            if FileManager.default.fileExists(atPath: accountPath) {
                checks.append(modeCheck(account.uid == caller.uid ? "your account key" : "account key of uid \(account.uid)",
                                        accountPath, maxMode: 0o600, directory: false))
            }
            // A revoked or expired device says so plainly (PROTOCOL.md §6.2).
            if let state = try deviceFacts(account.uid, account: account.account).state, state == "revoked" || state == "expired" {
                checks.append(Check(name: account.uid == caller.uid ? "this machine's device" : "device of uid \(account.uid)", ok: false,
                                    detail: "\(state): every node refuses what it signs",
                                    fix: "`mentormate logout --forget`, then `mentormate device link` to use this machine again"))
            }
        }
        checks.append(networkKeyCheck(info))
        let integrity = try replica.integrityCheck()
        checks.append(Check(name: "replica integrity", ok: integrity == ["ok"], detail: integrity.prefix(3).joined(separator: "; "),
                            fix: integrity == ["ok"] ? nil : "stop the daemon and restore the state directory from a backup (docs/OPERATIONS.md)"))
        checks.append(diskCheck())
        if info.maxPeerLinks > 0 { checks.append(fileLimitCheck(info)) }
        if let storage = info.storage {
            // Degraded is no failure (sync goes on): a warning with what to change.
            checks.append(Check(name: "storage budget", ok: true,
                                detail: storage.degraded ? Self.storageProblem(storage)
                                    : "\(storage.accounts) of \(storage.maxAccounts) foreign accounts, \(storage.bytes >> 20) of \(storage.maxBytes >> 20) MiB",
                                fix: storage.degraded ? "raise foreign_accounts_max or foreign_storage_mb in the config file if the disk allows (docs/OPERATIONS.md), or leave it: the node keeps syncing what matters to its users" : nil,
                                warning: storage.degraded))
        }
        checks.append(socketCheck("API socket", info.socketPath, fix: "restart mentormated; if the file is left over from a crash the next start replaces it"))
        if info.discovery == .off {
            // --no-mdns: nothing in this daemon talks to D-Bus or Avahi.
            for name in ["D-Bus system bus", "avahi-daemon"] {
                checks.append(Check(name: name, ok: true, detail: "not needed: mDNS discovery is off (--no-mdns); peers come from --peer", fix: nil))
            }
        } else {
            checks.append(socketCheck("D-Bus system bus", "/run/dbus/system_bus_socket", fix: "start D-Bus: systemctl start dbus"))
            checks.append(socketCheck("avahi-daemon", "/run/avahi-daemon/socket", fix: "install and start Avahi: apt-get install avahi-daemon && systemctl start avahi-daemon"))
        }
        let discoveryOK = info.discovery == .on
        let discoveryFix: String? = switch info.discovery {
        case .on, .off: nil
        case .starting: "nothing is wrong yet: registering with Avahi takes about a second after the daemon starts; run `mentormate doctor` again in a moment"
        case .unavailable: "start avahi-daemon (systemctl start avahi-daemon; it needs D-Bus) — the daemon retries by itself, backing off up to a minute"
        }
        checks.append(Check(name: "mDNS discovery", ok: discoveryOK || info.discovery == .off,
                            detail: info.discovery == .off ? "not needed: discovery is off (--no-mdns)"
                                : "discovery is \(info.discovery)" + (info.discoveryName.map { ", registered as \"\($0)\"" } ?? ""),
                            fix: discoveryFix))
        if discoveryOK {
            checks.append(Check(name: "service visible", ok: info.discoveryVisible,
                                detail: info.discoveryVisible ? "browsing _mentormate._tcp shows our own service" : "our service is registered but browsing does not show it (yet)",
                                fix: info.discoveryVisible ? nil : "allow multicast DNS (UDP 5353 to 224.0.0.251) on the interface, and check avahi-daemon's allow-interfaces; it can take a second after start"))
        }
        checks.append(listenCheck(info))
        return DoctorResult(checks: checks, ok: checks.allSatisfy(\.ok))
    }

    /// Warns when a system service uses the built-in network key (every MentorMate node on the
    /// LAN is then a peer); fails when the key file's mode lets others read it.
    private func networkKeyCheck(_ info: RuntimeInfo) -> Check {
        guard let file = info.networkKeyFile else {
            let makeKey = "(umask 077; head -c 32 /dev/urandom > /etc/mentormate/network.key) && chown mentormate: /etc/mentormate/network.key"
                + " && echo 'network_key_file = /etc/mentormate/network.key' >> /etc/mentormate/mentormated.conf && systemctl restart mentormated"
                + " — then copy the same file to every node of your network (docs/OPERATIONS.md, \"The network key\")"
            return Check(name: "network key", ok: true,
                         detail: "the built-in key: any MentorMate node on the network can link with this one"
                            + (info.systemMode ? "" : " (fine for trying it out)"),
                         fix: info.systemMode ? makeKey : nil, warning: info.systemMode)
        }
        var check = modeCheck("network key", file, maxMode: 0o600, directory: false)
        if check.ok { check.detail = "a private key from " + check.detail }
        return check
    }

    private func modeCheck(_ name: String, _ path: String, maxMode: mode_t, directory: Bool) -> Check {
        var st = stat()
        guard stat(path, &st) == 0 else {
            return Check(name: name, ok: false, detail: "\(path) is missing (\(String(cString: strerror(errno))))",
                         fix: directory ? "create it, or let mentormated create it on start" : "restore it from a backup; without it the account cannot write")
        }
        let mode = st.st_mode & 0o777
        let extra = mode & ~maxMode
        let owner = st.st_uid == geteuid()
        let ok = extra == 0 && owner
        return Check(name: name, ok: ok, detail: "\(path) mode \(String(mode, radix: 8)), owner uid \(st.st_uid)",
                     fix: ok ? nil : (owner ? "chmod \(String(maxMode, radix: 8)) \(path)" : "chown \(geteuid()) \(path)"))
    }

    /// Connects to our own peer port (and closes at once): the listener accepts.
    private func listenCheck(_ info: RuntimeInfo) -> Check {
        guard let listen = info.listen else {
            return Check(name: "peer port", ok: false, detail: "not listening", fix: "restart mentormated; see its log for why it could not listen")
        }
        let host = listen.host == "0.0.0.0" || listen.host == "::" ? "127.0.0.1" : listen.host
        let fd = socket(host.contains(":") ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return Check(name: "peer port", ok: false, detail: "socket: \(String(cString: strerror(errno)))", fix: nil) }
        defer { close(fd) }
        var ok = false
        if host.contains(":") {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = listen.port.bigEndian
            ok = inet_pton(AF_INET6, host, &a.sin6_addr) == 1 && withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            } == 0
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = listen.port.bigEndian
            ok = inet_pton(AF_INET, host, &a.sin_addr) == 1 && withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
        }
        let why = ok ? "" : String(cString: strerror(errno))
        return Check(name: "peer port", ok: ok, detail: ok ? "\(host):\(listen.port) accepts connections" : "\(host):\(listen.port): \(why)",
                     fix: ok ? nil : "check --listen; other hosts also need the firewall to allow TCP \(listen.port) in")
    }

    private func diskCheck() -> Check {
        var s = statvfs()
        guard statvfs(config.stateDirectory, &s) == 0 else {
            return Check(name: "free disk", ok: false, detail: "cannot read: \(String(cString: strerror(errno)))", fix: nil)
        }
        let free = UInt64(s.f_bavail) * UInt64(s.f_frsize)
        let ok = free >= 100 * 1024 * 1024
        return Check(name: "free disk", ok: ok, detail: "\(free / (1024 * 1024)) MiB free for \(config.stateDirectory)",
                     fix: ok ? nil : "free some space: below 100 MiB the replica may refuse writes")
    }

    private func socketCheck(_ name: String, _ path: String, fix: String) -> Check {
        guard !path.isEmpty else { return Check(name: name, ok: false, detail: "no path", fix: fix) }
        var st = stat()
        guard stat(path, &st) == 0 else {
            return Check(name: name, ok: false, detail: "\(path) does not exist", fix: fix)
        }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else {
            return Check(name: name, ok: false, detail: "\(path) is not a socket", fix: fix)
        }
        return Check(name: name, ok: true, detail: "\(path) is there", fix: nil)
    }
}
