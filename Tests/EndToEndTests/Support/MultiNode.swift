import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Helpers shared by the tests that run several daemons.

/// `mentormate ARGS --json` against `socket`, parsed.
func mmJSON(_ e2e: E2E, _ arguments: [String], _ socket: String,
            sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
    let result = try e2e.mm(arguments + ["--json"], socket: socket, sourceLocation: sourceLocation)
    guard let json = result.json else { throw E2EError("not JSON: \(result)") }
    return json
}

/// The peer port a daemon bound (from `status --json`).
func listenPort(_ e2e: E2E, _ socket: String) throws -> Int {
    let result = try e2e.mm(["status", "--json"], socket: socket)
    guard let port = result.json?["listen"]?["port"]?.intValue, port > 0 else { throw E2EError("no listen port in \(result)") }
    return Int(port)
}

/// Reads `value` every 50 ms until `done` holds or `timeout` passes; returns the last reading.
func poll<T>(timeout: Duration = .seconds(10), _ value: () throws -> T, until done: (T) -> Bool) throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        let v = try value()
        if done(v) || ContinuousClock.now >= deadline { return v }
        usleep(50_000)
    }
}
