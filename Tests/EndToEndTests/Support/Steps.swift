/// One named step of a scenario test. Its name is printed as it starts, so the expectation
/// failures that follow it in the output are its own, and is put in front of an error it throws
/// (which ends the scenario: the later steps build on this one).
///
/// ```swift
/// let ids = try step("sign-up: three users, three cards") { ... }
/// ```
///
/// Inside a step's body (a closure) keep closure literals out of `#expect`/`#require`: with
/// Swift 6.3, a closure literal inside `#expect` in a closure makes the next plain closure literal
/// of the same type run the first one's body (`#expect(f.waitForLine { $0.contains("a") } != nil)`
/// then `let x = f.waitForLine { $0.contains("b") }` gives the line with "a"). Bind the value
/// first, then expect on it. (At a function's top level, and in local functions, it does not happen.)
func step<T>(_ name: String, _ body: () throws -> T) throws -> T {
    print("▸ step: \(name)")
    do {
        return try body()
    } catch {
        throw E2EError("step \"\(name)\": \(error)")
    }
}
