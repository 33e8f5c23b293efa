import Dispatch
import Foundation
import MentorNet
import Testing
import MentorSystem

// Test doubles the peer pieces' tests share: a clock moved by hand, a logger that keeps its
// lines, and the timers a fake shell was asked to schedule, run by the test.

/// A clock that stands still until the test moves it.
final class ManualClock: @unchecked Sendable {   // `t` under `lock`
    private let lock = NSLock()
    private var t = ContinuousClock.now
    var now: ContinuousClock.Instant { lock.withLock { t } }
    func advance(_ d: Duration) { lock.withLock { t += d } }
}

/// A logger that keeps every line, for tests to read.
final class CaptureLogger: Logger, @unchecked Sendable {   // `lines` under `lock`
    private let lock = NSLock()
    private var entries: [(level: LogLevel, message: String, metadata: [String: String])] = []
    var lines: [(level: LogLevel, message: String, metadata: [String: String])] { lock.withLock { entries } }
    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        lock.withLock { entries.append((level, message, metadata)) }
    }
    func lines(_ message: String) -> [[String: String]] { lines.filter { $0.message == message }.map(\.metadata) }
}

/// A timer a fake shell was asked to schedule: the work and when it is due.
typealias ScheduledWork = (work: DispatchWorkItem, at: ContinuousClock.Instant)

/// Expects exactly one of `scheduled` to be pending (not cancelled), forgets it, moves `clock`
/// to its instant and returns its work for the caller to run — after this returns, so that
/// work scheduling again can append to `scheduled` (the inout access has ended by then).
func takeTheOnlyTimer(_ scheduled: inout [ScheduledWork], clock: ManualClock,
                      sourceLocation: SourceLocation = #_sourceLocation) -> DispatchWorkItem? {
    let pending = scheduled.filter { !$0.work.isCancelled }
    #expect(pending.count == 1, "one timer pending, not \(pending.count)", sourceLocation: sourceLocation)
    guard let timer = pending.first else { return nil }
    scheduled.removeAll { $0.work === timer.work }
    clock.advance(timer.at - clock.now)
    return timer.work
}
