// mentormate-hostile-peer HOST PORT ATTACK [--from ADDRESS] [--wait SECONDS] [--claim NODE-ID]
//
// A peer that speaks the real protocol (network key, handshake, sealed frames, sync messages)
// and then misbehaves, for the hostile-peer test (Tests/EndToEndTests/HostilePeerTests.swift).
// It dials HOST:PORT (from ADDRESS when given, e.g. 127.0.0.23, so that the daemon's refusals
// of this address do not touch an honest peer on 127.0.0.1), completes the handshake as an
// initiator with a fresh node key, says a v2 hello (holding nothing), and then:
//
//   forged      sends one batch holding a profile card whose signature is altered
//   oversized   sends a frame header announcing 16 MiB (over the 1 MiB + 16 limit)
//   malformed   sends a sealed frame whose sync message is garbage
//   replay      sends one valid sealed frame twice (the second is a replay)
//   flood       sends 40 batches of 256 valid records without waiting for acks: past the daemon's
//               records-per-second burst its acks are held, so the flood overruns the window
//               (against a daemon with `peer_records_per_second` under 10,000)
//   valid       sends one batch of one valid card and behaves (a control: must be stored)
//   no-work     sends one batch of one card at seq 1 of a fresh account without the proof-of-work
//               field (refused as insufficient-work when the network asks for work: an offence)
//   weak-work   the same with a work field just short of the difficulty: a nonce with at least
//               bits − 4 but fewer than bits leading zero bits
//   stream      an honest but greedy peer: sends valid records (--records N, default 20,000: one card, then likes of strangers, which no later record supersedes; signed
//               first) as fast as the daemon's acks allow, keeping the window full; prints
//               `result stream sent=N acked=N seconds=S closed=true|false`
//   authors     an honest-looking peer announcing many accounts: --records N fresh accounts
//               (default 200,000), one card each at seq 1 with valid work at --network-work-bits,
//               made before dialling on every core; then sent like `stream` (the window kept
//               full); prints `made=N in=S` first and then the `stream` result line
//   chat        an account forging its way into a conversation (issue 11, item 2): signs with
//               the account key file --key PATH (a real account's, e.g. from a daemon's state
//               dir) one chat record to --to ID at --seq N (the account's next seq), with payload
//               fields of its choosing: --peer-seq P, --answers HEX (the record ID of the like it
//               claims to answer; left out of the payload when not given, as in the old format)
//               and --text TEXT; sends it in one batch. Prints `record=HEX` (its ID) first.
//   quiz-claim  with --key PATH --seq N: one quiz result (type 13) of today's quiz answered all
//               wrong with a field 3 "score 10" added, signed correctly by that key; prints
//               `claim day=…` first
//   fork-low    (with --author-seed HEX, 64 hex digits) signs three different cards with seq 1
//   fork-high   of that author (a fork; the same three for the same seed) and sends the two with
//               the lowest record IDs (fork-low) or the one with the highest (fork-high): given
//               to two honest nodes, they make one of them receive a third variant (equivocation)
//               when the two link; prints `variants=ID,ID,...` (all three, ascending) first
//   fork-hidden-a (with --author-seed) the hidden-fork attack on sync v1 (HiddenFork.swift): one
//   fork-hidden-b author's 70 card edits in one batch, chain a or chain b, which differ at some
//               seqs (the last among them) and have equal v1 digests; prints
//               `author=ID differ=SEQ,... digest-a=HEX digest-b=HEX` first
//   v1-hello    says a sync protocol v1 hello (`01 01 00 00000000`) instead of v2's, then waits
//   not-now     sends one batch of valid records that the daemon cannot take now through no fault
//               of ours: seq 5000 of a fresh author (a gap past 4096), a card dated 48 h ahead
//               (past the hold bound), a card dated 2 h ahead (held until due) and a valid card
//               (stored); then behaves
//   photos      card edits of one author, each naming a new photo (--records N, default 5, of
//               --photo-kb KiB, default 1024), one batch each, the next once the daemon has
//               fetched the last photo (it serves every `wantBlob`); prints
//               `result photos edits=N asked=K current=true|false stored=true|false`
//   backlog     the same edits as a backlog: each batch after the last was acked, then a
//               reconciliation round and `caughtUp` (the daemon looks for photos once caught up;
//               `photos` runs its round before the edits), photos served when asked; `asked`
//               counts photos the daemon asked for, `current` whether it asked only for the last
//   hello100k   after hello, the largest recon message there is: one `ids` item at the root
//               listing 120,000 short IDs (--records N for another number) the daemon lacks
//               (it answers with a `need` as large), then keeps the link up until --wait
//   summaries   after hello, recon messages of 1,024 short IDs (8 KiB) each, every one
//               sent as soon as the daemon answered the last (by the ping-pong rule), 400 of them:
//               a flood within the protocol but over the rate
//   wants       after hello, 4,000 want messages at wire speed
//   grafts      after hello, 2,000 lazy-push messages at wire speed: `ihave` and `graft` of
//               1,024 random record IDs each (none held) and `prune`s, in turn
//   heres       after hello, --records N `here` messages (default 20,000) naming 1,024 accounts each, at wire speed
//   duplicates  one valid card sent again and again (--records N copies, default 8,192, 256 a
//               batch, each batch after the last was acked), then the author's next card;
//               prints `result duplicates copies=N acked=K closed=true|false`
//   wrong-blob  sends a valid card naming a photo (a PNG's hash and size), then answers the
//               daemon's wantBlob for it with other PNG bytes of the same size
//   silent-blob sends a valid card naming a photo, then ignores the daemon's wantBlob for it (it
//               never answers) while sending keep-alives, until the daemon closes the link or
//               --wait s pass; prints `result silent-blob closed=true|false after=S` (seconds from
//               the daemon's request to its close)
//   forged-msg3 an insider impersonating another node: checks the daemon's msg2 honestly, then
//               sends a msg3 that claims the node key given with --claim (another node's, e.g.
//               an honest peer's) but is signed by this tool's own key (it lacks the claimed
//               node's secret). Were it accepted, it says hello and sends one valid card under
//               the frame keys of that claimed identity. `received` counts the frames that open
//               with those keys; a daemon that checks the signature closes with `received=0`.
//
// Records at seq 1 carry the proof of work of the network (the built-in key) at
// --network-work-bits N (default 8, the difficulty the end-to-end tests start their daemons
// with; give the daemon's value, e.g. 23 for a network at the default).
//
// It then reads until the daemon closes the connection or --wait passes (default 5 s), and
// prints one line:  `result ATTACK closed=true|false after=MS received=N node=mm1...`
// where `node` is the daemon's node ID as learned in the handshake and `received` the sync
// messages it sent us. Exit status: 0 when the attack ran (whatever the daemon did), 1 when
// it could not (connect or handshake failed: message on stderr), 2 for bad arguments.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MentorCore
import MentorCrypto

