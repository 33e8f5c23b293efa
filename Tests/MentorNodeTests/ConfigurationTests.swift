import Testing
import MentorAPI
import MentorCore
@testable import MentorNode

@Suite struct ConfigurationTests {
    @Test func defaultsFollowXDGInUserModeAndVarLibInSystemMode() {
        let user = DaemonConfiguration.defaults(systemMode: false, environment: ["XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "/r", "HOME": "/h"])
        #expect(user.stateDirectory == "/s/mentormate" && user.socketPath == "/r/mentormate/api.sock")
        let fallback = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h", "XDG_RUNTIME_DIR": "/r"])
        #expect(fallback.stateDirectory == "/h/.local/state/mentormate")
        let system = DaemonConfiguration.defaults(systemMode: true, environment: [:])
        #expect(system.stateDirectory == "/var/lib/mentormate" && system.socketPath == "/run/mentormate/api.sock")
        #expect(DaemonConfiguration.defaults(systemMode: false, environment: ["MENTORMATE_SOCKET": "/x.sock"]).socketPath == "/x.sock")
    }

    /// Without XDG_RUNTIME_DIR (plain su, sudo -u, cron) the user socket is never in a shared
    /// place like /tmp: it goes to the user's own /run/user/UID if that exists, else into the
    /// state directory (issue 11 item 1).
    @Test func withoutARuntimeDirectoryTheUserSocketGoesIntoTheStateDirectoryNotTmp() {
        let nobodyRun: UInt32 = 4_242_424  // no /run/user/4242424 exists
        let candidates = SocketPath.userCandidates(environment: ["HOME": "/h"], uid: nobodyRun)
        #expect(candidates == ["/h/.local/state/mentormate/api.sock"])
        #expect(SocketPath.userCandidates(environment: ["XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "/r"], uid: nobodyRun)
                    == ["/r/mentormate/api.sock", "/s/mentormate/api.sock"])
        let fallback = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        #expect(!fallback.socketPath.hasPrefix("/tmp"))
        #expect(fallback.socketPath == "/h/.local/state/mentormate/api.sock" || fallback.socketPath.hasPrefix("/run/user/"))
        // Who may serve which socket: yourself for your own places, root or the service user for
        // the system socket, any of those for a path given explicitly.
        #expect(SocketPath.trustedServers(for: "/h/.local/state/mentormate/api.sock", environment: ["HOME": "/h"], uid: nobodyRun)
                    == SocketPath.TrustedServers(uids: [nobodyRun], kind: .user))
        let system = SocketPath.trustedServers(for: SocketPath.systemPath, environment: ["HOME": "/h"], uid: nobodyRun)
        #expect(system.kind == .system && system.uids.contains(0) && !system.uids.contains(nobodyRun))
        let given = SocketPath.trustedServers(for: "/srv/mm/api.sock", environment: ["HOME": "/h"], uid: nobodyRun)
        #expect(given.kind == .given && given.uids.contains(0) && given.uids.contains(nobodyRun))
    }

