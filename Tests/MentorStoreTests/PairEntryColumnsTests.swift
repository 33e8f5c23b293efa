import MentorCore
import Testing
@testable import MentorStore

/// `pair_entries` rows are written and read through one mapping (`PairEntryColumns`): each kind
/// comes back as it went in, and the kind numbers are the ones migration 1 stored.
@Suite struct PairEntryColumnsTests {
    @Test func everyKindReadsBackAsItWasWrittenWithTheStoredNumbers() {
        let kinds: [PairEntry.Kind] = [
            .like(true, peerSeq: 7), .like(false, peerSeq: 0),
            .chat(peerSeq: 12, answers: [UInt8](repeating: 0xab, count: 32), text: "hello"),
            .chat(peerSeq: 3, answers: nil, text: ""),
            .chat(peerSeq: 4, answers: [UInt8](repeating: 1, count: 32), mine: [UInt8](repeating: 2, count: 32), text: "both likes"),
            .unmatch(peerSeq: UInt64(Int64.max)),
            .unmatch(peerSeq: 0, answers: [UInt8](repeating: 3, count: 32), mine: [UInt8](repeating: 4, count: 32)),
        ]
        for kind in kinds {
            let values = PairEntryColumns.values(kind)
            #expect(values.count == 6)
            // As a SELECT returns them after four other columns.
            let row = Row([.null, .null, .null, .null] + values)
            #expect(PairEntryColumns.kind(row, at: 4) == kind, "\(kind)")
        }
        #expect(PairEntryColumns.values(.like(true, peerSeq: 1))[0] == .integer(1))
        #expect(PairEntryColumns.values(.chat(peerSeq: 1, answers: nil, text: "x"))[0] == .integer(2))
        #expect(PairEntryColumns.values(.unmatch(peerSeq: 1))[0] == .integer(3))
        #expect(PairEntryColumns.kind(Row([.integer(4), .null, .integer(1), .null, .null, .null]), at: 0) == nil, "an unknown kind number")
    }
}
