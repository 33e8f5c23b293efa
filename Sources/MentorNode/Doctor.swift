import Foundation
import MentorAPI
#if canImport(Glibc)
import Glibc
#endif

/// `doctor`: each check says what it found and, when it fails, the fix.
extension Node {
    struct Check {
        var name: String
        var ok: Bool
        var detail: String
        var fix: String?

        var json: JSON {
            var o: [String: JSON] = ["name": .string(name), "ok": .bool(ok), "detail": .string(detail)]
            if let fix { o["fix"] = .string(fix) }
            return .object(o)
        }
    }

    func doctor() throws -> JSON {
        let info = runtimeInfo()
        var checks: [Check] = []
        checks.append(modeCheck("state directory", config.stateDirectory, maxMode: 0o755, directory: true))
        for account in try replica.nodeAccounts() {
            checks.append(modeCheck("key of uid \(account.uid)", config.keyPath(uid: account.uid), maxMode: 0o600, directory: false))
        }
        let integrity = try replica.integrityCheck()
        checks.append(Check(name: "replica integrity", ok: integrity == ["ok"], detail: integrity.prefix(3).joined(separator: "; "),
                            fix: integrity == ["ok"] ? nil : "stop the daemon and restore the state directory from a backup (docs/OPERATIONS.md)"))
        checks.append(diskCheck())
        checks.append(socketCheck("API socket", info.socketPath, fix: "restart mentormated; if the file is left over from a crash the next start replaces it"))
        checks.append(socketCheck("D-Bus system bus", "/run/dbus/system_bus_socket", fix: "start D-Bus: systemctl start dbus"))
        checks.append(socketCheck("avahi-daemon", "/run/avahi-daemon/socket", fix: "install and start Avahi: apt-get install avahi-daemon && systemctl start avahi-daemon"))
        let discoveryOK = info.discovery == "on"
        checks.append(Check(name: "mDNS discovery", ok: discoveryOK, detail: "discovery is \(info.discovery)",
                            fix: discoveryOK ? nil : (info.discovery == "off" ? "discovery is turned off (--no-mdns); peers come only from --peer" : "make sure avahi-daemon runs and multicast (UDP 5353) is allowed by the firewall")))
        return ["checks": .array(checks.map(\.json)), "ok": .bool(checks.allSatisfy(\.ok))]
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
