import HummingbirdCore

extension URI {
    /// The first value of the query parameter `name`, nil when absent, read as browsers, HTML
    /// forms and most HTTP libraries write a query (`application/x-www-form-urlencoded`): a `+`
    /// is a space, then `%XX` escapes are decoded, in names and values alike. So `q=blue+widget`
    /// and `q=blue%20widget` are the same search, and a literal `+` is sent as `%2B`. A parameter
    /// without `=` has the empty value. A value whose escapes do not decode (a stray `%`, bytes
    /// that are not UTF-8) is kept as sent, its `+` still a space, and the route's own rules
    /// judge it.
    func formValue(_ name: String) -> String? {
        guard let query, !query.isEmpty else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            let rawName = pair[..<(equals ?? pair.endIndex)]
            guard rawName == name || Self.formDecoded(rawName) == name else { continue }
            guard let equals else { return "" }
            return Self.formDecoded(pair[pair.index(after: equals)...])
        }
        return nil
    }

    /// One name or value of a form-encoded query: `+` to a space, then the percent escapes; as
    /// sent (`+` a space) when an escape is malformed or the bytes are not UTF-8. Decoded here
    /// rather than by Foundation, which on Linux puts U+FFFD in place of bytes that are not UTF-8.
    static func formDecoded(_ raw: Substring) -> String {
        let plus = UInt8(ascii: "+"), percent = UInt8(ascii: "%"), space = UInt8(ascii: " ")
        let utf8 = raw.utf8
        guard utf8.contains(where: { $0 == plus || $0 == percent }) else { return String(raw) }
        // As sent with `+` a space: built only when the escapes do not decode.
        func spaced() -> String { String(decoding: utf8.map { $0 == plus ? space : $0 }, as: UTF8.self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            utf8.formIndex(after: &index)
            guard byte == percent else {
                bytes.append(byte == plus ? space : byte)
                continue
            }
            guard index < utf8.endIndex, let high = hexValue(utf8[index]) else { return spaced() }
            utf8.formIndex(after: &index)
            guard index < utf8.endIndex, let low = hexValue(utf8[index]) else { return spaced() }
            utf8.formIndex(after: &index)
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self) ?? spaced()
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
