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

/// Calls `body` with the UTF-8 bytes of `text` (a passphrase), zeroing that copy afterwards.
/// (The `String` itself cannot be wiped; the byte copy handed to Argon2id can.)
public func withSecretBytes<R, E: Error>(of text: String, _ body: ([UInt8]) throws(E) -> R) throws(E) -> R {
    var bytes = Array(text.utf8)
    defer { zeroize(&bytes) }
    return try body(bytes)
}

/// Overwrites the bytes with zeros in a way the optimizer will not remove.
func zeroize(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
    }
}

/// Fixed-size secret key material in one buffer that is zeroed when the last reference goes
/// away, so copies of a key pair share one buffer instead of scattering the secret.
///
/// The buffer comes from `sodium_malloc`: its own pages, between guard pages, marked
/// `MADV_DONTDUMP` (left out of core dumps, e.g. the one systemd's watchdog abort asks for) and
/// locked against swapping where the memory-lock limit allows; `sodium_free` zeroes it. Should
/// `sodium_malloc` fail (no memory for its pages), an ordinary allocation is used and still
/// zeroed at the end.
///
/// `@unchecked Sendable`: the buffer is written only inside `init` and is read-only afterwards.
final class SecretBytes: @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer
    private let fromSodium: Bool

    /// Allocates `count` zeroed bytes and lets `fill` write the secret into them.
    init(count: Int, fill: (UnsafeMutablePointer<UInt8>) -> Void) {
        precondition(count > 0)
        Sodium.ensureInitialized()
        if let base = sodium_malloc(count) {
            buffer = UnsafeMutableRawBufferPointer(start: base, count: count)
            fromSodium = true
        } else {
            buffer = .allocate(byteCount: count, alignment: 16)
            fromSodium = false
        }
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        fill(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    var count: Int { buffer.count }

    func withUnsafePointer<R, E: Error>(_ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)))
    }

    deinit {
        if fromSodium {
            sodium_free(buffer.baseAddress)  // zeroes, unlocks and unmaps
        } else {
            sodium_memzero(buffer.baseAddress, buffer.count)
            buffer.deallocate()
        }
    }
}
