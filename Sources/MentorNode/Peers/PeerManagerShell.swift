import Dispatch
import MentorCore
import MentorCrypto
import MentorNet
import MentorStore

// What the peer manager's pieces ask of it, as their shell (`ShellQueue` and the `*Shell`
// protocols: `DialShell`, `LinkShell`, `ApplyShell`, `PhotoShell`, `PushShell`, `NearbyShell`,
// `LinkOfferShell`, `NoticeShell`). All on the manager's `queue`. `PeerManager.swift` holds
// the shell's own work: the listener and the links, adopting, establishing and closing them.

extension PeerManager {
    // Common to their protocols: the links, the queue's timers, the wire.
    var isStopped: Bool { stopped }
    var links: [PeerConnection] { Array(connections.values) }

    func schedule(_ work: DispatchWorkItem, at: ContinuousClock.Instant) {
        let delay = max(.zero, at - settings.clock()).components
        let nanoseconds = delay.seconds * 1_000_000_000 + delay.attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: work)
    }

    func send(_ message: SyncMessage, on connection: PeerConnection) { connection.send(message.encoded) }
    func send(_ bytes: [UInt8], on connection: PeerConnection) { connection.send(bytes) }

    // `DialShell`: connecting, and what a redial waits for.
    func connect(_ peer: StaticPeer, slot: Int) {
        TCPDialer.connect(host: peer.host, port: peer.port, source: listenAddress.host, timeout: settings.dialTimeout, queue: queue) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                if !self.stopped { self.dials.dialFailed(slot, peer: peer, error: error) }
            case .success(let stream):
                guard !self.stopped else { stream.close(); return }
                let link = PeerLink(stream: stream, role: .initiator, identity: self.node.nodeKeys, queue: self.queue,
                                    settings: self.settings.link, logger: self.logger)
                self.adopt(link, via: self.dials.via(slot), staticIndex: slot)
                link.start()
            }
        }
    }

    func refusedUntil(_ host: String) -> ContinuousClock.Instant? { defence.refusedUntil(host, now: settings.clock()) }
    func isLinked(_ key: SigningPublicKey) -> Bool { connections.values.contains { !$0.closing && $0.peerKey == key && $0.since != 0 } }

    // `LinkShell`: what each link's driver asks through its `LinkHost`.
    var replica: Replica { node.replica }
    func pushSignal(_ signal: PushSignal, on connection: PeerConnection) { relay.signal(signal, from: connection) }
    func announceSync(_ connection: PeerConnection) { notifier.sync(connection) }
    func publishNearby() { nearby.publish() }
    func answerBlobRequest(_ hash: [UInt8], on connection: PeerConnection) { photos.answer(hash, on: connection) }
    func linkOffer(_ offer: [UInt8], on connection: PeerConnection) -> String? { offers.received(offer, from: connection) }

    func blobPart(hash: [UInt8], total: UInt32, offset: UInt32, bytes: [UInt8], on connection: PeerConnection) -> String? {
        photos.blobPart(hash: hash, total: total, offset: offset, bytes: bytes, on: connection)
    }

    /// A link's batch goes to the apply pipeline, counted for `status`; the accounts linked
    /// nodes named are kept past the node-wide budget.
    func verifyAndApply(_ batch: [[UInt8]], from connection: PeerConnection) {
        board.received(batch.count)
        pipeline.submit(batch, from: connection) { author in
            connections.values.contains(where: { $0.accounts.contains(author) })
        }
    }

    func sessionFinished(_ connection: PeerConnection, reason: String, blame: Bool) {
        end(connection, reason)
        if blame { punish(connection, reason) }
    }

    /// Photos waited for links catching up: this one may just have (after a hello with
    /// nothing to exchange, or its last batch).
    func sessionRan(_ connection: PeerConnection) {
        if !stopped, connection.session.isCaughtUp { photos.linkCaughtUp() }
    }

    // `ApplyShell`, `PhotoShell`, `NoticeShell`.
    func link(_ key: ObjectIdentifier) -> PeerConnection? { connections[key] }
    func applyFailed(_ connection: PeerConnection, reason: String) { end(connection, reason) }
    func duplicatesApplied(_ count: Int, from connection: PeerConnection) { relay.duplicates(count, from: connection) }
    func blobAnswerOverdue(_ connection: PeerConnection, reason: String) { end(connection, reason) }
    func announcedCaughtUp() { photos.linkCaughtUp() }

    /// A fork variant was applied: the links we dialled start a round now (the variant's
    /// siblings elsewhere are found without waiting for the minute).
    func forkApplied() {
        for connection in connections.values where !connection.closing && connection.since != 0 && connection.session.role == .initiator {
            connection.driver.startRound()
        }
    }
}
