import MentorCore

extension MembershipCertificate {
    /// Signs a certificate for `account` as the authority `ca` (PROTOCOL.md §6.8). The domain
    /// must be canonical (`checkDomain`), and `issued` before `expires`.
    public static func sign(by ca: SigningKeyPair, account: PublicKey, domain: String,
                            issued: UInt64, expires: UInt64) throws(RecordError) -> MembershipCertificate {
        let unsigned = try MembershipCertificate(ca: ca.publicKey.key, account: account, issued: issued, expires: expires,
                                                 domain: domain, signature: [UInt8](repeating: 0, count: signatureLength))
        return try MembershipCertificate(ca: unsigned.ca, account: account, issued: issued, expires: expires, domain: domain,
                                         signature: ca.signature(for: unsigned.signedBytes))
    }

    /// Whether the signature verifies under the certificate's own CA key. Every node checks it
    /// before storing a card that carries the certificate (an honest relay never passes on a
    /// forged one); which CA a node trusts is its own configuration (`campus_ca_key`).
    public var hasValidSignature: Bool { ca.isValidSignature(signature, for: signedBytes) }
}
