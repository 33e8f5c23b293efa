import Foundation
import Testing
import MentorFuzzTargets

/// Replays every input under `Tests/FuzzRegressions/<target>/` through the same entry point the
/// libFuzzer harness of that target calls (`FuzzTargets`): inputs that once crashed or broke a
/// property, and the seed corpus. Each must be handled: no trap, no violated property.
@Suite struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FuzzRegressions")

    static func inputs(_ target: String) -> [URL] {
        let dir = root.appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map { dir.appendingPathComponent($0) }
    }

    @Test(arguments: ["frames", "handshake", "records", "rpc"])
    func everySavedInputIsHandled(target: String) throws {
        let entry = try #require(FuzzTargets.all[target])
        let files = Self.inputs(target)
        #expect(!files.isEmpty, "no inputs in \(Self.root.path)/\(target)")
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: file))
            do { try entry(bytes) } catch {
                Issue.record("\(target)/\(file.lastPathComponent): \(error)")
            }
        }
    }
}
