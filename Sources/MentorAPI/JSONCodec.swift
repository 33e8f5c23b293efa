/// A small, strict JSON reader and writer for `JSON` (RFC 8259), used on every API line.
/// Hand-written because Foundation's Codable path decodes each value by trial and error, which
/// cost milliseconds per `feed` response; this one is a single pass.
enum JSONCodec {
    static let maxDepth = 64

    struct Failure: Error {}

    // MARK: Reading

    static func parse(_ bytes: [UInt8]) -> JSON? {
        bytes.withUnsafeBufferPointer { buffer -> JSON? in
            var p = Parser(b: buffer, i: 0)
            guard let value = try? p.value(depth: 0) else { return nil }
            p.skipSpace()
            // (Not a ternary: JSON is ExpressibleByNilLiteral, so `nil` there would become .null.)
            guard p.i == buffer.count else { return Optional<JSON>.none }
            return value
        }
    }

    struct Parser {
        let b: UnsafeBufferPointer<UInt8>
        var i: Int

        mutating func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }

        mutating func value(depth: Int) throws(Failure) -> JSON {
            guard depth < JSONCodec.maxDepth else { throw Failure() }
            skipSpace()
            guard i < b.count else { throw Failure() }
            switch b[i] {
            case UInt8(ascii: "{"):
                i += 1
                var object: [String: JSON] = [:]
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
                while true {
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw Failure() }
                    let key = try string()
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw Failure() }
                    i += 1
                    object[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard i < b.count else { throw Failure() }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
                    throw Failure()
                }
            case UInt8(ascii: "["):
                i += 1
                var array: [JSON] = []
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
                while true {
                    array.append(try value(depth: depth + 1))
                    skipSpace()
                    guard i < b.count else { throw Failure() }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
                    throw Failure()
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                return try number()
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let n = word.utf8CodeUnitCount
            guard i + n <= b.count else { throw Failure() }
            for k in 0..<n where b[i + k] != word.utf8Start[k] { throw Failure() }
            i += n
        }

        mutating func number() throws(Failure) -> JSON {
            let start = i
            var isInteger = true
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, (0x30...0x39).contains(b[i]) else { throw Failure() }
            if b[i] == 0x30 { i += 1 } else { while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 } }
            if i < b.count, b[i] == UInt8(ascii: ".") {
                isInteger = false
                i += 1
                guard i < b.count, (0x30...0x39).contains(b[i]) else { throw Failure() }
                while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                isInteger = false
                i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                guard i < b.count, (0x30...0x39).contains(b[i]) else { throw Failure() }
                while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
            if isInteger, let v = Int64(text) { return .int(v) }
            guard let d = Double(text), d.isFinite else { throw Failure() }
            return .double(d)
        }

        mutating func string() throws(Failure) -> String {
            i += 1  // opening quote
            var out: [UInt8] = []
            var runStart = i
            while true {
                guard i < b.count else { throw Failure() }
                let c = b[i]
                if c == UInt8(ascii: "\"") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: b[runStart..<i]))
                    i += 1
                    break
                }
                if c < 0x20 { throw Failure() }
                if c == UInt8(ascii: "\\") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: b[runStart..<i]))
                    i += 1
                    guard i < b.count else { throw Failure() }
                    switch b[i] {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5C)
                    case UInt8(ascii: "/"): out.append(0x2F)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            // A high surrogate must be followed by \\uDC00–DFFF.
                            guard i + 2 < b.count, b[i + 1] == UInt8(ascii: "\\"), b[i + 2] == UInt8(ascii: "u") else { throw Failure() }
                            i += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Failure() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw Failure()
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw Failure() }
                        out.append(contentsOf: Array(String(Character(u)).utf8))
                    default: throw Failure()
                    }
                    i += 1
                    runStart = i
                    continue
                }
                i += 1
            }
            guard let s = String(validating: out, as: UTF8.self) else { throw Failure() }
            return s
        }

        /// Reads the 4 hex digits after "\\u" (i is on the "u"); leaves i on the last digit.
        mutating func hex4() throws(Failure) -> UInt32 {
            guard i + 4 < b.count else { throw Failure() }
            var v: UInt32 = 0
            for k in 1...4 {
                let c = b[i + k]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: throw Failure()
                }
                v = v << 4 | d
            }
            i += 4
            return v
        }
    }

    // MARK: Writing (compact, keys sorted)

    static func write(_ value: JSON, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): out.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .int(let i): out.append(contentsOf: Array(String(i).utf8))
        case .double(let d): out.append(contentsOf: Array((d.isFinite ? "\(d)" : "null").utf8))
        case .string(let s): writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (k, v) in a.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                write(v, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (k, key) in o.keys.sorted().enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(o[key] ?? .null, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        for c in s.utf8 {
            switch c {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(c >> 4)], hexDigits[Int(c & 0xF)]])
            default: out.append(c)
            }
        }
        out.append(0x22)
    }
}
