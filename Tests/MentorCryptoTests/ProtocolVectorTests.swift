import Foundation
import Testing
import MentorCore
@testable import MentorCrypto

// The test vectors of docs/PROTOCOL.md ("Test vectors").
//
// Always (and in CI) the tests below parse docs/PROTOCOL.md and check every vector with the
// project's code: decoding, byte-for-byte re-encoding, the Ed25519 signature and key, the
// record ID, the account ID and, for sealed records, every documented derivation and both
// boxes. They also regenerate the vectors from their seeds and compare the whole section, and
// check the vectors once more with the Python snippets printed in the document when `python3`
// with the `cryptography` package is on the machine.
//
// To regenerate the section after a deliberate format change:
//
//     MENTORMATE_PRINT_VECTORS=1 swift test --filter printVectorsWhenAsked 2>/dev/null \
//         | sed -n '/^<!-- BEGIN TEST VECTORS/,/^<!-- END TEST VECTORS/p'
//
// and paste the output over the section between the same markers in docs/PROTOCOL.md.

@Suite struct ProtocolVectorTests {
    @Test func printVectorsWhenAsked() throws {
        guard ProcessInfo.processInfo.environment["MENTORMATE_PRINT_VECTORS"] == "1" else { return }
        let section = ProtocolVectors.render(try ProtocolVectors.generate())
        // One write, so the section is not interleaved with the test runner's own output.
        FileHandle.standardOutput.write(Data(("\n" + section + "\n").utf8))
    }

    @Test func documentHoldsEnoughVectorsCoveringEveryRecordType() throws {
        let (vectors, parseProblems) = try ProtocolVectors.documented()
        #expect(parseProblems.isEmpty, "\(parseProblems)")
        let coverage = ProtocolVectors.coverageProblems(vectors)
        #expect(coverage.isEmpty, "\(coverage)")
    }

    @Test func everyDocumentedVectorChecksOut() throws {
        let (vectors, _) = try ProtocolVectors.documented()
        #expect(vectors.count >= ProtocolVectors.minimumCount)
        for v in vectors {
            let problems = ProtocolVectors.Checker(v).problems
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        }
    }

    @Test func regeneratingFromTheSeedsGivesTheDocumentedSection() throws {
        let text = try ProtocolVectors.documentText()
        let generated = ProtocolVectors.render(try ProtocolVectors.generate())
        let documented = ProtocolVectors.section(of: text)
        #expect(documented != nil, "docs/PROTOCOL.md lacks the BEGIN/END TEST VECTORS markers")
        #expect(documented == generated,
                "docs/PROTOCOL.md's vectors differ from what the code generates; regenerate them (see ProtocolVectorTests.swift)")
    }

    /// The generator seals with fixed nonces so the vectors are reproducible; the production
    /// path seals with random ones. Both must give the same tag and the same contents.
    @Test func vectorGeneratorSealsLikeTheProductionPath() throws {
        for (spec, _) in try ProtocolVectors.generate() {
            guard case .sealed(let type, let counterpart, let payload) = spec.content else { continue }
            let production: SealedBody
            switch payload {
            case let p as LikePayload: production = try Like.seal(p, from: spec.author.keys).sealed
            case let p as ChatPayload: production = try ChatMessage.seal(p, from: spec.author.keys).sealed
            case let p as UnmatchPayload: production = try Unmatch.seal(p, from: spec.author.keys).sealed
            case let p as ContactPayload: production = try Contact.seal(p, from: spec.author.keys).sealed
            default: Issue.record("\(spec.name): unexpected payload type"); continue
            }
            let ours = try ProtocolVectors.sealedBody(type: type, payload: payload, author: spec.author.keys,
                                                      number: 1)
            #expect(production.pairTag == ours.pairTag, "\(spec.name)")
            if type == .contact { #expect(production.purgeTag == ours.purgeTag, "\(spec.name)") }
            let secrets = try PairSecrets(me: counterpart.keys, other: spec.author.key)
            #expect(try secrets.open(production, type: type, author: spec.author.key) == payload.plaintext)
            #expect(SelfBox.open(production.selfBox, author: spec.author.keys, type: type) == counterpart.key)
            #expect(production.box.count == ours.box.count && production.selfBox.count == ours.selfBox.count)
        }
    }

    @Test func checkerCatchesEveryCorruptedLine() throws {
        let (vectors, _) = try ProtocolVectors.documented()
        for v in vectors {
            for (key, value) in v.lines where key != "name" {
                var corrupted = v
                corrupted[key] = ProtocolVectors.corrupt(value)
                #expect(!ProtocolVectors.Checker(corrupted).problems.isEmpty, "a wrong `\(key)` in \(v.name) went unnoticed")
            }
        }
    }

    @Test func tooFewVectorsIsAnError() throws {
        let (vectors, _) = try ProtocolVectors.documented()
        #expect(!ProtocolVectors.coverageProblems(Array(vectors.prefix(ProtocolVectors.minimumCount - 1))).isEmpty)
        #expect(!ProtocolVectors.coverageProblems([]).isEmpty)
    }

    /// The vectors are one story: like, like back, two messages, unmatch.
    @Test func vectorsTellTheStoryOfAMatch() throws {
        let (vectors, _) = try ProtocolVectors.documented()
        let ana = try ProtocolVectors.ana(), ben = try ProtocolVectors.ben()
        var opener = SealedOpener(account: ana.keys)
        var entries: [PairEntry] = []
        for v in vectors {
            guard let encoded = v.bytes("encoded"), let verified = try? VerifiedRecord(encoded),
                  let (other, entry) = opener.open(verified) else { continue }
            #expect(other == ben.key)
            entries.append(entry)
        }
        let chatIDs = entries.filter { if case .chat = $0.kind { true } else { false } }.map(\.recordID)
        let beforeUnmatch = entries.filter { if case .unmatch = $0.kind { false } else { true } }
        let matched = PairView.build(me: ana.key, other: ben.key, entries: beforeUnmatch)
        #expect(matched.iLike && matched.theyLike && matched.matched)
        #expect(matched.messages.map(\.recordID) == chatIDs && chatIDs.count == 2)
        #expect(matched.rejectedMessages == 0)
        let ended = PairView.build(me: ana.key, other: ben.key, entries: Array(entries.reversed()))
        #expect(!ended.matched && ended.unmatchedBy == ben.key && ended.messages.isEmpty)
    }

    /// The `mm-pair` validity vectors of section 8.5 (both attacks of issue 11 among them): both
    /// accounts' views, built from the entries in many orders, are what the document says.
    @Test func pairVectorsGiveTheDocumentedViews() throws {
        let (vectors, problems) = try PairVectors.parse(ProtocolVectors.documentText())
        #expect(problems.isEmpty, "\(problems)")
        let names = Set(vectors.map(\.name))
        #expect(names.isSuperset(of: ["match-then-chat", "attack-withdrawn-like", "attack-before-the-like",
                                      "withdrawal-ends-the-match", "unmatch-then-match-again"]), "\(names)")
        var rng = SeededRandom(seed: 11)
        for v in vectors {
            for (me, other) in [(PairVectors.ana, PairVectors.ben), (PairVectors.ben, PairVectors.ana)] {
                for round in 0..<20 {
                    let entries = round == 0 ? v.entries : (v.entries + v.entries.prefix(2)).shuffled(using: &rng)
                    let view = PairView.build(me: me, other: other, entries: entries)
                    #expect(view.matched == v.matched, "\(v.name): matched")
                    #expect(view.messages.map { PairVectors.label(of: $0.recordID) } == v.shown,
                            "\(v.name): shown for \(me == PairVectors.ana ? "A" : "B")")
                    #expect(view.rejectedMessages == (v.rejected ?? v.chats - v.shown.count), "\(v.name): rejected")
                }
            }
        }
    }

    /// Runs the Python snippets printed in docs/PROTOCOL.md, so they are known to work, and
    /// checks the vectors with an Ed25519, X25519, BLAKE2b and ChaCha20-Poly1305 outside Swift
    /// and libsodium (OpenSSL, through Python's `cryptography`).
    @Test(.tags(.multiProcess)) func independentPythonCheckAgrees() throws {
        guard ProtocolVectors.run(["python3", "-c", "import cryptography"]).status == 0 else {
            print("note: python3 with the `cryptography` package is not available; skipping the independent check of the vectors")
            return
        }
        let text = try ProtocolVectors.documentText()
        let scripts = ProtocolVectors.pythonScripts(in: text)
        #expect(scripts.map { $0.name } == ["check_signatures.py", "check_sealed.py", "check_handshake.py"])
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mentormate-vectors-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        let document = directory.appendingPathComponent("PROTOCOL.md")
        try Data(text.utf8).write(to: document)
        let (vectors, _) = try ProtocolVectors.documented()
        let sealed = vectors.filter { $0["counterpart-seed"] != nil }.count

        for script in scripts {
            let path = directory.appendingPathComponent(script.name)
            try Data(script.source.utf8).write(to: path)
            let good = ProtocolVectors.run(["python3", path.path, document.path])
            #expect(good.status == 0, "\(script.name) failed:\n\(good.output)")
            let summary = switch script.name {
            case "check_signatures.py": "\(vectors.count) signatures verified"
            case "check_sealed.py": "\(vectors.count) account IDs and \(sealed) sealed records verified"
            default: "handshake verified: 19 values"
            }
            #expect(good.output.contains(summary), "\(script.name) printed:\n\(good.output)")

            // The same script must notice one wrong hex digit.
            let key = switch script.name {
            case "check_signatures.py": "signature: "
            case "check_sealed.py": "payload: "
            default: "n2 "
            }
            let broken = directory.appendingPathComponent("BROKEN.md")
            try Data(ProtocolVectors.corruptFirstLine(startingWith: key, in: text).utf8).write(to: broken)
            let bad = ProtocolVectors.run(["python3", path.path, broken.path])
            #expect(bad.status != 0, "\(script.name) accepted a corrupted \(key)")
        }
    }
}

// MARK: - Reading the document

