import Dispatch
import Synchronization

/// Lets at most `slots` passphrase derivations (Argon2id: 256 MiB and about half a second each)
/// run at once in the whole node; the others wait their turn, first come first served — never
/// refused. With the node's rule of one passphrase check in flight per Unix user, arrival order
/// is also fair between users: a user can have at most one place in the line.
///
/// ```swift
/// await gate.enter()       // or gate.wait() on a thread that may block
/// defer { gate.leave() }
/// let key = try Argon2id.deriveKey(...)
/// ```
///
/// Waiting with `enter()` holds no thread; only the `slots` running derivations do.
public final class PassphraseGate: Sendable {
    public let slots: Int
    private let state: Mutex<State>

    private struct State {
        var running = 0
        var waiting: [@Sendable () -> Void] = []
        var head = 0
        /// The most that ever ran at once (for tests and the debug log).
        var peak = 0
    }

    public init(slots: Int) {
        self.slots = max(1, slots)
        state = Mutex(State())
    }

    /// Runs `admitted` (on this thread, now) if a slot is free, else later from the `leave()`
    /// that frees one. Each admission must be paired with one `leave()`.
    public func enter(_ admitted: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            guard s.running < slots else {
                s.waiting.append(admitted)
                return false
            }
            s.running += 1
            s.peak = max(s.peak, s.running)
            return true
        }
        if now { admitted() }
    }

    /// Waits (without holding a thread) until this caller's turn.
    public func enter() async {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            enter { turn.resume() }
        }
    }

    /// Blocks the calling thread until its turn (for synchronous callers).
    public func wait() {
        let turn = DispatchSemaphore(value: 0)
        enter { turn.signal() }
        turn.wait()
    }

    /// Frees a slot: the longest-waiting caller, if any, takes it.
    public func leave() {
        let next = state.withLock { s -> (@Sendable () -> Void)? in
            guard s.head < s.waiting.count else {
                s.running = max(0, s.running - 1)
                return nil
            }
            let next = s.waiting[s.head]
            s.head += 1
            if s.head == s.waiting.count {
                s.waiting.removeAll(keepingCapacity: true)
                s.head = 0
            }
            return next   // the slot passes on: `running` stays
        }
        next?()
    }

    /// Derivations running now, and callers waiting for a slot.
    public var load: (running: Int, waiting: Int) {
        state.withLock { ($0.running, $0.waiting.count - $0.head) }
    }

    /// The most derivations that ran at once since the gate was made.
    public var peak: Int { state.withLock { $0.peak } }
}
