/// The number in a request body that its field cannot hold, found after `JSONDecoder` failed.
///
/// swift-foundation's `JSONDecoder` answers a number its field cannot hold (`1.5` or
/// `9223372036854775808` for an `Int`, `1e400` for a `Double`) as "The given data was not valid
/// JSON", with no coding path (swiftlang/swift-foundation#1604). So that such a body is answered
/// as what it is, a field of the wrong type, and not as a body that is not JSON, the server reads
/// the body again with this when the decoder's error names no field: a check of the JSON grammar
/// that keeps the path of keys and indices to each number. It runs only on that error path.
public enum JSONNumberMisfit {
    /// What a second reading found.
    public enum Finding: Equatable, Sendable {
        /// The bytes are not JSON text (or nest deeper than `maxDepth`): the decoder was right.
        case notJSON
        /// JSON text, and no number in it that its field could not hold.
        case noMisfit
        /// The first number, in document order, that cannot be a `Double` (it overflows, or a
        /// non-zero value underflows to zero), or that stands under one of `wholeNumberKeys` and is
        /// not a whole number within `Int`'s range. `field` is written as the decoder's paths are
        /// (`operations[2].item.status.inStock.quantity`); `number` is the number's text.
        case misfit(field: String, number: String, wholeNumberExpected: Bool)
    }

    /// The keys whose values the contract's request bodies read as whole numbers: an in-stock
    /// item's `quantity`, a version (`version`, `baseVersion`) and a checkpoint's `depth`.
    public static let wholeNumberKeys: Set<String> = ["quantity", "version", "baseVersion", "depth"]

    /// Objects and arrays nested deeper than this are answered as `notJSON`.
    public static let maxDepth = 512

    /// What `bytes` hold: not JSON, JSON whose numbers all fit, or the first number that does not.
    public static func find(in bytes: some Collection<UInt8>) -> Finding {
        let bytes = Array(bytes)
        guard String(validating: bytes, as: UTF8.self) != nil else { return .notJSON }
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        guard reader.value(depth: 0) else { return .notJSON }
        reader.skipSpace()
        guard reader.index == bytes.count else { return .notJSON }
        return reader.found ?? .noMisfit
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        var path: [Step] = []
        var found: Finding?

        enum Step {
            case key(String)
            case index(Int)
        }

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        var next: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard next == byte else { return false }
            index += 1
            return true
        }

        mutating func value(depth: Int) -> Bool {
            guard let byte = next else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < JSONNumberMisfit.maxDepth && object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < JSONNumberMisfit.maxDepth && array(depth: depth + 1)
            case UInt8(ascii: "\""): return string() != nil
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if take(UInt8(ascii: "}")) { return true }
            while true {
                skipSpace()
                guard let key = string() else { return false }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return false }
                skipSpace()
                path.append(.key(key))
                guard value(depth: depth) else { return false }
                path.removeLast()
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}"))
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if take(UInt8(ascii: "]")) { return true }
            var position = 0
            while true {
                skipSpace()
                path.append(.index(position))
                guard value(depth: depth) else { return false }
                path.removeLast()
                position += 1
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "]"))
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// A string's text, escapes read; nil when it is not a JSON string.
        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var scalars = String.UnicodeScalarView()
            var start = index
            func flush(_ reader: Reader) {
                scalars.append(contentsOf: String(decoding: reader.bytes[start..<reader.index], as: UTF8.self).unicodeScalars)
            }
            while let byte = next {
                switch byte {
                case UInt8(ascii: "\""):
                    flush(self)
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush(self)
                    index += 1
                    guard let scalar = escape() else { return nil }
                    scalars.append(scalar)
                    start = index
                case ..<0x20:
                    return nil
                default:
                    index += 1
                }
            }
            return nil
        }

        /// The character of an escape, after its backslash.
        mutating func escape() -> Unicode.Scalar? {
            guard let byte = next else { return nil }
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{8}"
            case UInt8(ascii: "f"): return "\u{C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                guard let high = hex4() else { return nil }
                guard (0xD800...0xDFFF).contains(high) else { return Unicode.Scalar(high) }
                // A surrogate must be a high one followed by an escaped low one.
                guard high < 0xDC00, take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(), (0xDC00...0xDFFF).contains(low) else {
                    return nil
                }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            default: return nil
            }
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        /// A number by the JSON grammar; the first misfit is kept.
        mutating func number() -> Bool {
            let start = index
            _ = take(UInt8(ascii: "-"))
            guard let first = next, isDigit(first) else { return false }
            index += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            var whole = true
            if take(UInt8(ascii: ".")) {
                whole = false
                guard let byte = next, isDigit(byte) else { return false }
                skipDigits()
            }
            if let byte = next, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                whole = false
                index += 1
                if let sign = next, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
                guard let byte = next, isDigit(byte) else { return false }
                skipDigits()
            }
            if found == nil { check(String(decoding: bytes[start..<index], as: UTF8.self), whole: whole) }
            return true
        }

        mutating func check(_ text: String, whole: Bool) {
            guard let double = Double(text) else { return }
            let nonZeroDigit = text.prefix { $0 != "e" && $0 != "E" }.contains { ("1"..."9").contains($0) }
            let fitsDouble = double.isFinite && (double != 0 || !nonZeroDigit)
            var wholeNumberExpected = false
            if case .key(let key)? = path.last, JSONNumberMisfit.wholeNumberKeys.contains(key) { wholeNumberExpected = true }
            let fitsInt = whole ? Int(text) != nil : (double.rounded() == double && abs(double) < 0x1p63)
            guard !fitsDouble || (wholeNumberExpected && !fitsInt) else { return }
            found = .misfit(field: pathText, number: text, wholeNumberExpected: wholeNumberExpected)
        }

        var pathText: String {
            var text = ""
            for step in path {
                switch step {
                case .key(let key): text += text.isEmpty ? key : "." + key
                case .index(let position): text += "[\(position)]"
                }
            }
            return text
        }

        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

        mutating func skipDigits() {
            while let byte = next, isDigit(byte) { index += 1 }
        }
    }
}
