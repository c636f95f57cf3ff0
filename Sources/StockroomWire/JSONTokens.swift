/// The tokens of a JSON text, read one at a time from `index` by the JSON grammar: the lexical half
/// that `CanonicalJSON` and `JSONNumberMisfit` share, each walking objects and arrays its own way.
struct JSONTokens {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The byte at `index`, nil at the end.
    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    var atEnd: Bool { index == bytes.count }

    mutating func skipSpace() {
        while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard next == byte else { return false }
        index += 1
        return true
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let length = word.utf8CodeUnitCount
        guard index + length <= bytes.count else { return false }
        for offset in 0..<length where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += length
        return true
    }

    /// A string at `index` (its opening quote), its text (escapes resolved) appended as UTF-8;
    /// false for a control character, a bad escape, a lone surrogate or bytes that are not UTF-8.
    mutating func string(into text: inout [UInt8]) -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
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

    /// An object member's key and the colon after it, space around them skipped: the key's text as
    /// UTF-8, nil when they are not there.
    mutating func memberKey() -> [UInt8]? {
        skipSpace()
        var key: [UInt8] = []
        guard string(into: &key) else { return nil }
        skipSpace()
        guard take(UInt8(ascii: ":")) else { return nil }
        skipSpace()
        return key
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

    /// A number at `index`, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: its text, and whether
    /// it is written as a whole number (no fraction, no exponent); nil when it is not one.
    mutating func number() -> (text: String, whole: Bool)? {
        let start = index
        _ = take(UInt8(ascii: "-"))
        guard digits() > 0 else { return nil }
        if bytes[start] == UInt8(ascii: "-") ? bytes[start + 1] == UInt8(ascii: "0") && index - start > 2
            : bytes[start] == UInt8(ascii: "0") && index - start > 1
        {
            return nil
        }
        var whole = true
        if take(UInt8(ascii: ".")) {
            whole = false
            guard digits() > 0 else { return nil }
        }
        if let byte = next, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            whole = false
            index += 1
            if let sign = next, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        return (String(decoding: bytes[start..<index], as: UTF8.self), whole)
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = next, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }
}
