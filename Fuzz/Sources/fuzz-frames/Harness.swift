import MentorFuzzTargets

/// libFuzzer's entry point: runs one input through `FuzzTargets.frames`; a violated property traps
/// so libFuzzer saves the input (then add it to Tests/FuzzRegressions/frames/).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    do {
        try FuzzTargets.frames(Array(UnsafeBufferPointer(start: data, count: count)))
    } catch {
        fatalError("\(error)")
    }
    return 0
}
