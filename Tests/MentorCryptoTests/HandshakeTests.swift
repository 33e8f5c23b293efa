import Testing
import MentorCore
import MentorCrypto

/// Drives `HandshakeInitiator`/`HandshakeResponder` and the frame layer with no sockets.
@Suite struct HandshakeTests {
    typealias T = CryptoTestSupport

    static let alice = try! SigningKeyPair(seed: [UInt8](repeating: 0x01, count: 32))
    static let bob = try! SigningKeyPair(seed: [UInt8](repeating: 0x02, count: 32))
    static let mallory = try! SigningKeyPair(seed: [UInt8](repeating: 0x03, count: 32))
    static let ephemeralI = T.bytes(hex: String(repeating: "11", count: 32))
    static let ephemeralR = T.bytes(hex: String(repeating: "22", count: 32))

    struct Run {
        var message1: [UInt8] = []
        var message2: [UInt8] = []
        var message3: [UInt8] = []
        var initiator: Handshake.Session?
        var responder: Handshake.Session?
    }

    /// A complete honest handshake.
    static func handshake(_ i: SigningKeyPair = alice, _ r: SigningKeyPair = bob,
                          network: NetworkKey = .default,
                          randomI: () -> [UInt8] = { SecureRandom.bytes(32) },
                          randomR: () -> [UInt8] = { SecureRandom.bytes(32) }) throws -> Run {
        var run = Run()
        var initiator = HandshakeInitiator(networkKey: network, identity: i, random: randomI)
        var responder = HandshakeResponder(networkKey: network, identity: r, random: randomR)
        run.message1 = initiator.start()
        guard case .send(let m2) = try responder.receive(run.message1) else { throw Failure("msg1 did not yield .send") }
        run.message2 = m2
        guard case .sendAndDone(let m3, let s) = try initiator.receive(m2) else { throw Failure("msg2 did not yield .sendAndDone") }
        run.message3 = m3
        run.initiator = s
        guard case .done(let t) = try responder.receive(m3) else { throw Failure("msg3 did not yield .done") }
        run.responder = t
        #expect(initiator.isDone && responder.isDone)
        return run
    }

    struct Failure: Error { let text: String; init(_ text: String) { self.text = text } }

