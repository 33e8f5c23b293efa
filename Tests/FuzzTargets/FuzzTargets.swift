import MentorAPI
import MentorCore
import MentorCrypto

/// What a fuzz input broke: a documented property of the code under test that did not hold
/// (an unexpected error kind, a non-canonical encoding accepted, a failed state machine that
/// came back to life...). A crash is the other kind of finding; it needs no value.
public struct FuzzViolation: Error, CustomStringConvertible {
    public let target: String
    public let message: String
    public var description: String { "\(target): \(message)" }
}

/// The entry points shared by the libFuzzer harnesses (`Fuzz/`) and the regression tests
/// (`Tests/FuzzRegressionTests`), so a regression input replays exactly what the fuzzer ran.
/// Each takes arbitrary bytes, drives the code that reads untrusted input, and checks what the
/// code documents about bad input; it returns normally for any input that is handled correctly.
public enum FuzzTargets {
    public static let all: [String: @Sendable ([UInt8]) throws(FuzzViolation) -> Void] = [
        "frames": frames,
        "handshake": handshake,
        "records": records,
        "rpc": rpc,
    ]

    // MARK: - Frames

    /// Frame key for the fuzz runs (any fixed 32 bytes).
    static let frameKey = [UInt8](repeating: 0x42, count: 32)

    /// `FrameDecoder.feed` + `FrameOpener.open`. The first byte picks the mode:
    /// - even: the rest is a raw byte stream from a peer, fed in pieces whose sizes come from the
    ///   second byte, with a decoder limit of 16 + the third byte (so `tooLarge` is reachable);
    /// - odd: the rest is split into plaintexts at 0xFF bytes, sealed, and the sealed stream is
    ///   altered at one position (when the second byte is not 0) and fed in pieces: what opens
    ///   must be the original plaintexts, in order, and an altered byte must fail the stream.
    /// Properties: errors are sticky (a failed decoder or opener fails every later call), the
    /// decoder never holds more than one frame's worth, nothing altered opens.
    public static func frames(_ data: [UInt8]) throws(FuzzViolation) {
        func violation(_ m: String) -> FuzzViolation { FuzzViolation(target: "frames", message: m) }
        guard data.count >= 3 else { return }
        let mode = data[0], pieceSeed = Int(data[1]), limitByte = Int(data[2])
        let rest = Array(data[3...])

        if mode & 1 == 0 {
            let limit = Frames.tagLength + limitByte * (mode & 2 == 0 ? 1 : 4096)
            var decoder = FrameDecoder(maximumLength: min(limit, Frames.maximumLength))
            var opener = FrameOpener(key: frameKey)
            var offset = 0, failure: FrameError? = nil
            while offset < rest.count {
                let n = min(rest.count - offset, 1 + (pieceSeed &* (offset + 7)) % 97)
                let piece = Array(rest[offset..<offset + n])
                offset += n
                do {
                    let bodies = try decoder.feed(piece)
                    if failure != nil { throw violation("a failed decoder yielded frames again") }
                    for body in bodies {
                        guard body.count >= Frames.tagLength, body.count <= decoder.maximumLength else {
                            throw violation("a body of \(body.count) bytes passed the length check")
                        }
                        _ = try? opener.open(body)
                    }
                    if decoder.bufferedCount > Frames.headerLength + decoder.maximumLength {
                        throw violation("decoder holds \(decoder.bufferedCount) bytes, over one frame")
                    }
                } catch let e as FrameError {
                    if let failure, failure != e { throw violation("a failed decoder changed its error from \(failure) to \(e)") }
                    switch e {
                    case .tooLarge(let l) where Int(l) > decoder.maximumLength: break
                    case .malformed(let l) where Int(l) < Frames.tagLength: break
                    default: throw violation("decoder threw \(e) for a length within its limits")
                    }
                    failure = e
                } catch let v as FuzzViolation {
                    throw v
                } catch {
                    throw violation("unexpected error \(error)")
                }
            }
            if opener.isDead {
                do { _ = try opener.open([UInt8](repeating: 0, count: 16)); throw violation("a dead opener opened a frame") }
                catch let e as FrameError where e == .authenticationFailed {} catch let v as FuzzViolation { throw v } catch {
                    throw violation("a dead opener threw \(error)")
                }
            }
            return
        }

        let plaintexts = rest.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(64).map(Array.init)
        var sealer = FrameSealer(key: frameKey)
        var stream: [UInt8] = []
        var ends: [Int] = []
        for p in plaintexts {
            guard let frame = try? sealer.seal(p) else { throw violation("sealing \(p.count) bytes failed") }
            stream += frame
            ends.append(stream.count)
        }
        let alterAt = pieceSeed == 0 || stream.isEmpty ? nil : (limitByte << 8 | pieceSeed) % stream.count
        if let at = alterAt { stream[at] ^= UInt8(truncatingIfNeeded: pieceSeed | 1) }
        var decoder = FrameDecoder()
        var opener = FrameOpener(key: frameKey)
        var opened: [[UInt8]] = []
        var failed = false
        var offset = 0
        while offset < stream.count, !failed {
            let n = min(stream.count - offset, 1 + (Int(mode) &* (offset + 3)) % 61)
            do {
                for body in try decoder.feed(Array(stream[offset..<offset + n])) { opened.append(try opener.open(body)) }
            } catch {
                failed = true
            }
            offset += n
        }
        for (i, p) in opened.enumerated() where p != plaintexts[i] {
            throw violation("frame \(i) opened to other bytes than were sealed")
        }
        if let at = alterAt {
            // Frames wholly before the altered byte open; the altered one never does.
            let firstTouched = ends.firstIndex(where: { $0 > at }) ?? ends.count
            if opened.count > firstTouched { throw violation("an altered frame (byte \(at)) opened") }
            if !failed && opened.count == plaintexts.count { throw violation("an altered stream was accepted whole") }
        } else if failed || opened.count != plaintexts.count {
            throw violation("an unaltered stream of \(plaintexts.count) frames opened \(opened.count), failed: \(failed)")
        }
    }