func printError(_ message: String) {
    let line = Array("mentormate-hostile-peer: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    printError(message)
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var from: String?
var wait = 5.0
var positional: [String] = []
var streamRecords = 20_000
var chatOptions: [String: String] = [:]
var authorSeed: [UInt8]?
var recordsGiven = false
var photoKiB = 1024
var claim: String?
var workBits = 8
while !arguments.isEmpty {
    let a = arguments.removeFirst()
    switch a {
    case "--key", "--to", "--seq", "--peer-seq", "--answers", "--text":
        guard !arguments.isEmpty else { fail("\(a) needs a value", status: 2) }
        chatOptions[String(a.dropFirst(2))] = arguments.removeFirst()
    case "--from": from = arguments.isEmpty ? nil : arguments.removeFirst()
    case "--wait": wait = arguments.isEmpty ? -1 : Double(arguments.removeFirst()) ?? -1
    case "--records":
        streamRecords = arguments.isEmpty ? -1 : Int(arguments.removeFirst()) ?? -1
        recordsGiven = true
    case "--photo-kb": photoKiB = arguments.isEmpty ? -1 : Int(arguments.removeFirst()) ?? -1
    case "--author-seed": authorSeed = arguments.isEmpty ? nil : Hex.decode(arguments.removeFirst())
    case "--claim": claim = arguments.isEmpty ? "" : arguments.removeFirst()
    case "--network-work-bits": workBits = arguments.isEmpty ? -1 : Int(arguments.removeFirst()) ?? -1
    default: positional.append(a)
    }
}
let attacks = ["forged", "oversized", "malformed", "replay", "flood", "valid", "stream", "chat", "fork-low", "fork-high",
               "fork-hidden-a", "fork-hidden-b", "v1-hello", "not-now",
               "photos", "backlog", "hello100k", "summaries", "wants", "duplicates", "forged-msg3", "wrong-blob", "silent-blob", "heres", "grafts",
               "no-work", "weak-work", "authors", "quiz-claim"]
guard positional.count == 3, let port = UInt16(positional[1]), attacks.contains(positional[2]), wait > 0,
      streamRecords > 0, (1...4096).contains(photoKiB), (0...AccountWork.maxBits).contains(workBits) else {
    fail("usage: mentormate-hostile-peer HOST PORT \(attacks.joined(separator: "|")) [--from ADDRESS] [--wait SECONDS]", status: 2)
}
let host = positional[0], attack = positional[2]
/// What the network asks of an account's first record (every writer here meets it).
let accountWork = AccountWork.Requirement(bits: workBits, network: .default)
if attack.hasPrefix("fork-"), authorSeed?.count != 32 {
    fail("\(attack) needs --author-seed with 64 hex digits (the same for both halves of the fork)", status: 2)
}
/// The node key a forged msg3 claims (--claim, a node ID as `mentormate status` prints it).
let claimedKey: SigningPublicKey? = {
    guard let claim else { return nil }
    do {
        guard case .exact(let key) = try AccountID.parse(claim) else {
            fail("--claim needs a complete node ID (mm1…, 61 characters), got '\(claim)'", status: 2)
        }
        return try SigningPublicKey(bytes: key.bytes)
    } catch {
        fail("--claim: \(error)", status: 2)
    }
}()
if attack == "forged-msg3" && claimedKey == nil {
    fail("forged-msg3 needs --claim NODE-ID: the node key the forged msg3 claims", status: 2)
}
// Prepared before dialling, so that the link is never silent while they are made.
let preparedShortIDs: [UInt64] = switch attack {
case "hello100k": shortIDs(recordsGiven ? streamRecords : 120_000)
case "summaries": shortIDs(1_024)
default: []
}
/// authors: one first card per fresh account, each with the network's work (all cores).
let preparedAuthors: [[UInt8]] = attack == "authors" ? manyAuthors(recordsGiven ? streamRecords : 200_000) : []

func manyAuthors(_ count: Int) -> [[UInt8]] {
    var began = timespec()
    clock_gettime(CLOCK_MONOTONIC, &began)
    let lanes = 16
    final class Box: @unchecked Sendable { var parts = [[[UInt8]]](repeating: [], count: 16) }
    let box = Box()
    let now = UInt64(time(nil)) * 1000
    DispatchQueue.concurrentPerform(iterations: lanes) { lane in
        var out: [[UInt8]] = []
        for i in stride(from: lane, to: count, by: lanes) {
            var w = RecordWriter(keys: SigningKeyPair.generate(), accountWork: accountWork)
            do { out.append(try w.profile(ProfileCard(name: "Author \(i)", role: .tutor, courses: ["EVIL 101"]), at: now).encoded) }
            catch { fail("signing: \(error)") }
        }
        box.parts[lane] = out
    }
    var now2 = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now2)
    let seconds = Double(now2.tv_sec - began.tv_sec) + Double(now2.tv_nsec - began.tv_nsec) / 1e9
    print("made=\(count) in=\(Double(Int(seconds * 100)) / 100)")
    fflush(nil)   // a pipe is block-buffered: the test waits for this line to know the flood starts
    return box.parts.flatMap { $0 }
}
let v2Hello = SyncMessage.hello(salt: randomBytes(SyncMessage.saltBytes), held: 0)

// MARK: Socket (blocking, IPv4)

func address(_ text: String, _ port: UInt16) -> sockaddr_in {
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_port = in_port_t(port.bigEndian)
    guard inet_pton(AF_INET, text, &a.sin_addr) == 1 else { fail("\(text) is not an IPv4 address", status: 2) }
    return a
}

let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
guard fd >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
if let from {
    var local = address(from, 0)
    let bound = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { fail("bind \(from): \(String(cString: strerror(errno)))") }
}
var remote = address(host, port)
let connected = withUnsafePointer(to: &remote) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
}
guard connected == 0 else { fail("connect \(host):\(port): \(String(cString: strerror(errno)))") }

