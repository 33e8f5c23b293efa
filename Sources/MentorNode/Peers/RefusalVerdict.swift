import MentorCore
import MentorStore

extension PeerManager {
    /// What a batch's outcomes say about the peer that sent it (PROTOCOL.md §10, "Whose fault").
    /// Built on `queue` from a batch's outcomes (`applied`); a value, no state of the manager.
    struct RefusalVerdict {
        /// Refusals that prove the sender misbehaved (`RecordError.Code.isOffence`).
        var offences = 0
        /// The first of them, for the one log line that says why the link ends.
        var firstOffence: RecordError?
        /// Authors of records refused for now (`isDeferral`): asked for again later.
        var deferred: [PublicKey] = []
        /// Records held until due, and how many of each refusal code that is no offence.
        var heldUntilDue: [PublicKey] = []
        var notNow: [String: Int] = [:]

        init(_ outcomes: [ApplyOutcome], _ batch: [[UInt8]]) {
            var deferred: Set<PublicKey> = [], held: Set<PublicKey> = []
            for (i, outcome) in outcomes.enumerated() {
                switch outcome {
                case .refused(let e) where e.code.isOffence:
                    offences += 1
                    if firstOffence == nil { firstOffence = e }
                case .refused(let e):
                    notNow[e.code.name, default: 0] += 1
                    if e.code.isDeferral, i < batch.count, let p = try? RecordPosition.peek(batch[i]) { deferred.insert(p.author) }
                case .heldUntilDue:
                    if i < batch.count, let p = try? RecordPosition.peek(batch[i]) { held.insert(p.author) }
                default:
                    break
                }
            }
            self.deferred = deferred.sorted()
            self.heldUntilDue = held.sorted()
        }
    }
}
