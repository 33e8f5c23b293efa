import CSodium

// MARK: - Protocol
//
// # MentorMate peer handshake, version 1
//
// Three messages over a fresh TCP connection, then encrypted frames (see Frames.swift). Pure
// code: no sockets, no clock (deadlines are the caller's), randomness injected.
//
// Inputs on each side:
//   N        the 32-byte network key (`NetworkKey.default` = BLAKE2b-256 of the ASCII text
//            "mentormate default network key v1", unkeyed; overridable with a key file)
//   I / R    the initiator's / responder's Ed25519 node public key (32 bytes), with its secret
//   x_i/x_r  a fresh 32-byte ephemeral X25519 secret from the injected random source;
//            e_i / e_r = crypto_scalarmult_base(x) is its public key (32 bytes)
//
// Notation: H(label ‖ parts) = BLAKE2b-256 keyed with N over the ASCII bytes of `label`
// (no length prefix, no terminator) followed by the parts. Every part has a fixed length, so
// the encoding is unambiguous. H24 is the same with a 24-byte output. `box(k, n, p)` is
// XChaCha20-Poly1305 (IETF) of p under key k with nonce n and empty associated data, written
// on the wire as ciphertext ‖ tag (16) — the nonce is NOT on the wire, both sides derive it.
//
// msg1, initiator → responder, 64 bytes:
//   offset  0  32  e_i
//   offset 32  32  t1 = H("mm-hs1" ‖ e_i)
// The responder checks the length and t1 (constant time) before anything else. A wrong t1
// fails with `wrongNetworkKey` and the responder sends NOTHING: a peer without N learns nothing
// beyond the TCP accept.
//
// Both sides then compute:
//   dh = X25519(x, e_peer)            (a low-order e_peer giving all zeros fails `malformed`)
//   h1 = H("mm-hs-transcript" ‖ msg1 ‖ e_r)       transcript hash, 64 + 32 bytes hashed
//   k2 = H("mm-hs-k2" ‖ dh ‖ h1)                  key of the msg2 box
//   k3 = H("mm-hs-k3" ‖ dh ‖ h1)                  key of the msg3 box
//   n2 = H24("mm-hs-n2" ‖ h1)                     nonce of the msg2 box
//   n3 = H24("mm-hs-n3" ‖ h1)                     nonce of the msg3 box
//   h2 = H("mm-hs-sig-r" ‖ h1)                    what R signs
//   h3 = H("mm-hs-sig-i" ‖ h1 ‖ R)                what I signs
//
// msg2, responder → initiator, 144 bytes:
//   offset  0  32  e_r
//   offset 32  96  ciphertext of  R (32) ‖ Ed25519 signature by R over h2 (64)  under k2, n2
//   offset 128 16  Poly1305 tag
// The initiator opens the box (`decryptionFailed`), verifies the signature with R
// (`badSignature`), and refuses R == I (`selfConnection`: a node dialled itself).
//
// msg3, initiator → responder, 112 bytes:
//   offset  0  96  ciphertext of  I (32) ‖ Ed25519 signature by I over h3 (64)  under k3, n3
//   offset 96  16  Poly1305 tag
// The responder opens it (`decryptionFailed`), verifies the signature with I (`badSignature`)
// and refuses I == R (`selfConnection`).
//
// Session keys, both sides:
//   k_ir = H("mm-session-ir" ‖ dh ‖ h1 ‖ I ‖ R)   initiator → responder frames
//   k_ri = H("mm-session-ri" ‖ dh ‖ h1 ‖ I ‖ R)   responder → initiator frames
//
// Why the box nonces are derived rather than random: k2 and k3 each seal exactly one message,
// and both keys are fresh per handshake (they depend on dh and h1, i.e. on both ephemerals), so
// any fixed nonce is already safe; deriving it from h1 costs nothing, saves 24 bytes per message,
// and makes the whole exchange a function of its inputs, so complete test vectors exist.
//
// Test vector (HandshakeTests.fixedVectorMatchesDocumentedBytes), N = NetworkKey.default:
//   N     14d504231a48b0fbbded8f95063d9227db0bdfa1f16b65d01feb55999a53c81f
//   I     Ed25519 seed 01×32, node key 8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c
//   R     Ed25519 seed 02×32, node key 8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394
//   x_i   11×32          x_r   22×32
//   msg1  7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13
//         6d76d2b32ea7ae1b6b860f4d5f56d14cc19c18be76b4200a264131f8303a14cb
//   h1    424bbedfc769b0390c99ebbbcdb9b77eb7163cd22d5b44f64c4f32793cafd0a8
//   k_ir  814a8c3b0aba1b5c4c05c95a56e3132649d559847279f96b556875bf61f4ff90
//   k_ri  47aec56a221b2cd204574fe9b11f7d5e482f26bf28bf369183a84c3fe4118337
//   msg2, msg3 and the first frame ("hello", I → R) are in the test.
//
// Properties: forward secrecy (only ephemeral keys enter dh; ephemeral secrets are zeroed after
// use); the responder's node key travels only under a key from dh, the initiator's only after
// the responder proved R and knowledge of N; each signature covers both ephemerals through h1,
// so a msg2 or msg3 from another session does not verify; any failure kills the state machine
// and every later call throws `unexpectedMessage`.

