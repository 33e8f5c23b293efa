// mentormate-crashchild DBPATH SEED
//
// The victim of the crash-safety test (Tests/MentorStoreTests/CrashSafetyTests.swift): it writes
// batches of signed records into the file replica at DBPATH forever, and after each batch has
// committed it prints
//
//     committed <seq of author 0> <seq of author 1> <seq of author 2> <seq of author 3>
//
// The test kills it with SIGKILL at a random moment and checks that every batch reported here is
// in the database and that no batch is there in part. So a line is printed only after
// `apply(batch:)` has returned, each line goes out in one write(2), and nothing is buffered.
//
// First it prints `authors <hex key 0> … <hex key 3>`, so the reader can map the columns to keys;
// then, once the replica is open, `resumed <seq 0> … <seq 3>`: a restarted child continues every
// author at the seq the replica holds (its version vector).
// It exits by itself only on an error (status 1, message on stderr; 2 for bad arguments), and
// dies of SIGPIPE at its next line if its reader has gone, so it never outlives the test for long.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MentorCore
import MentorCrypto
import MentorStore

/// Records per batch: every batch is one transaction, so the replica always holds a multiple of it.
let batchSize = 50
/// Author i signs with the seed of 32 bytes `0xC0 + i`.
let authorCount = 4
/// Timestamps are this plus the record's seq: in the past, so no replica refuses them as future.
let baseTimestamp: UInt64 = 1_700_000_000_000

func fail(_ message: String, status: Int32 = 1) -> Never {
    let bytes = Array("mentormate-crashchild: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

/// Writes `line` and a newline to stdout with a single write(2). A line is far below PIPE_BUF, so
/// a pipe takes it whole: a reader never sees part of one, even if we are killed right after.
func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    while true {
        let written = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if written == bytes.count { return }
        if written < 0 && errno == EINTR { continue }
        let reason = written < 0 ? String(cString: strerror(errno)) : "short write of \(written) of \(bytes.count) bytes"
        fail("cannot write to stdout (\(reason)); is the reading test gone?")
    }
}

/// The generator of one batch's content: a function of SEED, of where this run resumed, and of
/// the batch number, so a run replays from its SEED and the database it started from.
func batchRandom(seed: UInt64, resumedAt: UInt64, batch: UInt64) -> SeededRandom {
    var first = SeededRandom(seed: seed)
    var second = SeededRandom(seed: first.next() ^ resumedAt)
    return SeededRandom(seed: second.next() ^ batch)
}

func text(_ length: Int, _ random: inout SeededRandom) -> String {
    let words = ["graph", "tutor", "calculus", "monday", "proof", "review", "lab", "essay", "exam", "notes"]
    var out = ""
    while out.utf8.count < length { out += words[Int(random.next() % UInt64(words.count))] + " " }
    return String(out.prefix(max(length, 1)))
}

/// One batch: profile edits (some with long bios, so pages fill and the WAL checkpoints now and
/// then), likes and chats, by random authors.
///
/// Author 0 is the hosted account, and rebuilding a pair's view costs chats × likes of the pair
/// (`PairView.build`), so its pairs get likes only and few of them: otherwise every batch would
/// slow down as the run goes on and late rounds would die before committing anything.
func makeBatch(_ writers: inout [RecordWriter], _ random: inout SeededRandom) throws(RecordError) -> [[UInt8]] {
    func pick(_ range: Range<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
    var batch: [[UInt8]] = []
    batch.reserveCapacity(batchSize)
    for _ in 0..<batchSize {
        let record: VerifiedRecord
        switch random.next() % 100 {
        case 0..<40:
            let a = pick(0..<authorCount)
            let bioLength = random.next() % 8 == 0 ? 1500 : pick(0..<200)
            let card = ProfileCard(name: "author \(a) v\(writers[a].lastSeq + 1)", bio: text(bioLength, &random),
                                   wage: random.next() % 100)
            record = try writers[a].profile(card, at: baseTimestamp + writers[a].lastSeq + 1)
        case 40..<48:
            // A like between the hosted account and another, either way.
            let other = pick(1..<authorCount)
            let (a, b) = random.next() % 2 == 0 ? (0, other) : (other, 0)
            record = try writers[a].like(writers[b].author, liked: random.next() % 4 != 0,
                                         at: baseTimestamp + writers[a].lastSeq + 1)
        default:
            let a = pick(1..<authorCount)
            let b = 1 + (a - 1 + pick(1..<authorCount - 1)) % (authorCount - 1)
            if random.next() % 3 == 0 {
                record = try writers[a].like(writers[b].author, liked: random.next() % 4 != 0,
                                             at: baseTimestamp + writers[a].lastSeq + 1)
            } else {
                // An answered-like ID of the real size (whether the message is valid is not
                // what this workload checks).
                record = try writers[a].chat(to: writers[b].author, peerSeq: writers[b].lastSeq,
                                             answers: [UInt8](repeating: 0xA5, count: ChatPayload.likeIDLength),
                                             text: text(1 + pick(0..<300), &random),
                                             at: baseTimestamp + writers[a].lastSeq + 1)
            }
        }
        batch.append(record.encoded)
    }
    return batch
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let seed = UInt64(arguments[2]) else {
    fail("usage: mentormate-crashchild DBPATH SEED (SEED a decimal UInt64)", status: 2)
}
let path = arguments[1]

let keys: [SigningKeyPair]
do {
    keys = try (0..<authorCount).map { i throws(CryptoError) in
        try SigningKeyPair(seed: [UInt8](repeating: 0xC0 + UInt8(i), count: SigningKeyPair.seedLength))
    }
} catch {
    fail("cannot derive the fixed author keys: \(error)")
}
emit("authors " + keys.map { Hex.encode($0.publicKey.key.bytes) }.joined(separator: " "))

do {
    // The defaults: WAL, synchronous NORMAL, wall-clock time.
    let replica = try Replica(path: path, settings: Replica.Settings())
    // Author 0 is hosted here, so the likes of its pairs are opened and its pair views are
    // materialized in the same transactions as the records.
    try replica.unlock(keys[0])
    let checkpointer = try Database(path: path)
    let committed = try replica.versionVector()
    var writers = keys.map { RecordWriter(keys: $0, lastSeq: committed[$0.publicKey.key] ?? 0) }
    let resumedAt = writers.reduce(0) { $0 + $1.lastSeq }
    emit("resumed " + writers.map { String($0.lastSeq) }.joined(separator: " "))

    var batchNumber: UInt64 = 0
    while true {
        var random = batchRandom(seed: seed, resumedAt: resumedAt, batch: batchNumber)
        var next = writers
        let batch: [[UInt8]]
        do { batch = try makeBatch(&next, &random) } catch { fail("cannot sign batch \(batchNumber): \(error)") }

        let outcomes = try replica.apply(batch: batch)
        if let (i, outcome) = outcomes.enumerated().first(where: { $0.element != .applied }) {
            fail("batch \(batchNumber) (resumed at \(writers.map(\.lastSeq))): record \(i) was \(outcome), not applied")
        }
        writers = next
        emit("committed " + writers.map { String($0.lastSeq) }.joined(separator: " "))
        batchNumber += 1
        // The replica's WAL would reach the automatic checkpoint (1000 pages) only after more
        // batches than a run lives, so a second connection checkpoints now and then: some kills
        // then land in a checkpoint, and the next batch restarts the WAL from its start.
        if batchNumber % 4 == 0 {
            _ = try checkpointer.query("PRAGMA wal_checkpoint(PASSIVE)")
        }
    }
} catch {
    fail("\(path): \(error)")
}
