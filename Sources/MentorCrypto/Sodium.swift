import CSodium

/// libsodium's one-time setup. Every public entry point of this module calls
/// `ensureInitialized()` first, so callers never have to; it is public for code that calls
/// libsodium directly.
public enum Sodium {
    /// `sodium_init()` runs once, on first use; Swift guarantees a `static let` initializer runs
    /// exactly once even when several threads race to it.
    private static let initialized: Void = {
        // 0: initialized now, 1: already initialized, -1: failed (no usable random source).
        // Nothing a caller passes can cause the failure, and no operation here is safe without it.
        precondition(sodium_init() >= 0, "sodium_init() failed: libsodium could not initialize (no random source?)")
    }()

    /// Initializes libsodium if that has not happened yet. Idempotent and thread-safe.
    public static func ensureInitialized() {
        _ = initialized
    }
}

/// Cryptographically secure random bytes from the operating system (`randombytes_buf`).
public enum SecureRandom {
    /// `count` random bytes. `count` must not be negative.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: count must not be negative, got \(count)")
        Sodium.ensureInitialized()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let base = buffer.baseAddress { randombytes_buf(base, count) }
            initialized = count
        }
    }
}

// MARK: - Secret memory

/// Overwrites the bytes with zeros in a way the optimizer will not remove.
func zeroize(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
    }
}

/// Fixed-size secret key material in one heap buffer that is zeroed when the last reference
/// goes away, so copies of a key pair share one buffer instead of scattering the secret.
///
/// `@unchecked Sendable`: the buffer is written only inside `init` and is read-only afterwards.
final class SecretBytes: @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer

    /// Allocates `count` zeroed bytes and lets `fill` write the secret into them.
    init(count: Int, fill: (UnsafeMutablePointer<UInt8>) -> Void) {
        precondition(count > 0)
        buffer = .allocate(byteCount: count, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        fill(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    var count: Int { buffer.count }

    func withUnsafePointer<R, E: Error>(_ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)))
    }

    deinit {
        sodium_memzero(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }
}
