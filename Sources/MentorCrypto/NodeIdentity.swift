/// The node's own key: it authenticates this daemon to its peers (SPEC §2). Unlike account
/// keys it never has a passphrase — the daemon must start unattended — so it relies on the
/// file's 0600 mode and the state directory's ownership.
public enum NodeIdentity {
    public static let fileName = "node.key"

    /// Loads the node key at `path`, creating a new one (mode 0600) if no file exists.
    /// A file that exists but is unreadable, malformed or too open is an error — never
    /// silently replaced, since that would change the node's identity.
    public static func loadOrCreate(at path: String) throws(CryptoError) -> (keys: SigningKeyPair, created: Bool) {
        do {
            return (try KeyFile.read(from: path), false)
        } catch CryptoError.Code.keyFileMissing {
            let keys = SigningKeyPair.generate()
            try KeyFile.write(keys, to: path)
            return (keys, true)
        } catch {
            throw error
        }
    }
}
