import Foundation
import MentorAPI
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEndTests {
    /// docs/API.md's errors and limits over the raw socket, and a subscriber that never reads
    /// while hundreds of events are pushed: throughout, another client's `status` is answered
    /// promptly and correctly, nothing bad changes anything, and the daemon's memory stays put.
    @Test func badInputGetsClearErrorsWhileTheDaemonKeepsServingInBoundedMemory() throws {
        try E2E.requireRoot()
        let e2e = try E2E()
        defer { e2e.cleanup() }
        let flo = try e2e.makeUser("flood")
        let daemon = try e2e.startDaemon()
        defer { daemon.kill() }

        // Root (this process, so its raw connections) is Rita; the user `flo` is Flo; they match.
        try e2e.mm(["signup", "--email", "rita@uni.edu", "--name", "Rita", "--role", "student"])
        try e2e.mm(["profile", "set", "--courses", "CS 490", "--bio", "original"])
        try e2e.mm(["signup", "--email", "flo@uni.edu", "--name", "Flo", "--role", "tutor"], as: flo)
        let rita = try #require(try e2e.mmJSON(["whoami"])["id"]?.stringValue)
        let floID = try #require(try e2e.mmJSON(["whoami"], as: flo)["id"]?.stringValue)
        try e2e.mm(["like", floID])
        #expect(try e2e.mmJSON(["like", rita], as: flo)["matched"] == true)
        let node = try #require(try e2e.mmJSON(["status"])["node"]?.stringValue)

        let rssBefore = try #require(daemon.residentKiB())
        let prober = StatusProber(socket: e2e.socket, node: node)
        var proberReport: StatusProber.Report?
        defer { if proberReport == nil { _ = prober.stop() } }

        // One bad line per connection, and the error each must get.
        let bad: [(String, [UInt8], Int64, String?)] = [
            ("not JSON", Array("this is not json\n".utf8), -32700, nil),
            ("cut-off JSON", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\n".utf8), -32700, nil),
            ("invalid UTF-8", [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D, 0x0A], -32700, nil),
            ("a number", Array("42\n".utf8), -32600, nil),
            ("a string", Array("\"status\"\n".utf8), -32600, nil),
            ("a batch over 100", Array(("[" + Array(repeating: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}", count: 101)
                .joined(separator: ",") + "]\n").utf8), -32600, "at most 100"),
            ("an empty batch", Array("[]\n".utf8), -32600, "batch"),
            ("no jsonrpc", Array("{\"id\":1,\"method\":\"status\"}\n".utf8), -32600, "jsonrpc"),
            ("jsonrpc 1.0", Array("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"status\"}\n".utf8), -32600, "jsonrpc"),
            ("no method", Array("{\"jsonrpc\":\"2.0\",\"id\":1}\n".utf8), -32600, "method"),
            ("an object id", Array("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"status\"}\n".utf8), -32600, "id"),
            ("unknown method", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"account.delete\"}\n".utf8), -32601, "account.delete"),
            ("params a list", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\",\"params\":[1]}\n".utf8), -32602, "params"),
            ("limit a string", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"feed\",\"params\":{\"limit\":\"ten\"}}\n".utf8), -32602, "limit"),
            ("email a number", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"account.signup\",\"params\":{\"email\":5,\"name\":\"R\",\"role\":\"student\"}}\n".utf8), -32602, "email"),
            ("courses a string", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"profile.set\",\"params\":{\"courses\":\"CS 490\"}}\n".utf8), -32602, "courses"),
            ("unknown param", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\",\"params\":{\"verbose\":true}}\n".utf8), -32602, "verbose"),
            ("a typo", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"profile.set\",\"params\":{\"bio\":\"typo\",\"courzes\":[]}}\n".utf8), -32602, "courzes"),
            ("missing param", Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"like\",\"params\":{}}\n".utf8), -32602, "id"),
        ]
        for (name, line, code, mentions) in bad {
            let connection = try RawConnection(e2e.socket)
            connection.send(line)
            let answer = connection.readJSON()
            #expect(answer?.errorCode == code, "\(name): expected error \(code), got \(answer.map(\.description) ?? "no answer")")
            let message = answer?["error"]?["message"]?.stringValue ?? ""
            #expect(!message.isEmpty && (mentions.map { message.contains($0) } ?? true),
                    "\(name): the message should say what is wrong\(mentions.map { " (\($0))" } ?? ""): \(message)")
            // The connection stays usable after an error in a complete line.
            #expect(connection.call("status")?["result"]?["node"]?.stringValue == node, "\(name): the connection should still serve")
        }

        // Random binary garbage: one line of it, then a lot of it with newlines.
        for round in 0..<3 {
            let garbage = (0..<4096).map { _ in UInt8.random(in: 0...255) }.filter { $0 != 0x0A } + [0x0A]
            let connection = try RawConnection(e2e.socket)
            connection.send(garbage)
            let answer = connection.readJSON()
            #expect(answer?.errorCode == -32700, "garbage line \(round): \(answer.map(\.description) ?? "no answer")")
        }
        let noise = try RawConnection(e2e.socket)
        noise.send((0..<(256 << 10)).map { _ in UInt8.random(in: 0...255) } + [0x0A])
        noise.shutdownWrite()
        var noiseAnswers = 0
        while let line = noise.readLine(timeout: .seconds(10)) {
            noiseAnswers += 1
            let answer = JSON.parse(line)
            #expect(answer?.errorCode == -32700 || answer?.errorCode == -32600,
                    "random bytes must only ever get parse or request errors: \(String(decoding: line, as: UTF8.self))")
        }
        #expect(noiseAnswers > 0 && noise.closedByPeer, "\(noiseAnswers) answers to the noise; closed: \(noise.closedByPeer)")

        // A line of exactly 1 MiB is served; an endless one gets -32600 and the connection closes.
        let padded = Array(#"{"jsonrpc":"2.0","id":1,"method":"status"}"#.utf8)
        let longest = try RawConnection(e2e.socket)
        longest.send(padded + [UInt8](repeating: 0x20, count: (1 << 20) - padded.count) + [0x0A])
        let longestAnswer = longest.readJSON()
        #expect(longestAnswer?["result"]?["node"]?.stringValue == node,
                "a request line of exactly 1 MiB is allowed: \(longestAnswer.map(\.description) ?? "no answer")")
        let endless = try RawConnection(e2e.socket)
        let sendError = endless.send([UInt8](repeating: UInt8(ascii: "x"), count: 2 << 20))
        let endlessAnswer = endless.readJSON()
        #expect(endlessAnswer?.errorCode == -32600 && endlessAnswer?["error"]?["message"]?.stringValue?.contains("1 MiB") == true,
                "a 2 MiB line without newline: \(endlessAnswer.map(\.description) ?? "no answer") (send: \(String(cString: strerror(sendError))))")
        #expect(endless.waitForClose(timeout: .seconds(10)), "the daemon must close a connection whose line is over the limit")

        // A half-sent request, then gone: discarded, nothing stored. Complete requests whose
        // answers nobody reads: served into a closed socket without harm.
        let half = try RawConnection(e2e.socket)
        half.send(#"{"jsonrpc":"2.0","id":7,"method":"profile.set","params":{"bio":"half-sent"}}"#)
        half.close()
        let rude = try RawConnection(e2e.socket)
        rude.send(String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"feed"}"# + "\n", count: 50))
        rude.close()

        // Photos the daemon refuses itself (the client checks first; a script may not).
        let upload = try RawConnection(e2e.socket)
        let chunk = Data(Self.onePixelPNG.prefix(8) + [UInt8](repeating: 0, count: (512 << 10) - 8)).base64EncodedString()
        var token: String?
        var refusal: JSON?
        for part in 1...9 {
            var params: [String: JSON] = ["chunk": .string(chunk), "done": .bool(part == 9)]
            if let token { params["upload"] = .string(token) }
            let answer = upload.call("blob.put", .object(params))
            if let next = answer?["result"]?["upload"]?.stringValue { token = next } else { refusal = answer; break }
        }
        #expect(refusal?.errorCode == -32007 && refusal?["error"]?["message"]?.stringValue?.contains("4 MiB") == true,
                "4.5 MiB in chunks must be refused: \(refusal.map(\.description) ?? "accepted")")
        let text = upload.call("blob.put", ["chunk": .string(Data("not a picture".utf8).base64EncodedString()), "done": true])
        #expect(text?.errorCode == -32007, "a non-image blob: \(text.map(\.description) ?? "no answer")")
        let unknownPhoto = upload.call("profile.set", ["photo": .string(String(repeating: "ab", count: 32))])
        #expect(unknownPhoto?.errorCode == -32004, "a photo hash never uploaded: \(unknownPhoto.map(\.description) ?? "no answer")")
        upload.close()

        let card = try e2e.mmJSON(["profile", "show"])
        #expect(card["bio"] == "original" && card["photo"] == .null && card["courses"]?.strings == ["CS 490"],
                "no bad request may change the card: \(card)")

        // A subscriber that never reads while Flo sends hundreds of messages to Rita.
        let subscriber = try RawConnection(e2e.socket)
        let subscribed = subscriber.call("subscribe", ["events": ["message", "match", "unmatch"]])
        #expect(subscribed?["result"]?["events"]?.strings == ["match", "message", "unmatch"], "\(subscribed.map(\.description) ?? "no answer")")
        let count = 300
        let filler = String(repeating: "m", count: 3_000)
        let requests = (1...count).map { i in
            JSON.object(["jsonrpc": "2.0", "id": .int(Int64(i)), "method": "chat.send",
                         "params": ["id": .string(rita), "text": .string("flood \(i) \(filler)")]]).description
        }
        let floodStarted = ContinuousClock.now
        let sent = try e2e.socat(requests, as: flo, timeout: .seconds(90))
        let floodTook = ContinuousClock.now - floodStarted
        #expect(sent.count == count && sent.allSatisfy { $0["result"]?["mine"] == true },
                "every chat.send should succeed: \(sent.count) answers; first failure: \(sent.first { $0["result"] == nil }.map(\.description) ?? "none")")
        #expect(sent.map { $0["id"] } == (1...count).map { JSON.int(Int64($0)) }, "answers come in request order")

        let rssAfter = try #require(daemon.residentKiB())
        let report = prober.stop()
        proberReport = report
        print("end-to-end: \(count) messages in \(floodTook); daemon VmRSS \(rssBefore) KiB before the bad input, \(rssAfter) KiB after the flood; status prober: \(report)")
        #expect(rssAfter - rssBefore < 50 * 1024, "the daemon grew from \(rssBefore) KiB to \(rssAfter) KiB")
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.answers >= 20 && report.slowest < .seconds(3), "status must stay prompt throughout: \(report)")

        // The subscriber finally reads: whole notifications, in order, and an overflow report
        // for any that were dropped; then its connection serves requests as before.
        var delivered = 0, dropped = 0, last = 0
        var unexpected: [String] = [], wrong: [String] = []
        while let line = subscriber.readLine(timeout: .seconds(3)) {
            guard let event = JSON.parse(line) else { unexpected.append(String(decoding: line.prefix(200), as: UTF8.self)); continue }
            switch event["method"]?.stringValue {
            case "event.message":
                let words = (event["params"]?["message"]?["text"]?.stringValue ?? "").split(separator: " ")
                let n = words.count == 3 && words[0] == "flood" ? Int(words[1]) ?? 0 : 0
                if !(n > last && event["params"]?["with"]?.stringValue == floID && words.last?.count == filler.count) {
                    wrong.append("message \(n) after \(last): \(String(decoding: line.prefix(200), as: UTF8.self))")
                }
                last = n
                delivered += 1
            case "event.overflow":
                dropped += Int(event["params"]?["dropped"]?.intValue ?? 0)
            default:
                unexpected.append(String(decoding: line.prefix(200), as: UTF8.self))
            }
        }
        #expect(unexpected.isEmpty, "\(unexpected.count) lines that are not Rita's events, e.g. \(unexpected.prefix(3))")
        #expect(wrong.isEmpty, "\(wrong.count) events out of order, of another account or cut, e.g. \(wrong.prefix(3))")
        #expect(delivered + dropped == count, "\(delivered) delivered + \(dropped) reported dropped; \(count) were sent")
        #expect(subscriber.call("status")?["result"]?["node"]?.stringValue == node)
        let matches = try e2e.mmJSON(["matches"])["matches"]?.arrayValue ?? []
        #expect(matches.first?["messages"] == .int(Int64(count)), "\(matches)")
    }
}
