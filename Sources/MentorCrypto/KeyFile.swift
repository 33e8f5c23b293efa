import CSodium
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MentorSystem

/// Key files: an Ed25519 identity key on disk, readable only by its owner (mode 0600).
///
/// ## Format (version 1)
///
/// Binary. Integers are unsigned big-endian. Every file is exactly one of two lengths; any other
/// length, or any field outside what is listed, makes the file malformed.
///
/// Plain (kind 0x00), 71 bytes:
///
/// | offset | length | field                                         |
/// |-------:|-------:|-----------------------------------------------|
/// |      0 |      5 | magic, ASCII `MMKEY` (`4d 4d 4b 45 59`)       |
/// |      5 |      1 | version, `0x01`                               |
/// |      6 |      1 | kind, `0x00` = plain                          |
/// |      7 |     32 | Ed25519 seed (the secret)                     |
/// |     39 |     32 | Ed25519 public key; must be the seed's key    |
///
/// Passphrase-protected (kind 0x01), 143 bytes:
///
/// | offset | length | field                                                         |
/// |-------:|-------:|---------------------------------------------------------------|
/// |      0 |      5 | magic, ASCII `MMKEY`                                          |
/// |      5 |      1 | version, `0x01`                                               |
/// |      6 |      1 | kind, `0x01` = passphrase-protected                           |
/// |      7 |     32 | Ed25519 public key, in clear (the account is known without    |
/// |        |        | the passphrase)                                               |
/// |     39 |     16 | Argon2id salt (random per write)                              |
/// |     55 |      8 | Argon2id opsLimit, u64 big-endian, 1...20                     |
/// |     63 |      8 | Argon2id memLimit in bytes, u64 big-endian, 8 KiB...1 GiB     |
/// |     71 |     72 | XChaCha20-Poly1305 box of the 32-byte seed:                   |
/// |        |        | nonce (24) ‖ ciphertext (32) ‖ tag (16)                       |
///
/// The box key is Argon2id13(passphrase, salt, opsLimit, memLimit), 32 bytes; its associated
/// data is the 32-byte public key at offset 7, so a file whose public key was swapped does not
/// open. After opening, the seed's public key must equal the stored one. The parameter bounds
/// keep a hostile file from making the reader allocate unbounded memory or spin for minutes.
///
/// ## Behaviour
///
/// - Writing replaces any file at the path atomically: the bytes go to a new file in the same
///   directory (created `O_CREAT|O_EXCL`, mode set to exactly 0600 whatever the umask), which is
///   fsynced, renamed over the path, and the directory fsynced. A crash leaves the old file or
///   the new one, never half of one.
/// - Reading refuses a file whose mode gives group or others any access (`.insecureKeyFileMode`),
///   one that is not a regular file or has the wrong length (`.malformedKeyFile`). `read`,
///   `publicKey(at:)` and `isProtected(at:)` all apply the same checks, including that a plain
///   file's public key belongs to its seed.
/// - A passphrase given for a plain file is an error (`.passphraseNotExpected`), not ignored: it
///   means the caller believes the key is encrypted on disk when it is not.
public enum KeyFile {
    /// Bounds on the Argon2id cost a key file may ask for; `write` refuses parameters outside
    /// them too, so it never writes a file `read` would refuse.
    public static let maximumOpsLimit: UInt64 = 20
    public static let maximumMemLimit: UInt64 = 1 << 30
    static let minimumOpsLimit = UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN)
    static let minimumMemLimit = UInt64(crypto_pwhash_argon2id_MEMLIMIT_MIN)

    static let magic = Array("MMKEY".utf8)
    static let version: UInt8 = 0x01
    static let plainKind: UInt8 = 0x00
    static let protectedKind: UInt8 = 0x01
    static let headerLength = magic.count + 2
    static let sealedSeedLength = SigningKeyPair.seedLength + XChaCha20Poly1305.overhead
    static let plainLength = headerLength + SigningKeyPair.seedLength + SigningPublicKey.length
    static let protectedLength = headerLength + SigningPublicKey.length + Argon2id.saltLength + 8 + 8 + sealedSeedLength

    // MARK: Public API

    /// Writes `pair` to `path` with mode 0600, encrypted under `passphrase` if one is given.
    /// Replaces an existing file atomically (see the type's documentation); a caller that must
    /// not lose an existing identity checks for one first.
    public static func write(_ pair: SigningKeyPair, to path: String, passphrase: [UInt8]? = nil,
                             parameters: Argon2id.Parameters = .moderate) throws(CryptoError) {
        var bytes = try encode(pair, passphrase: passphrase, parameters: parameters, path: path)
        defer { zeroize(&bytes) }
        try writeAtomically(bytes, to: path)
    }

    /// The bytes of a key file for `pair` (what `write` stores; `account export` hands them to
    /// the user as an export file). `path` only names the file in errors.
    public static func encode(_ pair: SigningKeyPair, passphrase: [UInt8]?, parameters: Argon2id.Parameters = .moderate,
                              path: String) throws(CryptoError) -> [UInt8] {
        var bytes = magic + [version]
        defer { zeroize(&bytes) }
        var seed = pair.seed
        defer { zeroize(&seed) }
        if let passphrase {
            guard !passphrase.isEmpty else {
                throw CryptoError(.invalidParameters,
                                  "the passphrase for \(path) is empty; give a real passphrase or none to store the key unencrypted")
            }
            guard parametersAreAllowed(parameters) else {
                throw CryptoError(.invalidParameters,
                                  "key file Argon2id parameters must be opsLimit \(minimumOpsLimit)...\(maximumOpsLimit) and memLimit \(minimumMemLimit)...\(maximumMemLimit), got \(parameters.opsLimit) and \(parameters.memLimit)")
            }
            let salt = SecureRandom.bytes(Argon2id.saltLength)
            var key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            defer { zeroize(&key) }
            let box = try XChaCha20Poly1305.seal(seed, key: key, associatedData: pair.publicKey.bytes)
            bytes += [protectedKind] + pair.publicKey.bytes + salt
            bytes += bigEndianBytes(parameters.opsLimit) + bigEndianBytes(parameters.memLimit) + box
        } else {
            bytes += [plainKind] + seed + pair.publicKey.bytes
        }
        return bytes
    }

    /// Reads the key pair at `path`, decrypting it with `passphrase` if the file is protected.
    public static func read(from path: String, passphrase: [UInt8]? = nil) throws(CryptoError) -> SigningKeyPair {
        try open(try load(path), passphrase: passphrase, path: path)
    }

    /// Decodes and opens key-file bytes read by the caller (an export file); `path` names it in
    /// errors.
    public static func read(bytes: [UInt8], passphrase: [UInt8]?, path: String) throws(CryptoError) -> SigningKeyPair {
        try open(try decode(bytes, path: path), passphrase: passphrase, path: path)
    }

    /// Whether key-file bytes are passphrase-protected (malformed bytes throw).
    public static func isProtected(bytes: [UInt8], path: String) throws(CryptoError) -> Bool {
        if case .protected = try decode(bytes, path: path) { return true }
        return false
    }

    static func open(_ contents: Contents, passphrase: [UInt8]?, path: String) throws(CryptoError) -> SigningKeyPair {
        switch contents {
        case .plain(let pair):
            guard passphrase == nil else {
                throw CryptoError(.passphraseNotExpected,
                                  "key file \(path) is not passphrase-protected, but a passphrase was given; read it without one, or write it again with the passphrase to protect it")
            }
            return pair
        case .protected(let publicKey, let salt, let parameters, let box):
            guard let passphrase else {
                throw CryptoError(.passphraseRequired,
                                  "key file \(path) is passphrase-protected; give its passphrase")
            }
            var key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            defer { zeroize(&key) }
            var seed: [UInt8]
            do {
                seed = try XChaCha20Poly1305.open(box, key: key, associatedData: publicKey.bytes)
            } catch {
                throw CryptoError(.wrongPassphrase,
                                  "the passphrase does not open key file \(path) (or the file was altered); check the passphrase and try again")
            }
            defer { zeroize(&seed) }
            guard let pair = try? SigningKeyPair(seed: seed), pair.publicKey == publicKey else {
                throw CryptoError(.malformedKeyFile,
                                  "key file \(path) decrypts, but its seed does not belong to its public key \(publicKey); restore the file from a backup")
            }
            return pair
        }
    }

    /// Whether the key file at `path` needs a passphrase to read.
    public static func isProtected(at path: String) throws(CryptoError) -> Bool {
        if case .protected = try load(path) { return true }
        return false
    }

    /// The public key (account identity) stored at `path`, read without the passphrase.
    public static func publicKey(at path: String) throws(CryptoError) -> SigningPublicKey {
        switch try load(path) {
        case .plain(let pair): pair.publicKey
        case .protected(let publicKey, _, _, _): publicKey
        }
    }

    // MARK: Decoding

    enum Contents {
        case plain(SigningKeyPair)
        case protected(publicKey: SigningPublicKey, salt: [UInt8], parameters: Argon2id.Parameters, box: [UInt8])
    }

    /// Reads and checks the file at `path`, short of decrypting it.
    static func load(_ path: String) throws(CryptoError) -> Contents {
        var bytes = try readOwnerOnlyFile(path)
        defer { zeroize(&bytes) }
        return try decode(bytes, path: path)
    }

    static func decode(_ bytes: [UInt8], path: String) throws(CryptoError) -> Contents {
        func malformed(_ what: String) -> CryptoError {
            CryptoError(.malformedKeyFile, "\(path) is not a valid key file: \(what); restore it from a backup or point to the right file")
        }
        guard bytes.count >= headerLength, Array(bytes[0..<magic.count]) == magic else {
            throw malformed("it does not start with the MMKEY header")
        }
        guard bytes[5] == version else {
            throw malformed("unsupported version \(bytes[5]) (this program reads version \(version))")
        }
        var reader = ByteReader(bytes: bytes, offset: headerLength)
        switch bytes[6] {
        case plainKind:
            guard bytes.count == plainLength else {
                throw malformed("a plain key file is \(plainLength) bytes, this one is \(bytes.count)")
            }
            var seed = reader.take(SigningKeyPair.seedLength)
            defer { zeroize(&seed) }
            let storedKey = reader.take(SigningPublicKey.length)
            guard let pair = try? SigningKeyPair(seed: seed), pair.publicKey.bytes == storedKey else {
                throw malformed("the stored public key does not belong to the stored seed")
            }
            return .plain(pair)
        case protectedKind:
            guard bytes.count == protectedLength else {
                throw malformed("a protected key file is \(protectedLength) bytes, this one is \(bytes.count)")
            }
            let publicKey = SigningPublicKey(validatedBytes: reader.take(SigningPublicKey.length))
            let salt = reader.take(Argon2id.saltLength)
            let parameters = Argon2id.Parameters(opsLimit: reader.takeUInt64(), memLimit: reader.takeUInt64())
            guard parametersAreAllowed(parameters) else {
                throw malformed("Argon2id parameters opsLimit \(parameters.opsLimit), memLimit \(parameters.memLimit) are outside the allowed \(minimumOpsLimit)...\(maximumOpsLimit) and \(minimumMemLimit)...\(maximumMemLimit)")
            }
            return .protected(publicKey: publicKey, salt: salt, parameters: parameters, box: reader.take(sealedSeedLength))
        default:
            throw malformed("unknown kind \(bytes[6]) (expected 0 for plain or 1 for passphrase-protected)")
        }
    }

    static func parametersAreAllowed(_ parameters: Argon2id.Parameters) -> Bool {
        (minimumOpsLimit...maximumOpsLimit).contains(parameters.opsLimit)
            && (minimumMemLimit...maximumMemLimit).contains(parameters.memLimit)
    }

    static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// Sequential reads from a buffer whose total length was already checked.
    struct ByteReader {
        let bytes: [UInt8]
        var offset: Int

        mutating func take(_ count: Int) -> [UInt8] {
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func takeUInt64() -> UInt64 {
            take(8).reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    // MARK: File system

    /// Larger than any valid key file; a bigger file is refused without reading it all.
    static let maximumFileSize = 4096

    /// The contents of the regular file at `path`, after checking that only its owner may
    /// access it. The checks use `fstat` on the opened descriptor, so they apply to the file
    /// actually read even if the path is swapped meanwhile.
    static func readOwnerOnlyFile(_ path: String) throws(CryptoError) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO planted at the path must not hang; no effect on regular files.
        let file: FileDescriptor
        do throws(SystemError) {
            file = try Syscall.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        } catch {
            throw error.errno == ENOENT
                ? CryptoError(.keyFileMissing, "no key file at \(path); check the path, or generate a new identity key there")
                : CryptoError(.keyFileIO, "cannot open key file \(path): \(error.errnoDescription)")
        }
        let info: stat
        do throws(SystemError) { info = try Syscall.status(file) } catch {
            throw CryptoError(.keyFileIO, "cannot stat key file \(path): \(error.errnoDescription)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw CryptoError(.malformedKeyFile, "\(path) is not a regular file; point to the key file itself")
        }
        let permissions = info.st_mode & 0o777
        guard permissions & 0o077 == 0 else {
            throw CryptoError(.insecureKeyFileMode,
                              "key file \(path) has mode 0\(String(permissions, radix: 8)), so other users can read it; restrict it with `chmod 600 \(path)`, and if others may already have copied the key, replace it")
        }
        guard info.st_size <= maximumFileSize else {
            throw CryptoError(.malformedKeyFile,
                              "\(path) is \(info.st_size) bytes, far larger than a key file; point to the key file itself")
        }
        var buffer = [UInt8](repeating: 0, count: maximumFileSize + 1)
        defer { zeroize(&buffer) }
        var filled = 0
        while filled < buffer.count {
            let result: IOResult<Int>
            do throws(SystemError) {
                result = try Syscall.read(file, into: &buffer, from: filled)
            } catch {
                throw CryptoError(.keyFileIO, "cannot read key file \(path): \(error.errnoDescription)")
            }
            // A regular file never blocks (O_NONBLOCK only keeps a FIFO from hanging the open).
            guard case .done(let count) = result else {
                throw CryptoError(.keyFileIO, "cannot read key file \(path): \(SystemError(.system, errno: EAGAIN, "read").errnoDescription)")
            }
            if count == 0 { break }
            filled += count
        }
        guard filled <= maximumFileSize else {
            throw CryptoError(.malformedKeyFile, "\(path) is larger than a key file; point to the key file itself")
        }
        return Array(buffer[..<filled])
    }

    /// Replaces the file at `path` with `bytes`, mode 0600, so that a crash at any point leaves
    /// either the old file or the complete new one.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(CryptoError) {
        let (directory, name) = split(path)
        guard !name.isEmpty else {
            throw CryptoError(.keyFileIO, "key file path \(path) names a directory; give a file name")
        }
        let suffix = SecureRandom.bytes(8).map { String($0, radix: 16) }.joined()
        let temporaryPath = "\(directory)/.\(name).\(suffix).tmp"
        func failure(_ step: String, _ error: SystemError) -> CryptoError {
            CryptoError(.keyFileIO, "cannot write key file \(path): \(step) failed: \(error.errnoDescription); check that \(directory) exists and is writable")
        }

        let file: FileDescriptor
        do throws(SystemError) {
            file = try Syscall.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: 0o600)
        } catch {
            throw failure("creating \(temporaryPath)", error)
        }
        var renamed = false
        defer { if !renamed { try? Syscall.unlink(temporaryPath) } }

        do throws(SystemError) {
            // The umask can only narrow the 0600 given to open; set it exactly anyway.
            try Syscall.blocking("chmod") { fchmod(file.raw, 0o600) }
            try Syscall.writeAll(file.raw, bytes, what: "write")
            try Syscall.blocking("fsync") { fsync(file.raw) }
            try file.close()
            try Syscall.blocking("rename to \(path)") { rename(temporaryPath, path) }
        } catch {
            throw failure(error.what, error)
        }
        renamed = true

        // Make the rename itself durable.
        do throws(SystemError) {
            let directoryFile = try Syscall.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try Syscall.blocking("fsync") { fsync(directoryFile.raw) }
            try directoryFile.close()
        } catch {
            throw failure("fsync of directory \(directory)", error)
        }
    }

    /// The directory (without trailing slash; "." for a bare name) and the last component.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}
