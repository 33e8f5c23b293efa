import Testing
import MentorAPI
@testable import MentorNode

/// The dispatcher covers the whole `APIMethod` enum, and only it.
@Suite struct APIDispatchTests {
    /// Every method reaches its handler: with no account and no params, none answers "unknown
    /// method" (each answers with a result or with its own error).
    @Test func everyAPIMethodIsDispatched() throws {
        let t = try TestNode()
        for method in APIMethod.allCases {
            let result = t.node.handle(method.rawValue, [:], caller: Requester(uid: 4242, connection: 7))
            if case .failure(let e) = result {
                #expect(e.code != RPCError.Code.methodNotFound.rawValue, "\(method.rawValue): \(e.message)")
            }
        }
    }

    @Test func anUnknownMethodIsStillMethodNotFound() throws {
        let t = try TestNode()
        let e = t.error(1001, "account.sigup", [:])
        #expect(e?.code == -32601)
        #expect(e?.message == "unknown method \"account.sigup\"; see docs/API.md for the list")
        #expect(t.error(1001, "", [:])?.code == -32601)
    }

    /// Each method refuses a parameter it does not take, naming the ones it takes: the names
    /// come from its request type.
    @Test func everyMethodRefusesUnknownParametersWithItsOwnList() throws {
        let t = try TestNode()
        for method in APIMethod.allCases {
            let e = t.error(1001, method.rawValue, ["zz-not-a-parameter": 1])
            #expect(e?.code == -32602, "\(method.rawValue)")
            #expect(e?.message.hasPrefix("\(method.rawValue) has no parameter \"zz-not-a-parameter\" (it takes: ") == true,
                    "\(method.rawValue): \(e?.message ?? "no error")")
        }
        #expect(t.error(1001, "status", ["x": 1])?.message == "status has no parameter \"x\" (it takes: none)")
        #expect(t.error(1001, "chat.send", ["x": 1])?.message == "chat.send has no parameter \"x\" (it takes: id, text)")
    }

    /// The messages `Params` gave for a missing parameter and for each wrong type.
    @Test func wrongParametersKeepTheirMessages() throws {
        let t = try TestNode()
        _ = try t.call(1001, "account.signup", ["email": "ana@uni.edu", "name": "Ana", "role": "student"])
        #expect(t.error(1001, "like", [:])?.message == "like: missing parameter \"id\"")
        #expect(t.error(1001, "like", ["id": 5])?.message == "like: parameter \"id\" must be a string")
        #expect(t.error(1001, "like", ["id": .null])?.message == "like: parameter \"id\" must be a string")
        #expect(t.error(1001, "feed", ["limit": "ten"])?.message == "feed: parameter \"limit\" must be an integer")
        #expect(t.error(1001, "feed", ["limit": .double(2.5)])?.message == "feed: parameter \"limit\" must be an integer")
        #expect(t.error(1001, "blob.put", ["chunk": "", "done": "yes"])?.message == "blob.put: parameter \"done\" must be true or false")
        #expect(t.error(1001, "subscribe", ["events": "match"])?.message == "subscribe: parameter \"events\" must be a list of strings")
        #expect(t.error(1001, "subscribe", ["events": ["match", 3]])?.message == "subscribe: parameter \"events\" must be a list of strings")
        #expect(t.error(1001, "profile.set", ["photo": 3])?.message == "profile.set: parameter \"photo\" must be a string")
        #expect(t.error(1001, "profile.set", ["name": .null])?.message
                == "profile.set needs at least one field to change (area, availability, bio, birthdate, budget, contact, courses, gender, languages, name, photo, preferences, slots, wage)")
        // Optional parameters given as null are absent.
        #expect((try t.call(1001, "feed", ["course": .null, "limit": .null]))["cards"] == .array([]))
    }
}