/// The `mm-pair` blocks of PROTOCOL.md section 8.5: pair entries written as
/// `WHO SEQ like|withdraw|chat|unmatch [peer=N] [answers=LABEL]`, whose record ID is their label
/// (`A5`), and the expected `matched` and `shown` (labels of the valid messages, or `none`).
enum PairVectors {
    static let fence = "```mm-pair"
    static let ana = PublicKey(bytes: [UInt8](repeating: 0xA1, count: 32))!
    static let ben = PublicKey(bytes: [UInt8](repeating: 0xB2, count: 32))!

    struct Vector {
        var name = ""
        var entries: [PairEntry] = []
        var chats = 0
        /// Messages rejected, when not all those not shown (a message of an ended match is gone, not rejected).
        var rejected: Int?
        var matched: Bool?
        var shown: [String] = []
    }

    static func id(_ label: String) -> [UInt8] { Array(label.utf8) }
    static func label(of id: [UInt8]) -> String { String(decoding: id, as: UTF8.self) }

    static func parse(_ text: String) -> (vectors: [Vector], problems: [String]) {
        var vectors: [Vector] = []
        var problems: [String] = []
        var current: Vector?
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            guard current != nil else {
                if line == fence { current = Vector() }
                continue
            }
            func problem(_ why: String) { problems.append("line \(number + 1): \(why): \(line)") }
            if line == "```" {
                if let v = current {
                    if v.name.isEmpty || v.matched == nil { problem("an mm-pair block needs `name:` and `matched:`") }
                    vectors.append(v)
                }
                current = nil
                continue
            }
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("name: ") { current?.name = String(line.dropFirst(6)); continue }
            if line.hasPrefix("matched: ") { current?.matched = line.hasSuffix("true"); continue }
            if line.hasPrefix("rejected: "), let n = Int(line.dropFirst(10)) { current?.rejected = n; continue }
            if line.hasPrefix("shown: ") {
                let list = line.dropFirst(7).split(separator: " ").map(String.init)
                current?.shown = list == ["none"] ? [] : list
                continue
            }
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 3, let who = words.first.flatMap({ $0 == "A" ? ana : $0 == "B" ? ben : nil }),
                  let seq = UInt64(words[1]) else { problem("not an entry"); continue }
            var peer: UInt64 = 0
            var answers: [UInt8]?, mine: [UInt8]?
            for option in words.dropFirst(3) {
                if option.hasPrefix("place="), let n = UInt64(option.dropFirst(6)) { peer = n }
                else if option.hasPrefix("answers=") { answers = id(String(option.dropFirst(8))) }
                else if option.hasPrefix("mine=") { mine = id(String(option.dropFirst(5))) }
                else { problem("unknown option \(option)") }
            }
            let kind: PairEntry.Kind
            switch words[2] {
            case "like": kind = .like(true, peerSeq: 0)
            case "withdraw": kind = .like(false, peerSeq: 0)
            case "chat": kind = .chat(peerSeq: peer, answers: answers, mine: mine, text: words[0] + words[1]); current?.chats += 1
            case "unmatch": kind = .unmatch(peerSeq: 0, answers: answers, mine: mine)
            default: problem("unknown entry kind"); continue
            }
            current?.entries.append(PairEntry(author: who, seq: seq, timestamp: 1_000 + seq, recordID: id(words[0] + words[1]), kind: kind))
        }
        if current != nil { problems.append("the last mm-pair block is not closed with ```") }
        return (vectors, problems)
    }
}

enum ProtocolVectors {
    static let beginMarker = "<!-- BEGIN TEST VECTORS (generated by Tests/MentorCryptoTests/ProtocolVectorTests.swift; do not edit by hand) -->"
    static let endMarker = "<!-- END TEST VECTORS -->"
    static let fence = "```mm-vector"
    static let minimumCount = 6

    static var documentURL: URL {
        URL(fileURLWithPath: #filePath)            // Tests/MentorCryptoTests/ProtocolVectorTests.swift
            .deletingLastPathComponent()           // Tests/MentorCryptoTests
            .deletingLastPathComponent()           // Tests
            .deletingLastPathComponent()           // the repository
            .appendingPathComponent("docs/PROTOCOL.md")
    }

    static func documentText() throws -> String {
        try String(contentsOf: documentURL, encoding: .utf8)
    }

    static func documented() throws -> (vectors: [Vector], problems: [String]) {
        parse(try documentText())
    }

    /// Every fenced `mm-vector` block of `text`.
    static func parse(_ text: String) -> (vectors: [Vector], problems: [String]) {
        var vectors: [Vector] = []
        var problems: [String] = []
        var current: Vector?
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if current == nil {
                if line == fence { current = Vector() }
                continue
            }
            if line == "```" {
                vectors.append(current!)
                current = nil
                continue
            }
            guard let colon = line.range(of: ": ") else {
                problems.append("line \(number + 1): not a `key: value` line inside a vector block")
                continue
            }
            let key = String(line[..<colon.lowerBound]), value = String(line[colon.upperBound...])
            if current![key] != nil { problems.append("line \(number + 1): `\(key)` given twice in one vector") }
            current![key] = value
        }
        if current != nil { problems.append("the last vector block is not closed with ```") }
        return (vectors, problems)
    }

    /// What the document must hold: enough vectors, unique names, every record type, a card
    /// with every field, a partial edit, and likes in both directions.
    static func coverageProblems(_ vectors: [Vector]) -> [String] {
        var problems: [String] = []
        if vectors.count < minimumCount {
            problems.append("docs/PROTOCOL.md has \(vectors.count) test vectors; at least \(minimumCount) are required")
        }
        if Set(vectors.map(\.name)).count != vectors.count { problems.append("vector names are not unique") }
        let records = vectors.compactMap { $0.bytes("encoded").flatMap { try? Record.decode($0) } }
        for schema in RecordSchemas.all where !records.contains(where: { $0.type == schema.type }) {
            problems.append("no vector of type \(schema.type.rawValue) (\(schema.name))")
        }
        let cards = records.filter { $0.type == .profile }
        // Every field but the membership certificate (18), which comes from a CA once the account
        // exists and has a vector of its own.
        let membership = ProfileCard.Field.membership.rawValue
        let allTags = Set(ProfileCard.Field.allCases.map(\.rawValue)).subtracting([membership])
        if !cards.contains(where: { r in r.seq == 1 && (try? FieldList.decode(r.body, known: ProfileCard.bodyTags, what: "profile"))
                .map { Set($0.fields.map(\.tag)) == allTags } == true }) {
            problems.append("no profile card at seq 1 that sets every field")
        }
        if !cards.contains(where: { ProfileCard.membership(inBody: $0.body) != nil }) {
            problems.append("no profile card carrying a membership certificate (field 18)")
        }
        if !cards.contains(where: { $0.seq > 1 }) { problems.append("no partial profile edit (seq > 1)") }
        if Set(records.filter { $0.type == .like }.map(\.author)).count < 2 {
            problems.append("no like back: likes by two different authors are required")
        }
        return problems
    }

    /// The text from the BEGIN marker line through the END marker line.
    static func section(of text: String) -> String? {
        guard let begin = text.range(of: beginMarker), let end = text.range(of: endMarker, range: begin.upperBound..<text.endIndex)
        else { return nil }
        return String(text[begin.lowerBound..<end.upperBound])
    }

    /// The ```python blocks whose first line is `# check_….py …`.
    static func pythonScripts(in text: String) -> [(name: String, source: String)] {
        var scripts: [(String, String)] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil {
                if line == "```python" { current = [] }
            } else if line == "```" {
                if let first = current!.first, first.hasPrefix("# check_"),
                   let name = first.dropFirst(2).split(separator: " ").first, name.hasSuffix(".py") {
                    scripts.append((String(name), current!.joined(separator: "\n") + "\n"))
                }
                current = nil
            } else {
                current!.append(line)
            }
        }
        return scripts
    }

    /// The value with one character changed (a hex digit, a decimal digit, an ID character).
    static func corrupt(_ value: String) -> String {
        var chars = Array(value)
        guard !chars.isEmpty else { return "00" }
        let i = chars.count / 2
        chars[i] = chars[i] == "a" ? "c" : (chars[i] == "0" ? "1" : (chars[i].isNumber ? "0" : "a"))
        return String(chars)
    }

    static func corruptFirstLine(startingWith prefix: String, in text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let i = lines.firstIndex(where: { $0.hasPrefix(prefix) }) {
            lines[i] = prefix + corrupt(String(lines[i].dropFirst(prefix.count)))
        }
        return lines.joined(separator: "\n")
    }
}

// MARK: - One vector

extension ProtocolVectors {
    /// One fenced `mm-vector` block: `key: value` lines, in order, keys unique.
    struct Vector: Sendable {
        private(set) var lines: [(key: String, value: String)] = []

        var name: String { self["name"] ?? "(unnamed vector)" }

        subscript(_ key: String) -> String? {
            get { lines.first { $0.key == key }?.value }
            set {
                if let i = lines.firstIndex(where: { $0.key == key }) {
                    if let newValue { lines[i].value = newValue } else { lines.remove(at: i) }
                } else if let newValue {
                    lines.append((key, newValue))
                }
            }
        }

        func bytes(_ key: String) -> [UInt8]? {
            guard let text = self[key], !text.isEmpty else { return nil }
            return Hex.decode(text)
        }
    }
}

// MARK: - Checking one vector

extension ProtocolVectors {
    /// Checks one documented vector against the code and against the formulas of PROTOCOL.md.
    /// Collects problems instead of stopping at the first, so a report names everything wrong.
    struct Checker {
        let vector: Vector
        private(set) var problems: [String] = []

        init(_ vector: Vector) {
            self.vector = vector
            checkRecord()
        }

        private mutating func fail(_ message: String) { problems.append("\(vector.name): \(message)") }

        private mutating func bytes(_ key: String) -> [UInt8]? {
            guard let text = vector[key] else { fail("no `\(key):` line"); return nil }
            guard let b = vector.bytes(key) else { fail("`\(key)` is not hex: \(text.prefix(20))…"); return nil }
            return b
        }

        private mutating func number(_ key: String) -> UInt64? {
            guard let text = vector[key], let n = UInt64(text) else { fail("`\(key)` is missing or not a decimal number"); return nil }
            return n
        }