    @Test func fileSettingsParseWithCommentsQuotesAndRepeats() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        try c.apply(file: """
            # campus node
            state_dir = "/srv/mm"   # quoted
            listen = 0.0.0.0:4711
            peer = 10.0.0.2:4711
            peers = [::1]:4712, host.local:4713
            mdns = off
            log_level = debug
            email_domains = uni.edu, CS.Uni.edu
            """, path: "/etc/mentormate.conf")
        #expect(c.stateDirectory == "/srv/mm" && c.listen == "0.0.0.0:4711")
        #expect(c.peers == ["10.0.0.2:4711", "[::1]:4712", "host.local:4713"])
        #expect(!c.mdns && c.logLevel == .debug && c.emailDomains == ["uni.edu", "cs.uni.edu"])
    }

    @Test func apiLimitsHaveDefaultsAndComeFromTheFile() throws {
        var c = DaemonConfiguration.defaults(systemMode: true, environment: [:])
        #expect(c.apiConnectionsPerUser == 32 && c.apiSubscriptionsPerUser == 8 && c.apiIdleTimeout == 300 && c.passphraseChecksAtOnce == 1)
        try c.apply(file: "api_connections_per_user = 4\napi_subscriptions_per_user = 2\napi_idle_timeout = 0\npassphrase_checks_at_once = 2\n",
                    path: "/c.conf")
        #expect(c.apiConnectionsPerUser == 4 && c.apiSubscriptionsPerUser == 2 && c.apiIdleTimeout == 0 && c.passphraseChecksAtOnce == 2)
    }

    @Test func badLinesNameTheFileLineAndFix() {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        for (text, needle) in [("colour = blue", "unknown setting \"colour\""), ("listen = 4711", "HOST:PORT"),
                               ("mdns = maybe", "true or false"), ("just words", "key = value"),
                               ("log_level = loud", "log_level must be"), ("email_domains = @uni", "not a domain"),
                               ("api_connections_per_user = 0", "api_connections_per_user must be a whole number from 1 to 4096"),
                               ("api_idle_timeout = soon", "api_idle_timeout must be a whole number from 0 to 86400 (seconds"),
                               ("passphrase_checks_at_once = 8", "passphrase_checks_at_once must be a whole number from 1 to 4")] {
            #expect { try c.apply(file: "\n" + text, path: "/c.conf") } throws: { e in
                let s = "\(e)"
                return s.hasPrefix("/c.conf:2:") && s.contains(needle)
            }
        }
    }

    /// The network's difficulty (PROTOCOL.md §6.1): default 23, 0 … 32 from the file, anything
    /// else refused naming the key, the range and that every node must agree.
    @Test func theNetworksDifficultyHasADefaultAndARange() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        #expect(c.networkWorkBits == 23)
        try c.apply(file: "network_work_bits = 0\n", path: "/etc/m.conf")
        #expect(c.networkWorkBits == 0)
        try c.apply(file: "network_work_bits = 32\n", path: "/etc/m.conf")
        #expect(c.networkWorkBits == 32)
        for bad in ["33", "-1", "lots", ""] {
            #expect { try c.apply(file: "network_work_bits = \(bad)\n", path: "/etc/m.conf") } throws: { error in
                let text = "\(error)"
                return text.contains("/etc/m.conf:1") && text.contains("network_work_bits must be a whole number from 0 to 32")
                    && text.contains("every node of a network must use the same value")
            }
        }
        #expect(c.networkWorkBits == 32, "a refused value changes nothing")
    }

    @Test func theNodeWideBudgetKeysParseAndRefuseNonsenseChangingNothing() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        #expect(c.foreignAccountsMax == 1_000_000 && c.foreignStorageMiB == 2048, "the documented defaults")
        try c.apply(file: "foreign_accounts_max = 50000\nforeign_storage_mb = 256\n", path: "/etc/m.conf")
        #expect(c.foreignAccountsMax == 50_000 && c.foreignStorageMiB == 256)
        for (key, bad) in [("foreign_accounts_max", "0"), ("foreign_accounts_max", "many"), ("foreign_storage_mb", "-5"),
                           ("foreign_storage_mb", "2.5")] {
            do {
                try c.apply(file: "\(key) = \(bad)\n", path: "/etc/m.conf")
                Issue.record("\(key) = \(bad) should be refused")
            } catch {
                #expect(error.message.contains("\(key) must be a whole number"), "\(error.message)")
            }
        }
        #expect(c.foreignAccountsMax == 50_000 && c.foreignStorageMiB == 256, "a refused value changes nothing")
    }

    @Test func storageBudgetsParseInMiBAndRefuseNonsense() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        #expect(c.authorStorageMiB == 64 && c.photoStorageMiB == 2048)
        try c.apply(file: "author_storage_mb = 8\nphoto_storage_mb = 512\n", path: "/etc/m.conf")
        #expect(c.authorStorageMiB == 8 && c.photoStorageMiB == 512)
        for bad in ["0", "-1", "lots", "1.5"] {
            #expect(throws: DaemonConfiguration.FileError.self) { try c.apply(file: "photo_storage_mb = \(bad)\n", path: "/etc/m.conf") }
        }
        do {
            try c.apply(file: "author_storage_mb = 0\n", path: "/etc/m.conf")
            Issue.record("0 MiB should be refused")
        } catch {
            #expect(error.message.contains("author_storage_mb must be a whole number of MiB"))
        }
    }
}

extension ConfigurationTests {
    /// The campus keys (OPERATIONS.md "A campus CA"): a CA key in its printed form only, the
    /// members-only switch, and the CA's address; each bad value named with the fix.
    @Test func campusKeysParseAndBadValuesAreNamed() throws {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        let key = "mmca1" + String(repeating: "q", count: 52)
        let printed = MentorCore.MembershipCertificate.printKey(MentorCore.PublicKey(bytes: [UInt8](repeating: 7, count: 32))!)
        try c.apply(file: "campus_ca_key = \(printed)\nrequire_membership = yes\ncampus_ca = [::1]:7400\n", path: "t.conf")
        #expect(c.campusCAKey?.bytes == [UInt8](repeating: 7, count: 32) && c.requireMembership && c.campusCA == "[::1]:7400")
        #expect(throws: DaemonConfiguration.FileError.self) { try c.apply(file: "campus_ca_key = \(key)\n", path: "t.conf") }
        do { try c.set("campus_ca_key", "mm1" + String(repeating: "q", count: 58)) } catch {
            #expect(error.message.contains("mentormate-ca key"))
        }
        #expect(throws: DaemonConfiguration.ValueError.self) { try c.set("require_membership", "maybe") }
        #expect(throws: DaemonConfiguration.ValueError.self) { try c.set("campus_ca", "ca.campus.edu") }
        #expect(DaemonConfiguration.keys.contains("campus_ca_key") && DaemonConfiguration.keys.contains("require_membership"))
    }
}
