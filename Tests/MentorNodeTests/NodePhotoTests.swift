import Foundation
import Testing
import MentorAPI
import MentorCore
import MentorCrypto
import MentorStore
@testable import MentorNode

/// `profile.photo.add|remove|order` (docs/API.md) on one node: the list changes as asked, the
/// card result has `photos` (and `photo`, the main one), and bad input changes nothing.
@Suite struct NodePhotoTests {
    let ana: UInt32 = 1001, ben: UInt32 = 1002

    func signup(_ t: TestNode, _ uid: UInt32, _ name: String) throws {
        try t.call(uid, "account.signup", ["email": .string("\(name.lowercased())@uni.edu"), "name": .string(name), "role": "student"])
    }

    /// Uploads a distinct PNG; its hash.
    func upload(_ t: TestNode, _ uid: UInt32, _ tag: UInt8) throws -> String {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: 500)
        let done = try t.call(uid, "blob.put", ["chunk": .string(Data(png).base64EncodedString()), "done": true])
        return done["hash"]?.stringValue ?? ""
    }

    func hashes(_ card: JSON) -> [String] { (card["photos"]?.arrayValue ?? []).compactMap { $0["hash"]?.stringValue } }

    @Test func addRemoveAndOrderEditTheListAndTheFirstIsTheMainPhoto() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana")
        let h = try (1...3).map { try upload(t, ana, UInt8($0)) }
        for (i, hash) in h.enumerated() {
            let card = try t.call(ana, "profile.photo.add", ["hash": .string(hash)])
            #expect(hashes(card) == Array(h.prefix(i + 1)))
            #expect(card["photo"]?["hash"]?.stringValue == h[0], "photo stays the main one")
        }
        let shown = try t.call(ana, "profile.show")
        #expect(hashes(shown) == h && shown["photos"]?.arrayValue?.first?["type"] == "image/png")
        #expect(shown["photos"]?.arrayValue?.first?["size"] == 508)

        let ordered = try t.call(ana, "profile.photo.order", ["order": [3, 1, 2]])
        #expect(hashes(ordered) == [h[2], h[0], h[1]] && ordered["photo"]?["hash"]?.stringValue == h[2])
        let removed = try t.call(ana, "profile.photo.remove", ["index": 1])
        #expect(hashes(removed) == [h[0], h[1]] && removed["photo"]?["hash"]?.stringValue == h[0])
        // The removed photo, uploaded here and named by the card once, is collected at once.
        let gone = t.error(ana, "blob.get", ["hash": .string(h[2])])
        #expect(gone?.code == RPCError.Code.notFound.rawValue)
        // profile.set --photo replaces the list; photo: null removes every photo.
        let only = try t.call(ana, "profile.set", ["photo": .string(h[1])])
        #expect(hashes(only) == [h[1]])
        let none = try t.call(ana, "profile.set", ["photo": .null])
        #expect(hashes(none) == [] && none["photo"] == .null)
    }

    @Test func badInputIsRefusedClearlyAndChangesNothing() throws {
        let t = try TestNode()
        try signup(t, ana, "Ana")
        try signup(t, ben, "Ben")
        let h = try (1...7).map { try upload(t, ana, UInt8($0)) }
        for hash in h.prefix(3) { try t.call(ana, "profile.photo.add", ["hash": .string(hash)]) }
        let before = try t.call(ana, "profile.show")
        let records = try t.node.replica.counts().records

        let invalid = RPCError.Code.invalidValue.rawValue
        let cases: [(String, [String: JSON], Int, String)] = [
            ("profile.photo.add", ["hash": .string(h[1])], invalid, "that photo is already photo 2 of your card"),
            ("profile.photo.add", ["hash": .string(String(repeating: "ab", count: 32))], RPCError.Code.notFound.rawValue, "no uploaded photo abababababababab"),
            ("profile.photo.add", ["hash": "zz"], RPCError.Code.notFound.rawValue, "no uploaded photo zz"),
            ("profile.photo.remove", ["index": 4], invalid, "there is no photo 4: your card has 3 photos, numbered 1 to 3"),
            ("profile.photo.remove", ["index": 0], invalid, "there is no photo 0"),
            ("profile.photo.remove", ["index": -1], invalid, "there is no photo -1"),
            ("profile.photo.order", ["order": [1, 2]], invalid, "the order \"1,2\" must list each of 1 to 3 once"),
            ("profile.photo.order", ["order": [1, 1, 2]], invalid, "the order \"1,1,2\" must list each of 1 to 3 once"),
            ("profile.photo.order", ["order": [1, 2, 4]], invalid, "must list each of 1 to 3 once"),
            ("profile.photo.order", ["order": [1, 2, 3, 4]], invalid, "must list each of 1 to 3 once"),
            ("profile.photo.order", ["order": "3,1,2"], RPCError.Code.invalidParams.rawValue, "order"),
            ("profile.photo.remove", [:], RPCError.Code.invalidParams.rawValue, "index"),
        ]
        for (method, params, code, message) in cases {
            let e = t.error(ana, method, params)
            #expect(e?.code == code && e?.message.contains(message) == true, "\(method) \(params): \(String(describing: e))")
        }
        // Ben has no photos: nothing to remove or order.
        #expect(t.error(ben, "profile.photo.remove", ["index": 1])?.message.contains("your card has no photos") == true)
        let unordered = t.error(ben, "profile.photo.order", ["order": [1]])
        #expect(unordered?.code == invalid && unordered?.message.hasPrefix("your card has no photos to order") == true)
        #expect(try t.call(ana, "profile.show") == before)
        #expect(try t.node.replica.counts().records == records, "no record was written")

        // Six photos at most: the seventh is refused, and the six stay.
        for hash in h[3..<6] { try t.call(ana, "profile.photo.add", ["hash": .string(hash)]) }
        let six = try t.call(ana, "profile.show")
        #expect(hashes(six) == Array(h.prefix(6)))
        let seventh = t.error(ana, "profile.photo.add", ["hash": .string(h[6])])
        #expect(seventh?.code == RPCError.Code.limitReached.rawValue
                && seventh?.message.contains("your card has 6 photos, the most a card may have") == true, "\(String(describing: seventh))")
        #expect(try t.call(ana, "profile.show") == six)
    }

    /// A losing concurrent list shows in `conflicts` as its hashes.
    @Test func aConflictingListShowsAsItsHashes() throws {
        let ref = PhotoRef(hash: [UInt8](repeating: 0xAB, count: 32), size: 10, format: .jpeg)
        let value = fieldValueJSON(.photo, PhotoRef.encodeList([ref, PhotoRef(hash: [UInt8](repeating: 0xCD, count: 32), size: 10, format: .png)]))
        #expect(value == .array([.string(String(repeating: "ab", count: 32)), .string(String(repeating: "cd", count: 32))]))
        #expect(fieldValueJSON(.photo, []) == .array([]))
    }
}