        private mutating func same(_ documented: [UInt8], _ actual: [UInt8], _ what: String) {
            if documented != actual { fail("\(what): documented \(Hex.encode(documented)), actual \(Hex.encode(actual))") }
        }

        private mutating func checkRecord() {
            guard let encoded = bytes("encoded"), let signed = bytes("signed-message"), let signature = bytes("signature"),
                  let seed = bytes("author-seed"), let publicKey = bytes("author-public-key"), let id = bytes("record-id"),
                  let body = bytes("body"), let type = number("type"), let seq = number("seq"), let timestamp = number("timestamp")
            else { return }
            guard let authorID = vector["author-id"] else { fail("no `author-id:` line"); return }

            // The encoding decodes, and encoding the decoded record gives the same bytes.
            let record: Record
            do { record = try Record.decode(encoded) } catch { fail("Record.decode refuses the encoding: \(error)"); return }
            same(encoded, record.encoded, "re-encoding the decoded record")
            same(signed, Array(encoded.dropLast(Record.signatureLength)), "signed-message (the encoding without its last 64 bytes)")
            same(signed, record.signedBytes, "signed-message (Record.signedBytes)")
            same(signature, Array(encoded.suffix(Record.signatureLength)), "signature (the last 64 bytes of the encoding)")
            same(body, record.body, "body")
            if UInt64(record.type.rawValue) != type { fail("type is \(record.type.rawValue) in the encoding, \(type) documented") }
            if record.seq != seq { fail("seq is \(record.seq) in the encoding, \(seq) documented") }
            if record.timestamp != timestamp { fail("timestamp is \(record.timestamp) in the encoding, \(timestamp) documented") }

            // The key belongs to the seed, and the signature verifies with the project's Ed25519.
            guard let author = (try? SigningKeyPair(seed: seed)) else { fail("author-seed is not a 32-byte seed"); return }
            same(publicKey, author.publicKey.bytes, "author-public-key (SigningKeyPair(seed:).publicKey)")
            same(publicKey, record.author.bytes, "author-public-key (the record's author field)")
            let signatureVerifies = (try? SigningPublicKey(bytes: publicKey))?.isValidSignature(signature, for: signed) ?? false
            if !signatureVerifies { fail("the signature does not verify for author-public-key over signed-message") }
            let verified: VerifiedRecord
            do { verified = try VerifiedRecord(encoded) } catch { fail("VerifiedRecord refuses the encoding: \(error)"); return }
            same(id, verified.id, "record-id (VerifiedRecord.id)")
            same(id, BLAKE2b.hash(encoded, outputLength: 32), "record-id (BLAKE2b-256 of the encoding)")

            // The account ID; a device-signed record names its account too.
            if record.author.id != authorID { fail("author-id: documented \(authorID), actual \(record.author.id)") }
            if record.isDeviceSigned {
                same(bytes("account-public-key") ?? [], record.account.bytes, "account-public-key (the record's account field)")
                if vector["account-id"] != record.account.id { fail("account-id is not the account's ID") }
                var clock = ByteWriter()
                record.clock.encode(into: &clock)
                same(bytes("clock") ?? [], clock.bytes, "clock (the record's clock as encoded)")
            } else if vector["account-public-key"] != nil {
                fail("a record the account key signs has an account-public-key line")
            }
            if (try? AccountID.parse(authorID)) != .exact(record.author) { fail("author-id does not parse back to the author's key") }

            if vector["work-nonce"] != nil { checkWork(record) }
            if record.type == .device || record.type == .revoke { checkDeviceKeys(record, account: author) }
            if record.type == .note { checkNote(record, account: author) }
            if record.type == .quizResult { checkQuiz(record) }
            if vector["certificate"] != nil { checkMembership(record) }
            let isSealed = RecordSchemas.schema(for: record.type)?.publicMerge == .sealed
            if isSealed, vector["sender-key"] != nil {
                checkSealedV2(verified)
            } else if isSealed {
                checkSealed(verified, author: author)
            } else if vector["counterpart-seed"] != nil {
                fail("a public record has sealed-record lines")
            }
        }

        /// Section 6.8: the certificate in field 18 is the documented one, signed by the CA the
        /// seed makes, for the card's account.
        private mutating func checkMembership(_ record: Record) {
            guard let seed = bytes("ca-seed"), let caKey = bytes("ca-public-key"), let signed = bytes("certificate-signed"),
                  let encoded = bytes("certificate"), let ca = try? SigningKeyPair(seed: seed) else {
                fail("a membership without ca-seed, ca-public-key, certificate-signed and certificate lines"); return
            }
            same(caKey, ca.publicKey.bytes, "ca-public-key (SigningKeyPair(seed:).publicKey)")
            if vector["ca-key"] != MembershipCertificate.printKey(ca.publicKey.key) { fail("ca-key is not the CA key's printed form") }
            guard let certificate = try? MembershipCertificate(encoded: encoded) else { fail("certificate does not decode"); return }
            same(encoded, certificate.encoded, "certificate (re-encoded)")
            same(signed, certificate.signedBytes, "certificate-signed (the certificate without its last 64 bytes)")
            same(signed, Array(encoded.dropLast(64)), "certificate-signed (the first bytes of certificate)")
            if !ca.publicKey.isValidSignature(certificate.signature, for: signed) { fail("the certificate's signature does not verify for the CA key") }
            if certificate.account != record.account { fail("the certificate names another account than the card's") }
            let card = try? ProfileCard(body: record.body)
            same(encoded, card?.membership?.encoded ?? [], "certificate (field 18 of the card)")
        }

        /// Section 15.4: the score is what the answers give for the day's questions; the day is
        /// the timestamp's UTC date.
        private mutating func checkQuiz(_ record: Record) {
            guard let result = try? QuizResult(body: record.body), let score = number("score") else {
                fail("a quiz result without a score line, or a body that is no quiz result"); return
            }
            if result.day != Quiz.day(millis: record.timestamp) { fail("the quiz result's day is not its timestamp's UTC date") }
            let computed = Quiz.score(result.answers, QuizSeed.questions(day: result.day) ?? [])
            if UInt64(computed) != score { fail("score: documented \(score), computed from the answers \(computed)") }
        }

        /// Section 7.6: the note's key comes from the account's epoch secret (derived from its
        /// key), and its box opens to the documented payload.
        private mutating func checkNote(_ record: Record, account: SigningKeyPair) {
            guard let secret = bytes("epoch-secret"), let payload = bytes("payload"), let note = try? Note(body: record.body) else {
                fail("a note without epoch-secret and payload lines, or a body that is no note"); return
            }
            let derived = (1...UInt32(EncryptionKey.maxEpochs)).lazy.compactMap { e in
                AccountKeyring.derived(from: account, epochs: e...e).secrets[e]
            }.first { (try? X25519.publicKey(fromSecret: $0)) == note.senderKey }
            same(secret, derived ?? [], "epoch-secret (the account's epoch key whose public key is the note's sender key)")
            same(payload, NoteBox.open(note, account: record.account, secret: secret)?.plaintext ?? [], "payload (the note's box opened)")
        }

        /// Section 7.5: the epoch secret is derived from the account key, its public key is the
        /// one the record publishes, and the box (a certificate's keyring, or a rotation's grant)
        /// opens with the device's key to the documented plaintext.
        private mutating func checkDeviceKeys(_ record: Record, account: SigningKeyPair) {
            guard let seed = bytes("device-seed"), let device = try? SigningKeyPair(seed: seed), let secret = bytes("epoch-secret") else {
                fail("a certificate or revocation without device-seed and epoch-secret lines"); return
            }
            var published: EncryptionKey?
            var opened: [UInt8]?
            var documented: [UInt8]?
            if record.type == .device, let cert = try? DeviceCertificate(body: record.body) {
                if cert.device != device.publicKey.key { fail("device-seed is not the certified device's") }
                published = cert.encryptionKey
                opened = AccountKeyring.open(cert.keyring, device: device, of: record.account)?.encoded
                documented = bytes("keyring")
            } else if let revocation = try? DeviceRevocation(body: record.body), let rotation = revocation.rotation {
                published = rotation.key
                if let g = rotation.grants.first(where: { $0.device == device.publicKey.key }),
                   let k = AccountKeyring.openGrant(g.box, epoch: rotation.key.epoch, device: device, of: record.account),
                   let s = k.secrets[rotation.key.epoch] {
                    var w = ByteWriter(); w.u32(rotation.key.epoch); w.raw(s)
                    opened = w.bytes
                }
                documented = bytes("grant")
            }
            guard let published else { fail("no encryption key in the record"); return }
            let derived = AccountKeyring.derived(from: account, epochs: published.epoch...published.epoch).secrets[published.epoch]
            same(secret, derived ?? [], "epoch-secret (BLAKE2b-256 keyed with the account seed over \"mentormate epoch v1\" ‖ u32 epoch)")
            same(published.publicKey, (try? X25519.publicKey(fromSecret: secret)) ?? [], "the published encryption key (X25519 public of epoch-secret)")
            same(documented ?? [], opened ?? [], "keyring / grant (the box opened with device-seed)")
        }

        /// Section 6.1: the work lines follow from the formulas, the nonce is the card's field 9,
        /// and the card passes the check a node of the built-in network at the default runs.
        private mutating func checkWork(_ record: Record) {
            guard let network = bytes("network-id"), let nonce = number("work-nonce"), let hash = bytes("work-hash"),
                  let bits = number("work-bits"), let difficulty = number("work-difficulty") else { return }
            same(network, AccountWork.networkID(.default), "network-id (AccountWork.networkID of the built-in key)")
            same(network, BLAKE2b.hash(Array("mm-pow-network-v1".utf8), key: NetworkKey.default.bytes, outputLength: 32), "network-id (the formula)")
            var input = Array("mm-pow-v1".utf8) + network + record.author.bytes
            withUnsafeBytes(of: nonce.bigEndian) { input.append(contentsOf: $0) }
            same(hash, BLAKE2b.hash(input), "work-hash (the formula)")
            if UInt64(AccountWork.leadingZeroBits(hash)) != bits { fail("work-bits: documented \(bits), the hash has \(AccountWork.leadingZeroBits(hash))") }
            if ProfileCard.workNonce(inBody: record.body) != nonce { fail("work-nonce is not the card's field 9") }
            if record.seq != 1 { fail("a proof of work outside seq 1") }
            if difficulty != UInt64(AccountWork.defaultBits) { fail("work-difficulty: documented \(difficulty), the default is \(AccountWork.defaultBits)") }
            let requirement = AccountWork.Requirement(bits: Int(difficulty), network: .default)
            if let refusal = AccountWork.refusal(of: record, requirement: requirement) { fail("the work does not check: \(refusal)") }
        }

