import Testing
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

    @Test func badLinesNameTheFileLineAndFix() {
        var c = DaemonConfiguration.defaults(systemMode: false, environment: ["HOME": "/h"])
        for (text, needle) in [("colour = blue", "unknown setting \"colour\""), ("listen = 4711", "HOST:PORT"),
                               ("mdns = maybe", "true or false"), ("just words", "key = value"),
                               ("log_level = loud", "log_level must be"), ("email_domains = @uni", "not a domain")] {
            #expect { try c.apply(file: "\n" + text, path: "/c.conf") } throws: { e in
                let s = "\(e)"
                return s.hasPrefix("/c.conf:2:") && s.contains(needle)
            }
        }
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
