// swift-tools-version:6.0
// MentorMate: a peer-to-peer sync daemon. No outside Swift packages: C libraries come from
// Debian packages through systemLibrary targets (see README for the apt line).
import PackageDescription

let package = Package(
    name: "MentorMate",
    products: [
        .executable(name: "mentormated", targets: ["mentormated"]),
        .executable(name: "mentormate", targets: ["mentormate"]),
        .executable(name: "mentormate-bench", targets: ["mentormate-bench"]),
        .executable(name: "mentormate-ca", targets: ["mentormate-ca"]),
        // The fuzz entry points, for the libFuzzer harnesses in Fuzz/ (a package of its own).
        .library(name: "MentorFuzzTargets", targets: ["MentorFuzzTargets"]),
    ],
    targets: [
        // C libraries (module.modulemap + shim.h only).
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CDNSSD", path: "Sources/CDNSSD", pkgConfig: "avahi-compat-libdns_sd",
                       providers: [.apt(["libavahi-compat-libdnssd-dev"])]),

        // Linux calls Swift's Glibc module does not show (SO_PEERCRED's struct ucred, flock, ...).
        .target(name: "CPosix", path: "Sources/CPosix"),

        // System calls: the one `Syscall` namespace (EINTR retried, EAGAIN as a value), the one
        // `FileDescriptor`, `SystemError`, socket addresses, `StandardStream`, `Logger`. Glibc and
        // CPosix only; everything that calls the C library for I/O goes through it.
        .target(name: "MentorSystem", dependencies: ["CPosix"], path: "Sources/MentorSystem"),

        // Pure core: records, clocks, merge rules. Foundation only, no I/O.
        .target(name: "MentorCore", path: "Sources/MentorCore"),
        // Keys, signing, sealing, key files over libsodium.
        .target(name: "MentorCrypto", dependencies: ["CSodium", "MentorCore", "MentorSystem"], path: "Sources/MentorCrypto"),
        // SQLite wrapper, migrations, the replica.
        .target(name: "MentorStore", dependencies: ["CSQLite", "MentorCore", "MentorCrypto"],
                path: "Sources/MentorStore"),
        // The API's wire: JSON-RPC types, the JSON codec, line framing, the socket path, and
        // `RPCClient`. Shared by the daemon and the client; no command-line code.
        .target(name: "MentorAPI", dependencies: ["MentorSystem"], path: "Sources/MentorAPI"),
        // A small command-line parser in the shape of swift-argument-parser: the lexer, options,
        // help and usage errors. Both programs parse their flags with it.
        .target(name: "MentorArguments", path: "Sources/MentorArguments"),
        // The `mentormate` client: its commands, what each sends, and how answers are shown.
        // Only the client links it (`mentormated` does not).
        // MentorCrypto: an account export file is encrypted by the client itself, so the account key
        // leaves the daemon only to its owner's process and never touches a disk unencrypted.
        .target(name: "MentorCLI", dependencies: ["MentorAPI", "MentorArguments", "MentorCrypto", "MentorCA"], path: "Sources/MentorCLI"),
        // Sockets, the event loop and the API server.
        .target(name: "MentorNet", dependencies: ["CDNSSD", "MentorSystem", "MentorAPI", "MentorCrypto"], path: "Sources/MentorNet"),
        // The node: accounts, profiles, feed, likes, chat — the API's methods over the replica.
        .target(name: "MentorNode",
                dependencies: ["MentorCore", "MentorCrypto", "MentorStore", "MentorSystem", "MentorAPI", "MentorNet"],
                path: "Sources/MentorNode"),

        // The campus certifying authority (`mentormate-ca`): its wire, the client nodes' CLI uses
        // (`CAClient`), minimal SMTP submission, the service and its TCP server. No SQLite: its
        // state is one JSON file, so the client that links `CAClient` stays free of it.
        .target(name: "MentorCA", dependencies: ["MentorCore", "MentorCrypto", "MentorSystem", "MentorAPI"],
                path: "Sources/MentorCA"),

        .executableTarget(name: "mentormated",
                          dependencies: ["MentorCore", "MentorCrypto", "MentorStore", "MentorSystem", "MentorAPI",
                                         "MentorArguments", "MentorNet", "MentorNode"],
                          path: "Daemon"),
        .executableTarget(name: "mentormate", dependencies: ["MentorSystem", "MentorAPI", "MentorCLI"], path: "Client"),
        .executableTarget(name: "mentormate-ca",
                          dependencies: ["MentorCore", "MentorCrypto", "MentorSystem", "MentorAPI", "MentorArguments", "MentorCA"],
                          path: "CA"),

        // Benchmarks and test helper programs.
        .executableTarget(name: "mentormate-bench",
                          dependencies: ["MentorCore", "MentorCrypto", "MentorStore", "MentorAPI", "MentorArguments"],
                          path: "Tests/Tools/mentormate-bench"),
        .executableTarget(name: "mentormate-hostile-peer",
                          dependencies: ["MentorCore", "MentorCrypto"],
                          path: "Tests/Tools/mentormate-hostile-peer"),
        .executableTarget(name: "mentormate-api-hog", dependencies: ["MentorSystem", "MentorAPI"],
                          path: "Tests/Tools/mentormate-api-hog"),
        .executableTarget(name: "mentormate-crashchild",
                          dependencies: ["MentorCore", "MentorCrypto", "MentorStore"],
                          path: "Tests/Tools/mentormate-crashchild"),
        .executableTarget(name: "mentormate-dnssd-probe", dependencies: ["MentorSystem", "MentorNet"],
                          path: "Tests/Tools/mentormate-dnssd-probe"),

        // What the fuzzers run (Fuzz/) and the regression tests replay (Tests/FuzzRegressions/).
        .target(name: "MentorFuzzTargets", dependencies: ["MentorCore", "MentorCrypto", "MentorAPI"],
                path: "Tests/FuzzTargets"),

        .testTarget(name: "MentorCoreTests", dependencies: ["MentorCore", "MentorCrypto"], path: "Tests/MentorCoreTests"),
        // The deterministic simulation (10,000 seeds every run). Its harness — scheduler, network,
        // simulated replicas — is compiled optimized even in a debug build (about 3× less time);
        // the code under test (MentorCore's SyncDriver, SyncSession, Reconciler, PushTree) is
        // built as everything else is.
        .testTarget(name: "MentorSimulationTests", dependencies: ["MentorCore", "MentorCrypto"],
                    path: "Tests/MentorSimulationTests",
                    swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        .testTarget(name: "MentorCryptoTests", dependencies: ["MentorCrypto", "MentorCore"],
                    path: "Tests/MentorCryptoTests"),
        .testTarget(name: "MentorNetTests", dependencies: ["MentorNet", "MentorSystem", "MentorAPI", "CPosix", "MentorCrypto"], path: "Tests/MentorNetTests"),
        .testTarget(name: "MentorCLITests", dependencies: ["MentorCLI", "MentorArguments", "MentorAPI", "MentorCA", "MentorCore", "MentorCrypto"],
                    path: "Tests/MentorCLITests"),
        .testTarget(name: "MentorNodeTests", dependencies: ["MentorNode", "MentorSystem", "MentorAPI", "MentorCrypto", "MentorCore"],
                    path: "Tests/MentorNodeTests"),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["MentorFuzzTargets"],
                    path: "Tests/FuzzRegressionTests"),
        .testTarget(name: "EndToEndTests", dependencies: ["MentorSystem", "MentorAPI"], path: "Tests/EndToEndTests"),
        .testTarget(name: "MentorSystemTests", dependencies: ["MentorSystem"], path: "Tests/MentorSystemTests"),
        .testTarget(name: "MentorAPITests", dependencies: ["MentorAPI"], path: "Tests/MentorAPITests"),
        .testTarget(name: "MentorCATests", dependencies: ["MentorCA", "MentorCore", "MentorCrypto", "MentorSystem", "MentorAPI"],
                    path: "Tests/MentorCATests"),
        .testTarget(name: "MentorStoreTests", dependencies: ["MentorStore", "MentorCrypto", "MentorCore"],
                    path: "Tests/MentorStoreTests"),
    ],
    swiftLanguageModes: [.v6]
)
