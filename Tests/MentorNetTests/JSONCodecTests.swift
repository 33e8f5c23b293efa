import Foundation
import Testing
@testable import MentorAPI

@Suite struct JSONCodecTests {
    func parse(_ s: String) -> JSON? { JSON.parse(Array(s.utf8)) }

    @Test func parsesEveryKindOfValueAndKeepsIntegersIntegers() {
        let j = parse(#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"}, "e": 9007199254740993} "#)
        #expect(j?["a"] == [.int(1), .int(-2), .double(3.5), .double(1000), true, false, .null])
        #expect(j?["b"]?["c"] == "d")
        #expect(j?["e"] == .int(9_007_199_254_740_993))     // beyond Double's exact range
    }

    @Test func decodesEscapesAndSurrogatePairs() {
        #expect(parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\n\té😀"))
    }

    @Test func refusesWhatRFC8259Refuses() {
        for bad in ["", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "\"\u{01}\"", "\"\\x\"", "\"\\ud83d\"",
                    "\"\\ude00\"", "tru", "nulll", "[1 2]", "{\"a\" 1}", "{1:2}", "1 2", "NaN", "\"abc"] {
            #expect(parse(bad) == nil, "accepted \(bad.debugDescription)")
        }
        #expect(parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) == nil)   // too deep
        #expect(JSON.parse([0x22, 0xFF, 0x22]) == nil)                                                 // not UTF-8
    }

    @Test func writesCompactSortedAndRoundTrips() {
        let value: JSON = ["z": 1, "a": ["x\n\"y\u{01}", .double(2.5), .null, false], "m": ["é": "😀"]]
        let text = String(decoding: value.encoded, as: UTF8.self)
        #expect(text == #"{"a":["x\n\"y\u0001",2.5,null,false],"m":{"é":"😀"},"z":1}"#)
        #expect(JSON.parse(value.encoded) == value)
        // Foundation agrees on what we write.
        #expect((try? JSONSerialization.jsonObject(with: Data(value.encoded))) != nil)
    }
}
