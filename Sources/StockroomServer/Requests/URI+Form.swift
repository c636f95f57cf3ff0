import HummingbirdCore

extension URI {
    /// The value of the query parameter `name`, nil when absent, read as browsers, HTML forms and
    /// most HTTP libraries write a query (`application/x-www-form-urlencoded`): a `+` is a space,
    /// then `%XX` escapes are decoded, in names and values alike. So `q=blue+widget` and
    /// `q=blue%20widget` are the same search, and a literal `+` is sent as `%2B`. A parameter
    /// without `=` has the empty value. A value whose escapes do not decode (a stray `%`, bytes
    /// that are not UTF-8) is kept as sent, its `+` still a space, and the route's own rules
    /// judge it. A parameter given twice (`limit=1&limit=2`, `topics=items&topics=navigation`)
    /// is `.repeated`: which one was meant cannot be told.
    func formValue(_ name: String) throws(QueryValueError) -> String? {
        try rawFormValue(name).map(Self.formDecoded)
    }

    /// The value of the query parameter `name` decoded as `formValue` decodes it, for a value that
    /// is a grammar of its own (a filter): nil when absent, and `.undecodable` when its escapes
    /// do not decode, where `formValue` would hand on the text as sent and the grammar would read
    /// escapes the client never meant as text.
    func decodedFormValue(_ name: String) throws(QueryValueError) -> String? {
        guard let raw = try rawFormValue(name) else { return nil }
        guard let value = Self.strictlyFormDecoded(raw) else { throw .undecodable }
        return value
    }

    /// Why a query parameter has no one value to read.
    enum QueryValueError: Error {
        /// It is given more than once.
        case repeated
        /// Its percent escapes are malformed or decode to bytes that are not UTF-8.
        case undecodable
    }

    /// The value of `name` as sent; "" for a parameter without `=`; `.repeated` when given twice.
    private func rawFormValue(_ name: String) throws(QueryValueError) -> Substring? {
        guard let query, !query.isEmpty else { return nil }
        var found: Substring?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            let rawName = pair[..<(equals ?? pair.endIndex)]
            guard rawName == name || Self.formDecoded(rawName) == name else { continue }
            guard found == nil else { throw .repeated }
            found = equals.map { pair[pair.index(after: $0)...] } ?? ""
        }
        return found
    }

    /// One name or value of a form-encoded query: `+` to a space, then the percent escapes; as
    /// sent (`+` a space) when an escape is malformed or the bytes are not UTF-8. Decoded here
    /// rather than by Foundation, which on Linux puts U+FFFD in place of bytes that are not UTF-8.
    static func formDecoded(_ raw: Substring) -> String {
        strictlyFormDecoded(raw) ?? String(decoding: raw.utf8.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    /// `formDecoded`, nil where that keeps the text as sent.
    static func strictlyFormDecoded(_ raw: Substring) -> String? {
        let plus = UInt8(ascii: "+"), percent = UInt8(ascii: "%"), space = UInt8(ascii: " ")
        let utf8 = raw.utf8
        guard utf8.contains(where: { $0 == plus || $0 == percent }) else { return String(raw) }
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
            guard index < utf8.endIndex, let high = hexValue(utf8[index]) else { return nil }
            utf8.formIndex(after: &index)
            guard index < utf8.endIndex, let low = hexValue(utf8[index]) else { return nil }
            utf8.formIndex(after: &index)
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
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