func writeAll(_ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        offset += n
    }
    return true
}

/// Reads what is there within `timeout`; nil at end of stream or on an error.
func readSome(timeout: Double) -> [UInt8]? {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, Int32(timeout * 1000))
    if ready == 0 { return [] }
    var buffer = [UInt8](repeating: 0, count: 65536)
    let n = read(fd, &buffer, buffer.count)
    if n <= 0 { return nil }
    return Array(buffer[..<n])
}

func readExactly(_ count: Int, timeout: Double) -> [UInt8]? {
    var out: [UInt8] = []
    let deadline = Double(clock()) / Double(CLOCKS_PER_SEC) + timeout
    while out.count < count {
        guard let chunk = readSome(timeout: timeout) else { return nil }
        if chunk.isEmpty && Double(clock()) / Double(CLOCKS_PER_SEC) > deadline { return nil }
        out += chunk
    }
    return out
}

// MARK: Handshake

let identity = SigningKeyPair.generate()

/// forged-msg3: msg1 and msg2 as an honest initiator (with an ephemeral secret we keep), then a
/// msg3 built by hand from the documented layout (Handshake.swift, PROTOCOL.md §13.1) that claims
/// `claimed` and carries our own signature over h3.
@MainActor func forgedMessage3(claiming claimed: SigningPublicKey) -> Never {
    let ephemeralSecret = SecureRandom.bytes(Handshake.ephemeralSecretLength)
    var honest = HandshakeInitiator(identity: identity, random: { ephemeralSecret })
    let message1 = honest.start()
    guard writeAll(message1) else { fail("sending msg1 failed") }
    guard let message2 = readExactly(Handshake.message2Length, timeout: 5) else {
        fail("the daemon closed the connection during the handshake (wrong network key, or this address is refused)")
    }
    let responder: SigningPublicKey
    do {
        guard case .sendAndDone(_, let s) = try honest.receive(message2) else { fail("unexpected handshake step") }
        responder = s.peerNodeKey   // msg2 verified: the daemon holds the network key and proved R
    } catch {
        fail("handshake: \(error)")
    }
    func mac(_ label: String, _ parts: [UInt8]..., length: Int = 32) -> [UInt8] {
        BLAKE2b.hash(Array(label.utf8) + parts.joined(), key: NetworkKey.default.bytes, outputLength: length)
    }
    let responderEphemeral = Array(message2.prefix(32))
    let dh: [UInt8], message3: [UInt8]
    do {
        dh = try X25519.sharedSecret(secretKey: ephemeralSecret, publicKey: responderEphemeral)
    } catch { fail("X25519: \(error)") }
    let h1 = mac("mm-hs-transcript", message1, responderEphemeral)
    let proof = claimed.bytes + identity.signature(for: mac("mm-hs-sig-i", h1, responder.bytes))
    do {
        message3 = Array(try XChaCha20Poly1305.seal(proof, key: mac("mm-hs-k3", dh, h1), nonce: mac("mm-hs-n3", h1, length: 24))
            .dropFirst(XChaCha20Poly1305.nonceLength))
    } catch { fail("sealing msg3: \(error)") }
    guard writeAll(message3) else { fail("sending msg3 failed") }
    // What a daemon that took us for `claimed` would expect: frames under k_ir/k_ri of (claimed, R).
    var sealer = FrameSealer(key: mac("mm-session-ir", dh, h1, claimed.bytes, responder.bytes))
    var opener = FrameOpener(key: mac("mm-session-ri", dh, h1, claimed.bytes, responder.bytes))
    var writer = RecordWriter(keys: SigningKeyPair.generate(), accountWork: accountWork)
    do {
        _ = writeAll(try sealer.seal(v2Hello.encoded))
        _ = writeAll(try sealer.seal(SyncMessage.records([card(&writer, "Impostor")]).encoded))
    } catch { fail("sealing: \(error)") }
    var began = timespec()
    clock_gettime(CLOCK_MONOTONIC, &began)
    func elapsed() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return (now.tv_sec - began.tv_sec) * 1000 + (now.tv_nsec - began.tv_nsec) / 1_000_000
    }
    var decoder = FrameDecoder()
    var received = 0, closed = false
    while Double(elapsed()) < wait * 1000 {
        guard let bytes = readSome(timeout: 0.05) else { closed = true; break }
        do {
            for body in try decoder.feed(bytes) {
                _ = try opener.open(body)
                received += 1
            }
        } catch {
            printError("the daemon sent a frame that does not open with the claimed identity's keys: \(error)")
            closed = true
            break
        }
    }
    print("result forged-msg3 closed=\(closed) after=\(elapsed()) received=\(received) node=\(responder.key.id) claimed=\(claimed.key.id)")
    close(fd)
    exit(0)
}
if attack == "forged-msg3", let claimedKey { forgedMessage3(claiming: claimedKey) }

