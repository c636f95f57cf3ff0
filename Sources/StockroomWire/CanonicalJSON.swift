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
        var parser = Parser(tokens: JSONTokens(Array(text)))
        var out: [UInt8] = []
        out.reserveCapacity(parser.tokens.bytes.count + 32)
        guard parser.value(into: &out, depth: 0) else { return nil }
        parser.tokens.skipSpace()
        return parser.tokens.atEnd ? out : nil
    }

    /// Arrays and objects nested deeper than this are not read (the form is then nil).
    public static let maximumDepth = 64

    /// The canonical form written as the grammar is read (`JSONTokens`).
    private struct Parser {
        var tokens: JSONTokens

        mutating func value(into out: inout [UInt8], depth: Int) -> Bool {
            tokens.skipSpace()
            guard let byte = tokens.next else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < CanonicalJSON.maximumDepth && object(into: &out, depth: depth + 1)
            case UInt8(ascii: "["): return depth < CanonicalJSON.maximumDepth && array(into: &out, depth: depth + 1)
            case UInt8(ascii: "\""):
                var text: [UInt8] = []
                guard tokens.string(into: &text) else { return false }
                out.append(UInt8(ascii: "s"))
                append(length: text.count, to: &out)
                out.append(contentsOf: text)
                return true
            case UInt8(ascii: "t"): return literal("true", tag: "t", into: &out)
            case UInt8(ascii: "f"): return literal("false", tag: "f", into: &out)
            case UInt8(ascii: "n"): return literal("null", tag: "n", into: &out)
            default:
                guard let number = tokens.number(), let value = Double(number.text), value.isFinite else { return false }
                out.append(UInt8(ascii: "d"))
                appendLittleEndian((value == 0 ? 0 : value).bitPattern, to: &out)
                return true
            }
        }

        private mutating func object(into out: inout [UInt8], depth: Int) -> Bool {
            tokens.index += 1
            var members: [(key: [UInt8], value: [UInt8])] = []
            tokens.skipSpace()
            if tokens.take(UInt8(ascii: "}")) {
                out.append(UInt8(ascii: "o"))
                append(length: 0, to: &out)
                return true
            }
            while true {
                guard let key = tokens.memberKey() else { return false }
                var value: [UInt8] = []
                guard self.value(into: &value, depth: depth) else { return false }
                members.append((key, value))
                tokens.skipSpace()
                if tokens.take(UInt8(ascii: ",")) { continue }
                guard tokens.take(UInt8(ascii: "}")) else { return false }
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
            tokens.index += 1
            var elements: [UInt8] = []
            var count = 0
            tokens.skipSpace()
            if !tokens.take(UInt8(ascii: "]")) {
                while true {
                    guard value(into: &elements, depth: depth) else { return false }
                    count += 1
                    tokens.skipSpace()
                    if tokens.take(UInt8(ascii: ",")) { continue }
                    guard tokens.take(UInt8(ascii: "]")) else { return false }
                    break
                }
            }
            out.append(UInt8(ascii: "a"))
            append(length: count, to: &out)
            out.append(contentsOf: elements)
            return true
        }

        private mutating func literal(_ word: StaticString, tag: Unicode.Scalar, into out: inout [UInt8]) -> Bool {
            guard tokens.literal(word) else { return false }
            out.append(UInt8(ascii: tag))
            return true
        }

        private func append(length: Int, to out: inout [UInt8]) {
            appendLittleEndian(UInt64(length), to: &out)
        }

        private func appendLittleEndian(_ value: UInt64, to out: inout [UInt8]) {
            withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
        }
    }
}