        /// Section 7.5: every value of a version-2 sealed record, from the account's epoch secret
        /// and from the counterpart's account key, and the code's opener reads the payload.
        private mutating func checkSealedV2(_ verified: VerifiedRecord) {
            let record = verified.record
            let type = record.type
            guard let secret = bytes("epoch-secret"), let senderKey = bytes("sender-key"), let theirKey = bytes("their-key"),
                  let shared = bytes("x25519-shared-secret"), let pairKey = bytes("pair-key"), let tag = bytes("pair-tag"),
                  let encryptionKey = bytes("encryption-key"), let boxNonce = bytes("box-nonce"), let payload = bytes("payload"),
                  let selfBoxKey = bytes("self-box-key"), let selfBoxNonce = bytes("self-box-nonce"),
                  let counterpartSeed = bytes("counterpart-seed"), let counterpartKey = bytes("counterpart-public-key"),
                  let counterpart = try? SigningKeyPair(seed: counterpartSeed),
                  let sealed = try? SealedBody(body: record.body, what: "sealed", maxPlaintext: Limits.maxBodyBytes) else {
                fail("a version-2 sealed vector lacks a line, or its body is not a sealed body"); return
            }
            same(counterpartKey, counterpart.publicKey.bytes, "counterpart-public-key")
            if vector["counterpart-id"] != counterpart.publicKey.key.id { fail("counterpart-id is not the counterpart's ID") }
            do {
                same(senderKey, try X25519.publicKey(fromSecret: secret), "sender-key (X25519 public of epoch-secret)")
                same(senderKey, sealed.senderKey ?? [], "sender-key (field 4 of the body)")
                same(theirKey, try X25519.publicKey(fromEd25519: counterpart.publicKey), "their-key (X25519 form of the counterpart's key)")
                same(shared, try X25519.sharedSecret(secretKey: secret, publicKey: theirKey), "x25519-shared-secret (author's side)")
                same(shared, try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: counterpart), publicKey: senderKey),
                     "x25519-shared-secret (counterpart's side)")
                let (lo, hi) = record.account < counterpart.publicKey.key ? (record.account, counterpart.publicKey.key) : (counterpart.publicKey.key, record.account)
                same(pairKey, BLAKE2b.hash(Array("mentormate pair v2".utf8) + lo.bytes + hi.bytes, key: shared, outputLength: 32), "pair-key (formula)")
                same(tag, BLAKE2b.hash(Array("tag".utf8) + [type.rawValue] + record.account.bytes, key: pairKey, outputLength: 32), "pair-tag (formula)")
                same(tag, sealed.pairTag, "pair-tag (field 1)")
                same(encryptionKey, BLAKE2b.hash(Array("enc".utf8), key: pairKey, outputLength: 32), "encryption-key (formula)")
                same(boxNonce, Array(sealed.box.prefix(XChaCha20Poly1305.nonceLength)), "box-nonce")
                same(payload, try XChaCha20Poly1305.open(sealed.box, key: encryptionKey, associatedData: [type.rawValue] + record.account.bytes + tag + senderKey),
                     "payload (opened with encryption-key and associated data type ‖ account ‖ pair-tag ‖ sender-key)")
                same(selfBoxKey, BLAKE2b.hash(Array("mentormate self v2".utf8), key: secret, outputLength: 32), "self-box-key (formula)")
                same(selfBoxNonce, Array(sealed.selfBox.prefix(XChaCha20Poly1305.nonceLength)), "self-box-nonce")
                same(counterpart.publicKey.bytes + theirKey, try XChaCha20Poly1305.open(sealed.selfBox, key: selfBoxKey, associatedData: [type.rawValue] + senderKey),
                     "self box (the counterpart ‖ their-key)")
            } catch {
                fail("deriving or opening failed: \(error)")
            }
            var opener = SealedOpener(account: counterpart)
            if opener.open(verified)?.other != record.account { fail("the counterpart's SealedOpener does not read it as from the account") }
        }

        private mutating func checkSealed(_ verified: VerifiedRecord, author: SigningKeyPair) {
            let record = verified.record
            let type = record.type
            guard let counterpartSeed = bytes("counterpart-seed"), let counterpartKey = bytes("counterpart-public-key"),
                  let shared = bytes("x25519-shared-secret"), let pairKey = bytes("pair-key"), let tag = bytes("pair-tag"),
                  let encryptionKey = bytes("encryption-key"), let boxNonce = bytes("box-nonce"), let payload = bytes("payload"),
                  let selfBoxKey = bytes("self-box-key"), let selfBoxNonce = bytes("self-box-nonce") else { return }
            guard let counterpartID = vector["counterpart-id"] else { fail("no `counterpart-id:` line"); return }
            guard let counterpart = try? SigningKeyPair(seed: counterpartSeed) else { fail("counterpart-seed is not a 32-byte seed"); return }
            same(counterpartKey, counterpart.publicKey.bytes, "counterpart-public-key (SigningKeyPair(seed:).publicKey)")
            let other = counterpart.publicKey.key
            if other.id != counterpartID { fail("counterpart-id: documented \(counterpartID), actual \(other.id)") }
            guard let sealed = try? SealedBody(body: record.body, what: "sealed", maxPlaintext: Limits.maxBodyBytes) else {
                fail("the body is not a sealed body"); return
            }

            // The documented derivations, computed from both sides, agree with the code's.
            do {
                let fromAuthor = try PairDerivation(me: author, other: other)
                let fromCounterpart = try PairDerivation(me: counterpart, other: record.author)
                same(shared, fromAuthor.shared, "x25519-shared-secret (author's side)")
                same(shared, fromCounterpart.shared, "x25519-shared-secret (counterpart's side)")
                same(pairKey, fromAuthor.pairKey, "pair-key (author's side)")
                same(pairKey, fromCounterpart.pairKey, "pair-key (counterpart's side)")
                same(tag, fromAuthor.tag(type: type, author: record.author), "pair-tag (formula)")
                same(encryptionKey, fromAuthor.encryptionKey, "encryption-key (formula)")
                let secrets = try PairSecrets(me: counterpart, other: record.author)
                same(tag, secrets.tag(type: type, author: record.author), "pair-tag (PairSecrets.tag)")
                same(encryptionKey, secrets.encryptionKey, "encryption-key (PairSecrets)")
                same(tag, sealed.pairTag, "pair-tag (field 1 of the body)")
                same(boxNonce, Array(sealed.box.prefix(XChaCha20Poly1305.nonceLength)), "box-nonce (first 24 bytes of the box)")

                // The counterpart opens the box, with the formula's key and associated data and with
                // the code's PairSecrets, and gets the documented payload.
                let associatedData = [type.rawValue] + record.author.bytes + tag
                same(payload, try XChaCha20Poly1305.open(sealed.box, key: encryptionKey, associatedData: associatedData),
                     "payload (opened with encryption-key and associated data type ‖ author ‖ pair-tag)")
                same(payload, try secrets.open(sealed, type: type, author: record.author), "payload (PairSecrets.open)")
            } catch {
                fail("deriving the pair secrets or opening the box failed: \(error)")
            }

            // The payload is canonical, names the counterpart, and is what SealedOpener reads.
            let expected: (kind: PairEntry.Kind, counterpart: PublicKey, canonical: [UInt8])?
            switch type {
            case .like:
                expected = (try? LikePayload(plaintext: payload)).map { p in (PairEntry.Kind.like(p.liked, peerSeq: p.peerSeq), p.counterpart, p.plaintext) }
            case .chat:
                expected = (try? ChatPayload(plaintext: payload)).map { p in
                    (PairEntry.Kind.chat(peerSeq: p.peerSeq, answers: p.answers, mine: p.mine, text: p.text), p.counterpart, p.plaintext)
                }
            case .unmatch:
                expected = (try? UnmatchPayload(plaintext: payload)).map { p in
                    (PairEntry.Kind.unmatch(peerSeq: p.peerSeq, answers: p.answers, mine: p.mine), p.counterpart, p.plaintext)
                }
            case .contact:
                expected = (try? ContactPayload(plaintext: payload)).map { p in
                    (PairEntry.Kind.contact(answers: p.answers, mine: p.mine, text: p.text), p.counterpart, p.plaintext)
                }
            default:
                expected = nil
            }
            guard let expected else { fail("payload does not decode as a \(type) payload"); return }
            same(payload, expected.canonical, "payload (re-encoded)")
            if expected.counterpart != other { fail("the payload's first field is not the counterpart") }
            var counterpartOpener = SealedOpener(account: counterpart)
            if let (from, entry) = counterpartOpener.open(verified) {
                if from != record.author || entry.kind != expected.kind || entry.recordID != verified.id || entry.seq != record.seq {
                    fail("SealedOpener(counterpart) reads \(entry.kind) from \(from.shortID), not the documented payload")
                }
            } else {
                fail("SealedOpener(account: counterpart) cannot open the record")
            }

            // The self box: the author's own key learns whom the record was for.
            same(selfBoxKey, PairDerivation.selfBoxKey(seed: author.seed), "self-box-key (formula)")
            same(selfBoxKey, SelfBox.key(author), "self-box-key (SelfBox.key)")
            same(selfBoxNonce, Array(sealed.selfBox.prefix(XChaCha20Poly1305.nonceLength)), "self-box-nonce (first 24 bytes of the self box)")
            if (try? XChaCha20Poly1305.open(sealed.selfBox, key: selfBoxKey, associatedData: [type.rawValue])) != other.bytes {
                fail("the self box does not open to the counterpart with self-box-key and associated data [type]")
            }
            var authorOpener = SealedOpener(account: author)
            if authorOpener.open(verified)?.other != other { fail("SealedOpener(account: author) does not find the counterpart") }

            // Nobody else can read it.
            if let stranger = try? SigningKeyPair(seed: [UInt8](repeating: 0x42, count: 32)) {
                var strangerOpener = SealedOpener(account: stranger)
                if strangerOpener.open(verified) != nil { fail("a third account can open the record") }
            }
        }
    }

    /// The derivations exactly as PROTOCOL.md writes them, from public building blocks, so the
    /// checker compares the document's formulas with the code's `PairSecrets` and `SelfBox`.
    struct PairDerivation {
        let shared: [UInt8]
        let pairKey: [UInt8]
        var encryptionKey: [UInt8] { BLAKE2b.hash(Array("enc".utf8), key: pairKey, outputLength: 32) }

        init(me: SigningKeyPair, other: PublicKey) throws {
            let otherKey = try SigningPublicKey(bytes: other.bytes)
            shared = try X25519.sharedSecret(secretKey: X25519.secretKey(fromEd25519: me),
                                             publicKey: X25519.publicKey(fromEd25519: otherKey))
            let mine = me.publicKey.key
            let (lo, hi) = mine < other ? (mine, other) : (other, mine)
            pairKey = BLAKE2b.hash(Array("mentormate pair v1".utf8) + lo.bytes + hi.bytes, key: shared, outputLength: 32)
        }

        func tag(type: RecordType, author: PublicKey) -> [UInt8] {
            BLAKE2b.hash(Array("tag".utf8) + [type.rawValue] + author.bytes, key: pairKey, outputLength: 32)
        }

        static func selfBoxKey(seed: [UInt8]) -> [UInt8] {
            BLAKE2b.hash(Array("mentormate self v1".utf8), key: seed, outputLength: 32)
        }
    }
}

