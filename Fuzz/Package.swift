// swift-tools-version:5.4
// (5.4 on purpose: from 5.5 on, SwiftPM links Linux executables with `--defsym main=<target>_main`
// for testable executables, and a harness has no such symbol — its main is libFuzzer's.
// swiftlang/swift-package-manager#8731.)
// libFuzzer harnesses, a package of their own so the main build never needs the fuzzer flags.
// Build and run through `scripts/fuzz TARGET SECONDS` (see docs/RELIABILITY.md); by hand:
//   swift build --package-path Fuzz -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
// Each harness is one call into `FuzzTargets` (Tests/FuzzTargets in the main package), which
// the normal test suite also runs over Tests/FuzzRegressions/.
import PackageDescription

let targets = ["frames", "handshake", "records", "rpc"]

let package = Package(
    name: "MentorMateFuzz",
    dependencies: [.package(name: "MentorMate", path: "..")],
    targets: targets.map { name in
        .executableTarget(name: "fuzz-\(name)",
                          dependencies: [.product(name: "MentorFuzzTargets", package: "MentorMate")],
                          path: "Sources/fuzz-\(name)")
    }
)
