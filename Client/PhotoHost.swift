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
}
