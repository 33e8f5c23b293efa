import Dispatch
import MentorCore
import MentorCrypto
import MentorStore

/// A deterministic synthetic workload: `records` signed records from `authors` accounts.
///
/// Each author writes a full card first, then a mix of about 60% card edits (one to three
/// fields: bio, availability, courses, wage or budget, photo, name, role), 25% likes or undone
/// likes and 15% chat messages to other authors. Keys, contents, timestamps and delivery order
/// derive from `seed` through `SeededRandom`; the sealed bodies of likes and chats differ from
/// run to run only in their encryption nonces, which `RecordWriter` draws from the system.
///
/// Authors are generated in parallel, each into one contiguous buffer; the buffers are then
/// interleaved into the file in delivery order (each author's records in seq order, authors
/// taking turns with runs of 1...`maxRun` records, as a sync with many peers delivers them).
///
/// `signing` chooses who signs an account's records (issue 15's device keys). With devices, the
/// account writes the same records from the same seed — same cards, edits, likes, chats and
/// timestamps — plus its certificates, so histories signed differently have the same shape.
struct Workload {
    let records: Int
    let authors: Int
    let seed: UInt64
    /// Percent of records (after each author's first card) that are card edits; the rest are
    /// likes and chats, 5 to 3.
    var cardShare = 60
    var signing = Signing.accountKey

    /// Who signs an account's records.
    enum Signing: Sendable, Equatable {
        /// The account key signs every record (format version 1): the history before device keys.
        case accountKey
        /// The account key signs every record, but after its first card it certifies this many
        /// device keys that never write: the certificates' own cost, without device-signed records.
        /// Its likes and messages are sealed with the account's encryption key, as the devices' are.
        case accountKeyCertifying(devices: Int)
        /// The account key writes the first card (seq 1, with the proof of work) and certifies
        /// this many device keys right after it; the devices sign everything else, round-robin
        /// (format version 2). A device's card edit names in its clock every key of the account
        /// whose edits it has seen: the previous edit's whole clock, so each edit saw all earlier
        /// ones and supersedes them as the account key's next seq does.
        case devices(Int)

        var certificates: Int {
            switch self {
            case .accountKey: 0
            case .accountKeyCertifying(let n), .devices(let n): n
            }
        }
        var devicesSign: Bool { if case .devices = self { true } else { false } }
    }

    init(records: Int, authors: Int, seed: UInt64, cardShare: Int = 60, signing: Signing = .accountKey) {
        self.records = records
        self.authors = authors
        self.seed = seed
        self.cardShare = min(max(cardShare, 0), 100)
        self.signing = signing
    }

    /// Longest run of one author's records in the delivery order.
    static let maxRun = 16
    /// The benchmarks' network: the built-in key at a cheap difficulty, so that 100,000
    /// authors cost seconds to generate, not days. Every daemon a benchmark starts gets
    /// `daemonFlags` (the same flag a campus sets), every replica it opens `replicaSettings`.
    static let networkWorkBits = 8
    static let accountWork = AccountWork.Requirement(bits: networkWorkBits, network: .default)
    static let daemonFlags = ["--network-work-bits", "\(networkWorkBits)"]
    static var replicaSettings: Replica.Settings {
        var settings = Replica.Settings()
        settings.accountWork = accountWork
        return settings
    }
    /// Timestamps start here (2025-06-15) and advance 45 s per record of an author.
    static let baseTimestamp: UInt64 = 1_750_000_000_000

    struct Stats {
        /// Every record written, certificates included.
        var records = 0
        var profiles = 0
        var likes = 0
        var chats = 0
        /// Device certificates (signed by the account key).
        var certificates = 0
        /// Records signed by a device key (format version 2).
        var deviceSigned = 0
        /// Keys that signed at least one record: the accounts, and the devices that wrote.
        var signers = 0
        var bytes = 0
        /// Bytes of the live state: per author, the latest record of each card field and of
        /// each (liker, target) like register, and every chat (messages are never superseded).
        var liveBytes = 0
        var liveRecords = 0
        var deliveryRuns = 0
        var elapsed: Duration = .zero
    }

    /// One author's output: length-prefixed encodings, back to back.
    private struct AuthorOutput: Sendable {
        var buffer: [UInt8] = []
        var profiles = 0, likes = 0, chats = 0, count = 0
        var certificates = 0, deviceSigned = 0, signers = 0
        var liveBytes = 0, liveRecords = 0
        var failure: (any Error)?
    }

