/// An error from MentorCrypto: a named `code` to match on and a `message` that says what happened
/// and what to do about it.
///
/// Match by code, either with a comparison or with a `catch` pattern:
///
/// ```swift
/// do { pair = try KeyFile.read(from: path, passphrase: entered) }
/// catch CryptoError.Code.wrongPassphrase { askAgain() }
/// ```
public struct CryptoError: Error, Equatable, CustomStringConvertible, Sendable {
    /// What kind of failure this is. Compare codes, never messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A key, seed or secret had the wrong number of bytes.
        public static let invalidKeyLength = Code("invalidKeyLength")
        /// A nonce had the wrong number of bytes.
        public static let invalidNonceLength = Code("invalidNonceLength")
        /// A public key is not a usable curve point (small order, not on the curve), or a
        /// Diffie-Hellman exchange with it produced the all-zero secret.
        public static let invalidPublicKey = Code("invalidPublicKey")
        /// A sealed box failed authentication: altered, truncated, or the wrong key or associated data.
        public static let decryptionFailed = Code("decryptionFailed")
        /// Key-derivation parameters, salt or output length are outside what is allowed.
        public static let invalidParameters = Code("invalidParameters")
        /// Argon2id could not run (usually: the memory limit could not be allocated).
        public static let keyDerivationFailed = Code("keyDerivationFailed")
        /// There is no key file at the path.
        public static let keyFileMissing = Code("keyFileMissing")
        /// The key file can be read by group or others, so the key may already be exposed.
        public static let insecureKeyFileMode = Code("insecureKeyFileMode")
        /// The key file is not in the key file format (bad magic, version, length or values).
        public static let malformedKeyFile = Code("malformedKeyFile")
        /// The key file is passphrase-protected and no passphrase was given.
        public static let passphraseRequired = Code("passphraseRequired")
        /// The passphrase does not open the key file (or the protected part was altered).
        public static let wrongPassphrase = Code("wrongPassphrase")
        /// A passphrase was given for a key file that is stored without one.
        public static let passphraseNotExpected = Code("passphraseNotExpected")
        /// A system call on a key file or its directory failed (permissions, disk full, ...).
        public static let keyFileIO = Code("keyFileIO")
        /// What was typed is not a link code (PROTOCOL.md §13.8): the wrong number of
        /// characters, a character outside the code's alphabet, a misplaced dash.
        public static let invalidLinkCode = Code("invalidLinkCode")
        /// A link offer breaks its format (§13.8): a field of the wrong length or out of range,
        /// a label that is empty, too long or holds control characters, trailing bytes.
        public static let invalidLinkOffer = Code("invalidLinkOffer")

        /// Lets a `catch` clause match on a code: `catch CryptoError.Code.wrongPassphrase { ... }`.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? CryptoError)?.code == pattern
        }
    }

    public let code: Code
    /// What happened and what to do, written for the person running the program.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