var initiator = HandshakeInitiator(identity: identity)
guard writeAll(initiator.start()) else { fail("sending msg1 failed") }
// msg2 is exactly `Handshake.message2Length` bytes; the responder sends nothing more before msg3.
guard let message2 = readExactly(Handshake.message2Length, timeout: 5) else {
    fail("the daemon closed the connection during the handshake (wrong network key, or this address is refused)")
}
let session: Handshake.Session
do {
    switch try initiator.receive(message2) {
    case .sendAndDone(let message3, let s):
        guard writeAll(message3) else { fail("sending msg3 failed") }
        session = s
    default: fail("unexpected handshake step")
    }
} catch {
    fail("handshake: \(error)")
}
var sealer = FrameSealer(session: session)
var opener = FrameOpener(session: session)
var decoder = FrameDecoder()

@MainActor func sendMessage(_ message: SyncMessage) {
    do { _ = writeAll(try sealer.seal(message.encoded)) } catch { fail("sealing: \(error)") }
}

func card(_ writer: inout RecordWriter, _ name: String) -> [UInt8] {
    do {
        return try writer.profile(ProfileCard(name: name, role: .tutor, courses: ["EVIL 101"]),
                                  at: UInt64(time(nil)) * 1000).encoded
    } catch { fail("signing: \(error)") }
}

// MARK: Attack

/// The sync messages the daemon sent within `timeout` (empty frames, keep-alives, skipped); nil
/// once it closed the link.
@MainActor func incoming(timeout: Double) -> [SyncMessage]? {
    guard let bytes = readSome(timeout: timeout) else { return nil }
    var out: [SyncMessage] = []
    do {
        for body in try decoder.feed(bytes) {
            let plaintext = try opener.open(body)
            if !plaintext.isEmpty { out.append(try SyncMessage.decode(plaintext)) }
        }
    } catch {
        printError("the daemon sent a bad frame: \(error)")
        return nil
    }
    return out
}

var writer = RecordWriter(keys: SigningKeyPair.generate(), accountWork: accountWork)

/// Distinct PNG-looking photos and the card edits naming them, signed in order.
@MainActor func photoEdits(_ count: Int) -> (photos: [[UInt8]: [UInt8]], order: [[UInt8]], edits: [[UInt8]]) {
    var photos: [[UInt8]: [UInt8]] = [:], order: [[UInt8]] = [], edits: [[UInt8]] = []
    for i in 0..<count {
        var data: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        data += randomBytes(photoKiB * 1024 - data.count)
        data[8] = UInt8(i & 0xFF)
        let hash = BLAKE2b.hash(data, outputLength: 32)
        photos[hash] = data
        order.append(hash)
        let ref = PhotoRef(hash: hash, size: UInt32(data.count), format: .png)
        do {
            edits.append(try writer.profile(ProfileCard(name: "Photo \(i)", role: .tutor, courses: ["EVIL 101"], photos: [ref]),
                                            at: UInt64(time(nil)) * 1000).encoded)
        } catch { fail("signing: \(error)") }
    }
    return (photos, order, edits)
}

/// Sends a photo in `blob` parts (or "not held").
@MainActor func serve(_ hash: [UInt8], from photos: [[UInt8]: [UInt8]]) {
    guard let data = photos[hash] else {
        sendMessage(.blob(hash: hash, total: 0, offset: 0, bytes: []))
        return
    }
    var offset = 0
    while offset < data.count {
        let end = min(offset + SyncLimits.maxBlobPart, data.count)
        sendMessage(.blob(hash: hash, total: UInt32(data.count), offset: UInt32(offset), bytes: Array(data[offset..<end])))
        offset = end
    }
}

