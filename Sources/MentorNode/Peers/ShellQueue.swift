import Dispatch

/// What every piece of the peer manager needs of the shell that owns the links (`PeerManager`):
/// whether it stopped (then no timer of the piece does anything any more) and timers on its
/// queue. Each piece's own shell protocol (`ApplyShell`, `DialShell`, `LinkShell`,
/// `LinkOfferShell`, `NearbyShell`, `NoticeShell`, `PhotoShell`, `PushShell`) adds what it needs
/// besides.
protocol ShellQueue: AnyObject {
    /// The shell stopped: nothing more is done for any link, no timer does anything.
    var isStopped: Bool { get }
    /// Runs `work` on the shell's queue at `at` (whoever holds `work` may cancel it).
    func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant)
}