// MARK: - Network key

/// The 32-byte key that admits a node to a MentorMate network. Every handshake MAC and key is
/// keyed with it, so a peer without it cannot complete — or even begin — a handshake.
public struct NetworkKey: Sendable, Equatable {
    public static let length = 32

    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.length else {
            throw CryptoError(.invalidKeyLength,
                              "a network key is \(Self.length) bytes, got \(bytes.count); check the --network-key file")
        }
        self.bytes = bytes
    }

    /// BLAKE2b-256 of the ASCII text "mentormate default network key v1".
    public static let `default`: NetworkKey = {
        let bytes = BLAKE2b.hash(Array("mentormate default network key v1".utf8))
        return try! NetworkKey(bytes: bytes)   // BLAKE2b-256 is always 32 bytes
    }()
}

// MARK: - Errors

/// Why a handshake failed. After any of these the state machine is dead.
public struct HandshakeError: Error, Equatable, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// msg1's tag does not verify: the peer does not hold our network key. Send nothing.
        public static let wrongNetworkKey = Code("wrongNetworkKey")
        /// A message of the wrong length, or an ephemeral key that is a low-order point.
        public static let malformed = Code("malformed")
        /// A node key's signature over the transcript does not verify.
        public static let badSignature = Code("badSignature")
        /// The sealed part of msg2 or msg3 does not open: altered, or from another session.
        public static let decryptionFailed = Code("decryptionFailed")
        /// A message (or call) in a state that does not expect one, including after a failure.
        public static let unexpectedMessage = Code("unexpectedMessage")
        /// The peer's node key is our own: this node connected to itself.
        public static let selfConnection = Code("selfConnection")

        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? HandshakeError)?.code == pattern
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

// MARK: - Results

public enum Handshake {
    public static let ephemeralSecretLength = 32
    public static let message1Length = 64
    public static let message2Length = 32 + boxLength
    public static let message3Length = boxLength
    static let boxLength = SigningPublicKey.length + SigningPublicKey.signatureLength + XChaCha20Poly1305.tagLength

    public enum Role: Sendable, Equatable { case initiator, responder }

    /// What a finished handshake yields: who the peer is and the two frame keys.
    public struct Session: Sendable, Equatable {
        public let role: Role
        public let localNodeKey: SigningPublicKey
        /// The peer's proven node key; use it to collapse duplicate connections.
        public let peerNodeKey: SigningPublicKey
        /// k_ir: keys initiator → responder frames.
        public let initiatorToResponderKey: [UInt8]
        /// k_ri: keys responder → initiator frames.
        public let responderToInitiatorKey: [UInt8]
        /// h1, the transcript hash; equal on both sides, unique per handshake.
        public let transcriptHash: [UInt8]

        /// The key this side seals its frames with.
        public var sendKey: [UInt8] { role == .initiator ? initiatorToResponderKey : responderToInitiatorKey }
        /// The key this side opens the peer's frames with.
        public var receiveKey: [UInt8] { role == .initiator ? responderToInitiatorKey : initiatorToResponderKey }
    }

    /// What the I/O shell must do after a message.
    public enum Step: Sendable, Equatable {
        /// Write these bytes; the handshake goes on.
        case send([UInt8])
        /// Write these bytes; the handshake is complete.
        case sendAndDone([UInt8], Session)
        /// Nothing to write; the handshake is complete.
        case done(Session)
    }
}

// MARK: - Initiator

/// The dialling side: `start()` gives msg1, `receive(msg2)` gives `.sendAndDone(msg3, session)`.
public struct HandshakeInitiator: Sendable {
    private enum State {
        case ready(ephemeral: EphemeralKey)
        case awaitingMessage2(ephemeral: EphemeralKey, message1: [UInt8])
        case done
        case failed(HandshakeError)
    }

