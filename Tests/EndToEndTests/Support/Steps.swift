/// One named step of a scenario test. Its name is printed as it starts, so the expectation
/// failures that follow it in the output are its own, and is put in front of an error it throws
/// (which ends the scenario: the later steps build on this one).
///
/// ```swift
/// let ids = try step("sign-up: three users, three cards") { ... }
/// ```
func step<T>(_ name: String, _ body: () throws -> T) throws -> T {
    print("▸ step: \(name)")
    do {
        return try body()
    } catch {
        throw E2EError("step \"\(name)\": \(error)")
    }
}
