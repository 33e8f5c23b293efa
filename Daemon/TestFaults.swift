import Dispatch
import MentorNet
import MentorNode
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem

/// A fault switch for the watchdog tests, and nothing else: with `MENTORMATE_TEST_WEDGE=node`
/// (or `=api`) in the daemon's environment when it starts, SIGUSR1 blocks the node's serial
/// queue (or the API server's event loop) for good, so the test can see the keep-alives stop.
///
/// Who can use it: only whoever sets the daemon's environment and may signal it — root or the
/// daemon's own user. Nothing on the API socket or from a peer reaches it, the shipped units do
/// not set the variable, and without it SIGUSR1 keeps its default action. The daemon logs a
/// warning at start while the switch is armed.
final class TestFaults {
    private let source: DispatchSourceSignal?

    init?(environment: [String: String], node: Node, server: APIServer, logger: some Logger & Sendable) {
        guard let target = environment["MENTORMATE_TEST_WEDGE"], !target.isEmpty else { return nil }
        guard target == "node" || target == "api" else {
            logger.log(.warning, "MENTORMATE_TEST_WEDGE ignored: it must be node or api", ["value": target])
            return nil
        }
        logger.log(.warning, "test fault switch armed: SIGUSR1 wedges a loop for good (never set this in production)",
                   ["loop": target])
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: DispatchQueue(label: "mentormated.test-faults"))
        source.setEventHandler {
            logger.log(.warning, "test fault: wedging a loop", ["loop": target])
            let wedge: @Sendable () -> Void = { while true { sleep(3600) } }
            if target == "node" { node.probe(wedge) } else { server.probe(wedge) }
        }
        source.resume()
        self.source = source
    }
}