    func expectHandshakeError(_ code: HandshakeError.Code, _ body: () throws -> Handshake.Step,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let step = try body()
            Issue.record("expected \(code), got \(step)", sourceLocation: sourceLocation)
        } catch let error as HandshakeError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    func expectFrameError(_ expected: FrameError, _ body: () throws -> Void,
                          sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
        } catch let error as FrameError {
            #expect(error == expected, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Handshake

    @Test func fullHandshakeAgreesOnKeysInOppositeDirectionsAndLearnsPeerNodeKeys() throws {
        let run = try Self.handshake()
        let i = try #require(run.initiator), r = try #require(run.responder)
        #expect(run.message1.count == 64 && run.message2.count == 144 && run.message3.count == 112)
        #expect(i.peerNodeKey == Self.bob.publicKey)
        #expect(r.peerNodeKey == Self.alice.publicKey)
        #expect(i.sendKey == r.receiveKey)
        #expect(i.receiveKey == r.sendKey)
        #expect(i.sendKey != i.receiveKey)
        #expect(i.transcriptHash == r.transcriptHash)
        // A second handshake between the same nodes gets fresh keys (forward secrecy).
        let again = try Self.handshake()
        #expect(again.initiator?.sendKey != i.sendKey)
    }

    @Test func wrongNetworkKeyFailsOnMessage1AndResponderSendsNothing() throws {
        let other = try NetworkKey(bytes: BLAKE2b.hash(Array("another campus".utf8)))
        var initiator = HandshakeInitiator(networkKey: other, identity: Self.alice)
        var responder = HandshakeResponder(identity: Self.bob)
        let message1 = initiator.start()
        var sent: [UInt8] = []
        expectHandshakeError(.wrongNetworkKey) {
            let step = try responder.receive(message1)
            if case .send(let bytes) = step { sent = bytes }
            return step
        }
        #expect(sent.isEmpty)
        #expect(responder.isFailed)
        expectHandshakeError(.unexpectedMessage) { try responder.receive(message1) }
        // Garbage of the right length is refused the same way.
        var fresh = HandshakeResponder(identity: Self.bob)
        expectHandshakeError(.wrongNetworkKey) { try fresh.receive([UInt8](repeating: 0x5a, count: 64)) }
    }

    @Test func everyFlippedByteOfMessage1IsRefusedAndAnsweredWithNothing() throws {
        // Each byte of t1 counts: a responder comparing only part of the tag would answer a
        // peer without the network key.
        var initiator = HandshakeInitiator(identity: Self.alice, random: { Self.ephemeralI })
        let message1 = initiator.start()
        for index in message1.indices {
            var tampered = message1
            tampered[index] ^= 0x01
            var responder = HandshakeResponder(identity: Self.bob)
            var sent: [UInt8] = []
            expectHandshakeError(.wrongNetworkKey) {
                let step = try responder.receive(tampered)
                if case .send(let bytes) = step { sent = bytes }
                return step
            }
            #expect(sent.isEmpty && responder.isFailed, "byte \(index): answered \(sent.count) bytes")
        }
    }

    /// Curve25519 points of small order (little-endian u): 0, 1, a point of order 8, and p − 1.
    static let lowOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        T.bytes(hex: "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        T.bytes(hex: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    ]

    @Test func lowOrderEphemeralKeysAreRefusedOnBothSidesEvenFromAPeerWithTheNetworkKey() throws {
        for point in Self.lowOrderPoints {
            // An insider can tag any e_i; a low-order one would make dh all zeros (keys known to all).
            let message1 = point + Reference.mac("mm-hs1", point)
            var responder = HandshakeResponder(identity: Self.bob)
            var sent: [UInt8] = []
            expectHandshakeError(.malformed) {
                let step = try responder.receive(message1)
                if case .send(let bytes) = step { sent = bytes }
                return step
            }
            #expect(sent.isEmpty && responder.isFailed)
            // The same as the responder's e_r in msg2.
            var initiator = HandshakeInitiator(identity: Self.alice)
            _ = initiator.start()
            expectHandshakeError(.malformed) { try initiator.receive(point + [UInt8](repeating: 0x42, count: Handshake.message2Length - 32)) }
            #expect(initiator.isFailed)
        }
    }

    @Test func message3OfTheWrongLengthIsRefusedAsMalformed() throws {
        for length in [0, 16, Handshake.message3Length - 1, Handshake.message3Length + 1] {
            var initiator = HandshakeInitiator(identity: Self.alice)
            var responder = HandshakeResponder(identity: Self.bob)
            guard case .send = try responder.receive(initiator.start()) else { Issue.record("no msg2"); return }
            expectHandshakeError(.malformed) { try responder.receive([UInt8](repeating: 0x42, count: length)) }
            #expect(responder.isFailed)
        }
    }

    @Test func everyFlippedByteOfMessage2IsRefused() throws {
        let run = try Self.handshake(randomI: { Self.ephemeralI }, randomR: { Self.ephemeralR })
        for index in run.message2.indices {
            var tampered = run.message2
            tampered[index] ^= 0x01
            var initiator = HandshakeInitiator(identity: Self.alice, random: { Self.ephemeralI })
            _ = initiator.start()
            #expect(throws: HandshakeError.self) { try initiator.receive(tampered) }
            #expect(initiator.isFailed)
        }
    }

    @Test func everyFlippedByteOfMessage3IsRefused() throws {
        let run = try Self.handshake(randomI: { Self.ephemeralI }, randomR: { Self.ephemeralR })
        for index in run.message3.indices {
            var tampered = run.message3
            tampered[index] ^= 0x80
            var responder = HandshakeResponder(identity: Self.bob, random: { Self.ephemeralR })
            _ = try responder.receive(run.message1)
            expectHandshakeError(.decryptionFailed) { try responder.receive(tampered) }
            #expect(responder.isFailed)
        }
    }

    @Test func messagesReplayedFromAnotherSessionAreRefused() throws {
        let old = try Self.handshake()
        // An old msg2 offered to a new initiator.
        var initiator = HandshakeInitiator(identity: Self.alice)
        _ = initiator.start()
        expectHandshakeError(.decryptionFailed) { try initiator.receive(old.message2) }
        // A replayed msg1 gets an answer (the responder cannot tell yet), but the old msg3 does not
        // finish it: the responder's fresh ephemeral changed the transcript.
        var responder = HandshakeResponder(identity: Self.bob)
        _ = try responder.receive(old.message1)
        expectHandshakeError(.decryptionFailed) { try responder.receive(old.message3) }
    }

    @Test func insiderClaimingAnotherNodesKeyWithoutItsSecretFailsSignature() throws {
        // Mallory holds the network key and answers in Bob's place, claiming Bob's node key.
        var initiator = HandshakeInitiator(identity: Self.alice)
        let message1 = initiator.start()
        let forged = try Reference.message2(message1: message1, ephemeralSecret: Self.ephemeralR,
                                            claimedKey: Self.bob.publicKey, signer: Self.mallory)
        expectHandshakeError(.badSignature) { try initiator.receive(forged) }
        // The same hand-built message signed by Bob is accepted: the reference matches the doc.
        var honest = HandshakeInitiator(identity: Self.alice)
        let honest1 = honest.start()
        let good = try Reference.message2(message1: honest1, ephemeralSecret: Self.ephemeralR,
                                          claimedKey: Self.bob.publicKey, signer: Self.bob)
        guard case .sendAndDone(_, let session) = try honest.receive(good) else {
            Issue.record("hand-built msg2 was not accepted"); return
        }
        #expect(session.peerNodeKey == Self.bob.publicKey)
    }

    @Test func insiderClaimingAnotherNodesKeyInMessage3FailsSignatureAtTheResponder() throws {
        // Mallory holds the network key and dials Bob; her msg3 claims Alice's node key but is
        // signed by Mallory's own key (she lacks Alice's secret). Bob must refuse it.
        func responderAfterMessage1() throws -> (HandshakeResponder, [UInt8]) {
            var dialer = HandshakeInitiator(identity: Self.mallory)
            let message1 = dialer.start()
            var responder = HandshakeResponder(identity: Self.bob, random: { Self.ephemeralR })
            guard case .send = try responder.receive(message1) else { throw Failure("msg1 did not yield .send") }
            return (responder, message1)
        }
        var (responder, message1) = try responderAfterMessage1()
        let forged = try Reference.message3(message1: message1, responderEphemeralSecret: Self.ephemeralR,
                                            responder: Self.bob.publicKey, claimedKey: Self.alice.publicKey,
                                            signer: Self.mallory)
        expectHandshakeError(.badSignature) { try responder.receive(forged) }
        #expect(responder.isFailed)
        expectHandshakeError(.unexpectedMessage) { try responder.receive(forged) }

        // Alice's own signature, but over the transcript bound to another responder (Mallory's
        // key, as if Alice had dialled Mallory and Mallory relayed it): refused too, because h3
        // covers the responder's key.
        var (relayed, relayed1) = try responderAfterMessage1()
        let misbound = try Reference.message3(message1: relayed1, responderEphemeralSecret: Self.ephemeralR,
                                              responder: Self.mallory.publicKey, claimedKey: Self.alice.publicKey,
                                              signer: Self.alice)
        expectHandshakeError(.badSignature) { try relayed.receive(misbound) }

        // The control: the same hand-built msg3, signed by the key it claims, is accepted.
        var (honest, honest1) = try responderAfterMessage1()
        let good = try Reference.message3(message1: honest1, responderEphemeralSecret: Self.ephemeralR,
                                          responder: Self.bob.publicKey, claimedKey: Self.alice.publicKey,
                                          signer: Self.alice)
        guard case .done(let session) = try honest.receive(good) else {
            Issue.record("hand-built msg3 was not accepted"); return
        }
        #expect(session.peerNodeKey == Self.alice.publicKey)
    }

    @Test func nodeConnectingToItselfIsRefusedOnBothSides() throws {
        var initiator = HandshakeInitiator(identity: Self.alice)
        var responder = HandshakeResponder(identity: Self.alice, random: { Self.ephemeralR })
        let message1 = initiator.start()
        guard case .send(let message2) = try responder.receive(message1) else { Issue.record("no msg2"); return }
        expectHandshakeError(.selfConnection) { try initiator.receive(message2) }
        #expect(initiator.isFailed)
        // A hand-built msg3 proving the responder's own key is refused by the responder too.
        let message3 = try Reference.message3(message1: message1, responderEphemeralSecret: Self.ephemeralR,
                                              responder: Self.alice.publicKey, signer: Self.alice)
        expectHandshakeError(.selfConnection) { try responder.receive(message3) }
    }

    @Test func messagesInTheWrongOrderFailAndKillTheMachine() throws {
        let run = try Self.handshake()
        var notStarted = HandshakeInitiator(identity: Self.alice)
        expectHandshakeError(.unexpectedMessage) { try notStarted.receive(run.message2) }
        #expect(notStarted.isFailed)

        var initiator = HandshakeInitiator(identity: Self.alice)
        let message1 = initiator.start()
        expectHandshakeError(.malformed) { try initiator.receive(message1) }   // its own msg1 echoed
        var responder = HandshakeResponder(identity: Self.bob)
        let answer = try responder.receive(message1)
        guard case .send(let message2) = answer else { Issue.record("no msg2"); return }
        expectHandshakeError(.unexpectedMessage) { try initiator.receive(message2) }   // dead now

        var early = HandshakeResponder(identity: Self.bob)
        expectHandshakeError(.malformed) { try early.receive(run.message3) }   // msg3 before msg1
        expectHandshakeError(.unexpectedMessage) { try early.receive(run.message1) }

        var finished = HandshakeResponder(identity: Self.bob, random: { Self.ephemeralR })
        var finishing = HandshakeInitiator(identity: Self.alice)
        guard case .send(let m2) = try finished.receive(finishing.start()),
              case .sendAndDone(let m3, _) = try finishing.receive(m2),
              case .done = try finished.receive(m3) else { Issue.record("handshake failed"); return }
        expectHandshakeError(.unexpectedMessage) { try finished.receive(m3) }
        expectHandshakeError(.unexpectedMessage) { try finishing.receive(m2) }
    }

    @Test func seededRandomSourceReplaysTheSameTranscript() throws {
        func run(seed: UInt64) throws -> Run {
            var rng = SeededRandom(seed: seed)
            return try Self.handshake(randomI: { rng.bytes(32) }, randomR: { rng.bytes(32) })
        }
        let a = try run(seed: 42), b = try run(seed: 42), c = try run(seed: 43)
        #expect(a.message1 == b.message1 && a.message2 == b.message2 && a.message3 == b.message3)
        #expect(a.initiator == b.initiator && a.responder == b.responder)
        #expect(a.message1 != c.message1)
        #expect(a.initiator?.sendKey != c.initiator?.sendKey)
    }

    @Test func fixedVectorMatchesDocumentedBytes() throws {
        #expect(T.hex(NetworkKey.default.bytes) == Vector.networkKey)
        let run = try Self.handshake(randomI: { Self.ephemeralI }, randomR: { Self.ephemeralR })
        let i = try #require(run.initiator)
        var sealer = FrameSealer(session: i)
        let firstFrame = try sealer.seal(Array("hello".utf8))
        print("""
            handshake test vector (network key = NetworkKey.default)
              network key     \(T.hex(NetworkKey.default.bytes))
              I seed          \(String(repeating: "01", count: 32))
              I node key      \(Self.alice.publicKey)
              R seed          \(String(repeating: "02", count: 32))
              R node key      \(Self.bob.publicKey)
              x_i             \(T.hex(Self.ephemeralI))
              x_r             \(T.hex(Self.ephemeralR))
              msg1            \(T.hex(run.message1))
              msg2            \(T.hex(run.message2))
              msg3            \(T.hex(run.message3))
              h1              \(T.hex(i.transcriptHash))
              k_ir            \(T.hex(i.initiatorToResponderKey))
              k_ri            \(T.hex(i.responderToInitiatorKey))
              first frame I→R of "hello"  \(T.hex(firstFrame))
            """)
        #expect(T.hex(run.message1) == Vector.message1)
        #expect(T.hex(run.message2) == Vector.message2)
        #expect(T.hex(run.message3) == Vector.message3)
        #expect(T.hex(i.initiatorToResponderKey) == Vector.kir)
        #expect(T.hex(i.responderToInitiatorKey) == Vector.kri)
        #expect(T.hex(firstFrame) == Vector.firstFrame)
    }

    enum Vector {
        static let networkKey = "14d504231a48b0fbbded8f95063d9227db0bdfa1f16b65d01feb55999a53c81f"
        static let message1 = "7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f136d76d2b32ea7ae1b6b860f4d5f56d14cc19c18be76b4200a264131f8303a14cb"
        static let message2 = "0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f20f1e22d05a23e14f6ab028998c76689791fc50e3419c3dbf383f96b9d054a0c4efa0bdbe43065a9e4241ff840fc689e677f1b94815d4f5f66a0b12c70f34ce6af36597cfa481b456bb545cf04e91855157e37c94a02f3149281905d364a107b1ecdd1240457e7d4b8aac3987e4c776794"
        static let message3 = "c3f566489ac6b313d950faa0a192c4faabf4c1ec3fee98cbbc4038674cf653a8581eec97f26a081b6c6407b9df9d1f2c6e1e238895bd70b76776532bfc15f177fef704fb9d208503c1769b8885031d2f570432229c13fac438e20012fca437054c2cfea5fae3e948e51a6ec18f068c5a"
        static let kir = "814a8c3b0aba1b5c4c05c95a56e3132649d559847279f96b556875bf61f4ff90"
        static let firstFrame = "00000015fbca274b259ccdd797bb4f1914f3069739e0aebd6e"
        static let kri = "47aec56a221b2cd204574fe9b11f7d5e482f26bf28bf369183a84c3fe4118337"
    }

    // MARK: Frames

    static func sessions() throws -> (Handshake.Session, Handshake.Session) {
        let run = try handshake()
        return (try #require(run.initiator), try #require(run.responder))
    }

    @Test func framesRoundTripInBothDirections() throws {
        let (i, r) = try Self.sessions()
        var iSeal = FrameSealer(session: i), rOpen = FrameOpener(session: r)
        var rSeal = FrameSealer(session: r), iOpen = FrameOpener(session: i)
        var rDecoder = FrameDecoder(), iDecoder = FrameDecoder()
        let payloads: [[UInt8]] = [[], Array("hello Ben".utf8), [UInt8](repeating: 9, count: Frames.maximumPlaintextLength)]
        for payload in payloads {
            let frame = try iSeal.seal(payload)
            #expect(frame.count == 4 + payload.count + 16)
            let bodies = try rDecoder.feed(frame)
            #expect(bodies.count == 1)
            #expect(try rOpen.open(bodies[0]) == payload)
            let back = try iDecoder.feed(try rSeal.seal(payload))
            #expect(try iOpen.open(back[0]) == payload)
        }
        #expect(iSeal.counter == 3 && rOpen.counter == 3)
        expectFrameError(.tooLarge(UInt32(Frames.maximumLength + 1))) {
            _ = try iSeal.seal([UInt8](repeating: 0, count: Frames.maximumPlaintextLength + 1))
        }
    }

    /// Bodies (without headers) of `count` frames sealed by the initiator.
    static func sealedBodies(_ session: Handshake.Session, _ count: Int) throws -> [[UInt8]] {
        var sealer = FrameSealer(session: session)
        return try (0..<count).map { n in Array(try sealer.seal([UInt8(n), 1, 2, 3]).dropFirst(4)) }
    }

    @Test func replayedReorderedAlteredOrReflectedFramesFailAuthentication() throws {
        let (i, r) = try Self.sessions()
        let bodies = try Self.sealedBodies(i, 3)

        var replay = FrameOpener(session: r)
        #expect(try replay.open(bodies[0]) == [0, 1, 2, 3])
        expectFrameError(.authenticationFailed) { _ = try replay.open(bodies[0]) }
        expectFrameError(.authenticationFailed) { _ = try replay.open(bodies[1]) }   // dead now
        #expect(replay.isDead)

        var reorder = FrameOpener(session: r)
        expectFrameError(.authenticationFailed) { _ = try reorder.open(bodies[1]) }

        var dropped = FrameOpener(session: r)
        _ = try dropped.open(bodies[0])
        expectFrameError(.authenticationFailed) { _ = try dropped.open(bodies[2]) }

        for index in bodies[0].indices {
            var altered = bodies[0]
            altered[index] ^= 0x04
            var opener = FrameOpener(session: r)
            expectFrameError(.authenticationFailed) { _ = try opener.open(altered) }
        }

        // The initiator's own frame reflected back to it (the other direction's key).
        var reflected = FrameOpener(session: i)
        expectFrameError(.authenticationFailed) { _ = try reflected.open(bodies[0]) }
        // A frame from another session between the same nodes.
        let (_, otherR) = try Self.sessions()
        var otherSession = FrameOpener(session: otherR)
        expectFrameError(.authenticationFailed) { _ = try otherSession.open(bodies[0]) }
    }

    @Test func decoderRefusesOversizedLengthBeforeTheBodyArrives() {
        var decoder = FrameDecoder()
        let length: UInt32 = 100_000_000
        let header = [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        expectFrameError(.tooLarge(length)) { _ = try decoder.feed(header) }
        #expect(decoder.bufferedCount == 0)
        expectFrameError(.tooLarge(length)) { _ = try decoder.feed([1, 2, 3]) }   // stays failed

        var justOver = FrameDecoder()
        expectFrameError(.tooLarge(UInt32(Frames.maximumLength + 1))) {
            _ = try justOver.feed([0x00, 0x10, 0x00, 0x11])
        }
        for tiny: UInt8 in [0, 15] {
            var decoder = FrameDecoder()
            expectFrameError(.malformed(UInt32(tiny))) { _ = try decoder.feed([0, 0, 0, tiny]) }
        }
        var atLimit = FrameDecoder()
        #expect((try? atLimit.feed([0x00, 0x10, 0x00, 0x10])) == [])   // exactly 1 MiB + 16 waits for its body
    }

    @Test func decoderReassemblesFramesFedOneByteAtATime() throws {
        let (i, r) = try Self.sessions()
        var sealer = FrameSealer(session: i)
        let payloads: [[UInt8]] = [Array("one".utf8), [], Array(repeating: 0xab, count: 300)]
        var stream: [UInt8] = []
        for payload in payloads { stream += try sealer.seal(payload) }

        var decoder = FrameDecoder()
        var opener = FrameOpener(session: r)
        var received: [[UInt8]] = []
        for byte in stream {
            for body in try decoder.feed([byte]) { received.append(try opener.open(body)) }
        }
        #expect(received == payloads)
        #expect(decoder.bufferedCount == 0)

        // And all at once, plus half of another frame held back.
        var whole = FrameDecoder()
        let next = try sealer.seal([7])
        let bodies = try whole.feed(stream + next.prefix(10))
        #expect(bodies.count == 3)
        #expect(whole.bufferedCount == 10)
        #expect(try whole.feed(Array(next.dropFirst(10))).count == 1)
    }
}

/// An independent implementation of the documented msg2/msg3 layouts, for forging messages.
enum Reference {
    static func mac(_ label: String, _ parts: [UInt8]..., length: Int = 32) -> [UInt8] {
        BLAKE2b.hash(Array(label.utf8) + parts.joined(), key: NetworkKey.default.bytes, outputLength: length)
    }

    static func derive(message1: [UInt8], responderEphemeralSecret: [UInt8]) throws -> (dh: [UInt8], h1: [UInt8], er: [UInt8]) {
        let er = try X25519.publicKey(fromSecret: responderEphemeralSecret)
        let dh = try X25519.sharedSecret(secretKey: responderEphemeralSecret, publicKey: Array(message1.prefix(32)))
        return (dh, mac("mm-hs-transcript", message1, er), er)
    }

    static func message2(message1: [UInt8], ephemeralSecret: [UInt8], claimedKey: SigningPublicKey,
                         signer: SigningKeyPair) throws -> [UInt8] {
        let (dh, h1, er) = try derive(message1: message1, responderEphemeralSecret: ephemeralSecret)
        let plaintext = claimedKey.bytes + signer.signature(for: mac("mm-hs-sig-r", h1))
        let box = try XChaCha20Poly1305.seal(plaintext, key: mac("mm-hs-k2", dh, h1), nonce: mac("mm-hs-n2", h1, length: 24))
        return er + box.dropFirst(24)
    }

    /// msg3 claiming `claimedKey` (the signer's own key unless given), signed by `signer` over h3
    /// for `responder`.
    static func message3(message1: [UInt8], responderEphemeralSecret: [UInt8], responder: SigningPublicKey,
                         claimedKey: SigningPublicKey? = nil, signer: SigningKeyPair) throws -> [UInt8] {
        let (dh, h1, _) = try derive(message1: message1, responderEphemeralSecret: responderEphemeralSecret)
        let plaintext = (claimedKey ?? signer.publicKey).bytes + signer.signature(for: mac("mm-hs-sig-i", h1, responder.bytes))
        let box = try XChaCha20Poly1305.seal(plaintext, key: mac("mm-hs-k3", dh, h1), nonce: mac("mm-hs-n3", h1, length: 24))
        return Array(box.dropFirst(24))
    }
}
