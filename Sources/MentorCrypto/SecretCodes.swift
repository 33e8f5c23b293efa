import CSodium

extension SecureRandom {
    /// A uniformly distributed random number in `0..<upperBound` (`randombytes_uniform`, which
    /// avoids modulo bias). `upperBound` must be at least 1.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        precondition(upperBound >= 1, "SecureRandom.uniform: the upper bound must be at least 1")
        Sodium.ensureInitialized()
        return randombytes_uniform(upperBound)
    }

    /// `digits` random decimal digits (a one-time code to type from a mail), each uniform.
    public static func decimalCode(digits: Int) -> String {
        String((0..<digits).map { _ in Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(uniform(10)))) })
    }
}

/// Comparisons whose time does not depend on where two secrets differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes (`sodium_memcmp`). Arrays of different lengths
    /// are unequal at once: only the contents are secret here, not their length.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        Sodium.ensureInitialized()
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }
}