// MARK: - Generating the vectors

extension ProtocolVectors {
    struct Party: Sendable {
        let name: String
        let keys: SigningKeyPair
        var key: PublicKey { keys.publicKey.key }
    }

    enum Content: Sendable {
        case profile(ProfileCard)
        case sealed(RecordType, to: Party, payload: any SealedPayload)
        /// A public body signed by the author as it is: a certificate or revocation (types 5 and
        /// 6, with the lines that show its keys: `device-seed`, `epoch-secret`, `keyring` or
        /// `grant`), or a follow (type 12, no lines).
        case devices(RecordType, body: [UInt8], lines: [(String, String)])
        /// A card edit signed by a device key for `account` (format version 2), with a clock.
        case deviceProfile(account: Party, clock: VectorClock, card: ProfileCard)
        /// A sealed record signed by a device key for `account`, sealed with version 2 (§7.5):
        /// with the account's encryption key of `epoch`, to the counterpart's Ed25519 key's
        /// X25519 form (the counterpart has no encryption key in the story).
        case sealedV2(RecordType, to: Party, payload: any SealedPayload, account: Party, epochSecret: [UInt8])
    }

    struct Spec: Sendable {
        let name: String
        let title: String
        let summary: String
        let author: Party
        let seq: UInt64
        let timestamp: UInt64
        let content: Content
    }

