#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MentorCLI

/// The files and the desktop of `profile show --save-photos DIR` and `--open`.
extension SystemHost {
    func fileExists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    func makeDirectory(_ path: String) throws(ClientError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw ClientError("\(path) exists and is not a directory", hint: "give a directory for the photos")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw ClientError("cannot make the directory \(path): \(error.localizedDescription)",
                              hint: "check the parent directory and its permissions")
        }
    }

    func environment(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }

    func executablePath(_ name: String) -> String? {
        let path = environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// In a new directory (mode 0700) under $XDG_RUNTIME_DIR, else the temporary directory; left
    /// for the viewer, which may read it after this program has ended (the system clears both).
    func writeTemporaryFile(_ name: String, _ bytes: [UInt8]) throws(ClientError) -> String {
        let base = environment("XDG_RUNTIME_DIR").flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        var template = Array(((base.hasSuffix("/") ? base : base + "/") + "mentormate-photo-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw ClientError("cannot make a temporary directory in \(base): \(String(cString: strerror(errno)))",
                              hint: "save the photos with --save-photos DIR instead")
        }
        let dir = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let path = dir + "/" + name
        try writeNewFile(path, bytes)
        return path
    }

    /// Starts the program without a shell and waits a moment for it: `xdg-open` either hands
    /// the file to the desktop and exits, or runs the viewer in the foreground (then it is left
    /// running). A quick failure (no viewer for the type) is reported.
    func run(_ argv: [String]) throws(ClientError) {
        guard let program = argv.first else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = Array(argv.dropFirst())
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do {
            try process.run()
        } catch {
            throw ClientError("cannot start \(program): \(error.localizedDescription)", hint: "check that xdg-utils is installed")
        }
        guard done.wait(timeout: .now() + 3) == .success else { return }
        guard process.terminationStatus == 0 else {
            throw ClientError("\(program) failed (exit status \(process.terminationStatus)); the photo is in \(argv.last ?? "")",
                              hint: "open that file with an image viewer, or set one up for images (xdg-mime default)")
        }
    }
}