    // MARK: - Handshake

    static let initiatorIdentity = try! SigningKeyPair(seed: [UInt8](repeating: 0x01, count: 32))
    static let responderIdentity = try! SigningKeyPair(seed: [UInt8](repeating: 0x02, count: 32))

    /// `HandshakeResponder` and `HandshakeInitiator` receiving arbitrary bytes. The first byte
    /// picks the mode:
    /// - 0: the rest, split at 0xFF into messages, is what a dialling peer sends a responder;
    /// - 1: the same, sent to an initiator after its msg1;
    /// - otherwise: an honest handshake whose messages are XORed with the rest (msg1, msg2, msg3
    ///   masks back to back) — it must complete exactly when no mask byte is set, and then both
    ///   sides must agree on the keys and on who is who.
    /// Properties: errors are `HandshakeError`s; a failed side refuses everything after it.
    public static func handshake(_ data: [UInt8]) throws(FuzzViolation) {
        func violation(_ m: String) -> FuzzViolation { FuzzViolation(target: "handshake", message: m) }
        guard let mode = data.first else { return }
        let rest = Array(data.dropFirst())
        var counter: UInt8 = 0
        func ephemeral() -> [UInt8] { counter &+= 1; return [UInt8](repeating: 0x10 &+ counter, count: 32) }

        /// Feeds messages to a side; checks that after the first error every call fails.
        func feed(_ messages: [[UInt8]], _ receive: ([UInt8]) throws(HandshakeError) -> Handshake.Step) throws(FuzzViolation) {
            var failedAt: Int? = nil
            for (i, m) in messages.enumerated() {
                let step: Handshake.Step
                do {
                    step = try receive(m)
                } catch {
                    if failedAt != nil, error.code != .unexpectedMessage {
                        throw violation("a failed handshake answered \(error.code), not unexpectedMessage")
                    }
                    failedAt = failedAt ?? i
                    continue
                }
                if let f = failedAt { throw violation("message \(i) accepted (\(step)) after message \(f) failed") }
            }
        }

        switch mode {
        case 0:
            var responder = HandshakeResponder(identity: responderIdentity, random: ephemeral)
            let messages = rest.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(8).map(Array.init)
            try feed(messages) { m throws(HandshakeError) in try responder.receive(m) }
            if responder.isDone { throw violation("a responder finished a handshake with a peer that has no key") }
        case 1:
            var initiator = HandshakeInitiator(identity: initiatorIdentity, random: ephemeral)
            _ = initiator.start()
            let messages = rest.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(8).map(Array.init)
            try feed(messages) { m throws(HandshakeError) in try initiator.receive(m) }
            if initiator.isDone { throw violation("an initiator finished a handshake with a peer that has no key") }
        default:
            func masked(_ m: [UInt8], _ from: Int) -> [UInt8] {
                var out = m
                for i in 0..<m.count where from + i < rest.count { out[i] ^= rest[from + i] }
                return out
            }
            let altered = rest.prefix(64 + 144 + 112).contains { $0 != 0 }
            var initiator = HandshakeInitiator(identity: initiatorIdentity, random: ephemeral)
            var responder = HandshakeResponder(identity: responderIdentity, random: ephemeral)
            let m1 = masked(initiator.start(), 0)
            var sessions: (Handshake.Session, Handshake.Session)? = nil
            do {
                guard case .send(let m2) = try responder.receive(m1) else { throw violation("msg1 did not give msg2") }
                guard case .sendAndDone(let m3, let si) = try initiator.receive(masked(m2, 64)) else {
                    throw violation("msg2 did not give msg3")
                }
                guard case .done(let sr) = try responder.receive(masked(m3, 64 + 144)) else { throw violation("msg3 did not finish") }
                sessions = (si, sr)
            } catch let v as FuzzViolation {
                throw v
            } catch {
                if !altered { throw violation("an unaltered handshake failed: \(error)") }
                if !(responder.isFailed || initiator.isFailed) { throw violation("\(error) left both sides unfailed") }
            }
            if let (si, sr) = sessions {
                if altered {
                    throw violation("a handshake with altered messages completed")
                }
                guard si.sendKey == sr.receiveKey, si.receiveKey == sr.sendKey, si.sendKey != si.receiveKey,
                      si.peerNodeKey == responderIdentity.publicKey, sr.peerNodeKey == initiatorIdentity.publicKey else {
                    throw violation("the two sides disagree on keys or identities")
                }
            }
        }
    }

