import Foundation
import MentorAPI
import MentorArguments

/// `profile set --photo FILE`: the client checks the file before sending anything (the daemon
/// checks again), then uploads it with `blob.put` in chunks.
public enum PhotoUpload {
    /// SPEC §3: a photo is at most 4 MiB.
    public static let maxBytes = 4 * 1024 * 1024
    /// docs/API.md: a `blob.put` chunk is at most 512 KiB before base64.
    public static let chunkBytes = 512 * 1024

    /// The image type by content (magic bytes), not by name: JPEG, PNG or WebP; nil otherwise.
    public static func sniffType(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return "image/webp"
        }
        return nil
    }

    /// Reads and checks the photo; every failure names the file and what would work.
    public static func load(_ path: String, host: any ClientHost) throws(ClientError) -> (bytes: [UInt8], type: String) {
        let bytes: [UInt8]
        do {
            bytes = try host.readFile(path, limit: maxBytes)
        } catch {
            throw readError(error, path: path)
        }
        return (bytes, try check(bytes, path: path))
    }

    /// Size and type of photo bytes; returns the MIME type.
    public static func check(_ bytes: [UInt8], path: String) throws(ClientError) -> String {
        let name = ClientFormat.sanitize(path)
        if bytes.isEmpty {
            throw ClientError("\(name) is empty", hint: "give a JPEG, PNG or WebP image of at most 4 MiB")
        }
        if bytes.count > maxBytes {
            throw tooLarge(name, size: bytes.count)
        }
        guard let type = sniffType(bytes) else {
            throw ClientError("\(name) is not a JPEG, PNG or WebP image (its content says so, whatever its name)",
                              hint: "give a JPEG, PNG or WebP image; a picture in another format can be converted, e.g. convert \(shellQuoted(path)) photo.jpg")
        }
        return type
    }

    static func tooLarge(_ name: String, size: Int) -> ClientError {
        ClientError("\(name) is \(ClientFormat.size(Int64(size))); a photo may be at most 4 MiB",
                    hint: "shrink it, for example: convert \(shellQuoted(name)) -resize 1024x1024 photo.jpg")
    }

    static func readError(_ failure: FileReadFailure, path: String) -> ClientError {
        let name = ClientFormat.sanitize(path)
        switch failure {
        case .missing:
            return ClientError("no file \(name)", hint: "check the path to the photo")
        case .isDirectory:
            return ClientError("\(name) is a directory, not a photo", hint: "give the path of an image file inside it")
        case .notRegular:
            return ClientError("\(name) is not a regular file", hint: "give the path of an image file")
        case .permissionDenied:
            return ClientError("cannot read \(name): permission denied", hint: "check the file's permissions (ls -l \(shellQuoted(path)))")
        case .tooLarge(let size):
            return tooLarge(name, size: size)
        case .other(let reason):
            return ClientError("cannot read \(name): \(reason)")
        }
    }

    /// The base64 chunks to send, each at most `chunkBytes` before encoding.
    public static func chunks(_ bytes: [UInt8], size: Int = chunkBytes) -> [String] {
        stride(from: 0, to: bytes.count, by: size).map { start in
            Data(bytes[start..<min(start + size, bytes.count)]).base64EncodedString()
        }
    }

    /// Uploads with `blob.put`: the first call without `upload`, the following ones with the
    /// token it returned, the last with `done: true` (a photo of one chunk is one call). Returns
    /// the blob's hash.
    public static func upload(_ bytes: [UInt8], context: CommandContext) throws(ClientError) -> String {
        let parts = chunks(bytes)
        var token: String?
        for (i, chunk) in parts.enumerated() {
            let last = i == parts.count - 1
            let result = try context.call(API.blobPut, BlobPutRequest(chunk: chunk, upload: token, done: last))
            if last {
                guard let hash = result.viewed(as: PhotoInfo.self)[.hash]?.stringValue else {
                    throw ClientError("the daemon finished the upload without a hash (\(result.json))",
                                      hint: "this client (\(MentorMateVersion.string)) and the daemon may be different versions")
                }
                return hash
            }
            guard let next = result[.upload]?.stringValue else {
                throw ClientError("the daemon answered blob.put without an upload token (\(result.json))",
                                  hint: "this client (\(MentorMateVersion.string)) and the daemon may be different versions")
            }
            token = next
        }
        throw ClientError("nothing to upload")  // unreachable: check() refuses empty files
    }

    static func shellQuoted(_ s: String) -> String {
        s.allSatisfy({ $0.isLetter || $0.isNumber || "/._-+".contains($0) }) ? s : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
