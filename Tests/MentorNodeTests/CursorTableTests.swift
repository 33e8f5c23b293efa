import Testing
@testable import MentorNode

/// The replica's subtree cursors a link keeps by token (`PeerConnection.cursors`): each token
/// resumes once, an unknown one forgets them all, and the table is bounded.
@Suite struct CursorTableTests {
    @Test func aTokenResumesItsCursorOnceAndAReadFromTheStartNeedsNone() {
        var t = CursorTable<String>()
        let a = t.keep("after page 1")
        let b = t.keep("after page 2")
        #expect(a != b)
        let none = t.resume(nil)
        #expect(none == nil && t.count == 2, "a read from the start keeps the others")
        let first = t.resume(a)
        #expect(first == "after page 1")
        let again = t.resume(a)
        #expect(again == nil, "taken: a token resumes once")
    }

    @Test func anUnknownTokenForgetsEveryCursor() {
        var t = CursorTable<String>()
        _ = t.keep("x")
        let y = t.keep("y")
        let forged = t.resume(999)
        #expect(forged == nil && t.count == 0)
        let stale = t.resume(y)
        #expect(stale == nil)
    }

    @Test func atMostCapacityCursorsAreKept() {
        var t = CursorTable<Int>(capacity: 4)
        var tokens: [UInt64] = []
        for i in 0..<10 { tokens.append(t.keep(i)) }
        #expect(t.count <= 4)
        let newest = t.resume(tokens.last)
        #expect(newest == 9, "the newest survives the bound")
        #expect(Set(tokens).count == 10, "tokens are never reused")
    }
}
