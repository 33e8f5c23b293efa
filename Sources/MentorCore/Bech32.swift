/// BIP-173 bech32: a base32 alphabet without look-alike characters and a BCH checksum that
/// detects any error of up to 4 characters. Account IDs are bech32 strings with the
/// human-readable part "mm", so they start with "mm1".
public enum Bech32 {
    /// The 32 data characters (lower case), by value: no `1`, `b`, `i` or `o`.
    public static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()
    static let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]

    static func polymod(_ values: [UInt8]) -> UInt32 {
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1ff_ffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    static func expand(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    /// Regroups bits; `pad` adds zero bits at the end (encoding), otherwise leftover bits must be zero.
    static func convertBits(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var acc = 0, bits = 0
        var out = [UInt8]()
        let maxv = (1 << to) - 1
        for value in data {
            guard Int(value) >> from == 0 else { return nil }
            acc = (acc << from) | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((acc >> bits) & maxv))
            }
        }
        if pad {
            if bits > 0 { out.append(UInt8((acc << (to - bits)) & maxv)) }
        } else if bits >= from || ((acc << (to - bits)) & maxv) != 0 {
            return nil
        }
        return out
    }

    public static func encode(hrp: String, data: [UInt8]) -> String {
        let h = Array(hrp.utf8)
        let five = convertBits(data, from: 8, to: 5, pad: true) ?? []
        let mod = polymod(expand(h) + five + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((mod >> UInt32(5 * (5 - $0))) & 31) }
        return hrp + "1" + String(decoding: (five + checksum).map { alphabet[Int($0)] }, as: UTF8.self)
    }

    public enum DecodeError: Error, Equatable, Sendable {
        case mixedCase, invalidCharacter(Character), missingSeparator, wrongPrefix, badChecksum, badPadding, tooShort
    }

    /// Decodes and checks the checksum. Accepts all-upper-case input as well (bech32 rule).
    public static func decode(_ text: String, expectedHRP: String) throws(DecodeError) -> [UInt8] {
        let hasLower = text.contains { $0.isLowercase }, hasUpper = text.contains { $0.isUppercase }
        if hasLower && hasUpper { throw .mixedCase }
        let lower = Array(text.lowercased().utf8)
        guard let sep = lower.lastIndex(of: UInt8(ascii: "1")) else { throw .missingSeparator }
        let hrp = Array(lower[..<sep])
        guard hrp == Array(expectedHRP.utf8) else { throw .wrongPrefix }
        let rest = lower[(sep + 1)...]
        guard rest.count >= 6 else { throw .tooShort }
        var values = [UInt8]()
        for c in rest {
            guard c < 128, reverse[Int(c)] >= 0 else { throw .invalidCharacter(Character(Unicode.Scalar(c))) }
            values.append(UInt8(reverse[Int(c)]))
        }
        guard polymod(expand(hrp) + values) == 1 else { throw .badChecksum }
        guard let data = convertBits(Array(values.dropLast(6)), from: 5, to: 8, pad: false) else { throw .badPadding }
        return data
    }

    /// The value (0 ... 31) of a lower-case data character; nil for any other byte.
    public static func value(of character: UInt8) -> UInt8? {
        character < 128 && reverse[Int(character)] >= 0 ? UInt8(reverse[Int(character)]) : nil
    }

    /// True if every character is in the bech32 data alphabet (used to validate ID prefixes).
    public static func isDataCharacters(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 128 && reverse[Int($0)] >= 0 }
    }
}
