import Foundation
import MentorAPI
import MentorArguments

/// How `mentormate` prints the daemon's results for people: aligned tables and labelled blocks.
/// Pure functions of the JSON (and a time zone), so tests pin the exact text.
public enum ClientFormat {
    /// IDs in tables: the first 12 characters, which still work as a prefix on the command line.
    public static func shortID(_ id: String) -> String { String(sanitize(id).prefix(12)) }

    /// Text from the network is shown, never obeyed: control characters (terminal escape
    /// sequences) and bidirectional overrides become `?`; newlines stay only when asked.
    public static func sanitize(_ text: String, keepNewlines: Bool = false) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if scalar == "\n" && keepNewlines {
                out.append(scalar)
            } else if scalar == "\t" {
                out.append(" ")
            } else if v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v)
                        || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) {
                out.append("?")
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// One line for a table cell: sanitized, newlines as spaces, cut at `width` with "…".
    public static func cell(_ text: String, width: Int = 40) -> String {
        let clean = sanitize(text.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " "))
        return clean.count > width ? String(clean.prefix(width - 1)) + "…" : clean
    }

    /// Columns padded to their widest cell, two spaces apart; `right` holds the indexes of
    /// columns aligned right (numbers). No trailing spaces.
    public static func table(_ headers: [String], _ rows: [[String]], right: Set<Int> = []) -> String {
        let all = [headers] + rows
        var widths = [Int](repeating: 0, count: headers.count)
        for row in all {
            for (i, c) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) }
        }
        return all.map { row in
            var line = ""
            for (i, c) in row.enumerated() where i < widths.count {
                let pad = String(repeating: " ", count: widths[i] - c.count)
                line += (i == 0 ? "" : "  ") + (right.contains(i) ? pad + c : c + pad)
            }
            return String(line.reversed().drop(while: { $0 == " " }).reversed())
        }.joined(separator: "\n")
    }

    /// Labelled lines (`  label   value`); a value with newlines continues under itself.
    public static func block(_ pairs: [(String, String)], indent: Int = 2) -> String {
        let width = pairs.map(\.0.count).max() ?? 0
        let pad = String(repeating: " ", count: indent)
        return pairs.map { label, value in
            let lines = value.split(separator: "\n", omittingEmptySubsequences: false)
            let continuation = "\n" + pad + String(repeating: " ", count: width + 2)
            return pad + label.cliPadded(to: width) + "  " + lines.joined(separator: continuation)
        }.joined(separator: "\n")
    }

    /// Milliseconds since the epoch as local `yyyy-MM-dd HH:mm`.
    public static func time(_ milliseconds: Int64, in zone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Bytes as `812 B`, `47.1 KiB`, `3.9 MiB`.
    public static func size(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let kib = Double(bytes) / 1024
        if kib < 1024 { return String(format: "%.1f KiB", kib) }
        return String(format: "%.1f MiB", kib / 1024)
    }

    /// Seconds as `42s`, `5m 3s`, `2h 13m`, `3d 4h`.
    public static func duration(_ seconds: Int64) -> String {
        let s = max(seconds, 0)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m \(s % 60)s" }
        if s < 86400 { return "\(s / 3600)h \(s % 3600 / 60)m" }
        return "\(s / 86400)d \(s % 86400 / 3600)h"
    }

    /// The daemon's result for scripts: pretty, sorted keys, slashes unescaped.
    public static func prettyJSON(_ value: JSON) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return value.description }
        return String(decoding: data, as: UTF8.self)
    }

    static func text(_ value: JSON?) -> String? {
        switch value {
        case .string(let s)?: return s
        case .int(let i)?: return String(i)
        case .double(let d)?: return String(d)
        case .bool(let b)?: return b ? "yes" : "no"
        default: return nil
        }
    }

    // MARK: Results

    // Each reads the daemon's answer with its result type's keys (MentorAPI's APITypes.swift),
    // leniently: a missing field prints as "?" or is left out.

    /// `whoami`, `login`, `logout`, `signup`: an `AccountInfo`.
    public static func account(_ json: JSON) -> String {
        let info = Fields<AccountInfo>(json)
        let name = sanitize(info[.name]?.stringValue ?? "(no name)")
        let role = sanitize(info[.role]?.stringValue ?? "?")
        let key: String
        switch (info[.protected]?.boolValue ?? false, info[.unlocked]?.boolValue ?? false) {
        case (true, true): key = "protected by a passphrase, unlocked"
        case (true, false): key = "protected by a passphrase, locked (`mentormate login` unlocks it)"
        case (false, true): key = "not protected by a passphrase, unlocked"
        case (false, false): key = "locked (`mentormate login` unlocks it)"
        }
        var pairs = [("id", sanitize(info[.id]?.stringValue ?? "?"))]
        if let email = info[.email]?.stringValue { pairs.append(("email", sanitize(email))) }
        pairs.append(("key", key))
        if let device = info[.device]?.stringValue {
            let label = info[.deviceLabel]?.stringValue.map { sanitize($0) + ", " } ?? ""
            let state = info[.deviceState]?.stringValue ?? "?"
            let plain: String
            switch state {
            case "revoked": plain = "REVOKED: nodes refuse what it signs; link this machine again (`mentormate device link`)"
            case "expired": plain = "EXPIRED: nodes refuse what it signs; link this machine again (`mentormate device link`)"
            case "unconfirmed": plain = "its certificate has not arrived yet"
            default: plain = state
            }
            pairs.append(("device", "\(label)\(sanitize(device)) — \(plain)"))
        }
        if info[.accountKey]?.boolValue == true { pairs.append(("account key", "held here (can approve, revoke, export)")) }
        return "\(name) (\(role))\n" + block(pairs)
    }

    /// `profile show` and `profile set`: a `Card`, with the full ID. `extra` rows go after the
    /// courses (`swipe` adds why the card ranks where it does).
    public static func card(_ json: JSON, in zone: TimeZone, extra: [(String, String)] = []) -> String {
        let card = Fields<Card>(json)
        let name = sanitize(card[.name]?.stringValue ?? "(no name)")
        let role = sanitize(card[.role]?.stringValue ?? "?")
        var pairs: [(String, String)] = [("id", sanitize(card[.id]?.stringValue ?? "?"))]
        if let bio = card[.bio]?.stringValue { pairs.append(("bio", sanitize(bio, keepNewlines: true))) }
        let courses = (card[.courses]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
        pairs.append(("courses", courses.isEmpty ? "none" : courses.joined(separator: ", ")))
        pairs += extra
        if let wage = card[.wage]?.intValue { pairs.append(("wage", "\(wage)")) }
        if let budget = card[.budget]?.intValue { pairs.append(("budget", "\(budget)")) }
        if let availability = card[.availability]?.stringValue {
            pairs.append(("availability", sanitize(availability, keepNewlines: true)))
        }
        pairs += cardFields(card)
        if let m = card.object(.member, as: CardMember.self), let domain = m[.domain]?.stringValue {
            pairs.append(("member", "of \(sanitize(domain))" + (m[.expires]?.intValue.map { " until \(time($0, in: zone).prefix(10))" } ?? "")))
        }
        if let contact = card[.contact]?.stringValue { pairs.append(("contact", sanitize(contact))) }
        // Every photo, numbered as `profile photo remove|order` take them (a daemon before photo
        // lists sends only `photo`).
        var photos = card.objects(.photos, as: PhotoInfo.self)
        if card[.photos]?.arrayValue == nil, let photo = card.object(.photo, as: PhotoInfo.self) { photos = [photo] }
        for (i, photo) in photos.enumerated() {
            guard let hash = photo[.hash]?.stringValue else { continue }
            var details: [String] = []
            if let bytes = photo[.size]?.intValue { details.append(size(bytes)) }
            if let type = photo[.type]?.stringValue { details.append(sanitize(type)) }
            if i == 0 && photos.count > 1 { details.append("main") }
            let label = photos.count == 1 ? "photo" : "photo \(i + 1)"
            pairs.append((label, sanitize(hash) + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")))
        }
        if let updated = card[.updatedAt]?.intValue { pairs.append(("updated", time(updated, in: zone))) }
        if let matches = card[.matches]?.intValue { pairs.append(("matches", "\(matches)")) }
        if let pending = card[.pendingLikes]?.intValue { pairs.append(("likes", "\(pending) waiting for your answer")) }
        if let followers = card[.followers]?.intValue, let following = card[.following]?.intValue {
            pairs.append(("follows", "\(followers) follower\(followers == 1 ? "" : "s"), following \(following)"))
        }
        if let posts = card[.posts]?.intValue, posts > 0 { pairs.append(("posts", "\(posts)")) }
        for (label, key) in [("hosts", Card.CodingKeys.hosted), ("attends", .attended)] {
            let list = card.objects(key, as: MeetupInfo.self)
            guard !list.isEmpty else { continue }
            pairs.append((label, list.map { m in
                "\(sanitize(m[.id]?.stringValue ?? "?"))  \(m[.start]?.intValue.map { time($0, in: zone) } ?? "?")  "
                    + cell(m[.title]?.stringValue ?? "", width: 40) + "  (\(sanitize(m[.status]?.stringValue ?? "")))"
            }.joined(separator: "\n")))
        }
        pairs += compatibility(card)
        if let conflicts = card[.conflicts]?.objectValue, !conflicts.isEmpty {
            var lines: [String] = []
            for (field, values) in conflicts.sorted(by: { $0.key < $1.key }) {
                for v in values.arrayValue ?? [values] {
                    lines.append("\(sanitize(field)): " + cell(text(v) ?? v.description, width: 60))
                }
            }
            pairs.append(("conflicts", lines.joined(separator: "\n")))
        }
        var out = "\(name) (\(role))\n" + block(pairs)
        if !(card[.conflicts]?.objectValue?.isEmpty ?? true) {
            out += "\n\nConflicts are concurrent edits that lost the tie-break; they stay until the next change of the field."
        }
        if card[.forked]?.boolValue == true {
            out += "\n\nWarning: this account's key signed two different records with one sequence number: "
                + "the key is used on two nodes, or was stolen."
        }
        return out
    }

    /// The card's fields 10–17, each when given.
    static func cardFields(_ card: Fields<Card>) -> [(String, String)] {
        var pairs: [(String, String)] = []
        if let slots = card[.slots]?.stringValue { pairs.append(("slots", sanitize(slots))) }
        if let gender = card[.gender]?.stringValue { pairs.append(("gender", sanitize(gender))) }
        let languages = (card[.languages]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
        if !languages.isEmpty { pairs.append(("languages", languages.joined(separator: ", "))) }
        if let area = card[.area]?.stringValue { pairs.append(("area", sanitize(area))) }
        if let age = card[.age]?.intValue { pairs.append(("age", "\(age)")) }
        if let sign = card[.sign]?.stringValue { pairs.append(("sign", sanitize(sign))) }
        if let p = card.object(.preferences, as: CardPreferences.self) {
            var parts: [String] = []
            let genders = (p[.genders]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
            if !genders.isEmpty { parts.append("gender " + genders.joined(separator: " or ")) }
            if let h = p[.overlapHours]?.intValue { parts.append("\(h) h a week free together") }
            if let w = p[.maxWage]?.intValue { parts.append("wage at most \(w)") }
            if let b = p[.minBudget]?.intValue { parts.append("budget at least \(b)") }
            if !parts.isEmpty { pairs.append(("prefers", parts.joined(separator: "; "))) }
        }
        if card[.paused]?.boolValue == true { pairs.append(("paused", "yes: hidden from new feeds")) }
        return pairs
    }

    /// Another's card: the score and one line per part.
    static func compatibility(_ card: Fields<Card>) -> [(String, String)] {
        guard let score = card[.score]?.intValue else { return [] }
        let lines = card.objects(.compatibility, as: CompatibilityPart.self).map { part in
            let points = part[.points]?.doubleValue ?? 0
            let shown = points == points.rounded() ? "\(Int(points))" : String(format: "%.1f", points)
            return "\(sanitize(part[.part]?.stringValue ?? "?")) \(shown)/\(part[.max]?.intValue ?? 0): \(sanitize(part[.reason]?.stringValue ?? ""))"
        }
        return [("score", "\(score)/100"), ("because", lines.joined(separator: "\n"))]
    }

    /// `feed`: one row per card, best first.
    public static func feed(_ json: JSON) -> String {
        let entries = Fields<FeedResult>(json).objects(.cards, as: FeedCard.self)
        if entries.isEmpty {
            return "Nobody new to show right now. People appear as their nodes are discovered; try again later or without --course."
        }
        var anyShared = false
        let rows: [[String]] = entries.map { entry in
            let card = entry.viewed(as: Card.self)
            let shared = Set((entry[.sharedCourses]?.arrayValue ?? []).compactMap(\.stringValue))
            let courses = (card[.courses]?.arrayValue ?? []).compactMap(\.stringValue)
            let ordered = courses.filter { shared.contains($0) }.map { $0 + "*" } + courses.filter { !shared.contains($0) }
            if !shared.isEmpty { anyShared = true }
            let role = card[.role]?.stringValue ?? ""
            let pay = role == "tutor" ? card[.wage]?.intValue : card[.budget]?.intValue
            return [shortID(card[.id]?.stringValue ?? "?"),
                    cell(card[.name]?.stringValue ?? "", width: 24),
                    card[.score]?.intValue.map(String.init) ?? "-",
                    cell(role, width: 8),
                    pay.map(String.init) ?? "-",
                    cell(ordered.joined(separator: ", "), width: 40),
                    cell(feedReasons(entry.json).joined(separator: ", "), width: 40)]
        }
        var out = table(["ID", "NAME", "SCORE", "ROLE", "PAY", "COURSES", "WHY"], rows, right: [2, 4])
        out += "\n\n" + (anyShared ? "* a course you share. " : "") + "PAY is a tutor's wage or a student's budget. "
            + "SCORE: compatibility 0-100 (`profile show ID` gives its parts); the feed ranks by it, then nodes nearby now, then the newest card."
        out += "\n`mentormate profile show ID` shows a card; `mentormate like ID` or `mentormate pass ID` decides."
        return out
    }

    /// Why a feed card ranks where it does, from what the daemon computed for it
    /// (`sharedCourses`, `nearby`); empty when only recency placed it.
    public static func feedReasons(_ json: JSON) -> [String] {
        let entry = Fields<FeedCard>(json)
        var reasons: [String] = []
        let shared = (entry[.sharedCourses]?.arrayValue ?? []).compactMap(\.stringValue).map { sanitize($0) }
        if !shared.isEmpty { reasons.append("shares " + shared.joined(separator: ", ")) }
        if entry[.nearby]?.boolValue == true { reasons.append("nearby now") }
        if reasons.isEmpty { reasons.append("newest first") }
        return reasons
    }

    /// `matches`: one row per match with its latest message.
    public static func matches(_ json: JSON, in zone: TimeZone) -> String {
        let matches = Fields<MatchesResult>(json).objects(.matches, as: MatchSummary.self)
        if matches.isEmpty { return "No matches yet. `mentormate feed` shows people to like." }
        let rows: [[String]] = matches.map { m in
            var last = ""
            if let message = m.object(.lastMessage, as: Message.self) {
                let who = message[.mine]?.boolValue == true ? "you" : "them"
                let when = message[.sentAt]?.intValue.map { time($0, in: zone) } ?? ""
                last = "\(when) \(who): " + cell(message[.text]?.stringValue ?? "", width: 40)
            }
            return [shortID(m[.id]?.stringValue ?? "?"), cell(m[.name]?.stringValue ?? "", width: 24),
                    text(m[.messages]) ?? "0", last]
        }
        return table(["ID", "NAME", "MESSAGES", "LAST"], rows, right: [2])
    }

    /// One chat message, as in `chat ID` and `chat ID --follow`.
    public static func message(_ json: JSON, otherName: String, speakerWidth: Int, in zone: TimeZone) -> String {
        let message = Fields<Message>(json)
        let mine = message[.mine]?.boolValue == true
        let who = (mine ? "you" : otherName).cliPadded(to: speakerWidth)
        let when = message[.sentAt]?.intValue.map { time($0, in: zone) } ?? "????-??-?? ??:??"
        let lead = "\(when)  \(who)  "
        let lines = sanitize(message[.text]?.stringValue ?? "", keepNewlines: true).split(separator: "\n", omittingEmptySubsequences: false)
        return lead + lines.joined(separator: "\n" + String(repeating: " ", count: lead.count))
    }

    /// `chat ID`: the conversation, oldest first, and whether it is still open.
    public static func conversation(_ json: JSON, otherName: String, otherID: String, in zone: TimeZone) -> String {
        let history = Fields<ChatHistory>(json)
        let name = cell(otherName, width: 24)
        var out = "Conversation with \(name) (\(shortID(otherID)))"
        let messages = history[.messages]?.arrayValue ?? []
        let width = max(3, name.count)
        if messages.isEmpty { out += "\nNo messages yet." }
        for m in messages { out += "\n" + message(m, otherName: name, speakerWidth: width, in: zone) }
        if let by = history[.unmatchedBy]?.stringValue {
            out += "\n" + (by == otherID ? "\(name) ended the match; the conversation is closed."
                                         : "You ended the match; the conversation is closed.")
        } else if history[.matched]?.boolValue == false {
            out += "\nYou are not matched with \(name): chat opens once you both liked each other."
        }
        return out
    }

    /// `peers`.
    /// `device list`: one row per device, this one marked.
    public static func devices(_ json: JSON, in zone: TimeZone) -> String {
        let result = Fields<DevicesResult>(json)
        let devices = (result[.devices]?.arrayValue ?? []).map { Fields<DeviceInfo>($0) }
        guard !devices.isEmpty else {
            return "No devices: this account signs with its account key alone (it was made before devices existed)."
        }
        var lines = devices.map { d -> String in
            let mark = d[.this]?.boolValue == true ? "*" : " "
            let id = sanitize(d[.id]?.stringValue ?? "?")
            let label = sanitize(d[.label]?.stringValue ?? "?")
            var state = sanitize(d[.state]?.stringValue ?? "?")
            if state == "current", let until = d[.expires]?.intValue { state += ", until " + time(until, in: zone) }
            let seen = d[.lastSeen]?.intValue.map { "last seen " + time($0, in: zone) } ?? "not seen yet"
            return "\(mark) \(id)  \(label)  \(state)  \(seen)"
        }
        lines.append("* this machine" + (result[.accountKey]?.boolValue == true ? "; this node holds the account key (it can approve and revoke)" : ""))
        return lines.joined(separator: "\n")
    }

    public static func peers(_ json: JSON, in zone: TimeZone) -> String {
        let peers = Fields<PeersResult>(json).objects(.peers, as: Peer.self)
        if peers.isEmpty {
            return "No peers right now. `mentormate doctor` checks discovery (Avahi, multicast, firewall)."
        }
        let rows: [[String]] = peers.map { p in
            [shortID(p[.node]?.stringValue ?? "?"), cell(p[.address]?.stringValue ?? "", width: 64),
             cell(p[.via]?.stringValue ?? "", width: 10), p[.hub]?.boolValue == true ? "hub" : "node",
             p[.since]?.intValue.map { time($0, in: zone) } ?? ""]
        }
        return table(["NODE", "ADDRESS", "VIA", "ROLE", "SINCE"], rows)
    }

    /// `status`. `zone` and `now` (milliseconds since the epoch) date the network's last change.
    public static func status(_ json: JSON, in zone: TimeZone = .current,
                              now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) -> String {
        let s = Fields<MentorAPI.Status>(json)
        var pairs: [(String, String)] = [
            ("node", sanitize(s[.node]?.stringValue ?? "?")),
            ("version", sanitize(text(s[.version]) ?? "?")),
        ]
        if let listen = s.object(.listen, as: MentorAPI.Status.Listen.self) {
            let host = sanitize(listen[.host]?.stringValue ?? "?")
            let port = text(listen[.port]) ?? "?"
            pairs.append(("listen", host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"))
        } else {
            pairs.append(("listen", "not listening"))
        }
        pairs.append(("socket", sanitize(text(s[.socket]) ?? "?")))
        pairs.append(("state dir", sanitize(text(s[.stateDir]) ?? "?")))
        pairs.append(("records", "\(text(s[.records]) ?? "?") from \(text(s[.authors]) ?? "?") authors, \(text(s[.pending]) ?? "?") pending"))
        pairs.append(("accounts", text(s[.accounts]) ?? "?"))
        pairs.append(("peers", text(s[.peers]) ?? "?"))
        if let hub = s.object(.hub, as: MentorAPI.Status.Hub.self) {
            let linked = hub[.linked]?.intValue ?? 0, held = hub[.held]?.intValue ?? 0
            if hub[.isHub]?.boolValue == true {
                pairs.append(("role", "hub (no accounts; relays for every node linked)"))
            }
            if linked > 0 || held > 0 {
                pairs.append(("hubs", "\(linked) linked" + (held > 0 ? "; \(held) nearby node\(held == 1 ? "" : "s") not dialled (a hub relays for them)" : "")))
            }
        }
        pairs.append(("discovery", sanitize(text(s[.discovery]) ?? "?")))
        let domains = (s[.browseDomains]?.arrayValue ?? []).compactMap(\.stringValue)
        if !domains.isEmpty { pairs.append(("browse domains", domains.map { sanitize($0) }.joined(separator: " "))) }
        if let network = s.object(.network, as: MentorAPI.Status.Network.self) {
            let interfaces = network.objects(.interfaces, as: MentorAPI.Status.NetworkInterface.self).map { i in
                ([i[.name]?.stringValue ?? "?"] + (i[.addresses]?.arrayValue ?? []).compactMap(\.stringValue)).map { sanitize($0) }.joined(separator: " ")
            }
            pairs.append(("network", interfaces.isEmpty ? "no usable interface (offline)" : interfaces.joined(separator: "\n")))
            if let at = network[.changedAt]?.intValue {
                let changes = network[.changes]?.intValue ?? 0
                pairs.append(("network changed", "at \(time(at, in: zone)) (\(duration((now - at) / 1000)) ago; "
                              + "\(changes) change\(changes == 1 ? "" : "s") since start)"))
            }
        }
        if let campus = s.object(.campus, as: StatusCampus.self) {
            let members = campus[.members]?.intValue ?? 0, declined = campus[.declinedRecords]?.intValue ?? 0
            var line = "CA " + cell(campus[.caKey]?.stringValue ?? "?", width: 20)
                + (campus[.requireMembership]?.boolValue == true ? " (members only)" : "")
                + "; \(members) member\(members == 1 ? "" : "s")"
            if declined > 0 { line += ", \(declined) record\(declined == 1 ? "" : "s") of non-members not stored" }
            if let ca = campus[.ca]?.stringValue { line += "\ncodes from \(sanitize(ca))" }
            pairs.append(("campus", line))
        }
        pairs.append(("uptime", s[.uptime]?.intValue.map(duration) ?? "?"))
        pairs.append(("health", sanitize(text(s[.health]) ?? "?")))
        var out = block(pairs, indent: 0)
        let problems = (s[.problems]?.arrayValue ?? []).compactMap(\.stringValue)
        if !problems.isEmpty {
            out += "\nproblems:\n" + problems.map { "  - " + sanitize($0) }.joined(separator: "\n")
        }
        return out
    }

    /// `doctor`: one line per check, with the fix under a failed one.
    public static func doctor(_ json: JSON) -> String {
        let checks = Fields<DoctorResult>(json).objects(.checks, as: DoctorCheck.self)
        let width = checks.map { cell($0[.name]?.stringValue ?? "", width: 20).count }.max() ?? 0
        return checks.map { c in
            let ok = c[.ok]?.boolValue == true
            let warning = ok && c[.warning]?.boolValue == true
            var line = (warning ? "warn  " : ok ? "ok    " : "FAIL  ") + cell(c[.name]?.stringValue ?? "", width: 20).cliPadded(to: width)
                + "  " + sanitize(c[.detail]?.stringValue ?? "")
            if !ok || warning, let fix = c[.fix]?.stringValue {
                line += "\n" + String(repeating: " ", count: 6 + width + 2) + "fix: " + sanitize(fix)
            }
            return line
        }.joined(separator: "\n")
    }
}