    private let network: NetworkKey
    private let identity: SigningKeyPair
    private var state: State

    /// `random` is called once, now, and must return 32 random bytes (the ephemeral secret).
    public init(networkKey: NetworkKey = .default, identity: SigningKeyPair,
                random: () -> [UInt8] = { SecureRandom.bytes(Handshake.ephemeralSecretLength) }) {
        self.network = networkKey
        self.identity = identity
        self.state = .ready(ephemeral: EphemeralKey(random))
    }

    public var isDone: Bool { if case .done = state { true } else { false } }
    public var isFailed: Bool { if case .failed = state { true } else { false } }

    /// msg1. Call once, first.
    public mutating func start() -> [UInt8] {
        guard case .ready(let ephemeral) = state else {
            preconditionFailure("HandshakeInitiator.start() called twice or after the handshake ended")
        }
        let t1 = Transcript.mac(network, "mm-hs1", ephemeral.publicKey)
        let message1 = ephemeral.publicKey + t1
        state = .awaitingMessage2(ephemeral: ephemeral, message1: message1)
        return message1
    }

    public mutating func receive(_ message: [UInt8]) throws(HandshakeError) -> Handshake.Step {
        switch state {
        case .awaitingMessage2(let ephemeral, let message1):
            state = .done   // drops the ephemeral secret whatever happens next
            do {
                return try receiveMessage2(message, ephemeral: ephemeral, message1: message1)
            } catch {
                state = .failed(error)
                throw error
            }
        case .ready:
            throw fail(HandshakeError(.unexpectedMessage, "a message arrived before start(); the initiator speaks first"))
        case .done:
            throw fail(HandshakeError(.unexpectedMessage, "a message arrived after the handshake completed"))
        case .failed(let earlier):
            throw HandshakeError(.unexpectedMessage, "the handshake already failed (\(earlier)); close the connection")
        }
    }

    private mutating func fail(_ error: HandshakeError) -> HandshakeError {
        state = .failed(error)
        return error
    }

    private func receiveMessage2(_ message: [UInt8], ephemeral: EphemeralKey,
                                 message1: [UInt8]) throws(HandshakeError) -> Handshake.Step {
        guard message.count == Handshake.message2Length else {
            throw HandshakeError(.malformed, "msg2 is \(message.count) bytes, expected \(Handshake.message2Length)")
        }
        let responderEphemeral = Array(message[..<32])
        var keys = try Transcript(network: network, ephemeral: ephemeral, peerEphemeral: responderEphemeral,
                                  message1: message1, responderEphemeral: responderEphemeral)
        defer { keys.erase() }
        let plaintext: [UInt8]
        do {
            plaintext = try XChaCha20Poly1305.open(keys.nonce2 + Array(message[32...]), key: keys.k2)
        } catch {
            throw HandshakeError(.decryptionFailed, "msg2 does not open: altered, from another session, or from a peer with another network key")
        }
        let responder = SigningPublicKey(validatedBytes: Array(plaintext[..<32]))
        let signature = Array(plaintext[32...])
        guard responder.isValidSignature(signature, for: keys.h2) else {
            throw HandshakeError(.badSignature, "the responder's signature by \(responder) over the transcript does not verify")
        }
        guard responder != identity.publicKey else {
            throw HandshakeError(.selfConnection, "the responder's node key is our own (\(responder)): this node dialled itself")
        }
        let h3 = keys.h3(responder: responder)
        let proof = identity.publicKey.bytes + identity.signature(for: h3)
        let message3: [UInt8]
        do {
            message3 = Array(try XChaCha20Poly1305.seal(proof, key: keys.k3, nonce: keys.nonce3)
                .dropFirst(XChaCha20Poly1305.nonceLength))
        } catch {
            preconditionFailure("sealing msg3 with a 32-byte key and a 24-byte nonce cannot fail: \(error)")
        }
        let session = keys.session(role: .initiator, local: identity.publicKey, peer: responder,
                                   initiator: identity.publicKey, responder: responder)
        return .sendAndDone(message3, session)
    }
}

// MARK: - Responder

/// The accepting side: `receive(msg1)` gives `.send(msg2)`, `receive(msg3)` gives `.done(session)`.
public struct HandshakeResponder: Sendable {
    private enum State {
        case awaitingMessage1(ephemeral: EphemeralKey)
        case awaitingMessage3(keys: Transcript)
        case done
        case failed(HandshakeError)
    }

