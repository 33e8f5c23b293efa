#if canImport(Glibc)
import Glibc
#endif

/// Why reading or writing the workload file failed.
struct RecordFileError: Error, CustomStringConvertible {
    let description: String
}

/// The workload file: records back to back, each `u32 big-endian length ‖ encoding`.
/// One owner of the `FILE*`, closed on `close()` or at the latest in `deinit`.
final class RecordFileWriter {
    let path: String
    private var file: UnsafeMutablePointer<FILE>?

    init(path: String) throws(RecordFileError) {
        self.path = path
        guard let f = fopen(path, "wb") else {
            throw RecordFileError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        file = f
    }

    deinit { if let file { fclose(file) } }

    /// Writes already length-prefixed records.
    func write(_ bytes: ArraySlice<UInt8>) throws(RecordFileError) {
        guard let file else { throw RecordFileError(description: "\(path) is closed") }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == bytes.count else {
            throw RecordFileError(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    func close() throws(RecordFileError) {
        guard let f = file else { return }
        file = nil
        guard fclose(f) == 0 else {
            throw RecordFileError(description: "cannot finish writing \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Streams the workload file as batches of encodings: only one batch is in memory at a time
/// (plus stdio's buffer). A read error or a truncated file ends the stream early and is kept in
/// `failure`; callers check it once the stream ends.
final class RecordFileReader: Sequence, IteratorProtocol {
    let path: String
    let batchSize: Int
    private var file: UnsafeMutablePointer<FILE>?
    private(set) var failure: RecordFileError?
    private(set) var recordsRead = 0

    init(path: String, batchSize: Int) throws(RecordFileError) {
        precondition(batchSize > 0)
        self.path = path
        self.batchSize = batchSize
        guard let f = fopen(path, "rb") else {
            throw RecordFileError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        file = f
    }

    deinit { if let file { fclose(file) } }

    /// The big-endian length prefix at `offset` of a buffer in the file's format.
    static func length(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    func next() -> [[UInt8]]? {
        guard let file else { return nil }
        var batch: [[UInt8]] = []
        batch.reserveCapacity(batchSize)
        while batch.count < batchSize {
            var prefix = [UInt8](repeating: 0, count: 4)
            let got = fread(&prefix, 1, 4, file)
            if got == 0 && feof(file) != 0 { finish(nil); break }
            guard got == 4 else { finish("truncated length prefix"); break }
            let length = Int(Self.length(prefix, at: 0))
            guard length <= 1 << 20 else { finish("record length \(length) is implausible"); break }
            let record = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
                initialized = fread(buffer.baseAddress, 1, length, file)
            }
            guard record.count == length else { finish("truncated record"); break }
            batch.append(record)
        }
        recordsRead += batch.count
        return batch.isEmpty ? nil : batch
    }

    private func finish(_ problem: String?) {
        if let problem {
            failure = RecordFileError(description: "\(path) after \(recordsRead) records: \(problem)")
        }
        if let file { fclose(file) }
        file = nil
    }
}
