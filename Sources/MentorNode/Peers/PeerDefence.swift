import MentorNet
import MentorSystem

/// Whose fault a link's end is, and what a fault costs the peer's address (PROTOCOL.md §13.4):
/// a failed or timed-out handshake, a rejected frame or a refusal by a connection limit is an
/// offence, and so is a session closed for what the peer did (`SyncDriver`'s `blame`); each
/// refuses the address for a growing interval (`PenaltyBox`: the listener closes its
/// connections at once, a static peer there is redialled only after). A network error, a
/// silent peer or our own close is nobody's fault. A handshake the peer cut short without an
/// offence (maybe another network key) is logged at info once per address, until a link to it
/// works.
///
/// A value type with the clock passed in; the shell owns the links and logs what it returns
/// (with `log`, below).
struct PeerDefence: Sendable {
    /// An offence's price, for the shell's log line.
    struct Punishment: Sendable, Equatable {
        /// How long the address is refused from now.
        var interval: Duration
        /// Offences of the address in its current streak (1: the first, logged at info).
        var offences: Int
        var isFirstOfStreak: Bool { offences == 1 }
    }

    /// What a link's end means.
    enum Ending: Sendable, Equatable {
        /// Nobody's fault, nothing to log beyond the close itself.
        case quiet
        /// The peer's fault: its address was refused (`reason` is the close reason's text).
        case punished(reason: String, Punishment)
        /// The handshake ended without an offence; `logAtInfo`: the first time for this address.
        case handshakeCutShort(logAtInfo: Bool)
    }

    /// Addresses whose cut-short handshake was logged at info remembered, at most.
    static let loggedHandshakesMax = 4096

    private(set) var penalties: PenaltyBox
    /// Addresses whose handshake failure was logged at info (until one of their links is established).
    private var handshakeFailuresLogged: Set<String> = []

    init(settings: PenaltyBox.Settings = .init()) {
        penalties = PenaltyBox(settings: settings)
    }

    /// What in a link's end is the peer's fault (nil: a network problem, or our own doing).
    static func offence(_ reason: PeerLink.CloseReason) -> String? {
        switch reason {
        case .handshakeFailed, .frameRejected, .handshakeTimedOut, .refused: "\(reason)"
        case .closedLocally, .peerClosed, .ioFailed, .silent: nil
        }
    }

    /// Refuses `host` for its next interval; past half the box's capacity, the addresses
    /// forgiven by now are forgotten.
    mutating func punish(_ host: String, reason: String, now: ContinuousClock.Instant) -> Punishment {
        let interval = penalties.punish(host, reason: reason, now: now)
        let offences = penalties.refusal(of: host, now: now)?.offences ?? 1
        if penalties.count > penalties.settings.capacity / 2 { penalties.prune(now: now) }
        return Punishment(interval: interval, offences: offences)
    }

    /// A link from or to `host` ended for `reason`; `handshakeDone`: the peer's key was known.
    mutating func linkEnded(host: String, reason: PeerLink.CloseReason, handshakeDone: Bool,
                            now: ContinuousClock.Instant) -> Ending {
        if let offence = Self.offence(reason) {
            return .punished(reason: offence, punish(host, reason: offence, now: now))
        }
        guard !handshakeDone, reason != .closedLocally else { return .quiet }
        let first = handshakeFailuresLogged.count < Self.loggedHandshakesMax && handshakeFailuresLogged.insert(host).inserted
        return .handshakeCutShort(logAtInfo: first)
    }

    /// A link with `host` was established: its next cut-short handshake is logged at info again.
    mutating func linkEstablished(host: String) {
        handshakeFailuresLogged.remove(host)
    }

    /// Until when `host` is refused, if it is (a redial waits for the end).
    func refusedUntil(_ host: String, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        penalties.refusal(of: host, now: now)?.until
    }

    /// Why connections from `host` are refused now, if they are (stable for one refusal).
    func refusalReason(_ host: String, now: ContinuousClock.Instant) -> String? {
        guard let entry = penalties.refusal(of: host, now: now) else { return nil }
        return "refused after offence \(entry.offences) (\(entry.reason))"
    }
}

extension PeerDefence {
    /// The log line of an offence's price: the first of a streak at info, repeats (bounded by
    /// the doubling refusals) at debug.
    static func log(_ punishment: Punishment, reason: String, address: String, via: LinkOrigin, to logger: any Logger) {
        logger.log(punishment.isFirstOfStreak ? .info : .debug, "peer refused for a while",
                   ["peer.address": address, "for": "\(punishment.interval)", "offences": "\(punishment.offences)",
                    "via": via.rawValue, "reason": reason])
    }

    /// The log line of a link's end, if it needs one beyond the close: an offence's price, as
    /// above; a handshake the peer cut short without an offence (maybe it holds another network
    /// key, or it refuses us) at info the first time for its address, else at debug.
    static func log(_ ending: Ending, reason: PeerLink.CloseReason, address: String, via: LinkOrigin, to logger: any Logger) {
        switch ending {
        case .quiet:
            break
        case .punished(let offence, let punishment):
            log(punishment, reason: offence, address: address, via: via, to: logger)
        case .handshakeCutShort(let logAtInfo):
            logger.log(logAtInfo ? .info : .debug, "peer handshake did not complete", ["peer.address": address, "via": via.rawValue, "reason": "\(reason)"])
        }
    }
}