    /// Ana: the seed of RFC 8032 section 7.1, TEST 1.
    static func ana() throws -> Party {
        Party(name: "Ana", keys: try SigningKeyPair(seed: Hex.decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")!))
    }

    /// Ben: the seed 01 02 03 … 20.
    static func ben() throws -> Party {
        Party(name: "Ben", keys: try SigningKeyPair(seed: (1...32).map { UInt8($0) }))
    }

    /// Cy: the seed 21 22 … 40, whose proof of work at the default difficulty on the built-in
    /// network is `cyWorkNonce` (the first nonce from 0 that meets it; AccountWorkTests checks it).
    static func cy() throws -> Party {
        Party(name: "Cy", keys: try SigningKeyPair(seed: (0x21...0x40).map { UInt8($0) }))
    }
    static let cyWorkNonce: UInt64 = 3_184_834

    /// Ana's laptop: the device key of seed 41 42 … 60.
    static func anaLaptop() throws -> Party {
        Party(name: "Ana's laptop", keys: try SigningKeyPair(seed: (0x41...0x60).map { UInt8($0) }))
    }

    /// The lab machine Ana uses for a day: the device key of seed 61 62 … 80.
    static func anaLab() throws -> Party {
        Party(name: "lab-3", keys: try SigningKeyPair(seed: (0x61...0x80).map { UInt8($0) }))
    }

    /// 2026-01-01T00:00:00Z in milliseconds.
    static let start: UInt64 = 1_767_225_600_000
    static let minute: UInt64 = 60_000

    static func specs() throws -> [Spec] {
        let ana = try ana(), ben = try ben()
        let photo = PhotoRef(hash: BLAKE2b.hash(Array("mentormate example photo".utf8), outputLength: 32), size: 48_213, format: .jpeg)
        let greeting = "Hi Ben! Happy to help with CS 490. Does Thursday at 17:00 work?"
        let reply = "Thursday works — thank you!"
        let like = Spec(name: "like", title: "Ana likes Ben (sealed)",
                 summary: """
                 Ana's seq 3 is a like of Ben, with peer seq 0: she had applied none of Ben's records. Ben \
                 opens the box with the pair key; Ana's own nodes open the self box to learn that the like \
                 was for Ben.
                 """,
                 author: ana, seq: 3, timestamp: start + 120 * minute,
                 content: .sealed(.like, to: ben, payload: LikePayload(target: ben.key, liked: true, peerSeq: 0)))
        let likeBack = Spec(name: "like-back", title: "Ben likes Ana back (sealed)",
                 summary: """
                 Ben's first record (seq 1) likes Ana back, with peer seq 3 (he had applied Ana's records up \
                 to her like). With both likes standing the pair is matched.
                 """,
                 author: ben, seq: 1, timestamp: start + 121 * minute,
                 content: .sealed(.like, to: ana, payload: LikePayload(target: ana.key, liked: true, peerSeq: 3)))
        // The messages name the like they answer by its record ID (section 8.5): the like
        // vectors' IDs, which depend only on the seeds and the fixed nonces.
        func recordID(_ spec: Spec, number: Int) throws -> [UInt8] {
            let v = try vector(for: spec, number: number)
            return v.bytes("record-id") ?? []    // always present: `vector(for:)` writes it
        }
        let anaLikeID = try recordID(like, number: 3), benLikeID = try recordID(likeBack, number: 4)
        return try storySpecs(ana: ana, ben: ben, photo: photo, greeting: greeting, reply: reply, like: like, likeBack: likeBack,
                              anaLikeID: anaLikeID, benLikeID: benLikeID) + deviceSpecs(ana: ana) + photoSpecs(main: photo)
            + blockAndContactSpecs(ana: ana, ben: ben, anaLikeID: anaLikeID, benLikeID: benLikeID)
            + postSpecs(ana: ana, ben: ben, photo: photo) + [followSpec(ana: ana, ben: ben), quizSpec(ben: ben)]
            + meetupSpecs(ana: ana, ben: ben) + [try membershipSpec(ana: ana)]
    }

    /// The campus CA of V29: the seed 0x43 ("C") 32 times.
    static func campusCA() throws -> SigningKeyPair { try SigningKeyPair(seed: [UInt8](repeating: 0x43, count: 32)) }

    /// V29: a card edit carrying a campus membership certificate (field 18, PROTOCOL.md §6.8).
    static func membershipSpec(ana: Party) throws -> Spec {
        let ca = try campusCA()
        let issued = start + 7020 * minute
        let certificate = try MembershipCertificate.sign(by: ca, account: ana.key, domain: "campus.edu",
                                                         issued: issued, expires: issued + 365 * 1440 * minute)
        var card = ProfileCard()
        card.membership = certificate
        return Spec(name: "membership", title: "Ana publishes her campus membership",
                    summary: """
                    Ana's seq 16 is a card edit (type 1) holding only field 18: a membership certificate the campus \
                    CA (seed 43 × 32, printed `ca-key`) signed for her account and the domain `campus.edu`, valid for \
                    365 days from its issue. `certificate-signed` is what the CA signs (the certificate without its \
                    last 64 bytes); every node checks that signature and that the certificate names the card's \
                    account before it stores the card. A node whose `campus_ca_key` is this key shows Ana as a member.
                    """,
                    author: ana, seq: 16, timestamp: issued + 1000,
                    content: .devices(.profile, body: card.body, lines: [
                        ("ca-seed", Hex.encode(ca.seed)), ("ca-public-key", Hex.encode(ca.publicKey.bytes)),
                        ("ca-key", MembershipCertificate.printKey(ca.publicKey.key)),
                        ("certificate-signed", Hex.encode(certificate.signedBytes)), ("certificate", Hex.encode(certificate.encoded)),
                    ]))
    }

    /// V25-V28: a meetup, a join, the host's roster (types 14-16, PROTOCOL.md §6.7), and a comment on it.
    static func meetupSpecs(ana: Party, ben: Party) throws -> [Spec] {
        let fields = Meetup.Fields(title: "Dijkstra study session", topic: Meetup.Topic(kind: .course, name: "CS 490"),
                                   start: start + 8 * 1440 * minute + 17 * 60 * minute, duration: 90, place: "Library room 2", seats: 4,
                                   about: "Bring your problem set")
        let meetup = Spec(name: "meetup", title: "Ana hosts a study session for CS 490",
                          summary: """
                          Ana's seq 14 creates a meetup (type 14, section 6.7): title (field 1), topic (field 2: kind 2, a \
                          course, then its name), start (field 3, ms UTC), duration in minutes (field 4), place (field 5), \
                          seats (field 6) and about (field 8). Its record ID is the meetup's ID, which the next two vectors name.
                          """,
                          author: ana, seq: 14, timestamp: start + 7000 * minute,
                          content: .devices(.meetup, body: Meetup(.create(fields)).body, lines: []))
        let meetupID = try vector(for: meetup, number: 25).bytes("record-id") ?? []
        let join = Spec(name: "meetup-join", title: "Ben joins it",
                        summary: """
                        Ben's seq 6 joins the meetup (type 15): its ID (field 1) and the flag 1 (field 2). Until Ana's node \
                        puts this record on the meetup's roster, every node shows Ben's place as pending.
                        """,
                        author: ben, seq: 6, timestamp: start + 7010 * minute,
                        content: .devices(.meetupJoin, body: MeetupJoin(meetup: meetupID, joining: true).body, lines: []))
        let joinID = try vector(for: join, number: 26).bytes("record-id") ?? []
        let roster = Spec(name: "meetup-roster", title: "Ana's node seats Ben",
                          summary: """
                          Ana's seq 15 is the meetup's roster (type 16): the meetup (field 1) and the join records her node \
                          admitted, in the order it saw them (field 2: record IDs, 32 bytes each) — Ben's join. With 4 seats, \
                          Ben holds seat 1 on every node that reads this roster.
                          """,
                          author: ana, seq: 15, timestamp: start + 7011 * minute,
                          content: .devices(.meetupRoster, body: MeetupRoster(meetup: meetupID, joins: [joinID]).body, lines: []))
        let comment = Spec(name: "meetup-comment", title: "Ben comments on the study session",
                           summary: """
                           Ben's seq 7 is a comment (type 10, section 6.6) whose subject (field 1) is the meetup's ID, not a \
                           post's; field 2 his text. Only Ben may delete it; only Ana, the host, may hide it. It leaves every \
                           replica with the meetup a week after the session ends.
                           """,
                           author: ben, seq: 7, timestamp: start + 7012 * minute,
                           content: .devices(.comment, body: PostComment(post: meetupID, .create(text: "Can we go over problem 3?")).body,
                                             lines: []))
        return [meetup, join, roster, comment]
    }

    /// V24: a quiz result (type 13, PROTOCOL.md §15.4): the answers, and the score every node
    /// computes from them (the `score` line; the record has none).
    static func quizSpec(ben: Party) -> Spec {
        let timestamp = start + 6050 * minute
        let day = Quiz.day(millis: timestamp)
        let key = (QuizSeed.questions(day: day) ?? []).map(\.answer)
        // Seven right, the eighth wrong, the last two skipped.
        let answers: [Int?] = key.enumerated().map { i, a in i < 7 ? a : (i == 7 ? (a + 1) % 4 : nil) }
        return Spec(name: "quiz-result", title: "Ben plays the quiz of 2026-01-05",
                    summary: """
                    Ben's seq 5 is a quiz result (type 13, section 15.4): field 1 the day, 2026-01-05 — the UTC \
                    date of the record's timestamp — and field 2 ten answers, one byte each (0-3 for a-d, ff \
                    skipped): seven right, one wrong, two skipped. The record carries no score: every node \
                    computes 7 from the answers and the day's questions (sections 15.1-15.2), the `score` line.
                    """,
                    author: ben, seq: 5, timestamp: timestamp,
                    content: .devices(.quizResult, body: QuizResult(day: day, answers: answers).body,
                                      lines: [("score", "\(Quiz.score(answers, QuizSeed.questions(day: day) ?? []))")]))
    }

    /// V23: a public follow (type 12, PROTOCOL.md §6.5).
    static func followSpec(ana: Party, ben: Party) -> Spec {
        Spec(name: "follow", title: "Ben follows Ana",
             summary: """
             Ben's seq 4 is a follow (type 12, section 6.5) of Ana: her key (field 1) and the flag 1 \
             (field 2). Public, with no clock: every node counts Ben among Ana's followers until a newer \
             follow record of Ben's about Ana (timestamp, then record ID) says 0.
             """,
             author: ben, seq: 4, timestamp: start + 6040 * minute,
             content: .devices(.follow, body: Follow(target: ana.key, following: true).body, lines: []))
    }

    /// V18–V22: a post, its edit, a comment, a like and the post's deletion (PROTOCOL.md §6.6).
    static func postSpecs(ana: Party, ben: Party, photo: PhotoRef) throws -> [Spec] {
        let create = Post(.create(photos: [photo], caption: "Pyrite cubes from the quarry, metallic luster",
                                  tags: ["pyrite", "metallic", "cubic"]))
        let post = Spec(name: "post", title: "Ana posts a photo with a caption and tags",
                        summary: """
                        Ana's seq 11 is a post (type 9, section 6.6): field 1 names one photo (the JPEG of \
                        `profile-full`), field 2 the caption, field 3 three canonical tags. Its record ID is the \
                        post's ID, which the next vectors name.
                        """,
                        author: ana, seq: 11, timestamp: start + 6000 * minute,
                        content: .devices(.post, body: create.body, lines: []))
        let postID = try vector(for: post, number: 18).bytes("record-id") ?? []
        return [
            post,
            Spec(name: "post-edit", title: "Ana edits her post's caption",
                 summary: """
                 Ana's seq 12 is an edit of the post (field 4, its ID): a new caption (field 2), no tags, so \
                 the tags register keeps the post's own. The caption register's winner is the greatest \
                 (timestamp, record ID) among the post and its author's edits.
                 """,
                 author: ana, seq: 12, timestamp: start + 6010 * minute,
                 content: .devices(.post, body: Post(.edit(post: postID, caption: "Pyrite cubes, striated faces", tags: nil)).body, lines: [])),
            Spec(name: "comment", title: "Ben comments on Ana's post",
                 summary: """
                 Ben's seq 2 is a comment (type 10): field 1 the post's ID, field 2 his text. Only Ben may \
                 delete it (field 3 its ID, field 4 `01`); only Ana may hide it (field 3, field 5 `01`).
                 """,
                 author: ben, seq: 2, timestamp: start + 6020 * minute,
                 content: .devices(.comment, body: PostComment(post: postID, .create(text: "Fool's gold! Nice cubes.")).body, lines: [])),
            Spec(name: "post-like", title: "Ben likes Ana's post",
                 summary: """
                 Ben's seq 3 is a like of the post (type 11): field 1 its ID, field 2 `01` (`00` takes it \
                 back). One register per (account, post): the newest by (timestamp, record ID) counts.
                 """,
                 author: ben, seq: 3, timestamp: start + 6030 * minute,
                 content: .devices(.postLike, body: PostLike(post: postID, liked: true).body, lines: [])),
            Spec(name: "post-delete", title: "Ana deletes her post",
                 summary: """
                 Ana's seq 13 deletes the post (field 4 its ID, field 5 `01`): every replica removes the post, \
                 the edit, Ben's comment and like, and remembers them, so a copy offered again is a \
                 `duplicate`. The deletion itself stays, so it reaches every replica.
                 """,
                 author: ana, seq: 13, timestamp: start + 6040 * minute,
                 content: .devices(.post, body: Post(.delete(post: postID)).body, lines: [])),
        ]
    }

    /// Field 8 as a list (PROTOCOL.md §6): Cy's second card names three photos.
    static func photoSpecs(main: PhotoRef) throws -> [Spec] {
        func stand(_ text: String, size: UInt32, format: PhotoRef.Format) -> PhotoRef {
            PhotoRef(hash: BLAKE2b.hash(Array(text.utf8), outputLength: 32), size: size, format: format)
        }
        let photos = [stand("mentormate photo two", size: 120_331, format: .png), main,
                      stand("mentormate photo three", size: 9_876, format: .webp)]
        return [
            Spec(name: "profile-photos", title: "Cy's card names three photos",
                 summary: """
                 Cy's seq 2 sets only field 8, the card's photos: a list of three 37-byte references, \
                 concatenated (111 bytes), the main photo first — a PNG of 120331 bytes (hash = BLAKE2b-256 \
                 of the ASCII text `mentormate photo two`), the JPEG of `profile-full`, and a WebP of 9876 \
                 bytes (of `mentormate photo three`). A list of one is the single 37-byte reference of \
                 `profile-full`; an empty value (`profile-edit`) removes them all.
                 """,
                 author: try cy(), seq: 2, timestamp: start + 2940 * minute,
                 content: .profile(ProfileCard(photos: photos))),
        ]
    }

    /// V16–V17: a block (a note, PROTOCOL.md §7.6) and a contact sealed to a match (§7.7).
    static func blockAndContactSpecs(ana: Party, ben: Party, anaLikeID: [UInt8], benLikeID: [UInt8]) throws -> [Spec] {
        guard let secret2 = AccountKeyring.derived(from: ana.keys, epochs: 1...2).secrets[2] else { return [] }
        let payload = NotePayload(target: ben.key, blocked: true)
        let note = try NoteBox.seal(payload, with: SealingKey(account: ana.key, epoch: 2, secret: secret2),
                                    nonce: [UInt8](repeating: 0xd0, count: 24))
        return [
            Spec(name: "note-block", title: "Ana blocks Ben, a note to herself",
                 summary: """
                 Ana's seq 9 is a note (type 7, section 7.6) whose payload carries field 3 (blocked) instead \
                 of field 2: a block of Ben, sealed with her epoch-2 key (box nonce 24 × `d0`). Her devices \
                 leave Ben out of her feed, matches and conversations; Ben learns nothing of it.
                 """,
                 author: ana, seq: 9, timestamp: start + 5900 * minute,
                 content: .devices(.note, body: note.body, lines: [
                    ("epoch-secret", Hex.encode(secret2)), ("payload", Hex.encode(payload.plaintext))])),
            Spec(name: "contact", title: "Ana's contact, sealed to Ben in their match",
                 summary: """
                 Ana's seq 10 is a contact (type 8, section 7.7) for Ben: her text `+1 555 0100` (field 2) \
                 in the match of `like-back` (field 3) and `like` (field 4), sealed like a message (version \
                 1) and carrying her purge tag of that match (field 5, section 8.8). Ben's `unmatch` ended \
                 that match, so no node shows it; Ana's own unmatch of it removes it from every replica.
                 """,
                 author: ana, seq: 10, timestamp: start + 5910 * minute,
                 content: .sealed(.contact, to: ben, payload: ContactPayload(recipient: ben.key, text: "+1 555 0100",
                                                                             answers: benLikeID, mine: anaLikeID))),
        ]
    }

    /// V9–V12: Ana's devices (PROTOCOL.md §6.2, §7.5). Boxes use fixed ephemeral keys and
    /// nonces: 32 bytes of `0x40 + N` and 24 bytes of `0xc0 + N` for vector N.
    static func deviceSpecs(ana: Party) throws -> [Spec] {
        let laptop = try anaLaptop(), lab = try anaLab()
        let epochs = AccountKeyring.derived(from: ana.keys, epochs: 1...2)
        guard let secret1 = epochs.secrets[1], let secret2 = epochs.secrets[2] else { return [] }
        let public1 = try X25519.publicKey(fromSecret: secret1), public2 = try X25519.publicKey(fromSecret: secret2)
        let first = AccountKeyring.derived(from: ana.keys, epochs: 1...1)
        func fixed(_ n: Int) -> (ephemeral: [UInt8], nonce: [UInt8]) {
            ([UInt8](repeating: UInt8(0x40 + n), count: 32), [UInt8](repeating: UInt8(0xc0 + n), count: 24))
        }
        let certTime = start + 4320 * minute, labTime = start + 4340 * minute
        let laptopBox = try first.box(for: laptop.key, of: ana.key, ephemeralSecret: fixed(9).ephemeral, nonce: fixed(9).nonce)
        let labBox = try first.box(for: lab.key, of: ana.key, ephemeralSecret: fixed(11).ephemeral, nonce: fixed(11).nonce)
        let grant = try epochs.grant(epoch: 2, for: lab.key, of: ana.key, ephemeralSecret: fixed(12).ephemeral, nonce: fixed(12).nonce)
        let laptopCert = DeviceCertificate(device: laptop.key, label: "laptop", created: certTime,
                                           encryptionKey: EncryptionKey(epoch: 1, publicKey: public1), keyring: laptopBox)
        let labCert = DeviceCertificate(device: lab.key, label: "lab-3", created: labTime, expires: labTime + 8 * 60 * minute,
                                        encryptionKey: EncryptionKey(epoch: 1, publicKey: public1), keyring: labBox)
        let revocation = DeviceRevocation(device: laptop.key, lastSeq: 1,
                                          rotation: (EncryptionKey(epoch: 2, publicKey: public2), [(lab.key, grant)]))
        var grantPlain = ByteWriter(); grantPlain.u32(2); grantPlain.raw(secret2)
        let ben = try ben()
        let notePayload = NotePayload(target: ben.key, passed: true)
        let note = try NoteBox.seal(notePayload, with: SealingKey(account: ana.key, epoch: 2, secret: secret2), nonce: fixed(13).nonce)
        return [
            Spec(name: "device-cert", title: "Ana certifies her laptop",
                 summary: """
                 Ana's account key signs, at her seq 5, a certificate (type 5, format version 1) for her \
                 laptop's device key: label `laptop`, created at the record's own time, no expiry (field 4 \
                 absent), her encryption key of epoch 1 (field 5) and her keyring — epoch 1's secret — in a \
                 box only the laptop opens (field 6, section 7.5). From now on the laptop's key signs records \
                 for Ana's account.
                 """,
                 author: ana, seq: 5, timestamp: certTime,
                 content: .devices(.device, body: laptopCert.body, lines: [
                    ("device-seed", Hex.encode(laptop.keys.seed)), ("epoch-secret", Hex.encode(secret1)),
                    ("keyring", Hex.encode(first.encoded))])),
            Spec(name: "device-card", title: "Ana's laptop edits her card",
                 summary: """
                 The laptop's first record (seq 1 of its own key) is a card edit for Ana's account: format \
                 version 2, the account key at offset 5 and the laptop's key, which signs, at offset 37. Its \
                 clock names Ana's account key at seq 2, the last card edit the laptop had seen (section 8.3): \
                 the new bio supersedes every write of the account up to there.
                 """,
                 author: laptop, seq: 1, timestamp: start + 4330 * minute,
                 content: .deviceProfile(account: ana, clock: VectorClock([(ana.key, 2)]),
                                         card: ProfileCard(bio: "Maths PhD student. Now writing from my laptop."))),
            Spec(name: "device-cert-expiring", title: "Ana lends herself a lab machine for 8 hours",
                 summary: """
                 Ana's seq 6 certifies the key of lab machine `lab-3` with an expiry 8 hours after it was \
                 created (field 4): records the lab key signs dated later are refused everywhere \
                 (`device-expired`, section 10).
                 """,
                 author: ana, seq: 6, timestamp: labTime,
                 content: .devices(.device, body: labCert.body, lines: [
                    ("device-seed", Hex.encode(lab.keys.seed)), ("epoch-secret", Hex.encode(secret1)),
                    ("keyring", Hex.encode(first.encoded))])),
            Spec(name: "device-revoke", title: "Ana revokes her laptop",
                 summary: """
                 The laptop is lost. Ana's seq 7 revokes its key with last seq 1: the laptop's card edit \
                 (`device-card`) stays, and anything it signs at seq 2 or later is refused everywhere \
                 (`device-revoked`) and removed from replicas that had it. The revocation rotates her \
                 encryption key to epoch 2 (field 3) and grants it to the device that stays, `lab-3` \
                 (field 4): the laptop cannot read what is sealed to Ana from now on.
                 """,
                 author: ana, seq: 7, timestamp: start + 5760 * minute,
                 content: .devices(.revoke, body: revocation.body, lines: [
                    ("device-seed", Hex.encode(lab.keys.seed)), ("epoch-secret", Hex.encode(secret2)),
                    ("grant", Hex.encode(grantPlain.bytes))])),
            Spec(name: "note-pass", title: "Ana passes on Ben, a note to herself",
                 summary: """
                 Ana's seq 8 is a note (type 7, section 7.6): a pass on Ben, sealed with her newest \
                 encryption key (epoch 2), so her devices — and nobody else — leave Ben out of her feed.
                 """,
                 author: ana, seq: 8, timestamp: start + 5800 * minute,
                 content: .devices(.note, body: note.body, lines: [
                    ("epoch-secret", Hex.encode(secret2)), ("payload", Hex.encode(notePayload.plaintext))])),
            Spec(name: "device-like", title: "Ana's lab machine likes Ben, sealed to her account's devices",
                 summary: """
                 The lab machine's second record (seq 2 of its key) is a like of Ben for Ana's account: \
                 format version 2, sealed with version 2 (section 7.5) — with her encryption key of epoch 2 \
                 (field 4, the sender key), to the X25519 form of Ben's account key (he has published no \
                 encryption key). Every current device of Ana's reads it through the self box, keyed by \
                 the epoch secret; Ben reads it with his account key. Box nonce 24 × `0e`, self box 24 × `8e`.
                 """,
                 author: lab, seq: 2, timestamp: start + 5820 * minute,
                 content: .sealedV2(.like, to: ben, payload: LikePayload(target: ben.key, liked: true, peerSeq: 0), account: ana,
                                    epochSecret: secret2)),
        ]
    }

    /// Ana's card with every field (vector V1).
    static func fullCard(photo: PhotoRef) -> ProfileCard {
        var card = ProfileCard(name: "Ana Lima", role: .tutor,
                               bio: "Maths PhD student, patient with beginners.\nOffice hours in room B12.",
                               courses: ["MATH 101", "CS 490"], wage: 25, budget: 12,
                               availability: "Mon–Thu 16:00–19:00", photos: [photo])
        card.slots = try? WeeklySlots.parse("Mon 14-17, Wed 9:30-12")
        card.gender = "woman"
        card.languages = ["english", "portuguese"]
        card.area = "Science Hall"
        card.age = .some(24)
        card.sign = .some(.capricorn)
        card.preferences = Preferences(genders: ["man", "non binary"], minOverlapHours: 2, minBudget: 10)
        card.paused = false
        return card
    }

    static func storySpecs(ana: Party, ben: Party, photo: PhotoRef, greeting: String, reply: String, like: Spec, likeBack: Spec,
                           anaLikeID: [UInt8], benLikeID: [UInt8]) throws -> [Spec] {
        return [
            Spec(name: "profile-full", title: "Ana's first profile card, every field",
                 summary: """
                 Ana publishes her card at seq 1 with all sixteen fields: name `Ana Lima`, role `tutor`, a bio of \
                 two lines, courses `MATH 101` and `CS 490`, wage 25, budget 12, availability \
                 `Mon–Thu 16:00–19:00` (with two U+2013 en dashes), a photo reference: JPEG, 48213 bytes, \
                 hash = BLAKE2b-256 of the ASCII text `mentormate example photo` (a stand-in for photo bytes); \
                 slots `Mon 14-17, Wed 9:30-12` (field 10), gender `woman`, languages `english` and \
                 `portuguese`, area `Science Hall`, age 24, sign 9 (Capricorn), preferences (genders `man` and \
                 `non binary`, 2 hours' overlap, min budget 10) and paused 0 (fields 11–17, PROTOCOL.md §6.3).
                 """,
                 author: ana, seq: 1, timestamp: start,
                 content: .profile(fullCard(photo: photo))),
            Spec(name: "profile-edit", title: "Ana edits two fields",
                 summary: """
                 At seq 2 Ana changes only the wage (30) and removes her photo (field 8 present with an empty \
                 value). The six other fields keep their seq-1 values.
                 """,
                 author: ana, seq: 2, timestamp: start + 60 * minute,
                 content: .profile(ProfileCard(wage: 30, photos: []))),
            like,
            likeBack,
            Spec(name: "chat", title: "Ana writes to Ben (sealed)",
                 summary: """
                 Ana's seq 4 is a chat message to Ben, the first of the conversation (place 1, field 2). It \
                 names its match by the record IDs of the two likes: Ben's (field 4, the record ID of \
                 `like-back`) and her own (field 5, that of `like`). Nobody can name a like before it \
                 exists, so it was written while the two were matched.
                 """,
                 author: ana, seq: 4, timestamp: start + 122 * minute,
                 content: .sealed(.chat, to: ben, payload: ChatPayload(recipient: ben.key, peerSeq: 1, answers: benLikeID,
                                                                       mine: anaLikeID, text: greeting))),
            Spec(name: "chat-reply", title: "Ben answers (sealed)",
                 summary: """
                 Ben's seq 2 answers at place 2, after Ana's message, and names the same match: Ana's like \
                 (field 4) and his own (field 5). The text holds a U+2014 em dash (3 bytes of UTF-8).
                 """,
                 author: ben, seq: 2, timestamp: start + 125 * minute,
                 content: .sealed(.chat, to: ana, payload: ChatPayload(recipient: ana.key, peerSeq: 2, answers: anaLikeID,
                                                                       mine: benLikeID, text: reply))),
            Spec(name: "unmatch", title: "Ben unmatches Ana (sealed)",
                 summary: """
                 Ben's seq 3 unmatches Ana: it names the match it ends by its two likes, Ana's (field 3) and \
                 his (field 4). That match is over — not matched, its conversation gone on both sides — and \
                 new likes would make a new one (section 8.7).
                 """,
                 author: ben, seq: 3, timestamp: start + 1440 * minute,
                 content: .sealed(.unmatch, to: ana, payload: UnmatchPayload(target: ana.key, peerSeq: 4, answers: anaLikeID, mine: benLikeID))),
            Spec(name: "profile-work", title: "Cy's first card, with proof of work",
                 summary: """
                 Cy joins the built-in network at its default difficulty (section 6.1): her seq 1 sets name \
                 `Cy Okafor` and role `student`, and field 9 holds the nonce 3184834, whose work hash has 24 \
                 leading zero bits (23 are needed).
                 """,
                 author: try cy(), seq: 1, timestamp: start + 2880 * minute,
                 content: .profile(ProfileCard(name: "Cy Okafor", role: .student, work: cyWorkNonce))),
        ]
    }

    static func generate() throws -> [(spec: Spec, vector: Vector)] {
        try specs().enumerated().map { i, spec in (spec, try vector(for: spec, number: i + 1)) }
    }

    /// A sealed body as `SealedRecordSchema.seal` makes it, but with fixed nonces: 24 bytes of
    /// `number` for the box and 24 bytes of `0x80 + number` for the self box.
    static func sealedBody(type: RecordType, payload: any SealedPayload, author: SigningKeyPair, number: Int) throws -> SealedBody {
        let secrets = try PairSecrets(me: author, other: payload.counterpart)
        let me = author.publicKey.key
        let tag = secrets.tag(type: type, author: me)
        let box = try XChaCha20Poly1305.seal(payload.plaintext, key: secrets.encryptionKey,
                                             associatedData: [type.rawValue] + me.bytes + tag,
                                             nonce: [UInt8](repeating: UInt8(number), count: XChaCha20Poly1305.nonceLength))
        let selfBox = try XChaCha20Poly1305.seal(payload.counterpart.bytes, key: SelfBox.key(author), associatedData: [type.rawValue],
                                                 nonce: [UInt8](repeating: UInt8(0x80 + number), count: XChaCha20Poly1305.nonceLength))
        // A contact carries its match's purge tag (section 8.8); the other vectors show none.
        let purge = type == .contact ? PurgeTag.match(of: payload).flatMap { m in PurgeTag.key(account: author).map { PurgeTag.tag(key: $0, likes: m.0, m.1) } } : nil
        return SealedBody(pairTag: tag, box: box, selfBox: selfBox, purgeTag: purge)
    }

    static func vector(for spec: Spec, number: Int) throws -> Vector {
        let author = spec.author.keys
        let type: RecordType
        let body: [UInt8]
        var extraLines: [(String, String)] = []
        var counterpartLines: [(String, String)] = []
        var account: Party?
        var clock = VectorClock()
        switch spec.content {
        case .devices(let deviceType, let deviceBody, let lines):
            type = deviceType
            body = deviceBody
            extraLines = lines
        case .deviceProfile(let owner, let deviceClock, let card):
            type = .profile
            body = card.body
            account = owner
            clock = deviceClock
            var w = ByteWriter()
            clock.encode(into: &w)
            counterpartLines = [("account-public-key", Hex.encode(owner.key.bytes)), ("account-id", owner.key.id),
                                ("clock", Hex.encode(w.bytes))]
        case .profile(let card):
            type = .profile
            body = card.body
            if let nonce = card.work {
                let network = AccountWork.networkID(.default)
                let hash = AccountWork.hash(account: spec.author.key, nonce: nonce, network: network)
                extraLines = [("network-id", Hex.encode(network)), ("work-difficulty", String(AccountWork.defaultBits)),
                               ("work-nonce", String(nonce)), ("work-hash", Hex.encode(hash)),
                               ("work-bits", String(AccountWork.leadingZeroBits(hash)))]
            }
        case .sealedV2(let sealedType, let to, let payload, let owner, let secret):
            type = sealedType
            account = owner
            let senderKey = try X25519.publicKey(fromSecret: secret)
            let theirKey = try X25519.publicKey(fromEd25519: SigningPublicKey(bytes: to.key.bytes))
            let shared = try X25519.sharedSecret(secretKey: secret, publicKey: theirKey)
            let (lo, hi) = owner.key < to.key ? (owner.key, to.key) : (to.key, owner.key)
            let pairKey = BLAKE2b.hash(Array("mentormate pair v2".utf8) + lo.bytes + hi.bytes, key: shared, outputLength: 32)
            let secrets = try PairSecrets(me: owner.key, mySecret: secret, other: to.key, theirKey: theirKey)
            let tag = secrets.tag(type: sealedType, author: owner.key)
            let box = try XChaCha20Poly1305.seal(payload.plaintext, key: secrets.encryptionKey,
                                                 associatedData: [sealedType.rawValue] + owner.key.bytes + tag + senderKey,
                                                 nonce: [UInt8](repeating: UInt8(number), count: XChaCha20Poly1305.nonceLength))
            let selfKey = SelfBox.keyV2(secret)
            let selfBox = try XChaCha20Poly1305.seal(to.key.bytes + theirKey, key: selfKey, associatedData: [sealedType.rawValue] + senderKey,
                                                     nonce: [UInt8](repeating: UInt8(0x80 + number), count: XChaCha20Poly1305.nonceLength))
            body = SealedBody(pairTag: tag, box: box, selfBox: selfBox, senderKey: senderKey).encoded
            counterpartLines = [("account-public-key", Hex.encode(owner.key.bytes)), ("account-id", owner.key.id), ("clock", "00"),
                                ("counterpart-seed", Hex.encode(to.keys.seed)), ("counterpart-public-key", Hex.encode(to.key.bytes)),
                                ("counterpart-id", to.key.id)]
            extraLines = [("epoch-secret", Hex.encode(secret)), ("sender-key", Hex.encode(senderKey)), ("their-key", Hex.encode(theirKey)),
                          ("x25519-shared-secret", Hex.encode(shared)), ("pair-key", Hex.encode(pairKey)), ("pair-tag", Hex.encode(tag)),
                          ("encryption-key", Hex.encode(secrets.encryptionKey)),
                          ("box-nonce", Hex.encode(Array(box.prefix(XChaCha20Poly1305.nonceLength)))),
                          ("payload", Hex.encode(payload.plaintext)), ("self-box-key", Hex.encode(selfKey)),
                          ("self-box-nonce", Hex.encode(Array(selfBox.prefix(XChaCha20Poly1305.nonceLength))))]
        case .sealed(let sealedType, let to, let payload):
            precondition(payload.counterpart == to.key, "\(spec.name): the payload names someone else")
            type = sealedType
            let sealed = try sealedBody(type: type, payload: payload, author: author, number: number)
            body = sealed.encoded
            let derivation = try PairDerivation(me: author, other: to.key)
            counterpartLines = [("counterpart-seed", Hex.encode(to.keys.seed)),
                                ("counterpart-public-key", Hex.encode(to.key.bytes)),
                                ("counterpart-id", to.key.id)]
            extraLines = [("x25519-shared-secret", Hex.encode(derivation.shared)),
                           ("pair-key", Hex.encode(derivation.pairKey)),
                           ("pair-tag", Hex.encode(sealed.pairTag)),
                           ("encryption-key", Hex.encode(derivation.encryptionKey)),
                           ("box-nonce", Hex.encode(Array(sealed.box.prefix(XChaCha20Poly1305.nonceLength)))),
                           ("payload", Hex.encode(payload.plaintext)),
                           ("self-box-key", Hex.encode(PairDerivation.selfBoxKey(seed: author.seed))),
                           ("self-box-nonce", Hex.encode(Array(sealed.selfBox.prefix(XChaCha20Poly1305.nonceLength))))]
        }
        let signed = try VerifiedRecord.sign(type: type, by: author, for: account?.key, seq: spec.seq,
                                             timestamp: spec.timestamp, clock: clock, body: body)
        var v = Vector()
        let lines: [(String, String)] = [
            ("name", spec.name),
            ("type", String(type.rawValue)),
            ("author-seed", Hex.encode(author.seed)),
            ("author-public-key", Hex.encode(spec.author.key.bytes)),
            ("author-id", spec.author.key.id),
        ] + counterpartLines + [
            ("seq", String(spec.seq)),
            ("timestamp", String(spec.timestamp)),
            ("body", Hex.encode(body)),
            ("signed-message", Hex.encode(signed.record.signedBytes)),
            ("signature", Hex.encode(signed.record.signature)),
            ("encoded", Hex.encode(signed.encoded)),
            ("record-id", Hex.encode(signed.id)),
        ] + extraLines
        for (key, value) in lines { v[key] = value }
        return v
    }

    /// The Markdown of the vectors section, markers included, exactly as in PROTOCOL.md.
    static func render(_ vectors: [(spec: Spec, vector: Vector)]) -> String {
        var out = [beginMarker, ""]
        for (i, (spec, vector)) in vectors.enumerated() {
            out.append("#### V\(i + 1). `\(spec.name)`: \(spec.title)")
            out.append("")
            out.append(spec.summary)
            out.append("")
            out.append(fence)
            for (key, value) in vector.lines { out.append("\(key): \(value)") }
            out.append("```")
            out.append("")
        }
        out.append(endMarker)
        return out.joined(separator: "\n")
    }
}

// MARK: - Running a program

extension ProtocolVectors {
    /// Runs `arguments` through `/usr/bin/env` (so `python3` is looked up on PATH) and returns
    /// its exit status and combined output; status 127 if it could not be started.
    static func run(_ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (127, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