    func write(to path: String) throws -> Stats {
        let clock = ContinuousClock()
        let start = clock.now

        // Keys and per-author seeds come from one generator, in order, before the parallel part.
        var master = SeededRandom(seed: seed)
        var seeds: [[UInt8]] = []
        var authorSeeds: [UInt64] = []
        for _ in 0..<authors {
            seeds.append(master.bytes(32))
            authorSeeds.append(master.next())
        }
        // Public keys first; each author's key pair is made again where it writes. A key pair
        // holds its secret in sodium_malloc'd memory (guard pages, a few mappings each), so
        // 100,000 of them alive at once pass the kernel's 65,530 mappings and allocation fails.
        let publicKeys = try seeds.map { seed in try SigningKeyPair(seed: seed).publicKey.key }

        let outputs = UnsafeMutableBufferPointer<AuthorOutput>.allocate(capacity: authors)
        outputs.initialize(repeating: AuthorOutput())
        defer { outputs.deinitialize(); outputs.deallocate() }
        // Each iteration writes only its own author's slot, so the unchecked sharing is race-free.
        nonisolated(unsafe) let slots = outputs
        let (total, authors, perAuthorSeed, cardShare, keySeeds, signing) = (records, authors, authorSeeds, cardShare, seeds, signing)
        DispatchQueue.concurrentPerform(iterations: authors) { a in
            let count = total / authors + (a < total % authors ? 1 : 0)
            do {
                let keys = try SigningKeyPair(seed: keySeeds[a])
                // The device keys from a generator of their own, so the content's stays the
                // same whoever signs; made here and freed with the author (see above).
                var deviceSeeds = SeededRandom(seed: perAuthorSeed[a] ^ 0x64_6576_6963_65)   // "device"
                let devices = try (0..<signing.certificates).map { _ in try SigningKeyPair(seed: deviceSeeds.bytes(32)) }
                slots[a] = Self.generateAuthor(index: a, count: count, keys: keys, devices: devices, devicesSign: signing.devicesSign,
                                               seed: perAuthorSeed[a], everyone: publicKeys, cardShare: cardShare)
            } catch {
                slots[a].failure = error
            }
        }

        var stats = Stats()
        for a in 0..<authors {
            if let failure = outputs[a].failure { throw failure }
            stats.records += outputs[a].count
            stats.profiles += outputs[a].profiles
            stats.likes += outputs[a].likes
            stats.chats += outputs[a].chats
            stats.certificates += outputs[a].certificates
            stats.deviceSigned += outputs[a].deviceSigned
            stats.signers += outputs[a].signers
            stats.liveBytes += outputs[a].liveBytes
            stats.liveRecords += outputs[a].liveRecords
            stats.bytes += outputs[a].buffer.count - 4 * outputs[a].count
        }

        // Interleave into the file: authors take turns, each delivering its next run of records.
        let file = try RecordFileWriter(path: path)
        var order = SeededRandom(seed: seed ^ 0x6F72_6465_72)   // "order"
        var cursors = [Int](repeating: 0, count: authors)
        var remaining = (0..<authors).map { outputs[$0].count }
        var left = stats.records
        while left > 0 {
            for a in 0..<authors where remaining[a] > 0 {
                let run = min(remaining[a], Int.random(in: 1...Self.maxRun, using: &order))
                let buffer = outputs[a].buffer
                var end = cursors[a]
                for _ in 0..<run {
                    end += 4 + Int(RecordFileReader.length(buffer, at: end))
                }
                try file.write(buffer[cursors[a]..<end])
                cursors[a] = end
                remaining[a] -= run
                left -= run
                stats.deliveryRuns += 1
            }
        }
        try file.close()
        stats.elapsed = clock.now - start
        return stats
    }

    // MARK: One author