    private let network: NetworkKey
    private let identity: SigningKeyPair
    private var state: State

    /// `random` is called once, now, and must return 32 random bytes (the ephemeral secret).
    public init(networkKey: NetworkKey = .default, identity: SigningKeyPair,
                random: () -> [UInt8] = { SecureRandom.bytes(Handshake.ephemeralSecretLength) }) {
        self.network = networkKey
        self.identity = identity
        self.state = .awaitingMessage1(ephemeral: EphemeralKey(random))
    }

    public var isDone: Bool { if case .done = state { true } else { false } }
    public var isFailed: Bool { if case .failed = state { true } else { false } }

    public mutating func receive(_ message: [UInt8]) throws(HandshakeError) -> Handshake.Step {
        switch state {
        case .awaitingMessage1(let ephemeral):
            state = .done   // drops the ephemeral secret whatever happens next
            do {
                let (message2, keys) = try receiveMessage1(message, ephemeral: ephemeral)
                state = .awaitingMessage3(keys: keys)
                return .send(message2)
            } catch {
                state = .failed(error)
                throw error
            }
        case .awaitingMessage3(var keys):
            state = .done
            defer { keys.erase() }
            do {
                return .done(try receiveMessage3(message, keys: keys))
            } catch {
                state = .failed(error)
                throw error
            }
        case .done:
            state = .failed(HandshakeError(.unexpectedMessage, "a message arrived after the handshake completed"))
            throw HandshakeError(.unexpectedMessage, "a message arrived after the handshake completed")
        case .failed(let earlier):
            throw HandshakeError(.unexpectedMessage, "the handshake already failed (\(earlier)); close the connection")
        }
    }

    private func receiveMessage1(_ message: [UInt8],
                                 ephemeral: EphemeralKey) throws(HandshakeError) -> ([UInt8], Transcript) {
        guard message.count == Handshake.message1Length else {
            throw HandshakeError(.malformed, "msg1 is \(message.count) bytes, expected \(Handshake.message1Length); send nothing")
        }
        let initiatorEphemeral = Array(message[..<32])
        let expected = Transcript.mac(network, "mm-hs1", initiatorEphemeral)
        let tagMatches = expected.withUnsafeBytes { e in
            message.withUnsafeBytes { m in sodium_memcmp(e.baseAddress!, m.baseAddress! + 32, 32) == 0 }
        }
        guard tagMatches else {
            throw HandshakeError(.wrongNetworkKey, "msg1's tag does not verify: the peer does not hold our network key; send nothing")
        }
        let keys = try Transcript(network: network, ephemeral: ephemeral, peerEphemeral: initiatorEphemeral,
                                  message1: message, responderEphemeral: ephemeral.publicKey)
        let proof = identity.publicKey.bytes + identity.signature(for: keys.h2)
        do {
            let box = try XChaCha20Poly1305.seal(proof, key: keys.k2, nonce: keys.nonce2)
            return (ephemeral.publicKey + box.dropFirst(XChaCha20Poly1305.nonceLength), keys)
        } catch {
            preconditionFailure("sealing msg2 with a 32-byte key and a 24-byte nonce cannot fail: \(error)")
        }
    }

    private func receiveMessage3(_ message: [UInt8], keys: Transcript) throws(HandshakeError) -> Handshake.Session {
        guard message.count == Handshake.message3Length else {
            throw HandshakeError(.malformed, "msg3 is \(message.count) bytes, expected \(Handshake.message3Length)")
        }
        let plaintext: [UInt8]
        do {
            plaintext = try XChaCha20Poly1305.open(keys.nonce3 + message, key: keys.k3)
        } catch {
            throw HandshakeError(.decryptionFailed, "msg3 does not open: altered or from another session")
        }
        let initiator = SigningPublicKey(validatedBytes: Array(plaintext[..<32]))
        let signature = Array(plaintext[32...])
        guard initiator.isValidSignature(signature, for: keys.h3(responder: identity.publicKey)) else {
            throw HandshakeError(.badSignature, "the initiator's signature by \(initiator) over the transcript does not verify")
        }
        guard initiator != identity.publicKey else {
            throw HandshakeError(.selfConnection, "the initiator's node key is our own (\(initiator)): this node connected to itself")
        }
        return keys.session(role: .responder, local: identity.publicKey, peer: initiator,
                            initiator: initiator, responder: identity.publicKey)
    }
}

// MARK: - Shared derivations