/// Card edits naming new photos, one batch each: `live` waits for each photo to be fetched
/// (or 3 s) before the next edit; a backlog (hello claiming all of them) only for the ack.
@MainActor func photoAttack(backlog: Bool) -> Never {
    let count = recordsGiven ? streamRecords : 5
    let (photos, order, edits) = photoEdits(count)
    sendMessage(v2Hello)
    var asked: [[UInt8]] = []
    var closed = false
    var acks = 0
    func pump(until done: () -> Bool, seconds: Double) {
        var waited = 0.0
        while !closed, !done(), waited < seconds {
            guard let messages = incoming(timeout: 0.05) else { closed = true; return }
            waited += 0.05
            for m in messages {
                switch m {
                case .wantBlob(let hash):
                    asked.append(hash)
                    serve(hash, from: photos)
                case .ack: acks += 1
                case .recon: reconAnswers += 1
                default: break
                }
            }
        }
    }
    var reconAnswers = 0
    /// A round as the initiator holding nothing (the daemon sends us its records), then
    /// `caughtUp`: the daemon's session with us is caught up once our batches are applied.
    func round() {
        sendMessage(.recon([ReconItem(depth: 0, prefix: 0, .ids([]))]))
        pump(until: { reconAnswers >= 1 }, seconds: 5)
        sendMessage(.recon([]))
        sendMessage(.caughtUp)
    }
    if !backlog { round() }
    for (i, edit) in edits.enumerated() where !closed {
        sendMessage(.records([edit]))
        if backlog {
            pump(until: { acks > i }, seconds: 5)
        } else {
            pump(until: { asked.contains(order[i]) }, seconds: 3)
        }
    }
    if backlog { round() }
    pump(until: { false }, seconds: wait)
    let current = !asked.isEmpty && asked.allSatisfy { $0 == order.last }
    print("result \(attack) edits=\(count) asked=\(asked.count) current=\(current) closed=\(closed)")
    close(fd)
    exit(0)
}

func randomBytes(_ count: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: max(0, count))
    var state = UInt64(UInt32(truncatingIfNeeded: time(nil))) &* 6364136223846793005 &+ UInt64(getpid())
    for i in out.indices {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        out[i] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return out
}

/// Keys of accounts the daemon has never heard of (random, ascending).
func strangers(_ count: Int) -> [PublicKey] {
    var keys: [PublicKey] = []
    keys.reserveCapacity(count)
    let bytes = randomBytes(count * 32)
    for i in 0..<count { keys.append(PublicKey(bytes: Array(bytes[i * 32..<(i + 1) * 32]))!) }
    return keys.sorted()
}