    private static func generateAuthor(index: Int, count: Int, keys: SigningKeyPair, devices: [SigningKeyPair], devicesSign: Bool,
                                       seed: UInt64, everyone: [PublicKey], cardShare: Int) -> AuthorOutput {
        var rng = SeededRandom(seed: seed)
        let account = keys.publicKey.key
        var writer = RecordWriter(keys: keys, accountWork: accountWork)
        var out = AuthorOutput()
        out.buffer.reserveCapacity((count + devices.count) * 300)
        func append(_ record: VerifiedRecord) {
            var w = ByteWriter(capacity: 4)
            w.u32(UInt32(record.encoded.count))
            out.buffer.append(contentsOf: w.bytes)
            out.buffer.append(contentsOf: record.encoded)
            out.count += 1
        }
        let role: ProfileCard.Role = rng.next() % 3 == 0 ? .tutor : .student
        // The live state: sizes by record index; the latest writer of each register.
        var sizes: [Int] = []
        var chats: [Int] = []
        var fieldWriter: [UInt8: Int] = [:], likeWriter: [PublicKey: Int] = [:]
        let likeShare = cardShare + (100 - cardShare) * 5 / 8
        do {
            // An account that certified devices has an encryption key (epoch 1, in the
            // certificates): it and its devices seal with it (version 2, PROTOCOL.md §7.5), as a
            // node does. Without devices, the account key seals as before (version 1).
            var deviceWriters: [RecordWriter] = []
            if !devices.isEmpty, let epoch1 = AccountKeyring.derived(from: keys, epochs: 1...1).current {
                let sealing = try SealingKey(account: account, epoch: epoch1.epoch, secret: epoch1.secret)
                writer.sealingKey = sealing
                if devicesSign {
                    deviceWriters = devices.map { device in
                        var w = RecordWriter(keys: device, account: account)
                        w.sealingKey = sealing
                        return w
                    }
                }
            }
            // The clock of the account's latest card edit: what the next edit has seen.
            var cardClock = VectorClock()
            var signers: Set<PublicKey> = []
            for i in 0..<count {
                let timestamp = baseTimestamp + UInt64(i) * 45_000 + UInt64(index) * 7
                // Record 0 is the account key's card; after it, the devices take turns.
                let d = i == 0 || deviceWriters.isEmpty ? nil : (i - 1) % deviceWriters.count
                let record: VerifiedRecord
                let roll = Int.random(in: 0..<100, using: &rng)
                if i == 0 || roll < cardShare {
                    let card = i == 0 ? Content.fullCard(role: role, rng: &rng) : Content.cardEdit(role: role, rng: &rng)
                    if let d {
                        record = try deviceWriters[d].profile(card, clock: cardClock, at: timestamp)
                    } else {
                        record = try writer.profile(card, at: timestamp)
                    }
                    cardClock = cardClock.merged(with: record.record.effectiveClock)
                    for (tag, _) in card.fieldList.fields { fieldWriter[tag] = i }
                    out.profiles += 1
                } else if roll < likeShare {
                    let target = Content.someoneElse(than: index, among: everyone, rng: &rng)
                    let liked = Int.random(in: 0..<100, using: &rng) < 85
                    if let d {
                        record = try deviceWriters[d].like(target, liked: liked, at: timestamp)
                    } else {
                        record = try writer.like(target, liked: liked, at: timestamp)
                    }
                    likeWriter[target] = i
                    out.likes += 1
                } else {
                    let target = Content.someoneElse(than: index, among: everyone, rng: &rng)
                    // An answered-like ID of the real size; the workload does not track likes.
                    let peerSeq = UInt64(Int.random(in: 0...i, using: &rng))
                    let answers = [UInt8](repeating: 0xA5, count: ChatPayload.likeIDLength)
                    let text = Content.sentence(words: 3...30, rng: &rng)
                    if let d {
                        record = try deviceWriters[d].chat(to: target, peerSeq: peerSeq, answers: answers, text: text, at: timestamp)
                    } else {
                        record = try writer.chat(to: target, peerSeq: peerSeq, answers: answers, text: text, at: timestamp)
                    }
                    chats.append(i)
                    out.chats += 1
                }
                sizes.append(record.encoded.count)
                signers.insert(record.record.author)
                if record.record.isDeviceSigned { out.deviceSigned += 1 }
                append(record)
                // Right after the first card, the account certifies its devices (a millisecond
                // apart, before its next record): a sync delivers them before the devices' records.
                if i == 0 {
                    for (k, device) in devices.enumerated() {
                        let cert = try writer.certify(device.publicKey.key, label: "device-\(k + 1)", epoch: 1,
                                                      at: timestamp + UInt64(k) + 1)
                        append(cert)
                        out.certificates += 1
                        out.liveRecords += 1
                        out.liveBytes += cert.encoded.count
                    }
                }
            }
            out.signers = signers.count
        } catch {
            out.failure = error
        }
        let live = Set(fieldWriter.values).union(likeWriter.values).union(chats)
        out.liveRecords += live.count
        out.liveBytes += live.reduce(0) { $0 + sizes[$1] }
        return out
    }
}