/// An ephemeral X25519 key pair whose secret lives in a `SecretBytes` buffer, zeroed when the
/// last reference goes (the state machines drop it as soon as dh is computed).
struct EphemeralKey: Sendable {
    let secret: SecretBytes
    let publicKey: [UInt8]

    init(_ random: () -> [UInt8]) {
        var bytes = random()
        precondition(bytes.count == Handshake.ephemeralSecretLength,
                     "the handshake's random source must return \(Handshake.ephemeralSecretLength) bytes, got \(bytes.count)")
        secret = SecretBytes(count: bytes.count) { buffer in
            buffer.update(from: bytes, count: bytes.count)
        }
        zeroize(&bytes)
        publicKey = secret.withUnsafePointer { X25519.publicKey(fromSecretPointer: $0) }
    }

    func sharedSecret(with peer: [UInt8]) throws(HandshakeError) -> [UInt8] {
        precondition(peer.count == X25519.keyLength)
        Sodium.ensureInitialized()
        var shared = [UInt8](repeating: 0, count: X25519.keyLength)
        let status = secret.withUnsafePointer { sk in crypto_scalarmult(&shared, sk, peer) }
        guard status == 0 else {
            zeroize(&shared)
            throw HandshakeError(.malformed, "the peer's ephemeral key is a low-order point")
        }
        return shared
    }
}

/// Everything both sides derive from dh and h1.
struct Transcript: Sendable {
    private let network: NetworkKey
    private(set) var dh: [UInt8]
    let h1: [UInt8]
    private(set) var k2: [UInt8]
    private(set) var k3: [UInt8]
    let nonce2: [UInt8]
    let nonce3: [UInt8]
    let h2: [UInt8]

    static func mac(_ network: NetworkKey, _ label: String, _ parts: [UInt8]...,
                    outputLength: Int = 32) -> [UInt8] {
        var hasher = BLAKE2b.Hasher(key: network.bytes, outputLength: outputLength)
        hasher.update(Array(label.utf8))
        for part in parts { hasher.update(part) }
        return hasher.finalize()
    }

    init(network: NetworkKey, ephemeral: EphemeralKey, peerEphemeral: [UInt8],
         message1: [UInt8], responderEphemeral: [UInt8]) throws(HandshakeError) {
        self.network = network
        dh = try ephemeral.sharedSecret(with: peerEphemeral)
        h1 = Self.mac(network, "mm-hs-transcript", message1, responderEphemeral)
        k2 = Self.mac(network, "mm-hs-k2", dh, h1)
        k3 = Self.mac(network, "mm-hs-k3", dh, h1)
        nonce2 = Self.mac(network, "mm-hs-n2", h1, outputLength: XChaCha20Poly1305.nonceLength)
        nonce3 = Self.mac(network, "mm-hs-n3", h1, outputLength: XChaCha20Poly1305.nonceLength)
        h2 = Self.mac(network, "mm-hs-sig-r", h1)
    }

    func h3(responder: SigningPublicKey) -> [UInt8] {
        Self.mac(network, "mm-hs-sig-i", h1, responder.bytes)
    }

    func session(role: Handshake.Role, local: SigningPublicKey, peer: SigningPublicKey,
                 initiator: SigningPublicKey, responder: SigningPublicKey) -> Handshake.Session {
        Handshake.Session(
            role: role, localNodeKey: local, peerNodeKey: peer,
            initiatorToResponderKey: Self.mac(network, "mm-session-ir", dh, h1, initiator.bytes, responder.bytes),
            responderToInitiatorKey: Self.mac(network, "mm-session-ri", dh, h1, initiator.bytes, responder.bytes),
            transcriptHash: h1)
    }

    /// Zeroes dh and the handshake keys (best effort: arrays may have been copied).
    mutating func erase() {
        zeroize(&dh)
        zeroize(&k2)
        zeroize(&k3)
    }
}

extension X25519 {
    /// The X25519 public key of a 32-byte secret (`crypto_scalarmult_base`; libsodium clamps).
    public static func publicKey(fromSecret secret: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard secret.count == keyLength else {
            throw CryptoError(.invalidKeyLength, "an X25519 secret key is \(keyLength) bytes, got \(secret.count)")
        }
        return secret.withUnsafeBufferPointer { publicKey(fromSecretPointer: $0.baseAddress!) }
    }

    static func publicKey(fromSecretPointer secret: UnsafePointer<UInt8>) -> [UInt8] {
        Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: keyLength)
        _ = crypto_scalarmult_base(&publicKey, secret)
        return publicKey
    }
}
