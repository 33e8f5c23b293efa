import Foundation
import Testing

/// End-to-end tests: each starts a real `mentormated` (built next to this test binary) on its
/// own state directory and socket, drives it with the real `mentormate` — as root, or as Unix
/// users made for the test and run through `setpriv` — and with raw socket connections, and
/// kills every process it started by PID at its end, also when it fails.
///
/// The tests run one at a time: several measure how promptly the daemon answers or how much
/// memory it holds, which other daemons competing for two cores would blur. Set
/// MENTORMATE_E2E_KEEP=1 to keep each test's directory (daemon logs, client output).
@Suite(.serialized, .tags(.multiProcess, .root)) struct EndToEndTests {
    /// A 1×1 PNG (a real one: signature, IHDR, IDAT, IEND with their CRCs).
    static let onePixelPNG: [UInt8] = Array(Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!)
}
