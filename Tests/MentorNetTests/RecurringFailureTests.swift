import MentorNet
import Testing

/// A failure every second for two hours is logged at 0 s, 60 s, then after 120, 240, … up to
/// 3600 s between lines — seven lines, not 7200 — each counting what it left out; a recovery
/// starts the next streak with a line at once.
@Test func recurringFailureIsReportedOnceThenAtASlowingRate() {
    var failure = RecurringFailure()
    let start = ContinuousClock.now
    var reports: [(second: Int, unreported: Int)] = []
    for second in 0..<7200 {
        if let missed = failure.failed(now: start + .seconds(second)) { reports.append((second, missed)) }
    }
    #expect(reports.map(\.second) == [0, 60, 180, 420, 900, 1860, 3780])
    #expect(reports.map(\.unreported) == [0, 59, 119, 239, 479, 959, 1919])
    #expect(failure.streak == 7200)
    #expect(failure.recovered() == 7200)
    #expect(failure.streak == 0)
    #expect(failure.failed(now: start + .seconds(7200)) == 0, "after a recovery the next failure is reported at once")
    #expect(failure.failed(now: start + .seconds(7201)) == nil)
    #expect(failure.failed(now: start + .seconds(7260)) == 1, "and the first repeat is a minute later again")
}
