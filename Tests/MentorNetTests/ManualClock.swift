import Foundation

/// A clock that stands still until the test moves it (the one in MentorNodeTests' TestDoubles,
/// for this target): hand `now` to a `now:` setting.
final class ManualClock: @unchecked Sendable {   // `t` under `lock`
    private let lock = NSLock()
    private var t = ContinuousClock.now
    var now: ContinuousClock.Instant { lock.withLock { t } }
    func advance(_ d: Duration) { lock.withLock { t += d } }
}