    // MARK: - Records and sync messages

    static let recordAuthor = try! SigningKeyPair(seed: [UInt8](repeating: 0x07, count: 32))

    /// `Record.decode`, `VerifiedRecord`, `RecordPosition.peek`, `SyncMessage.decode`, the sealed
    /// payload decoders and a `SyncSession` receiving the bytes. Properties: decoding accepts only
    /// canonical encodings (re-encoding gives the input back), `peek` agrees with `decode`, a
    /// record verifies only with its author's signature, and a session given malformed bytes
    /// closes once and then ignores everything.
    /// When the first byte is 0x5A the rest is signed by a fixed author (its key and signature
    /// written in), so records whose body passes the schema get through verification.
    public static func records(_ data: [UInt8]) throws(FuzzViolation) {
        func violation(_ m: String) -> FuzzViolation { FuzzViolation(target: "records", message: m) }
        var bytes = data
        var signed = false
        if bytes.first == 0x5A, bytes.count > 1 + 45 + 64 {
            bytes.removeFirst()
            bytes.replaceSubrange(5..<37, with: recordAuthor.publicKey.bytes)
            let message = Array(bytes.dropLast(Record.signatureLength))
            bytes = message + recordAuthor.signature(for: message)
            signed = true
        }

        let decoded: Record?
        do { decoded = try Record.decode(bytes) } catch { decoded = nil }
        if let record = decoded {
            if record.encoded != bytes { throw violation("a non-canonical record encoding decoded") }
            guard let p = try? RecordPosition.peek(bytes), p.author == record.author, p.seq == record.seq else {
                throw violation("peek disagrees with decode")
            }
        }
        do {
            let v = try VerifiedRecord(bytes)
            if decoded == nil { throw violation("a record that does not decode verified") }
            if v.encoded != bytes || v.record != decoded { throw violation("verification changed the record") }
        } catch let e as FuzzViolation {
            throw e
        } catch {
            if signed, decoded != nil { throw violation("a record signed by its author did not verify: \(error)") }
        }

        _ = try? LikePayload(plaintext: data)
        _ = try? ChatPayload(plaintext: data)
        _ = try? UnmatchPayload(plaintext: data)

        // A hello of another version decodes to its version alone (so the session can say which
        // one the peer speaks, and refuse it): not a message this build takes, so not canonical.
        if let m = try? SyncMessage.decode(data), !m.isOtherVersionHello, m.encoded != data {
            throw violation("a non-canonical sync message decoded: \(m)")
        }
        var session = SyncSession(role: .responder, settings: SyncSettings(window: 2, batchSize: 4), hashing: ReconHash.hashing)
        _ = session.start(salt: [UInt8](repeating: 1, count: 16), held: 3)
        _ = session.receive(.hello(salt: [UInt8](repeating: 2, count: 16), held: 0))
        var directives = session.receive(bytes: data)
        directives += session.receive(bytes: data)
        // A round step is answered over a small tree, as the daemon answers it over the replica's.
        if directives.contains(.reconcile) {
            let tree = MemoryReconTree((0..<40).map { BLAKE2b.hash([UInt8($0)]) })
            directives += (try? session.reconcile(in: tree)) ?? []
        }
        let closes = directives.filter { if case .close = $0 { true } else if case .end = $0 { true } else { false } }.count
        if closes > 1 { throw violation("a session closed \(closes) times") }
        if session.isClosed, !session.receive(bytes: data).isEmpty { throw violation("a closed session answered") }
    }

