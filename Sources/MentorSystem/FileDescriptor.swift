#if canImport(Glibc)
import Glibc
#endif

/// Owns one file descriptor and closes it exactly once: explicitly with `close()` (which reports
/// the error, for a file whose last write matters), or when the owner lets go of it.
///
/// A class, not a `~Copyable` struct: the socket layer hands one descriptor to Dispatch sources
/// whose cancel handlers close it, keeps it in `Result`s and `IOResult`s, and captures it in
/// closures, none of which a non-copyable value can be.
///
/// Not `Sendable` on purpose: each descriptor is confined to its owner (the API server keeps all
/// of its descriptors on its serial queue), so a close can never race a read on the same number.
public final class FileDescriptor {
    /// The descriptor, or -1 once closed.
    public private(set) var raw: Int32

    /// Takes ownership of `raw`: from now on only this object closes it.
    public init(_ raw: Int32) { self.raw = raw }

    public var isOpen: Bool { raw >= 0 }

    /// Closes the descriptor; later calls do nothing. The number is released even when `close(2)`
    /// fails (Linux), so the error is only news about the data written (`EIO`): a caller that
    /// does not care writes `try? fd.close()`.
    public func close() throws(SystemError) {
        guard raw >= 0 else { return }
        let number = raw
        raw = -1
        try Syscall.close(number)
    }

    deinit { try? close() }
}