/// Realistic card and message content from word lists.
enum Content {
    static let firstNames = ["Ada", "Ben", "Chloé", "Dmitri", "Elif", "Farah", "Gustavo", "Hana", "Ivan", "Jun",
                             "Kwame", "Lucía", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
                             "Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zoë"]
    static let lastNames = ["Okafor", "Nguyen", "Schmidt", "García", "Kowalski", "Haddad", "Tanaka", "Silva",
                            "Müller", "Rossi", "Kim", "Dubois", "Ivanova", "Mensah", "O'Brien", "Patel"]
    static let courses = ["CS 101", "CS 125", "CS 225", "CS 374", "CS 411", "CS 490", "MATH 221", "MATH 231",
                          "MATH 241", "MATH 415", "STAT 400", "PHYS 211", "PHYS 212", "CHEM 102", "CHEM 232",
                          "BIO 150", "ECON 102", "ECON 302", "PSYC 100", "HIST 172", "ENG 115", "ME 200",
                          "ECE 210", "ECE 391", "SPAN 122", "FR 101", "PHIL 103", "ARTH 110"]
    static let words = ["calculus", "proofs", "exam", "midterm", "homework", "lab", "report", "tonight",
                        "library", "coffee", "review", "session", "recursion", "pointers", "integrals",
                        "derivatives", "essay", "draft", "thanks", "happy", "to", "help", "with", "the",
                        "problem", "set", "before", "Friday", "can", "we", "meet", "at", "noon", "online",
                        "or", "in", "person", "I", "struggle", "a", "bit", "linear", "algebra", "vectors",
                        "matrices", "organic", "chemistry", "graphs", "trees", "hash", "tables", "practice",
                        "questions", "flashcards", "patient", "clear", "explanations", "weekly", "sessions"]
    static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    static func pick<T>(_ list: [T], _ rng: inout SeededRandom) -> T {
        list[Int.random(in: 0..<list.count, using: &rng)]
    }

    static func sentence(words range: ClosedRange<Int>, rng: inout SeededRandom) -> String {
        let n = Int.random(in: range, using: &rng)
        return (0..<n).map { _ in pick(words, &rng) }.joined(separator: " ")
    }

    static func name(_ rng: inout SeededRandom) -> String { pick(firstNames, &rng) + " " + pick(lastNames, &rng) }

    static func courseList(_ rng: inout SeededRandom) -> [String] {
        var chosen: [String] = []
        for _ in 0..<Int.random(in: 1...5, using: &rng) {
            let c = pick(courses, &rng)
            if !chosen.contains(c) { chosen.append(c) }
        }
        return chosen
    }

    static func availability(_ rng: inout SeededRandom) -> String {
        (0..<Int.random(in: 1...4, using: &rng)).map { _ in
            let from = Int.random(in: 8...19, using: &rng)
            return "\(pick(days, &rng)) \(from)-\(from + Int.random(in: 1...3, using: &rng))"
        }.joined(separator: ", ")
    }

    static func photo(_ rng: inout SeededRandom) -> PhotoRef {
        PhotoRef(hash: rng.bytes(32), size: UInt32(Int.random(in: 20_000...2_000_000, using: &rng)),
                 format: pick(PhotoRef.Format.allCases, &rng))
    }

    static func rate(_ rng: inout SeededRandom) -> UInt64 { UInt64(Int.random(in: 10...80, using: &rng)) }

    static func fullCard(role: ProfileCard.Role, rng: inout SeededRandom) -> ProfileCard {
        ProfileCard(name: name(&rng), role: role, bio: sentence(words: 8...40, rng: &rng), courses: courseList(&rng),
                    wage: role == .tutor ? rate(&rng) : nil, budget: role == .student ? rate(&rng) : nil,
                    availability: availability(&rng), photos: [photo(&rng)])
    }

    /// An edit of one to three fields, weighted toward what people change often.
    static func cardEdit(role: ProfileCard.Role, rng: inout SeededRandom) -> ProfileCard {
        var card = ProfileCard()
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<30: card.bio = sentence(words: 5...40, rng: &rng)
            case 30..<55: card.availability = availability(&rng)
            case 55..<70: card.courses = courseList(&rng)
            case 70..<85:
                if role == .tutor { card.wage = rate(&rng) } else { card.budget = rate(&rng) }
            case 85..<93: card.photos = Int.random(in: 0..<10, using: &rng) == 0 ? [] : [photo(&rng)]
            case 93..<98: card.name = name(&rng)
            default: card.role = role
            }
        }
        return card
    }

    static func someoneElse(than index: Int, among everyone: [PublicKey], rng: inout SeededRandom) -> PublicKey {
        let other = Int.random(in: 0..<(everyone.count - 1), using: &rng)
        return everyone[other >= index ? other + 1 : other]
    }
}