    // MARK: - JSON-RPC

    /// `LineFramer` + `RPCRequest.parse` (and so `JSON.parse`) on what a client writes to the
    /// API socket. Properties: parsing never traps; a parsed JSON value re-encodes to text that
    /// parses to the same value; a parsed request re-encodes to a line that parses to the same
    /// request; the framer never holds more than its limit.
    public static func rpc(_ data: [UInt8]) throws(FuzzViolation) {
        func violation(_ m: String) -> FuzzViolation { FuzzViolation(target: "rpc", message: m) }
        if let json = JSON.parse(data) {
            guard JSON.parse(json.encoded) == json else {
                throw violation("JSON \(json) does not survive its own encoding")
            }
        }
        var framer = LineFramer(maxLine: 4096)
        let lines: [[UInt8]]
        do { lines = try framer.append(data) } catch { lines = [] }
        if framer.pending > 4096 { throw violation("framer holds \(framer.pending) bytes over its limit") }
        for line in lines.prefix(16) + [data] {
            switch RPCRequest.parse(line) {
            case .success(let request):
                guard request.line.last == 0x0A, case .success(let again) = RPCRequest.parse(Array(request.line.dropLast())),
                      again == request else {
                    throw violation("request \(request) does not survive its own encoding")
                }
            case .failure(let invalid):
                let allowed: [RPCError.Code] = [.parseError, .invalidRequest, .invalidParams]
                if !allowed.contains(RPCError.Code(rawValue: invalid.error.code)) {
                    throw violation("parse failed with code \(invalid.error.code)")
                }
            }
        }
    }
}

extension SyncMessage {
    var isOtherVersionHello: Bool {
        if case .hello(let version, _, _) = self { version != SyncMessage.protocolVersion } else { false }
    }
}