/// Random short IDs (strictly ascending) of records the daemon does not hold.
func shortIDs(_ count: Int) -> [UInt64] {
    let bytes = randomBytes(count * 8)
    var ids = (0..<count).map { i in bytes[i * 8..<(i + 1) * 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    ids.sort()
    var out: [UInt64] = []
    for id in ids where out.last != id { out.append(id) }
    return out
}

if attack == "photos" || attack == "backlog" { photoAttack(backlog: attack == "backlog") }
if attack == "duplicates" {
    sendMessage(v2Hello)
    let copies = recordsGiven ? streamRecords : 8_192
    let first = card(&writer, "Dup One"), second = card(&writer, "Dup Two")
    var acked = 0, closed = false
    func awaitAck(_ n: Int) {
        var waited = 0.0
        while !closed, acked < n, waited < 10 {
            guard let messages = incoming(timeout: 0.05) else { closed = true; return }
            waited += 0.05
            for case .ack(let count) in messages { acked += Int(count) }
        }
    }
    var batches = 0
    for start in stride(from: 0, to: copies, by: SyncLimits.maxBatchRecords) where !closed {
        sendMessage(.records(Array(repeating: first, count: min(SyncLimits.maxBatchRecords, copies - start))))
        batches += 1
        awaitAck(batches)
    }
    sendMessage(.records([second]))
    awaitAck(batches + 1)
    print("result duplicates copies=\(copies) acked=\(acked) closed=\(closed)")
    close(fd)
    exit(0)
}
if attack == "v1-hello" {
    // A v1 hello (version 1, no more parts, an empty vector), as an old build sends it.
    do { _ = writeAll(try sealer.seal([0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])) } catch { fail("sealing: \(error)") }
} else {
    sendMessage(v2Hello)
}
switch attack {
case "v1-hello":
    break
case "hello100k":
    sendMessage(.recon([ReconItem(depth: 0, prefix: 0, .ids(preparedShortIDs))]))
    let line = Array("hello sent ids=\(preparedShortIDs.count) parts=1\n".utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
case "summaries":
    // Each message waits for the daemon's answer (one recon answers each), as an honest
    // round does; the round never ends because every message names IDs.
    let flood = SyncMessage.recon([ReconItem(depth: 0, prefix: 0, .ids(preparedShortIDs))])
    var answered = 0, gone = false
    for sent in 0..<400 where !gone {
        sendMessage(flood)
        var waited = 0.0
        while answered <= sent, waited < 5 {
            guard let messages = incoming(timeout: 0.05) else { gone = true; break }
            waited += 0.05
            for case .recon in messages { answered += 1 }
        }
    }
case "wants":
    for i in 0..<4_000 { sendMessage(.want(author: writer.author, from: UInt64(i % 100 + 1))) }
case "grafts":
    let ids = (0..<SyncLimits.maxTreeIDs).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }.sorted { $0.lexicographicallyPrecedes($1) }
    for i in 0..<2_000 { sendMessage(i % 3 == 0 ? .ihave(ids) : i % 3 == 1 ? .graft(ids) : .prune) }
case "heres":
    // `here` messages naming 1,024 accounts each (the most one may), at wire speed: --records N
    // of them (default 20,000), each a different set.
    let count = recordsGiven ? streamRecords : 20_000
    let sets = (0..<8).map { _ in strangers(SyncLimits.maxHereAccounts) }
    for i in 0..<count { sendMessage(.here(sets[i % sets.count])) }
case "forged":
    var bytes = card(&writer, "Mallory")
    bytes[bytes.count - 1] ^= 0x01
    sendMessage(.records([bytes]))
case "oversized":
    _ = writeAll([0x01, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 64))
case "malformed":
    do { _ = writeAll(try sealer.seal([0x7F, 0x00, 0x01, 0x02])) } catch { fail("sealing: \(error)") }
case "replay":
    let frame: [UInt8]
    do { frame = try sealer.seal(SyncMessage.want(author: writer.author, from: 1).encoded) } catch { fail("sealing: \(error)") }
    _ = writeAll(frame)
    _ = writeAll(frame)
case "flood":
    // Valid records, signed first and then sent at wire speed, never waiting for an ack: past the
    // daemon's records-per-second burst it holds its acks back, and the batches after that
    // overrun the window.
    var batches: [[[UInt8]]] = []
    for _ in 0..<40 {
        var batch: [[UInt8]] = []
        for _ in 0..<SyncLimits.maxBatchRecords { batch.append(card(&writer, "Flood \(writer.lastSeq + 1)")) }
        batches.append(batch)
    }
    for batch in batches { sendMessage(.records(batch)) }
case "valid":
    sendMessage(.records([card(&writer, "Valid Val")]))
case "no-work", "weak-work":
    let keys = SigningKeyPair.generate()
    var work: UInt64?
    if attack == "weak-work" {
        // The first nonce within 4 bits of the difficulty but short of it: a near miss.
        let floor = AccountWork.Requirement(bits: max(0, workBits - 4), network: .default)
        var from: UInt64 = 0
        while true {
            guard let nonce = AccountWork.solve(account: keys.publicKey.key, requirement: floor, startingAt: from) else { fail("no nonce found") }
            if AccountWork.bits(account: keys.publicKey.key, nonce: nonce, network: floor.network) < workBits { work = nonce; break }
            from = nonce + 1
        }
    }
    var bare = RecordWriter(keys: keys)   // no requirement: the card goes out as given
    do {
        sendMessage(.records([try bare.profile(ProfileCard(name: "Cheap Cheng", role: .tutor, courses: ["EVIL 101"], work: work),
                                               at: UInt64(time(nil)) * 1000).encoded]))
    } catch { fail("signing: \(error)") }
case "chat":
    guard let keyPath = chatOptions["key"], let to = chatOptions["to"], let seq = chatOptions["seq"].flatMap(UInt64.init), seq >= 1,
          let peerSeq = chatOptions["peer-seq"].flatMap(UInt64.init), let text = chatOptions["text"] else {
        fail("chat needs --key PATH --to ID --seq N (≥ 1) --peer-seq P --text TEXT [--answers HEX]", status: 2)
    }
    let keys: SigningKeyPair
    do { keys = try KeyFile.read(from: keyPath) } catch { fail("reading \(keyPath): \(error)", status: 2) }
    guard case .exact(let recipient)? = try? AccountID.parse(to) else { fail("--to \(to) is not a full account ID", status: 2) }
    var answers: [UInt8]?
    if let hex = chatOptions["answers"] {
        guard let bytes = Hex.decode(hex) else { fail("--answers \(hex) is not hex", status: 2) }
        answers = bytes
    }
    var sender = RecordWriter(keys: keys, lastSeq: seq - 1, accountWork: accountWork)
    let record: VerifiedRecord
    do {
        record = try sender.sealed(ChatMessage.self, ChatPayload(recipient: recipient, peerSeq: peerSeq, answers: answers, text: text),
                                   at: UInt64(time(nil)) * 1000)
    } catch { fail("signing: \(error)", status: 2) }
    print("record=\(Hex.encode(record.id))")
    sendMessage(.records([record.encoded]))
case "quiz-claim":
    // A quiz result claiming a score its answers do not give (PROTOCOL.md §15.4): today's
    // quiz answered all wrong, plus a field 3 "score 10" that no schema has; signed correctly.
    guard let keyPath = chatOptions["key"], let seq = chatOptions["seq"].flatMap(UInt64.init), seq >= 1 else {
        fail("quiz-claim needs --key PATH --seq N (≥ 1)", status: 2)
    }
    let keys: SigningKeyPair
    do { keys = try KeyFile.read(from: keyPath) } catch { fail("reading \(keyPath): \(error)", status: 2) }
    let now = UInt64(time(nil)) * 1000
    let day = Quiz.day(millis: now)
    let wrong: [Int?] = (QuizSeed.questions(day: day) ?? []).map { ($0.answer + 1) % Quiz.choiceCount }
    let body = QuizResult(day: day, answers: wrong).body + [3, 0, 1, 10]
    let message = Record.signedBytes(type: .quizResult, account: nil, author: keys.publicKey.key, seq: seq, timestamp: now,
                                     clock: VectorClock(), body: body)
    let bytes = message + keys.signature(for: message)
    print("claim day=\(day) answers-right=0 claimed=10")
    sendMessage(.records([bytes]))
case "fork-low", "fork-high":
    // Three variants of seq 1, all signed by one author at one fixed time, so that the two
    // halves of the attack (two runs with the same seed) sign exactly the same three records.
    let keys: SigningKeyPair
    do { keys = try SigningKeyPair(seed: authorSeed ?? []) } catch { fail("--author-seed: \(error)", status: 2) }
    var variants: [VerifiedRecord] = []
    for name in ["Variant One", "Variant Two", "Variant Three"] {
        var w = RecordWriter(keys: keys, accountWork: accountWork)
        do {
            variants.append(try w.profile(ProfileCard(name: name, role: .tutor, courses: ["FORK 101"]), at: 1_700_000_000_000))
        } catch { fail("signing: \(error)") }
    }
    variants.sort { $0.id.lexicographicallyPrecedes($1.id) }
    print("variants=\(variants.map { Hex.encode($0.id) }.joined(separator: ","))")
    let chosen = attack == "fork-low" ? Array(variants.prefix(2)) : [variants[2]]
    sendMessage(.records(chosen.map(\.encoded)))
case "fork-hidden-a", "fork-hidden-b":
    let keys: SigningKeyPair
    do { keys = try SigningKeyPair(seed: authorSeed ?? []) } catch { fail("--author-seed: \(error)", status: 2) }
    let chains: (a: [VerifiedRecord], b: [VerifiedRecord], differ: [Int])
    do { chains = try HiddenFork.chains(keys: keys, work: accountWork) } catch { fail("signing: \(error)", status: 2) }
    let chain = attack == "fork-hidden-a" ? chains.a : chains.b
    print("author=\(keys.publicKey.key.id) differ=\(chains.differ.map(String.init).joined(separator: ",")) " +
          "digest-a=\(String(HiddenFork.v1Digest(chains.a), radix: 16)) digest-b=\(String(HiddenFork.v1Digest(chains.b), radix: 16))")
    sendMessage(.records(chain.map(\.encoded)))
case "not-now":
    let now = UInt64(time(nil)) * 1000
    var batch: [[UInt8]] = []
    do {
        var gap = RecordWriter(keys: SigningKeyPair.generate(), lastSeq: 4999, accountWork: accountWork)
        batch.append(try gap.profile(ProfileCard(name: "Gap Gus", role: .tutor, courses: ["EVIL 101"]), at: now).encoded)
        var far = RecordWriter(keys: SigningKeyPair.generate(), accountWork: accountWork)
        batch.append(try far.profile(ProfileCard(name: "Far Fay", role: .tutor, courses: ["EVIL 101"]), at: now + 48 * 3_600_000).encoded)
        var soon = RecordWriter(keys: SigningKeyPair.generate(), accountWork: accountWork)
        batch.append(try soon.profile(ProfileCard(name: "Soon Sam", role: .tutor, courses: ["EVIL 101"]), at: now + 2 * 3_600_000).encoded)
    } catch { fail("signing: \(error)") }
    batch.append(card(&writer, "Valid Val"))
    sendMessage(.records(batch))
case "wrong-blob":
    func png(_ fill: UInt8) -> [UInt8] { [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: fill, count: 1000) }
    let promised = png(1), served = png(2)
    let ref = PhotoRef(hash: BLAKE2b.hash(promised, outputLength: 32), size: UInt32(promised.count), format: .png)
    // A round holding nothing, as an honest initiator opens one: the daemon looks for photos
    // once its session with us is caught up (our `caughtUp` follows its answer).
    sendMessage(.recon([ReconItem(depth: 0, prefix: 0, .ids([]))]))
    var roundDone = false
    do {
        sendMessage(.records([try writer.profile(ProfileCard(name: "Swapper", role: .tutor, courses: ["EVIL 101"], photos: [ref]),
                                                 at: UInt64(time(nil)) * 1000).encoded]))
    } catch { fail("signing: \(error)") }
    // Wait for the daemon to ask for the photo, then serve the wrong bytes under its hash.
    var asked = false
    var waited = 0.0
    while !asked && waited < wait {
        guard let bytes = readSome(timeout: 0.05) else { fail("the daemon closed the connection before it asked for the photo") }
        waited += 0.05
        do {
            for body in try decoder.feed(bytes) {
                let plaintext = try opener.open(body)
                guard !plaintext.isEmpty else { continue }
                let message = try SyncMessage.decode(plaintext)
                if case .wantBlob(let hash) = message, hash == ref.hash { asked = true }
                if case .recon = message, !roundDone {
                    roundDone = true
                    sendMessage(.recon([]))
                    sendMessage(.caughtUp)
                }
            }
        } catch { fail("the daemon sent a bad frame: \(error)") }
    }
    guard asked else { fail("the daemon did not ask for the photo within \(wait) s") }
    sendMessage(.blob(hash: ref.hash, total: UInt32(served.count), offset: 0, bytes: served))
case "silent-blob":
    let promised = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 3, count: 1000)
    let ref = PhotoRef(hash: BLAKE2b.hash(promised, outputLength: 32), size: UInt32(promised.count), format: .png)
    do {
        sendMessage(.records([try writer.profile(ProfileCard(name: "Silent Sid", role: .tutor, courses: ["EVIL 101"], photos: [ref]),
                                                 at: UInt64(time(nil)) * 1000).encoded]))
    } catch { fail("signing: \(error)") }
    var askedAt: Double?
    var waited = 0.0, sinceKeepAlive = 0.0
    var closed = false
    while waited < wait {
        guard let bytes = readSome(timeout: 0.1) else { closed = true; break }
        waited += 0.1; sinceKeepAlive += 0.1
        if sinceKeepAlive >= 4 {
            do { _ = writeAll(try sealer.seal([])) } catch { fail("sealing: \(error)") }
            sinceKeepAlive = 0
        }
        do {
            for body in try decoder.feed(bytes) {
                let plaintext = try opener.open(body)
                if !plaintext.isEmpty, case .wantBlob(let hash) = try SyncMessage.decode(plaintext), hash == ref.hash, askedAt == nil {
                    askedAt = waited
                }
            }
        } catch { fail("the daemon sent a bad frame: \(error)") }
    }
    guard let askedAt else { fail("the daemon did not ask for the photo within \(wait) s") }
    print("result silent-blob closed=\(closed) after=\(Int((waited - askedAt).rounded()))")
    exit(0)
case "stream", "authors":
    var pending: [[[UInt8]]] = []
    for start in stride(from: 0, to: preparedAuthors.count, by: SyncLimits.maxBatchRecords) {
        pending.append(Array(preparedAuthors[start..<min(start + SyncLimits.maxBatchRecords, preparedAuthors.count)]))
    }
    // One card, then likes of distinct strangers: records no later one supersedes, so all of
    // them stay stored (a stream of card edits would compact to one card, PROTOCOL §9.3).
    while attack == "stream", pending.count * SyncLimits.maxBatchRecords < streamRecords {
        var batch: [[UInt8]] = []
        for _ in 0..<SyncLimits.maxBatchRecords {
            if writer.lastSeq == 0 { batch.append(card(&writer, "Stream")); continue }
            do {
                let target = try SigningKeyPair(seed: SecureRandom.bytes(32)).publicKey.key
                batch.append(try writer.like(target, at: UInt64(time(nil)) * 1000).encoded)
            } catch { fail("signing: \(error)") }
        }
        pending.append(batch)
    }
    var began = timespec()
    clock_gettime(CLOCK_MONOTONIC, &began)
    func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec - began.tv_sec) + Double(now.tv_nsec - began.tv_nsec) / 1e9
    }
    var inFlight = 0, sent = 0, acked = 0, ended = false
    pending.reverse()
    while seconds() < wait, !(pending.isEmpty && inFlight == 0) {
        while inFlight < SyncSettings().window, let batch = pending.popLast() {
            sendMessage(.records(batch))
            inFlight += 1
            sent += batch.count
        }
        guard let bytes = readSome(timeout: 0.05) else { ended = true; break }
        do {
            for body in try decoder.feed(bytes) {
                let plaintext = try opener.open(body)
                if !plaintext.isEmpty, case .ack(let count) = try SyncMessage.decode(plaintext) {
                    inFlight -= Int(count)
                    acked += Int(count) * SyncLimits.maxBatchRecords
                }
            }
        } catch {
            printError("the daemon sent a bad frame: \(error)")
            ended = true
            break
        }
    }
    print("result \(attack) sent=\(sent) acked=\(min(acked, sent)) seconds=\(Double(Int(seconds() * 100)) / 100) closed=\(ended)")
    close(fd)
    exit(0)
default:
    fail("unknown attack \(attack)", status: 2)
}

// MARK: Outcome

var start = timespec()
clock_gettime(CLOCK_MONOTONIC, &start)
@MainActor func elapsedMS() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1_000_000
}
var received = 0
var closed = false
var keptAliveAt = 0
while Double(elapsedMS()) < wait * 1000 {
    if elapsedMS() - keptAliveAt > 4000 {
        // An empty frame: a keep-alive, so that a long --wait keeps the link up.
        do { _ = writeAll(try sealer.seal([])) } catch { fail("sealing: \(error)") }
        keptAliveAt = elapsedMS()
    }
    guard let bytes = readSome(timeout: 0.05) else { closed = true; break }
    if bytes.isEmpty { continue }
    do {
        for body in try decoder.feed(bytes) {
            _ = try opener.open(body)
            received += 1
        }
    } catch {
        printError("the daemon sent a bad frame: \(error)")
        closed = true
        break
    }
}
print("result \(attack) closed=\(closed) after=\(elapsedMS()) received=\(received) node=\(session.peerNodeKey.key.id)")
close(fd)
exit(0)
