/// A JSON text in a canonical binary form, for comparing request bodies as JSON (an idempotent
/// request's fingerprint): two texts that differ only in whitespace, member order, string escapes or
/// the spelling of a number have the same form. Each value is a tag and its content: `n` null, `t`
/// true, `f` false, `d` a number (its `Double`'s bits, -0 as 0), `s` a string (length, UTF-8), `a`
/// an array (count, values), `o` an object (count, members sorted by key bytes, each key then
/// value; a repeated key keeps each of its values, in their order). Lengths and counts are 8 bytes,
/// little-endian.
public enum CanonicalJSON {
    /// The canonical form of `text`, or nil when it is not one JSON value (or nests deeper than
    /// `maximumDepth`).
    public static func form(of text: some Collection<UInt8>) -> [UInt8]? {
        let bytes = Array(text)
        var parser = Parser(bytes: bytes)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 32)
        guard parser.value(into: &out, depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == bytes.count ? out : nil
    }

    /// Arrays and objects nested deeper than this are not read (the form is then nil).
    public static let maximumDepth = 64

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func value(into out: inout [UInt8], depth: Int) -> Bool {
            skipSpace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return depth < CanonicalJSON.maximumDepth && object(into: &out, depth: depth + 1)
            case UInt8(ascii: "["): return depth < CanonicalJSON.maximumDepth && array(into: &out, depth: depth + 1)
            case UInt8(ascii: "\""):
                var text: [UInt8] = []
                guard string(into: &text) else { return false }
                out.append(UInt8(ascii: "s"))
                append(length: text.count, to: &out)
                out.append(contentsOf: text)
                return true
            case UInt8(ascii: "t"): return literal("true", tag: "t", into: &out)
            case UInt8(ascii: "f"): return literal("false", tag: "f", into: &out)
            case UInt8(ascii: "n"): return literal("null", tag: "n", into: &out)
            default: return number(into: &out)
            }
        }

        private mutating func object(into out: inout [UInt8], depth: Int) -> Bool {
            index += 1
            var members: [(key: [UInt8], value: [UInt8])] = []
            skipSpace()
            if take(UInt8(ascii: "}")) {
                out.append(UInt8(ascii: "o"))
                append(length: 0, to: &out)
                return true
            }
            while true {
                skipSpace()
                var key: [UInt8] = []
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), string(into: &key) else { return false }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return false }
                var value: [UInt8] = []
                guard self.value(into: &value, depth: depth) else { return false }
                members.append((key, value))
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return false }
                break
            }
            // A stable sort: a repeated key's values stay in their order.
            let order = members.indices.sorted { lhs, rhs in
                members[lhs].key.lexicographicallyPrecedes(members[rhs].key) || (members[lhs].key == members[rhs].key && lhs < rhs)
            }
            out.append(UInt8(ascii: "o"))
            append(length: members.count, to: &out)
            for index in order {
                append(length: members[index].key.count, to: &out)
                out.append(contentsOf: members[index].key)
                out.append(contentsOf: members[index].value)
            }
            return true
        }

        private mutating func array(into out: inout [UInt8], depth: Int) -> Bool {
            index += 1
            var elements: [UInt8] = []
            var count = 0
            skipSpace()
            if !take(UInt8(ascii: "]")) {
                while true {
                    guard value(into: &elements, depth: depth) else { return false }
                    count += 1
                    skipSpace()
                    if take(UInt8(ascii: ",")) { continue }
                    guard take(UInt8(ascii: "]")) else { return false }
                    break
                }
            }
            out.append(UInt8(ascii: "a"))
            append(length: count, to: &out)
            out.append(contentsOf: elements)
            return true
        }

        /// A string's text (escapes resolved) as UTF-8; false for a control character, a bad
        /// escape, a lone surrogate or bytes that are not UTF-8.
        private mutating func string(into text: inout [UInt8]) -> Bool {
            index += 1
            var start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    text.append(contentsOf: bytes[start..<index])
                    index += 1
                    return String(validating: text, as: UTF8.self) != nil
                }
                if byte < 0x20 { return false }
                if byte == UInt8(ascii: "\\") {
                    text.append(contentsOf: bytes[start..<index])
                    guard escape(into: &text) else { return false }
                    start = index
                    continue
                }
                index += 1
            }
            return false
        }

        /// One escape sequence at `index` (its backslash), its character appended as UTF-8.
        private mutating func escape(into text: inout [UInt8]) -> Bool {
            guard index + 1 < bytes.count else { return false }
            let kind = bytes[index + 1]
            index += 2
            switch kind {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(kind)
            case UInt8(ascii: "b"): text.append(0x08)
            case UInt8(ascii: "f"): text.append(0x0C)
            case UInt8(ascii: "n"): text.append(0x0A)
            case UInt8(ascii: "r"): text.append(0x0D)
            case UInt8(ascii: "t"): text.append(0x09)
            case UInt8(ascii: "u"):
                guard let unit = hex4() else { return false }
                var scalar: Unicode.Scalar?
                if (0xD800...0xDBFF).contains(unit) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return false }
                    index += 2
                    guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                    scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                } else {
                    scalar = Unicode.Scalar(unit)
                }
                guard let scalar else { return false }
                text.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                return false
            }
            return true
        }

        private mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<(index + 4)] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, as its `Double`.
        private mutating func number(into out: inout [UInt8]) -> Bool {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
            if bytes[start] == UInt8(ascii: "-") ? bytes[start + 1] == UInt8(ascii: "0") && index - start > 2
                : bytes[start] == UInt8(ascii: "0") && index - start > 1
            {
                return false
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return false }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return false }
            }
            guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else { return false }
            out.append(UInt8(ascii: "d"))
            appendLittleEndian((value == 0 ? 0 : value).bitPattern, to: &out)
            return true
        }

        private mutating func digits() -> Int {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - start
        }

        private mutating func literal(_ word: StaticString, tag: Unicode.Scalar, into out: inout [UInt8]) -> Bool {
            let length = word.utf8CodeUnitCount
            guard index + length <= bytes.count else { return false }
            for offset in 0..<length where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += length
            out.append(UInt8(ascii: tag))
            return true
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        private func append(length: Int, to out: inout [UInt8]) {
            appendLittleEndian(UInt64(length), to: &out)
        }

        private func appendLittleEndian(_ value: UInt64, to out: inout [UInt8]) {
            withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
        }
    }
}
